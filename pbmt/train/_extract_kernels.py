"""Numba kernels of phrase extraction and alignment choice (see ``pbmt.train.extract``).

The word alignment inside a phrase pair is a ``uint64`` bit mask: bit
``e * 8 + f`` is set when target word ``e`` and source word ``f`` of the
phrase pair (0-based within it) are aligned, so phrases have at most 8 words.
"""

from collections import namedtuple

import numpy as np
from numba import njit

from pbmt.train import MAX_SUPPORTED_LENGTH

MASK_STRIDE = MAX_SUPPORTED_LENGTH  # bits of a phrase pair's alignment mask per target word
MONO, SWAP, OTHER = 0, 1, 2


@njit(cache=True, inline="always")
def _aligned(linked, n_src, n_tgt, f, e):
    """Moses's isAligned: the corners beyond the sentence ends count as aligned."""
    if f == -1 and e == -1:
        return True
    if f < 0 or e < 0:
        return False
    if f == n_src and e == n_tgt:
        return True
    if f >= n_src or e >= n_tgt:
        return False
    return linked[e, f]


@njit(cache=True, inline="always")
def _orientation(left, right):
    if left and not right:
        return MONO
    if right and not left:
        return SWAP
    return OTHER


AlignedCorpus = namedtuple("AlignedCorpus", [
    "src_off", "tgt_off",  # int64[n + 1]: sentence offsets into the source and the target token arrays
    "a_src", "a_tgt",  # int32[points]: the alignment points' source and target positions within their sentence
    "a_off",  # int64[n + 1]: each sentence's points
])
"""A word-aligned corpus as the extraction kernels read it (CSR by sentence)."""

Links = namedtuple("Links", [
    "linked",  # bool[max target words, max source words]: the sentence's alignment as a matrix
    "src_count",  # int64[max source words]: points of each source word
    "src_min_e", "src_max_e",  # int64[max source words]: the first and last target word each is aligned to
    "tgt_min_f", "tgt_max_f",  # int64[max target words]: the first and last source word each is aligned to
])
"""One sentence's alignment, indexed both ways; allocated once for the longest sentence and reused."""

PhrasePairOccurrences = namedtuple("PhrasePairOccurrences", [
    "src", "slen",  # int64, int8[k]: source start (token offset in the corpus) and length
    "tgt", "tlen",  # int64, int8[k]: target start and length
    "mask",  # uint64[k]: the word alignment inside the pair (module docstring)
    "prev", "next",  # uint8[k]: orientation towards the previous and the next target phrase (MONO, SWAP, OTHER)
])
"""Phrase pair occurrences, parallel arrays indexed by occurrence."""


@njit(cache=True)
def _link(s, corpus, links):
    """Fill ``links`` with sentence ``s``'s alignment; returns (source words, target words)."""
    src_off, tgt_off, a_src, a_tgt, a_off = corpus
    linked, src_count, src_min_e, src_max_e, tgt_min_f, tgt_max_f = links
    n_src = src_off[s + 1] - src_off[s]
    n_tgt = tgt_off[s + 1] - tgt_off[s]
    linked[:n_tgt, :n_src] = False
    src_count[:n_src] = 0
    src_min_e[:n_src] = n_tgt
    src_max_e[:n_src] = -1
    tgt_min_f[:n_tgt] = n_src
    tgt_max_f[:n_tgt] = -1
    for p in range(a_off[s], a_off[s + 1]):
        f = a_src[p]
        e = a_tgt[p]
        if linked[e, f]:
            continue
        linked[e, f] = True
        src_count[f] += 1
        src_min_e[f] = min(src_min_e[f], e)
        src_max_e[f] = max(src_max_e[f], e)
        tgt_min_f[e] = min(tgt_min_f[e], f)
        tgt_max_f[e] = max(tgt_max_f[e], f)
    return n_src, n_tgt


@njit(cache=True)
def _sentence(s, corpus, max_len, links, fill, k, out):
    """Extract sentence ``s``'s phrase pairs into ``out`` from occurrence ``k`` on (only counting them unless
    ``fill``); returns the next free occurrence."""
    n_src, n_tgt = _link(s, corpus, links)
    src_start = corpus.src_off[s]
    tgt_start = corpus.tgt_off[s]
    linked, src_count, src_min_e, src_max_e, tgt_min_f, tgt_max_f = links
    o_src, o_slen, o_tgt, o_tlen, o_mask, o_prev, o_next = out
    for start_e in range(n_tgt):
        min_f = n_src
        max_f = -1
        for end_e in range(start_e, min(n_tgt, start_e + max_len)):
            min_f = min(min_f, tgt_min_f[end_e])
            max_f = max(max_f, tgt_max_f[end_e])
            if max_f < 0:
                continue
            if max_f - min_f >= max_len:
                break
            consistent = True
            for f in range(min_f, max_f + 1):
                if src_count[f] > 0 and (src_min_e[f] < start_e or src_max_e[f] > end_e):
                    consistent = False
                    break
            if not consistent:
                continue
            base_mask = np.uint64(0)
            if fill:
                for e in range(start_e, end_e + 1):
                    for f in range(min_f, max_f + 1):
                        if linked[e, f]:
                            base_mask |= np.uint64(1) << np.uint64((e - start_e) * MASK_STRIDE + f - min_f)
            start_f = min_f
            while start_f >= 0 and start_f > max_f - max_len and (start_f == min_f or src_count[start_f] == 0):
                end_f = max_f
                while end_f < n_src and end_f < start_f + max_len and (end_f == max_f or src_count[end_f] == 0):
                    if fill:
                        o_src[k] = src_start + start_f
                        o_slen[k] = end_f - start_f + 1
                        o_tgt[k] = tgt_start + start_e
                        o_tlen[k] = end_e - start_e + 1
                        o_mask[k] = base_mask << np.uint64(min_f - start_f)
                        o_prev[k] = _orientation(
                            _aligned(linked, n_src, n_tgt, start_f - 1, start_e - 1),
                            _aligned(linked, n_src, n_tgt, end_f + 1, start_e - 1),
                        )
                        o_next[k] = _orientation(
                            _aligned(linked, n_src, n_tgt, end_f + 1, end_e + 1),
                            _aligned(linked, n_src, n_tgt, start_f - 1, end_e + 1),
                        )
                    k += 1
                    end_f += 1
                start_f -= 1
    return k


