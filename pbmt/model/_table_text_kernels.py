"""Numba kernels that parse a Moses phrase table's text from its bytes (UTF-8, already checked valid).

``scan_lines`` splits a run of whole lines into fields and tokens and reads the numbers, with no state between
runs, so the caller can show progress run by run; ``intern_words`` and ``source_trie`` then number the words and
source phrases of the whole table in order of first sight. Whitespace is what Python's ``str.split()`` splits at
(ASCII and the Unicode spaces, in UTF-8), so a table reads the same as it would through Python strings.

A kernel that meets a line it does not accept reports its first byte and stops; the Python layer then names the
line and what is wrong with it (``pbmt.model.phrase_table``).
"""

import numpy as np
from numba import njit

from pbmt.base.hashtable import build_table, insert

_TENS = np.array([1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
                  1e17, 1e18, 1e19, 1e20, 1e21, 1e22])  # exact in float64: the fast path's scale factors
_EXACT_MANTISSA = 2 ** 53  # an integer mantissa below it is exact in float64


@njit(cache=True)
def _space(buf, i, end):
    """Bytes of the whitespace character at ``buf[i]`` (one Python's ``str.isspace`` accepts), 0 if none."""
    b = buf[i]
    if b < 0x80:
        return 1 if (9 <= b <= 13) or (28 <= b <= 32) else 0
    if b == 0xC2:
        return 2 if i + 1 < end and (buf[i + 1] == 0x85 or buf[i + 1] == 0xA0) else 0
    if i + 2 >= end:
        return 0
    b1, b2 = buf[i + 1], buf[i + 2]
    if b == 0xE1:
        return 3 if b1 == 0x9A and b2 == 0x80 else 0
    if b == 0xE2:
        if b1 == 0x80 and (b2 <= 0x8A or b2 == 0xA8 or b2 == 0xA9 or b2 == 0xAF):
            return 3
        return 3 if b1 == 0x81 and b2 == 0x9F else 0
    if b == 0xE3:
        return 3 if b1 == 0x80 and b2 == 0x80 else 0
    return 0


@njit(cache=True)
def _field_end(buf, i, end):
    """Where the field starting at ``i`` ends: the next '|||' before ``end``, or ``end``."""
    while i + 2 < end:
        if buf[i] == 124 and buf[i + 1] == 124 and buf[i + 2] == 124:
            return i
        i += 1
    return end


@njit(cache=True)
def _next_token(buf, i, end):
    """(start, end) of the first token at or after ``i`` in ``buf[:end]``; start == end == ``end`` if none."""
    while i < end:
        n = _space(buf, i, end)
        if n == 0:
            break
        i += n
    start = i
    while i < end and _space(buf, i, end) == 0:
        i += 1
    return start, i


@njit(cache=True)
def _digits(buf, i, end):
    """(the value of the ASCII digits from ``i``, capped at 2**62, where they end)."""
    value = 0
    while i < end and 48 <= buf[i] <= 57:
        if value < 2 ** 58:
            value = value * 10 + (buf[i] - 48)
        else:
            value = 2 ** 62
        i += 1
    return value, i


@njit(cache=True)
def _number(buf, start, end):
    """The float64 value of the decimal number ``buf[start:end]`` when one multiplication or division by a power
    of ten gives it exactly rounded (at most 15-16 significant digits, a scale of at most 10**22: every score
    a Moses tool prints), else NaN: Python's ``float`` reads the rest."""
    i = start
    negative = buf[i] == 45
    if buf[i] == 43 or buf[i] == 45:
        i += 1
    mantissa = 0
    digits = 0  # digits read
    scale = 0  # the power of ten the mantissa is multiplied by
    while i < end and 48 <= buf[i] <= 57:
        mantissa = mantissa * 10 + (buf[i] - 48)
        digits += 1
        if mantissa >= _EXACT_MANTISSA:
            return np.nan
        i += 1
    if i < end and buf[i] == 46:
        i += 1
        while i < end and 48 <= buf[i] <= 57:
            mantissa = mantissa * 10 + (buf[i] - 48)
            digits += 1
            scale -= 1
            if mantissa >= _EXACT_MANTISSA:
                return np.nan
            i += 1
    if digits == 0:
        return np.nan
    if i < end and (buf[i] == 101 or buf[i] == 69):
        i += 1
        exponent_negative = i < end and buf[i] == 45
        if i < end and (buf[i] == 43 or buf[i] == 45):
            i += 1
        exponent, after = _digits(buf, i, end)
        if after == i:
            return np.nan
        i = after
        scale += -exponent if exponent_negative else exponent
    if i != end or scale < -22 or scale > 22:
        return np.nan
    value = np.float64(mantissa)
    value = value * _TENS[scale] if scale >= 0 else value / _TENS[-scale]
    return -value if negative else value


