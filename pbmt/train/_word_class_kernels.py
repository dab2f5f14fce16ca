"""Numba kernels of word-class induction by the exchange algorithm (``pbmt.train.word_classes``).

Words are 0 .. n_words - 1; ``succ_*`` and ``pred_*`` are CSR lists of each
word's successor and predecessor words with bigram counts. The objective is
the class-bigram log-likelihood up to terms that do not depend on the classes,

    F = sum_{c,d} f(N(c, d)) - sum_c f(N_left(c)) - sum_d f(N_right(d)),  f(x) = x ln x,

where N(c, d) counts bigrams whose first word is in class c and second in d,
N_left(c) bigrams whose first word is in c, N_right(d) whose second is in d.
"""

import numpy as np
from numba import njit


@njit(cache=True, inline="always")
def _f(x):
    return x * np.log(x) if x > 0.0 else 0.0


@njit(cache=True)
def class_counts(classes, n_classes, succ_offsets, succ_words, succ_counts):
    """(N float64[K, K], N_left float64[K], N_right float64[K]) of an assignment ``classes`` (int32[n_words])."""
    bigrams = np.zeros((n_classes, n_classes))
    for w in range(classes.shape[0]):
        for i in range(succ_offsets[w], succ_offsets[w + 1]):
            bigrams[classes[w], classes[succ_words[i]]] += succ_counts[i]
    return bigrams, bigrams.sum(axis=1), bigrams.sum(axis=0)


@njit(cache=True)
def objective(bigrams, left, right):
    """F of the class counts (natural log)."""
    total = 0.0
    k = left.shape[0]
    for c in range(k):
        for d in range(k):
            total += _f(bigrams[c, d])
        total -= _f(left[c]) + _f(right[c])
    return total


@njit(cache=True)
def exchange_pass(classes, order, bigrams, left, right, succ_offsets, succ_words, succ_counts,
                  pred_offsets, pred_words, pred_counts):
    """One pass of the exchange algorithm over the words in ``order``; returns the number of words moved.

    Each word leaves its class and joins the class that maximises F (its old
    class when no other is strictly better). ``classes``, ``bigrams``, ``left``
    and ``right`` are updated in place and stay exact.
    """
    k = left.shape[0]
    to_class = np.zeros(k)  # R[d]: bigrams (w, v), v != w, with v in class d
    from_class = np.zeros(k)  # L[c]: bigrams (u, w), u != w, with u in class c
    gains = np.zeros(k)  # change of F if w joins class c
    moved = 0
    for w in order:
        old = classes[w]
        to_class[:] = 0.0
        from_class[:] = 0.0
        self_count = 0.0
        for i in range(succ_offsets[w], succ_offsets[w + 1]):
            v = succ_words[i]
            if v == w:
                self_count += succ_counts[i]
            else:
                to_class[classes[v]] += succ_counts[i]
        for i in range(pred_offsets[w], pred_offsets[w + 1]):
            u = pred_words[i]
            if u != w:
                from_class[classes[u]] += pred_counts[i]
        as_left = to_class.sum() + self_count
        as_right = from_class.sum() + self_count
        # take w out of its class
        for d in range(k):
            bigrams[old, d] -= to_class[d]
            bigrams[d, old] -= from_class[d]
        bigrams[old, old] -= self_count
        left[old] -= as_left
        right[old] -= as_right
        for c in range(k):
            gain = _f(left[c]) - _f(left[c] + as_left) + _f(right[c]) - _f(right[c] + as_right)
            for d in range(k):
                if d != c:
                    if to_class[d] > 0.0:
                        gain += _f(bigrams[c, d] + to_class[d]) - _f(bigrams[c, d])
                    if from_class[d] > 0.0:
                        gain += _f(bigrams[d, c] + from_class[d]) - _f(bigrams[d, c])
            own = to_class[c] + from_class[c] + self_count
            if own > 0.0:
                gain += _f(bigrams[c, c] + own) - _f(bigrams[c, c])
            gains[c] = gain
        best = old
        for c in range(k):
            if gains[c] > gains[best] + 1e-9 * (1.0 + abs(gains[best])):
                best = c
        for d in range(k):
            bigrams[best, d] += to_class[d]
            bigrams[d, best] += from_class[d]
        bigrams[best, best] += self_count
        left[best] += as_left
        right[best] += as_right
        if best != old:
            classes[w] = best
            moved += 1
    return moved
