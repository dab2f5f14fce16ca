"""Translate text with a phrase-based model (cube pruning or stack decoding, with Moses's settings).

Reads one sentence a line from --input (default: standard input) and writes
one translation a line. The model is a moses.ini (default: the embedded
Spanish-English model in the repository's data/model/). Plain text is
NFC-normalised, tokenised and truecased (or lowercased) as the model's
pbmt.toml says, placeholders, tags, URLs, paths and accelerators one token
each; the output of a truecased model gets a capital at the start where the
source has one, and is detokenised, those tokens back as they were
(docs/real-text.md). Words the model does not know (names, numbers) pass
through as written, and numbers and punctuation are copied at no
unknown-word penalty; a model trained with --placeholders puts numbers and
protected tokens back through the word alignment. --tokenized
takes and gives the model's own tokens (pbmt tokenize / pbmt detokenize).

Examples:
  echo "En el principio crió Dios los cielos y la tierra." | pbmt translate
  echo "en el principio crió Dios los cielos y la tierra ." | pbmt translate --tokenized
  pbmt translate -f model/moses.ini -i dev.es -o dev.out --n-best dev.nbest --n-best-size 100 --threads 2
  pbmt translate -f model/moses.ini -i test.es -o test.out --scheduler tcp://host:8786
  pbmt translate -f model/moses.ini -i test.es --documents test.keys \\
      --global-features lexical-consistency,repetition --global-weights global-weights.txt

With --xml-input MODE a line may carry Moses's XML markup: a tag with a
translation attribute gives the words it encloses their translation(s),
<wall/> and <zone>...</zone> constrain the word order (docs/markup.md):
  echo 'mi siervo moisés es <n translation="dead">muerto</n> .' | pbmt translate --xml-input exclusive
Paired quotes, brackets and tags are zones unless --no-quote-zones: a quoted
span is translated as a unit, inside its quotes.

With --documents KEYS (one 'BOOK CHAPTER:VERSE' key per input line) each
chapter is one document: its sentences are first decoded by the stack decoder,
then the sampler anneals over the whole document's derivations at once
(docs/global-features.md), so sentence- and document-level features
(--global-features) take part; documents are decoded in parallel (--workers)
and written in input order.
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import hashlib
import json
import sys
import time
from collections import Counter
from functools import partial
from typing import Callable
from pathlib import Path

import numpy as np
from tqdm import tqdm

from pbmt.commands import precompile
from pbmt.commands.options import add_threads_argument
from pbmt.base.config import DEFAULT_MODEL, MosesConfig, read_weights
from pbmt.base.documents import Documents
from pbmt.features import registry
from pbmt.base.errors import FormatError, PbmtError, UsageError
from pbmt.base.files import read_lines
from pbmt.base.journal import Journal
from pbmt.base import markup
from pbmt.base.run_state import digest_files, digest_text, model_files
from pbmt.model.model import DEFAULT_ANNEAL, REORDERING_MODES, SEARCH_ALGORITHMS, SearchSettings, TranslationModel
from pbmt.base.parallel import CLUSTER_MIN_ITEMS, ParallelMap
from pbmt.search.output import nbest_text
from pbmt.features.translation import Translator, token_form_warning
from pbmt.base.nbest import parse_features

N_BEST_SIZE = 100  # entries per sentence of --n-best's list, by default


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-f", "--config", type=Path, default=DEFAULT_MODEL, help="the model's moses.ini")
    parser.add_argument("-i", "--input", default="-", help="source text, one sentence a line ('-': standard input)")
    parser.add_argument("-o", "--output", default="-", help="where the translations go ('-': standard output)")
    parser.add_argument("--n-best", metavar="FILE", help="also write the --n-best-size best derivations of "
                        "every sentence to FILE (Moses format, with segmentation and word alignment)")
    parser.add_argument("--n-best-size", type=int, default=N_BEST_SIZE, metavar="N",
                        help="entries per sentence in --n-best")
    parser.add_argument("--max-words", type=int, default=MAX_WORDS, metavar="N", help="longest input line, in "
                        "words (separated by white space) and in the model's tokens; a longer one is an error naming it before anything is "
                        "translated (search time and memory grow with a line's length)")
    parser.add_argument("--distinct", action="store_true", help="n-best entries with distinct target strings")
    parser.add_argument("--alignment", type=Path, metavar="FILE",
                        help="write the 1-best word alignment (source-target pairs) of every sentence to FILE")
    parser.add_argument("--tokenized", action="store_true",
                        help="input is in the model's token form already (tokenised and cased as pbmt tokenize "
                        "writes it); output stays in that form (pbmt detokenize makes text of it)")
    add_model_arguments(parser)
    add_markup_arguments(parser)
    constrained = parser.add_argument_group("constrained decoding")
    constrained.add_argument("--constraint", type=Path, metavar="REFS",
                             help="forced decoding: translate every line into the line of REFS beside it (one "
                                  "reference a line, in the same form as the input: plain text or --tokenized), "
                                  "by the model's best derivation producing exactly it (an exact search within "
                                  "--distortion-limit or --reordering mon-swap; no pruning option applies); "
                                  "the output line is that translation, or empty when no derivation produces it, "
                                  "and the reason is reported; --n-best lists its derivations")
    constrained.add_argument("--prefix", type=Path, metavar="PREFIXES",
                             help="prefix-constrained decoding (interactive translation): the best translation "
                                  "of every line that begins with the line of PREFIXES beside it (target text in "
                                  "the input's form; a prefix not ending in a space may end mid-word: the "
                                  "translation completes the word; an empty line: no constraint); --n-best lists "
                                  "distinct completions")
    add_threads_argument(parser)
    parser.add_argument("--workers", type=int, default=1, help="decode on this many local processes (a dask "
                        f"cluster), for inputs of at least {CLUSTER_MIN_ITEMS} sentences a worker "
                        "($PBMT_CLUSTER_MIN_ITEMS; a shorter input is decoded here on --threads); "
                        "docs/scale-out.md says when threads do better")
    parser.add_argument("--scheduler", metavar="ADDR", help="decode on an existing dask cluster, e.g. "
                        "tcp://host:8786 (see docs/scale-out.md)")
    documents = parser.add_argument_group("document decoding (docs/global-features.md)")
    documents.add_argument("--documents", type=Path, metavar="KEYS",
                           help="decode each document (book and chapter of the KEYS file, one key per input "
                                "line) jointly with the sampler, from the stack decoder's 1-best")
    documents.add_argument("--global-features", metavar="NAME[:ARG][,...]",
                           help=f"global features for --documents; registered: {registry.describe()}")
    documents.add_argument("--global-weights", type=Path, metavar="FILE",
                           help="their weights, 'Name= v' lines (e.g. SampleRank's global-weights.txt); "
                                "missing ones are 0")
    documents.add_argument("--steps-per-sentence", type=int, default=500,
                           help="sampler steps per sentence of a document")
    documents.add_argument("--anneal", type=float, nargs=2, metavar=("T0", "T1"), default=DEFAULT_ANNEAL,
                           help="temperatures falling geometrically over the steps")
    documents.add_argument("--seed", type=int, default=1, help="random seed of the sampler")
    parser.add_argument("--no-resume", action="store_true", help="start afresh even when a killed run with the "
                        "same input, model and settings left a partial output beside -o (by default it is resumed)")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress bar or summary")


def add_markup_arguments(parser: argparse.ArgumentParser) -> None:
    """How a line's markup is read (``pbmt.base.markup``): ``--xml-input`` and ``--no-quote-zones``."""
    parser.add_argument("--xml-input", choices=markup.XML_MODES, default="pass-through",
                        help="read Moses's XML markup in the input: a tag's translation(s) are the only ones of "
                        "its words (exclusive), compete with the phrase table's (inclusive) or with the table's "
                        "phrases that contain them (constraint); 'ignore' keeps walls and zones only and takes a "
                        "line with malformed markup as text; 'pass-through': the input is text")
    parser.add_argument("--no-quote-zones", dest="quote_zones", action="store_false",
                        help="paired quotes, brackets, tags and Markdown's emphasis marks are not zones (by default a "
                        "quoted span is translated as a unit, inside its quotes); a punctuation mark between "
                        "placeholders is kept in place either way")


