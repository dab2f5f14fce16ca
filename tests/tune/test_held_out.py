"""The held-out part of a dev set: evenly spread, the requested size, whole documents when asked, never all."""

import numpy as np
import pytest

from pbmt.base.documents import Documents
from pbmt.tune.held_out import held_out_sentences

BOOKS = [("Joshua", [18, 24, 17, 24, 15, 27, 26, 35, 27, 43, 23, 24, 33, 15, 63, 10, 18, 28, 51, 9, 45, 34, 16, 33]),
         ("Ruth", [22, 23, 18, 22]), ("Philippians", [30, 30, 21, 23]), ("Colossians", [29, 23, 25, 18]),
         ("I Thessalonians", [10, 20, 13, 18, 28])]  # chapters and their verses, as the shared dev set


def keys():
    return [f"{book} {c}:{v}" for book, chapters in BOOKS for c, verses in enumerate(chapters, 1)
            for v in range(1, verses + 1)]


@pytest.mark.parametrize("n_sentences, n", [(1031, 100), (1031, 1), (1031, 1030), (10, 3), (7, 6), (100, 100 // 3)])
def test_sentences_are_one_per_even_stretch(n_sentences, n):
    held = held_out_sentences(n_sentences, n)
    assert held.dtype == np.int64 and len(held) == n and np.all(np.diff(held) > 0)
    assert held[0] >= 0 and held[-1] < n_sentences
    # exactly one in every stretch [k N / n, (k + 1) N / n), by brute force over the lines
    stretch = [int(np.floor(line * n / n_sentences)) for line in held.tolist()]
    assert stretch == list(range(n))


def test_every_book_of_the_dev_set_is_represented():
    books = [" ".join(k.split()[:-1]) for k in keys()]
    assert len(books) == 1031
    held = held_out_sentences(len(books), 100)
    assert {books[i] for i in held} == {book for book, _ in BOOKS}


@pytest.mark.parametrize("n", [1, 30, 100, 300, 900])
def test_documents_are_held_out_whole_spread_and_near_the_size(n):
    documents = Documents.from_keys(keys())
    held = held_out_sentences(documents.n_lines, n, documents)
    document = documents.document_of()
    chosen = np.unique(document[held])
    sizes = np.diff(documents.offsets)
    np.testing.assert_array_equal(held, np.flatnonzero(np.isin(document, chosen)))  # whole documents, sorted
    assert 1 <= len(chosen) < len(documents)  # something is left to tune on
    assert abs(len(held) - n) <= sizes.max()
    if n >= 300:  # enough documents to reach beyond Joshua, which fills the first 658 lines
        assert len({documents.names[d].rsplit(" ", 1)[0] for d in chosen}) > 1


def test_impossible_requests_are_refused():
    for n_sentences, n in [(10, 0), (10, 10), (10, 11), (1, 1)]:
        with pytest.raises(ValueError, match="held-out"):
            held_out_sentences(n_sentences, n)
    with pytest.raises(ValueError, match="single document"):
        held_out_sentences(5, 2, Documents.single(5))
    with pytest.raises(ValueError, match="cover 5 lines, not 6"):
        held_out_sentences(6, 2, Documents.from_keys(["A 1:1", "A 1:2", "B 1:1", "B 1:2", "B 1:3"]))
