"""Filter a model to the phrases an input text can use, as Moses's filter-model-given-input.pl.

Writes to --out a moses.ini whose phrase and reordering tables keep only the
pairs whose source phrase occurs in some input sentence; the LM stays where it
is (the new ini points to it by its absolute path) and pbmt.toml is copied.
Translating the input with the filtered model gives the same output, and
loading it is much faster. The input is tokenised and truecased (or
lowercased) as the model's pbmt.toml says, unless --tokenized.

Example: pbmt filter -f model/moses.ini -i test.es --out model.test
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from pbmt.base.files import read_lines
from pbmt.features.translation import token_form_warning
from pbmt.model.model import Preprocessing
from pbmt.train.filter import filter_model
from pbmt.base.text import tokens


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``pbmt filter``."""
    parser.add_argument("-f", "--config", type=Path, required=True, help="the model's moses.ini")
    parser.add_argument("-i", "--input", required=True, help="source text, one sentence a line ('-': standard input)")
    parser.add_argument("--out", type=Path, required=True, help="folder for the filtered model")
    parser.add_argument("--tokenized", action="store_true",
                        help="the input is already in the model's token form (tokenised, truecased or lowercased)")
    parser.add_argument("-q", "--quiet", action="store_true", help="print nothing but errors")


def run(args: argparse.Namespace) -> int:
    """Filter and report what each table kept; returns 0."""
    start = time.perf_counter()
    prep = Preprocessing.read(args.config.parent)
    split = tokens if args.tokenized else prep.source_form.tokens
    sentences = [split(line) for _, line in read_lines(args.input)]
    if (args.tokenized or prep.keeps_tokens) and not args.quiet:  # text taken as tokens: untokenised text keeps the phrases of no one
        # (no vocabulary read here: untokenised punctuation is what is caught)
        if warning := token_form_warning(args.input, sentences, (), prep.source_language, args.tokenized):
            print(f"pbmt filter: warning: {warning}", file=sys.stderr)
    counts = filter_model(args.config, sentences, args.out, "<stdin>" if str(args.input) == "-" else str(args.input))
    if not args.quiet:
        for name, kept, total in counts:
            print(f"pbmt filter: {name}: kept {kept:,} of {total:,} lines", file=sys.stderr)
        print(f"pbmt filter: {args.out / 'moses.ini'} for {len(sentences):,} sentences "
              f"in {time.perf_counter() - start:.1f} s", file=sys.stderr)
    return 0
