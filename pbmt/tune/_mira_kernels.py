"""Numba kernels of batch MIRA (``pbmt.tune.mira``): one epoch of hope/fear updates, and model scores.

Candidates' features are rows of a CSR matrix (``indptr`` int64[n_cand+1],
``indices`` int64[nnz], ``values`` float64[nnz]), so dense pools (every
column stored) and sparse ones take the same path; weights are a dense
float64[n_features]. BLEU statistics are pbmt's int64[n_cand, 10]
(``pbmt.metrics.bleu``: hypothesis and reference length, matches 1..4,
totals 1..4).
"""

import numpy as np
from numba import njit


@njit(cache=True)
def background_bleu(stats, background):
    """Chiang et al. (2008)'s sentence BLEU against a pseudo-document, as Cherry & Foster (2012) and kbmira
    score it: BLEU of ``stats + background`` (float64[10] each) without smoothing, its brevity penalty from
    the unigram total, times the summed reference length (so a gain in reference words)."""
    log_bleu = 0.0
    for n in range(4):
        log_bleu += np.log(stats[2 + n] + background[2 + n]) - np.log(stats[6 + n] + background[6 + n])
    log_bleu /= 4.0
    reference = stats[1] + background[1]
    brevity = 1.0 - reference / (stats[6] + background[6])
    if brevity < 0.0:
        log_bleu += brevity
    return np.exp(log_bleu) * reference


@njit(cache=True)
def _row_score(indptr, indices, values, row, weights):
    total = 0.0
    for k in range(indptr[row], indptr[row + 1]):
        total += values[k] * weights[indices[k]]
    return total


@njit(cache=True)
def scores(indptr, indices, values, weights):
    """float64[n_cand]: every row's features times ``weights``."""
    n = indptr.shape[0] - 1
    out = np.empty(n)
    for row in range(n):
        out[row] = _row_score(indptr, indices, values, row, weights)
    return out


@njit(cache=True)
def _add_row(rows, row, sign, work, n_touched):
    """Add ``sign`` times candidate ``row``'s features into the work vector; returns the touched count."""
    indptr, indices, values = rows
    scratch, touched, marked = work
    for k in range(indptr[row], indptr[row + 1]):
        j = indices[k]
        if not marked[j]:
            marked[j] = True
            touched[n_touched] = j
            n_touched += 1
        scratch[j] += sign * values[k]
    return n_touched


@njit(cache=True)
def epoch(order, offsets, rows, stats, weights, average, background, c, decay, model_background, work):
    """One pass of batch MIRA over the sentences in ``order`` (int64, indices into ``offsets``, CSR of the
    candidates by sentence); rows: the candidates' features (indptr, indices, values); stats: their BLEU
    statistics as float64[n_cand, 10]. Updates in place: ``weights``; ``average``, the lazy sums of the
    averaged weights (totals float64[n_features]; last int64[n_features], the update count at which each
    weight was last added in; count int64[1], the updates so far); ``background`` float64[10], the
    pseudo-document (the hope's statistics join it, or with ``model_background`` the model's best's).
    ``work``: (float64 zeros, int64, bool False) arrays of n_features. Returns (updates, summed loss)."""
    totals, last, count = average
    scratch, touched, marked = work
    updates = 0
    loss_sum = 0.0
    for s in order:
        lo, hi = offsets[s], offsets[s + 1]
        hope = fear = model = lo
        hope_value = fear_value = model_value = 0.0
        hope_bleu = fear_bleu = 0.0
        for i in range(lo, hi):
            score = _row_score(rows[0], rows[1], rows[2], i, weights)
            bleu = background_bleu(stats[i], background)
            if i == lo or score + bleu > hope_value:
                hope, hope_value, hope_bleu = i, score + bleu, bleu
            if i == lo or score - bleu > fear_value:
                fear, fear_value, fear_bleu = i, score - bleu, bleu
            if i == lo or score > model_value:
                model, model_value = i, score
        if hope == fear or not hope_bleu > fear_bleu:
            continue
        n_touched = _add_row(rows, hope, 1.0, work, 0)
        n_touched = _add_row(rows, fear, -1.0, work, n_touched)
        margin = 0.0
        norm = 0.0
        for t in range(n_touched):
            j = touched[t]
            margin += weights[j] * scratch[j]
            norm += scratch[j] * scratch[j]
        loss = (hope_bleu - fear_bleu) - margin
        if loss > 0.0:
            eta = c if norm == 0.0 else min(c, loss / norm)
            count[0] += 1
            for t in range(n_touched):
                j = touched[t]
                delta = eta * scratch[j]
                totals[j] += (count[0] - last[j]) * weights[j] + delta
                weights[j] += delta
                last[j] = count[0]
            updates += 1
            loss_sum += loss
        for t in range(n_touched):
            scratch[touched[t]] = 0.0
            marked[touched[t]] = False
        kept = model if model_background else hope
        for k in range(10):
            background[k] = decay * background[k] + stats[kept, k]
    return updates, loss_sum


@njit(cache=True)
def averaged(weights, totals, last, count):
    """The averaged weights after ``count`` updates (``totals`` brought up to date in place; the weights
    themselves before any update)."""
    if count == 0:
        return weights.copy()
    out = np.empty_like(weights)
    for j in range(weights.shape[0]):
        totals[j] += (count - last[j]) * weights[j]
        last[j] = count
        out[j] = totals[j] / count
    return out
