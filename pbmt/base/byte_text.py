"""Numba kernels that read UTF-8 text from its bytes as Python's string methods read it, and write numbers as
Python's ``%`` formatting writes them.

Text files pbmt reads in bulk (phrase tables, n-best lists) are scanned as one ``uint8`` array rather than line by
line in Python. Whitespace is what ``str.split()`` splits at (ASCII and the Unicode spaces, in UTF-8), a field
ends at the next ``|||`` as ``str.split("|||")`` finds it, and a number is read exactly as ``float`` reads it or
left to ``float`` (NaN), so a file reads the same through these kernels as through Python strings. Text pbmt
writes in bulk (n-best lists) is written the same way: a number as ``%d`` or ``%.6g`` writes it, or left to
Python where the kernel cannot be sure of the last digit (``write_g6``).
"""

import numpy as np
from numba import njit

from pbmt.base.files import MAX_INDEX

_TENS = np.array([1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
                  1e17, 1e18, 1e19, 1e20, 1e21, 1e22])  # exact in float64: the fast path's scale factors
_EXACT_MANTISSA = 2 ** 53  # an integer mantissa below it is exact in float64
G6_MAX_BYTES = 13  # the longest ``%.6g`` of a float64: ``-1.23457e-100``
# ``write_g6`` rounds |x| * 10**k in float64, a few units in the last place (below 1e-9) from the exact product:
# a fractional part this close to one half is left to Python's exactly rounded formatting
_TIE_MARGIN = 1e-6


@njit(cache=True)
def space_bytes(buf, i, end):
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
def line_span(buf, line, end):
    """The line starting at ``buf[line]`` (before ``end``), as Python reads a file's lines: (its first byte, past a
    byte order mark at the start of ``buf``; its end, before its newline and the carriage returns ending it; the
    next line's first byte)."""
    line_end = line
    while line_end < end and buf[line_end] != 10:
        line_end += 1
    next_line = line_end + 1
    while line_end > line and buf[line_end - 1] == 13:
        line_end -= 1
    first = line
    if first == 0 and line_end >= 3 and buf[0] == 0xEF and buf[1] == 0xBB and buf[2] == 0xBF:
        first = 3
    return first, line_end, next_line


@njit(cache=True)
def field_end(buf, i, end):
    """Where the field starting at ``i`` ends: the next '|||' before ``end``, or ``end``."""
    while i + 2 < end:
        if buf[i] == 124 and buf[i + 1] == 124 and buf[i + 2] == 124:
            return i
        i += 1
    return end


@njit(cache=True)
def next_token(buf, i, end):
    """(start, end) of the first token at or after ``i`` in ``buf[:end]``; start == end == ``end`` if none."""
    while i < end:  # an ASCII space, or printable ASCII (no space), decided without space_bytes
        b = buf[i]
        if b == 32:
            i += 1
        elif 32 < b < 0x80:
            break
        else:
            n = space_bytes(buf, i, end)
            if n == 0:
                break
            i += n
    start = i
    while i < end:
        b = buf[i]
        if 32 < b < 0x80:
            i += 1
        elif b == 32 or space_bytes(buf, i, end):
            break
        else:
            i += 1
    return start, i


@njit(cache=True)
def ascii_digits(buf, i, end):
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
def alignment_point(buf, start, end):
    """(whether ``buf[start:end]`` is an alignment point ``i-j`` in ASCII digits, i and j at most ``MAX_INDEX``,
    as ``pbmt.base.files.alignment_point`` reads one; i; j), i and j capped at 2**62."""
    i, dash = ascii_digits(buf, start, end)
    j, after = ascii_digits(buf, dash + 1, end)
    ok = start < dash < end and buf[dash] == 45 and dash + 1 < after == end and max(i, j) <= MAX_INDEX
    return ok, i, j


