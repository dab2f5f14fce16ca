"""Numba kernels for the transition features, shared by every search.

The decoder's incremental scores, the sampler's deltas and ``score_derivation``
all call these, so one definition of each feature serves them all.
"""

import numpy as np
from numba import njit

from pbmt.model._lm_kernels import score_word

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


@njit(cache=True)
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


@njit(cache=True)
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
