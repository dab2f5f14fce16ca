"""Estimate an interpolated modified Kneser-Ney n-gram LM and write it as ARPA.

The model is the one KenLM's ``lmplz -o ORDER`` writes with its default
options (no pruning): <s> and </s> are added around each line, lower orders
use continuation counts, three discounts per order come from the counts of
adjusted counts, and every level is interpolated with the one below (the
unigrams with the uniform distribution). The input (-i, default standard
input, as lmplz reads it, but not a terminal) is tokenised text, one
sentence a line (plain or .gz); the output (-o, default standard output, as lmplz writes it) is
gzip-compressed when its name ends in .gz. The two may also be given as
positional files, TEXT then OUTPUT. Progress and the discounts go to
standard error.

On tiny or artificial text the closed-form discounts are undefined or out of
range; like lmplz, this is an error unless --discount-fallback is given, which
uses fixed discounts (default 0.5 1 1.5, for adjusted counts 1, 2, 3+) for the
orders where the estimate fails.

The counts go to sorted files on disk, as lmplz's do: -S/--memory bounds the
counts held in memory at a time (the vocabulary comes on top); the model does
not depend on it. The files are in a temporary folder beside the output,
removed at the end.

Examples:
  pbmt lm --order 5 -i train.tok.en -o lm5.arpa.gz
  pbmt lm --order 5 train.tok.en lm5.arpa.gz
  pbmt lm -n 5 < train.tok.en > lm5.arpa

(lmplz's -o is the order; in every pbmt verb -o is an output file, so here the order is -n/--order.)
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from typing import Callable

from pbmt.base.errors import UsageError
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
    hint = (": the option reads the words after it, so give it after the files (or name them with -i and -o)"
            if files_after else "")
    parser.add_argument("--discount-fallback", nargs="*", type=_discount(hint), action=_FallbackAction, metavar="D",
                        default=None, help="when an order's closed-form discounts fail (tiny corpora), use these "
                        f"(D1 D2 D3+; no value: {' '.join(map(str, DEFAULT_FALLBACK))}, lmplz's) instead of "
                        "stopping with an error")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``pbmt lm``."""
    parser.add_argument("text", nargs="?", metavar="TEXT", help="the text, as -i gives it")
    parser.add_argument("arpa", nargs="?", metavar="OUTPUT", help="the ARPA file, as -o gives it")
    parser.add_argument("-i", "--input", help="tokenised text, one sentence a line (plain or .gz; '-': standard "
                        "input) (default: TEXT, else standard input)")
    parser.add_argument("-o", "--output", help="ARPA file to write (.gz: gzip-compressed; '-': standard output) "
                        "(default: OUTPUT, else standard output)")
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

    text, output = _given(args.input, args.text, "-i", "TEXT"), _given(args.output, args.arpa, "-o", "OUTPUT")
    if text == "-" and sys.stdin.isatty():
        raise UsageError("no text: give it with -i TEXT (or as the first file) or on standard input, not a terminal")
    if output.isdigit() and args.output is not None:
        raise UsageError(f"-o is the ARPA file to write, as in every pbmt verb; lmplz's -o {output}, the order, is "
                         f"-n {output} here (a file named {output}: -o ./{output})")
    if output.isdigit():
        raise UsageError(f"the ARPA file to write is named {output}, a number: the order is -n {output} (a file named "
                         f"{output}: ./{output})")
    start = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        counts = write_lm(text, args.order, output, args.discount_fallback, args.memory, progress=not args.quiet)
    for warning in caught:
        print(f"pbmt lm: warning: {warning.message}", file=sys.stderr)
    say(f"{counts.words} word types")
    for k, (n, discounts) in enumerate(zip(counts.ngrams, counts.discounts), 1):
        say(f"  {k}-grams: {n:>10}   discounts {' '.join(f'{d:.4f}' for d in discounts)}")
    say(f"wrote {'standard output' if output == '-' else output} in {time.perf_counter() - start:.1f} s")
    return 0


def _given(option: str | None, positional: str | None, flag: str, metavar: str) -> str:
    """The file ``flag`` or the positional ``metavar`` names ('-', standard input or output, when neither does);
    a UsageError when both do: one of them would be ignored."""
    if option is not None and positional is not None:
        raise UsageError(f"{flag} {option} and the positional {metavar} {positional} name the same file: give one")
    return option if option is not None else positional if positional is not None else "-"