def check_markup(path, lines: list[str], xml_input: str) -> None:
    """Raise FormatError naming ``path`` and the first line whose markup is malformed, unless ``xml_input``
    takes such a line as text (``ignore``, ``pass-through``)."""
    for number, line in enumerate(lines, 1):
        try:
            markup.check(line, xml_input)
        except markup.MarkupError as err:
            raise FormatError("<stdin>" if str(path) == "-" else path, number,
                              f"malformed markup: {err} (--xml-input ignore or pass-through takes such a line as "
                              "text)") from None


def add_model_arguments(parser: argparse.ArgumentParser) -> None:
    """The options ``load_model`` reads besides ``-f``: weights, pruning, reordering space and search algorithm."""
    parser.add_argument("--weights", help="weights replacing the ini's: 'LM0= 0.5 WordPenalty0= -1', "
                        "or a file whose [weight] section to use (a moses.ini, or that section alone)")
    parser.add_argument("--stack", type=int, help="stack size (default: the ini's [stack], else 200)")
    parser.add_argument("--beam-threshold", type=float, help="beam threshold (default: the ini's, else 1e-5)")
    parser.add_argument("--distortion-limit", type=int, help="distortion limit, -1 for none (default: the ini's, else 6)")
    parser.add_argument("--ttable-limit", type=int, help="candidates per source phrase (default: the ini's, else 20)")
    parser.add_argument("--reordering", choices=REORDERING_MODES, help="search space: 'distortion' (any order "
                        "within the distortion limit, Moses) or 'mon-swap' (monotone, or a block swapped with its "
                        "right neighbour: Tillmann & Zhang's block orientation model; ignores the distortion "
                        "limit); default: pbmt.toml's [search] reordering, else distortion")
    add_search_arguments(parser)


