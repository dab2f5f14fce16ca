"""Fuzz suite: seeded mutations of real model files, n-best lists, corpora and checkpoints, run through the verbs.

Every case must end in exit 1 or 2 with one line naming the mutated file (or option), or in exit 0 with output
equal to the clean input's: never a traceback, never exit 0 with a different output (``reliability.check``).
The mutations are those a reader can detect (a number that is no number, a missing field, a broken gzip
stream, a second section) or that must not change anything (a BOM, CRLF line ends, a tab between words); a
valid-looking change of a value (0.3 for 0.2) is undetectable by anyone and is not generated.
"""

from __future__ import annotations

import argparse
import gzip
import os
import random
import re
import shutil
import subprocess
import sys

from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pbmt.commands.cli import build_parser
from pbmt.commands.options import visible_flags
from reliability import (SCALE, SHARED, check, fuzz, model_copy, optimize_args, read_outputs,  # noqa: F401
                         run, translate_args, translate_outputs)

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = settings(max_examples=20 * SCALE, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])

BAD_NUMBERS = ["nan", "inf", "-inf", "1e999", "x", "\u0663", "1_0", "0x10", "--1", "1.2.3", "\u00b2"]
NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?:e-?\d+)?(?![\w.])")


# --- mutations: (rng, text) -> text --------------------------------------------------------------------------

def bad_number(rng, text):
    spots = list(NUMBER.finditer(text))
    spot = rng.choice(spots)
    return text[:spot.start()] + rng.choice(BAD_NUMBERS) + text[spot.end():]


def bom(rng, text):
    return "\ufeff" + text


def crlf(rng, text):
    return text.replace("\n", "\r\n")


def invalid_utf8(rng, text):
    return text  # marker: applied to bytes in ``mutate``


def drop_separator(rng, text):
    spots = [m.start() for m in re.finditer(r" \|\|\| ", text)]
    at = rng.choice(spots)
    return text[:at] + " " + text[at + 5:]


def phrase_whitespace(rng, text):
    """A tab or a second space between two words of a phrase: the same phrase."""
    lines = text.split("\n")
    i = rng.randrange(len(lines) - 1)
    fields = lines[i].split(" ||| ")
    k = rng.randrange(2)
    if " " in fields[k]:
        fields[k] = fields[k].replace(" ", rng.choice(["\t", "  "]), 1)
    else:
        fields[k] = rng.choice(["\t", "  "]) + fields[k] + " "
    lines[i] = " ||| ".join(fields)
    return "\n".join(lines)


def delete_line(rng, text):
    lines = text.split("\n")
    del lines[rng.randrange(len(lines) - 1)]
    return "\n".join(lines)


def duplicate_line(rng, text):
    lines = text.split("\n")
    i = rng.randrange(len(lines) - 1)
    lines.insert(i, lines[i])
    return "\n".join(lines)


def positive_log_prob(rng, text):
    lines = text.split("\n")
    grams = [i for i, line in enumerate(lines) if "\t" in line]
    i = rng.choice(grams)
    lines[i] = rng.choice(["0.5", "3"]) + lines[i][lines[i].index("\t"):]
    return "\n".join(lines)


def unicode_digit_alignment(rng, text):
    lines = text.split("\n")
    i = rng.choice([k for k, line in enumerate(lines) if "0-0" in line])
    lines[i] = lines[i].replace("0-0", rng.choice(["\u0660-0", "0-\u00b2", "0-", "-0", "0-0-0"]), 1)
    return "\n".join(lines)


INI_EDITS = [
    "[distortion-limit]\n3\n", "[stack]\n0\n", "[stack]\n-1\n", "[stack]\n\u0663\n", "[beam-threshold]\n2\n",
    "[beam-threshold]\nnan\n", "[ttable-limit]\n0\n", "[distortion-limit]\n-2\n", "[max-phrase-length]\n0\n",
    "[weight]\nLM0= 0.5\n", "[feature]\nWordPenalty\n", "[stack]\n10\n20\n", "[ttable-file]\n0 0 0 5 pt\n",
    "stray line\n", "[unclosed\n",
]


def ini_append(rng, text):
    """A setting or section appended: a second section, or a value out of range."""
    return text + "\n" + rng.choice(INI_EDITS)


def ini_feature_edit(rng, text):
    lines = text.split("\n")
    i = rng.choice([k for k, line in enumerate(lines) if "name=" in line])
    edit = rng.choice(["num-features=0", "num-features=x", "path=other.gz", "name=LM0", "table-limit=0",
                       "table-limit=x", "=", "noequals"])
    lines[i] += " " + edit
    return "\n".join(lines)


def ini_weight_line_twice(rng, text):
    lines = text.split("\n")
    i = rng.choice([k for k, line in enumerate(lines) if "0= " in line])
    lines.insert(i + 1, lines[i])
    return "\n".join(lines)


TOML_EDITS = [
    '[preprocess]\ntokenize = true\n', 'tokenize = true\n', '[search]\nreordering = "mon-swap"\n',
    '[other]\nx = 1\n', '[search]\nbeam = 3\n', 'x = = 1\n',
]


def toml_edit(rng, text):
    choice = rng.randrange(4)
    if choice == 0:
        return text + rng.choice(TOML_EDITS)
    if choice == 1:
        return text.replace("tokenize = false", rng.choice(['tokenize = "no"', "tokenize = 0", "tokenize = []"]))
    if choice == 2:
        return text.replace('"distortion"', rng.choice(['"swap"', "1", '""']))
    return text.replace("lowercase = false\n", "lowercase = false\nlowercase = false\n")


def arpa_header_count(rng, text):
    return re.sub(r"ngram (\d)=(\d+)", lambda m: f"ngram {m[1]}={int(m[2]) + rng.choice([-1, 1])}"
                  if m[1] == str(rng.randint(1, 3)) else m[0], text)


def truncate_gzip(rng, data: bytes) -> bytes:
    return data[:rng.randrange(10, len(data) - 8)]


def flip_byte(rng, data: bytes) -> bytes:
    at = rng.randrange(len(data))
    return data[:at] + bytes([data[at] ^ (1 << rng.randrange(8))]) + data[at + 1:]


