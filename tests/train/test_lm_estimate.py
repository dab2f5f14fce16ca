"""Kneser-Ney estimation against lmplz's own ARPA files and a brute-force reference."""

from __future__ import annotations

import gzip
import itertools
import math
import os
import subprocess
import sys
from collections import Counter, defaultdict

import kenlm
import numpy as np
import pytest

from pbmt.commands import cli
from pbmt.base.errors import FormatError, PbmtError
import pbmt.train.lm_estimate
from pbmt.train.arpa import write_arpa
from pbmt.train.lm_estimate import DEFAULT_FALLBACK, estimate_kn, parse_memory, write_lm
from repo_data import data_lines

# log10. The goal is 1e-4; lmplz computes in float32 and prints 8 digits, and
# we agree to 5e-7, so a tighter bound also catches subtle slips (V vs V - 1).
TOLERANCE = 2e-6

TINY = ["the cat sat", "the dog sat", "a cat ran", "the cat ran", "a dog sat down"]


def read_arpa(path) -> dict[int, dict[str, tuple[float, float | None]]]:
    """{order: {"w1 w2": (log10 prob, log10 backoff or None)}} of an ARPA file."""
    opener = gzip.open if str(path).endswith(".gz") else open
    orders: dict[int, dict[str, tuple[float, float | None]]] = {}
    counts = {}
    section = None
    with opener(path, "rt", encoding="utf-8") as handle:
        for line in handle:
            line = line.rstrip("\n")
            if line.startswith("ngram "):
                k, n = line[6:].split("=")
                counts[int(k)] = int(n)
            elif line.startswith("\\") and line.endswith("-grams:"):
                section = orders.setdefault(int(line[1:].split("-")[0]), {})
            elif line and section is not None and line != "\\end\\":
                fields = line.split("\t")
                section[fields[1]] = (float(fields[0]), float(fields[2]) if len(fields) == 3 else None)
    assert {k: len(v) for k, v in orders.items()} == counts
    return orders


def model_entries(model) -> dict[int, dict[str, tuple[float, float | None]]]:
    """The model in ``read_arpa``'s form."""
    out = {}
    for k, ids in enumerate(model.ngrams, 1):
        backoff = model.log10_backoff[k - 1] if k < model.order else [None] * len(ids)
        out[k] = {
            " ".join(model.words[i] for i in row): (float(p), None if b is None else float(b))
            for row, p, b in zip(ids.tolist(), model.log10_prob[k - 1], backoff)
        }
    return out


def assert_same_model(got, expected, tolerance=TOLERANCE):
    """Same n-grams in every order; probabilities and backoffs within ``tolerance``."""
    assert got.keys() == expected.keys()
    for k in expected:
        assert got[k].keys() == expected[k].keys(), f"{k}-grams differ"
        grams = list(expected[k])
        for column in (0, 1):
            if expected[k][grams[0]][column] is None:
                assert all(got[k][g][column] is None for g in grams)
                continue
            ours = np.array([got[k][g][column] for g in grams])
            theirs = np.array([expected[k][g][column] for g in grams])
            worst = int(np.argmax(np.abs(ours - theirs)))
            assert abs(ours[worst] - theirs[worst]) <= tolerance, (
                f"{k}-gram {grams[worst]!r} {'backoff' if column else 'prob'}: {ours[worst]} != {theirs[worst]}"
            )


