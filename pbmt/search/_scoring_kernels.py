"""Numba kernels for the transition features, shared by every search.

``Transitions`` is the one form in which every search reads the scores of a
block that depend on its predecessor: the LMs (stateful: each keeps one
column of the searches' state matrix), distortion, lexicalized reordering and
the sparse transitions. ``transition`` is their one definition, in two
forms chosen by its ``weighted`` flag, a constant of each caller that numba
folds away: weighted (the searches' extension scores, ``extension_score``)
or added per feature column to a row (``score_dense`` for
``score_derivation`` and n-best lists, the sampler's deltas, lattice edges).
``score_dense`` recomputes the dense features of a derivation from scratch,
the reference the others are tested against.
"""

from collections import namedtuple

import numpy as np
from numba import njit

from pbmt.model.lm import cached_score_word

MONOTONE, SWAP, DISCONTINUOUS = 0, 1, 2
EOS = 2  # pbmt.base.vocab.EOS
LN10 = np.log(10.0)


@njit(cache=True, inline="always")
def msd_orientation(prev_start, prev_end, start, end):
    """Moses's msd orientation of block [start, end) after block [prev_start, prev_end).

    The sentence start is the block [0, 0). Returns MONOTONE, SWAP or DISCONTINUOUS.
    """
    if start == prev_end:
        return MONOTONE
    if end == prev_start:
        return SWAP
    return DISCONTINUOUS


Transitions = namedtuple("Transitions", [
    "lms",  # tuple of LMArrays, one per LM feature in layout order; LM m keeps column m of the state
    "cache",  # LMCache.entries: a direct-mapped cache of the LMs' scores
    "begin",  # int64[width]: the state at the sentence start (each LM's state after <s>)
    "weights",  # float64[>= n_dense], writable (the per-column form writes the row it is given, which the
    # weighted form never does but numba types alike): the dense weights the weighted form multiplies by
    "lm_cols",  # int64[n_lm]: each LM's column (its log10 scores times ln 10)
    "dist_col",  # int: Distortion0's column (-1: absent)
    "lr_col",  # int: the first of LexicalReordering0's six columns, msd forward then backward (-1: absent)
    "reordering",  # float64[n_opt, 6]: each option's reordering log probabilities
    "tgt_offsets", "tgt_words",  # CSR of the options' target words (TranslationOptions)
    "orient_score",  # float64[n_opt, 3]: weighted sparse score of option o in each msd orientation
    "right_key", "left_key",  # int32[n_opt]: sparse keys of each option's last and first target word
    "pair_weight",  # float64[n_right + 1, n_left + 1]: weighted sparse score of key pairs (start row, end column)
    "has_sparse",  # bool: the model has sparse transition features
    "sparse_col",  # int: the column the per-column form adds the weighted sparse transitions to (-1: leaves them out)
])
"""Every score of a block that depends on its predecessor: the searches' one form of the transition features
(LMs, distortion, lexicalized reordering, sparse orientation and boundary pairs), with the weights and the
columns they have in the dense feature vector."""


@njit(cache=True, inline="always")
def _emit(tr, weighted, out, col, value):
    """One feature value of a transition in column ``col`` (-1: the model lacks the feature): returned times
    its weight (weighted form), or added to ``out[col]`` (per-column form, which returns 0)."""
    if col < 0:
        return 0.0
    if weighted:
        return tr.weights[col] * value
    out[col] += value
    return 0.0


@njit(cache=True, inline="always")
def words_score(tr, lo, hi, eos, states, h, new_states, g, weighted, out):
    """The stateful part: every LM's score of ``tr.tgt_words[lo:hi]`` (then ``</s>`` if ``eos``) from state row
    ``states[h]``, the state after them written to ``new_states[g]`` (which may be the same row)."""
    total = 0.0
    for m in range(len(tr.lms)):
        lm = tr.lms[m]
        state = states[h, m]
        p = 0.0
        for k in range(lo, hi):
            q, state = cached_score_word(lm, tr.cache, m, state, tr.tgt_words[k])
            p += q
        if eos:
            q, state = cached_score_word(lm, tr.cache, m, state, EOS)
            p += q
        new_states[g, m] = state
        total += _emit(tr, weighted, out, tr.lm_cols[m], p * LN10)
    return total


@njit(cache=True, inline="always")
def sparse_score(tr, prev_option, o, orient):
    """Weighted sparse transition score of option ``o`` in msd orientation ``orient`` right after
    ``prev_option`` (-1: the sentence start): its orientation score and the key pair at the boundary."""
    row = tr.right_key[prev_option] if prev_option >= 0 else tr.pair_weight.shape[0] - 1
    return tr.orient_score[o, orient] + tr.pair_weight[row, tr.left_key[o]]