def add_search_arguments(parser: argparse.ArgumentParser) -> None:
    """The search algorithm options every decoding verb shares."""
    parser.add_argument("--search", choices=SEARCH_ALGORITHMS, help="search algorithm: 'cube' (cube pruning, "
                        "Moses's -search-algorithm 1: each stack filled by its --pop-limit best (hypothesis, option) "
                        "pairs) or 'stack' (every kept hypothesis extended by every option; slower; docs/decoding.md "
                        "compares them); default: the ini's [search-algorithm], else cube")
    parser.add_argument("--pop-limit", type=int, help="cube pruning: hypotheses created per stack (default: the "
                        "ini's [cube-pruning-pop-limit], else 1000; 0: no limit)")


def search_overrides(args: argparse.Namespace) -> dict:
    """The SearchSettings fields the command line sets (``add_search_arguments`` and the pruning options)."""
    overrides = {"stack_size": getattr(args, "stack", None), "beam_threshold": getattr(args, "beam_threshold", None),
                 "distortion_limit": getattr(args, "distortion_limit", None),
                 "table_limit": getattr(args, "ttable_limit", None), "reordering": getattr(args, "reordering", None),
                 "search": getattr(args, "search", None), "pop_limit": getattr(args, "pop_limit", None)}
    return {k: v for k, v in overrides.items() if v is not None}


def model_config(args: argparse.Namespace) -> MosesConfig:
    """``--config``'s moses.ini, read (a run reads it once: its search settings, model and model files)."""
    if not args.config.exists():
        raise PbmtError(f"{args.config}: no such model configuration"
                        + (" (the embedded model is built by 'pbmt train', see data/README.md)"
                           if args.config == DEFAULT_MODEL else ""))
    return MosesConfig.read(args.config)


