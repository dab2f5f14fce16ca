import gzip
import math
import os
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pbmt.base.errors import FormatError
from pbmt.model.phrase_table import PhraseTable
from pbmt.base.vocab import Vocab

TINY = """\
la casa ||| the house ||| 0.5 0.4 0.6 0.3 ||| 0-0 1-1 ||| 2 4 1
la casa ||| the home ||| 0.25 0.2 0.1 0.1 ||| 0-0 1-1
casa ||| house ||| 0.9 0.8 0.7 0.6 ||| 0-0
la ||| the ||| 0.7 0.6 0.5 1e-50
verde ||| green ||| 1 1 1 1
la casa verde ||| the green house ||| 0.3 0.2 0.1 0.05 ||| 0-0 1-2 2-1
"""


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("PBMT_CACHE_DIR", str(tmp_path / "cache"))


def _write(path, text):
    if path.suffix == ".gz":
        with gzip.open(path, "wt", encoding="utf-8") as f:
            f.write(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def _table_by_source(table, vocab):
    """{source phrase: {target phrase: scores}} rebuilt from the arrays through lookup."""
    out = {}
    for line in TINY.splitlines():
        src = line.split(" ||| ")[0]
        ids = vocab.ids(src.split())
        phrase = table.lookup(ids, 3)[0, len(ids) - 1]
        out[src] = {" ".join(vocab.words(table.target(c))): table.scores[c] for c in table.candidates(phrase)}
    return out


@pytest.mark.parametrize("name", ["pt.txt", "pt.gz"])
def test_tiny_table_scores_are_floored_natural_logs(tmp_path, name):
    vocab = Vocab()
    table = PhraseTable.load(_write(tmp_path / name, TINY), vocab)
    assert (table.n_phrases, table.n_candidates, table.n_scores) == (5, 6, 4)
    got = _table_by_source(table, vocab)
    for line in TINY.splitlines():
        src, tgt, scores = line.split(" ||| ")[:3]
        expected = [max(math.log(float(p)), -100.0) for p in scores.split()]
        np.testing.assert_allclose(got[src][tgt], expected, rtol=0, atol=1e-12)
    assert got["la"]["the"][3] == -100.0


def test_lookup_finds_exactly_the_spans_in_the_table(tmp_path):
    vocab = Vocab()
    table = PhraseTable.load(_write(tmp_path / "pt", TINY), vocab)
    sentence = vocab.ids("la casa verde y la casa".split())
    spans = table.lookup(sentence, 4)
    sources = {line.split(" ||| ")[0] for line in TINY.splitlines()}
    words = vocab.words(sentence)
    for i in range(len(words)):
        for length in range(4):
            text = " ".join(words[i:i + length + 1]) if i + length < len(words) else None
            assert (spans[i, length] >= 0) == (text in sources), (i, length, text)
    assert spans[0, 1] == spans[4, 1]


def test_alignment_is_kept_per_candidate(tmp_path):
    vocab = Vocab()
    table = PhraseTable.load(_write(tmp_path / "pt", TINY), vocab)
    phrase = table.lookup(vocab.ids("la casa verde".split()), 3)[0, 2]
    (cand,) = table.candidates(phrase)
    links = table.align[table.align_offsets[cand]:table.align_offsets[cand + 1]]
    assert links.tolist() == [[0, 0], [1, 2], [2, 1]]


def test_prune_keeps_the_best_by_estimate(tmp_path):
    vocab = Vocab()
    table = PhraseTable.load(_write(tmp_path / "pt", TINY), vocab)
    weights = np.array([0.2, 0.3, 0.1, 0.4])
    est = table.estimates(weights, word_penalty_weight=-1.0)
    expected = table.scores @ weights + np.diff(table.tgt_offsets)
    np.testing.assert_allclose(est, expected)
    pruned, kept_rows = table.prune(1, est)
    assert kept_rows.tolist() == [max(table.candidates(p), key=lambda c: est[c]) for p in range(table.n_phrases)]
    assert pruned.n_candidates == pruned.n_phrases == 5
    for p in range(table.n_phrases):
        best = max(table.candidates(p), key=lambda c: est[c])
        (kept,) = pruned.candidates(p)
        assert vocab.words(pruned.target(kept)) == vocab.words(table.target(best))
        np.testing.assert_array_equal(pruned.scores[kept], table.scores[best])


def test_second_load_comes_from_cache_and_stale_cache_is_rebuilt(tmp_path):
    path = _write(tmp_path / "pt", TINY)
    first = PhraseTable.load(path, Vocab())
    second = PhraseTable.load(path, Vocab())
    assert isinstance(second.scores, np.memmap) and not isinstance(first.scores, np.memmap)
    np.testing.assert_array_equal(first.scores, second.scores)
    _write(path, TINY + "nuevo ||| new ||| 0.5 0.5 0.5 0.5\n")
    third = PhraseTable.load(path, Vocab())
    assert third.n_candidates == first.n_candidates + 1


def test_an_edit_in_place_that_keeps_size_and_mtime_is_seen(tmp_path):
    path = _write(tmp_path / "pt", TINY)
    before = PhraseTable.load(path, Vocab())
    info = os.stat(path)
    with open(path, "r+b") as f:  # same length, same bytes but one digit
        data = f.read()
        f.seek(0)
        f.write(data.replace(b"0.9 0.8", b"0.1 0.8"))
    os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns))
    assert os.stat(path).st_size == info.st_size and os.stat(path).st_mtime_ns == info.st_mtime_ns
    after = PhraseTable.load(path, Vocab())
    assert not np.array_equal(before.scores, after.scores)


