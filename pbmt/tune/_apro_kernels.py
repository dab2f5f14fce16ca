"""Numba kernel of APRO's all-pairs ranking loss (Lee & Lin, 2014; Airola et al., 2011).

For a sentence with model scores ``s`` and gains ``b``, the preference pairs
are ``(i, j)`` with ``b[i] > b[j]`` and the squared hinge loss is
``sum max(0, 1 - s[i] + s[j])**2`` over them. A pair is active when
``s[j] > s[i] - 1``, so each candidate's terms are sums over the candidates
that dominate it in two orders (lower gain and score above a threshold),
which a sweep in score order with a Fenwick tree over gain ranks answers in
O(k log k) for k candidates, never touching the pairs themselves.
"""

import numpy as np
from numba import njit


@njit(cache=True)
def _add(tree, position, value):
    i = position + 1
    while i < tree.shape[0]:
        tree[i] += value
        i += i & -i


@njit(cache=True)
def _prefix(tree, end):
    """Sum of positions 0..end-1."""
    total = 0.0
    i = end
    while i > 0:
        total += tree[i]
        i -= i & -i
    return total


@njit(cache=True)
def _gain_ranks(gains, lo, hi, ranks):
    """Dense ranks 0..r-1 of gains[lo:hi] into ranks[0:hi-lo] (equal gains, equal rank); returns r."""
    order = np.argsort(gains[lo:hi], kind="mergesort")
    rank = -1
    previous = -np.inf
    for p in range(hi - lo):
        c = order[p]
        if p == 0 or gains[lo + c] != previous:
            rank += 1
            previous = gains[lo + c]
        ranks[c] = rank
    return rank + 1


@njit(cache=True)
def squared_hinge_ranking(scores, gains, offsets):
    """The all-pairs squared hinge loss and its derivative in each score.

    scores: float64[n_cand] model scores; gains: float64[n_cand] (BLEU+1);
    offsets: int64[n_sent+1] (CSR by sentence). Returns ``(loss, coef)``:
    loss = sum over sentences and pairs with ``gains[i] > gains[j]`` (equal
    gains make no pair) of ``max(0, 1 - scores[i] + scores[j])**2``;
    coef: float64[n_cand], d loss / d scores[c]. Scores are centred per
    sentence first (the loss depends only on differences), which keeps the
    expanded squares from cancelling.
    """
    n_sent = offsets.shape[0] - 1
    coef = np.zeros(scores.shape[0])
    loss = 0.0
    for s in range(n_sent):
        lo = offsets[s]
        hi = offsets[s + 1]
        k = hi - lo
        if k < 2:
            continue
        t = scores[lo:hi] - scores[lo:hi].mean()
        ranks = np.empty(k, dtype=np.int64)
        n_ranks = _gain_ranks(gains, lo, hi, ranks)
        count = np.zeros(n_ranks + 1)
        total = np.zeros(n_ranks + 1)
        squares = np.zeros(n_ranks + 1)
        order = np.argsort(t, kind="mergesort")
        # upper candidate i: its active pairs are j with lower gain and t[j] > t[i] - 1
        p = k - 1
        for q in range(k - 1, -1, -1):
            i = order[q]
            while p >= 0 and t[order[p]] > t[i] - 1.0:
                j = order[p]
                _add(count, ranks[j], 1.0)
                _add(total, ranks[j], t[j])
                _add(squares, ranks[j], t[j] * t[j])
                p -= 1
            n = _prefix(count, ranks[i])
            s1 = _prefix(total, ranks[i])
            s2 = _prefix(squares, ranks[i])
            margin = 1.0 - t[i]
            loss += n * margin * margin + 2.0 * margin * s1 + s2
            coef[lo + i] -= 2.0 * (n * margin + s1)
        # lower candidate j: its active pairs are i with higher gain and t[i] < t[j] + 1
        count[:] = 0.0
        total[:] = 0.0
        p = 0
        for q in range(k):
            j = order[q]
            while p < k and t[order[p]] < t[j] + 1.0:
                i = order[p]
                _add(count, ranks[i], 1.0)
                _add(total, ranks[i], t[i])
                p += 1
            n = _prefix(count, n_ranks) - _prefix(count, ranks[j] + 1)
            s1 = _prefix(total, n_ranks) - _prefix(total, ranks[j] + 1)
            coef[lo + j] += 2.0 * (n * (1.0 + t[j]) - s1)
    return loss, coef