def load_model(args: argparse.Namespace, config: MosesConfig | None = None,
               settings: SearchSettings | None = None) -> TranslationModel:
    """The model of ``--config`` with the command line's settings and weights (``config``: its ini already
    read, ``model_config``; ``settings``: ``search_settings`` of it)."""
    config = model_config(args) if config is None else config
    model = TranslationModel.from_config(config, search_settings(args, config) if settings is None else settings)
    if args.weights:
        try:
            weighted = model.config.with_weights(_parse_weights(args.weights))
        except UsageError:
            raise
        except PbmtError as err:
            raise UsageError(f"--weights: {err}") from None
        model = model.with_weights(model.layout.weights(weighted))
    return model


def model_inputs(args: argparse.Namespace, model: TranslationModel) -> list[Path | None]:
    """The files ``model`` (``load_model(args)``) was read from, ``--weights``'s file included: inputs no output of
    the run may replace (``pbmt.base.files.Outputs``)."""
    return [args.weights and _weights_file(args.weights), *model_files(model.config)]


def search_settings(args: argparse.Namespace, config: MosesConfig | None = None) -> SearchSettings:
    """The search settings of ``--config``'s ini (``config`` if already read) under the command line's
    (``search_overrides``)."""
    config = MosesConfig.read(args.config) if config is None else config
    return dataclasses.replace(SearchSettings.from_config(config), **search_overrides(args))


def _weights_file(text: str) -> Path | None:
    """The moses.ini ``--weights`` names, or None when it is a weight string ('Name= v ...')."""
    return None if "=" in text else Path(text)


def _parse_weights(text: str) -> dict[str, tuple[float, ...]]:
    path = _weights_file(text)
    if path is not None:
        try:
            found = path.is_file()
        except OSError:  # a name too long for a path
            found = False
        if not found:
            shown = text if len(text) <= 60 else text[:57] + "..."
            raise UsageError(f"--weights: {shown!r} is neither a moses.ini nor weights 'Name= v ...'")
        return read_weights(path)
    try:
        return parse_features(text, "--weights")
    except PbmtError as err:
        raise UsageError(f"--weights: {err.reason}") from None


def _translate(translator: Translator, item: tuple[int, str]):
    translation = translator.translate(*item)
    nbest_text(translation.nbest)  # its lines written here, on the thread (or worker) that decoded it, and kept
    return translation


def _force(translator: Translator, item: tuple[int, str, str]):
    return translator.force(*item)


def _complete(translator: Translator, item: tuple[int, str, str]):
    return translator.complete(*item)


def paired_lines(path: Path, option: str, input_path, n_lines: int) -> list[str]:
    """The lines of ``path`` (given to ``option``), one for every input line; a different count is an error
    naming both files."""
    lines = [line for _, line in read_lines(path)]
    if len(lines) != n_lines:
        shown = "<stdin>" if str(input_path) == "-" else input_path
        raise PbmtError(f"{option} {path} has {len(lines)} line{'' if len(lines) == 1 else 's'} but the input "
                        f"{shown} has {n_lines}: they must pair line by line")
    return lines


def _make_translator(args: argparse.Namespace, config: MosesConfig | None = None,
                     settings: SearchSettings | None = None, compiled_layout: bool = True) -> Translator:
    n_best = args.n_best_size if args.n_best else 0
    return Translator(load_model(args, config, settings), n_best=n_best, distinct=args.distinct,
                      tokenized=args.tokenized, xml_input=args.xml_input, quote_zones=args.quote_zones,
                      compiled_layout=compiled_layout)


class _DocumentTranslator:
    """Translates documents with one model and its global features (in this process or in each worker, where
    it arrives as its translator and options and builds the features again)."""

    def __init__(self, translator: Translator, args: argparse.Namespace):
        self.translator, self.args = translator, args
        model = translator.model
        self.features = registry.build(registry.name_features(registry.parse_requests(args.global_features or ""),
                                                              model.layout.names, nbest=False), model.vocab)
        self.weights = (registry.read_weights(args.global_weights, self.features) if args.global_weights
                        else np.zeros(sum(f.size for f in self.features)))

    def __reduce__(self):
        global_weights = self.args.global_weights
        args = argparse.Namespace(**{**vars(self.args),
                                     "global_weights": global_weights.resolve() if global_weights else None})
        return type(self), (self.translator, args)

    def translate(self, item: tuple[int, list[str]]):
        index, lines = item
        args = self.args
        return self.translator.translate_document(lines, np.random.default_rng([args.seed, index]), self.features,
                                                  self.weights, args.steps_per_sentence, tuple(args.anneal))[0]