@njit(cache=True)
def _tokens(buf, start, end, out, at):
    """Write the (start, length) of each token of ``buf[start:end]`` to ``out[at:]``; returns how many."""
    i, n = start, 0
    while True:
        s, e = _next_token(buf, i, end)
        if s == e:
            return n
        out[at + n, 0] = s
        out[at + n, 1] = e - s
        n += 1
        i = e


@njit(cache=True)
def scan_lines(buf, start, end, n_scores, lines, src, tgt, scores, align):
    """Fields, tokens and numbers of the lines in ``buf[start:end]`` (whole lines; blank ones skipped).

    buf: uint8[n], UTF-8 text; ``n_scores``: scores per line, or -1 to take the first line's count. Written:
    ``lines`` int64[>= n_lines, 4] (a line's first byte, its source tokens, target tokens, alignment points),
    ``src``, ``tgt`` int64[>= n_tokens, 2] (each token's first byte and length), ``scores`` float64[>= n_lines *
    n_scores] (row by row; NaN where the text needs Python's ``float``), ``align`` int16[>= n_points, 2].
    Returns (n_scores, the first byte of the first line not accepted or -1 (the lines before it are written),
    n_lines, n_src_tokens, n_tgt_tokens, n_points).
    """
    n_lines = n_src = n_tgt = n_points = 0
    bad = -1
    line = start
    while line < end:
        line_end = line
        while line_end < end and buf[line_end] != 10:
            line_end += 1
        next_line = line_end + 1
        while line_end > line and buf[line_end - 1] == 13:
            line_end -= 1
        first = line
        if first == 0 and line_end >= 3 and buf[0] == 0xEF and buf[1] == 0xBB and buf[2] == 0xBF:
            first = 3  # a byte order mark
        if _next_token(buf, first, line_end)[0] == line_end:
            line = next_line
            continue
        bad = line
        src_end = _field_end(buf, first, line_end)
        tgt_end = _field_end(buf, src_end + 3, line_end) if src_end < line_end else line_end
        if tgt_end == line_end:
            break
        n_src_line = _tokens(buf, first, src_end, src, n_src)
        n_tgt_line = _tokens(buf, src_end + 3, tgt_end, tgt, n_tgt)
        if n_src_line == 0 or n_tgt_line == 0:
            break
        score_end = _field_end(buf, tgt_end + 3, line_end)
        i, found = tgt_end + 3, 0
        row = n_lines * max(n_scores, 0)
        while True:
            s, e = _next_token(buf, i, score_end)
            if s == e:
                break
            if n_scores < 0 or found < n_scores:
                scores[row + found] = _number(buf, s, e)
            found += 1
            i = e
        if n_scores < 0:
            n_scores = found
        if found == 0 or found != n_scores:
            break
        points = 0
        if score_end < line_end:  # alignment points i-j inside the pair
            align_end = _field_end(buf, score_end + 3, line_end)
            i = score_end + 3
            while True:
                s, e = _next_token(buf, i, align_end)
                if s == e:
                    break
                a, dash = _digits(buf, s, e)
                b, after = _digits(buf, dash + 1, e)
                if dash == s or dash >= e or buf[dash] != 45 or after == dash + 1 or after != e \
                        or a >= n_src_line or b >= n_tgt_line:
                    points = -1
                    break
                align[n_points + points, 0] = a
                align[n_points + points, 1] = b
                points += 1
                i = e
        if points < 0:
            break
        bad = -1
        lines[n_lines, 0] = line
        lines[n_lines, 1] = n_src_line
        lines[n_lines, 2] = n_tgt_line
        lines[n_lines, 3] = points
        n_src += n_src_line
        n_tgt += n_tgt_line
        n_points += points
        n_lines += 1
        line = next_line
    return max(n_scores, 0), bad, n_lines, n_src, n_tgt, n_points


@njit(cache=True)
def _hash(buf, start, length):
    """64-bit FNV-1a of ``buf[start:start + length]``."""
    h = np.uint64(0xCBF29CE484222325)
    for i in range(start, start + length):
        h = (h ^ np.uint64(buf[i])) * np.uint64(0x100000001B3)
    return h


@njit(cache=True)
def _same(buf, a, b, length):
    for k in range(length):
        if buf[a + k] != buf[b + k]:
            return False
    return True


