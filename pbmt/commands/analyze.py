"""Where the reference went: search errors against model errors over a dev set.

For every sentence of --input, decodes its 1-best (the model's settings) and
forced-decodes its reference (--refs: the best derivation producing exactly
it, an exact search in the same reordering space), then gives a verdict, as
Wisniewski, Allauzen & Yvon (2010) separate the two:

  correct       the 1-best is the reference
  search error  the reference scores higher than the 1-best: pruning lost it
                (and which pruning: stack size, beam threshold or pop limit,
                each lifted alone, then all together)
  model error   the 1-best scores at least the reference: the model prefers it
  unreachable   no derivation produces the reference (and why: a reference
                word no phrase produces, the table limit, the distortion
                limit, ...)

Prints the shares with 95% bootstrap intervals over sentences and the tables
by cause; -o writes one row per sentence (tab-separated, with a header).

Example:
  pbmt analyze -f model/moses.ini --tokenized -i dev.tok.es --refs dev.tok.en -o dev.analysis.tsv --threads 2
"""

from __future__ import annotations

import argparse
import math
import sys
from collections import Counter
from pathlib import Path

from tqdm import tqdm

from pbmt.commands.options import add_threads_argument
from pbmt.commands.translate import DEFAULT_MODEL, add_model_arguments, load_model, model_inputs, paired_lines
from pbmt.base.files import Outputs, read_lines
from pbmt.base.parallel import CLUSTER_MIN_ITEMS, ParallelMap
from pbmt.search.search_errors import SentenceAnalysis, Verdict, analyze_sentence, summarize
from pbmt.features.translation import Translator


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-f", "--config", type=Path, default=DEFAULT_MODEL, help="the model's moses.ini")
    parser.add_argument("-i", "--input", default="-", help="source text, one sentence a line ('-': standard input)")
    parser.add_argument("--refs", type=Path, required=True, help="the reference translations, one a line, in the "
                        "input's form (plain text, or the model's tokens with --tokenized)")
    parser.add_argument("-o", "--output", type=Path, help="write one tab-separated row per sentence here: line, "
                        "verdict, reference's score, 1-best's score, cause, detail, 1-best")
    parser.add_argument("--tokenized", action="store_true", help="input and references are in the model's tokens")
    parser.add_argument("--no-causes", dest="causes", action="store_false",
                        help="do not search again to find which pruning lost each search error")
    parser.add_argument("--bootstrap", type=int, default=1000, metavar="N",
                        help="bootstrap resamplings of the sentences for the intervals")
    parser.add_argument("--seed", type=int, default=1, help="random seed of the bootstrap")
    add_model_arguments(parser)
    add_threads_argument(parser, "analyse sentences")
    parser.add_argument("--workers", type=int, default=1, help="analyse on this many local processes (a dask "
                        f"cluster), for inputs of at least {CLUSTER_MIN_ITEMS} sentences a worker "
                        "($PBMT_CLUSTER_MIN_ITEMS; a shorter input is analysed here on --threads)")
    parser.add_argument("--scheduler", metavar="ADDR", help="analyse on an existing dask cluster")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress bar")


class _Analyzer:
    """Analyses sentences with one model (in this process, or in each worker, where it arrives as its
    translator and builds its forced decoder again)."""

    def __init__(self, translator: Translator, causes: bool):
        self.translator, self.causes = translator, causes

    def __reduce__(self):
        return type(self), (self.translator, self.causes)

    def analyze(self, item: tuple[str, str]) -> SentenceAnalysis:
        line, reference = item
        t = self.translator
        return analyze_sentence(t.model, t.options(*t.read(line)), t.target_tokens(reference), t.forced_decoder,
                                self.causes)


def _analyze(analyzer: _Analyzer, item: tuple[str, str]) -> SentenceAnalysis:
    return analyzer.analyze(item)


