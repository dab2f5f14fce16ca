"""Numba kernels of the block family's scores (``pbmt.model.block_features``).

The weighted feature names are compiled into id-keyed hash tables
(``pbmt.base.hashtable``): a trie numbers every source and target phrase
the names mention (node 0 is the empty phrase; node ``k`` is the pair (its
prefix's node, its last word id)), and each kind is a table over a pair of
integers whose value indexes that kind's weights:

=========  ===================================  ================================
table      key (parent, word)                   value indexes
=========  ===================================  ================================
block      (source phrase node, target node)    ``block_weight``, ``orient[:, 3]``
length     (target node, source length)         ``length_weight``
word       (source word id, target word id)     ``word_weight``
bigram     (last word id, first word id)        ``bigram_weight``
=========  ===================================  ================================

Lookups are exact (the hash tables compare whole keys), so a phrase pair
gets exactly the weights of the names its words spell.
"""

from collections import namedtuple

import numpy as np
from numba import njit

from pbmt.base.hashtable import find

BlockTables = namedtuple("BlockTables", [
    "n_vocab",  # int: ids below it are the words the tables know
    "trie_keys", "trie_values",  # the phrase trie: (node, word id) -> node
    "n_nodes",  # int: number of trie nodes (the root included)
    "block_keys", "block_values",  # (source node, target node) -> row of block_weight and orient
    "block_weight",  # float64[n_block]: weight of blk:S|T
    "orient",  # float64[n_block, 3]: weights of ori:R:S|T, ori:L:S|T, ori:N:S|T (msd order)
    "max_length",  # int: one more than the largest source length in a len: name
    "length_keys", "length_values", "length_weight",  # (target node, source length) -> weight of len:T|n
    "word_keys", "word_values", "word_weight",  # (source word, target word) -> weight of w:s|t
    "bigram_keys", "bigram_values", "bigram_weight",  # (last word, first word) -> weight of bi:l|f
])
"""The block family's weights as kernels read them (see the module docstring)."""


@njit(cache=True)
def _node(t, words, lo, hi):
    """The trie node of the phrase ``words[lo:hi]``, or -1 when no name mentions it."""
    node = np.int64(0)
    for k in range(lo, hi):
        node = find(t.trie_keys, t.trie_values, t.n_vocab, node, words[k])
        if node < 0:
            return node
    return node


@njit(cache=True)
def _first_at(words, lo, k):
    """Whether ``words[k]`` does not occur in ``words[lo:k]`` (word pairs count distinct words once)."""
    for j in range(lo, k):
        if words[j] == words[k]:
            return False
    return True


@njit(cache=True)
def pair_scores(t, pair_source, src_offsets, src_words, tgt_offsets, tgt_words, local, orient):
    """Weighted option-local block features of phrase pairs, and their orientation weights.

    Pair ``c`` has source phrase ``src_words[src_offsets[p]:src_offsets[p + 1]]`` with
    ``p = pair_source[c]`` (int64[n]) and target phrase ``tgt_words[tgt_offsets[c]:tgt_offsets[c + 1]]``.
    Writes ``local[c]`` (float64[n]: block + length + distinct word pairs, natural log) and ``orient[c]``
    (float64[n, 3]: weights of the orientation x block feature in msd order).
    """
    for c in range(pair_source.shape[0]):
        p = pair_source[c]
        s_lo, s_hi = src_offsets[p], src_offsets[p + 1]
        t_lo, t_hi = tgt_offsets[c], tgt_offsets[c + 1]
        total = 0.0
        orient[c, :] = 0.0
        target = _node(t, tgt_words, t_lo, t_hi)
        if target >= 0:
            source = _node(t, src_words, s_lo, s_hi)
            if source >= 0:
                row = find(t.block_keys, t.block_values, t.n_nodes, source, target)
                if row >= 0:
                    total += t.block_weight[row]
                    orient[c, :] = t.orient[row]
            row = find(t.length_keys, t.length_values, t.max_length, target, s_hi - s_lo)
            if row >= 0:
                total += t.length_weight[row]
        if t.word_weight.shape[0]:
            for a in range(s_lo, s_hi):
                if not _first_at(src_words, s_lo, a):
                    continue
                for b in range(t_lo, t_hi):
                    if _first_at(tgt_words, t_lo, b):
                        row = find(t.word_keys, t.word_values, t.n_vocab, src_words[a], tgt_words[b])
                        if row >= 0:
                            total += t.word_weight[row]
        local[c] = total


@njit(cache=True)
def bigram_scores(t, lasts, firsts, bos, eos, out):
    """``out[r, l]`` (float64[len(lasts) + 1, len(firsts) + 1]): weight of the bigram (lasts[r], firsts[l]);
    the last row is the sentence start (word ``bos``), the last column its end (word ``eos``)."""
    for r in range(lasts.shape[0] + 1):
        last = lasts[r] if r < lasts.shape[0] else bos
        for col in range(firsts.shape[0] + 1):
            first = firsts[col] if col < firsts.shape[0] else eos
            row = find(t.bigram_keys, t.bigram_values, t.n_vocab, last, first)
            out[r, col] = t.bigram_weight[row] if row >= 0 else 0.0
