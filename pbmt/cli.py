"""The ``pbmt`` command line: ``pbmt <verb> --help`` explains each verb.

Exit codes: 0 success, 1 runtime error (bad input file, missing model),
2 usage error (bad arguments).
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from importlib import import_module

from pbmt import __version__
from pbmt.errors import PbmtError

# verb -> module under pbmt.commands with add_arguments(parser) and run(args) -> int
VERBS = {
    "translate": "Translate text with a phrase-based model.",
    "explain": "Show how one sentence is translated: options, future costs, derivation, search.",
    "sample": "Translate text by Gibbs sampling over derivations (annealing, greedy or sample decisions).",
    "eval": "Score a translation against references with BLEU.",
    "lm": "Estimate a Kneser-Ney n-gram LM from tokenised text and write ARPA.",
    "tune": "Tune feature weights on a dev set (decode, pool n-best lists, optimise).",
    "optimize": "Optimise feature weights on an n-best list, without decoding.",
    "train": "Train a phrase-based model (align, extract, score, LM) from a parallel text.",
    "filter": "Filter a model's tables to the phrases an input text can use.",
    "rescore": "Rescore n-best lists with extra features and learned weights (ListNet, MERT, PRO, APRO).",
    "plot": "Draw tuning curves, weight trajectories and sampler traces as PNG figures.",
    "serve": "Serve a model over HTTP: a JSON API (translate, explain) and an interactive teaching page.",
}


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter, argparse.RawDescriptionHelpFormatter):
    """Shows defaults and keeps the descriptions' paragraphs and examples as written."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="pbmt",
        description="Phrase-based statistical machine translation.",
        formatter_class=HelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"pbmt {__version__}")
    verbs = parser.add_subparsers(dest="verb", metavar="VERB", required=True)
    for verb, summary in VERBS.items():
        module = import_module(f"pbmt.commands.{verb}")
        sub = verbs.add_parser(
            verb,
            help=summary,
            description=module.__doc__,
            formatter_class=HelpFormatter,
        )
        module.add_arguments(sub)
        sub.set_defaults(run=module.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run ``pbmt`` with ``argv`` (default: ``sys.argv[1:]``); returns the exit code."""
    args = build_parser().parse_args(argv)
    try:
        code = args.run(args)
        sys.stdout.flush()
        return code
    except PbmtError as err:
        print(f"pbmt {args.verb}: error: {err}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"pbmt {args.verb}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # the reader of our output stopped (`pbmt translate | head`): end quietly, as Unix tools do
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 128 + signal.SIGPIPE
