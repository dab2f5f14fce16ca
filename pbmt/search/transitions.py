"""The transition features of one sentence's options, in the searches' one kernel form.

``transitions(model, options)`` gathers every score of a block that depends
on its predecessor into ``Transitions`` (``_scoring_kernels``): the LMs and
their cache, distortion, lexicalized reordering, and the sparse families'
transitions (``sparse_transitions``: the boundary family's class pairs, the
block family's orientation and bigram weights), with the model's weights and
the features' columns. The stack and cube searches, ``score_derivation``,
n-best lists, lattice edges and the sampler read the same object.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pbmt.model.lm import CACHE_ENTRY
from pbmt.model.lm import LMCache
from pbmt.model.model import TranslationModel
from pbmt.search._scoring_kernels import Transitions
from pbmt.search.options import TranslationOptions


def boundary_arrays(model: TranslationModel, options: TranslationOptions) -> tuple:
    """What the kernels need of the model's sparse boundary features on these options.

    ``(left_key int32[n_opt], right_key int32[n_opt], pair_weight float64[K, K]
    (a view of the sparse weights), bos, eos, has_sparse)``; placeholders of
    the same types and ``has_sparse`` False when the model has none.
    """
    sparse = model.sparse
    if sparse is None or sparse.boundary is None:
        none = np.zeros(1, np.int32)
        return none, none, np.zeros((1, 1)), 0, 0, False
    left, right = sparse.boundary.keys(options.vocab, options.tgt_offsets, options.tgt_words)
    return left, right, sparse.pair_weight, sparse.boundary.bos, sparse.boundary.eos, True


def sparse_transitions(model: TranslationModel, options: TranslationOptions
                       ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The model's sparse features that look at a block's predecessor (``pbmt.model.sparse``), as the sparse
    fields of ``Transitions`` for ``options``: the boundary family's class pairs, the block family's
    orientation x block and boundary bigrams, or their sum.

    Returns ``(orient, right_key, left_key, pair)``: ``orient[o, k]``, option ``o`` in msd orientation ``k``
    relative to its predecessor (``float64[n_opt, 3]``: 0 monotone = R, 1 swap = L, 2 discontinuous = N);
    ``pair[right_key[p], left_key[o]]``, option ``o`` right after option ``p`` (``float64[n_right + 1,
    n_left + 1]``: the last row is the sentence start, the last column its end); the keys ``int32[n_opt]``.

    The boundary pair table alone already has the sentence start as its last
    row and the end as its last column; it is then a view of the model's
    sparse weights. With the block family, keys number the sentence's distinct
    last and first target words (its orientation weights and bigram weights come
    from ``model.block_scores``), and the boundary weights join by the words' classes.
    """
    left, right, pair, bos, eos, has_boundary = boundary_arrays(model, options)
    if model.block_scores is None:
        return np.zeros((len(options), 3)), right, left, pair
    _, orient = options.block_scores(model)
    lasts, word_right = np.unique(options.tgt_words[options.tgt_offsets[1:] - 1], return_inverse=True)
    firsts, word_left = np.unique(options.tgt_words[options.tgt_offsets[:-1]], return_inverse=True)
    word_pair = model.block_scores.bigrams(lasts, firsts)
    word_right, word_left = word_right.astype(np.int32), word_left.astype(np.int32)
    if has_boundary:
        row_class = np.full(word_pair.shape[0], bos)
        row_class[word_right] = right
        col_class = np.full(word_pair.shape[1], eos)
        col_class[word_left] = left
        word_pair = word_pair + pair[np.ix_(row_class, col_class)]
    return orient, word_right, word_left, word_pair


_NO_SPARSE = (np.zeros((0, 3)), np.zeros(0, np.int32), np.zeros(0, np.int32), np.zeros((1, 1)))


@dataclass(frozen=True)
class TransitionColumns:
    """Where the transition features' values go in the model's dense vector: ``lm_cols`` int64[n_lm], each
    LM's column; ``dist_col``, Distortion0's; ``lr_col``, the first of LexicalReordering0's six (-1: absent)."""

    lm_cols: np.ndarray
    dist_col: int
    lr_col: int

    @classmethod
    def of(cls, model: TranslationModel) -> "TransitionColumns":
        """The columns of ``model``'s layout."""
        layout = model.layout
        lr = layout.columns_of_type("LexicalReordering")
        dist = layout.columns_of_type("Distortion")
        return cls(np.array(model.lm_columns, dtype=np.int64), dist.start if dist is not None else -1,
                   lr.start if lr is not None else -1)

    def transitions(self, reordering: np.ndarray, weights: np.ndarray) -> Transitions:
        """The stateless transitions (no LM, no sparse features) of options with ``reordering``
        (float64[n_opt, 6]) under ``weights`` (float64[n_dense])."""
        return Transitions((), np.zeros(0, CACHE_ENTRY), np.zeros(0, np.int64), np.array(weights, dtype=np.float64),
                           self.lm_cols, self.dist_col, self.lr_col, np.ascontiguousarray(reordering),
                           np.zeros(1, np.int64), np.zeros(0, np.int32), *_NO_SPARSE, False, -1)


def transitions(model: TranslationModel, options: TranslationOptions, lm_cache: LMCache | None = None,
                sparse: bool = True, sparse_col: int = -1) -> Transitions:
    """The transition features of ``options`` under ``model``, in the searches' one kernel form, with the
    model's weights; ``lm_cache``: the cache of LM scores to read through (default: the model's); ``sparse``:
    with the model's sparse transitions (the dense features alone, as ``score_derivation`` and lattice edges
    count them, need none); ``sparse_col``: the column where the per-column form adds the weighted sparse
    transitions (-1: none)."""
    columns = TransitionColumns.of(model)
    sparse = sparse and model.sparse is not None
    cache = (lm_cache or model.lm_cache).entries
    return Transitions(tuple(lm.arrays for lm in model.lms), cache,
                       np.array([lm.begin_state for lm in model.lms], dtype=np.int64),
                       np.array(model.weights, dtype=np.float64), columns.lm_cols, columns.dist_col,
                       columns.lr_col, np.ascontiguousarray(options.reordering), options.tgt_offsets, options.tgt_words,
                       *(sparse_transitions(model, options) if sparse else _NO_SPARSE), sparse, sparse_col)
