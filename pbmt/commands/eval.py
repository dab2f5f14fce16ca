"""Score a translation against one or more references with BLEU.

The arguments are sacrebleu's: the references, then the translation with -i
(or on standard input). Prints corpus BLEU in percent as sacrebleu does, with
the n-gram precisions, brevity penalty and lengths, then a signature line
(number of references, case, tokeniser, smoothing, version) that says how the
number was made. The default --tokenizer 13a is sacrebleu's (mteval-v13a) for
detokenised text, and gives the same number as ``sacrebleu REF -i HYP``;
--tokenizer none is for text that is already tokenised (each
whitespace-separated token is a word); --tokenizer model with -f MODEL scores
in that model's target token form (tokenised and truecased or lowercased as
its pbmt.toml says): the dev BLEU pbmt tune reports. --sentence prints BLEU+1
(Lin & Och 2004: 1 added to the n-gram counts of orders 2-4) for every line
instead.

Examples:
  pbmt eval test.en -i test.out
  pbmt translate -i test.es | pbmt eval test.en
  pbmt eval dev.tok.en -i dev.out --tokenizer none
  pbmt eval -i dev.out --refs dev.tok.en dev2.tok.en --tokenizer none
  pbmt eval dev.en -i dev.out --tokenizer model -f model/moses.ini
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from pathlib import Path

import numpy as np

from pbmt import __version__
from pbmt.base.config import config_path
from pbmt.base.errors import PbmtError, UsageError
from pbmt.base.files import read_lines
from pbmt.model.model import Preprocessing
from pbmt.metrics.bleu import (
    HYP_LEN,
    REF_LEN,
    bleu,
    brevity_penalty,
    format_bleu,
    precisions,
    segment_stats,
)

STDIN = "-"
USAGE = "pbmt eval REF [REF ...] -i HYP (sacrebleu's order), or pbmt eval -i HYP --refs REF [REF ...]"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``pbmt eval``."""
    parser.usage = "%(prog)s REF [REF ...] [-i HYP] [options], or %(prog)s -i HYP --refs REF [REF ...] [options]"
    parser.add_argument("references", nargs="*", metavar="REF", help="reference translations, one segment a line "
                        "(several files: several references of each segment)")
    parser.add_argument("--refs", nargs="+", metavar="REF", help="the references given as an option, as pbmt tune "
                        "and optimize take them (instead of REF ...)")
    parser.add_argument("-i", "--input", metavar="HYP", help="the translation to score, line-parallel to the "
                        "references ('-' or none given: standard input, which must not be a terminal)")
    parser.add_argument("--tokenizer", choices=("13a", "none", "model"), default="13a",
                        help="13a: sacrebleu's mteval-v13a tokeniser, for detokenised text; none: split "
                        "on whitespace only; model: the -f model's target token form (its pbmt.toml), "
                        "as pbmt tune scores its dev set")
    parser.add_argument("-f", "--config", type=Path, help="the model (moses.ini) of --tokenizer model")
    parser.add_argument("--lowercase", action="store_true", help="lowercase hypothesis and references first")
    parser.add_argument("--sentence", action="store_true", help="BLEU+1 of every line instead of corpus BLEU")
    parser.add_argument("--json", action="store_true", help="JSON output (one object a line with --sentence)")


def run(args: argparse.Namespace) -> int:
    """Score and print; returns 0."""
    if bool(args.references) == bool(args.refs):
        raise UsageError(f"give the references either before -i or with --refs, once: {USAGE}")
    args.references = args.references or args.refs
    hypothesis = STDIN if args.input is None else args.input
    if hypothesis == STDIN and sys.stdin.isatty():
        raise UsageError(f"no translation: give it with -i HYP or on standard input: {USAGE}")
    if STDIN in args.references:
        raise UsageError(f"a reference cannot be standard input ('-'): {USAGE}")
    columns = _read_parallel([hypothesis, *args.references], args.input is None)
    preprocess = _preprocessor(args.tokenizer, args.lowercase, args.config)
    hypotheses = [preprocess(line) for line in columns[0]]
    references = [[preprocess(line) for line in refs] for refs in zip(*columns[1:])]
    stats = segment_stats(hypotheses, references)

    smoothing, value = ("add-k", 1.0) if args.sentence else ("exp", None)
    smooth_name = smoothing if value is None else f"{smoothing}[{value:.2f}]"
    signature = "|".join(
        [
            f"nrefs:{len(args.references)}",
            f"case:{'lc' if args.lowercase else 'mixed'}",
            "eff:no",
            f"tok:{args.tokenizer}",
            f"smooth:{smooth_name}",
            f"version:pbmt-{__version__}",
        ]
    )
    rows = stats if args.sentence else stats.sum(axis=0, keepdims=True)
    for row in rows:
        if args.json:
            print(json.dumps(_as_json(row, smoothing, value, signature)))
        else:
            print(format_bleu(row, smoothing, value))
    if not args.json:
        print(signature)
    return 0


def _as_json(stats: np.ndarray, smoothing: str, value: float | None, signature: str) -> dict:
    hyp_len, ref_len = int(stats[HYP_LEN]), int(stats[REF_LEN])
    return {
        "name": "BLEU",
        "score": 100 * float(bleu(stats, smoothing, value)),
        "precisions": [100 * float(p) for p in precisions(stats, smoothing, value)],
        "bp": float(brevity_penalty(stats)),
        "ratio": hyp_len / ref_len if ref_len else 0.0,
        "hyp_len": hyp_len,
        "ref_len": ref_len,
        "signature": signature,
    }


def _preprocessor(tokenize: str, lowercase: bool, config: Path | None = None):
    """As sacrebleu prepares a segment: lowercase, strip trailing space, tokenise (``model``: into the target
    token form of the model ``config``)."""
    if (tokenize == "model") != (config is not None):
        raise UsageError("--tokenizer model and -f go together")
    if tokenize == "model":
        form = Preprocessing.read(config_path(config).parent).target_form

        def tokenizer(line: str) -> str:
            return " ".join(form.tokens(line))
    elif tokenize == "13a":
        from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a

        tokenizer = Tokenizer13a()
    else:
        tokenizer = str
    if lowercase:
        return lambda line: tokenizer(line.lower().rstrip())
    return lambda line: tokenizer(line.rstrip())


def _read_parallel(names: list[str], implicit_stdin: bool = False) -> list[list[str]]:
    """The lines of each file (or stdin for '-'); all files must have as many lines. ``implicit_stdin``: the
    first is standard input because no -i was given, so its being empty is a usage error (the old order
    ``pbmt eval HYP REF`` run from a script)."""
    columns: list[list[str]] = [[] for _ in names]
    readers = [read_lines(name) for name in names]
    for number, row in enumerate(itertools.zip_longest(*readers), 1):
        ended = [_label(name) for name, item in zip(names, row) if item is None]
        if implicit_stdin and number == 1 and row[0] is None:
            raise UsageError(f"no translation on standard input and no -i: {USAGE}; the translation is not the "
                             "first file")
        if ended:
            going = [_label(name) for name, item in zip(names, row) if item is not None]
            raise PbmtError(
                f"{', '.join(ended)} ended after {number - 1} line{'' if number == 2 else 's'}, but "
                f"{', '.join(going)} "
                f"{'has' if len(going) == 1 else 'have'} a line {number}: the hypothesis and every "
                f"reference need the same number of lines"
            )
        for column, (_, line) in zip(columns, row):
            column.append(line)
    return columns


def _label(name: str) -> str:
    return "<stdin>" if name == STDIN else name
