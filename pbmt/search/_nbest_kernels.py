"""Numba kernels that read the best derivations out of a search graph.

The graph is the decoder's hypothesis pool (``SearchGraph``): hypothesis ``h``
extended ``parent[h]`` by ``option[h]`` to the accumulated score ``score[h]``,
and ``klass[h]`` is its recombination class. Members of one class continue
identically, so swapping a hypothesis on a path for another member of its class
changes the path's score by the difference of their accumulated scores. The
k-best paths are enumerated lazily, best first, with one heap of candidate
paths: a candidate is "member ``rank`` of class ``c`` (not counting ``skip``),
followed by a fixed suffix of options". Popping one yields its path and pushes
(a) the next member of the same class and (b) for every hypothesis ``x`` on the
path's prefix, the best other member of ``x``'s class with the rest of the path
as its suffix. Every complete derivation in the graph is reached exactly once.
"""

import numpy as np
from numba import njit

from pbmt.search._array_kernels import grow1, grow2

# Columns of a candidate's integer fields (``k_best_paths``'s ``entry``).
HYP, CLASS, RANK, SKIP, SUFFIX, SUFFIX_LEN = range(6)


# Called by kernels only: compiled without the CPython and C-function wrappers a call from Python needs
# (their unboxing of tuples of arrays is compiled and optimised anew; docs/decoding.md, "The first run").
@njit(cache=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)
def best_hypothesis(score, klass, final_class):
    """The best complete hypothesis: the highest-scoring member of ``final_class``."""
    best = -1
    for h in range(score.shape[0]):
        if klass[h] == final_class and (best < 0 or score[h] > score[best]):
            best = h
    return best


@njit(cache=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)
def _class_members(score, klass, n_class):
    """Members of every class, best first: class ``c`` is ``members[offsets[c]:offsets[c + 1]]``."""
    counts = np.zeros(n_class + 1, dtype=np.int64)
    for h in range(klass.shape[0]):
        counts[klass[h] + 1] += 1
    offsets = np.cumsum(counts)
    fill = offsets[:-1].copy()
    members = np.empty(klass.shape[0], dtype=np.int32)
    for h in range(klass.shape[0]):
        members[fill[klass[h]]] = h
        fill[klass[h]] += 1
    for c in range(n_class):
        lo, hi = offsets[c], offsets[c + 1]
        for i in range(lo + 1, hi):  # insertion sort: classes are small
            m = members[i]
            j = i
            while j > lo and score[members[j - 1]] < score[m]:
                members[j] = members[j - 1]
                j -= 1
            members[j] = m
    return members, offsets


@njit(cache=True, inline="always")
def _member(members, offsets, c, rank, skip):
    """Hypothesis of rank ``rank`` in class ``c`` when ``skip`` (-1: none) is left out; -1 past the end."""
    lo, hi = offsets[c], offsets[c + 1]
    if skip >= 0:
        for i in range(lo, hi):
            if members[i] == skip:
                if rank >= i - lo:
                    rank += 1
                break
    if lo + rank < hi:
        return members[lo + rank]
    return -1


@njit(cache=True, inline="always")
def _before(total, a, b):
    """Heap order: higher total first, then the earlier candidate (candidates are numbered as pushed)."""
    return total[a] > total[b] or (total[a] == total[b] and a < b)


@njit(cache=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)
def _heap_push(heap, size, total, e):
    heap[size] = e
    i = size
    while i > 0:
        up = (i - 1) >> 1
        if not _before(total, heap[i], heap[up]):
            break
        heap[i], heap[up] = heap[up], heap[i]
        i = up
    return size + 1


@njit(cache=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)
def _heap_pop(heap, size, total):
    top = heap[0]
    size -= 1
    heap[0] = heap[size]
    i = 0
    while True:
        left = 2 * i + 1
        if left >= size:
            break
        child = left
        if left + 1 < size and _before(total, heap[left + 1], heap[left]):
            child = left + 1
        if not _before(total, heap[child], heap[i]):
            break
        heap[i], heap[child] = heap[child], heap[i]
        i = child
    return top, size


@njit(cache=True, inline="always")
def _push_candidate(heap, size, total, entry, e, score, hyp, c, rank, skip, suffix, suffix_len):
    """Store candidate ``e`` (member ``rank`` of class ``c`` leaving out ``skip``, then a suffix) and push it.

    Returns the new heap size.
    """
    total[e] = score
    entry[e, HYP], entry[e, CLASS], entry[e, RANK], entry[e, SKIP] = hyp, c, rank, skip
    entry[e, SUFFIX], entry[e, SUFFIX_LEN] = suffix, suffix_len
    return _heap_push(heap, size, total, e)


@njit(cache=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)
def _hash_words(words, lo, hi):
    x = np.uint64(0xCBF29CE484222325)
    for k in range(lo, hi):
        x = (x ^ np.uint64(words[k] + 1)) * np.uint64(0x100000001B3)
    return x


@njit(cache=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)
def _same_words(words, a_lo, a_hi, b_lo, b_hi):
    if a_hi - a_lo != b_hi - b_lo:
        return False
    for i in range(a_hi - a_lo):
        if words[a_lo + i] != words[b_lo + i]:
            return False
    return True