@njit(cache=True, inline="always")
def sparse_end_score(tr, last_option):
    """Weighted sparse score of the sentence end after ``last_option``: the key pair at the last boundary."""
    return tr.pair_weight[tr.right_key[last_option], tr.pair_weight.shape[1] - 1]


@njit(cache=True, inline="always")
def _sparse(tr, weighted, out, value):
    """A weighted sparse transition score: returned (weighted form), or added to ``out[sparse_col]``."""
    if weighted:
        return value
    out[tr.sparse_col] += value
    return 0.0


@njit(cache=True, inline="always")
def jump_score(tr, prev_start, prev_end, prev_option, start, end, o, weighted, out):
    """The stateless part: distortion, lexicalized reordering and the sparse transitions of block [start, end)
    with option ``o`` after block [prev_start, prev_end) with ``prev_option`` ([0, 0) and -1 at the sentence start,
    which has no backward reordering score)."""
    total = _emit(tr, weighted, out, tr.dist_col, -abs(start - prev_end))
    sparse = tr.has_sparse and (weighted or tr.sparse_col >= 0)
    if tr.lr_col >= 0 or sparse:
        orient = msd_orientation(prev_start, prev_end, start, end)
        if tr.lr_col >= 0:
            total += _emit(tr, weighted, out, tr.lr_col + orient, tr.reordering[o, orient])
            if prev_option >= 0:
                total += _emit(tr, weighted, out, tr.lr_col + 3 + orient, tr.reordering[prev_option, 3 + orient])
        if sparse:
            total += _sparse(tr, weighted, out, sparse_score(tr, prev_option, o, orient))
    return total


@njit(cache=True, inline="always")
def end_score(tr, last_option, weighted, out):
    """The stateless part of the sentence end after ``last_option`` (-1: an empty derivation)."""
    if tr.has_sparse and last_option >= 0 and (weighted or tr.sparse_col >= 0):
        return _sparse(tr, weighted, out, sparse_end_score(tr, last_option))
    return 0.0


@njit(cache=True, inline="always")
def transition(tr, states, h, new_states, g, prev_start, prev_end, prev_option, o, start, end, complete, weighted,
               out):
    """Every transition feature of option ``o`` over [start, end) after block [prev_start, prev_end) with
    ``prev_option`` in state row ``states[h]`` (its new state to ``new_states[g]``); ``complete``: the block
    ends the sentence (``</s>`` and the end boundary). Weighted (returns the weighted sum, natural log) or per
    column (adds each value to ``out``, float64[n_dense], and returns 0)."""
    total = jump_score(tr, prev_start, prev_end, prev_option, start, end, o, weighted, out)
    total += words_score(tr, tr.tgt_offsets[o], tr.tgt_offsets[o + 1], complete, states, h, new_states, g, weighted,
                         out)
    if complete:
        total += end_score(tr, o, weighted, out)
    return total


@njit(cache=True, inline="always")
def extension_score(tr, states, h, new_states, g, prev_start, prev_end, prev_option, o, start, end, complete):
    """``transition``'s weighted form: the searches' score of extending hypothesis ``h`` by option ``o``."""
    return transition(tr, states, h, new_states, g, prev_start, prev_end, prev_option, o, start, end, complete, True,
                      tr.weights)


@njit(cache=True, nogil=True)
def score_dense(tr, d_start, d_end, d_option, local, states, out):
    """Add the dense features of one derivation to ``out`` (float64[n_features]): ``transition``'s per-column
    form along its blocks from the sentence start.

    d_*: int32[k], blocks in target order. local: float64[n_opt, n_features] option-local values; states:
    int64[1, width] scratch. Natural logs.
    """
    k = d_start.shape[0]
    states[0] = tr.begin
    prev_start, prev_end, prev_option = 0, 0, -1
    for b in range(k):
        o = d_option[b]
        out += local[o]
        transition(tr, states, 0, states, 0, prev_start, prev_end, prev_option, o, d_start[b], d_end[b], b == k - 1,
                   False, out)
        prev_start, prev_end, prev_option = d_start[b], d_end[b], o
    if k == 0:
        words_score(tr, 0, 0, True, states, 0, states, 0, False, out)


@njit(cache=True, nogil=True)
def score_dense_paths(tr, path_offsets, path_options, opt_start, opt_end, local, out):
    """``score_dense`` of many derivations of one sentence: derivation ``i`` uses the options
    ``path_options[path_offsets[i]:path_offsets[i + 1]]`` in target order; its features go to ``out[i]``
    (float64[k, n_features], zeroed first)."""
    states = np.empty((1, tr.begin.shape[0]), dtype=np.int64)
    for i in range(path_offsets.shape[0] - 1):
        chosen = path_options[path_offsets[i]:path_offsets[i + 1]]
        out[i] = 0.0
        score_dense(tr, opt_start[chosen], opt_end[chosen], chosen, local, states, out[i])
