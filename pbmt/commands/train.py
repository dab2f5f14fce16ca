"""Train a phrase-based model from a parallel text, as Moses's train-model.perl does.

Writes to --out a model folder that pbmt translate and Moses load: moses.ini
(train-model.perl's default, untuned weights; relative paths), pbmt.toml (the
preprocessing), phrase-table.gz, reordering-table.gz (msd-bidirectional-fe)
and lm.arpa.gz (with --osm, osm.arpa.gz), and truecase-model.source.gz and truecase-model.target.gz
when truecased. The steps: prepare the corpus (tokenise plain text with
sacremoses, placeholders, tags, URLs and the like kept whole, as the model
then does to its input, unless --tokenized says the texts are tokenised
already; then truecase, the default for cased text, or lowercase; pairs
with an empty side are dropped, as Moses's clean-corpus-n.perl does), align
(eflomal both ways, grow-diag-final-and), extract and score phrase pairs,
estimate a Kneser-Ney LM of the target side (with --osm, also an operation
sequence model: Durrani et al.'s n-gram model over the operations that
generate each aligned pair, Moses's OpSequenceModel), induce target word classes
(word-classes.txt, for sparse features), write the configuration.
Intermediate files and the steps' stamps go to --work-dir. Each step reports
its time; a step whose inputs and options are unchanged since it last ran is
skipped, so an interrupted or repeated run resumes where it stopped.

eflomal seeds itself from the operating system: for a reproducible model give
the alignment (--alignment, or --alignment-fwd/--alignment-rev to symmetrise).

Examples:
  pbmt train --src train.es --tgt train.en --out model
  pbmt train --src train.es --tgt train.en --out model --casing lowercase --placeholders
  pbmt train --src train.tok.es --tgt train.tok.en --tokenized --out model --alignment train.align.gdfa --lm-order 5
  pbmt train --src train.es --tgt train.en --out model --lm-order 3 --lm-order 5   (a 3-gram and a 5-gram LM)
  pbmt train --src train.es --tgt train.en --out model --lm-order 3 --lm general.arpa.gz   (two LMs: LM0, LM1)
  pbmt train --src train.es --tgt train.en --out model --osm 5   (with a 5-gram operation sequence model)
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from pbmt.commands.lm import add_discount_fallback
from pbmt.base.text import CASINGS, moses_knows, unknown_language
from pbmt.train.lm_estimate import memory_size
from pbmt.train.pipeline import Scale, TrainSettings, train
from pbmt.train.shards import DEFAULT_SHARD_SENTENCES

LANGUAGE_DEFAULTS = ("es", "en")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``pbmt train``."""
    parser.add_argument("--src", type=Path, required=True, help="source text, one sentence a line (plain or .gz)")
    parser.add_argument("--tgt", type=Path, required=True, help="target text, line-parallel to --src")
    parser.add_argument("--out", type=Path, required=True, help="model folder to write")
    parser.add_argument("--work-dir", type=Path,
                        help="folder for intermediate files and step stamps (default: OUT/work)")
    parser.add_argument("--src-lang", help="source language for the tokeniser (default: the --src file's suffix "
                        f"if it is a two-letter language code, else {LANGUAGE_DEFAULTS[0]})")
    parser.add_argument("--tgt-lang", help="target language (default: the --tgt file's suffix if it is a two-letter "
                        f"language code, else {LANGUAGE_DEFAULTS[1]})")
    parser.add_argument("--tokenized", action="store_true",
                        help="the texts are tokenised already (tokens split at spaces), and so is the "
                        "model's input; without it both sides are tokenised with Moses's tokeniser "
                        "(sacremoses), and the model's input likewise")
    parser.add_argument("--casing", choices=("auto",) + CASINGS, default="auto",
                        help="truecase: learn Moses's truecaser on each side (kept in the model folder; translate "
                        "then truecases its input and capitalises its output); lowercase: lowercase both sides; "
                        "none: keep the text's casing; auto: truecase if the text has capitals, else none")
    parser.add_argument("--protected", type=Path, metavar="FILE",
                        help="more protected patterns (one regular expression a line, beside the built-in "
                        "ones: placeholders, tags, URLs, e-mail addresses, paths, accelerators): text they match "
                        "stays one token, as it is; copied into the model, which applies them to its input")
    parser.add_argument("--placeholders", action="store_true",
                        help="numbers and protected tokens stand in the model as class tokens (@num@, @ph@, @url@, "
                        "@tag@) and accelerator marks come off their words; translate puts the originals back "
                        "through the word alignment, so they cost nothing and never change")
    parser.add_argument("--alignment", type=Path, metavar="FILE",
                        help="symmetrised word alignment (i-j per line of the texts, tokenised positions) to use "
                        "instead of aligning")
    parser.add_argument("--alignment-fwd", type=Path, metavar="FILE",
                        help="directed alignment (each target word linked to at most one source word) to symmetrise "
                        "instead of running eflomal; needs --alignment-rev")
    parser.add_argument("--alignment-rev", type=Path, metavar="FILE", help="the reverse directed alignment")
    parser.add_argument("--max-phrase-length", type=int, default=7, help="longest phrase, in words (1 to 8)")
    parser.add_argument("--min-count", type=int, default=1, metavar="N",
                        help="drop the phrase pairs of two or more source words extracted fewer than N times "
                        "(single-word pairs all stay, so no training word loses its translations)")
    parser.add_argument("--prune", type=int, metavar="K",
                        help="keep the K pairs with the highest p(e|f) per source phrase (both tables)")
    parser.add_argument("--lm", type=Path, action="append", default=[], metavar="FILE",
                        help="an ARPA LM to use instead of estimating one; repeat for several LMs, each a feature "
                        "of its own (LM0, LM1, ... in this order), as Moses loads them")
    parser.add_argument("--lm-order", type=int, action="append", default=[], metavar="N",
                        help="order of an LM estimated from the target text (default: one 3-gram); repeat for "
                        "several (--lm-order 3 --lm-order 5: a 3-gram LM0 and a 5-gram LM1, the LMs' weight "
                        "shared evenly, which tuned best on the shared Bible model: docs/osm.md); with --lm, the "
                        "estimated LMs come first")
    parser.add_argument("--osm", type=int, metavar="ORDER",
                        help="also train an operation sequence model of this order (Durrani et al. 2011; Moses's "
                        "OpSequenceModel, 5 in Moses's recipe): an n-gram model over the translation and reordering "
                        "operations of each aligned pair, OpSequenceModel0 in moses.ini, 5 weights")
    add_discount_fallback(parser)
    parser.add_argument("--word-class-count", type=int, default=50, metavar="N", help="induce N target "
                        "word classes (exchange algorithm) into word-classes.txt, for sparse features "
                        "(pbmt tune --features boundary); 0: none")
    scale = parser.add_argument_group("large corpora (docs/training-at-scale.md); the model does not depend on these")
    scale.add_argument("--shard-size", type=int, default=DEFAULT_SHARD_SENTENCES, metavar="N",
                       help="extract phrase pairs in shards of N sentence pairs whose counts go to sorted runs on "
                       "disk (work folder), merged to score: peak memory follows N, not the corpus")
    scale.add_argument("-S", "--memory", type=memory_size, default="1G", metavar="SIZE",
                       help="memory for the LM's counts (the rest go to sorted files in the work folder), as "
                       "lmplz's -S and pbmt lm's: a number with a suffix b, K, M, G, T or %% (of the physical "
                       "memory); no suffix: K")
    scale.add_argument("--workers", type=int, default=1, help="extract the shards on this many local processes "
                       "(a dask cluster)")
    scale.add_argument("--scheduler", metavar="ADDR", help="extract the shards on an existing dask cluster, e.g. "
                       "tcp://host:8786, whose workers share the work folder (see docs/scale-out.md)")
    parser.add_argument("-q", "--quiet", action="store_true", help="print nothing but errors (without it: a line "
                        "per step, and progress bars when standard error is a terminal)")


