"""Numba kernels of pbmt's own features that score a block in context (``pbmt.model.feature_functions``), in
the contract's signatures (``pbmt.model._feature_kernels``): the n-gram LM (stateful: one state column),
distortion, lexicalized reordering, the sparse transitions and the distortion bins (stateless: they read the
previous block)."""

from collections import namedtuple

import numpy as np
from numba import njit

from pbmt.model._feature_kernels import register_kernels
from pbmt.model._lm_kernels import cached_score_word

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


LMData = namedtuple("LMData", [
    "lm",  # LMArrays
    "cache",  # LMCache.entries: the calling thread's cache of LM scores
    "which",  # int: the LM's number among the model's LMs (its key in the cache)
    "tgt_offsets", "tgt_words",  # CSR of the options' target words (global ids)
])


@njit(cache=True, inline="always")
def lm_transition(data, state, new_state, prev_start, prev_end, prev_option, start, end, option, out):
    """The LM's log10 score of the option's target words after ``state[0]``, times ln 10."""
    s = state[0]
    p = 0.0
    for k in range(data.tgt_offsets[option], data.tgt_offsets[option + 1]):
        q, s = cached_score_word(data.lm, data.cache, data.which, s, data.tgt_words[k])
        p += q
    new_state[0] = s
    out[0] += p * LN10


@njit(cache=True, inline="always")
def lm_end(data, state, last_option, out):
    """The LM's score of ``</s>`` after ``state[0]``, times ln 10."""
    q, s = cached_score_word(data.lm, data.cache, data.which, state[0], EOS)
    state[0] = s
    out[0] += q * LN10


register_kernels(LMData, lm_transition, lm_end)

DistortionData = namedtuple("DistortionData", ["unused"])


@njit(cache=True, inline="always")
def distortion_transition(data, state, new_state, prev_start, prev_end, prev_option, start, end, option, out):
    """Minus the jump width from the previous block's end."""
    out[0] -= abs(start - prev_end)


@njit(cache=True, inline="always")
def nothing_at_end(data, state, last_option, out):
    """The end of a feature that scores nothing there."""


register_kernels(DistortionData, distortion_transition, nothing_at_end)

NoTransition = namedtuple("NoTransition", ["unused"])


@njit(cache=True, inline="always")
def no_transition(data, state, new_state, prev_start, prev_end, prev_option, start, end, option, out):
    """A feature of no columns: what a model without stateless transition features has in their place."""


register_kernels(NoTransition, no_transition, nothing_at_end)

ReorderingData = namedtuple("ReorderingData", [
    "scores",  # float64[n_opt, 6]: each option's msd log probabilities, forward (0..2) then backward (3..5)
])


@njit(cache=True, inline="always")
def reordering_transition(data, state, new_state, prev_start, prev_end, prev_option, start, end, option, out):
    """The option's forward msd score in its orientation and the previous option's backward one (none at the
    sentence start)."""
    orient = msd_orientation(prev_start, prev_end, start, end)
    out[orient] += data.scores[option, orient]
    if prev_option >= 0:
        out[3 + orient] += data.scores[prev_option, 3 + orient]


register_kernels(ReorderingData, reordering_transition, nothing_at_end)

SparseData = namedtuple("SparseData", [
    "orient_score",  # float64[n_opt, 3]: weighted sparse score of option o in each msd orientation
    "right_key", "left_key",  # int32[n_opt]: sparse keys of each option's last and first target word
    "pair_weight",  # float64[n_right + 1, n_left + 1]: weighted sparse score of key pairs (start row, end column)
])


@njit(cache=True, inline="always")
def sparse_transition(data, state, new_state, prev_start, prev_end, prev_option, start, end, option, out):
    """The weighted sparse score of the option in its msd orientation and of the key pair at its boundary."""
    orient = msd_orientation(prev_start, prev_end, start, end)
    row = data.right_key[prev_option] if prev_option >= 0 else data.pair_weight.shape[0] - 1
    out[0] += data.orient_score[option, orient] + data.pair_weight[row, data.left_key[option]]


@njit(cache=True, inline="always")
def sparse_end(data, state, last_option, out):
    """The weighted sparse score of the key pair at the sentence end."""
    if last_option >= 0:
        out[0] += data.pair_weight[data.right_key[last_option], data.pair_weight.shape[1] - 1]


register_kernels(SparseData, sparse_transition, sparse_end)

JumpBinData = namedtuple("JumpBinData", [
    "weight",  # float64[n_bins]: the distortion-bin family's weights (pbmt.model.distortion_bins)
    "bins",  # int64[2 * m + 1]: the bin of a jump d at min(max(d, -m), m) + m
])


@njit(cache=True, inline="always")
def jump_bin_transition(data, state, new_state, prev_start, prev_end, prev_option, start, end, option, out):
    """The weight of the bin of the block's jump from the previous block's end (``start - prev_end``)."""
    limit = (len(data.bins) - 1) // 2
    jump = min(max(start - prev_end, -limit), limit)
    out[0] += data.weight[data.bins[jump + limit]]


register_kernels(JumpBinData, jump_bin_transition, nothing_at_end)