def test_the_cache_is_readable_by_others(tmp_path, monkeypatch):
    monkeypatch.delenv("PBMT_CACHE_DIR")
    old = os.umask(0o022)
    try:
        PhraseTable.load(_write(tmp_path / "pt", TINY), Vocab())
    finally:
        os.umask(old)
    folders = [p for p in (tmp_path / "pt.pbmt-cache").rglob("*") if p.is_dir()] + [tmp_path / "pt.pbmt-cache"]
    assert folders and all(p.stat().st_mode & 0o055 == 0o055 for p in folders)
    assert all(p.stat().st_mode & 0o044 == 0o044 for p in (tmp_path / "pt.pbmt-cache").rglob("*") if p.is_file())


def test_source_and_target_phrases_are_keyed_on_tokens(tmp_path):
    spaced = TINY.replace("la casa ||| the home", "la\tcasa ||| the  home")
    table = PhraseTable.load(_write(tmp_path / "pt", spaced), Vocab())
    plain = PhraseTable.load(_write(tmp_path / "plain", TINY), Vocab())
    assert table.n_phrases == plain.n_phrases and table.n_candidates == plain.n_candidates


@pytest.mark.parametrize(
    "bad_line, reason",
    [
        ("casa ||| house", "expected at least 3 fields"),
        ("casa ||| house ||| 0.5 x 0.5 0.5", "not all numbers"),
        ("casa ||| house ||| 0.5 0 0.5 0.5", "positive"),
        ("casa ||| house ||| 0.5 -0.1 0.5 0.5", "positive"),
        ("casa ||| house ||| 0.5 0.5 0.5", "3 scores, but the first line has 4"),
        ("casa ||| house ||| 0.5 0.5 0.5 0.5 ||| 0-3", "outside the phrase pair"),
        ("casa ||| house ||| 0.5 0.5 0.5 0.5 ||| 0:0", "not of the form i-j"),
        (" ||| house ||| 0.5 0.5 0.5 0.5", "empty source or target"),
        ("casa ||| house ||| 0.5 0.5 0.5 0.5 ||| 0-\u0663", "not of the form i-j"),
        ("casa ||| house ||| 0.5 \u0663 0.5 0.5", "not all numbers"),
        ("casa ||| house ||| 0.5 nan 0.5 0.5", "positive finite"),
        ("casa ||| house ||| 0.5 0.5 0.5 0.5 ||| 0-4294967296", "word position above 2,147,483,647"),
        ("casa ||| " + "w " * 40000 + "||| 0.5 0.5 0.5 0.5 ||| 0-32768", "word position above 32,767"),
    ],
)
def test_malformed_lines_name_file_and_line(tmp_path, bad_line, reason):
    path = _write(tmp_path / "bad.gz", TINY + bad_line + "\n")
    with pytest.raises(FormatError) as err:
        PhraseTable.load(path, Vocab())
    assert err.value.line == 7 and str(path) in str(err.value) and reason in str(err.value)


def test_shared_moses_table(bible):
    path = bible / "model" / "phrase-table.gz"
    vocab = Vocab()
    table = PhraseTable.load(path, vocab, n_scores=4)
    assert (table.n_phrases, table.n_candidates) == (40161, 370384)
    # every pair of the first lines is found through lookup with its scores
    with gzip.open(path, "rt", encoding="utf-8") as f:
        for _, line in zip(range(2000), f):
            src, tgt, scores = line.split(" ||| ")[:3]
            ids = vocab.ids(src.split())
            phrase = table.lookup(ids, 7)[0, len(ids) - 1]
            found = {" ".join(vocab.words(table.target(c))): c for c in table.candidates(phrase)}
            np.testing.assert_allclose(table.scores[found[tgt]], np.log([float(p) for p in scores.split()]))


