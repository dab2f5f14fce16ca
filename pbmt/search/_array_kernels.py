"""Numba helpers for the search kernels' growing arrays (hypotheses, candidates)."""

import numpy as np
from numba import njit


@njit(cache=True)
def grow1(a, size):
    """A copy of 1-d ``a`` with ``size`` >= len(a) entries, the new ones zero."""
    out = np.zeros(size, dtype=a.dtype)
    out[:a.shape[0]] = a
    return out


@njit(cache=True)
def grow2(a, size):
    """A copy of 2-d ``a`` with ``size`` >= len(a) rows, the new ones zero."""
    out = np.zeros((size, a.shape[1]), dtype=a.dtype)
    out[:a.shape[0]] = a
    return out
