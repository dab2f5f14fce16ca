"""Fuzz suite: seeded mutations of real model files, n-best lists, corpora and checkpoints, run through the verbs.

Every case must end in exit 1 or 2 with one line naming the mutated file (or option), or in exit 0 with output
equal to the clean input's: never a traceback, never exit 0 with a different output (``reliability.check``).
The mutations are those a reader can detect (a number that is no number, a missing field, a broken gzip
stream, a second section) or that must not change anything (a BOM, CRLF line ends, a tab between words); a
valid-looking change of a value (0.3 for 0.2) is undetectable by anyone and is not generated.
"""

from __future__ import annotations

import gzip
import random
import re
import shutil

import pytest

from reliability import (SHARED, check, fuzz, model_copy, optimize_args, read_outputs, run,  # noqa: F401 - a fixture
                         translate_args, translate_outputs)

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
               for k in range(CASES_PER_MUTATION[name])]


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
@pytest.mark.parametrize("k", range(3))
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
@pytest.mark.parametrize("k", range(4))
def test_a_mutated_nbest_list_is_an_error_naming_it_or_changes_nothing(fuzz, tmp_path, mutation, k):
    rng = random.Random(f"nbest/{mutation}/{k}")
    nbest = tmp_path / "nbest.txt"
    nbest.write_bytes(mutate(rng, "nbest.txt", fuzz["nbest"].read_bytes(), globals()[mutation]))
    result = run(optimize_args(nbest, fuzz["refs"], fuzz["model"] / "moses.ini", tmp_path / "tuned.ini"))
    check(result, {"tuned": fuzz["tuned"]}, read_outputs({"tuned": tmp_path / "tuned.ini"}), [str(nbest)])


CORPUS_MUTATIONS = [bom, crlf, invalid_utf8, delete_line, duplicate_line]


@pytest.mark.parametrize("side", ["hypothesis", "references"])
@pytest.mark.parametrize("mutation", [m.__name__ for m in CORPUS_MUTATIONS])
@pytest.mark.parametrize("k", range(2))
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


STACKED_CASES = 60


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
            alignment or folder / "align", "--discount-fallback", "--out", out]


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
