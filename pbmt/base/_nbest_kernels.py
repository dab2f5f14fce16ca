"""Numba kernels that read a Moses n-best list's text from its bytes (UTF-8, already checked valid).

``scan_entries`` splits a run of whole lines into each entry's fields and reads its numbers, with no state between
runs, so the caller can scan a large list run by run; ``pbmt.base.nbest.scan_nbest`` finishes in Python what the
kernels leave (the feature names, numbers only ``float`` reads exactly, the line they refuse). Fields, tokens and
numbers are read as ``pbmt.base.byte_text`` reads them, so an entry reads as ``parse_line`` reads it.
"""

import numpy as np
from numba import njit

from pbmt.base.byte_text import alignment_point, ascii_digits, decimal_number, field_end, line_span, next_token, \
    token_spans, write_int
from pbmt.base.files import MAX_INDEX

# the columns of scan_entries' ``lines``
LINE_START, SENTENCE, TEXT_START, TEXT_END, GROUPS, WORDS, BLOCKS, TOTAL_START, TOTAL_END, SEGMENTATION_START, \
    SEGMENTATION_END = range(11)
N_COLUMNS = 11
_CAP = 2 ** 62  # ascii_digits' value for digits too many to hold


@njit(cache=True)
def _integer(buf, start, end):
    """(whether ``buf[start:end]`` is ``[+-]?[0-9]+`` of a value below 2**62, its value): ``parse_int``'s
    integers (a larger one is left to Python)."""
    i = start
    if i < end and (buf[i] == 43 or buf[i] == 45):
        i += 1
    value, after = ascii_digits(buf, i, end)
    if after == i or after != end or value >= _CAP:
        return False, 0
    return True, -value if buf[start] == 45 else value


@njit(cache=True)
def _span(buf, start, end):
    """(whether ``buf[start:end]`` is a segmentation range ``i`` or ``i-j`` as ``parse_line`` reads it, its start,
    its end exclusive): ``i`` is ``i-i``, and ``i-`` too."""
    dash = start
    while dash < end and buf[dash] != 45:
        dash += 1
    ok, first = _integer(buf, start, dash)
    if not ok:
        return False, 0, 0
    last = first
    if dash + 1 < end:
        ok, last = _integer(buf, dash + 1, end)
    return ok, first, last + 1


@njit(cache=True)
def _block(buf, start, end):
    """(whether the token ``buf[start:end]`` is a segmentation block ``i-j=k-l`` as ``parse_line`` reads it, and
    its source start, end, target start, end; ends exclusive)."""
    equals = start
    while equals < end and buf[equals] != 61:
        equals += 1
    if equals == end:
        return False, 0, 0, 0, 0
    ok, a, b = _span(buf, start, equals)
    ok2, c, d = _span(buf, equals + 1, end)
    return ok and ok2, a, b, c, d


@njit(cache=True)
def _one_token(buf, start, end):
    """(start, end) of the one token of ``buf[start:end]``; (0, 0) when it holds none or several."""
    s, e = next_token(buf, start, end)
    if s == e or next_token(buf, e, end)[0] != end:
        return 0, 0
    return s, e


