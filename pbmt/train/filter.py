"""Filtering a trained table to a test set, and pruning it per source phrase.

``filter_to_sentences`` keeps what Moses's ``filter-model-given-input.pl``
keeps for a phrase-based model: every pair whose source phrase occurs as a
contiguous word sequence of some input sentence. ``prune`` keeps the
``limit`` pairs of each source phrase with the highest φ(e|f).
Both keep the table's row order, and counts and scores as they were.
"""

from __future__ import annotations

from typing import Iterable, Sequence

import numpy as np

from pbmt.errors import PbmtError
from pbmt.train.score import ScoredTable


def source_ngrams(sentences: Iterable[Sequence[str]], max_length: int) -> set[str]:
    """Every contiguous sequence of 1 to ``max_length`` words of the tokenised
    ``sentences``, as space-joined strings."""
    found: set[str] = set()
    for words in sentences:
        for i in range(len(words)):
            for j in range(i + 1, min(len(words), i + max_length) + 1):
                found.add(" ".join(words[i:j]))
    return found


def filter_to_sentences(table: ScoredTable, sentences: Iterable[Sequence[str]]) -> ScoredTable:
    """The pairs of ``table`` whose source phrase occurs in one of the tokenised ``sentences``."""
    pairs = table.pairs
    used, local = np.unique(pairs.src_index, return_inverse=True)
    max_length = int(pairs.src.length[used].max()) if len(used) else 0
    wanted = source_ngrams(sentences, max_length)
    keep = np.fromiter((text in wanted for text in pairs.src.take(used).strings()), dtype=bool, count=len(used))
    return table.take(np.flatnonzero(keep[local]))


def prune(table: ScoredTable, limit: int) -> ScoredTable:
    """At most ``limit`` pairs per source phrase: those with the highest φ(e|f),
    ties going to the earlier row."""
    if limit < 1:
        raise PbmtError(f"prune: limit must be at least 1, not {limit}")
    src = table.pairs.src_index
    rows = np.arange(len(table))
    order = np.lexsort((rows, -table.features[:, 2], src))
    sorted_src = src[order]
    starts_group = np.ones(len(order), dtype=bool)
    starts_group[1:] = sorted_src[1:] != sorted_src[:-1]
    first = np.flatnonzero(starts_group)
    rank = rows - np.repeat(first, np.diff(np.append(first, len(order))))
    return table.take(np.sort(order[rank < limit]))