@njit(cache=True, nogil=True)
def best_path(parent, option, score, klass, final_class):
    """``k_best_paths`` for one path: the back pointers of the best complete hypothesis, with no heap (a
    small kernel, so a 1-best decode never compiles the n-best one). Arguments and result as
    ``k_best_paths``'s."""
    h = best_hypothesis(score, klass, final_class)
    depth = 0
    x = h
    while x > 0:
        depth += 1
        x = parent[x]
    out_options = np.empty(depth, dtype=np.int32)
    x = h
    for i in range(depth - 1, -1, -1):
        out_options[i] = option[x]
        x = parent[x]
    out_offsets = np.zeros(2, dtype=np.int64)
    out_offsets[1] = depth
    out_totals = np.empty(1, dtype=np.float64)
    out_totals[0] = score[h]
    return out_offsets, out_options, out_totals


@njit(cache=True, nogil=True)
def k_best_paths(parent, option, score, klass, n_class, final_class, n_best, distinct, tgt_offsets, tgt_words):
    """The ``n_best`` best complete paths of a search graph, best first.

    parent, option, klass: int32[h]; score: float64[h] (natural log, weighted);
    ``n_class`` classes, complete hypotheses in ``final_class`` (>= 0).
    ``distinct``: skip a path whose target words (from the options' ``tgt_offsets``,
    ``tgt_words``) equal a better path's. Returns (path_offsets int64[k + 1],
    path_options int32[...], totals float64[k]): path ``i`` uses the options
    ``path_options[path_offsets[i]:path_offsets[i + 1]]`` in target order.
    """
    out_offsets = np.zeros(n_best + 1, dtype=np.int64)
    out_options = np.empty(64, dtype=np.int32)
    out_totals = np.empty(n_best, dtype=np.float64)
    members, offsets = _class_members(score, klass, n_class)
    cap = 64
    e_total = np.empty(cap)
    entry = np.empty((cap, 6), dtype=np.int64)  # columns HYP ... SUFFIX_LEN; SUFFIX starts in suffix_pool
    heap = np.empty(cap, dtype=np.int64)
    # counters start as int64, not as the literal 0: a kernel called with a literal compiles once more for it
    n_entry = np.int64(0)
    size = np.int64(0)
    suffix_pool = np.empty(256, dtype=np.int32)
    n_suffix = 0
    chain = np.empty(64, dtype=np.int32)
    seen_hash = np.empty(max(n_best, 1), dtype=np.uint64)
    words = np.empty(256, dtype=np.int32)  # target words of the paths produced, when distinct
    word_offsets = np.zeros(n_best + 1, dtype=np.int64)
    n_words = np.int64(0)
    produced = 0

    best = members[offsets[final_class]]
    size = _push_candidate(heap, size, e_total, entry, 0, score[best], best, final_class, 0, -1, 0, 0)
    n_entry = 1
    while size > 0 and produced < n_best:
        e, size = _heap_pop(heap, size, e_total)
        total, h, c, rank, skip = e_total[e], entry[e, HYP], entry[e, CLASS], entry[e, RANK], entry[e, SKIP]
        s_lo, s_len = entry[e, SUFFIX], entry[e, SUFFIX_LEN]
        # candidates this entry implies: its class's next member, then each prefix hypothesis's best alternative
        depth = 0
        x = h
        while x > 0:
            if depth == chain.shape[0]:
                chain = grow1(chain, 2 * depth)
            chain[depth] = x
            depth += 1
            x = parent[x]
        needed = n_entry + depth + 1
        if needed > e_total.shape[0]:
            cap = 2 * needed
            e_total, entry, heap = grow1(e_total, cap), grow2(entry, cap), grow1(heap, cap)
        nxt = _member(members, offsets, c, rank + 1, skip)
        if nxt >= 0:
            size = _push_candidate(heap, size, e_total, entry, n_entry, total - score[h] + score[nxt], nxt, c,
                                   rank + 1, skip, s_lo, s_len)
            n_entry += 1
        for k in range(1, depth):
            x = chain[k]
            alt = _member(members, offsets, klass[x], 0, x)
            if alt < 0:
                continue
            # the new suffix: the options after x on this path, then this entry's suffix
            length = k + s_len
            if n_suffix + length > suffix_pool.shape[0]:
                suffix_pool = grow1(suffix_pool, 2 * (n_suffix + length))
            for i in range(k):
                suffix_pool[n_suffix + i] = option[chain[k - 1 - i]]
            for i in range(s_len):
                suffix_pool[n_suffix + k + i] = suffix_pool[s_lo + i]
            size = _push_candidate(heap, size, e_total, entry, n_entry, total - score[x] + score[alt], alt,
                                   klass[x], 0, x, n_suffix, length)
            n_entry += 1
            n_suffix += length
        # the path itself
        lo = out_offsets[produced]
        length = depth + s_len
        if lo + length > out_options.shape[0]:
            out_options = grow1(out_options, 2 * (lo + length))
        for i in range(depth):
            out_options[lo + i] = option[chain[depth - 1 - i]]
        for i in range(s_len):
            out_options[lo + depth + i] = suffix_pool[s_lo + i]
        if distinct:
            w_lo = n_words
            for i in range(length):
                o = out_options[lo + i]
                for t in range(tgt_offsets[o], tgt_offsets[o + 1]):
                    if n_words == words.shape[0]:
                        words = grow1(words, 2 * n_words)
                    words[n_words] = tgt_words[t]
                    n_words += 1
            key = _hash_words(words, w_lo, n_words)
            duplicate = False
            for p in range(produced):
                if seen_hash[p] == key and _same_words(words, word_offsets[p], word_offsets[p + 1], w_lo, n_words):
                    duplicate = True
                    break
            if duplicate:
                n_words = w_lo
                continue
            seen_hash[produced] = key
            word_offsets[produced + 1] = n_words
        out_totals[produced] = total
        out_offsets[produced + 1] = lo + length
        produced += 1
    return out_offsets[:produced + 1], out_options[:out_offsets[produced]], out_totals[:produced]
