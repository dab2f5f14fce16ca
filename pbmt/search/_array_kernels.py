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
