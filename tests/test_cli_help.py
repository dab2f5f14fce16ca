"""A command line that helps: short per-tuner help, 'did you mean' for misspellings pointing to the verb's own
help, progress bars only on a terminal, a swapped dev set named as such, SampleRank's dev BLEU per epoch."""

from __future__ import annotations

import argparse
import subprocess
import sys

import pytest

from pbmt.commands.cli import build_parser
from pbmt.tune.registry import ALGORITHMS
from reliability import run


def test_tune_help_is_short_and_lists_every_tuner():
    result = run(["tune", "--help"])
    lines = result.out.splitlines()
    assert result.code == 0 and len(lines) < 80
    for algorithm in ALGORITHMS:
        assert algorithm in result.out
    assert "--samplerank-preset" not in result.out and "--pro-samples" not in result.out
    assert "pbmt tune --algorithm NAME --help" in result.out


@pytest.mark.parametrize("algorithm, shown, hidden", [
    ("pro", ["--pro-samples", "--interpolation", "--n-best-size"], ["--epochs", "--restarts", "--passes"]),
    ("mert", ["--restarts", "--keep-signs", "--iterations"], ["--pro-samples", "--epochs", "--gain"]),
    ("samplerank", ["--epochs", "--samplerank-preset", "--gain"], ["--pro-samples", "--restarts", "--iterations",
                                                                  "--n-best-size", "--passes"]),
    ("costmargin", ["--passes", "--features", "--keep", "--n-best-size"], ["--epochs", "--restarts",
                                                                           "--iterations"]),
])
def test_tune_algorithm_help_shows_that_tuners_options(algorithm, shown, hidden):
    result = run(["tune", "--algorithm", algorithm, "--help"])
    assert result.code == 0
    for flag in shown:
        assert flag in result.out, flag
    for flag in hidden:
        assert flag not in result.out, flag


def test_help_all_shows_every_option():
    result = run(["tune", "--help-all"])
    parser = build_parser().verb_parsers["tune"]
    assert result.code == 0 and result.out == parser.format_help()
    assert "--samplerank-preset" in result.out and "--pro-samples" in result.out


@pytest.mark.parametrize("argv, expected", [
    (["tune", "--algoritm", "pro"], "unrecognized arguments: --algoritm; did you mean --algorithm? "
                                     "(see pbmt tune --help)"),
    (["translate", "--n-bset", "x", "--quite"], "did you mean --n-best for --n-bset, --quiet for --quite? "
                                                 "(see pbmt translate --help)"),
    (["tranlsate"], "did you mean 'translate'? (see pbmt --help)"),
    (["tune", "-f", "m", "--src", "s", "--refs", "r", "--out", "o", "--algorithm", "mret"],
     "did you mean 'mert'? (see pbmt tune --help)"),
    (["eval", "ref", "--lowercse"], "did you mean --lowercase? (see pbmt eval --help)"),
    (["translate", "--zzzz"], "unrecognized arguments: --zzzz (see pbmt translate --help)"),
    (["analyze", "--src", "dev.es", "--refs", "dev.en"], "--src; did you mean --input? (see pbmt analyze --help)"),
    (["rescore", "--nbest", "x", "--reference", "r"], "did you mean --n-best for --nbest, --refs for --reference? "
                                                       "(see pbmt rescore --help)"),
    (["sample", "--iterations", "3"], "unrecognized arguments: --iterations (see pbmt sample --help)"),
])
def test_a_misspelling_gets_a_suggestion_and_the_verbs_help(argv, expected):
    result = run(argv)
    assert result.code == 2 and result.out == ""
    lines = result.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].endswith(expected), lines


def test_an_abbreviated_option_is_refused_with_its_whole_spelling_suggested():
    """A prefix may name another option than the user meant (train's removed --tokenize would read as
    --tokenized, the opposite), so options are taken by their whole spelling only."""
    result = run(["translate", "--n-best-si", "3", "-i", "/nonexistent"])
    assert result.code == 2 and "did you mean --n-best-size?" in result.err
    result = run(["train", "--tokenize", "--src", "a", "--tgt", "b"])
    assert result.code == 2 and "--tokenize" in result.err and "did you mean --tokenized?" in result.err


