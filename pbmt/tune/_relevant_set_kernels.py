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


@njit(cache=True)
def _sparse_score(v, base, ptr, ids, vals, c):
    total = base[c]
    for k in range(ptr[c], ptr[c + 1]):
        total += v[ids[k]] * vals[k]
    return total


@njit(cache=True)
def sparse_costmargin_epoch(order, t_offsets, t_ptr, t_ids, t_vals, t_base, t_b, r_offsets, r_ptr, r_ids, r_vals,
                            r_base, r_b, v, eta):
    """``costmargin_epoch`` on sparse feature vectors with a fixed dense part.

    Candidate c (truth ``t_*`` or relevant ``r_*``) scores ``base[c] + sum_k
    v[ids[k]] * vals[k]`` over k in ``ptr[c]:ptr[c+1]`` (ids unique within a
    candidate); only ``v`` (float64[n_features]) is learned, so Eq. 7's
    ``w.y`` is the score difference. Returns the number of updates.
    """
    updates = 0
    for i in order:
        if t_offsets[i] == t_offsets[i + 1] or r_offsets[i] == r_offsets[i + 1]:
            continue
        s = _best_bleu(t_b, t_offsets[i], t_offsets[i + 1])
        score_s = _sparse_score(v, t_base, t_ptr, t_ids, t_vals, s)
        t = -1
        worst = 0.0
        score_t = 0.0
        for m in range(r_offsets[i], r_offsets[i + 1]):
            score_m = _sparse_score(v, r_base, r_ptr, r_ids, r_vals, m)
            loss = costmargin_loss(score_s, t_b[s], score_m, r_b[m])
            if loss > worst:
                worst = loss
                t = m
                score_t = score_m
        if t < 0:
            continue
        hinge = max(0.0, 1.0 - (score_s - score_t))
        step = eta * (t_b[s] - r_b[t]) * hinge
        for k in range(t_ptr[s], t_ptr[s + 1]):
            v[t_ids[k]] += step * t_vals[k]
        for k in range(r_ptr[t], r_ptr[t + 1]):
            v[r_ids[k]] -= step * r_vals[k]
        updates += 1
    return updates