def brute_force_kn(sentences, order, fallback=None):
    """Interpolated modified Kneser-Ney from the textbook formulas, in ``read_arpa``'s form."""
    padded = [["<s>", *s, "</s>"] for s in sentences]
    raw = Counter(
        tuple(s[i : i + k]) for s in padded for k in range(1, order + 1) for i in range(len(s) - k + 1)
    )
    left_words = defaultdict(set)
    for gram in raw:
        if len(gram) > 1:
            left_words[gram[1:]].add(gram[0])
    adjusted = {("<unk>",): 0}
    for gram, count in raw.items():
        if gram == ("<s>",):
            adjusted[gram] = 0
        elif len(gram) == order or gram[0] == "<s>":
            adjusted[gram] = count
        else:
            adjusted[gram] = len(left_words[gram])

    discounts = {}
    for k in range(1, order + 1):
        t = [sum(1 for g, a in adjusted.items() if len(g) == k and a == j) for j in range(1, 5)]
        try:
            y = t[0] / (t[0] + 2 * t[1])
            d = [j - (j + 1) * y * t[j] / t[j - 1] for j in (1, 2, 3)]
            ok = all(0 <= d[j - 1] <= j for j in (1, 2, 3))
        except ZeroDivisionError:
            ok = False
        if not ok:
            assert fallback is not None
            d = list(fallback)
        discounts[k] = d

    children = defaultdict(list)
    for gram in adjusted:
        children[gram[:-1]].append(gram)

    def discount(k, a):
        return 0.0 if a == 0 else discounts[k][min(a, 3) - 1]

    def gamma(context):
        kids = children[context]
        total = sum(adjusted[g] for g in kids)
        return sum(discount(len(context) + 1, adjusted[g]) for g in kids) / total

    vocabulary_size = sum(1 for g in adjusted if len(g) == 1)

    def prob(gram):
        context = gram[:-1]
        total = sum(adjusted[g] for g in children[context])
        a = adjusted[gram]
        lower = 1 / (vocabulary_size - 1) if len(gram) == 1 else prob(gram[1:])
        return (a - discount(len(gram), a)) / total + gamma(context) * lower

    out = defaultdict(dict)
    for gram in adjusted:
        k = len(gram)
        p = 0.0 if gram == ("<s>",) else math.log10(prob(gram))
        b = None if k == order else (math.log10(gamma(gram)) if children[gram] else 0.0)
        out[k][" ".join(gram)] = (p, b)
    return dict(out)


@pytest.fixture(scope="module")
def lm3(bible):
    # 16 MB of buffers: the Bible's counts in about a dozen runs, merged
    return estimate_kn(bible / "train.tok.en", 3, memory=parse_memory("16M"))


def test_order3_equals_lmplz(lm3, bible):
    assert_same_model(model_entries(lm3), read_arpa(bible / "lm3.arpa.gz"))


def test_write_arpa_reads_back_and_scores_like_lmplz_in_kenlm(lm3, bible, tmp_path):
    path = tmp_path / "lm3.arpa.gz"
    write_arpa(lm3, path)
    assert path.read_bytes()[:2] == b"\x1f\x8b"
    assert [p.name for p in tmp_path.iterdir()] == ["lm3.arpa.gz"]
    assert_same_model(read_arpa(path), model_entries(lm3), tolerance=1e-6)

    ours, theirs = kenlm.Model(str(path)), kenlm.Model(str(bible / "lm3.arpa.gz"))
    with open(bible / "dev.tok.en", encoding="utf-8") as dev:
        for line in itertools.islice(dev, 200):
            assert ours.score(line.strip()) == pytest.approx(theirs.score(line.strip()), abs=1e-3)


@pytest.mark.parametrize("order", [1, 2, 3, 4, 5])
def test_bible_subset_equals_brute_force(order):
    sentences = [line.split() for line in data_lines("dev.tok.en")[:100]]
    assert_same_model(model_entries(estimate_kn(sentences, order)), brute_force_kn(sentences, order), 1e-9)


def test_tiny_corpus_refused_without_fallback(tmp_path):
    with pytest.raises(PbmtError, match="discount.*--discount-fallback"):
        estimate_kn([s.split() for s in TINY], 3)
    (tmp_path / "tiny.txt").write_text("\n".join(TINY) + "\n")
    for work in (None, tmp_path / "scratch" / "w"):  # the refused run leaves no folder it made
        with pytest.raises(PbmtError, match="discount.*--discount-fallback"):
            write_lm(tmp_path / "tiny.txt", 3, tmp_path / "out" / "lm.arpa", work=work)
        assert sorted(p.name for p in tmp_path.iterdir()) == ["tiny.txt"]


@pytest.mark.parametrize("fallback", [DEFAULT_FALLBACK, (0.7, 1.2, 2.5)])
def test_tiny_corpus_with_fallback_equals_brute_force(fallback):
    sentences = [s.split() for s in TINY]
    with pytest.warns(UserWarning, match="using the fallback discounts"):
        model = estimate_kn(sentences, 3, discount_fallback=fallback)
    assert_same_model(model_entries(model), brute_force_kn(sentences, 3, fallback), 1e-9)
    assert np.allclose(model.discounts[2], fallback)


def test_file_and_token_lists_give_the_same_model(tmp_path):
    lines = [line + "\n" for line in data_lines("dev.tok.en")[:300]]
    path = tmp_path / "text.gz"
    with gzip.open(path, "wt", encoding="utf-8") as out:
        out.writelines(lines)
    from_file, from_lists = estimate_kn(path, 4), estimate_kn((line.split() for line in lines), 4)
    assert from_file.words == from_lists.words
    for k in range(4):
        assert np.array_equal(from_file.ngrams[k], from_lists.ngrams[k])
        assert np.array_equal(from_file.log10_prob[k], from_lists.log10_prob[k])


