"""The derivation: the one hypothesis data model every part of pbmt shares.

A derivation of a source sentence is its sequence of blocks (phrase pairs) in
target order. Three ``int32`` arrays describe it: each block's source span
``src_start`` .. ``src_end`` (exclusive) and its ``option`` (index into the
sentence's ``TranslationOptions``). Target words, phrase boundaries,
distortion jumps and block orientations are derived from them.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

import numpy as np

from pbmt.model.model import TranslationModel
from pbmt.model.block_features import Block
from pbmt.model.distortion_bins import jump_counts
from pbmt.model.sparse import boundary_ids
from pbmt.search._scoring_kernels import score_dense
from pbmt.search.options import TranslationOptions
from pbmt.search.transitions import boundary_arrays, transitions
from pbmt.base.vocab import Vocab


class Orientation(IntEnum):
    """Block orientation relative to the predecessor (Tillmann & Zhang).

    LEFT: the block's source phrase is immediately left of its predecessor's;
    RIGHT: immediately right (a block at the sentence start is RIGHT);
    NEUTRAL: anything else (detached from its predecessor).
    """

    LEFT = 0
    RIGHT = 1
    NEUTRAL = 2


@dataclass(frozen=True, eq=False)
class Derivation:
    """Blocks in target order: ``src_start``, ``src_end`` (exclusive), ``option``; each ``int32[k]``.

    Hashable and comparable by value, so pools and relevant sets can deduplicate.
    """

    src_start: np.ndarray
    src_end: np.ndarray
    option: np.ndarray

    def __post_init__(self):
        for name in ("src_start", "src_end", "option"):
            array = np.array(getattr(self, name), dtype=np.int32)
            array.flags.writeable = False
            object.__setattr__(self, name, array)

    @classmethod
    def from_options(cls, options: TranslationOptions, chosen) -> "Derivation":
        """The derivation using the options ``chosen`` (in target order)."""
        chosen = np.asarray(chosen, dtype=np.int32)
        return cls(options.start[chosen], options.end[chosen], chosen)

    @classmethod
    def paths(cls, options: TranslationOptions, offsets, chosen) -> list["Derivation"]:
        """The derivations of many paths at once: path ``i`` uses the options ``chosen[offsets[i]:offsets[i +
        1]]`` (in target order); each holds read-only views of three arrays shared by all (an n-best list
        makes a hundred a sentence)."""
        option = np.array(chosen, dtype=np.int32)
        arrays = (options.start[option].astype(np.int32), options.end[option].astype(np.int32), option)
        for array in arrays:
            array.flags.writeable = False
        bounds = np.asarray(offsets).tolist()
        paths = []
        for lo, hi in zip(bounds[:-1], bounds[1:]):
            path = object.__new__(cls)
            for name, array in zip(("src_start", "src_end", "option"), arrays):
                object.__setattr__(path, name, array[lo:hi])
            paths.append(path)
        return paths

    def __len__(self) -> int:
        return len(self.option)

    def __hash__(self) -> int:
        return hash((self.src_start.tobytes(), self.src_end.tobytes(), self.option.tobytes()))

    def __eq__(self, other) -> bool:
        return (isinstance(other, Derivation) and np.array_equal(self.option, other.option)
                and np.array_equal(self.src_start, other.src_start) and np.array_equal(self.src_end, other.src_end))

    def target_words(self, options: TranslationOptions) -> np.ndarray:
        """Target word ids, ``int32[|e|]``."""
        parts = [options.target(o) for o in self.option]
        return np.concatenate(parts).astype(np.int32) if parts else np.zeros(0, np.int32)

    def target_boundaries(self, options: TranslationOptions) -> np.ndarray:
        """``int64[k + 1]``: block ``b`` produced target words ``[t[b], t[b+1])``."""
        lengths = np.diff(options.tgt_offsets)[self.option]
        return np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)

    def jumps(self) -> np.ndarray:
        """Distortion jumps ``src_start[b] - src_end[b-1]`` (0 = monotone; end of block -1 is 0), ``int32[k]``."""
        prev_end = np.concatenate([[0], self.src_end[:-1]])
        return (self.src_start - prev_end).astype(np.int32)

    def orientations(self) -> np.ndarray:
        """Tillmann & Zhang orientation of every block (``Orientation`` values), ``int8[k]``."""
        out = np.full(len(self), Orientation.NEUTRAL, dtype=np.int8)
        prev_start = np.concatenate([[0], self.src_start[:-1]])
        prev_end = np.concatenate([[0], self.src_end[:-1]])
        out[self.src_start == prev_end] = Orientation.RIGHT
        left = self.src_end == prev_start
        left[0] = False
        out[left] = Orientation.LEFT
        return out

    def covers(self, n_words: int) -> bool:
        """Whether the blocks cover source words 0 .. n_words - 1 exactly once."""
        covered = np.zeros(n_words, dtype=np.int32)
        for s, e in zip(self.src_start, self.src_end):
            covered[s:e] += 1
        return bool(np.all(covered == 1))


def score_derivation(derivation: Derivation, options: TranslationOptions, model: TranslationModel,
                     complete: bool = True) -> np.ndarray:
    """Every dense feature of ``derivation``, recomputed from scratch: ``float64[layout.size]``; with the
    sentence end's scores (``</s>``) unless not ``complete`` (a prefix).

    The single source of truth for feature values (natural logs, Moses's
    definitions): the decoder's, the sampler's and the n-best lists' scores
    must all equal it.
    """
    out = np.zeros(model.layout.size)
    tr = transitions(model, options, sparse=False)
    score_dense(tr, derivation.src_start, derivation.src_end, derivation.option, options.local,
                np.empty((1, len(tr.begin)), np.int64), out, complete)
    return out


def sparse_features(derivation: Derivation, options: TranslationOptions, model: TranslationModel) -> np.ndarray:
    """The boundary features of ``derivation`` from scratch: ``float64[model.sparse.size]`` (counts).

    With ``score_derivation``, the single source of truth: searches'
    incremental sparse scores must equal ``sparse_features(...) @
    model.sparse.weights``. Zero-length when the model has no sparse features.
    """
    left, right, _, _, _, has_boundary = boundary_arrays(model, options)
    if not has_boundary:
        return np.zeros(0)
    ids = boundary_ids(left, right, derivation.option, model.sparse.boundary)
    return np.bincount(ids, minlength=model.sparse.size).astype(np.float64)


def sparse_score(derivation: Derivation, options: TranslationOptions, model: TranslationModel) -> float:
    """The weighted sparse features of ``derivation`` from scratch (natural log): the boundary and
    distortion families' counts by their weights and the block family's named features (0.0 without sparse
    features)."""
    if model.sparse is None:
        return 0.0
    score = float(sparse_features(derivation, options, model) @ model.sparse.weights)
    if model.sparse.blocks is not None:
        score += model.sparse.blocks.score(derivation_blocks(derivation, options, options.vocab))
    if model.sparse.jumps is not None:
        score += float(jump_features(derivation) @ model.sparse.jumps)
    return score


def jump_features(derivation: Derivation) -> np.ndarray:
    """The distortion-bin family's features of ``derivation`` from scratch: ``float64[distortion_bins.SIZE]``
    (counts of its blocks' jumps by bin)."""
    return jump_counts(zip(derivation.src_start.tolist(), derivation.src_end.tolist()))


def model_score(derivation: Derivation, options: TranslationOptions, model: TranslationModel) -> float:
    """The model score of ``derivation`` from scratch: dense and sparse features by their weights (natural log)."""
    return float(score_derivation(derivation, options, model) @ model.weights) + sparse_score(derivation, options, model)


def derivation_blocks(derivation: Derivation, options: TranslationOptions, vocab: Vocab) -> list[Block]:
    """The blocks of a derivation over ``options``, in target order, with their words (``vocab``)."""
    words = vocab.words(options.sentence)
    return [Block(int(a), int(b), tuple(words[a:b]), tuple(vocab.words(options.target(o))))
            for a, b, o in zip(derivation.src_start, derivation.src_end, derivation.option)]
