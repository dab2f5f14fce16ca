"""Numba kernel of the repetition feature: repeated n-grams in each sentence of a CSR batch."""

import numpy as np
from numba import njit


@njit(cache=True)
def repeated_ngrams(offsets, words, n):
    """For each sentence of the CSR batch (offsets int64[k+1], words int32), the positions i whose n-gram
    ``words[i:i+n]`` equals the n-gram at some earlier position of the same sentence: ``int64[k]``."""
    k = offsets.shape[0] - 1
    out = np.zeros(k, np.int64)
    for s in range(k):
        lo, hi = offsets[s], offsets[s + 1]
        for i in range(lo + 1, hi - n + 1):
            for p in range(lo, i):
                same = True
                for q in range(n):
                    if words[p + q] != words[i + q]:
                        same = False
                        break
                if same:
                    out[s] += 1
                    break
    return out
