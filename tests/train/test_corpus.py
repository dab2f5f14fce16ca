"""Corpus and alignment files: reading, writing, span text, and errors naming the line."""

import gzip

import numpy as np
import pytest

from pbmt.base.errors import FormatError
from pbmt.train.corpus import read_alignment, read_corpus, write_alignment


def test_corpus_and_alignment_round_trip(tmp_path):
    with gzip.open(tmp_path / "c.es.gz", "wt", encoding="utf-8") as handle:
        handle.write("la  casa\tverde\n\nsí .\n")
    (tmp_path / "c.en").write_text("the green house\n\nyes .\n", encoding="utf-8")
    src = read_corpus(tmp_path / "c.es.gz")
    tgt = read_corpus(tmp_path / "c.en")
    assert [src.sentence(s) for s in range(3)] == [["la", "casa", "verde"], [], ["sí", "."]]
    assert src.lengths.tolist() == [3, 0, 2]
    (tmp_path / "a").write_text("0-0 1-2 2-1\n\n0-0 1-1\n", encoding="ascii")
    alignment = read_alignment(tmp_path / "a", src, tgt)
    assert alignment.points(0) == [(0, 0), (1, 2), (2, 1)]
    write_alignment(tmp_path / "b", alignment)
    assert (tmp_path / "b").read_text() == "0-0 1-2 2-1\n\n0-0 1-1\n"
    starts = src.offsets[[0, 0, 2]] + np.array([1, 0, 0])
    assert src.spans(starts, np.array([2, 1, 2])) == ["casa verde", "la", "sí ."]
    assert src.spans(starts[:1], np.array([1]), suffix=" |||") == ["casa |||"]


@pytest.mark.parametrize(
    "text, line, message",
    [
        ("0-0\n0-x\n", 2, "alignment point '0-x' is not of the form i-j"),
        ("0-0\n2-0\n", 2, "point 2-0 outside the sentence pair"),
        ("0-0\n", None, "1 lines, but the corpus has 2 sentences"),
    ],
)
def test_bad_alignment_files(tmp_path, text, line, message):
    (tmp_path / "s").write_text("a\nb c\n", encoding="utf-8")
    (tmp_path / "t").write_text("x\ny\n", encoding="utf-8")
    (tmp_path / "a").write_text(text, encoding="ascii")
    with pytest.raises(FormatError, match=message) as err:
        read_alignment(tmp_path / "a", read_corpus(tmp_path / "s"), read_corpus(tmp_path / "t"))
    assert err.value.line == line


def test_a_word_position_beyond_int32_names_the_line(tmp_path):
    """Without the corpora to bound it, a position too large for int32 is refused as any malformed point."""
    (tmp_path / "a").write_text("0-0\n1-4294967296\n", encoding="ascii")
    with pytest.raises(FormatError, match="alignment point '1-4294967296' names a word position above") as err:
        read_alignment(tmp_path / "a")
    assert err.value.line == 2
