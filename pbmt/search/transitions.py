"""The transition features of one sentence's options, in the searches' one kernel form.

``transitions(model, options)`` gathers every weighted score of a block that
depends on its predecessor into ``Transitions`` (``_scoring_kernels``): the
LM and its cache, distortion, lexicalized reordering, and the sparse
families' transitions (``sparse_transitions``: the boundary family's class
pairs, the block family's orientation and bigram weights). The stack and cube
searches and the sampler read the same object.
"""

from __future__ import annotations

import numpy as np

from pbmt.model.lm import LMCache
from pbmt.model.model import TranslationModel
from pbmt.search._scoring_kernels import Transitions
from pbmt.search.derivation import boundary_arrays
from pbmt.search.options import TranslationOptions


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


def transitions(model: TranslationModel, options: TranslationOptions, lm_cache: LMCache | None = None
                ) -> Transitions:
    """The weighted transition features of ``options`` under ``model``, in the searches' one kernel form;
    ``lm_cache``: the cache of LM scores to read through (default: the model's)."""
    layout, w = model.layout, model.weights
    lr = layout.columns_of_type("LexicalReordering")
    dist = layout.columns_of_type("Distortion")
    sparse = (sparse_transitions(model, options) if model.sparse is not None
              else (np.zeros((0, 3)), np.zeros(0, np.int32), np.zeros(0, np.int32), np.zeros((1, 1))))
    cache = (lm_cache or model.lm.score_cache).entries
    return Transitions(model.lm.arrays, cache, np.int64(model.lm.begin_state), model.lm_weight_ln,
                       float(w[dist][0]) if dist is not None else 0.0,
                       np.ascontiguousarray(w[lr]) if lr is not None else np.zeros(6),
                       np.ascontiguousarray(options.reordering), lr is not None, *sparse, model.sparse is not None)
