"""Translate text with a phrase-based model (stack decoding, Moses settings).

Reads one sentence a line from --input (default: standard input) and writes
one translation a line. The model is a moses.ini (default: the embedded
Spanish-English model in the repository's data/model/). Plain text is
tokenised and lowercased as the model's pbmt.toml says, and the output
detokenised; --tokenized takes and gives the model's own tokens.

Examples:
  echo "en el principio creó dios los cielos y la tierra ." | pbmt translate --tokenized
  pbmt translate -f model/moses.ini -i dev.es -o dev.out --n-best dev.nbest 100 --workers 2
  pbmt translate -f model/moses.ini -i test.es -o test.out --scheduler tcp://host:8786
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from functools import partial
from pathlib import Path

from tqdm import tqdm

from pbmt.config import MosesConfig
from pbmt.errors import PbmtError
from pbmt.files import atomic_write, read_lines
from pbmt.model.model import REORDERING_MODES, SearchSettings, TranslationModel
from pbmt.parallel import ParallelMap
from pbmt.translation import Translator
from pbmt.tune.nbest import parse_features

DEFAULT_MODEL = Path(__file__).resolve().parents[2] / "data" / "model" / "moses.ini"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-f", "--config", type=Path, default=DEFAULT_MODEL, help="the model's moses.ini")
    parser.add_argument("-i", "--input", default="-", help="source text, one sentence a line ('-': standard input)")
    parser.add_argument("-o", "--output", default="-", help="where the translations go ('-': standard output)")
    parser.add_argument("--n-best", nargs=2, metavar=("FILE", "N"), help="also write the N best derivations "
                        "of every sentence to FILE (Moses format, with segmentation and word alignment)")
    parser.add_argument("--distinct", action="store_true", help="n-best entries with distinct target strings")
    parser.add_argument("--alignment", type=Path, metavar="FILE",
                        help="write the 1-best word alignment (source-target pairs) of every sentence to FILE")
    parser.add_argument("--weights", help="weights replacing the ini's: 'LM0= 0.5 WordPenalty0= -1', "
                        "or a moses.ini whose [weight] section to use")
    parser.add_argument("--tokenized", action="store_true",
                        help="input is already tokenised (and lowercased) as the model expects; output is not detokenised")
    parser.add_argument("--stack", type=int, help="stack size (default: the ini's [stack], else 200)")
    parser.add_argument("--beam-threshold", type=float, help="beam threshold (default: the ini's, else 1e-5)")
    parser.add_argument("--distortion-limit", type=int, help="distortion limit, -1 for none (default: the ini's, else 6)")
    parser.add_argument("--ttable-limit", type=int, help="candidates per source phrase (default: the ini's, else 20)")
    parser.add_argument("--reordering", choices=REORDERING_MODES, help="search space: 'distortion' (any order "
                        "within the distortion limit, Moses) or 'mon-swap' (monotone, or a block swapped with its "
                        "right neighbour: Tillmann & Zhang's block orientation model; ignores the distortion "
                        "limit); default: the ini's [reordering], else distortion")
    parser.add_argument("--workers", type=int, default=1, help="decode on this many local processes (a dask cluster)")
    parser.add_argument("--scheduler", metavar="ADDR", help="decode on an existing dask cluster, e.g. "
                        "tcp://host:8786 (see docs/scale-out.md)")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress bar or summary")


def load_model(args: argparse.Namespace) -> TranslationModel:
    """The model of ``--config`` with the command line's settings and weights."""
    if not args.config.exists():
        raise PbmtError(f"{args.config}: no such model configuration"
                        + (" (the embedded model is built by 'pbmt train', see data/README.md)"
                           if args.config == DEFAULT_MODEL else ""))
    settings = SearchSettings.from_config(MosesConfig.read(args.config))
    overrides = {"stack_size": args.stack, "beam_threshold": args.beam_threshold,
                 "distortion_limit": args.distortion_limit, "table_limit": args.ttable_limit,
                 "reordering": getattr(args, "reordering", None)}
    settings = dataclasses.replace(settings, **{k: v for k, v in overrides.items() if v is not None})
    model = TranslationModel.load(args.config, settings)
    if args.weights:
        model = model.with_weights(model.layout.weights(model.config.with_weights(_parse_weights(args.weights))))
    return model


def _parse_weights(text: str) -> dict[str, tuple[float, ...]]:
    if Path(text).is_file():
        return MosesConfig.read(text).weights
    try:
        return parse_features(text, "--weights")
    except PbmtError as err:
        raise PbmtError(f"--weights: {err.reason}") from None


def _translate(translator: Translator, item: tuple[int, str]):
    return translator.translate(*item)


def _make_translator(args: argparse.Namespace) -> Translator:
    n_best = int(args.n_best[1]) if args.n_best else 0
    return Translator(load_model(args), n_best=n_best, distinct=args.distinct, tokenized=args.tokenized)


def _for_workers(args: argparse.Namespace) -> argparse.Namespace:
    """``args`` with the files a worker reads named by absolute paths (a worker may run in another folder)."""
    weights = args.weights
    if weights and Path(weights).is_file():
        weights = str(Path(weights).resolve())
    return argparse.Namespace(**{**vars(args), "config": args.config.resolve(), "weights": weights})


def run(args: argparse.Namespace) -> int:
    if args.n_best and (not args.n_best[1].isdigit() or int(args.n_best[1]) < 1):
        raise PbmtError(f"--n-best: N must be a positive integer, got {args.n_best[1]!r}")
    if args.workers < 1:
        raise PbmtError("--workers must be at least 1")
    started = time.perf_counter()
    translator = _make_translator(args)  # loads (and caches) the model once, and checks it
    lines = [line for _, line in read_lines(args.input)]
    loaded = time.perf_counter()
    progress = tqdm(total=len(lines), unit="sent", disable=args.quiet, file=sys.stderr, desc="translating")
    with ParallelMap(partial(_make_translator, _for_workers(args)), _translate, args.workers, args.scheduler,
                     state=translator) as sentences:
        translations = list(sentences.map(enumerate(lines), progress=progress.update))
    progress.close()
    _write(args.output, (t.text for t in translations))
    if args.n_best:
        _write(args.n_best[0], (e.to_line() for t in translations for e in t.nbest))
    if args.alignment:
        _write(args.alignment, (" ".join(f"{s}-{t}" for s, t in tr.alignment) for tr in translations))
    if not args.quiet:
        seconds = time.perf_counter() - loaded
        words = sum(len(translator.tokens(line)) for line in lines)
        print(f"translated {len(lines)} sentences ({words} words) in {seconds:.1f} s: "
              f"{len(lines) / max(seconds, 1e-9):.2f} sentences/s, {words / max(seconds, 1e-9):.1f} words/s "
              f"(model loaded in {loaded - started:.1f} s)", file=sys.stderr)
    return 0


def _tick(result, progress):
    progress.update(1)
    return result


def _write(target, lines) -> None:
    if str(target) == "-":
        for line in lines:
            sys.stdout.write(line + "\n")
        sys.stdout.flush()
        return
    with atomic_write(target) as handle:
        for line in lines:
            handle.write(line + "\n")