def run(args: argparse.Namespace) -> int:
    lines = [line for _, line in read_lines(args.input)]
    references = paired_lines(args.refs, "--refs", args.input, len(lines))
    translator = Translator(load_model(args), tokenized=args.tokenized)
    with Outputs([args.input, args.refs, *model_inputs(args, translator.model)]) as outputs:
        if args.output:  # refused now, if it must be, not after the analysis
            outputs.claim([args.output])
        analyses = _analyses(args, translator, lines, references)
        if args.output:
            out = outputs.open(args.output)
            out.write("line\tverdict\treference_score\tbest_score\tcause\tdetail\tbest\n")
            for number, a in enumerate(analyses, 1):
                cause = _cause(a.reason) or a.pruned_by
                out.write(f"{number}\t{a.verdict.value}\t{_score(a.reference_score)}\t{_score(a.best_score)}\t"
                          f"{cause}\t{a.detail}\t{' '.join(a.best)}\n")
    print(report(analyses, translator.model.settings, args.bootstrap, args.seed))
    return 0


def _analyses(args: argparse.Namespace, translator: Translator, lines: list[str],
              references: list[str]) -> list[SentenceAnalysis]:
    """Each line's analysis against its reference, in order, on --threads (or --workers)."""
    analyzer = _Analyzer(translator, args.causes)
    progress = tqdm(total=len(lines), unit="sent", disable=args.quiet or None, file=sys.stderr, desc="analysing")
    with ParallelMap(_analyze, analyzer, args.workers, args.scheduler, threads=args.threads,
                     size=len(lines)) as pool:
        if (note := pool.note("analysed")) and not args.quiet:
            tqdm.write(note, file=sys.stderr)
        analyses = list(pool.map(list(zip(lines, references)), chunksize=4, progress=progress.update))
    progress.close()
    return analyses


def _score(value: float) -> str:
    return "" if math.isnan(value) or math.isinf(value) else f"{value:.6f}"


def report(analyses: list[SentenceAnalysis], settings, samples: int, seed: int) -> str:
    """The summary of ``analyses`` as Markdown tables: shares with bootstrap intervals, then the search
    errors by the pruning that lost them and the unreachable references by reason."""
    shares = summarize(analyses, samples, seed)
    search = ("cube pruning, pop limit " + str(settings.pop_limit) if settings.search == "cube"
              else "stack decoding") + f", stack {settings.stack_size}, beam threshold {settings.beam_threshold:g}"
    space = ("MON/SWAP" if settings.reordering == "mon-swap" else f"distortion limit {settings.distortion_limit}")
    rows = [f"{len(analyses)} sentences; {search}; {space}; 95% intervals from {samples} bootstrap resamplings",
            "", "| | sentences | share | 95% interval |", "|---|---|---|---|"]
    for name, share in shares.items():
        interval = "–" if math.isnan(share.low) else f"{_percent(share.low)} – {_percent(share.high)}"
        rows.append(f"| {name} | {share.count} of {share.total} | {_percent(share.share)} | {interval} |")
    gaps = [a.reference_score - a.best_score for a in analyses
            if a.verdict in (Verdict.SEARCH_ERROR, Verdict.MODEL_ERROR)]
    if gaps:
        rows += ["", f"reference's best score minus the 1-best's (natural log), over the {len(gaps)} reachable "
                     f"errors: mean {sum(gaps) / len(gaps):+.3f}, min {min(gaps):+.3f}, max {max(gaps):+.3f}"]
    for title, counts in (("search errors by the pruning that lost them", Counter(
            a.pruned_by or "not searched" for a in analyses if a.verdict is Verdict.SEARCH_ERROR)),
                          ("unreachable references by reason", Counter(
            a.reason for a in analyses if a.verdict is Verdict.UNREACHABLE))):
        if counts:
            rows += ["", f"| {title} | sentences |", "|---|---|"]
            rows += [f"| {_cause(cause)} | {count} |" for cause, count in counts.most_common()]
    return "\n".join(rows)


def _cause(name: str) -> str:
    """An ``Unreachable`` member's name as words ("TABLE_LIMIT": "table limit"); other causes as they are."""
    return name.lower().replace("_", " ")


def _percent(value: float) -> str:
    return "–" if math.isnan(value) else f"{100 * value:.1f}%"
