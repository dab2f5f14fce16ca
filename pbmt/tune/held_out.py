"""The held-out part of a tuning set: sentences a tuner never learns from, kept to choose among its weights.

Haddow, Arun & Koehn (2011) decode a held-out set with SampleRank's averaged
weights at intervals and report the weights of the best decode (their
"maximum held-out"). Without a second set, part of the dev set is held out.
It is spread evenly over the set, so that a dev set made of several books
(or domains) is represented by each, not by the first one alone.
"""

from __future__ import annotations

import numpy as np

from pbmt.base.documents import Documents


def held_out_sentences(n_sentences: int, n: int, documents: Documents | None = None) -> np.ndarray:
    """Sorted ``int64`` indices of about ``n`` of ``n_sentences`` lines, spread evenly over them.

    Without ``documents``: exactly ``n`` lines, ``spread(n_sentences, n)``:
    the middle line of each of n equal stretches, so any run of consecutive
    lines as long as a stretch (a book) has one. With ``documents``
    (covering the ``n_sentences`` lines): whole documents, those holding the
    lines ``spread(n_sentences, m)`` for the m in 1 .. ``len(documents) -
    1`` whose documents total closest to ``n`` lines (the smallest such m),
    so at least one document is left to tune on.

    Raises ValueError unless 1 <= n < n_sentences (with ``documents``: unless
    there are at least two documents).
    """
    if not 1 <= n < n_sentences:
        raise ValueError(f"need 1 <= n < {n_sentences} held-out sentences, got {n}")
    if documents is None:
        return spread(n_sentences, n)
    if documents.n_lines != n_sentences:
        raise ValueError(f"the documents cover {documents.n_lines} lines, not {n_sentences}")
    if len(documents) < 2:
        raise ValueError("a whole document cannot be held out of a single document")
    document_of, sizes = documents.document_of(), np.diff(documents.offsets)
    best, best_distance = None, None
    for m in range(1, len(documents)):
        chosen = np.unique(document_of[spread(n_sentences, m)])
        distance = abs(int(sizes[chosen].sum()) - n)
        if best_distance is None or distance < best_distance:
            best, best_distance = chosen, distance
    return np.concatenate([np.arange(documents.offsets[d], documents.offsets[d + 1]) for d in best]).astype(np.int64)


def spread(n_sentences: int, n: int) -> np.ndarray:
    """``int64[n]``: the middle line of each stretch k < n of lines ``ceil(k N / n)`` .. ``ceil((k + 1) N / n) -
    1`` (N = ``n_sentences`` >= n >= 1), in integers, so every pick lies in its own stretch."""
    k = np.arange(n + 1, dtype=np.int64)
    bounds = -(-k * n_sentences // n)
    return (bounds[:-1] + bounds[1:] - 1) // 2