def _translate_document(translator: _DocumentTranslator, item: tuple[int, list[str]]):
    return translator.translate(item)


def run(args: argparse.Namespace) -> int:
    if not args.n_best and (args.distinct or args.n_best_size != N_BEST_SIZE):
        given = "--distinct" if args.distinct else f"--n-best-size {args.n_best_size}"
        raise UsageError(f"{given} shapes the n-best list of --n-best FILE, which is not asked for: give --n-best "
                         "FILE, or leave it out (the translation is the 1-best)")
    if args.documents is None and (args.global_features or args.global_weights):
        raise PbmtError("--global-features and --global-weights need --documents")
    if args.documents is not None and args.n_best:
        raise PbmtError("--n-best is not available with --documents (the sampler keeps one derivation)")
    if args.documents is not None and args.xml_input in markup.USES:
        raise PbmtError(f"--xml-input {args.xml_input} is not available with --documents (the sampler does not "
                        "take translations from markup)")
    started = time.perf_counter()
    _out_of_collector_sight()  # the imports' objects (numba's typing above all)
    if str(args.input) == "-" and not args.quiet and sys.stdin is not None and sys.stdin.isatty():
        print("pbmt translate: reading sentences from the terminal, one a line, until end of input (Ctrl-D); "
              "then translating them (-i FILE reads a file)", file=sys.stderr)
    lines = [line for _, line in read_lines(args.input)]
    _check_lengths(args.input, lines, args.max_words)
    check_markup(args.input, lines, args.xml_input)
    config = model_config(args)
    settings = search_settings(args, config)
    make_translator = partial(_make_translator, config=config, settings=settings)
    compiling = precompile.start(args, settings, make_translator) if lines else None
    try:
        return _run(args, lines, started, compiling, make_translator)
    finally:
        if compiling is not None:
            compiling.stop()


