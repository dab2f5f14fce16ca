"""One spelling per concept across every verb's parser, and the spellings it replaced refused.

Builds ``pbmt``'s parser and walks every verb (and ``pbmt plot``'s kinds): a
concept's destination is only ever reached by its canonical flags, a
canonical flag only ever means its concept (``-o`` is the output, ``-f`` the
model's moses.ini), every visible option explains itself, and an old
spelling is a usage error.
"""

from __future__ import annotations

import argparse
import re

import pytest

from pbmt.commands.cli import build_parser
from pbmt.commands.options import visible_flags

# concept: (destination, its flags in every verb that takes it)
CONCEPTS = {
    "the model's moses.ini": ("config", ("-f", "--config")),
    "input text": ("input", ("-i", "--input")),
    "output file": ("output", ("-o", "--output")),
    "n-best list file": ("n_best", ("--n-best",)),
    "n-best entries per sentence": ("n_best_size", ("--n-best-size",)),
    "references": ("refs", ("--refs",)),
    "the source side of a parallel text": ("src", ("--src",)),
    "an output folder (or --train's weights file)": ("out", ("--out",)),
    "text in the model's token form": ("tokenized", ("--tokenized",)),
    "the tokeniser applied to text": ("tokenizer", ("--tokenizer",)),
    "feature weights": ("weights", ("--weights",)),
    "random seed": ("seed", ("--seed",)),
    "local worker processes": ("workers", ("--workers",)),
    "threads sharing one model": ("threads", ("--threads",)),
    "a dask scheduler": ("scheduler", ("--scheduler",)),
    "quiet": ("quiet", ("-q", "--quiet")),
    "where a sampler chain starts": ("chain_start", ("--chain-start",)),
    "sampler steps per sentence": ("steps_per_sentence", ("--steps-per-sentence",)),
    "sampler burn-in per sentence": ("burn_in_per_sentence", ("--burn-in-per-sentence",)),
    "sampling temperature": ("temperature", ("--temperature",)),
    "decode-optimise iterations": ("iterations", ("--iterations",)),
    "a word-class file": ("word_classes", ("--word-classes",)),
    "how many word classes to induce": ("word_class_count", ("--word-class-count",)),
    "lmplz's fallback discounts": ("discount_fallback", ("--discount-fallback",)),
    "memory for the LM's counts": ("memory", ("-S", "--memory")),
    "how markup in the input is read": ("xml_input", ("--xml-input",)),
    "quotes and brackets as zones": ("quote_zones", ("--no-quote-zones",)),
    "Python files of one's own run first": ("plugins", ("--plugins",)),
}
FLAG_DEST = {flag: dest for dest, flags in CONCEPTS.values() for flag in flags}
DEST_FLAGS = dict(CONCEPTS.values())


def _parsers(parser: argparse.ArgumentParser, name: str = "pbmt"):
    """(name, parser) of every verb, and of every sub-command below one (pbmt plot's kinds)."""
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if name != "pbmt" and not subs:
        yield name, parser
    for sub in subs:
        for verb, child in sub.choices.items():
            yield from _parsers(child, verb if name == "pbmt" else f"{name} {verb}")


PARSERS = dict(_parsers(build_parser()))


def _visible(parser):
    return [a for a in parser._actions if visible_flags(a)]


def test_every_verb_is_checked():
    assert {"translate", "explain", "sample", "eval", "tokenize", "detokenize", "lm", "tune", "optimize", "train",
            "filter", "rescore", "plot tuning", "plot weights", "plot trace", "serve"} <= set(PARSERS)


def _misspelt(parser) -> list[tuple[str, str]]:
    """(flags, destination) of every visible option of ``parser`` that spells a concept otherwise than the table,
    or gives a concept's flag another meaning."""
    wrong = []
    for action in _visible(parser):
        flags = visible_flags(action)
        if (action.dest in DEST_FLAGS and tuple(flags) != DEST_FLAGS[action.dest]) or any(
                FLAG_DEST.get(flag, action.dest) != action.dest for flag in flags):
            wrong.append(("/".join(flags), action.dest))
    return wrong


@pytest.mark.parametrize("verb", sorted(PARSERS))
def test_a_concept_has_one_spelling_and_a_flag_one_meaning(verb):
    assert _misspelt(PARSERS[verb]) == []


