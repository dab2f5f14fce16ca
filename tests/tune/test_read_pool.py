"""``read_pool`` reads an n-best list through numba kernels (``pbmt.base.nbest.scan_nbest``) to the pool, or the
error, that reading it line by line through ``parse_line`` gives (``_read_pool_lines``, the reference here); so
does ``read_lists``, rescoring's reader (``_read_lists_lines`` the reference)."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pbmt.base.errors import FormatError, PbmtError
from pbmt.base.nbest import scan_nbest
from pbmt.tune.pool import References, _read_pool_lines, _scanned_pool, read_pool
from pbmt.tune.rescore import _read_lists_lines, _scanned_lists, read_lists

REFS = ["the lord said unto moses", "go and house of israel", "and the lord"]


def assert_same_pool(got, expected):
    assert got.layout == expected.layout
    for name in ("features", "stats", "offsets", "keys"):
        a, b = getattr(got, name), getattr(expected, name)
        assert a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b), name
    assert got.texts == expected.texts and got.sparse_names == expected.sparse_names
    assert (got.sparse is None) == (expected.sparse is None)
    if got.sparse is not None:
        for name in ("data", "indices", "indptr"):
            assert np.array_equal(getattr(got.sparse, name), getattr(expected.sparse, name)), name


def outcome(read, path, references, dedup):
    """The pool ``read`` reads (None: it leaves the list to Python), or the (type, message) of its error."""
    try:
        return read(path, references, None, dedup)
    except PbmtError as err:
        return type(err), str(err)


def read_by_kernels(path, references, layout, dedup):
    return _scanned_pool(scan_nbest(path), path, references, layout, dedup)


_WORDS = ["the", "lord", "go", "é", "a|b", "||", "|||", "x=", "=", "0", "-", "\u3000", "\xa0", "\x1c", "\x85",
          "\u2009", "\u200b", "\ufeff", "\t", "  ", "\r"]
_NUMBERS = ["-1", "0.5", "-74.633", "1e-30", "2.5E+3", "-0", ".25", "5.", "+0.5", "1234567890.123456789", "7E2",
            "0.1234567890123456789", "1e400", "1e-400", "nan", "inf", "1_0", "q", "\u0663", "0x1", "1.5.2", ""]
_SENTENCES = ["0", "1", "2", "+1", "-0", "00", "3", "-1", "x", "", "0 1", "99999999999999999999", "2147483648"]
_BLOCKS = ["0=0", "0-1=0-1", "1-2=2-4", "3=5", "3-=4", "+1-+2=0", "1--5=0", "0-1", "a=b", "0=1=2", "=0", "0="]
_POINTS = ["0-0", "1-3", "12-4", "0:0", "0-", "-0", "1-x", "\u0663-0", "1-2147483647", "2147483648-0",
           "0-4294967297"]


@st.composite
def nbest_lists(draw):
    """n-best texts over the three REFS sentences: entries mostly well formed (dense LM0 and TM0, sometimes
    sparse features, a segmentation and an alignment or none), with odd whitespace, numbers and fields."""
    lines = []
    plain = st.sampled_from(["-1", "0.5", "-2.25", "3"])
    for _ in range(draw(st.integers(1, 8))):
        odd = draw(st.integers(0, 14)) == 0  # now and then an odd piece anywhere
        number = st.sampled_from(_NUMBERS) if odd else plain
        sentence = draw(st.sampled_from(_SENTENCES) if odd else st.sampled_from(["0", "1", "2"]))
        text = " ".join(draw(st.lists(st.sampled_from(_WORDS if odd else ["the", "lord", "go", "é", "and"]),
                                      max_size=5)))
        features = [f"LM0= {draw(number)}", f"TM0= {draw(number)} {draw(plain)}"]
        if draw(st.booleans()):
            names = ["pb_a_b", "pb_c_d", "Block_w:a|go", "pb_<s>_é"] + ["LM0", "odd_two"] * odd
            features += [f"{name}= {draw(number)}" for name in draw(st.lists(st.sampled_from(names), max_size=3,
                                                                             unique=not odd))]
        if odd and draw(st.booleans()):
            features = draw(st.permutations(features + draw(st.lists(st.sampled_from(
                ["TM0= 1", "LM1= 2", "5", "Dist= ", "odd_two= 1 2"]), max_size=2))))
        fields = [sentence, text, " ".join(features), draw(number)]
        layout = draw(st.integers(0, 2))
        if layout:
            fields.append(" ".join(draw(st.lists(st.sampled_from(_BLOCKS if odd else _BLOCKS[:5]), max_size=4))))
        if layout == 2:
            fields.append(" ".join(draw(st.lists(st.sampled_from(_POINTS if odd else _POINTS[:3]), max_size=3))))
        space = st.sampled_from([" ", "", "  ", "\t", "\xa0"] if odd else [" "])
        lines.append(draw(space) + f"{draw(space)}|||{draw(space)}".join(fields) + draw(space))
        if draw(st.integers(0, 6)) == 0:
            lines.append(draw(st.sampled_from(["", " ", "\u3000"])))
    newline = draw(st.sampled_from(["\n", "\r\n"]))
    return draw(st.sampled_from(["", "\ufeff"])) + newline.join(lines) + draw(st.sampled_from(["", newline]))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(nbest_lists(), st.sampled_from(["derivation", "string"]))
def test_the_kernels_read_the_pool_or_the_error_that_parse_line_reads(tmp_path, text, dedup):
    path = tmp_path / "nbest"
    path.write_bytes(text.encode("utf-8"))
    expected = outcome(_read_pool_lines, path, References(REFS), dedup)
    got = outcome(read_by_kernels, path, References(REFS), dedup)
    if isinstance(expected, tuple):
        assert got == expected, text
    elif got is not None:  # None: a line only Python reads, and read_pool reads it so
        assert not isinstance(got, tuple), (text, got)
        assert_same_pool(got, expected)


def test_the_shared_dev_list_reads_as_parse_line_reads_it(bible):
    """The shared 100-best list of Moses (103,100 entries, from gzip): the same pool either way (features, BLEU
    statistics, keys, texts)."""
    refs = (bible / "dev.tok.en").read_text(encoding="utf-8").splitlines()
    path = bible / "model" / "dev.moses.nbest100.gz"
    got = read_pool(path, References(refs))
    assert got.n_candidates == 103100
    assert_same_pool(got, _read_pool_lines(path, References(refs), None, "derivation"))


def assert_same_lists(got, expected):
    assert got.layout == expected.layout and got.texts == expected.texts and got.sources == expected.sources
    for name in ("features", "offsets", "totals"):
        a, b = getattr(got, name), getattr(expected, name)
        assert a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b), name
    assert (got.alignments is None) == (expected.alignments is None)
    if got.alignments is not None:
        assert len(got.alignments) == len(expected.alignments)
        for a, b in zip(got.alignments, expected.alignments):
            assert a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b)


def lists_outcome(read, *args):
    """The lists ``read`` reads, or the (type, message) of its error."""
    try:
        return read(*args)
    except PbmtError as err:
        return type(err), str(err)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(nbest_lists(), st.sampled_from([None, 2, 3]))
def test_the_kernels_read_the_rescoring_lists_that_parse_line_reads(tmp_path, text, n_sentences):
    path = tmp_path / "nbest"
    path.write_bytes(text.encode("utf-8"))
    expected = lists_outcome(_read_lists_lines, path, None, n_sentences, n_sentences)
    got = lists_outcome(read_lists, path, None, n_sentences)
    if isinstance(expected, tuple):
        assert got == expected, text
        return
    assert_same_lists(got, expected)
    scanned = scan_nbest(path)
    by_kernels = None if scanned is None else _scanned_lists(scanned, None, n_sentences, n_sentences)
    if by_kernels is not None:  # None: read_lists read it line by line
        assert_same_lists(by_kernels, expected)


def test_the_shared_dev_list_reads_as_rescoring_lists_as_parse_line_reads_them(bible):
    """With the alignments Moses printed, the sources and the first 500 sentences alone."""
    sources = (bible / "dev.tok.es").read_text(encoding="utf-8").splitlines()
    path = bible / "model" / "dev.moses.nbest100.gz"
    for n in (None, 500):
        scanned = _scanned_lists(scan_nbest(path), sources[:n], n, len(sources[:n]))
        assert scanned is not None and scanned.alignments is not None
        assert_same_lists(scanned, _read_lists_lines(path, sources[:n], n, len(sources[:n])))


@pytest.mark.parametrize("line, message", [
    ("0 ||| the lord ||| LM0= -1 TM0= 0.5 -1 ||| -1 ||| 0-1=0-1 ||| 0-0 1-4294967297",
     "alignment point '1-4294967297' names a word position above 2,147,483,647"),
    ("2147483648 ||| the lord ||| LM0= -1 TM0= 0.5 -1 ||| -1", "sentence id 2147483648 is above 2,147,483,647"),
])
def test_a_position_or_sentence_id_beyond_int32_names_the_line_either_way(tmp_path, line, message):
    """Not wrapped to int32 by the kernels' reader, nor an OverflowError's traceback line by line."""
    path = tmp_path / "nbest"
    path.write_text(f"1 ||| go ||| LM0= -2 TM0= 0.5 -1 ||| -2\n{line}\n", encoding="utf-8")
    for read in (lambda: read_lists(path), lambda: _read_lists_lines(path, None, None, None),
                 lambda: read_pool(path, References(REFS)),
                 lambda: _read_pool_lines(path, References(REFS), None, "derivation")):
        with pytest.raises(FormatError, match=message) as err:
            read()
        assert err.value.line == 2 and str(path) in str(err.value)
