"""Binary block features (Tillmann & Zhang, Section II), by name, sparse.

A block b = (S, T) is a source phrase and its target phrase; in a block
sequence each block also has an orientation relative to its predecessor
(R, L or N, ``pbmt.search.derivation.Orientation``). Five kinds of binary
features fire on a block (a sequence's feature vector F(z) sums them, so a
feature may count more than once):

==========  =========================================  ===============================
kind        fires for                                  name
==========  =========================================  ===============================
block       the block's identity (the paper's f1)      ``blk:S ||| T``
word        each source word s and target word t       ``w:s ||| t``
            inside the block (Model-1-like, f2)
length      target phrase and source length (f3)       ``len:T ||| |S|``
orient      orientation x block                        ``ori:R:S ||| T``
bigram      the target words either side of a block    ``bi:t t'`` (``<s>``, ``</s>`` at
            boundary                                    the sentence ends)
==========  =========================================  ===============================

The first three are option-local: their weighted sum joins an option's
``local_score`` (``TranslationOptions.with_extra_scores``); orientation and
boundary bigrams look at the predecessor and reach the decoder as
``TransitionScores``. ``FeatureIndex`` numbers names as they are first seen,
so a feature vector is a pair of arrays (ids int64, counts float64), never a
dense vector; ``BlockWeights`` holds the weights of named features for
decoding. Names are built from the words themselves, so they mean the same in
every model and vocabulary.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np

from pbmt.errors import FormatError
from pbmt.files import atomic_write, read_lines
from pbmt.search.decoder import TransitionScores
from pbmt.search.options import TranslationOptions
from pbmt.vocab import Vocab

KINDS = ("block", "word", "length", "orient", "bigram")
ORIENT_LETTERS = "RLN"  # msd order of the decoder's transition scores: monotone = R, swap = L, discontinuous = N
BOS_WORD, EOS_WORD = "<s>", "</s>"


@dataclass(frozen=True)
class Block:
    """One block of a sequence: its source span [src_start, src_end) and the words of both phrases."""

    src_start: int
    src_end: int
    source: tuple[str, ...]
    target: tuple[str, ...]


def _key(source: Sequence[str], target: Sequence[str]) -> str:
    return " ".join(source) + " ||| " + " ".join(target)


def local_names(source: Sequence[str], target: Sequence[str]) -> list[str]:
    """Names of a block's option-local features: block identity, word pairs, phrase length."""
    names = ["blk:" + _key(source, target), f"len:{' '.join(target)} ||| {len(source)}"]
    names += [f"w:{s} ||| {t}" for s in dict.fromkeys(source) for t in dict.fromkeys(target)]
    return names


def orient_name(letter: str, source: Sequence[str], target: Sequence[str]) -> str:
    """Name of the orientation x block feature (letter: R, L or N)."""
    return f"ori:{letter}:" + _key(source, target)


def bigram_name(left: str, right: str) -> str:
    """Name of the boundary bigram feature: the last target word of a block (or <s>), the first of the next (or </s>)."""
    return f"bi:{left} {right}"


def orientation_letter(prev_start: int, prev_end: int, start: int, end: int) -> str:
    """R, L or N of block [start, end) after [prev_start, prev_end) (the sentence start is [0, 0))."""
    if start == prev_end:
        return "R"
    if end == prev_start:
        return "L"
    return "N"


def sequence_names(blocks: Sequence[Block]) -> Counter:
    """Every feature name firing on a block sequence (target order; target phrases are never empty), with its
    count: F(z) by name."""
    names: Counter = Counter()
    prev_start, prev_end, prev_word = 0, 0, BOS_WORD
    for block in blocks:
        names.update(local_names(block.source, block.target))
        names[orient_name(orientation_letter(prev_start, prev_end, block.src_start, block.src_end),
                          block.source, block.target)] += 1
        names[bigram_name(prev_word, block.target[0])] += 1
        prev_start, prev_end, prev_word = block.src_start, block.src_end, block.target[-1]
    names[bigram_name(prev_word, EOS_WORD)] += 1
    return names


def blocks_of(source: Sequence[str], target: Sequence[str],
              segmentation: Iterable[tuple[int, int, int, int]]) -> list[Block]:
    """The blocks of an n-best entry: ``segmentation`` (src_start, src_end, tgt_start, tgt_end) per block, ends
    exclusive, over the ``source`` and ``target`` words."""
    return [Block(a, b, tuple(source[a:b]), tuple(target[c:d])) for a, b, c, d in segmentation]


