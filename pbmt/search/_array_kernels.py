"""Numba helpers for the search kernels' growing arrays (hypotheses, candidates)."""

import numpy as np
from numba import njit


# Called by kernels only: compiled without the CPython and C-function wrappers a call from Python needs
# (their unboxing of tuples of arrays is compiled and optimised anew; docs/decoding.md, "The first run").
@njit(cache=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)
def grow1(a, size):
    """A copy of 1-d ``a`` with ``size`` >= len(a) entries, the new ones zero."""
    out = np.zeros(size, dtype=a.dtype)
    for i in range(a.shape[0]):  # a loop, not a slice copy: no shape check to compile
        out[i] = a[i]
    return out


@njit(cache=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)
def grow2(a, size):
    """A copy of 2-d ``a`` with ``size`` >= len(a) rows, the new ones zero."""
    out = np.zeros((size, a.shape[1]), dtype=a.dtype)
    for i in range(a.shape[0]):
        for j in range(a.shape[1]):
            out[i, j] = a[i, j]
    return out


_RUN = 16  # sorted by insertion before merging: a span's options (table limit 20) mostly fit in one or two runs


@njit(cache=True, inline="always")
def _higher(a, b):
    """Whether value a sorts before value b from the highest down: a higher, or a number and b NaN."""
    return a > b or (b != b and a == a)


@njit(cache=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)
def best_first(values):
    """Indices of ``values`` (float64[n]) from the highest value to the lowest, NaN last, equal values in index
    order: ``np.argsort(-values, kind="mergesort")``, whose generic merge sort compiles for about a second of a
    cold run against a tenth for this one (insertion-sorted runs of 16, then merged bottom-up)."""
    n = values.shape[0]
    order = np.empty(n, np.int64)
    for i in range(n):
        order[i] = i
    for lo in range(0, n, _RUN):
        for i in range(lo + 1, min(lo + _RUN, n)):
            k = order[i]
            j = i
            while j > lo and _higher(values[k], values[order[j - 1]]):
                order[j] = order[j - 1]
                j -= 1
            order[j] = k
    if n <= _RUN:
        return order
    merged = np.empty(n, np.int64)
    width = _RUN
    while width < n:
        for lo in range(0, n, 2 * width):
            mid, hi = min(lo + width, n), min(lo + 2 * width, n)
            i, j = lo, mid
            for k in range(lo, hi):
                if j < hi and (i >= mid or _higher(values[order[j]], values[order[i]])):
                    merged[k] = order[j]
                    j += 1
                else:
                    merged[k] = order[i]
                    i += 1
        order, merged = merged, order
        width *= 2
    return order
