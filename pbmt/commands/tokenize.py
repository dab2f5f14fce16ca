"""Turn plain text into a model's token form: the preprocessing pbmt translate and pbmt tune apply.

With -f (default: the embedded model), the model's pbmt.toml says how: Moses's
tokeniser (sacremoses, no escaping: quotes stay quotes), then its truecaser or
lowercasing; --side target gives the form of its references. With --language
L, Moses's tokeniser for L alone (--lowercase to lowercase too). Reads
--input (default: standard input), writes one line of space-separated tokens
per input line. Placeholders, tags, URLs, e-mail addresses, paths and
accelerators (pbmt.base.protected; --protected adds patterns) stay one token
each, as they are. pbmt detokenize goes back.

Examples:
  pbmt tokenize -f model/moses.ini -i dev.es -o dev.tok.es
  pbmt tokenize -f model/moses.ini --side target -i dev.en -o dev.tok.en
  echo '"Hola," dijo.' | pbmt tokenize --language es
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

from pbmt.commands.translate import DEFAULT_MODEL
from pbmt.base.config import MosesConfig, config_path
from pbmt.base.errors import PbmtError
from pbmt.base.files import Outputs, read_lines
from pbmt.model.model import Preprocessing
from pbmt.base.protected import ProtectedPatterns
from pbmt.base.run_state import model_files
from pbmt.base.text import TextForm, moses_knows, unknown_language

SIDES = ("source", "target")


def add_form_arguments(parser: argparse.ArgumentParser, side: str) -> None:
    """The options that choose a text form (shared with ``pbmt detokenize``)."""
    parser.add_argument("-f", "--config", type=Path, default=DEFAULT_MODEL,
                        help="the model (moses.ini) whose pbmt.toml says the form")
    parser.add_argument("--side", choices=SIDES, default=side, help="the model's source or target language")
    parser.add_argument("--language", metavar="L", help="Moses's tokeniser for language L (e.g. es, en) instead "
                        "of a model's preprocessing")
    parser.add_argument("--lowercase", action="store_true", help="with --language: lowercase as well")
    parser.add_argument("--protected", type=Path, metavar="FILE", help="more protected patterns (one regular "
                        "expression a line, beside the built-in ones and a model's): text they match stays "
                        "one token, as it is")
    parser.add_argument("-i", "--input", default="-", help="text, one sentence a line ('-': standard input)")
    parser.add_argument("-o", "--output", default="-", help="where the lines go ('-': standard output)")
    parser.add_argument("-q", "--quiet", action="store_true", help="print nothing but errors (no warnings)")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``pbmt tokenize``."""
    add_form_arguments(parser, "source")


def text_form(args: argparse.Namespace) -> TextForm:
    """The form ``add_form_arguments``'s options choose."""
    extra = ProtectedPatterns.read(args.protected).extra if args.protected else ()
    if args.language is not None:
        if not moses_knows(args.language) and not args.quiet:
            print(f"pbmt {args.verb}: warning: {unknown_language(args.language)}", file=sys.stderr)
        return TextForm(args.language, True, "lowercase" if args.lowercase else "none",
                        protected=ProtectedPatterns(extra))
    if args.lowercase:
        raise PbmtError("--lowercase goes with --language; a model's pbmt.toml says its own casing")
    preprocessing = Preprocessing.read(config_path(args.config).parent)
    form = preprocessing.source_form if args.side == "source" else preprocessing.target_form
    return replace(form, protected=ProtectedPatterns(extra + form.protected.extra)) if extra else form


def form_inputs(args: argparse.Namespace) -> list[Path | str | None]:
    """--input, --protected and, without --language, the files of -f's model (its pbmt.toml and truecasers, which
    ``text_form(args)`` reads, its tables): files no output of the run may replace."""
    model = [] if args.language is not None else model_files(MosesConfig.read(config_path(args.config)))
    return [args.input, args.protected, *model]


def warn_if_formless(args: argparse.Namespace, form: TextForm, done: str) -> None:
    """A warning when -f's model says nothing of its text form (a Moses model without a pbmt.toml), so that
    ``done`` (what the verb did to the text: next to nothing) is all: the user meant Moses's tokeniser."""
    if args.language is None and not form.tokenize and form.casing == "none" and not args.quiet:
        print(f"pbmt {args.verb}: warning: {config_path(args.config)}: no pbmt.toml beside it says how the model "
              f"tokenises and cases text, so {done}; --language L (--lowercase too for a lowercased model) "
              "applies Moses's tokeniser for L", file=sys.stderr)


def run(args: argparse.Namespace) -> int:
    """Tokenise; returns 0."""
    form = text_form(args)
    lines = [" ".join(form.tokens(line)) for _, line in read_lines(args.input)]
    with Outputs(form_inputs(args)) as outputs:
        outputs.open(args.output).writelines(f"{line}\n" for line in lines)
    warn_if_formless(args, form, "the lines were copied as they are")
    return 0
