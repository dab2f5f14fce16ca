"""Open-addressing hash table over (parent, word) pairs, as numba kernels.

Both the phrase table's source trie and the language model's n-gram trie are
stored as one such table: node ``k`` of a trie is the pair (its parent node,
its last word), so a phrase or n-gram is found by walking from the root, one
probe per word. Keys are ``parent * n_words + word`` (``int64``); empty slots
hold -1. The capacity is a power of two at least twice the number of keys.
"""

import numpy as np
from numba import njit

_EMPTY = -1


@njit(cache=True, inline="always")
def _slot(key, mask):
    h = np.uint64(key) * np.uint64(0x9E3779B97F4A7C15)
    h ^= h >> np.uint64(29)
    return np.int64(h & np.uint64(mask))


@njit(cache=True)
def table_capacity(n):
    """Number of slots for a table of ``n`` keys: a power of two, at least 2n and 16."""
    capacity = 16
    while capacity < 2 * n:
        capacity *= 2
    return capacity


@njit(cache=True)
def build_table(parents, words, n_words):
    """Hash table with key (parents[i], words[i]) -> value i.

    parents: int64[n], words: int32[n], distinct pairs; entries whose parent
    is negative (a trie's root) are not stored. Returns
    (keys int64[capacity], values int64[capacity]).
    """
    n = parents.shape[0]
    capacity = table_capacity(n)
    keys = np.full(capacity, _EMPTY, dtype=np.int64)
    values = np.full(capacity, _EMPTY, dtype=np.int64)
    for i in range(n):
        if parents[i] < 0:
            continue
        s, new = insert(keys, n_words, parents[i], words[i])
        if new:
            values[s] = i
    return keys, values


@njit(cache=True, inline="always")
def insert(keys, n_words, parent, word):
    """Store the key (parent, word) in ``keys`` (which must have a free slot).

    Returns (its slot, True), or (the slot already holding it, False).
    """
    key = parent * n_words + word
    mask = keys.shape[0] - 1
    s = _slot(key, mask)
    while keys[s] != _EMPTY:
        if keys[s] == key:
            return s, False
        s = (s + 1) & mask
    keys[s] = key
    return s, True


@njit(cache=True, inline="always")
def find_slot(keys, n_words, parent, word):
    """The slot holding the key (parent, word), or -1 if absent.

    Lets a caller keep its values in its own per-slot arrays.
    """
    if word < 0 or word >= n_words or parent < 0:
        return _EMPTY
    key = parent * n_words + word
    mask = keys.shape[0] - 1
    s = _slot(key, mask)
    while True:
        k = keys[s]
        if k == key:
            return s
        if k == _EMPTY:
            return _EMPTY
        s = (s + 1) & mask


@njit(cache=True, inline="always")
def find(keys, values, n_words, parent, word):
    """The value stored for (parent, word), or -1 if absent."""
    s = find_slot(keys, n_words, parent, word)
    return values[s] if s >= 0 else _EMPTY
