"""A numba kernel that writes a sentence's n-best entries as Moses n-best lines (UTF-8 bytes) from arrays.

It writes what ``pbmt.base.nbest.moses_line`` writes for each entry, byte for byte, without the lock: numbers as
``%d`` and ``%.6g`` write them (``pbmt.base.byte_text.write_g6``), the words and feature names from their UTF-8
bytes. A line with a number ``write_g6`` leaves to Python is not written: the caller writes it with
``moses_line``.
"""

from collections import namedtuple

import numpy as np
from numba import njit

from pbmt.base.byte_text import G6_MAX_BYTES, write_g6, write_int

_INT_BYTES = 20  # the longest int64 written: '-9223372036854775808'

Entries = namedtuple("Entries", [
    "word_offsets",  # int64[n + 1]: CSR of ``words``
    "words",  # int64[w]: each entry's hypothesis, its words as rows of the words' ``Strings``
    "values",  # float64[n, d]: each entry's dense feature values, in the order written
    "sparse_offsets",  # int64[n + 1]: CSR of ``sparse_names`` and ``sparse_values``
    "sparse_names",  # int64[s]: each entry's sparse features, as rows of the names' ``Strings``
    "sparse_values",  # float64[s]
    "totals",  # float64[n]: each entry's model score
    "block_offsets",  # int64[n + 1]: CSR of ``blocks``
    "blocks",  # int64[m, 4]: each entry's segmentation: source start, end, target start, end (ends exclusive)
    "link_offsets",  # int64[n + 1]: CSR of ``links``
    "links",  # int64[l, 2]: each entry's word alignment, (source, target) points
])
"""A sentence's n-best entries as arrays."""

Strings = namedtuple("Strings", [
    "offsets",  # int64[k + 1]
    "bytes",  # uint8[sum of lengths]: string ``i`` is ``bytes[offsets[i]:offsets[i + 1]]``, UTF-8
])
"""Strings as one CSR of their bytes."""


@njit(cache=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)
def _separator(out, at):
    """Write ' ||| '."""
    out[at], out[at + 1], out[at + 2], out[at + 3], out[at + 4] = 32, 124, 124, 124, 32
    return at + 5


@njit(cache=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)
def _copy(out, at, source, start, end):
    for i in range(start, end):
        out[at] = source[i]
        at += 1
    return at


@njit(cache=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)
def _span(out, at, start, end):
    """A segmentation range as ``pbmt.base.nbest.format_block`` writes one: ``start``, or ``start-(end - 1)``."""
    at = write_int(out, at, start)
    if end - start != 1:
        out[at] = 45
        at = write_int(out, at + 1, end - 1)
    return at


@njit(cache=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)
def _line_bound(i, entries, words, names, group_sizes):
    """More bytes than entry ``i``'s line takes."""
    e = entries
    n = _INT_BYTES + 4 * 5 + 1 + G6_MAX_BYTES
    for w in range(e.word_offsets[i], e.word_offsets[i + 1]):
        n += words.offsets[e.words[w] + 1] - words.offsets[e.words[w]] + 1
    for g in range(group_sizes.shape[0]):
        n += names.offsets[g + 1] - names.offsets[g] + 3 + group_sizes[g] * (G6_MAX_BYTES + 1)
    for s in range(e.sparse_offsets[i], e.sparse_offsets[i + 1]):
        n += names.offsets[e.sparse_names[s] + 1] - names.offsets[e.sparse_names[s]] + 3 + G6_MAX_BYTES + 1
    n += (e.block_offsets[i + 1] - e.block_offsets[i]) * (4 * _INT_BYTES + 5)
    n += (e.link_offsets[i + 1] - e.link_offsets[i]) * (2 * _INT_BYTES + 2)
    return n


@njit(cache=True, nogil=True)
def write_lines(sentence, entries, words, names, group_sizes):
    """The n-best lines of one sentence's ``n`` entries (``Entries``), newlines included.

    Entry ``i``'s line: ``sentence``; its hypothesis, its words (rows of ``words``, ``Strings``) separated by
    spaces; its dense features in groups of ``group_sizes`` (int64[g]) values, named by names 0 .. g - 1 of
    ``names`` (``Strings``), then its sparse features (names: rows of ``names``); its model score; its
    segmentation and word alignment, where it has a block.

    Returns (the lines, uint8[n_bytes]; each line's first byte and the end, int64[n + 1]; whether each line is
    written, bool[n]: a line holding a number ``write_g6`` leaves to Python is empty).
    """
    e = entries
    n = e.totals.shape[0]
    size = 0
    for i in range(n):
        size += _line_bound(i, e, words, names, group_sizes)
    out = np.empty(size, np.uint8)
    line_offsets = np.zeros(n + 1, np.int64)
    written = np.ones(n, np.bool_)
    at = 0
    for i in range(n):
        line = at
        at = _separator(out, write_int(out, at, sentence))
        for w in range(e.word_offsets[i], e.word_offsets[i + 1]):
            if w > e.word_offsets[i]:
                out[at] = 32
                at += 1
            at = _copy(out, at, words.bytes, words.offsets[e.words[w]], words.offsets[e.words[w] + 1])
        at = _separator(out, at)
        exact = True
        column = 0
        for g in range(group_sizes.shape[0]):
            if g > 0:
                out[at] = 32
                at += 1
            at = _copy(out, at, names.bytes, names.offsets[g], names.offsets[g + 1])
            out[at], out[at + 1] = 61, 32
            at += 2
            for k in range(group_sizes[g]):
                if k > 0:
                    out[at] = 32
                    at += 1
                at, ok = write_g6(out, at, e.values[i, column])
                exact = exact and ok
                column += 1
        for s in range(e.sparse_offsets[i], e.sparse_offsets[i + 1]):
            if group_sizes.shape[0] > 0 or s > e.sparse_offsets[i]:
                out[at] = 32
                at += 1
            name = e.sparse_names[s]
            at = _copy(out, at, names.bytes, names.offsets[name], names.offsets[name + 1])
            out[at], out[at + 1] = 61, 32
            at, ok = write_g6(out, at + 2, e.sparse_values[s])
            exact = exact and ok
        at, ok = write_g6(out, _separator(out, at), e.totals[i])
        exact = exact and ok
        if e.block_offsets[i + 1] > e.block_offsets[i] or e.link_offsets[i + 1] > e.link_offsets[i]:
            at = _separator(out, at)
            for b in range(e.block_offsets[i], e.block_offsets[i + 1]):
                if b > e.block_offsets[i]:
                    out[at] = 32
                    at += 1
                at = _span(out, at, e.blocks[b, 0], e.blocks[b, 1])
                out[at] = 61
                at = _span(out, at + 1, e.blocks[b, 2], e.blocks[b, 3])
            at = _separator(out, at)
            for k in range(e.link_offsets[i], e.link_offsets[i + 1]):
                if k > e.link_offsets[i]:
                    out[at] = 32
                    at += 1
                at = write_int(out, at, e.links[k, 0])
                out[at] = 45
                at = write_int(out, at + 1, e.links[k, 1])
        out[at] = 10
        at += 1
        if not exact:
            at = line
            written[i] = False
        line_offsets[i + 1] = at
    return out[:at], line_offsets, written