def language(path: Path, given: str | None, default: str) -> str:
    """``given``, else the file name's last suffix (before ``.gz``) when it looks
    like an ISO 639-1 language code (two letters), else ``default``."""
    if given:
        return given
    suffix = Path(path.name.removesuffix(".gz")).suffix[1:]
    return suffix.lower() if len(suffix) == 2 and suffix.isalpha() else default


def run(args: argparse.Namespace) -> int:
    """Train, printing a line per step; returns 0."""
    languages = (language(args.src, args.src_lang, LANGUAGE_DEFAULTS[0]),
                 language(args.tgt, args.tgt_lang, LANGUAGE_DEFAULTS[1]))
    for code in sorted(set(languages)) if not args.tokenized else ():
        if not moses_knows(code):
            print(f"pbmt train: warning: {unknown_language(code)}", file=sys.stderr)
    settings = TrainSettings(
        src=args.src, tgt=args.tgt, out=args.out, work=args.work_dir,
        src_lang=languages[0], tgt_lang=languages[1],
        tokenize=not args.tokenized, casing=args.casing,
        alignment=args.alignment, alignment_fwd=args.alignment_fwd, alignment_rev=args.alignment_rev,
        max_phrase_length=args.max_phrase_length, min_count=args.min_count, prune=args.prune,
        lms=tuple(args.lm), lm_orders=tuple(args.lm_order), osm_order=args.osm,
        discount_fallback=args.discount_fallback,
        word_classes=args.word_class_count, scale=Scale(args.shard_size, args.workers, args.scheduler, args.memory),
        protected=args.protected, placeholders=args.placeholders,
    )

    def say(message: str) -> None:
        if not args.quiet:
            print(f"pbmt train: {message}", file=sys.stderr, flush=True)

    start = time.perf_counter()
    # progress bars and the aligner's own report only on a terminal: a log file gets the steps' lines alone
    reports = train(settings, say, progress=not args.quiet and sys.stderr.isatty())
    ran = [r.name for r in reports if r.ran]
    say(f"model in {args.out / 'moses.ini'}: {len(ran)} of {len(reports)} steps run "
        f"in {time.perf_counter() - start:.1f} s")
    return 0
