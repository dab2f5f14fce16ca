"""Numba kernel of MERT's exact line search (Och, 2003).

Along a line ``w + gamma * d`` through weight space, candidate ``c`` of a
sentence scores ``a[c] + gamma * b[c]`` with ``a = X @ w`` and ``b = X @ d``.
The sentence's 1-best as a function of gamma is the upper envelope of these
lines; it changes only at the envelope's breakpoints.
"""

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def envelope_breakpoints(a, b, offsets):
    """The upper envelopes of every sentence's lines ``a + gamma * b``.

    a, b: float64[n_cand] intercepts and slopes; offsets: int64[n_sent+1]
    (CSR: sentence ``s`` owns candidates ``offsets[s]:offsets[s+1]``, at
    least one each).

    Walks each envelope from gamma = -inf: the 1-best there has the smallest
    slope (then the highest intercept); the next one is, among the lines of
    larger slope, the one crossing it first (on a tie, the steepest). Equal
    lines go to the lowest index, which is what ``argmax`` picks. Costs
    O(k * h) for k candidates and h envelope lines, no sorting.

    Returns ``(first, gamma, old, new)``: first: int64[n_sent], each
    sentence's 1-best as gamma -> -inf; gamma: float64[m], the breakpoints,
    where a sentence's 1-best changes from candidate old: int64[m] to new:
    int64[m] (per sentence in increasing gamma, sentences in order).
    """
    n_sent = offsets.shape[0] - 1
    n_cand = a.shape[0]
    first = np.empty(n_sent, dtype=np.int64)
    size = max(n_cand - n_sent, 0)
    gamma = np.empty(size, dtype=np.float64)
    old = np.empty(size, dtype=np.int64)
    new = np.empty(size, dtype=np.int64)
    m = 0
    for s in range(n_sent):
        start = offsets[s]
        end = offsets[s + 1]
        current = start
        for k in range(start + 1, end):
            if b[k] < b[current] or (b[k] == b[current] and a[k] > a[current]):
                current = k
        first[s] = current
        while True:
            following = -1
            crossing = np.inf
            for k in range(start, end):
                if b[k] <= b[current]:
                    continue
                x = (a[current] - a[k]) / (b[k] - b[current])
                if following < 0 or x < crossing or (x == crossing and (
                        b[k] > b[following] or (b[k] == b[following] and a[k] > a[following]))):
                    following = k
                    crossing = x
            if following < 0:
                break
            gamma[m] = crossing
            old[m] = current
            new[m] = following
            m += 1
            current = following
    return first, gamma[:m], old[:m], new[:m]


@njit(cache=True, nogil=True)
def merge_breakpoints(first, gamma, old, new, stats):
    """The intervals of the line with their summed BLEU statistics.

    first, gamma, old, new: as ``envelope_breakpoints`` returns them; stats:
    int64[n_cand, n_stats]. Breakpoints at one gamma act together, and one that
    leaves the summed statistics unchanged does not split an interval.
    Returns ``(bounds, rows)``: bounds: float64[r-1] increasing; rows:
    int64[r, n_stats], the statistics summed over sentences on interval i =
    (bounds[i-1], bounds[i]), with bounds[-1] = -inf and bounds[r-1] = +inf.
    """
    n_stats = stats.shape[1]
    m = gamma.shape[0]
    sort = np.argsort(gamma)
    bounds = np.empty(m, dtype=np.float64)
    rows = np.empty((m + 1, n_stats), dtype=np.int64)
    row = np.zeros(n_stats, dtype=np.int64)
    for c in first:
        for j in range(n_stats):
            row[j] += stats[c, j]
    rows[0] = row
    r = 1
    i = 0
    while i < m:
        at = gamma[sort[i]]
        while i < m and gamma[sort[i]] == at:
            for j in range(n_stats):
                row[j] += stats[new[sort[i]], j] - stats[old[sort[i]], j]
            i += 1
        changed = False
        for j in range(n_stats):
            changed |= row[j] != rows[r - 1, j]
        if changed:
            bounds[r - 1] = at
            rows[r] = row
            r += 1
    return bounds[:r - 1], rows[:r]