TEXT_MUTATIONS = {
    "phrase-table.gz": [bad_number, bom, crlf, invalid_utf8, drop_separator, phrase_whitespace,
                        unicode_digit_alignment, truncate_gzip, flip_byte],
    "reordering-table.gz": [bad_number, bom, crlf, invalid_utf8, drop_separator, phrase_whitespace,
                            truncate_gzip],
    "lm.arpa": [bad_number, bom, invalid_utf8, delete_line, duplicate_line, positive_log_prob,
                arpa_header_count],
    "moses.ini": [bad_number, bom, crlf, invalid_utf8, ini_append, ini_feature_edit, ini_weight_line_twice,
                  duplicate_line],
    "pbmt.toml": [bom, crlf, invalid_utf8, toml_edit],
}
BYTE_MUTATIONS = {truncate_gzip, flip_byte}


def mutate(rng: random.Random, name: str, data: bytes, mutation) -> bytes:
    """``data`` (of file ``name``) under one mutation; text mutations see the decompressed text."""
    if mutation in BYTE_MUTATIONS:
        return mutation(rng, data)
    compressed = name.endswith(".gz")
    raw = gzip.decompress(data) if compressed else data
    if mutation is invalid_utf8:
        at = rng.randrange(len(raw))
        raw = raw[:at] + rng.choice([b"\xff", b"\xc3", b"\xed\xa0\x80"]) + raw[at:]
    else:
        raw = mutation(rng, raw.decode("utf-8")).encode("utf-8")
    return gzip.compress(raw, mtime=0) if compressed else raw


CASES_PER_MUTATION = {"phrase-table.gz": 4, "reordering-table.gz": 3, "lm.arpa": 4, "moses.ini": 5,
                      "pbmt.toml": 4}
MODEL_CASES = [(name, m.__name__, k) for name, mutations in TEXT_MUTATIONS.items() for m in mutations
               for k in range(CASES_PER_MUTATION[name] * SCALE)]


@pytest.mark.parametrize("name, mutation, k", MODEL_CASES)
def test_a_mutated_model_file_is_an_error_naming_it_or_changes_nothing(fuzz, tmp_path, name, mutation, k):
    rng = random.Random(f"{name}/{mutation}/{k}")
    clean = (fuzz["model"] / name).read_bytes()
    mutated = mutate(rng, name, clean, globals()[mutation])
    ini = model_copy(fuzz["model"], tmp_path / "model", {name: mutated})
    outputs = {key: tmp_path / "out" / path.name for key, path in translate_outputs(tmp_path).items()}
    result = run(translate_args(ini, fuzz["input"], outputs))
    check(result, fuzz["translations"], read_outputs(outputs), [name, "moses.ini"])
    if result.code != 0:
        assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


INPUT_MUTATIONS = ["bom", "crlf", "invalid_utf8", "separator"]


@pytest.mark.parametrize("mutation", INPUT_MUTATIONS)
@pytest.mark.parametrize("k", range(3 * SCALE))
def test_a_mutated_input_is_an_error_naming_it_or_changes_nothing(fuzz, tmp_path, mutation, k):
    rng = random.Random(f"input/{mutation}/{k}")
    text = fuzz["input"].read_text()
    if mutation == "separator":
        words = text.split(" ")
        i = rng.randrange(len(words))
        words[i] = words[i][:1] + rng.choice(["|||", "a|||b", "|||x"]) + words[i][1:]
        data = " ".join(words).encode()
    elif mutation == "invalid_utf8":
        data = mutate(rng, "in.txt", text.encode(), invalid_utf8)
    else:
        data = globals()[mutation](rng, text).encode()
    source = tmp_path / "in.txt"
    source.write_bytes(data)
    outputs = translate_outputs(tmp_path / "out")
    result = run(translate_args(fuzz["model"] / "moses.ini", source, outputs))
    check(result, fuzz["translations"], read_outputs(outputs), [str(source)])


NBEST_MUTATIONS = [bad_number, bom, crlf, invalid_utf8, drop_separator, unicode_digit_alignment, duplicate_line]


@pytest.mark.parametrize("mutation", [m.__name__ for m in NBEST_MUTATIONS])
@pytest.mark.parametrize("k", range(4 * SCALE))
def test_a_mutated_nbest_list_is_an_error_naming_it_or_changes_nothing(fuzz, tmp_path, mutation, k):
    rng = random.Random(f"nbest/{mutation}/{k}")
    nbest = tmp_path / "nbest.txt"
    nbest.write_bytes(mutate(rng, "nbest.txt", fuzz["nbest"].read_bytes(), globals()[mutation]))
    result = run(optimize_args(nbest, fuzz["refs"], fuzz["model"] / "moses.ini", tmp_path / "tuned.ini"))
    check(result, {"tuned": fuzz["tuned"]}, read_outputs({"tuned": tmp_path / "tuned.ini"}), [str(nbest)])


CORPUS_MUTATIONS = [bom, crlf, invalid_utf8, delete_line, duplicate_line]


@pytest.mark.parametrize("side", ["hypothesis", "references"])
@pytest.mark.parametrize("mutation", [m.__name__ for m in CORPUS_MUTATIONS])
@pytest.mark.parametrize("k", range(2 * SCALE))
def test_a_mutated_corpus_is_an_error_naming_it_or_changes_nothing(fuzz, tmp_path, side, mutation, k):
    rng = random.Random(f"corpus/{side}/{mutation}/{k}")
    files = {"hypothesis": tmp_path / "hyp.txt", "references": tmp_path / "ref.txt"}
    files["hypothesis"].write_text(fuzz["translations"]["text"])
    files["references"].write_bytes(fuzz["refs"].read_bytes())
    clean = run(["eval", files["references"], "-i", files["hypothesis"]])
    assert clean.code == 0
    files[side].write_bytes(mutate(rng, files[side].name, files[side].read_bytes(), globals()[mutation]))
    result = run(["eval", files["references"], "-i", files["hypothesis"]])
    check(result, {"score": clean.out}, {"score": result.out}, [str(files[side])])


CHECKPOINT_MUTATIONS = ["truncate", "flip", "empty", "garbage", "other_algorithm"]


