"""Estimate an interpolated modified Kneser-Ney n-gram LM and write it as ARPA.

The model is the one KenLM's ``lmplz -o ORDER`` writes with its default
options (no pruning): <s> and </s> are added around each line, lower orders
use continuation counts, three discounts per order come from the counts of
adjusted counts, and every level is interpolated with the one below (the
unigrams with the uniform distribution). The input is tokenised text, one
sentence a line (plain or .gz); the output is gzip-compressed when its name
ends in .gz. Progress and the discounts go to standard error.

On tiny or artificial text the closed-form discounts are undefined or out of
range; like lmplz, this is an error unless --discount-fallback is given, which
uses fixed discounts (default 0.5 1 1.5, for adjusted counts 1, 2, 3+) for the
orders where the estimate fails.

The counts go to sorted files on disk, as lmplz's do: -S/--memory bounds the
counts held in memory at a time (the vocabulary comes on top); the model does
not depend on it. The files are in a temporary folder beside the output,
removed at the end.

Example: pbmt lm --order 5 train.tok.en lm5.arpa.gz

(lmplz's -o is the order; in every pbmt verb -o is an output file, so here the order is -n/--order.)
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from typing import Callable

from pbmt.base.files import parse_finite, parse_float
from pbmt.train.lm_estimate import DEFAULT_FALLBACK, memory_size, write_lm


class _FallbackAction(argparse.Action):
    """``--discount-fallback`` alone gives lmplz's default discounts; else exactly three."""

    def __call__(self, parser, namespace, values, option_string=None):
        if len(values) not in (0, 3):
            parser.error(f"{option_string} takes no value or three discounts (adjusted counts 1, 2, 3+)")
        setattr(namespace, self.dest, tuple(values) or DEFAULT_FALLBACK)


def _discount(hint: str) -> Callable[[str], float]:
    """The type of a discount of ``--discount-fallback``; a word that is no number is refused with ``hint``: the
    option takes the words after it, so ``pbmt lm --discount-fallback text.txt lm.arpa`` read the files as
    discounts."""

    def discount(text: str) -> float:
        try:
            return parse_finite(text)
        except ValueError as err:
            if _is_number(text):
                raise argparse.ArgumentTypeError(str(err)) from None
            raise argparse.ArgumentTypeError(f"{text!r} is not a discount{hint}") from None

    discount.__name__ = "finite float"  # a number option like the others: its range is checked and listed
    return discount


def _is_number(text: str) -> bool:
    try:
        parse_float(text)
    except ValueError:
        return False
    return True


def add_discount_fallback(parser, files_after: bool = False) -> None:
    """``--discount-fallback [D1 D2 D3]`` (shared with ``pbmt train``); ``files_after``: the verb takes file names
    as positional arguments, which the option reads as discounts when it stands before them."""
    hint = ": the option reads the words after it, so give it after the files" if files_after else ""
    parser.add_argument("--discount-fallback", nargs="*", type=_discount(hint), action=_FallbackAction, metavar="D",
                        default=None, help="when an order's closed-form discounts fail (tiny corpora), use these "
                        f"(D1 D2 D3+; no value: {' '.join(map(str, DEFAULT_FALLBACK))}, lmplz's) instead of "
                        "stopping with an error")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``pbmt lm``."""
    parser.add_argument("text", help="tokenised text, one sentence a line (plain or .gz)")
    parser.add_argument("output", help="ARPA file to write (.gz: gzip-compressed)")
    parser.add_argument("-n", "--order", type=int, default=3, help="highest n-gram order")
    add_discount_fallback(parser, files_after=True)
    parser.add_argument("-S", "--memory", type=memory_size, default="1G", metavar="SIZE",
                        help="memory for the counts, as lmplz's -S: a number with a suffix b, K, M, G, T or %% "
                        "(of the physical memory); no suffix: K")
    parser.add_argument("-q", "--quiet", action="store_true", help="print nothing but errors")


def run(args: argparse.Namespace) -> int:
    """Estimate, write, and report counts, discounts and times; returns 0."""

    def say(message: str) -> None:
        if not args.quiet:
            print(message, file=sys.stderr, flush=True)

    start = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        counts = write_lm(args.text, args.order, args.output, args.discount_fallback, args.memory,
                          progress=not args.quiet)
    for warning in caught:
        print(f"pbmt lm: warning: {warning.message}", file=sys.stderr)
    say(f"{counts.words} word types")
    for k, (n, discounts) in enumerate(zip(counts.ngrams, counts.discounts), 1):
        say(f"  {k}-grams: {n:>10}   discounts {' '.join(f'{d:.4f}' for d in discounts)}")
    say(f"wrote {args.output} in {time.perf_counter() - start:.1f} s")
    return 0
