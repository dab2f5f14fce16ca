"""Numba kernels for the transition features, shared by every search.

``Transitions`` is the one form in which the searches read every score of a
block that depends on its predecessor; the stack and cube searches score an
extension with ``extension_score`` (``reordering_score``, ``sparse_score``,
``sparse_end_score``), the sampler its deltas with the same sparse parts,
and the dense ones per feature column (``add_transition``) where a tuner
needs the columns. ``score_dense`` recomputes the dense features of a
derivation from scratch (``score_derivation``), the reference the others
are tested against.
"""

from collections import namedtuple

import numpy as np
from numba import njit

from pbmt.model._lm_kernels import cached_score_word, score_word

MONOTONE, SWAP, DISCONTINUOUS = 0, 1, 2
EOS = 2  # pbmt.vocab.EOS


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
    "lm",  # LMArrays
    "cache",  # LMCache.entries: a direct-mapped cache of the LM's scores
    "begin_state",  # int64: LM state after <s>
    "w_lm_ln",  # float: LM weight times ln 10 (LM scores are log10)
    "w_dist",  # float: distortion weight
    "w_lr",  # float64[6]: lexicalized reordering weights (msd forward, then backward)
    "reordering",  # float64[n_opt, 6]: each option's reordering log probabilities
    "has_lr",  # bool: the model has a lexicalized reordering feature
    "orient_score",  # float64[n_opt, 3]: weighted sparse score of option o in each msd orientation
    "right_key", "left_key",  # int32[n_opt]: sparse keys of each option's last and first target word
    "pair_weight",  # float64[n_right + 1, n_left + 1]: weighted sparse score of key pairs (start row, end column)
    "has_sparse",  # bool: the model has sparse transition features
])
"""Every score of a block that depends on its predecessor, weighted (natural log): the searches' one form
of the transition features (LM, distortion, lexicalized reordering, sparse orientation and boundary pairs)."""


@njit(cache=True, inline="always")
def reordering_score(tr, prev_option, o, orient):
    """Weighted lexicalized reordering of option ``o`` in msd orientation ``orient`` after ``prev_option``
    (-1 at the sentence start, which has no backward score)."""
    total = tr.w_lr[orient] * tr.reordering[o, orient]
    if prev_option >= 0:
        total += tr.w_lr[3 + orient] * tr.reordering[prev_option, 3 + orient]
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
def extension_score(tr, tgt_offsets, tgt_words, state, prev_start, prev_end, prev_option, o, start, end, complete):
    """Weighted transition score of option ``o`` over [start, end) after block [prev_start, prev_end) with
    ``prev_option`` (-1 and [0, 0) at the sentence start) in LM ``state``; ``complete``: the block ends the
    sentence (adds </s> and the end boundary). Returns (score, LM state after the block)."""
    p = 0.0
    new_state = state
    for k in range(tgt_offsets[o], tgt_offsets[o + 1]):
        q, new_state = cached_score_word(tr.lm, tr.cache, new_state, tgt_words[k])
        p += q
    total = tr.w_lm_ln * p - tr.w_dist * abs(start - prev_end)
    if tr.has_lr or tr.has_sparse:
        orient = msd_orientation(prev_start, prev_end, start, end)
        if tr.has_lr:
            total += reordering_score(tr, prev_option, o, orient)
        if tr.has_sparse:
            total += sparse_score(tr, prev_option, o, orient)
            if complete:
                total += sparse_end_score(tr, o)
    if complete:
        p_end, new_state = cached_score_word(tr.lm, tr.cache, new_state, EOS)
        total += tr.w_lm_ln * p_end
    return total, new_state


@njit(cache=True, inline="always")
def lm_words(lm, state, words, lo, hi):
    """Score words[lo:hi] from LM ``state``; returns (log10 total, new state)."""
    total = 0.0
    for k in range(lo, hi):
        p, state = score_word(lm, state, words[k])
        total += p
    return total, state


@njit(cache=True, inline="always")
def add_transition(prev_start, prev_end, prev_option, start, end, option, reordering, dist_col, lr_col, out):
    """Add the distortion and reordering features of block [start, end) with ``option`` after its predecessor.

    The predecessor is block [prev_start, prev_end) with ``prev_option``; at the
    sentence start it is [0, 0) with option -1 (no backward score). Adds
    -|start - prev_end| to ``out[dist_col]`` and the msd forward score of
    ``option`` and backward score of ``prev_option`` to the six columns from
    ``lr_col`` (natural log; a column index of -1 skips the feature).
    """
    if dist_col >= 0:
        out[dist_col] -= abs(start - prev_end)
    if lr_col >= 0:
        orient = msd_orientation(prev_start, prev_end, start, end)
        out[lr_col + orient] += reordering[option, orient]
        if prev_option >= 0:
            out[lr_col + 3 + orient] += reordering[prev_option, 3 + orient]


@njit(cache=True, nogil=True)
def score_dense(d_start, d_end, d_option, local, tgt_offsets, tgt_words, reordering,
                lm, begin_state, lm_col, dist_col, lr_col, out):
    """Add the dense features of one derivation to ``out`` (float64[n_features]).

    d_*: int32[k], blocks in target order. local: float64[n_opt, n_features]
    option-local values; reordering: float64[n_opt, 6] log probabilities; the
    *_col arguments are first columns of LM0, Distortion0 and
    LexicalReordering0 (-1 when the model lacks the feature). Natural logs.
    """
    k = d_start.shape[0]
    state = begin_state
    lm_total = 0.0
    prev_start, prev_end, prev_option = 0, 0, -1
    for b in range(k):
        o = d_option[b]
        out += local[o]
        p, state = lm_words(lm, state, tgt_words, tgt_offsets[o], tgt_offsets[o + 1])
        lm_total += p
        add_transition(prev_start, prev_end, prev_option, d_start[b], d_end[b], o, reordering, dist_col, lr_col, out)
        prev_start, prev_end, prev_option = d_start[b], d_end[b], o
    p, state = score_word(lm, state, EOS)
    if lm_col >= 0:
        out[lm_col] += (lm_total + p) * np.log(10.0)


@njit(cache=True, nogil=True)
def score_dense_paths(path_offsets, path_options, opt_start, opt_end, local, tgt_offsets, tgt_words, reordering,
                      lm, begin_state, lm_col, dist_col, lr_col, out):
    """``score_dense`` of many derivations of one sentence: derivation ``i`` uses the options
    ``path_options[path_offsets[i]:path_offsets[i + 1]]`` in target order; its features go to ``out[i]``
    (float64[k, n_features], zeroed first)."""
    for i in range(path_offsets.shape[0] - 1):
        chosen = path_options[path_offsets[i]:path_offsets[i + 1]]
        out[i] = 0.0
        score_dense(opt_start[chosen], opt_end[chosen], chosen, local, tgt_offsets, tgt_words, reordering,
                    lm, begin_state, lm_col, dist_col, lr_col, out[i])
