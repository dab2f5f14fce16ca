"""A numba kernel that lays out the derivations of an n-best list as arrays (``pbmt.search.output``).

Derivation ``i`` uses the options ``chosen[path_offsets[i]:path_offsets[i + 1]]`` of one sentence, in target
order; what an n-best entry shows of it (its target words, segmentation and word alignment) comes from the
options' arrays (``TranslationOptions``) alone, so all of a sentence's derivations are laid out in one call
without the lock.
"""

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