@pytest.mark.parametrize("word", ["<s>", "</s>", "<unk>"])
def test_special_words_in_the_text_name_the_line(tmp_path, word):
    path = tmp_path / "text.txt"
    path.write_text(f"a b\nc {word} d\n", encoding="utf-8")
    with pytest.raises(FormatError, match=f"text.txt:2: .*{word}"):
        estimate_kn(path, 2)
    with pytest.raises(FormatError, match=f"<sentences>:2: .*{word}"):
        estimate_kn([["a"], ["c", word]], 2)


def test_bad_arguments(tmp_path):
    with pytest.raises(PbmtError, match="order"):
        estimate_kn([["a"]], 0)
    with pytest.raises(PbmtError, match="three discounts"):
        estimate_kn([["a"]], 2, discount_fallback=(0.5, 1.0))
    with pytest.raises(PbmtError, match="adjusted count 2 must be in"):
        estimate_kn([["a"]], 2, discount_fallback=(0.5, 2.5, 1.5))
    with pytest.raises(PbmtError, match="no sentences"):
        estimate_kn([], 2)
    with pytest.raises(FormatError, match="white space"):
        estimate_kn([["a b"]], 2)
    with pytest.raises(PbmtError, match="no such file"):
        estimate_kn(tmp_path / "missing.txt", 2)


def test_command_line(tmp_path, capsys):
    text, arpa = tmp_path / "text.txt", tmp_path / "lm.arpa"
    text.write_text("\n".join(TINY) + "\n", encoding="utf-8")
    assert cli.main(["lm", str(text), str(arpa), "--order", "3"]) == 1
    assert "--discount-fallback" in capsys.readouterr().err
    assert not arpa.exists()

    assert cli.main(["lm", str(text), str(arpa), "-n", "3", "--discount-fallback", "0.6", "1", "1.4"]) == 0
    err = capsys.readouterr().err
    assert "warning" in err and "3-grams" in err
    expected = brute_force_kn([s.split() for s in TINY], 3, (0.6, 1.0, 1.4))
    assert_same_model(read_arpa(arpa), expected, tolerance=1e-6)

    with pytest.raises(SystemExit) as exit_:
        cli.main(["lm", str(text), str(arpa), "--discount-fallback", "0.5", "1"])
    assert exit_.value.code == 2
    # standing before the files, the option read them as discounts: the error says so, and nan is no discount
    for argv, expected in ((["--discount-fallback", str(text), str(arpa)], "is not a discount: the option reads "
                            "the words after it, so give it after the files"),
                           ([str(text), str(arpa), "--discount-fallback", "nan", "1", "2"], "not a finite number")):
        with pytest.raises(SystemExit) as exit_:
            cli.main(["lm", *argv])
        assert exit_.value.code == 2 and expected in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_:
        cli.main(["lm", str(text), str(arpa), "--memory", "5X"])
    assert exit_.value.code == 2 and "memory size '5X'" in capsys.readouterr().err

    # the output may not be the text, by any name: that would replace the text with its LM
    (tmp_path / "link.txt").symlink_to(text)
    before = text.read_bytes()
    for output in (text, tmp_path / "link.txt"):
        assert cli.main(["lm", str(text), str(output), "--discount-fallback"]) == 2
        assert "is an input of this run too" in capsys.readouterr().err
    assert text.read_bytes() == before


def test_a_tiny_memory_budget_gives_the_same_arpa_bytes(tmp_path, monkeypatch):
    (tmp_path / "text.en").write_text("\n".join(data_lines("dev.tok.en")[:600]) + "\n", encoding="utf-8")
    write_lm(tmp_path / "text.en", 4, tmp_path / "big.arpa")
    runs = []
    real_write_run = pbmt.train.lm_estimate.write_run
    monkeypatch.setattr(pbmt.train.lm_estimate, "write_run", lambda path, records: (
        runs.append(len(records)), real_write_run(path, records)))
    counts = write_lm(tmp_path / "text.en", 4, tmp_path / "small.arpa", memory=parse_memory("16K"))
    assert len(runs) > 100  # the budget forced many runs and merges
    assert (tmp_path / "small.arpa").read_bytes() == (tmp_path / "big.arpa").read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["big.arpa", "small.arpa", "text.en"]  # no counts left
    assert list(counts.ngrams) == [len(v) for v in read_arpa(tmp_path / "big.arpa").values()]