class FeatureIndex:
    """Names of binary features to ids 0, 1, ... in the order first seen."""

    def __init__(self, names: Iterable[str] = ()):
        self.names: list[str] = []
        self._ids: dict[str, int] = {}
        for name in names:
            self.add(name)

    def __len__(self) -> int:
        return len(self.names)

    def add(self, name: str) -> int:
        found = self._ids.get(name)
        if found is None:
            found = self._ids[name] = len(self.names)
            self.names.append(name)
        return found

    def vector(self, names: Counter, add: bool = True) -> tuple[np.ndarray, np.ndarray]:
        """(ids int64[k], counts float64[k]) of named counts, ids ascending; unknown names get ids
        (``add``) or are dropped."""
        pairs = [(self.add(n) if add else self._ids.get(n, -1), c) for n, c in names.items()]
        pairs = sorted(p for p in pairs if p[0] >= 0)
        return np.array([p[0] for p in pairs], np.int64), np.array([p[1] for p in pairs], np.float64)


class BlockWeights:
    """Weights of named binary features, ready to score a sentence's options for the decoder.

    names, values: the features with non-zero weight (float64[k]).
    """

    def __init__(self, names: Sequence[str], values: np.ndarray):
        self.values = np.asarray(values, dtype=np.float64)
        if len(names) != len(self.values):
            raise ValueError(f"{len(names)} names but {len(self.values)} weights")
        self.weight = {n: float(v) for n, v in zip(names, self.values) if v != 0.0}
        self.bigrams: dict[str, dict[str, float]] = defaultdict(dict)
        for name, value in self.weight.items():
            if name.startswith("bi:"):
                left, right = name[3:].split(" ")
                self.bigrams[left][right] = value

    def __len__(self) -> int:
        return len(self.weight)

    def write(self, path: str | Path) -> None:
        """One ``name<TAB>value`` per line (names may contain spaces), non-zero weights only, atomically."""
        with atomic_write(path) as handle:
            for name, value in self.weight.items():
                handle.write(f"{name}\t{value!r}\n")

    @classmethod
    def read(cls, path: str | Path) -> "BlockWeights":
        names, values = [], []
        for number, line in read_lines(path):
            if not line.strip():
                continue
            name, tab, value = line.rpartition("\t")
            try:
                values.append(float(value))
            except ValueError:
                raise FormatError(path, number, f"expected 'name<TAB>value', got {line!r}") from None
            if not tab or not name:
                raise FormatError(path, number, f"expected 'name<TAB>value', got {line!r}")
            names.append(name)
        return cls(names, np.array(values))

    def sentence_scores(self, options: TranslationOptions, vocab: Vocab) -> tuple[np.ndarray, TransitionScores]:
        """Weighted scores of a sentence's options: option-local (float64[n_opt]) and transition scores."""
        n = len(options)
        source = vocab.words(options.sentence)
        local = np.zeros(n)
        orient = np.zeros((n, 3))
        weight = self.weight
        firsts: dict[str, int] = {}
        lasts: dict[str, int] = {}
        left_key = np.zeros(n, np.int32)
        right_key = np.zeros(n, np.int32)
        for o in range(n):
            src = source[options.start[o]:options.end[o]]
            tgt = vocab.words(options.target(o))
            local[o] = sum(weight.get(name, 0.0) for name in local_names(src, tgt))
            for k, letter in enumerate(ORIENT_LETTERS):
                orient[o, k] = weight.get(orient_name(letter, src, tgt), 0.0)
            left_key[o] = firsts.setdefault(tgt[0], len(firsts))
            right_key[o] = lasts.setdefault(tgt[-1], len(lasts))
        pair = np.zeros((len(lasts) + 1, len(firsts) + 1))
        for last, r in list(lasts.items()) + [(BOS_WORD, len(lasts))]:
            following = self.bigrams.get(last)
            if not following:
                continue
            for first, l in list(firsts.items()) + [(EOS_WORD, len(firsts))]:
                pair[r, l] = following.get(first, 0.0)
        return local, TransitionScores(orient, right_key, left_key, pair)