def _run(args: argparse.Namespace, lines: list[str], started: float, compiling: precompile.Precompile | None,
         make_translator: Callable[[argparse.Namespace], Translator]) -> int:
    translator = make_translator(args)  # loads (and caches) the model once, and checks it
    if not args.tokenized:  # a line of few words can be many tokens: '<b>' 100,000 times is one word
        _check_lengths(args.input, lines, args.max_words, lambda line: translator.read(line)[0], "tokens")
    if args.tokenized or translator.model.preprocessing.keeps_tokens:
        _warn_unless_token_form(args.input, lines, translator, args.tokenized)
    constrained = "--constraint" if args.constraint is not None else "--prefix" if args.prefix is not None else None
    if constrained:
        if args.constraint is not None and args.prefix is not None:
            raise PbmtError("--constraint and --prefix exclude each other (a reference is its own longest prefix)")
        if args.documents is not None:
            raise PbmtError(f"{constrained} does not go with --documents (it decodes sentence by sentence)")
        if args.xml_input in markup.USES:
            raise PbmtError(f"{constrained} does not go with --xml-input {args.xml_input} (it takes no translations "
                            "from markup)")
        paired = paired_lines(args.constraint or args.prefix, constrained, args.input, len(lines))
        state, work, unit = translator, _force if args.constraint else _complete, "sent"
        items = [(i, line, other) for i, (line, other) in enumerate(zip(lines, paired))]
    elif args.documents is None:
        state, work, items, unit = translator, _translate, list(enumerate(lines)), "sent"
    else:
        state = _DocumentTranslator(translator, args)
        documents = Documents.read(args.documents)
        if documents.n_lines != len(lines):
            raise PbmtError(f"{args.documents} has {documents.n_lines} keys but {args.input} has {len(lines)} lines")
        work, unit = _translate_document, "doc"
        items = [(d, lines[lo:hi]) for d, (lo, hi) in enumerate(documents.spans())]
    if args.n_best:
        _check_separators(args.input, lines, translator)
    outputs = [args.output] + ([args.n_best] if args.n_best else []) + ([args.alignment] if args.alignment else [])
    model_loaded = time.perf_counter()
    if compiling is not None:  # its kernels are then loaded, not compiled again
        compiling.join(translator, None if args.quiet else partial(precompile.say, "translate"))
    else:  # the first sentence compiles them
        precompile.say_first_run(translator.model.settings, "translate", args.quiet, translator.n_best)
    loaded = time.perf_counter()
    unreachable: list[str] = []
    _out_of_collector_sight()  # the model's objects and the kernels loaded
    files = model_files(translator.model.config)
    inputs = [args.input, args.constraint, args.prefix, args.documents, args.global_weights,
              args.weights and _weights_file(args.weights), *files]
    with Journal(outputs, partial(_fingerprint, args, lines, outputs, files), resume=not args.no_resume,
                 inputs=inputs, unit="document" if args.documents else "sentence") as journal:
        if journal.done and not args.quiet:
            print(f"resuming a killed run: {journal.done} of {len(items)} "
                  f"{'documents' if args.documents else 'sentences'} already translated", file=sys.stderr)
        if journal.dropped and not args.quiet:
            print(f"starting afresh: the killed run's {journal.dropped:,} {journal.unit}"
                  f"{'' if journal.dropped == 1 else 's'} in {args.output} were of another input, model or "
                  "settings", file=sys.stderr)
        progress = tqdm(total=len(items), initial=journal.done, unit=unit, disable=args.quiet or None,
                        file=sys.stderr, desc="translating")
        # documents' global features may keep state of their own: documents go on processes only
        threads = args.threads if args.documents is None else 1
        remaining = list(items)[journal.done:]
        sentences = sum(len(document) for _, document in remaining) if args.documents else len(remaining)
        words = 0  # the tokens of the lines this run translates, as each translation counted them
        with ParallelMap(work, state, args.workers, args.scheduler, threads=threads, size=sentences) as pool:
            if (note := pool.note("translated")) and not args.quiet:
                tqdm.write(note, file=sys.stderr)
            for number, result in enumerate(pool.map(remaining,
                                                     chunksize=1 if args.documents else 8,
                                                     progress=progress.update), journal.done + 1):
                translations = result if args.documents else [result]
                journal.write(_chunks(translations, bool(args.n_best), bool(args.alignment)))
                words += sum(t.source_length for t in translations)
                if constrained:
                    unreachable.append(result.unreachable)
                    if result.unreachable and not args.quiet:
                        what = "produces the reference" if args.constraint else "begins with the prefix"
                        tqdm.write(f"line {number}: no translation {what}: {result.unreachable}", file=sys.stderr)
        progress.close()
    if not args.quiet:
        seconds = time.perf_counter() - loaded
        counted = f"{sentences} sentence{'' if sentences == 1 else 's'} ({words} word{'' if words == 1 else 's'})"
        print(f"translated {counted} in {seconds:.1f} s: "
              f"{sentences / max(seconds, 1e-9):.2f} sentences/s, {words / max(seconds, 1e-9):.1f} words/s "
              f"(model loaded in {model_loaded - started:.1f} s"
              + (f", then {loaded - model_loaded:.1f} s waiting for the search kernels to compile" if compiling
                 else "") + ")", file=sys.stderr)
        if constrained and unreachable:
            causes = Counter(reason.split(":")[0] for reason in unreachable if reason)
            what = "forced decoding reached" if args.constraint else "completed"
            print(f"{what} {unreachable.count('')} of {len(unreachable)} "
                  f"{'references' if args.constraint else 'prefixes'}"
                  + "".join(f"; {count} not: {cause}" for cause, count in causes.most_common()),
                  file=sys.stderr)
    return 0