def _reference(text):
    """The table Python's str methods read from ``text``: [(source words, [(target words, scores, points)])],
    source phrases in order of first sight; or the 1-based number of the first malformed line."""
    phrases, n_scores = {}, None
    for number, line in enumerate(text.removeprefix("\ufeff").split("\n"), 1):
        line = line.rstrip("\r")
        if not line or line.isspace():
            continue
        fields = line.split("|||")
        if len(fields) < 3 or not fields[0].split() or not fields[1].split():
            return number
        src, tgt = tuple(fields[0].split()), tuple(fields[1].split())
        try:
            if not all(t.isascii() and "_" not in t for t in fields[2].split()):
                raise ValueError
            probs = [float(t) for t in fields[2].split()]
        except ValueError:
            return number
        n_scores = len(probs) if n_scores is None else n_scores
        if not probs or len(probs) != n_scores or not all(0 < p < math.inf for p in probs):
            return number
        points = []
        for token in fields[3].split() if len(fields) > 3 else ():
            i, dash, j = token.partition("-")
            if not (dash and i.isascii() and i.isdigit() and j.isascii() and j.isdigit()) \
                    or int(i) >= len(src) or int(j) >= len(tgt):
                return number
            points.append((int(i), int(j)))
        phrases.setdefault(src, []).append((tgt, [max(math.log(p), -100.0) for p in probs], points))
    return list(phrases.items())


_PIECES = ["la", "casa", "é", "|", "||", "|||", " ||| ", "0", "1", "2", "0.5", "1e-30", "2.5E+3", "-", "0-0", "1-0",
           "nan", "inf", "1_0", "\u0663", ".", " ", "  ", "\t", "\r", "\x0b", "\x1c", "\x85", "\xa0", "\u2009",
           "\u3000", "\u200b", "\ufeff", "x\u00a0y"]


@st.composite
def _tables(draw):
    """Phrase table texts: lines mostly well formed, with odd whitespace, numbers and points, some not."""
    lines = []
    for _ in range(draw(st.integers(0, 6))):
        pieces = st.lists(st.sampled_from(_PIECES), max_size=4).map(" ".join)
        if draw(st.booleans()):
            lines.append("".join(draw(st.lists(st.sampled_from(_PIECES), max_size=12))))
        else:
            src, tgt = draw(st.sampled_from(["la", "la casa", "casa\xa0verde"])), draw(st.sampled_from(["the", "a b"]))
            scores = draw(st.lists(st.sampled_from(["0.5", "1", "1e-30", "0.000313489", "3.6847e-10", "7E2",
                                                    ".25", "5.", "+0.5", "1234567890.123456789"]), min_size=2,
                                   max_size=3))
            lines.append(f"{src} |||{draw(pieces)}{tgt} ||| {' '.join(scores)} |||{draw(pieces)}")
    return draw(st.sampled_from(["", "\ufeff"])) + "\n".join(lines) + draw(st.sampled_from(["", "\n", "\r\n"]))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(_tables())
def test_the_byte_parser_reads_what_pythons_str_methods_read(tmp_path, text):
    """Every table reads as Python's ``str.split`` and ``float`` read it (tokens split at any Unicode space,
    fields at '|||'), or fails naming the line they fail at."""
    path = tmp_path / "pt.txt"
    path.write_bytes(text.encode("utf-8"))
    expected = _reference(text)
    vocab = Vocab()
    try:
        table = PhraseTable.load(path, vocab)
    except FormatError as err:
        assert err.line == expected or (expected == [] and "empty" in str(err)), (text, expected, str(err))
        return
    assert isinstance(expected, list) and len(expected) == table.n_phrases, (text, expected)
    for phrase, (src, pairs) in enumerate(expected):
        assert tuple(vocab.words(table.source(phrase))) == src
        got = [(tuple(vocab.words(table.target(c))), table.scores[c].tolist(),
                [tuple(p) for p in table.align[table.align_offsets[c]:table.align_offsets[c + 1]].tolist()])
               for c in table.candidates(phrase)]
        assert got == [(tgt, scores, points) for tgt, scores, points in pairs], text


def test_a_first_load_shows_its_progress_on_a_terminal_only(tmp_path, monkeypatch, capsys):
    PhraseTable.load(_write(tmp_path / "quiet.gz", TINY), Vocab())
    assert capsys.readouterr().err == ""
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    PhraseTable.load(_write(tmp_path / "shown.gz", TINY), Vocab())
    err = capsys.readouterr().err
    assert "reading shown.gz" in err and "parsing shown.gz" in err
    PhraseTable.load(tmp_path / "shown.gz", Vocab())  # from the cache: nothing to show
    assert capsys.readouterr().err == ""


@settings(max_examples=300, deadline=None)
@given(counts=st.lists(st.integers(0, 7), max_size=12), limit=st.integers(1, 5), data=st.data())
def test_top_candidates_are_each_phrases_best_by_estimate_ties_in_file_order(counts, limit, data):
    from pbmt.model._phrase_kernels import top_candidates

    values = st.sampled_from([-math.inf, -100.0, -3.5, -1.0, -0.0, 0.0, 0.25, 2.0])  # few: many ties
    estimates = np.array(data.draw(st.lists(values, min_size=sum(counts), max_size=sum(counts))), np.float64)
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    kept, new_offsets = top_candidates(offsets, estimates, limit)
    expected = [sorted(range(offsets[p], offsets[p + 1]), key=lambda c: (-estimates[c], c))[:limit]
                for p in range(len(counts))]
    assert kept.dtype == np.int64 and kept.tolist() == [c for best in expected for c in best]
    assert new_offsets.tolist() == [0, *np.cumsum([len(best) for best in expected]).tolist()]