@njit(cache=True)
def _entry(buf, first, line_end, row, groups, n_groups, values, n_values, deferred, n_deferred, words, n_words,
           totals, n_lines):
    """Read the entry of the line ``buf[first:line_end]`` (not blank) into ``row`` (int64[N_COLUMNS]),
    ``totals[n_lines]`` and the arrays after their first ``n_*`` rows; returns (whether it was read, its groups,
    values, deferred numbers, words). A line not read may leave rows written past the counts."""
    f0 = field_end(buf, first, line_end)
    f1 = field_end(buf, f0 + 3, line_end) if f0 < line_end else line_end
    f2 = field_end(buf, f1 + 3, line_end) if f1 < line_end else line_end
    if f2 == line_end:  # fewer than 4 fields
        return False, 0, 0, 0, 0
    f3 = field_end(buf, f2 + 3, line_end)
    s, e = _one_token(buf, first, f0)
    ok, sentence = _integer(buf, s, e)
    if s == e or not ok or sentence < 0 or sentence > MAX_INDEX:
        return False, 0, 0, 0, 0
    row[SENTENCE] = sentence
    n_text = token_spans(buf, f0 + 3, f1, words, n_words)
    row[WORDS] = n_text
    row[TEXT_START] = words[n_words, 0] if n_text else f1
    row[TEXT_END] = words[n_words + n_text - 1, 0] + words[n_words + n_text - 1, 1] if n_text else f1

    g = v = d = 0
    i = f1 + 3
    while True:
        s, e = next_token(buf, i, f2)
        if s == e:
            break
        i = e
        if buf[e - 1] == 61:  # a name=
            groups[n_groups + g, 0] = s
            groups[n_groups + g, 1] = e - 1 - s
            groups[n_groups + g, 2] = 0
            g += 1
            continue
        if g == 0:  # a value before any name
            return False, 0, 0, 0, 0
        value = decimal_number(buf, s, e)
        if np.isnan(value):
            deferred[n_deferred + d, 0] = s
            deferred[n_deferred + d, 1] = e
            d += 1
        values[n_values + v] = value
        v += 1
        groups[n_groups + g - 1, 2] += 1
    row[GROUPS] = g

    s, e = _one_token(buf, f2 + 3, f3)
    if s == e:
        return False, 0, 0, 0, 0
    row[TOTAL_START] = s
    row[TOTAL_END] = e
    totals[n_lines] = decimal_number(buf, s, e)

    row[SEGMENTATION_START] = row[SEGMENTATION_END] = line_end
    row[BLOCKS] = 0
    if f3 < line_end:
        f4 = field_end(buf, f3 + 3, line_end)
        row[SEGMENTATION_START], row[SEGMENTATION_END] = f3 + 3, f4
        i = f3 + 3
        while True:
            s, e = next_token(buf, i, f4)
            if s == e:
                break
            i = e
            if not _block(buf, s, e)[0]:
                return False, 0, 0, 0, 0
            row[BLOCKS] += 1
        if f4 < line_end:  # the word alignment: checked, not kept
            f5 = field_end(buf, f4 + 3, line_end)
            i = f4 + 3
            while True:
                s, e = next_token(buf, i, f5)
                if s == e:
                    break
                i = e
                if not alignment_point(buf, s, e)[0]:
                    return False, 0, 0, 0, 0
    return True, g, v, d, n_text


@njit(cache=True)
def scan_entries(buf, start, end, lines, totals, groups, values, deferred, words):
    """The entries of the lines in ``buf[start:end]`` (whole lines; blank ones skipped), up to the first line
    ``parse_line``'s format does not plainly hold.

    buf: uint8[n], UTF-8 text. Written, one row per entry: ``lines`` int64[>= n_entries, N_COLUMNS] (the line's
    first byte, sentence id, the hypothesis's first and end byte (stripped), its features' groups, its words, its
    segmentation's blocks, the total's first and end byte, the segmentation field's first and end byte),
    ``totals`` float64[>= n_entries] (NaN where ``float`` must read the text); per group (a feature name and its
    values) ``groups`` int64[>= n, 3] (the name's first byte, its length without '=', its number of values);
    ``values`` float64[>= n] (NaN where ``float`` must read the text); ``deferred`` int64[>= n, 2] (the first and
    end byte of each NaN value, in order); ``words`` int64[>= n, 2] (each hypothesis word's first byte and length).
    Returns (the first byte of the line not read, or -1, and the entries, groups, values, deferred numbers and
    words written).
    """
    n_lines = n_groups = n_values = n_deferred = n_words = 0
    row = np.zeros(N_COLUMNS, np.int64)
    line = start
    while line < end:
        first, line_end, next_line = line_span(buf, line, end)
        if next_token(buf, first, line_end)[0] == line_end:
            line = next_line
            continue
        ok, g, v, d, w = _entry(buf, first, line_end, row, groups, n_groups, values, n_values, deferred, n_deferred,
                                words, n_words, totals, n_lines)
        if not ok:
            return line, n_lines, n_groups, n_values, n_deferred, n_words
        row[LINE_START] = line
        lines[n_lines] = row
        n_lines += 1
        n_groups += g
        n_values += v
        n_deferred += d
        n_words += w
        line = next_line
    return -1, n_lines, n_groups, n_values, n_deferred, n_words


_IV = np.array([0x6A09E667F3BCC908, 0xBB67AE8584CAA73B, 0x3C6EF372FE94F82B, 0xA54FF53A5F1D36F1,
                0x510E527FADE682D1, 0x9B05688C2B3E6C1F, 0x1F83D9ABFB41BD6B, 0x5BE0CD19137E2179], np.uint64)