@pytest.fixture(scope="session")
def tuned_run(fuzz, tmp_path_factory):
    """A MERT run of two iterations on the fuzz sentences, and the moses.ini its resumption to three gives."""
    folder = tmp_path_factory.mktemp("tuned")
    assert run(tune_args(fuzz, folder / "run", "2")).code == 0
    shutil.copytree(folder / "run", folder / "resumed")
    assert run(tune_args(fuzz, folder / "resumed", "3", "--resume")).code == 0
    return folder / "run", (folder / "resumed" / "moses.ini").read_text()


def tune_args(fuzz, out, iterations, *extra):
    return ["tune", "-q", "-f", fuzz["model"] / "moses.ini", "--src", fuzz["input"], "--refs", fuzz["refs"],
            "--out", out, "--n-best-size", "10", "--restarts", "2", "--random-directions", "2", "--iterations",
            iterations, *extra]


@pytest.mark.parametrize("mutation", CHECKPOINT_MUTATIONS)
@pytest.mark.parametrize("k", range(3))
def test_a_corrupt_checkpoint_is_one_line_naming_it(fuzz, tuned_run, tmp_path, mutation, k):
    rng = random.Random(f"checkpoint/{mutation}/{k}")
    folder, resumed = tuned_run
    shutil.copytree(folder, tmp_path / "run")
    checkpoint = tmp_path / "run" / "checkpoint.npz"
    data = checkpoint.read_bytes()
    if mutation == "truncate":
        data = data[:rng.randrange(len(data))]
    elif mutation == "flip":
        data = flip_byte(rng, data)
    elif mutation == "empty":
        data = b""
    elif mutation == "garbage":
        data = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 2000)))
    else:
        import numpy as np
        with open(checkpoint, "wb") as handle:
            np.savez(handle, seeds=np.zeros(3), state=np.frombuffer(b"{}", np.uint8))
        data = checkpoint.read_bytes()
    checkpoint.write_bytes(data)
    result = run(tune_args(fuzz, tmp_path / "run", "3", "--resume"))
    check(result, {"ini": resumed}, read_outputs({"ini": tmp_path / "run" / "moses.ini"}), [str(checkpoint)])


@pytest.mark.parametrize("changed", ["refs", "input", "model"])
def test_resuming_on_inputs_of_other_content_is_refused(fuzz, tuned_run, tmp_path, changed):
    folder, _ = tuned_run
    shutil.copytree(folder, tmp_path / "run")
    copy = dict(fuzz)
    if changed == "model":
        ini = model_copy(fuzz["model"], tmp_path / "model", {"lm.arpa": (fuzz["model"] / "lm.arpa").read_bytes()
                                                              .replace(b"\\end\\", b"\n\\end\\")})
        copy["model"] = ini.parent
    else:
        lines = fuzz[changed].read_text().splitlines()
        lines[0], lines[1] = lines[1], lines[0]  # same length, other content
        copy[changed] = tmp_path / f"{changed}.txt"
        copy[changed].write_text("\n".join(lines) + "\n")
    result = run(tune_args(copy, tmp_path / "run", "3", "--resume"))
    assert result.code == 1 and "cannot resume" in result.err and "Traceback" not in result.err, result.err


@pytest.mark.parametrize("option, value", [
    ("--stack", "0"), ("--stack", "-1"), ("--beam-threshold", "2"), ("--beam-threshold", "nan"),
    ("--beam-threshold", "-0.1"), ("--ttable-limit", "0"), ("--distortion-limit", "-2"),
    ("--weights", "LM0= nan"), ("--weights", "LM0= inf"), ("--weights", "LM0= 1e999"), ("--weights", "x" * 5000),
    ("--weights", "/nonexistent/moses.ini"), ("--n-best-size", "\u0663"), ("--workers", "0"), ("--stack", "\u0663"),
    ("--stack", "1_0"), ("--seed", "nan"), ("--anneal", "nan"), ("--steps-per-sentence", "-1"),
])
def test_a_bad_option_is_a_usage_error_naming_it(fuzz, tmp_path, option, value):
    argv = ["translate", "-q", "--tokenized", "-f", fuzz["model"] / "moses.ini", "-i", fuzz["input"],
            "-o", tmp_path / "out.txt"]
    argv += [option, value, "1"] if option == "--anneal" else [option, value]
    result = run(argv)
    assert result.code in (1, 2) and "Traceback" not in result.err, result.err
    assert len(result.err.strip().splitlines()) == 1 and option in result.err, result.err
    assert not (tmp_path / "out.txt").exists()


STACKED_CASES = 60 * SCALE


@pytest.mark.parametrize("k", range(STACKED_CASES))
def test_several_mutations_at_once_are_an_error_naming_a_file_or_change_nothing(fuzz, tmp_path, k):
    """Two or three mutations drawn at random over the model's files: combinations nobody wrote down."""
    rng = random.Random(f"stacked/{k}")
    replaced: dict[str, bytes] = {}
    for _ in range(rng.randint(2, 3)):
        name = rng.choice(sorted(TEXT_MUTATIONS))
        mutation = rng.choice(TEXT_MUTATIONS[name])
        data = replaced.get(name, (fuzz["model"] / name).read_bytes())
        try:
            replaced[name] = mutate(rng, name, data, mutation)
        except (gzip.BadGzipFile, EOFError, UnicodeDecodeError, IndexError, ValueError):
            continue  # an earlier mutation left nothing this one can apply to (a broken gzip stream, no number)
    ini = model_copy(fuzz["model"], tmp_path / "model", replaced)
    outputs = {key: tmp_path / "out" / path.name for key, path in translate_outputs(tmp_path).items()}
    result = run(translate_args(ini, fuzz["input"], outputs))
    check(result, fuzz["translations"], read_outputs(outputs), [*replaced, "moses.ini"])


