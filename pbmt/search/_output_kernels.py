"""A numba kernel that lays out the derivations of an n-best list as arrays (``pbmt.search.output``).

Derivation ``i`` uses the options ``chosen[path_offsets[i]:path_offsets[i + 1]]`` of one sentence, in target
order; what an n-best entry shows of it (its target words, segmentation and word alignment) comes from the
options' arrays (``TranslationOptions``) alone, so all of a sentence's derivations are laid out in one call
without the lock.
"""

from collections import namedtuple

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def path_layout(path_offsets, chosen, opt_start, opt_end, tgt_offsets, tgt_words, align_offsets, align):
    """Returns (``used`` int64[u]: the word ids the derivations' targets hold, ascending; ``words`` int64[sum of
    target lengths]: each derivation's target words in order as rows of ``used``, CSR by ``word_offsets``
    int64[n + 1]; ``blocks`` int64[len(chosen), 4]: each block's source start and end, and
    target start and end within its derivation (ends exclusive), CSR by ``path_offsets``; ``links``
    int64[l, 2]: each derivation's (source, target) word links, the options' ``align`` placed at their blocks,
    sorted, CSR by ``link_offsets`` int64[n + 1]).

    ``path_offsets`` int64[n + 1], ``chosen`` int32[m]; ``opt_start``, ``opt_end``, ``tgt_offsets``,
    ``tgt_words``, ``align_offsets``, ``align`` (int16[k, 2]) as ``TranslationOptions`` has them.
    """
    n, m = path_offsets.shape[0] - 1, chosen.shape[0]
    n_words = n_links = 0
    for b in range(m):
        o = chosen[b]
        n_words += tgt_offsets[o + 1] - tgt_offsets[o]
        n_links += align_offsets[o + 1] - align_offsets[o]
    words = np.empty(n_words, np.int64)
    word_offsets = np.zeros(n + 1, np.int64)
    blocks = np.empty((m, 4), np.int64)
    links = np.empty((n_links, 2), np.int64)
    link_offsets = np.zeros(n + 1, np.int64)
    keys = np.empty(n_links, np.int64)
    w = k = 0
    for i in range(n):
        first_link = k
        length = 0
        for b in range(path_offsets[i], path_offsets[i + 1]):
            o = chosen[b]
            start = opt_start[o]
            for t in range(tgt_offsets[o], tgt_offsets[o + 1]):
                words[w] = tgt_words[t]
                w += 1
            for a in range(align_offsets[o], align_offsets[o + 1]):
                links[k, 0] = start + align[a, 0]
                links[k, 1] = length + align[a, 1]
                k += 1
            blocks[b, 0], blocks[b, 1], blocks[b, 2] = start, opt_end[o], length
            length += tgt_offsets[o + 1] - tgt_offsets[o]
            blocks[b, 3] = length
        for a in range(first_link, k):  # one key orders by (source, target)
            keys[a] = links[a, 0] * (length + 1) + links[a, 1]
        keys[first_link:k] = np.sort(keys[first_link:k])
        for a in range(first_link, k):
            links[a, 0], links[a, 1] = keys[a] // (length + 1), keys[a] % (length + 1)
        word_offsets[i + 1] = w
        link_offsets[i + 1] = k
    used = np.unique(words)
    return used, np.searchsorted(used, words), word_offsets, blocks, links, link_offsets


# the block family's keys given whole (see ``path_sparse``); empty arrays: the family is off
BlockKeys = namedtuple("BlockKeys", ["local_offsets", "local_keys", "orient_keys", "pair_keys", "end_keys"])


@njit(cache=True, nogil=True)
def path_sparse(path_offsets, chosen, opt_start, opt_end, left_key, right_key, bos, eos, n_keys, jump_bins,
                jump_base, block):
    """Each derivation's sparse features as keys (int64, ascending) and counts (float64), CSR by
    ``offsets`` int64[n + 1]: returns ``(offsets, keys, counts)``.

    A key numbers one feature; ascending keys are the order an n-best entry lists them in. Three families, each left
    out when its arrays are empty: the boundary family, key ``right_key[previous option] * n_keys +
    left_key[option]`` at each block boundary (``bos``/``eos`` the keys of the sentence's start and end; ``n_keys``
    0: none); the distortion bins, key ``jump_base + jump_bins[jump + MAX_JUMP]`` for each block's jump
    (``jump_bins`` int64[2 * MAX_JUMP + 1], empty: none); and the keys ``block`` (``BlockKeys``) gives whole: each
    option's own (``local_keys[local_offsets[o]:local_offsets[o + 1]]``, CSR over the options), its key in each
    orientation to its predecessor (``orient_keys[o, k]``, int64[n_opt, 3], k = 0 monotone, 1 swap, 2 discontinuous;
    -1: none), each block's boundary key (``pair_keys`` int64[len(chosen)], aligned with ``chosen``; -1: none) and
    each derivation's key at the sentence end (``end_keys`` int64[n]; -1: none).

    ``path_offsets`` int64[n + 1] and ``chosen`` int32[m] as ``path_layout``'s; ``opt_start``, ``opt_end``
    the options' source spans.
    """
    local_offsets, local_keys, orient_keys = block.local_offsets, block.local_keys, block.orient_keys
    pair_keys, end_keys = block.pair_keys, block.end_keys
    n = path_offsets.shape[0] - 1
    max_jump = (jump_bins.shape[0] - 1) // 2
    bound = 0
    for b in range(chosen.shape[0]):
        o = chosen[b]
        bound += 4 + local_offsets[o + 1] - local_offsets[o]
    bound += 2 * n
    keys = np.empty(bound, np.int64)
    counts = np.empty(bound, np.float64)
    offsets = np.zeros(n + 1, np.int64)
    w = 0
    for i in range(n):
        lo = w
        prev_start, prev_end, prev = 0, 0, -1
        for b in range(path_offsets[i], path_offsets[i + 1]):
            o = chosen[b]
            start, end = opt_start[o], opt_end[o]
            if n_keys > 0:
                keys[w] = (bos if prev < 0 else right_key[prev]) * n_keys + left_key[o]
                w += 1
            if jump_bins.shape[0] > 0:
                keys[w] = jump_base + jump_bins[min(max(start - prev_end, -max_jump), max_jump) + max_jump]
                w += 1
            for k in range(local_offsets[o], local_offsets[o + 1]):
                keys[w] = local_keys[k]
                w += 1
            orientation = 0 if start == prev_end else (1 if end == prev_start else 2)
            if orient_keys.shape[0] > 0 and orient_keys[o, orientation] >= 0:
                keys[w] = orient_keys[o, orientation]
                w += 1
            if pair_keys.shape[0] > 0 and pair_keys[b] >= 0:
                keys[w] = pair_keys[b]
                w += 1
            prev_start, prev_end, prev = start, end, o
        if n_keys > 0:
            keys[w] = (bos if prev < 0 else right_key[prev]) * n_keys + eos
            w += 1
        if end_keys.shape[0] > 0 and end_keys[i] >= 0:
            keys[w] = end_keys[i]
            w += 1
        keys[lo:w] = np.sort(keys[lo:w])
        r = lo  # count equal keys in place
        for k in range(lo, w):
            if k > lo and keys[k] == keys[r - 1]:
                counts[r - 1] += 1.0
            else:
                keys[r] = keys[k]
                counts[r] = 1.0
                r += 1
        w = r
        offsets[i + 1] = w
    return offsets, keys[:w].copy(), counts[:w].copy()