_SIGMA = np.array([
    [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15], [14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3],
    [11, 8, 12, 0, 5, 2, 15, 13, 10, 14, 3, 6, 7, 1, 9, 4], [7, 9, 3, 1, 13, 12, 11, 14, 2, 6, 5, 10, 4, 0, 15, 8],
    [9, 0, 5, 7, 2, 4, 10, 15, 14, 1, 11, 12, 6, 8, 3, 13], [2, 12, 6, 10, 0, 11, 8, 3, 4, 13, 7, 5, 15, 14, 1, 9],
    [12, 5, 1, 15, 14, 13, 4, 10, 0, 7, 6, 3, 9, 2, 8, 11], [13, 11, 7, 14, 12, 1, 3, 9, 5, 0, 15, 4, 8, 6, 2, 10],
    [6, 15, 14, 9, 11, 3, 0, 8, 12, 2, 13, 7, 1, 4, 10, 5], [10, 2, 8, 4, 7, 6, 1, 5, 15, 11, 9, 14, 3, 12, 13, 0],
], np.int64)
_MIXED = np.array([[0, 4, 8, 12], [1, 5, 9, 13], [2, 6, 10, 14], [3, 7, 11, 15], [0, 5, 10, 15], [1, 6, 11, 12],
                   [2, 7, 8, 13], [3, 4, 9, 14]], np.int64)  # the state words each step of a round mixes


@njit(cache=True)
def _rotr(x, n):
    return (x >> np.uint64(n)) | (x << np.uint64(64 - n))


@njit(cache=True)
def _mix(v, a, b, c, d, x, y):
    v[a] = v[a] + v[b] + x
    v[d] = _rotr(v[d] ^ v[a], 32)
    v[c] = v[c] + v[d]
    v[b] = _rotr(v[b] ^ v[c], 24)
    v[a] = v[a] + v[b] + y
    v[d] = _rotr(v[d] ^ v[a], 16)
    v[c] = v[c] + v[d]
    v[b] = _rotr(v[b] ^ v[c], 63)


@njit(cache=True)
def _compress(h, block, counted, last, v, m):
    """BLAKE2b's compression of the 128-byte ``block`` into the state ``h`` (uint64[8]); ``counted``: the bytes
    hashed with this block; ``v``, ``m``: uint64[16] scratch."""
    for i in range(16):
        word = np.uint64(0)
        for k in range(8):
            word |= np.uint64(block[8 * i + k]) << np.uint64(8 * k)
        m[i] = word
    for i in range(8):
        v[i] = h[i]
        v[i + 8] = _IV[i]
    v[12] ^= np.uint64(counted)
    if last:
        v[14] = ~v[14]
    for r in range(12):
        s = _SIGMA[r % 10]
        for j in range(8):  # the columns, then the diagonals (one call site: a smaller kernel to compile)
            _mix(v, _MIXED[j, 0], _MIXED[j, 1], _MIXED[j, 2], _MIXED[j, 3], m[s[2 * j]], m[s[2 * j + 1]])
    for i in range(8):
        h[i] ^= v[i] ^ v[i + 8]


@njit(cache=True)
def blake2b_64(data, start, end, h, block, v, m):
    """``int.from_bytes(hashlib.blake2b(data[start:end], digest_size=8).digest(), "little")`` (RFC 7693, no key):
    the dedup keys of ``pbmt.tune.pool``. ``h`` uint64[8], ``block`` uint8[128], ``v``, ``m`` uint64[16]: scratch."""
    for i in range(8):
        h[i] = _IV[i]
    h[0] ^= np.uint64(0x01010008)  # digest length 8, no key, fan-out and depth 1
    at = start
    while end - at > 128:
        for k in range(128):
            block[k] = data[at + k]
        at += 128
        _compress(h, block, at - start, False, v, m)
    for k in range(128):
        block[k] = data[at + k] if at + k < end else 0
    _compress(h, block, end - start, True, v, m)
    return h[0]


@njit(cache=True)
def text_keys(buf, spans):
    """uint64[n]: ``blake2b_64`` of each ``buf[spans[k, 0]:spans[k, 1]]``."""
    h, block, v, m = np.empty(8, np.uint64), np.empty(128, np.uint8), np.empty(16, np.uint64), np.empty(16, np.uint64)
    keys = np.empty(spans.shape[0], np.uint64)
    for k in range(spans.shape[0]):
        keys[k] = blake2b_64(buf, spans[k, 0], spans[k, 1], h, block, v, m)
    return keys


