"""Numba kernels of the online relevant-set training steps (Tillmann & Zhang, Tables II and III).

Candidates of sentence ``i`` are rows ``offsets[i]:offsets[i+1]`` of a
feature matrix ``x`` (float64[n_cand, d]) with sentence BLEU ``b`` (in
[0, 1]). Weights ``w`` (float64[d]) are updated in place.
"""

import numpy as np
from numba import njit


@njit(cache=True)
def costmargin_loss(s, b, s_alt, b_alt):
    """Eq. 4: phi(s, b; s', b') = (b - b') * (1 - (s - s'))_+^2 for truth score s, BLEU b and an alternative's."""
    hinge = max(0.0, 1.0 - (s - s_alt))
    return (b - b_alt) * hinge * hinge


@njit(cache=True)
def costmargin_update(w, y, delta_bleu, eta):
    """Eq. 7 with K = 1: w <- w + eta * delta_bleu * y * (1 - w.y)_+ (y = F(truth) - F(alternative))."""
    hinge = max(0.0, 1.0 - np.dot(w, y))
    if hinge > 0.0 and delta_bleu != 0.0:
        w += eta * delta_bleu * hinge * y


@njit(cache=True)
def _best_bleu(b, lo, hi):
    s = lo
    for m in range(lo + 1, hi):
        if b[m] > b[s]:
            s = m
    return s


@njit(cache=True)
def costmargin_epoch(order, t_offsets, t_x, t_b, r_offsets, r_x, r_b, w, eta):
    """One SGD pass (Table II's online iteration) over the sentences in ``order``.

    For each sentence: the truth s is its highest-BLEU truth candidate
    (``t_*``); the alternative t is the relevant-set candidate (``r_*``)
    maximising Eq. 4's loss against it under the current weights (Eq. 6);
    then Eq. 7's update. Returns the number of updates.
    """
    updates = 0
    for i in order:
        if t_offsets[i] == t_offsets[i + 1] or r_offsets[i] == r_offsets[i + 1]:
            continue
        s = _best_bleu(t_b, t_offsets[i], t_offsets[i + 1])
        score_s = np.dot(w, t_x[s])
        t = -1
        worst = 0.0
        for m in range(r_offsets[i], r_offsets[i + 1]):
            loss = costmargin_loss(score_s, t_b[s], np.dot(w, r_x[m]), r_b[m])
            if loss > worst:
                worst = loss
                t = m
        if t >= 0:
            costmargin_update(w, t_x[s] - r_x[t], t_b[s] - r_b[t], eta)
            updates += 1
    return updates


@njit(cache=True)
def perceptron_epoch(order, offsets, x, b, w, eta):
    """One pass of Table III over the sentences in ``order``: s = highest BLEU, t = highest
    model score (the first on ties); w <- w + eta * (x_s - x_t). Returns the number of updates."""
    updates = 0
    for i in order:
        lo, hi = offsets[i], offsets[i + 1]
        if lo == hi:
            continue
        s = _best_bleu(b, lo, hi)
        t = lo
        best = np.dot(w, x[lo])
        for m in range(lo + 1, hi):
            score = np.dot(w, x[m])
            if score > best:
                best = score
                t = m
        if t != s:
            w += eta * (x[s] - x[t])
            updates += 1
    return updates