@pytest.fixture(scope="session")
def other_runs(fuzz, tmp_path_factory):
    """A Costmargin run of three passes and a SampleRank run of one epoch, each with its resumption's moses.ini."""
    folder = tmp_path_factory.mktemp("other-runs")
    runs = {}
    for name, extra, more in (("costmargin", ["--algorithm", "costmargin", "--passes", "2", "--sgd-passes", "2"],
                               ["--passes", "3"]),
                              ("samplerank", ["--algorithm", "samplerank", "--epochs", "1", "--samples-per-sentence",
                                              "5", "--burn-in-per-sentence", "5", "--no-dev-bleu"],
                               ["--epochs", "2"])):
        argv = ["tune", "-q", "-f", fuzz["model"] / "moses.ini", "--src", fuzz["input"], "--refs", fuzz["refs"]]
        assert run([*argv, *extra, "--out", folder / name]).code == 0
        shutil.copytree(folder / name, folder / f"{name}-resumed")
        resume = [*argv, *extra, *more, "--resume"]
        assert run([*resume, "--out", folder / f"{name}-resumed"]).code == 0
        runs[name] = (folder / name, resume, (folder / f"{name}-resumed" / "moses.ini").read_text())
    return runs


@pytest.mark.parametrize("algorithm, checkpoint", [("costmargin", "checkpoint.npz"), ("samplerank", "checkpoint.npz")])
@pytest.mark.parametrize("mutation", CHECKPOINT_MUTATIONS[:4])
def test_other_tuners_report_a_corrupt_checkpoint_in_one_line(other_runs, tmp_path, algorithm, checkpoint, mutation):
    folder, resume, resumed = other_runs[algorithm]
    rng = random.Random(f"{algorithm}/{mutation}")
    shutil.copytree(folder, tmp_path / "run")
    path = tmp_path / "run" / checkpoint
    data = path.read_bytes()
    path.write_bytes({"truncate": data[:rng.randrange(len(data))], "flip": flip_byte(rng, data), "empty": b"",
                      "garbage": bytes(rng.randrange(256) for _ in range(300))}[mutation])
    result = run([*resume, "--out", tmp_path / "run"])
    check(result, {"ini": resumed}, read_outputs({"ini": tmp_path / "run" / "moses.ini"}), [str(path)])


TRAIN_MUTATIONS = {"src": [bom, crlf, invalid_utf8, delete_line], "alignment": [bad_number, duplicate_line, bom]}


@pytest.fixture(scope="session")
def train_corpus(tmp_path_factory, bible):
    """60 training sentence pairs with their given alignment, and the model clean text trains from them."""
    folder = tmp_path_factory.mktemp("train-fuzz")
    for name, source in (("train.es", "train.tok.es"), ("train.en", "train.tok.en"), ("align", "train.align.gdfa")):
        lines = (SHARED / source).read_text().splitlines()[:60]
        (folder / name).write_text("\n".join(lines) + "\n")
    assert run(train_args(folder, folder / "clean")).code == 0
    return folder, {name: (folder / "clean" / name).read_bytes() for name in TRAINED}


TRAINED = ("phrase-table.gz", "reordering-table.gz", "lm.arpa.gz")


def train_args(folder, out, src=None, alignment=None):
    return ["train", "-q", "--src", src or folder / "train.es", "--tgt", folder / "train.en", "--alignment",
            alignment or folder / "align", "--tokenized", "--discount-fallback", "--out", out]


@pytest.mark.parametrize("side, mutation", [(side, m.__name__) for side, ms in TRAIN_MUTATIONS.items() for m in ms])
def test_a_mutated_training_corpus_is_an_error_naming_it_or_changes_nothing(train_corpus, tmp_path, side, mutation):
    folder, clean = train_corpus
    rng = random.Random(f"train/{side}/{mutation}")
    original = folder / ("train.es" if side == "src" else "align")
    mutated = tmp_path / original.name
    mutated.write_bytes(mutate(rng, original.name, original.read_bytes(), globals()[mutation]))
    result = run(train_args(folder, tmp_path / "model", **{side: mutated}))
    produced = {name: (tmp_path / "model" / name).read_bytes() for name in TRAINED
                if (tmp_path / "model" / name).exists()}
    check(result, clean, produced, [str(mutated)])


# --- option ranges: every numeric option of every verb, from both sides of its declared range -------------------

def _verbs(parser, prefix=()):
    """(verb words, parser) of every verb and sub-verb (``plot tuning``)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                if any(isinstance(a, argparse._SubParsersAction) for a in sub._actions):
                    yield from _verbs(sub, (*prefix, name))
                else:
                    yield (*prefix, name), sub


def _required(parser) -> list[str]:
    """Placeholder values for a parser's required arguments, so that parsing reaches the option tried."""
    argv = []
    for action in parser._actions:
        value = next(iter(action.choices)) if action.choices else "x"
        if not action.option_strings:
            argv += [value] * (action.nargs if isinstance(action.nargs, int) else 1)
        elif action.required:
            argv += [action.option_strings[0], value]
    for group in parser._mutually_exclusive_groups:
        if group.required:
            first = group._group_actions[0]
            argv += [first.option_strings[0]] + (["x"] if first.nargs != 0 else [])
    return argv


PARSER = build_parser()
NUMERIC = [(verb, sub, action) for verb, sub in _verbs(PARSER) for action in sub._actions
           if action.option_strings and getattr(action.type, "__name__", "") in ("int", "finite float",
                                                                                 "number or 'none'")]
NUMERIC_IDS = [f"{' '.join(verb)} {visible_flags(action)[-1]}" for verb, _, action in NUMERIC]


def test_every_numeric_option_of_every_verb_declares_its_range():
    undeclared = [name for name, (_, _, action) in zip(NUMERIC_IDS, NUMERIC) if action.range is None]
    assert not undeclared and len(NUMERIC) > 100, undeclared


def _text(value) -> str:
    """A number as a user types it (no exponent: argparse takes '-1e-05' for an option)."""
    return str(value) if isinstance(value, int) else np.format_float_positional(value, trim="-")


def _values(action, number: str) -> list[str]:
    count = action.nargs if isinstance(action.nargs, int) else 3 if action.dest == "discount_fallback" else 1
    return [action.option_strings[-1], *[number] * count]


def _outside(action) -> st.SearchStrategy:
    allowed, integer = action.range, action.type.__name__ == "int"
    sides = []
    if allowed.low is not None:
        below = allowed.low if allowed.open_low else allowed.low - (1 if integer else 0)
        sides.append(st.integers(max_value=int(below)) if integer else
                     st.floats(max_value=below, exclude_max=not allowed.open_low, allow_nan=False,
                               allow_infinity=False))
    if allowed.high is not None:
        above = allowed.high if allowed.open_high else allowed.high + (1 if integer else 0)
        sides.append(st.integers(min_value=int(above)) if integer else
                     st.floats(min_value=above, exclude_min=not allowed.open_high, allow_nan=False,
                               allow_infinity=False))
    return st.one_of(sides)


