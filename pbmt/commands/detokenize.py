"""Turn a model's tokens back into plain text: what pbmt translate does to its output.

With -f (default: the embedded model), the model's pbmt.toml says how: a
truecased model's output gets a capital at the start of the line and after a
full stop, then Moses's detokeniser (sacremoses) joins the tokens; --side
source detokenises the source language. With --language L, Moses's
detokeniser for L alone. Reads --input (default: standard input) of
space-separated tokens, one sentence a line.

Examples:
  pbmt detokenize -f model/moses.ini -i dev.out.tok -o dev.out
  echo '" hola , " dijo .' | pbmt detokenize --language es
"""

from __future__ import annotations

import argparse

from pbmt.commands.tokenize import add_form_arguments, form_inputs, text_form, warn_if_formless
from pbmt.base.files import Outputs, read_lines
from pbmt.base.text import tokens


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``pbmt detokenize``."""
    add_form_arguments(parser, "target")


def run(args: argparse.Namespace) -> int:
    """Detokenise; returns 0."""
    form = text_form(args)
    lines = [form.text(tokens(line)) for _, line in read_lines(args.input)]
    with Outputs(form_inputs(args)) as outputs:
        outputs.open(args.output).writelines(f"{line}\n" for line in lines)
    warn_if_formless(args, form, "the tokens were joined by spaces")
    return 0