def test_the_spelling_check_finds_what_it_is_for():
    parser = argparse.ArgumentParser()
    parser.add_argument("-o", "--order", type=int)  # lmplz's -o: not the output
    parser.add_argument("--nbest", dest="n_best")  # n-best list, another spelling
    parser.add_argument("--references", dest="refs")
    parser.add_argument("-i", "--input")  # right
    assert _misspelt(parser) == [("-o/--order", "order"), ("--nbest", "n_best"), ("--references", "refs")]


@pytest.mark.parametrize("verb", sorted(PARSERS))
def test_every_visible_option_explains_itself_and_shows_no_empty_default(verb):
    parser = PARSERS[verb]
    for action in _visible(parser):
        assert action.help and action.help.strip(), (verb, action.option_strings)
    text = parser.format_help()
    assert "(default: None)" not in text and "(default: False)" not in text


def test_one_concept_takes_the_same_kind_of_value_everywhere():
    kinds = {}
    for verb, parser in PARSERS.items():
        for action in _visible(parser):
            if action.dest in DEST_FLAGS:
                value = getattr(action.type, "__name__", None)
                kind = (type(action).__name__ if action.nargs != 0 else "flag",
                        "a name" if value in (None, "Path") else value)  # a file name, as str or Path
                kinds.setdefault(action.dest, {})[verb] = kind
    for dest, by_verb in kinds.items():
        if dest == "n_best":  # translate writes the list, others read it
            continue
        assert len(set(by_verb.values())) == 1, (dest, by_verb)


def test_tune_help_is_grouped_per_algorithm_with_no_lab_notebook():
    text = PARSERS["tune"].format_help()
    titles = [g.title for g in PARSERS["tune"]._action_groups]
    for group in ("MERT", "PRO, APRO", "costmargin, perceptron", "samplerank", "decoding the dev set"):
        assert group in titles
    assert "shared model" not in text
    assert not re.search(r"\d+\.\d\d BLEU|BLEU \d|BLEU of \d", text)
    for line in text.splitlines():  # each option once: no default repeated in words and by the formatter
        assert line.count("default") <= 1, line


def _minimal_argv(parser: argparse.ArgumentParser) -> list[str]:
    """What ``parser`` requires: a value for every required option and positional, and the first option of
    every required choice."""
    argv = []
    for group in parser._mutually_exclusive_groups:
        if group.required:
            first = group._group_actions[0]
            argv += [first.option_strings[0]] + ([] if first.nargs == 0 else ["x"])
    for action in parser._actions:
        if action.required and action.option_strings:
            argv += [action.option_strings[0], "x"]
        elif not action.option_strings and action.dest != "help":
            argv.append("x")
    return argv


# spellings 0.1.0 dropped (CHANGELOG.md), each with a value it used to take (lm's -o ORDER, lmplz's, is now its
# output as in every verb, and a bare number refused: tests/train/test_lm_estimate.py)
REMOVED = [("optimize", ["--nbest", "n"]), ("rescore", ["--nbest", "n"]), ("tune", ["--nbest", "n"]),
           ("tune", ["--samplerank-start", "decoder"]), ("tune", ["--samplerank-temperature", "1"]),
           ("sample", ["--iterations", "5"]), ("sample", ["--init", "decoder"]), ("sample", ["--references", "r"]),
           ("train", ["--tokenizer", "none"]), ("train", ["--word-classes", "5"]),
           ("translate", ["--n-best", "out.nbest", "7"])]


@pytest.mark.parametrize("verb, old", REMOVED, ids=[f"{v} {o[0]}" for v, o in REMOVED])
def test_a_removed_spelling_is_a_usage_error(verb, old, capsys):
    parser = PARSERS[verb]
    with pytest.raises(SystemExit) as exit:
        parser.parse_args([a for a in _minimal_argv(parser) if a != old[0]] + old)
    err = capsys.readouterr().err
    assert exit.value.code == 2 and "unrecognized arguments" in err and "deprecated" not in err, err


def test_translate_takes_one_n_best_file_and_its_size_apart(capsys):
    parser = PARSERS["translate"]
    args = parser.parse_args(["--n-best", "out.nbest", "--n-best-size", "7"])
    assert (args.n_best, args.n_best_size) == ("out.nbest", 7) and capsys.readouterr().err == ""
    assert "[--n-best FILE]" in parser.format_usage()