@njit(cache=True)
def decimal_number(buf, start, end):
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
        exponent, after = ascii_digits(buf, i, end)
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
def token_spans(buf, start, end, out, at):
    """Write the (start, length) of each token of ``buf[start:end]`` to ``out[at:]``; returns how many."""
    i, n = start, 0
    while True:
        s, e = next_token(buf, i, end)
        if s == e:
            return n
        out[at + n, 0] = s
        out[at + n, 1] = e - s
        n += 1
        i = e



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
def write_int(out, at, value):
    """Write the integer ``value`` (int64 above -2**63) as ``%d`` does (ASCII) to ``out[at:]`` (uint8, room for 20
    bytes); returns where it ends."""
    value = np.int64(value)
    if value < 0:
        out[at] = 45
        at += 1
    digits = 1
    rest = abs(value) // 10
    while rest > 0:
        digits += 1
        rest //= 10
    rest = abs(value)
    for i in range(digits - 1, -1, -1):
        out[at + i] = 48 + rest % 10
        rest //= 10
    return at + digits


@njit(cache=True)
def write_g6(out, at, x):
    """Write the float ``x`` as ``"%.6g" % x`` does to ``out[at:]`` (uint8, room for ``G6_MAX_BYTES``).

    Returns (where it ends, whether it is written): the six significant digits come from |x| scaled by a power of
    ten in float64, so a value whose seventh digit is within ``_TIE_MARGIN`` of one half (an exact tie for ``%``'s
    rounding to even, or too close to tell), or beyond 1e+-290, is not written (where it ends is then ``at``,
    and ``out`` past it holds nothing of meaning): the caller formats it in Python."""
    if x != x:
        out[at], out[at + 1], out[at + 2] = 110, 97, 110  # nan, whatever its sign, as Python writes it
        return at + 3, True
    start = at
    if x < 0 or (x == 0 and np.signbit(x)):
        out[at] = 45
        at += 1
    ax = abs(x)
    if ax == np.inf:
        out[at], out[at + 1], out[at + 2] = 105, 110, 102
        return at + 3, True
    if ax == 0:
        out[at] = 48
        return at + 1, True
    if ax < 1e-290 or ax > 1e290:
        return start, False
    exponent = np.int64(np.floor(np.log10(ax)))
    for _ in range(2):  # log10 may be one off at a power of ten: scale again
        k = 5 - exponent
        if k >= 0:
            scaled = ax * _TENS[k] if k <= 22 else ax * 10.0 ** k
        else:
            scaled = ax / _TENS[-k] if k >= -22 else ax / 10.0 ** -k
        if scaled < 1e5:
            exponent -= 1
        elif scaled >= 1e6:
            exponent += 1
        else:
            break
    whole = np.floor(scaled)
    fraction = scaled - whole
    if abs(fraction - 0.5) < _TIE_MARGIN or not 1e5 <= scaled < 1e6:
        return start, False
    digits = np.int64(whole) + (1 if fraction > 0.5 else 0)
    if digits == 1000000:
        digits, exponent = 100000, exponent + 1
    significant = 6
    while digits % 10 == 0:
        digits //= 10
        significant -= 1
    if -4 <= exponent < 6:
        if exponent < 0:
            out[at], out[at + 1] = 48, 46  # 0.
            at += 2
            for _ in range(-exponent - 1):
                out[at] = 48
                at += 1
            return write_int(out, at, digits), True
        whole_digits = exponent + 1
        if significant <= whole_digits:
            at = write_int(out, at, digits)
            for _ in range(whole_digits - significant):
                out[at] = 48
                at += 1
            return at, True
        end = write_int(out, at + 1, digits)  # the digits one byte on, then the integer part moved back
        for i in range(whole_digits):
            out[at + i] = out[at + 1 + i]
        out[at + whole_digits] = 46
        return end, True
    end = write_int(out, at + 1, digits)
    out[at] = out[at + 1]
    if significant > 1:
        out[at + 1] = 46
    else:
        end = at + 1
    out[end] = 101
    out[end + 1] = 45 if exponent < 0 else 43
    if abs(exponent) < 10:
        out[end + 2] = 48
        end += 1
    return write_int(out, end + 2, abs(exponent)), True