@njit(cache=True)
def _place(slots, hashes, n_words):
    """Slots int32[capacity] (a power of two) holding words 0 .. n_words - 1 by their ``hashes``."""
    mask = slots.shape[0] - 1
    for s in range(slots.shape[0]):
        slots[s] = -1
    for w in range(n_words):
        s = np.int64(hashes[w] & np.uint64(mask))
        while slots[s] >= 0:
            s = (s + 1) & mask
        slots[s] = w


@njit(cache=True)
def intern_words(buf, tokens):
    """Word ids of the tokens ``buf[tokens[k, 0]:tokens[k, 0] + tokens[k, 1]]``, in order of first sight.

    Returns (ids int32[n_tokens], the number of words, the words as one uint8 array: their bytes joined by
    newlines).
    """
    n = tokens.shape[0]
    ids = np.empty(n, np.int32)
    first = np.empty(n, np.int64)  # token where each word was first seen
    hashes = np.empty(n, np.uint64)
    slots = np.full(1024, -1, np.int32)  # word id in each slot
    n_words = size = 0
    for k in range(n):
        start, length = tokens[k, 0], tokens[k, 1]
        h = _hash(buf, start, length)
        mask = slots.shape[0] - 1
        s = np.int64(h & np.uint64(mask))
        while slots[s] >= 0:
            t = first[slots[s]]
            if hashes[slots[s]] == h and tokens[t, 1] == length and _same(buf, tokens[t, 0], start, length):
                break
            s = (s + 1) & mask
        if slots[s] < 0:
            first[n_words], hashes[n_words], slots[s] = k, h, n_words
            n_words += 1
            size += length + 1
            if 2 * n_words > slots.shape[0]:  # half full: double, and place every word again
                slots = np.empty(2 * slots.shape[0], np.int32)
                _place(slots, hashes, n_words)
                ids[k] = n_words - 1
                continue
        ids[k] = slots[s]
    words = np.empty(max(size - 1, 0), np.uint8)
    at = 0
    for w in range(n_words):
        if w > 0:
            words[at] = 10
            at += 1
        start = tokens[first[w], 0]
        for i in range(start, start + tokens[first[w], 1]):
            words[at] = buf[i]
            at += 1
    return ids, n_words, words


@njit(cache=True)
def source_trie(words, offsets, n_words):
    """The source phrases of the lines, numbered in order of first sight, and the trie over them.

    words: int32 source word ids of every line, ``offsets``: int64[n_lines + 1] CSR over them; ``n_words``: the
    source vocabulary's size. Returns (phrase of each line int64[n_lines], the phrases' words as CSR (offsets
    int64[n_phrases + 1], int32 ids), the trie's nodes: parent int64[n_nodes], last word int32[n_nodes],
    phrase ending there int32[n_nodes] or -1; node 0 is the root). Nodes are numbered as they are first
    reached, so the trie is the one a walk over the distinct phrases in order of first sight builds.
    """
    n_lines = offsets.shape[0] - 1
    phrase_of_line = np.empty(n_lines, np.int64)
    parents = np.empty(words.shape[0] + 1, np.int64)
    last = np.empty(words.shape[0] + 1, np.int32)
    phrase_at = np.full(words.shape[0] + 1, -1, np.int32)
    parents[0], last[0] = -1, 0
    n_nodes = 1
    keys, node_at = build_table(parents[:1], last[:1], n_words)  # node_at: the node whose key is in each slot
    phrase_offsets = np.zeros(n_lines + 1, np.int64)
    phrase_words = np.empty(words.shape[0], np.int32)
    n_phrases = 0
    for line in range(n_lines):
        node = 0
        for k in range(offsets[line], offsets[line + 1]):
            s, new = insert(keys, n_words, node, words[k])
            if not new:
                node = node_at[s]
                continue
            parents[n_nodes], last[n_nodes], node_at[s] = node, words[k], n_nodes
            node = n_nodes
            n_nodes += 1
            if 2 * n_nodes > keys.shape[0]:  # half full: a table twice as large
                keys, node_at = build_table(parents[:n_nodes], last[:n_nodes], n_words)
        if phrase_at[node] < 0:
            phrase_at[node] = n_phrases
            at = phrase_offsets[n_phrases]
            for k in range(offsets[line], offsets[line + 1]):
                phrase_words[at] = words[k]
                at += 1
            phrase_offsets[n_phrases + 1] = at
            n_phrases += 1
        phrase_of_line[line] = phrase_at[node]
    return (phrase_of_line, phrase_offsets[:n_phrases + 1], phrase_words[:phrase_offsets[n_phrases]],
            parents[:n_nodes], last[:n_nodes], phrase_at[:n_nodes])
