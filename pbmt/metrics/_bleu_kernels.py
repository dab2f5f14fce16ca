"""Numba kernel: BLEU sufficient statistics of hypotheses against reference tries.

The references of every set are stored as one trie in ``pbmt.base.hashtable``
(node = (parent node, last word); nodes ``0 .. n_sets-1`` are the roots of the
sets), and every non-root node carries its clipping count: the largest number of
times its n-gram occurs in any one reference of the set.
"""

import numpy as np
from numba import njit

from pbmt.base.hashtable import find


@njit(cache=True)
def hypothesis_stats(
    hyp_offsets, hyp_words, hyp_set, set_offsets, ref_lengths, keys, values, n_words, clip, max_order
):
    """Per-hypothesis statistics ``[hyp_len, ref_len, matches_1..N, totals_1..N]``.

    hyp_offsets: int64[n+1] and hyp_words: int32[...] (CSR: hypothesis ``h`` is
    ``hyp_words[hyp_offsets[h]:hyp_offsets[h+1]]``); hyp_set: int64[n], the
    reference set of each hypothesis (also the id of that set's trie root).
    set_offsets: int64[n_sets+1] into ref_lengths: int64[n_refs].
    keys, values: the trie's hash table; n_words: its word-id bound; clip:
    int64[n_nodes], the clipping count of each node; max_order: N.

    ref_len is the reference length closest to hyp_len (ties: the shorter).
    Returns int64[n, 2 + 2N].
    """
    n = hyp_set.shape[0]
    out = np.zeros((n, 2 + 2 * max_order), dtype=np.int64)
    longest = 0
    for h in range(n):
        longest = max(longest, hyp_offsets[h + 1] - hyp_offsets[h])
    # used[node]: occurrences of node's n-gram seen so far in the current
    # hypothesis; an occurrence matches while used <= clip, which counts
    # min(hypothesis count, clip) matches without sorting the hypothesis.
    used = np.zeros(clip.shape[0], dtype=np.int64)
    touched = np.empty(max(longest * max_order, 1), dtype=np.int64)
    for h in range(n):
        start = hyp_offsets[h]
        end = hyp_offsets[h + 1]
        length = end - start
        root = hyp_set[h]

        closest = -1
        for r in range(set_offsets[root], set_offsets[root + 1]):
            ref_len = ref_lengths[r]
            if closest < 0:
                closest = ref_len
                continue
            diff = abs(length - ref_len)
            best = abs(length - closest)
            if diff < best or (diff == best and ref_len < closest):
                closest = ref_len
        out[h, 0] = length
        out[h, 1] = closest
        for k in range(max_order):
            out[h, 2 + max_order + k] = max(length - k, 0)

        n_touched = 0
        for i in range(start, end):
            node = root
            for k in range(min(max_order, end - i)):
                node = find(keys, values, n_words, node, hyp_words[i + k])
                if node < 0:
                    break
                used[node] += 1
                touched[n_touched] = node
                n_touched += 1
                if used[node] <= clip[node]:
                    out[h, 2 + k] += 1
        for t in range(n_touched):
            used[touched[t]] = 0
    return out