def _inside(action) -> st.SearchStrategy:
    allowed, integer = action.range, action.type.__name__ == "int"
    low = allowed.low if allowed.low is not None else -1e6
    high = allowed.high if allowed.high is not None else low + 1e6
    if integer:
        return st.integers(min_value=int(low) + allowed.open_low, max_value=int(high) - allowed.open_high)
    return st.floats(min_value=low, max_value=high, exclude_min=allowed.open_low, exclude_max=allowed.open_high)


def _refused(verb, sub, action, number: str) -> None:
    option = _values(action, number)
    result = run([*verb, *_required(sub), *option])
    assert result.code == 2 and "Traceback" not in result.err, (option, result.err)
    lines = result.err.strip().splitlines()
    assert len(lines) == 1 and option[0] in lines[0] and f"must be {action.range}" in lines[0], lines


@pytest.mark.parametrize("verb, sub, action", NUMERIC, ids=NUMERIC_IDS)
def test_the_nearest_value_outside_each_range_is_a_usage_error_naming_the_option(verb, sub, action):
    allowed, integer = action.range, action.type.__name__ == "int"
    if allowed.low is not None:
        nearest = allowed.low if allowed.open_low else (allowed.low - 1 if integer else np.nextafter(allowed.low, -1))
    else:
        nearest = allowed.high if allowed.open_high else allowed.high + 1
    _refused(verb, sub, action, _text(int(nearest) if integer else float(nearest)))


@EXAMPLES
@given(data=st.data())
def test_random_values_outside_a_range_are_refused_and_inside_it_parsed(data):
    verb, sub, action = data.draw(st.sampled_from(NUMERIC))
    _refused(verb, sub, action, _text(data.draw(_outside(action))))
    value = data.draw(_inside(action))
    args = PARSER.parse_args([*verb, *_required(sub), *_values(action, _text(value))])
    parsed = getattr(args, action.dest)
    assert (parsed[0] if isinstance(parsed, (list, tuple)) else parsed) == value


# --- output names: one file named twice in a run, by any spelling, is refused before anything is written ----------

NAMES = ["a.txt", "b.txt", "c.txt", "sub/../a.txt", "./b.txt", "link-to-a", "hard-link-to-b",
         "n" * 200 + ".txt", "é" * 100 + ".txt"]  # the last two: long names (200 and 204 bytes) the file system takes
FILE_OF = {"sub/../a.txt": "a.txt", "./b.txt": "b.txt", "link-to-a": "a.txt", "hard-link-to-b": "b.txt"}


@pytest.mark.parametrize("k", range(8 * SCALE))
def test_random_output_names_collide_into_a_usage_error_or_translate_as_the_clean_run(fuzz, tmp_path, k):
    rng = random.Random(f"names/{k}")
    folder = tmp_path / "out"
    (folder / "sub").mkdir(parents=True)
    (folder / "a.txt").write_text("old a\n")
    (folder / "b.txt").write_text("old b\n")
    (folder / "link-to-a").symlink_to("a.txt")
    os.link(folder / "b.txt", folder / "hard-link-to-b")
    before = {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}
    names = [rng.choice(NAMES) for _ in range(3)]
    outputs = {key: folder / name for key, name in zip(("text", "nbest", "alignment"), names)}
    result = run(translate_args(fuzz["model"] / "moses.ini", fuzz["input"], outputs))
    files = [FILE_OF.get(name, name) for name in names]
    assert "Traceback" not in result.err, result.err
    if len(set(files)) < len(files):
        lines = result.err.strip().splitlines()
        assert result.code == 2 and len(lines) == 1 and "named twice as an output" in lines[0], result.err
        assert {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()} == before
        return
    assert result.code == 0, result.err
    assert read_outputs(outputs) == fuzz["translations"]
    assert not [p.name for p in folder.iterdir() if p.name.startswith(".")]


def test_two_runs_sharing_one_output_are_refused_while_the_first_writes(fuzz, tmp_path):
    """The second run's other outputs differ: every output is locked, not only the first."""
    from pbmt.base.files import Outputs
    with Outputs() as first:
        first.claim([tmp_path / "one.txt", tmp_path / "shared-nbest.txt"])
        first.open(tmp_path / "shared-nbest.txt").write("the first run's n-best\n")
        outputs = {"text": tmp_path / "two.txt", "nbest": tmp_path / "shared-nbest.txt",
                   "alignment": tmp_path / "align.txt"}
        result = run(translate_args(fuzz["model"] / "moses.ini", fuzz["input"], outputs))
        assert result.code == 1 and "shared-nbest.txt: another pbmt run is writing it now" in result.err
        assert len(result.err.strip().splitlines()) == 1
    assert (tmp_path / "shared-nbest.txt").read_text() == "the first run's n-best\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["shared-nbest.txt"]


