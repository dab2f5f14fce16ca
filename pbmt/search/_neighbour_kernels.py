"""Numba kernel of sampler neighbourhoods: the target words of every member, for global features."""

import numpy as np
from numba import njit


@njit(cache=True)
def _append(words, at, tgt_offsets, tgt_words, option):
    for i in range(tgt_offsets[option], tgt_offsets[option + 1]):
        words[at] = tgt_words[i]
        at += 1
    return at


@njit(cache=True)
def neighbour_words(base, lo, hi, mid_lo, mid_hi, first, second, tgt_offsets, tgt_words):
    """CSR target words of the candidates of a neighbourhood (see ``pbmt.search.sampler.Neighbourhood``).

    base: int32[k], the base derivation's options in target order; candidate
    ``c`` is ``base[:lo]``, ``first[c]``, then (when ``second[c] >= 0``)
    ``base[mid_lo:mid_hi]`` and ``second[c]``, then ``base[hi:]``.
    tgt_offsets (int64[n_opt+1]) and tgt_words (int32) are the options' target
    words. Returns (offsets int64[n_cand+1], words int32[offsets[-1]]).
    """
    n = first.shape[0]
    lengths = tgt_offsets[1:] - tgt_offsets[:-1]
    fixed = 0
    for j in range(lo):
        fixed += lengths[base[j]]
    for j in range(hi, base.shape[0]):
        fixed += lengths[base[j]]
    middle = 0
    for j in range(mid_lo, mid_hi):
        middle += lengths[base[j]]
    offsets = np.zeros(n + 1, np.int64)
    for c in range(n):
        size = fixed + lengths[first[c]]
        if second[c] >= 0:
            size += middle + lengths[second[c]]
        offsets[c + 1] = offsets[c] + size
    words = np.empty(offsets[n], np.int32)
    for c in range(n):
        at = offsets[c]
        for j in range(lo):
            at = _append(words, at, tgt_offsets, tgt_words, base[j])
        at = _append(words, at, tgt_offsets, tgt_words, first[c])
        if second[c] >= 0:
            for j in range(mid_lo, mid_hi):
                at = _append(words, at, tgt_offsets, tgt_words, base[j])
            at = _append(words, at, tgt_offsets, tgt_words, second[c])
        for j in range(hi, base.shape[0]):
            at = _append(words, at, tgt_offsets, tgt_words, base[j])
    return offsets, words
