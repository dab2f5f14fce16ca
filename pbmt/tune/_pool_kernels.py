"""A kernel that writes decoded n-best lists' hypotheses for tune's pool (``pbmt.tune.pool_lists``) from the lists'
arrays, without the lock: no entry object, no string a word."""

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def hypothesis_text(word_offsets, words, string_offsets, string_bytes):
    """The hypotheses of n entries, entry ``e``'s words ``words[word_offsets[e]:word_offsets[e + 1]]`` (int64, rows
    of the strings ``string_bytes[string_offsets[i]:string_offsets[i + 1]]``, UTF-8), each its words joined by
    spaces (``" ".join``), joined by newlines.

    Returns (text uint8[...]; spans int64[n, 2]: each hypothesis's first and end byte in ``text``; tokens
    int64[len(words), 2]: each word's first byte in ``text`` and its length, as ``References.token_stats``
    reads them)."""
    n = word_offsets.shape[0] - 1
    size = max(n - 1, 0)
    for k in range(words.shape[0]):
        size += string_offsets[words[k] + 1] - string_offsets[words[k]] + 1
    text = np.empty(size, np.uint8)
    spans = np.empty((n, 2), np.int64)
    tokens = np.empty((words.shape[0], 2), np.int64)
    at = 0
    for e in range(n):
        if e:
            text[at] = 10
            at += 1
        spans[e, 0] = at
        for k in range(word_offsets[e], word_offsets[e + 1]):
            if k > word_offsets[e]:
                text[at] = 32
                at += 1
            lo, hi = string_offsets[words[k]], string_offsets[words[k] + 1]
            tokens[k, 0], tokens[k, 1] = at, hi - lo
            for i in range(lo, hi):
                text[at] = string_bytes[i]
                at += 1
        spans[e, 1] = at
    return text[:at], spans, tokens