def test_a_second_tuner_into_a_run_folder_in_use_stops_at_once(fuzz, tmp_path):
    holder = subprocess.Popen([sys.executable, "-c", "import sys, time; from pbmt.base.files import lock_folder; "
                               "lock_folder(sys.argv[1]); print('locked', flush=True); time.sleep(120)",
                               str(tmp_path / "run")], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        for algorithm in ("mert", "pro"):
            argv = tune_args(fuzz, tmp_path / "run", "2", "--algorithm", algorithm)
            if algorithm == "pro":  # without MERT's options, which PRO refuses
                argv = argv[:12] + argv[16:]
            result = run(argv)
            assert result.code == 1 and "run: another pbmt run is writing it now" in result.err, result.err
    finally:
        holder.kill()
        holder.wait()
    assert sorted(p.name for p in (tmp_path / "run").iterdir()) == [".pbmt-lock"]  # the holder was killed


@pytest.mark.parametrize("closed, argv", [
    ("<&-", ["translate", "-q", "--tokenized", "-f", "MODEL", "-o", "OUT"]),
    (">&-", ["eval", "REFS", "-i", "REFS"]),
    ("<&-", ["eval", "REFS"]),
    (">&-", ["translate", "-q", "--tokenized", "-f", "MODEL", "-i", "INPUT"]),
])
def test_a_closed_standard_stream_is_one_line_and_exit_1(fuzz, tmp_path, closed, argv):
    values = {"MODEL": fuzz["model"] / "moses.ini", "OUT": tmp_path / "out.txt", "REFS": fuzz["refs"],
              "INPUT": fuzz["input"]}
    command = " ".join(f"'{values.get(a, a)}'" for a in argv)
    result = subprocess.run(["bash", "-c", f"'{sys.executable}' -m pbmt {command} {closed}"], capture_output=True,
                            text=True)
    name = "input" if closed == "<&-" else "output"
    assert result.returncode == 1 and result.stderr.strip().endswith(f"standard {name} is closed"), result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and not (tmp_path / "out.txt").exists()


# --- damaged binary caches: detected, rebuilt with a one-line note, never a traceback or another translation -----

CACHE_DAMAGE = ["empty", "truncate", "flip", "garbage", "append", "delete", "meta_drop_array", "meta_not_json",
                "meta_size"]


def cached_model(fuzz, folder):
    """A copy of the fuzz model in ``folder`` (its own files, so its own caches) whose caches a first translation
    built; its cache folders: the LM's, the two tables', and the LM's full-table estimate beside the phrase
    table's."""
    for name in ("moses.ini", "pbmt.toml", "phrase-table.gz", "reordering-table.gz", "lm.arpa"):
        shutil.copy2(fuzz["model"] / name, folder / name)
    outputs = translate_outputs(folder / "first")
    assert run(translate_args(folder / "moses.ini", fuzz["input"], outputs)).code == 0
    caches = sorted(folder.glob("*.pbmt-cache/*"))
    assert len(caches) == 4
    return caches


def damage(rng: random.Random, path, kind: str) -> None:
    data = path.read_bytes()
    if kind == "empty":
        path.write_bytes(b"")
    elif kind == "truncate":
        path.write_bytes(data[:rng.randrange(len(data))])
    elif kind == "flip":
        path.write_bytes(flip_byte(rng, data))
    elif kind == "garbage":
        at, size = rng.randrange(len(data)), rng.randint(1, 64)
        path.write_bytes(data[:at] + bytes(rng.randrange(256) for _ in range(size)) + data[at + size:])
    elif kind == "append":
        path.write_bytes(data + bytes(rng.randrange(256) for _ in range(rng.randint(1, 64))))
    elif kind == "delete":
        path.unlink()
    else:
        import json
        try:
            meta = json.loads(data)
        except ValueError:
            return  # damaged already
        if kind == "meta_drop_array":
            del meta["files"][rng.choice(sorted(meta["files"]))]
        elif kind == "meta_size":
            meta["files"][rng.choice(sorted(meta["files"]))]["bytes"] += rng.choice([-1, 1, 1000])
        path.write_text(json.dumps(meta)[:-rng.randint(1, 5)] if kind == "meta_not_json" else json.dumps(meta))


@pytest.mark.parametrize("k", range(10 * SCALE))
def test_a_damaged_cache_is_rebuilt_with_a_note_and_translates_as_the_clean_model(fuzz, tmp_path, k):
    rng = random.Random(f"cache/{k}")
    folder = tmp_path / "model"
    folder.mkdir()
    caches = cached_model(fuzz, folder)
    damaged = set()
    for _ in range(rng.randint(1, 3)):
        cache = rng.choice(caches)
        kind = rng.choice(CACHE_DAMAGE)
        files = sorted(cache.glob("*.npy")) if not kind.startswith("meta") else [cache / "meta.json"]
        if files:
            damage(rng, rng.choice(files), kind)
            damaged.add(cache)
    outputs = translate_outputs(tmp_path / "out")
    result = run(translate_args(folder / "moses.ini", fuzz["input"], outputs))
    assert "Traceback" not in result.err and result.code == 0, result.err
    assert read_outputs(outputs) == fuzz["translations"]
    notes = result.err.strip().splitlines()
    assert len(notes) == len(damaged) and all(note.startswith("pbmt: note: the cache ") and " is damaged (" in note
                                              for note in notes), notes
    assert {cache for cache in damaged if any(str(cache) in note for note in notes)} == damaged
    again = run(translate_args(folder / "moses.ini", fuzz["input"], outputs))  # the rebuilt caches load quietly
    assert again.code == 0 and again.err == "" and read_outputs(outputs) == fuzz["translations"]


# --- weights: unknown names and magnitudes whose scores overflow ---------------------------------------------------

FEATURES = ["UnknownWordPenalty0", "WordPenalty0", "PhrasePenalty0", "LM0", "Distortion0"]


@settings(EXAMPLES, max_examples=8 * SCALE)
@given(weights=st.lists(st.tuples(st.sampled_from([*FEATURES, "Nope0", "lm0"]),
                                  st.floats(allow_nan=False, allow_infinity=False)), min_size=1, max_size=3,
                        unique_by=lambda pair: pair[0]))
def test_random_weights_translate_to_finite_scores_or_are_a_usage_error_naming_weights(fuzz, tmp_path_factory,
                                                                                      weights):
    from pbmt.base.config import MAX_WEIGHT
    folder = tmp_path_factory.mktemp("weights")
    outputs = translate_outputs(folder)
    text = " ".join(f"{name}= {np.format_float_positional(value, trim='-')}" for name, value in weights)
    result = run([*translate_args(fuzz["model"] / "moses.ini", fuzz["input"], outputs), "--weights", text])
    assert "Traceback" not in result.err and "Warning" not in result.err, result.err
    unknown = [name for name, _ in weights if name not in FEATURES]
    if unknown or any(abs(value) > MAX_WEIGHT for _, value in weights):
        lines = result.err.strip().splitlines()
        assert result.code == 2 and len(lines) == 1 and "--weights" in lines[0], result.err
        if "no feature named" in lines[0]:
            assert any(name in lines[0] for name in unknown) and all(name in lines[0] for name in FEATURES)
        else:
            assert "weights must be finite numbers from -1,000,000 to 1,000,000" in lines[0]
        assert not any(path.exists() for path in outputs.values())
        return
    assert result.code == 0 and result.err == "", result.err
    totals = [float(line.split(" ||| ")[3]) for line in outputs["nbest"].read_text().splitlines()]
    assert totals and all(np.isfinite(totals))


# --- what train and filter write always loads: bad input is refused at the start, naming the user's file ----------

SEPARATOR_TOKENS = ["|||", "a|||b", "|||x", "||||"]
SPACES_IN_TOKENS = ["\u00a0", "\u2009", "\u3000", "\u202f", "\x1c"]


def _loads(model_folder, line: str) -> bool:
    source = model_folder.parent / "probe.txt"
    source.write_text(line + "\n")
    result = run(["translate", "-q", "--tokenized", "-f", model_folder / "moses.ini", "-i", source])
    return result.code == 0


@pytest.mark.parametrize("k", range(4 * SCALE))
def test_a_corpus_token_holding_the_field_separator_is_refused_naming_file_and_line(train_corpus, tmp_path, k):
    folder, _ = train_corpus
    rng = random.Random(f"separator/{k}")
    side = rng.choice(["train.es", "train.en"])
    lines = (folder / side).read_text().splitlines()
    number = rng.randrange(len(lines))
    words = lines[number].split(" ")
    words.insert(rng.randrange(len(words) + 1), rng.choice(SEPARATOR_TOKENS))
    lines[number] = " ".join(words)
    mutated = tmp_path / side
    mutated.write_text("\n".join(lines) + "\n")
    argv = train_args(folder, tmp_path / "model", **({"src": mutated} if side == "train.es" else {}))
    if side == "train.en":
        argv[argv.index("--tgt") + 1] = mutated
    result = run(argv)
    err = result.err.strip().splitlines()
    assert result.code == 1 and len(err) == 1 and f"{mutated}:{number + 1}: a token holds '|||'" in err[0], result.err
    assert not (tmp_path / "model" / "moses.ini").exists()


@pytest.mark.parametrize("k", range(2 * SCALE))
def test_white_space_inside_tokens_trains_with_eflomal_a_model_that_loads(train_corpus, tmp_path, k):
    folder, _ = train_corpus
    rng = random.Random(f"space-in-token/{k}")
    lines = (folder / "train.es").read_text().splitlines()[:30]
    for _ in range(3):
        number = rng.randrange(len(lines))
        words = lines[number].split(" ")
        i = rng.randrange(len(words))
        cut = rng.randrange(len(words[i]) + 1)
        words[i] = words[i][:cut] + rng.choice(SPACES_IN_TOKENS) + words[i][cut:]
        lines[number] = " ".join(words)
    (tmp_path / "s.es").write_text("\n".join(lines) + "\n")
    (tmp_path / "s.en").write_text("\n".join((folder / "train.en").read_text().splitlines()[:30]) + "\n")
    result = run(["train", "-q", "--src", tmp_path / "s.es", "--tgt", tmp_path / "s.en", "--discount-fallback",
                  "--out", tmp_path / "model"])
    assert result.code == 0 and "Traceback" not in result.err, result.err
    assert _loads(tmp_path / "model", lines[number])


@pytest.mark.parametrize("k", range(3 * SCALE))
def test_a_truncated_lm_is_refused_by_train_naming_it(train_corpus, tmp_path, k):
    folder, _ = train_corpus
    rng = random.Random(f"truncated-lm/{k}")
    text = (SHARED / "lm3.arpa.gz").read_bytes()
    lines = gzip.decompress(text).decode().splitlines(keepends=True)
    lm = tmp_path / "lm.arpa"
    lm.write_text("".join(lines[:rng.randrange(2, len(lines) - 1)]))
    result = run([*train_args(folder, tmp_path / "model"), "--lm", lm])
    err = result.err.strip().splitlines()
    assert result.code == 1 and len(err) == 1 and str(lm) in err[0], result.err
    assert not (tmp_path / "model" / "moses.ini").exists()


@EXAMPLES
@given(words=st.lists(st.text(st.characters(blacklist_categories=["Cs", "Zs", "Cc", "Zl", "Zp"]), min_size=1,
                              max_size=8), min_size=1, max_size=6))
def test_filter_writes_a_model_that_loads_or_refuses_an_input_naming_it(fuzz, tmp_path_factory, words):
    folder = tmp_path_factory.mktemp("filter")
    source = folder / "in.txt"
    source.write_text(" ".join(words) + "\n", encoding="utf-8")
    result = run(["filter", "-q", "--tokenized", "-f", fuzz["model"] / "moses.ini", "-i", source, "--out",
                  folder / "filtered"])
    assert "Traceback" not in result.err, result.err
    if result.code == 0:
        assert _loads(folder / "filtered", " ".join(words))
    else:
        err = result.err.strip().splitlines()
        assert result.code == 1 and len(err) == 1 and f"{source}: no phrase of it is in" in err[0], result.err
        assert not [p for p in (folder / "filtered").iterdir()]


# --- plots of a log with a value that is no finite number: one line naming the file and the row ----------------------

NOT_FINITE = ["nan", "NaN", "inf", "-inf", "1e999", "-1e999", "Infinity", "\u0663"]


@pytest.mark.parametrize("k", range(6 * SCALE))
def test_a_log_value_that_is_no_finite_number_is_one_line_naming_file_and_row(tuned_run, tmp_path, k):
    rng = random.Random(f"plot/{k}")
    folder, _ = tuned_run
    lines = (folder / "log.tsv").read_text().splitlines()
    row = rng.randrange(1, len(lines))
    fields, header = lines[row].split("\t"), lines[0].split("\t")
    if rng.random() < 0.3:  # a weight inside the weight vector
        column = header.index("decoded_weights")
        spots = list(NUMBER.finditer(fields[column]))
        spot = rng.choice(spots)
        fields[column] = fields[column][:spot.start()] + rng.choice(NOT_FINITE) + fields[column][spot.end():]
    else:  # a column the plots read
        column = header.index(rng.choice(["iteration", "dev_bleu", "new_weights_pool_bleu"]))
        fields[column] = rng.choice(NOT_FINITE)
    lines[row] = "\t".join(fields)
    log = tmp_path / "log.tsv"
    log.write_text("\n".join(lines) + "\n")
    kind = rng.choice(["tuning", "weights"])
    result = run(["plot", kind, log, "-o", tmp_path / "figure.png"])
    err = result.err.strip().splitlines()
    assert "Traceback" not in result.err and result.code == 1 and len(err) == 1, result.err
    assert f"{log}:{row + 1}:" in err[0], err
    assert not (tmp_path / "figure.png").exists()


# --- a very long input line: refused by --max-words before anything is translated --------------------------------

@EXAMPLES
@given(limit=st.integers(1, 30), lengths=st.lists(st.integers(1, 40), min_size=1, max_size=4))
def test_a_line_longer_than_max_words_is_refused_naming_it_before_anything_is_written(fuzz, tmp_path_factory, limit,
                                                                                       lengths):
    folder = tmp_path_factory.mktemp("long")
    words = fuzz["input"].read_text().split()
    source = folder / "in.txt"
    source.write_text("".join(" ".join(words[i % len(words)] for i in range(n)) + "\n" for n in lengths))
    outputs = translate_outputs(folder / "out")
    result = run([*translate_args(fuzz["model"] / "moses.ini", source, outputs), "--max-words", limit])
    too_long = [k for k, n in enumerate(lengths, 1) if n > limit]
    if not too_long:
        assert result.code == 0, result.err
        return
    err = result.err.strip().splitlines()
    assert result.code == 1 and len(err) == 1, result.err
    assert f"{source}:{too_long[0]}: {lengths[too_long[0] - 1]} words, more than --max-words {limit}" in err[0]
    assert not (folder / "out").exists()


# --- README.md's "Errors, outputs and interrupted runs" states what the generators above check ----------------------

README = (REPO / "README.md").read_text(encoding="utf-8")
SECTION = README[README.index("## Errors, outputs and interrupted runs"):README.index("## Tests")]


def test_the_readme_lists_every_option_range_as_the_parsers_declare_it():
    from pbmt.commands.options import RANGE_OF_VERB
    declared: dict[str, set[str]] = {}
    for verb, _, action in NUMERIC:
        if (verb[0], action.dest) not in RANGE_OF_VERB:
            declared.setdefault(str(action.range), set()).add(visible_flags(action)[-1])
    listed = {}
    for bullet in re.findall(r"^  - (?!in one verb)([^:\n]+): (`.*?`);$", SECTION, re.M | re.S):
        listed[bullet[0]] = set(re.findall(r"`([^`]+)`", bullet[1]))
    assert listed == declared, "README.md's list of option ranges differs from pbmt/commands/options.py's RANGES"
    for (verb, dest), allowed in RANGE_OF_VERB.items():
        flag = next(visible_flags(a)[-1] for v, _, a in NUMERIC if v[0] == verb and a.dest == dest)
        assert f"`{verb} {flag}` {allowed}" in " ".join(SECTION.split())


def test_the_readme_states_the_weight_range_the_line_bound_and_the_servers_limits():
    from pbmt.base.config import MAX_WEIGHT
    from pbmt.commands.server import ServerSettings
    text = " ".join(SECTION.split())
    assert f"finite numbers from -{MAX_WEIGHT:,.0f} to {MAX_WEIGHT:,.0f}" in text
    translate = PARSER.parse_args(["translate"])
    assert f"`--max-words` words (default {translate.max_words})" in text
    serve = PARSER.parse_args(["serve"])
    assert f"more than {ServerSettings.max_body_bytes:,} bytes gets 413 however it comes (chunked too)" in text
    assert f"`--max-sentences` ({serve.max_sentences}) sentences" in text
    assert f"`--max-words` ({serve.max_words}) tokens" in text
    assert f"`--max-queue` ({serve.max_queue}) sentences waiting gets 503" in text
    assert serve.max_queue >= serve.max_sentences and ServerSettings.max_queue == serve.max_queue
    assert "(`pbmt: note: the cache ... is damaged`)" in text
    assert "`standard input is closed` or `standard output is closed`, and exit code 1" in text


# --- odd Unicode through translate: one translation a line, NFD as NFC, or an error naming the file's line --------

ODD = ["\u0301", "\u0303", "\u0308", "\u202e", "\u202c", "\u200f", "\u2066", "\u2069", "\u200b", "\u200c", "\u200d",
       "\ufeff", "\u00a0", "\u2028", "\ud800", "\udfff"]


@settings(EXAMPLES, max_examples=8 * SCALE)
@given(data=st.data())
def test_random_unicode_translates_one_line_each_nfd_as_nfc_or_is_an_error_naming_the_line(fuzz, tmp_path_factory,
                                                                                          data):
    import unicodedata
    folder = tmp_path_factory.mktemp("unicode")
    lines = fuzz["input"].read_text().splitlines()
    chosen = data.draw(st.lists(st.sampled_from(lines), min_size=1, max_size=3))
    odd = []
    for line in chosen:
        pieces = list(line)
        for _ in range(data.draw(st.integers(0, 3))):
            pieces.insert(data.draw(st.integers(0, len(pieces))), data.draw(st.sampled_from(ODD)))
        odd.append("".join(pieces))
    source = folder / "in.txt"
    source.write_bytes("".join(line + "\n" for line in odd).encode("utf-8", "surrogatepass"))
    result = run(["translate", "-q", "--tokenized", "-f", fuzz["model"] / "moses.ini", "-i", source, "-o",
                  folder / "out.txt"])
    assert "Traceback" not in result.err, result.err
    broken = [k for k, line in enumerate(odd, 1) if any("\ud800" <= c <= "\udfff" for c in line)]
    if broken:  # a lone surrogate is no character: the file is not valid UTF-8 there
        err = result.err.strip().splitlines()
        assert result.code == 1 and len(err) == 1 and f"{source}:{broken[0]}: not valid UTF-8" in err[0], result.err
        assert not (folder / "out.txt").exists()
        return
    assert result.code == 0, result.err
    assert len((folder / "out.txt").read_text(encoding="utf-8").split("\n")) == len(odd) + 1
    nfc = folder / "nfc.txt"
    nfc.write_text(unicodedata.normalize("NFC", source.read_text(encoding="utf-8")), encoding="utf-8")
    assert run(["translate", "-q", "--tokenized", "-f", fuzz["model"] / "moses.ini", "-i", nfc, "-o",
                folder / "nfc.out"]).code == 0
    assert (folder / "nfc.out").read_bytes() == (folder / "out.txt").read_bytes()
