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
from collections import Counter
from dataclasses import dataclass

import numpy as np
from tqdm import tqdm

from pbmt.files import read_lines
from pbmt.model.sparse import WordClasses
from pbmt.train._word_class_kernels import class_counts, exchange_pass, objective


@dataclass(frozen=True)
class Induced:
    """Induced classes, and the objective (natural log) before the first pass and after each pass."""

    classes: WordClasses
    objectives: tuple[float, ...]
    moved: tuple[int, ...]


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
    unigrams: Counter[str] = Counter()
    bigrams: Counter[tuple[str, str]] = Counter()
    for _, line in read_lines(path):
        words = line.split()
        unigrams.update(words)
        bigrams.update(zip(words, words[1:]))
    if len(unigrams) < n_classes:
        raise ValueError(f"{path}: {len(unigrams)} distinct words, fewer than the {n_classes} classes asked for")
    words = sorted(unigrams, key=lambda w: (-unigrams[w], w))
    index = {w: i for i, w in enumerate(words)}
    pairs = np.array([(index[a], index[b], c) for (a, b), c in bigrams.items()], np.int64).reshape(-1, 3)
    n = len(words)
    succ = _csr(pairs[:, 0], pairs[:, 1], pairs[:, 2], n)
    pred = _csr(pairs[:, 1], pairs[:, 0], pairs[:, 2], n)
    classes = (np.arange(n) % n_classes).astype(np.int32)
    counts = class_counts(classes, n_classes, *succ)
    objectives, moved = [objective(*counts)], []
    order = np.arange(n, dtype=np.int64)
    for _ in tqdm(range(max_passes), desc="word classes", unit="pass", disable=not progress):
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
