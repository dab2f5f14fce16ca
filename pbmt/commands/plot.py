"""Draw tuning runs and sampler chains as PNG figures (matplotlib).

  tuning LOG [LOG ...]  dev BLEU per iteration of several tuning runs in one
                        figure, with the untuned weights' BLEU as a line,
                        every iteration below it ringed in red with its
                        distance, and collapsed iterations marked at the
                        bottom instead of stretching the axis: each LOG is
                        the log.tsv of a
                        `pbmt tune` run
                        (MERT, PRO, APRO, ListNet: per iteration; SampleRank:
                        per epoch, the averaged weights; Costmargin, perceptron:
                        per pass; --features binary: the training subset's BLEU
                        per pass); --pool adds the n-best optimisers' pool BLEU
                        under their new weights (Costmargin, perceptron: the
                        relevant sets' BLEU)
  weights LOG           each weight's trajectory over the iterations of one run
                        (--initial INI: from the untuned weights; weights
                        that never moved are listed, not drawn, unless --all)
  trace TRACE           model score and sentence BLEU+1 over the sampler steps
                        of `pbmt sample --trace` (one line per sentence)

A file that is not such a log is an error naming the file and the line.

Examples:
  pbmt plot tuning mert/log.tsv pro/log.tsv samplerank/log.tsv -o tuning.png
  pbmt plot weights mert/log.tsv -o mert-weights.png
  pbmt sample -i dev.es --refs dev.en --trace trace.tsv > /dev/null
  pbmt plot trace trace.tsv --sentences 1 2 3 -o trace.png
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from pbmt.base.config import read_weights
from pbmt.base.errors import PbmtError
from pbmt.base.plots import read_trace, read_tuning_log, save_png, trace_figure, tuning_figure, weights_figure
from pbmt.tune.registry import LOG_FORMATS


_DESCRIPTIONS = {
    "tuning": "Dev BLEU per iteration (SampleRank: per epoch) of several pbmt tune runs, one line each, in one "
              "figure. Each LOG is a run's log.tsv (or its --out folder).",
    "weights": "Each weight's value per iteration (SampleRank: the averaged weights per epoch) of one pbmt tune "
               "run, one line per weight.",
    "trace": "Model score (natural log) and sentence BLEU+1 (percent, when pbmt sample had --refs) over "
             "the sampler steps recorded by pbmt sample --trace, one line per sentence.",
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    kinds = parser.add_subparsers(dest="kind", metavar="KIND", required=True)
    tuning = kinds.add_parser("tuning", help="dev BLEU per iteration of several tuning runs", description=_DESCRIPTIONS["tuning"],
                              formatter_class=parser.formatter_class)
    tuning.add_argument("logs", nargs="+", type=Path, metavar="LOG",
                        help="log.tsv of a pbmt tune run (or its --out folder)")
    tuning.add_argument("--labels", nargs="+", help="legend names of the runs, one per LOG "
                        "(default: each log's folder name)")
    tuning.add_argument("--pool", action="store_true", help="also draw the pool BLEU of n-best optimisers")
    tuning.add_argument("--baseline", type=float, metavar="BLEU", help="dev BLEU (percent) of the untuned weights, "
                        "drawn as a line; dev BLEU below it is ringed (default: iteration 1 of the first MERT/PRO/APRO/ListNet log, which "
                        "decodes with the untuned weights; none without such a log)")
    tuning.add_argument("-o", "--output", type=Path, default=Path("tuning.png"), help="PNG file to write")
    weights = kinds.add_parser("weights", help="weight trajectories of one tuning run", description=_DESCRIPTIONS["weights"],
                               formatter_class=parser.formatter_class)
    weights.add_argument("log", type=Path, metavar="LOG", help="log.tsv of a pbmt tune run (or its --out folder)")
    weights.add_argument("--initial", type=Path, metavar="INI", help="the moses.ini the run started from: its "
                         "weights are drawn at iteration 0")
    weights.add_argument("--all", action="store_true", help="also draw the weights that never changed")
    weights.add_argument("-o", "--output", type=Path, default=Path("weights.png"), help="PNG file to write")
    trace = kinds.add_parser("trace", help="model score and BLEU over sampler steps", description=_DESCRIPTIONS["trace"],
                             formatter_class=parser.formatter_class)
    trace.add_argument("trace", type=Path, metavar="TRACE", help="trace file of pbmt sample --trace")
    trace.add_argument("--sentences", nargs="+", type=int, metavar="N",
                       help="the sentences (1-based line numbers) to draw (default: all in the trace)")
    trace.add_argument("-o", "--output", type=Path, default=Path("trace.png"), help="PNG file to write")
    for sub in (tuning, weights, trace):
        sub.add_argument("--title", help="the figure's title")
        sub.add_argument("-q", "--quiet", action="store_true", help="do not say which file was written")


def run(args: argparse.Namespace) -> int:
    if args.output.suffix.lower() != ".png":
        raise PbmtError(f"--output {args.output}: the figure is written as PNG, name it *.png")
    if args.kind == "tuning":
        if args.labels is not None and len(args.labels) != len(args.logs):
            raise PbmtError(f"--labels: {len(args.labels)} labels for {len(args.logs)} logs")
        figure = tuning_figure([read_tuning_log(p, LOG_FORMATS) for p in args.logs], args.labels, args.pool, args.title,
                               args.baseline)
    elif args.kind == "weights":
        initial = None
        if args.initial is not None:
            if not args.initial.is_file():
                raise PbmtError(f"--initial {args.initial}: no such file")
            initial = read_weights(args.initial)
        figure = weights_figure(read_tuning_log(args.log, LOG_FORMATS), args.title, initial, args.all)
    else:
        figure = trace_figure(read_trace(args.trace), args.sentences, args.title)
    save_png(figure, args.output)
    if not args.quiet:
        print(f"wrote {args.output}", file=sys.stderr)
    return 0