@njit(cache=True)
def _occurrences(total):
    return PhrasePairOccurrences(np.empty(total, dtype=np.int64), np.empty(total, dtype=np.int8),
                                 np.empty(total, dtype=np.int64), np.empty(total, dtype=np.int8),
                                 np.empty(total, dtype=np.uint64), np.empty(total, dtype=np.uint8),
                                 np.empty(total, dtype=np.uint8))


@njit(cache=True)
def extract_kernel(src_off, tgt_off, a_src, a_tgt, a_off, max_len):
    """Every phrase pair occurrence consistent with the alignment, as Moses's ``extract``.

    src_off/tgt_off: int64[n + 1] sentence offsets into the token arrays;
    a_src/a_tgt/a_off: the alignment as CSR (int32 positions within the
    sentence). A phrase pair (source span, target span), both at most
    ``max_len`` words, is extracted when it holds at least one alignment point
    and no point links a word inside it to a word outside; source spans are
    widened over unaligned words at either end. Returns the occurrences as
    ``PhrasePairOccurrences``: source start (int64 token offset), source
    length (int8), target start, target length, alignment mask (uint64), and
    the word-based orientation towards the previous and the next target
    phrase (uint8: 0 monotone, 1 swap, 2 discontinuous).
    """
    corpus = AlignedCorpus(src_off, tgt_off, a_src, a_tgt, a_off)
    n_sent = src_off.shape[0] - 1
    max_src = 1
    max_tgt = 1
    for s in range(n_sent):
        max_src = max(max_src, src_off[s + 1] - src_off[s])
        max_tgt = max(max_tgt, tgt_off[s + 1] - tgt_off[s])
    links = Links(np.zeros((max_tgt, max_src), dtype=np.bool_), np.zeros(max_src, dtype=np.int64),
                  np.zeros(max_src, dtype=np.int64), np.zeros(max_src, dtype=np.int64),
                  np.zeros(max_tgt, dtype=np.int64), np.zeros(max_tgt, dtype=np.int64))
    # a typed flag and counters, not constants: a literal argument would compile _sentence once per value
    count_only, fill = np.bool_(False), np.bool_(True)
    total = np.int64(0)
    none = _occurrences(0)
    for s in range(n_sent):
        total = _sentence(s, corpus, max_len, links, count_only, total, none)
    out = _occurrences(total)
    k = np.int64(0)
    for s in range(n_sent):
        k = _sentence(s, corpus, max_len, links, fill, k, out)
    return out


@njit(cache=True)
def best_alignments(pair_starts, mask_of_group, count_of_group, set_rank):
    """For each phrase pair, the alignment Moses's ``score`` picks in each direction.

    Groups are (phrase pair, distinct alignment) with their counts, sorted by
    pair; pair ``p`` has groups ``pair_starts[p] .. pair_starts[p + 1]``.
    Moses takes the most frequent alignment and breaks ties by the larger one,
    comparing alignments as vectors, over the words of the predicted side
    (target words for lex(e|f), source words for lex(f|e)), of the sorted sets
    of positions each word is aligned to; ``set_rank[b]`` is the rank of the
    8-bit set ``b`` in that lexicographic order.
    Returns (direct uint64[n_pairs], inverse uint64[n_pairs]) masks.
    """
    n_pairs = pair_starts.shape[0] - 1
    direct = np.empty(n_pairs, dtype=np.uint64)
    inverse = np.empty(n_pairs, dtype=np.uint64)
    for p in range(n_pairs):
        best_d = -1
        best_i = -1
        key_d_best = np.uint64(0)
        key_i_best = np.uint64(0)
        for g in range(pair_starts[p], pair_starts[p + 1]):
            mask = mask_of_group[g]
            c = count_of_group[g]
            key_d = np.uint64(0)
            key_i = np.uint64(0)
            for a in range(MASK_STRIDE):
                row = np.uint64(0)
                col = np.uint64(0)
                for b in range(MASK_STRIDE):
                    row |= ((mask >> np.uint64(a * MASK_STRIDE + b)) & np.uint64(1)) << np.uint64(b)
                    col |= ((mask >> np.uint64(b * MASK_STRIDE + a)) & np.uint64(1)) << np.uint64(b)
                key_d = (key_d << np.uint64(8)) | np.uint64(set_rank[row])
                key_i = (key_i << np.uint64(8)) | np.uint64(set_rank[col])
            if c > best_d or (c == best_d and key_d > key_d_best):
                best_d = c
                key_d_best = key_d
                direct[p] = mask
            if c > best_i or (c == best_i and key_i > key_i_best):
                best_i = c
                key_i_best = key_i
                inverse[p] = mask
    return direct, inverse
