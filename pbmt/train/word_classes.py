"""Word classes induced from a text by the exchange algorithm (Kneser & Ney 1993; Martin, Liermann & Ney 1998).

Every word gets one of ``n_classes`` classes so as to maximise the
likelihood of the text under a class-bigram model; the objective (natural
log, up to terms that do not depend on the classes) is in
``pbmt.train._word_class_kernels``. The start is deterministic: words ranked
by frequency (ties by the word) are dealt out to the classes in turn, so the
most frequent words start in different classes. Each pass moves every word,
in that order, to the class that maximises the objective; passes stop when no
word moves or after ``max_passes``. Bigrams are counted within lines (no
sentence-boundary tokens). The result is the same on every run.
"""

from __future__ import annotations

import os
from array import array
from collections import Counter
from dataclasses import dataclass

import numpy as np
from tqdm import tqdm

from pbmt.base.files import read_lines
from pbmt.model.sparse import WordClasses
from pbmt.train._word_class_kernels import class_counts, exchange_pass, objective


@dataclass(frozen=True)
class Induced:
    """Induced classes, and the objective (natural log) before the first pass and after each pass."""

    classes: WordClasses
    objectives: tuple[float, ...]
    moved: tuple[int, ...]


#: Tokens counted at a time; distinct bigrams are merged when they pass ``_MERGE_AT``.
_CHUNK_TOKENS = 1 << 22
_MERGE_AT = 1 << 23


@dataclass(frozen=True)
class Bigrams:
    """The words of a text and its bigram counts (within lines).

    ``words``: the distinct words ranked by frequency, ties by the word;
    ``counts``: each word's count (int64 ``(n,)``); ``first``, ``second``:
    the two words' ranks of every distinct bigram (int64 ``(m,)``), sorted by
    ``(first, second)``; ``pair_counts``: how often each occurs (int64 ``(m,)``).
    """

    words: tuple[str, ...]
    counts: np.ndarray
    first: np.ndarray
    second: np.ndarray
    pair_counts: np.ndarray


def _summed(keys: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct ``keys``, sorted, with the sums of their ``counts``."""
    distinct, inverse = np.unique(keys, return_inverse=True)
    return distinct, np.bincount(inverse, weights=counts, minlength=len(distinct)).astype(np.int64)


def count_bigrams(path: str | os.PathLike) -> Bigrams:
    """Words and bigrams of a tokenised text file, counted on integer arrays a
    chunk of lines at a time: memory holds the distinct bigrams (16 bytes
    each) and a chunk, not a Python object per bigram."""
    index: dict[str, int] = {}
    unigrams = np.zeros(0, dtype=np.int64)
    keys, counts = [np.zeros(0, dtype=np.int64)], [np.zeros(0, dtype=np.int64)]
    held = 0
    token_ids, lengths = array("q"), array("q")

    def flush() -> None:
        nonlocal unigrams, token_ids, lengths, held
        ids = np.frombuffer(token_ids, dtype=np.int64)
        unigrams = np.bincount(ids, minlength=len(index)) + np.pad(unigrams, (0, len(index) - len(unigrams)))
        line_end = np.cumsum(np.frombuffer(lengths, dtype=np.int64))
        follows = np.ones(len(ids), dtype=bool)
        follows[line_end[line_end < len(ids)]] = False  # a line's first word follows nothing
        second = np.flatnonzero(follows[1:]) + 1
        chunk_keys, chunk_counts = np.unique((ids[second - 1] << 32) | ids[second], return_counts=True)
        keys.append(chunk_keys)
        counts.append(chunk_counts)
        held += len(chunk_keys)
        if held > _MERGE_AT:
            merged = _summed(np.concatenate(keys), np.concatenate(counts))
            keys[:], counts[:] = [merged[0]], [merged[1]]
            held = len(merged[0])
        token_ids, lengths = array("q"), array("q")

    for _, line in read_lines(path):
        words = line.split()
        token_ids.extend(index.setdefault(w, len(index)) for w in words)
        lengths.append(len(words))
        if len(token_ids) >= _CHUNK_TOKENS:
            flush()
    flush()
    pair_keys, pair_counts = _summed(np.concatenate(keys), np.concatenate(counts))
    by_id = list(index)
    ranked = sorted(range(len(by_id)), key=lambda i: (-unigrams[i], by_id[i]))
    rank = np.empty(len(ranked), dtype=np.int64)
    rank[ranked] = np.arange(len(ranked))
    first, second = rank[pair_keys >> 32], rank[pair_keys & 0xFFFFFFFF]
    order = np.lexsort((second, first))
    return Bigrams(tuple(by_id[i] for i in ranked), unigrams[ranked], first[order], second[order],
                   pair_counts[order])


def _csr(rows: np.ndarray, cols: np.ndarray, counts: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    order = np.lexsort((cols, rows))
    offsets = np.zeros(n + 1, np.int64)
    np.cumsum(np.bincount(rows, minlength=n), out=offsets[1:])
    return offsets, cols[order].astype(np.int64), counts[order].astype(np.float64)


def induce_classes(path: str | os.PathLike, n_classes: int = 50, max_passes: int = 10,
                   progress: bool = False) -> Induced:
    """Classes of the words of a tokenised text file (one sentence per line, UTF-8).

    Class names are ``c0`` .. ``c{n_classes - 1}``. Raises ValueError when
    the text has fewer distinct words than classes.
    """
    if n_classes < 1 or max_passes < 0:
        raise ValueError(f"need n_classes >= 1 and max_passes >= 0, got {n_classes} and {max_passes}")
    bigrams = count_bigrams(path)
    n = len(bigrams.words)
    if n < n_classes:
        raise ValueError(f"{path}: {n} distinct words, fewer than the {n_classes} classes asked for")
    succ = _csr(bigrams.first, bigrams.second, bigrams.pair_counts, n)
    pred = _csr(bigrams.second, bigrams.first, bigrams.pair_counts, n)
    words = bigrams.words
    del bigrams
    classes = (np.arange(n) % n_classes).astype(np.int32)
    counts = class_counts(classes, n_classes, *succ)
    objectives, moved = [objective(*counts)], []
    order = np.arange(n, dtype=np.int64)
    for _ in tqdm(range(max_passes), desc="word classes", unit="pass", disable=not progress or None):
        moved.append(int(exchange_pass(classes, order, *counts, *succ, *pred)))
        objectives.append(objective(*counts))
        if moved[-1] == 0:
            break
    return Induced(WordClasses(tuple(words), classes, tuple(f"c{i}" for i in range(n_classes))),
                   tuple(objectives), tuple(moved))


def class_objective(classes: WordClasses, path: str | os.PathLike) -> float:
    """The exchange objective of ``classes`` on a text, from scratch (for checking ``Induced.objectives``)."""
    index = {w: i for i, w in enumerate(classes.words)}
    pairs = Counter()
    for _, line in read_lines(path):
        ids = [index[w] for w in line.split()]
        pairs.update(zip(ids, ids[1:]))
    rows = np.array([[a, b, c] for (a, b), c in pairs.items()], np.int64).reshape(-1, 3)
    succ = _csr(rows[:, 0], rows[:, 1], rows[:, 2], len(classes.words))
    return float(objective(*class_counts(classes.classes, len(classes.names), *succ)))