def test_progress_bars_stay_out_of_a_redirected_log(tiny_model_dir, tmp_path):
    source = tmp_path / "in.txt"
    source.write_text("a b c\nd e\n")
    done = subprocess.run([sys.executable, "-m", "pbmt", "translate", "-f", tiny_model_dir / "moses.ini",
                           "--tokenized", "-i", source, "-o", tmp_path / "out.txt"],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert "\r" not in done.stderr and "\x1b" not in done.stderr and "translating" not in done.stderr
    assert "translated 2 sentences" in done.stderr


def test_a_swapped_dev_set_is_an_error_naming_both_files(tiny_model_dir, tiny_dev, tmp_path):
    result = run(["tune", "-q", "-f", tiny_model_dir / "moses.ini", "--tokenized", "--src", tiny_dev / "dev.ref",
                  "--refs", tiny_dev / "dev.src", "--out", tmp_path / "out"])
    assert result.code == 1
    lines = result.err.strip().splitlines()
    assert len(lines) == 1 and "wrong way round" in lines[0], lines
    assert str(tiny_dev / "dev.ref") in lines[0] and str(tiny_dev / "dev.src") in lines[0]
    assert not (tmp_path / "out" / "moses.ini").exists()


def test_samplerank_prints_its_dev_bleu_every_epoch(tiny_model_dir, tiny_dev, tmp_path):
    result = run(["tune", "-f", tiny_model_dir / "moses.ini", "--tokenized", "--src", tiny_dev / "dev.src",
                  "--refs", tiny_dev / "dev.ref", "--out", tmp_path / "sr", "--algorithm", "samplerank",
                  "--epochs", "2", "--samples-per-sentence", "10", "--burn-in-per-sentence", "2"])
    assert result.code == 0, result.err
    epochs = [line for line in result.err.splitlines() if line.startswith("epoch ")]
    assert [line.split(":")[0] for line in epochs] == ["epoch 1", "epoch 2"]
    assert all(" dev BLEU " in line for line in epochs) and "\r" not in result.err


def test_a_run_imports_its_own_verb_only():
    """Every start-up pays for what it imports: ``pbmt translate`` must not load the trainer, the server or the
    tuners (the other verbs' modules), and ``pbmt --help`` still lists every verb."""
    probe = ("import sys; from pbmt.commands.cli import parse; parse(['translate', '-i', 'x']); "
             "print(' '.join(sorted(m for m in sys.modules if m.startswith('pbmt.commands.'))))")
    loaded = set(subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                                check=True).stdout.split())
    assert "pbmt.commands.translate" in loaded
    assert not loaded & {"pbmt.commands.train", "pbmt.commands.tune", "pbmt.commands.serve",
                         "pbmt.commands.analyze", "pbmt.commands.plot"}
    listed = run(["--help"]).out
    assert all(verb in listed for verb in ("translate", "train", "tune", "serve", "plot", "rescore"))



def test_every_verbs_help_reads_as_written():
    """An off-switch's default, True, is not shown (``--no-causes ... (default: True)`` read as the switch being
    on), an on/off pair's is, and an example continued on the next line keeps its backslash (a backslash ending a
    line of the docstring joined the two with a run of spaces)."""
    for verb, parser in build_parser().verb_parsers.items():
        formatter = parser._get_formatter()
        for action in parser._actions:
            shown = formatter._get_help_string(action) or ""
            if action.nargs == 0 and not isinstance(action, argparse.BooleanOptionalAction):
                assert "%(default)" not in shown, (verb, action.option_strings)
            elif isinstance(action, argparse.BooleanOptionalAction):
                assert "default" in shown, (verb, action.option_strings)
        for line in parser.format_help().splitlines():
            if line.lstrip().startswith("pbmt "):
                assert "    --" not in line.strip(), (verb, line)
    help_of = {verb: parser.format_help() for verb, parser in build_parser().verb_parsers.items()}
    assert "--no-causes" in help_of["analyze"] and "(default: True)" not in help_of["analyze"]
    assert "test.keys \\\n      --global-features" in help_of["translate"]


def test_the_help_examples_sentences_are_all_known_to_the_embedded_model():
    """An example a new user pastes first shows a translation, not unknown words copied through ('creó', the
    modern spelling, is 'crió' in the embedded model's Bible text: it came out 'In the beginning creó God')."""
    import re

    import pbmt
    from pbmt.commands import explain, serve, translate

    quoted = re.compile(r'(?:echo |pbmt explain |"sentences": \[)"([^"]+)"(?: \| pbmt translate( --tokenized)?)?')
    examples = [(m.group(1), bool(m.group(2))) for module in (translate, explain, serve)
                for m in quoted.finditer(module.__doc__.split("Example")[1])]
    assert len(examples) == 4, examples
    model = pbmt.load()
    for sentence, tokenized in examples:
        best = model.translate(sentence, tokenized=tokenized, n_best=1).nbest[0]
        assert best.features["UnknownWordPenalty0"] == (0.0,), (sentence, best.text)