@pytest.mark.parametrize("text, size", [("2G", 2 << 30), ("512m", 512 << 20), ("100", 102400), ("1.5K", 1536),
                                        ("4096b", 4096)])
def test_memory_sizes_are_spelled_as_lmplz_takes_them(text, size):
    assert parse_memory(text) == size


@pytest.mark.parametrize("text", ["5X", "", "G", "0", "100b", "-1G", "101%", "99999999999999999999G"])
def test_bad_memory_sizes(text):
    with pytest.raises(ValueError, match="memory size"):
        parse_memory(text)


def test_memory_percent_is_of_the_physical_memory():
    physical = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    assert parse_memory("50%") == physical // 2


def test_scratch_folders_of_runs_killed_outright_are_removed(tmp_path):
    """A run killed with SIGKILL cannot remove its counts; the next run in the folder does, and leaves alone those of
    runs still going (this process's, a live parent's) and folders that are not its own."""
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = tmp_path / f".pbmt-lm-{dead.pid}-abc"
    live = [tmp_path / f".pbmt-lm-{os.getpid()}-def", tmp_path / f".pbmt-lm-{os.getppid()}-ghi"]
    other = tmp_path / ".pbmt-lm-notapid"
    for folder in [stale, *live, other]:
        folder.mkdir()
        (folder / "counts").write_bytes(b"x")
    write_lm([["a", "b"], ["b", "a", "c"]] * 3, 2, tmp_path / "lm.arpa", discount_fallback=DEFAULT_FALLBACK)
    assert not stale.exists() and all(f.exists() for f in live) and other.exists()
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".pbmt-lm-")) == sorted(
        f.name for f in [*live, other])


def test_the_text_and_lm_by_options_positionals_or_standard_streams_give_the_same_file(tmp_path, capsys):
    """-i/-o as in every verb, the positional TEXT OUTPUT, and lmplz's standard input and output: one model."""
    text = tmp_path / "text.txt"
    text.write_text("\n".join(TINY) + "\n", encoding="utf-8")
    fallback = ["-n", "3", "--discount-fallback", "-q"]
    assert cli.main(["lm", str(text), str(tmp_path / "positional.arpa"), *fallback]) == 0
    assert cli.main(["lm", "-i", str(text), "-o", str(tmp_path / "options.arpa"), *fallback]) == 0
    assert cli.main(["lm", str(text), "--output", str(tmp_path / "mixed.arpa"), *fallback]) == 0
    streams = subprocess.run([sys.executable, "-m", "pbmt", "lm", *fallback], stdin=text.open("rb"),
                             capture_output=True)
    assert streams.returncode == 0, streams.stderr[-2000:]
    expected = (tmp_path / "positional.arpa").read_bytes()
    assert_same_model(read_arpa(tmp_path / "positional.arpa"),
                      brute_force_kn([s.split() for s in TINY], 3, (0.5, 1.0, 1.5)), tolerance=1e-6)
    for name in ("options", "mixed"):
        assert (tmp_path / f"{name}.arpa").read_bytes() == expected
    assert streams.stdout == expected
    capsys.readouterr()
    assert cli.main(["lm", "-i", str(text), str(text), str(tmp_path / "twice.arpa"), *fallback]) == 2
    assert capsys.readouterr().err == (f"pbmt lm: error: -i {text} and the positional TEXT {text} name the same "
                                       "file: give one\n")
    # lmplz's -o is the order: a bare number is refused, not written as a file named 3
    assert cli.main(["lm", "-o", "3", "-i", str(text), *fallback]) == 2
    assert "lmplz's -o 3, the order, is -n 3 here" in capsys.readouterr().err
    assert cli.main(["lm", str(text), "3", *fallback]) == 2  # the positional OUTPUT: no -o to speak of
    assert capsys.readouterr().err == ("pbmt lm: error: the ARPA file to write is named 3, a number: the order is "
                                       "-n 3 (a file named 3: ./3)\n")
    assert not (tmp_path / "twice.arpa").exists() and not os.path.exists("3")
    # standard input a terminal: refused at once, as pbmt eval does, rather than waiting for text typed there
    master, terminal = os.openpty()
    typed = subprocess.run([sys.executable, "-m", "pbmt", "lm", "-o", str(tmp_path / "typed.arpa")], stdin=terminal,
                           capture_output=True, text=True, timeout=60)
    os.close(master), os.close(terminal)
    assert typed.returncode == 2 and typed.stderr.startswith("pbmt lm: error: no text: give it with -i TEXT")
    assert not (tmp_path / "typed.arpa").exists()
