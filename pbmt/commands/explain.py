"""Show how one sentence is translated: options, future costs, derivation, search.

Prints, for one source sentence: the translation options of every span with
their scores, the future-cost table, the best derivation with every block's
feature contributions and orientation, the number of hypotheses per stack
(expanded, added, recombined, pruned) and the n-best list. --html writes the
same as one self-contained page (with a word-alignment grid); --dot writes the
search graph around the n-best paths for Graphviz.

Example:
  pbmt explain "En el principio crió Dios los cielos y la tierra." --html explain.html
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from pbmt.commands import precompile
from pbmt.commands.translate import (DEFAULT_MODEL, add_markup_arguments, add_model_arguments, load_model,
                                     model_inputs)
from pbmt.base.errors import FormatError, PbmtError
from pbmt.search.explain import explain, reference_path
from pbmt.search.explain_views import render_dot, render_html, render_reference, render_text
from pbmt.base.files import Outputs, read_lines
from pbmt.base.markup import MarkupError
from pbmt.features.translation import Translator, token_form_warning


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("sentence", help="the source sentence ('-': read one line from standard input)")
    parser.add_argument("-f", "--config", type=Path, default=DEFAULT_MODEL, help="the model's moses.ini")
    parser.add_argument("--tokenized", action="store_true", help="the sentence is already in the model's tokens")
    parser.add_argument("--n-best-size", type=int, default=10, help="derivations listed from the search graph")
    parser.add_argument("--options-per-span", type=int, default=5, help="translation options shown per span")
    parser.add_argument("--html", type=Path, metavar="FILE", help="also write a self-contained HTML page")
    parser.add_argument("--dot", type=Path, metavar="FILE", help="also write the search graph (Graphviz DOT)")
    parser.add_argument("--reference", metavar="TEXT", help="a reference translation (in the sentence's form): "
                        "also show its best derivation's path through the stacks beside the 1-best's, the stack "
                        "where it fell out and the rule that dropped it (stack size, beam threshold, pop limit), "
                        "and whether the miss is a search error or a model error")
    add_model_arguments(parser)
    add_markup_arguments(parser)


def run(args: argparse.Namespace) -> int:
    sentence = _one_line("-") if args.sentence == "-" else args.sentence
    model = load_model(args)
    with Outputs(model_inputs(args, model)) as outputs:  # --html and --dot refused before the search, if they must be
        outputs.claim([path for path in (args.html, args.dot) if path is not None])
        _explain(args, model, sentence, outputs)
    return 0


def _explain(args: argparse.Namespace, model, sentence: str, outputs: Outputs) -> None:
    """Explain ``sentence`` on standard output, and into ``outputs`` (claimed) as --html and --dot ask."""
    translator = Translator(model, tokenized=args.tokenized, xml_input=args.xml_input, quote_zones=args.quote_zones)
    try:
        tokens, markup = translator.model_input(sentence)
    except MarkupError as err:
        raise PbmtError(f"malformed markup: {err} (--xml-input ignore or pass-through takes it as text)") from None
    if not tokens:
        raise PbmtError("the sentence is empty")
    if args.tokenized or model.preprocessing.keeps_tokens:  # taken as tokens: say so of plain text, as translate
        if warning := token_form_warning("the sentence", [tokens], model.vocab, model.preprocessing.source_language,
                                         args.tokenized):
            print(f"pbmt explain: warning: {warning}", file=sys.stderr)
    precompile.say_first_run(model.settings, "explain")
    try:
        e = explain(model, tokens, n_best=args.n_best_size, markup=markup)
    except ValueError as err:
        raise PbmtError(str(err)) from None
    sys.stdout.write(render_text(e, model, args.options_per_span))
    if args.reference is not None:
        reference = Translator(model, tokenized=args.tokenized).target_tokens(args.reference)
        if not reference:
            raise PbmtError("--reference is empty")
        sys.stdout.write("\n" + render_reference(reference_path(e, model, reference)))
    if args.html:
        outputs.open(args.html).write(render_html(e, model, args.options_per_span))
    if args.dot:
        outputs.open(args.dot).write(render_dot(e, model))


def _one_line(path) -> str:
    """The one line of ``path`` (``-``: standard input), read as every verb reads text (UTF-8 checked, a byte
    order mark and CR LF dropped); FormatError at a second line, which explaining the first would drop."""
    lines = read_lines(path)
    _, sentence = next(lines, (1, ""))
    if (second := next(lines, None)) is not None:
        raise FormatError("<stdin>" if str(path) == "-" else path, second[0], "explain takes one sentence, and "
                          "this is a second line (head -n 1 gives the first alone)")
    return sentence