def _out_of_collector_sight() -> None:
    """Move every object made so far out of the sight of Python's cyclic garbage collector (``gc.freeze``), as
    they last the run: the collector's passes over the ~10^5 objects of the imports and the model (a pass of
    the oldest generation walks all of them, holding the lock) cost a run 0.3 CPU s at the start, while the
    model loads, and at the exit, on one thread; the objects are still freed when no longer referenced, only
    a cycle among them would never be."""
    gc.freeze()


MAX_WORDS = 250  # search time and memory grow with a line's length (README, "Long lines")


def _check_lengths(path, lines: list[str], max_words: int, split: Callable[[str], list] = str.split,
                   unit: str = "words") -> None:
    """FormatError naming the first line that ``split`` makes into more than ``max_words`` pieces (a line of no
    more characters cannot be one)."""
    for number, line in enumerate(lines, 1):
        if len(line) > max_words and (count := len(split(line))) > max_words:
            raise FormatError("<stdin>" if str(path) == "-" else path, number,
                              f"{count:,} {unit}, more than --max-words {max_words}: split the line, or "
                              "raise --max-words (search time and memory grow with the length)")


def _warn_unless_token_form(path, lines: list[str], translator: Translator, tokenized: bool) -> None:
    """A warning on standard error when the input is clearly not in the model's token form, as
    ``check_token_form`` tells of the tokens the translator reads (markup parsed as --xml-input says; a line of
    malformed markup counts as no tokens, its error comes when it is translated): plain text given with
    --tokenized passes its words through as unknown words, the output is poor but nothing fails. ``pbmt tune``
    refuses such a dev set; a translation is still made."""
    model = translator.model
    warning = token_form_warning(path, [_read_tokens(translator, line) for line in lines], model.vocab,
                                 model.preprocessing.source_language, tokenized)
    if warning:
        print(f"pbmt translate: warning: {warning}", file=sys.stderr)


def _read_tokens(translator: Translator, line: str) -> list[str]:
    """The tokens ``translator`` reads of ``line`` without its markup; none for a line of malformed markup."""
    try:
        return translator.read(line)[0]
    except markup.MarkupError:
        return []


def _check_separators(path, lines: list[str], translator: Translator) -> None:
    """An input token holding '|||' would pass through as an unknown word and split its n-best lines' fields."""
    for number, line in enumerate(lines, 1):
        if "|||" in line and any("|||" in token for token in translator.tokens(line)):
            raise FormatError("<stdin>" if str(path) == "-" else path, number,
                              "a token holds '|||', the field separator of n-best lists: it would corrupt the "
                              "--n-best output")


def _chunks(translations, n_best: bool, alignment: bool) -> list[str]:
    """The text one record (a sentence, or a document's sentences) adds to each output."""
    chunks = ["".join(t.text + "\n" for t in translations)]
    if n_best:
        chunks.append("".join(nbest_text(t.nbest) for t in translations))
    if alignment:
        chunks.append("".join(" ".join(f"{s}-{t}" for s, t in tr.alignment) + "\n" for tr in translations))
    return chunks


def _fingerprint(args: argparse.Namespace, lines: list[str], outputs: list, model: list[Path]) -> str:
    """What a killed run's partial output must match to be resumed: the input, the content of the model's
    files (``model_files``), the settings that change a translation, and the outputs asked for."""
    settings = {key: str(value) for key, value in sorted(vars(args).items())
                if key not in ("input", "output", "quiet", "threads", "workers", "scheduler", "no_resume", "run",
                               "verb", "config")}
    files = {"model": model}
    if args.weights and _weights_file(args.weights) is not None:
        files["weights"] = args.weights
    for key in ("documents", "global_weights", "constraint", "prefix"):
        if getattr(args, key, None):
            files[key] = getattr(args, key)
    parts = {"input": digest_text(lines), "settings": settings, "outputs": [str(o) for o in outputs],
             "files": digest_files(files)}
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()
