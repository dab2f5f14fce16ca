"""The transition features of one sentence's options, in the searches' one kernel form.

``transitions(model, options)`` gathers every feature of the model that
scores a block in context (``FeatureFunction.scores_transitions``) into
``Transitions`` (``_scoring_kernels``): each one's sentence data, columns and
slice of the state row, and the sparse families' transitions
(``sparse_transitions``: the boundary family's class pairs, the block
family's orientation and bigram weights; the distortion family's bins of
jumps), with the model's weights. The stack
and cube searches, ``score_derivation``, n-best lists, lattice edges and the
sampler read the same object.
"""

from __future__ import annotations

import numpy as np

from pbmt.base.errors import PbmtError
from pbmt.model.distortion_bins import jump_data
from pbmt.model.features import defined_at, kernels_registered
from pbmt.model.moses_features import NoTransition, SparseData
from pbmt.model.lm import LMCache
from pbmt.model.model import TranslationModel
from pbmt.search._scoring_kernels import Slot, Transitions
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

    Returns ``(orient, right_key, left_key, pair)`` (``SparseData``): ``orient[o, k]``, option ``o`` in msd orientation ``k``
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


_NO_TRANSITION = Slot(NoTransition(0), 0, 0, 0, 0)  # a feature of no columns, when a model has no stateless one


def transitions(model: TranslationModel, options: TranslationOptions, lm_cache: LMCache | None = None,
                sparse: bool = True, sparse_col: int = -1) -> Transitions:
    """The transition features of ``options`` under ``model``, in the searches' one kernel form, with the
    model's weights: every feature that scores transitions (``FeatureFunction.scores_transitions``) with its
    sentence data, columns and state slice, then the model's sparse transitions when ``sparse`` and it has
    them, weighted, in column ``sparse_col`` (default: the one after the dense columns; the per-column form
    adds them there, and the weighted form weighs that column 1). ``lm_cache``: the cache of LM scores to read
    through (default: the model's)."""
    cache = lm_cache or model.lm_cache
    stateful, stateless, begin, stateful_cols = [], [], [], []
    key_option = False
    for feature, (_, columns) in zip(model.features, model.layout.slices):
        if not feature.scores_transitions:
            continue
        lo = len(begin)
        begin.extend(feature.begin_state().tolist())
        data = feature.sentence_data(options, cache)
        if not kernels_registered(data):
            raise PbmtError(f"feature {feature.name} ({type(feature).__name__}, {defined_at(feature)}): sentence_data "
                            f"returned a {type(data).__name__}, not an instance of a named tuple class given to "
                            "register_kernels with its kernels")
        slot = Slot(data, columns.start, columns.stop - columns.start, lo, len(begin))
        (stateful if feature.state_width else stateless).append(slot)
        key_option |= feature.reads_previous_option
        if feature.state_width:
            stateful_cols.extend(range(columns.start, columns.stop))
    n_cols = model.layout.size
    weights = np.array(model.weights, dtype=np.float64)
    if sparse and model.sparse is not None:
        col = n_cols if sparse_col < 0 else sparse_col
        if model.sparse.boundary is not None or model.sparse.blocks is not None:
            stateless.append(Slot(SparseData(*sparse_transitions(model, options)), col, 1, 0, 0))
            key_option = True
        if model.sparse.jumps is not None:  # it reads the previous block's end, which the keys hold already
            stateless.append(Slot(jump_data(model.sparse.jumps), col, 1, 0, 0))
        weights = np.concatenate([weights, np.zeros(max(0, col + 1 - n_cols))])
        weights[col] = 1.0
    widest = max((slot.n_cols for slot in (*stateful, *stateless)), default=1)
    return Transitions(tuple(stateful), tuple(stateless) or (_NO_TRANSITION,), np.array(begin, dtype=np.int64),
                       weights, np.zeros(widest), np.array(stateful_cols, dtype=np.int64),
                       np.zeros(0, dtype=np.int64), key_option)
