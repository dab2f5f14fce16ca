"""Numba kernels of the phrase table: span lookup through the source trie."""

import numpy as np
from numba import njit

from pbmt.model._hashtable import find


@njit(cache=True)
def lookup_spans(sentence, word_map, keys, values, n_words, node_phrase, max_length):
    """Source-phrase index of every span of a sentence.

    sentence: int32[n] global word ids; word_map: int32[V] global -> table-local
    source word id (-1: not in the table). Returns int32[n, max_length] where
    entry [i, l] is the phrase covering words i .. i+l (inclusive), or -1.
    """
    n = sentence.shape[0]
    out = np.full((n, max_length), -1, dtype=np.int32)
    for i in range(n):
        node = 0
        for length in range(min(max_length, n - i)):
            w = sentence[i + length]
            local = word_map[w] if w < word_map.shape[0] else -1
            node = find(keys, values, n_words, node, local)
            if node < 0:
                break
            out[i, length] = node_phrase[node]
    return out


@njit(cache=True)
def top_candidates(cand_offsets, estimates, limit):
    """Indices of the ``limit`` best candidates of every source phrase.

    cand_offsets: int64[n_src + 1] CSR over candidates; estimates: float64[n_cand]
    (higher is better; ties keep file order). Returns (kept int64[k] in
    phrase order, new_offsets int64[n_src + 1]).
    """
    n_src = cand_offsets.shape[0] - 1
    new_offsets = np.zeros(n_src + 1, dtype=np.int64)
    for p in range(n_src):
        new_offsets[p + 1] = new_offsets[p] + min(limit, cand_offsets[p + 1] - cand_offsets[p])
    kept = np.empty(new_offsets[n_src], dtype=np.int64)
    for p in range(n_src):
        lo = cand_offsets[p]
        k = new_offsets[p + 1] - new_offsets[p]
        order = np.argsort(-estimates[lo:cand_offsets[p + 1]], kind="mergesort")
        kept[new_offsets[p]:new_offsets[p + 1]] = lo + order[:k]
    return kept, new_offsets
