"""Numba kernels of the phrase table: span lookup through the source trie."""

import numpy as np
from numba import njit

from pbmt.base.hashtable import find


@njit(cache=True, nogil=True)
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


@njit(cache=True, nogil=True)
def match_pairs(src_offsets, src_words, cand_offsets, tgt_offsets, tgt_words,
                o_word_map, o_keys, o_values, o_n_words, o_node_phrase,
                o_cand_offsets, o_tgt_offsets, o_tgt_words):
    """For every phrase pair of one table, the same pair in another table (``o_``).

    Both tables' word ids are global. Returns int64[n_cand]: the other table's
    candidate index, or -1 where it has no such pair.
    """
    n_cand = tgt_offsets.shape[0] - 1
    out = np.full(n_cand, -1, dtype=np.int64)
    for p in range(src_offsets.shape[0] - 1):
        node = 0
        for k in range(src_offsets[p], src_offsets[p + 1]):
            w = src_words[k]
            node = find(o_keys, o_values, o_n_words, node, o_word_map[w] if w < o_word_map.shape[0] else -1)
            if node < 0:
                break
        q = o_node_phrase[node] if node >= 0 else -1
        if q < 0:
            continue
        for c in range(cand_offsets[p], cand_offsets[p + 1]):
            lo, hi = tgt_offsets[c], tgt_offsets[c + 1]
            for d in range(o_cand_offsets[q], o_cand_offsets[q + 1]):
                olo, ohi = o_tgt_offsets[d], o_tgt_offsets[d + 1]
                if ohi - olo != hi - lo:
                    continue
                same = True
                for k in range(hi - lo):
                    if tgt_words[lo + k] != o_tgt_words[olo + k]:
                        same = False
                        break
                if same:
                    out[c] = d
                    break
    return out


@njit(cache=True, nogil=True)
def top_candidates(cand_offsets, estimates, limit):
    """Indices of the ``limit`` best candidates of every source phrase, and the CSR offsets over them: what pruning
    a table keeps (``PhraseTable.prune``), in one pass without the lock.

    cand_offsets: int64[n_src + 1] CSR over candidates; estimates: float64[n_cand] (higher is better, no NaN);
    limit >= 1. Returns (kept int64[k] in phrase order, best first within a phrase, equal estimates in file
    order: ``np.lexsort((-estimates, phrase))``'s order, cut; new_offsets int64[n_src + 1]). Each phrase's best
    are kept by insertion into its slice of ``kept`` (at most ``limit`` moves a candidate): linear in the
    candidates for a fixed limit, where sorting all of them took most of a start-up's pruning.
    """
    n_src = cand_offsets.shape[0] - 1
    new_offsets = np.zeros(n_src + 1, np.int64)
    for p in range(n_src):
        new_offsets[p + 1] = new_offsets[p] + min(cand_offsets[p + 1] - cand_offsets[p], limit)
    kept = np.empty(new_offsets[n_src], np.int64)
    for p in range(n_src):
        first = new_offsets[p]
        size = 0
        for c in range(cand_offsets[p], cand_offsets[p + 1]):
            value = estimates[c]
            place = size
            while place > 0 and estimates[kept[first + place - 1]] < value:  # an equal one stays before c
                place -= 1
            if place >= limit:
                continue
            last = min(size, limit - 1)
            for k in range(last, place, -1):
                kept[first + k] = kept[first + k - 1]
            kept[first + place] = c
            size = min(size + 1, limit)
    return kept, new_offsets