@njit(cache=True)
def derivation_keys(buf, text_spans, segmentation_spans):
    """uint64[n]: ``blake2b_64`` of each entry's hypothesis ``buf[text_spans[k, 0]:text_spans[k, 1]]``, 0x1F and
    its segmentation (the blocks of ``buf[segmentation_spans[k, 0]:segmentation_spans[k, 1]]``, as read by
    ``scan_entries``) written as Python's ``repr`` writes a tuple of blocks: ``((0, 2, 0, 5), (2, 3, 5, 6))``
    (``segmentation_keys`` of the blocks read)."""
    n = text_spans.shape[0]
    block_offsets = np.zeros(n + 1, np.int64)
    for e in range(n):
        i, end = segmentation_spans[e, 0], segmentation_spans[e, 1]
        count = 0
        while True:
            s, t = next_token(buf, i, end)
            if s == t:
                break
            i = t
            count += 1
        block_offsets[e + 1] = block_offsets[e] + count
    blocks = np.empty((block_offsets[n], 4), np.int64)
    for e in range(n):
        i, end = segmentation_spans[e, 0], segmentation_spans[e, 1]
        for k in range(block_offsets[e], block_offsets[e + 1]):
            s, t = next_token(buf, i, end)
            i = t
            _, a, b, c, d = _block(buf, s, t)
            blocks[k, 0], blocks[k, 1], blocks[k, 2], blocks[k, 3] = a, b, c, d
    return segmentation_keys(buf, text_spans, block_offsets, blocks)


@njit(cache=True)
def _block_repr(out, at, a, b, c, d):
    """Write the block ``(a, b, c, d)`` as ``repr`` writes a tuple of ints to ``out[at:]`` (room for 88 bytes);
    returns where it ends."""
    out[at] = 40  # (
    at = write_int(out, at + 1, a)
    out[at], out[at + 1] = 44, 32  # ", "
    at = write_int(out, at + 2, b)
    out[at], out[at + 1] = 44, 32
    at = write_int(out, at + 2, c)
    out[at], out[at + 1] = 44, 32
    at = write_int(out, at + 2, d)
    out[at] = 41  # )
    return at + 1


@njit(cache=True, nogil=True)
def segmentation_keys(text, spans, block_offsets, blocks):
    """uint64[n]: ``derivation_keys`` of entries given as arrays: the 64-bit BLAKE2b of each hypothesis
    ``text[spans[e, 0]:spans[e, 1]]`` (UTF-8), 0x1F and its segmentation, the int64[m, 4] rows
    ``blocks[block_offsets[e]:block_offsets[e + 1]]``, as ``repr`` writes a tuple of them."""
    h, block, v, m = np.empty(8, np.uint64), np.empty(128, np.uint8), np.empty(16, np.uint64), np.empty(16, np.uint64)
    n = spans.shape[0]
    keys = np.empty(n, np.uint64)
    out = np.empty(1024, np.uint8)
    for e in range(n):
        lo, hi = block_offsets[e], block_offsets[e + 1]
        most = spans[e, 1] - spans[e, 0] + 4 + 90 * (hi - lo)
        if most > out.shape[0]:
            out = np.empty(2 * most, np.uint8)
        at = 0
        for i in range(spans[e, 0], spans[e, 1]):
            out[at] = text[i]
            at += 1
        out[at] = 0x1F
        out[at + 1] = 40  # (
        at += 2
        for k in range(lo, hi):
            if k > lo:
                out[at], out[at + 1] = 44, 32
                at += 2
            at = _block_repr(out, at, blocks[k, 0], blocks[k, 1], blocks[k, 2], blocks[k, 3])
        if hi - lo == 1:
            out[at] = 44  # a tuple of one: ((0, 1, 0, 1),)
            at += 1
        out[at] = 41
        keys[e] = blake2b_64(out, 0, at + 1, h, block, v, m)
    return keys


@njit(cache=True)
def joined_spans(buf, spans, order):
    """The bytes of ``buf[spans[k, 0]:spans[k, 1]]`` for k in ``order``, joined by newlines (uint8[...])."""
    size = 0
    for k in order:
        size += spans[k, 1] - spans[k, 0] + 1
    out = np.empty(max(size - 1, 0), np.uint8)
    at = 0
    for j in range(order.shape[0]):
        k = order[j]
        if j:
            out[at] = 10
            at += 1
        for i in range(spans[k, 0], spans[k, 1]):
            out[at] = buf[i]
            at += 1
    return out
