"""Numba kernel of the future-cost table."""

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def future_table(n, opt_start, opt_end, opt_future):
    """Best estimated score of translating each source span ``[i, j)``.

    opt_*: int32/float64[n_opt], the options' spans and estimated scores
    (option-local score + weighted LM inside estimate, natural log). Returns
    float64[n + 1, n + 1] where [i, j] is the best over options covering exactly
    [i, j) and over splits [i, k) + [k, j); -inf where nothing covers the span.
    """
    fc = np.full((n + 1, n + 1), -np.inf)
    for o in range(opt_start.shape[0]):
        i, j = opt_start[o], opt_end[o]
        if opt_future[o] > fc[i, j]:
            fc[i, j] = opt_future[o]
    for length in range(2, n + 1):
        for i in range(n - length + 1):
            j = i + length
            best = fc[i, j]
            for k in range(i + 1, j):
                s = fc[i, k] + fc[k, j]
                if s > best:
                    best = s
            fc[i, j] = best
    return fc
