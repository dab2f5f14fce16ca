"""Documents from keys files: runs of one book (and chapter), chunks that never cross them, bad keys."""

import numpy as np
import pytest

from pbmt.base.documents import Documents
from pbmt.base.errors import FormatError

KEYS = ["Joshua 1:1", "Joshua 1:2", "Joshua 2:1", "I Thessalonians 1:1", "I Thessalonians 1:2",
        "I Thessalonians 1:3", "Ruth 1:1"]


def test_chapters_and_books_are_runs_of_equal_keys():
    chapters = Documents.from_keys(KEYS)
    assert chapters.names == ("Joshua 1", "Joshua 2", "I Thessalonians 1", "Ruth 1")
    np.testing.assert_array_equal(chapters.offsets, [0, 2, 3, 6, 7])
    assert list(chapters.spans()) == [(0, 2), (2, 3), (3, 6), (6, 7)]
    np.testing.assert_array_equal(chapters.document_of(), [0, 0, 1, 2, 2, 2, 3])
    books = Documents.from_keys(KEYS, level="book")
    assert books.names == ("Joshua", "I Thessalonians", "Ruth")
    assert len(books) == 3 and books.n_lines == 7


def test_chunks_never_cross_a_document_and_respect_the_size():
    docs = Documents.from_keys(KEYS)
    for size in (1, 2, 3, 10):
        chunk = docs.chunks(size)
        doc = docs.document_of()
        for c in np.unique(chunk):
            lines = np.flatnonzero(chunk == c)
            assert len(lines) <= size and len(set(doc[lines])) == 1
            np.testing.assert_array_equal(lines, np.arange(lines[0], lines[-1] + 1))
    np.testing.assert_array_equal(docs.chunks(2), [0, 0, 1, 2, 2, 3, 4])  # 3 lines in 2 chunks: 2 + 1


def test_read_a_keys_file_with_a_limit_and_bad_lines(tmp_path, bible):
    dev = Documents.read(bible / "dev.keys")
    assert dev.n_lines == 1031 and dev.names[0] == "Joshua 1"
    assert Documents.read(bible / "dev.keys", limit=20).n_lines == 20
    bad = tmp_path / "bad.keys"
    bad.write_text("Joshua 1:1\nJoshua 1\n", encoding="utf-8")
    with pytest.raises(FormatError, match=r"bad.keys:2: expected CHAPTER:VERSE"):
        Documents.read(bad)
    bad.write_text("Joshua 1:1\n\n", encoding="utf-8")
    with pytest.raises(FormatError, match=r"bad.keys:2: expected 'BOOK CHAPTER:VERSE'"):
        Documents.read(bad)
