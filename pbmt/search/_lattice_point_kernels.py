"""Numba kernels of a bounded lattice line search's sample points: where the best paths are found first.

A line search over a bounded segment prunes a sentence's lattice at sample points of the segment
(``_lattice_kernels.envelopes``): it finds every node's best completion and best prefix at each point by
Viterbi passes, and drops what stays below the sentence's best paths between the points. The pruning is exact
whatever the points; how much it drops depends on where they are. Between two points at which the same path
is best, the sentence's envelope is that path's line (it is convex and touches the line at both ends), so a
node below it at both points is below it throughout: only an interval whose ends have different best paths
lets paths through that stay below the envelope. Each such interval is split at the crossing of its ends' best
lines, where a Viterbi pass either finds the envelope there on those two lines (the interval is then two
pieces of lines) or a better path, whose line splits it again (the search for a sentence's envelope by
Viterbi passes alone, here stopped after a few rounds and at a number of points).
"""

from collections import namedtuple

import numpy as np
from numba import njit

PointSpace = namedtuple("PointSpace", ["gamma", "best", "best_slope", "prefix", "col_gamma", "col_best",
                                       "col_slope", "order", "split"])
PointSpace.__doc__ = """Work space of ``sample_points`` for at most ``cap`` points: the points in increasing
order ``gamma`` (float64[cap]), each node's best completions and best prefixes there (``best``, ``prefix``:
float64[>= nodes, cap]) and the slopes of the sentence's best paths there (``best_slope``, float64[cap]); the
completions and their slopes in the order the points were found
(``col_gamma`` float64[cap], ``col_best``, ``col_slope`` float64[>= nodes, cap]), ``order`` (int64[cap]) the
found points in increasing order and ``split`` (int64[cap]) the point an interval is split at (-1: none;
-2: the interval is two pieces of lines already)."""


#: at most this many points per point a sentence's sampling starts from (``point_space``'s room)
POINTS_PER_START = 4


@njit(cache=True, nogil=True)
def point_space(rows, cap):
    """A ``PointSpace`` of ``cap`` points for ``rows`` nodes."""
    return PointSpace(np.empty(cap), np.empty((rows, cap)), np.empty(cap), np.empty((rows, cap)),
                      np.empty(cap), np.empty((rows, cap)), np.empty((rows, cap)), np.empty(cap, dtype=np.int64),
                      np.empty(cap, dtype=np.int64))


@njit(cache=True, nogil=True)
def completions(lo_e, hi_e, n_nodes, source, target, a, b, gamma, first, last, best, best_slope):
    """Each node's best completion at the points ``gamma[first:last]`` by one backward Viterbi pass over a
    sentence's edges ``lo_e:hi_e`` (sorted by target, so that every edge's target is final when the edge is
    read backward): ``best[v, i]``, the highest ``A + gamma[i] * B`` over the paths from node v to the final
    node, and ``best_slope[v, i]`` the B of that path (columns ``first:last`` of float64[>= n_nodes, >= last],
    written)."""
    for v in range(n_nodes):
        for i in range(first, last):
            best[v, i] = -np.inf
            best_slope[v, i] = 0.0
    for i in range(first, last):
        best[n_nodes - 1, i] = 0.0
    for e in range(hi_e - 1, lo_e - 1, -1):
        s = source[e]
        t = target[e]
        for i in range(first, last):
            value = best[t, i] + a[e] + gamma[i] * b[e]
            if value > best[s, i]:
                best[s, i] = value
                best_slope[s, i] = best_slope[t, i] + b[e]


@njit(cache=True, nogil=True)
def prefixes(lo_e, hi_e, n_nodes, source, target, a, b, gamma, n, prefix):
    """Each node's best prefix at the points ``gamma[:n]`` by one forward Viterbi pass: ``prefix[v, i]``, the
    highest ``A + gamma[i] * B`` over the paths from the start to node v (float64[>= n_nodes, >= n], written)."""
    for v in range(n_nodes):
        for i in range(n):
            prefix[v, i] = -np.inf
    for i in range(n):
        prefix[0, i] = 0.0
    for e in range(lo_e, hi_e):
        s = source[e]
        t = target[e]
        for i in range(n):
            prefix[t, i] = max(prefix[t, i], prefix[s, i] + a[e] + gamma[i] * b[e])


@njit(cache=True, nogil=True)
def sample_points(lo_e, hi_e, n_nodes, source, target, a, b, start, rounds, space):
    """The sample points of one sentence's pruning (module docstring): the points ``start`` (float64[g],
    increasing), then at most ``rounds`` rounds that split, at the crossing of its ends' best paths' lines, each
    interval whose ends have different best paths, as long as the ``PointSpace`` ``space`` has room. Returns
    the number n of points; writes ``space.gamma[:n]``, each node's best completions and best prefixes there
    (columns ``:n`` of ``space.best``, or of ``space.col_best`` when n is the number of points of ``start``,
    and of ``space.prefix``), and the slopes of the sentence's best paths there (``space.best_slope[:n]``)."""
    gamma, col_gamma, col_best, col_slope, order, split = (space.gamma, space.col_gamma, space.col_best,
                                                           space.col_slope, space.order, space.split)
    cap = gamma.shape[0]
    n = start.shape[0]
    for i in range(n):
        col_gamma[i] = start[i]
        order[i] = i
        split[i] = -1
    completions(lo_e, hi_e, n_nodes, source, target, a, b, col_gamma, 0, n, col_best, col_slope)
    found = n
    for _ in range(rounds):
        tol = 0.0
        for k in range(n):
            tol = max(tol, abs(col_best[0, order[k]]))
        tol = 1e-9 * (1.0 + tol)
        added = found
        for k in range(n - 1):
            if split[k] != -1:
                continue
            c0, c1 = order[k], order[k + 1]
            s0, s1 = col_slope[0, c0], col_slope[0, c1]
            g0, g1 = col_gamma[c0], col_gamma[c1]
            x = g0 + (col_best[0, c0] - col_best[0, c1] + s1 * (g1 - g0)) / (s1 - s0) if s1 > s0 else g0
            if not g0 < x < g1 or added == cap:
                split[k] = -2  # one best path at both ends (or no room left): not split
                continue
            col_gamma[added] = x
            split[k] = added
            added += 1
        if added == found:
            break
        completions(lo_e, hi_e, n_nodes, source, target, a, b, col_gamma, found, added, col_best, col_slope)
        found = added
        # insert the new points after the ends they split, from the last so that no entry is overwritten unread
        m = n + sum_split(split, n - 1)
        at = m - 1
        order[at] = order[n - 1]
        split[at] = -1
        at -= 1
        for k in range(n - 2, -1, -1):
            c = split[k]
            if c >= 0:
                c0 = order[k]
                line = col_best[0, c0] + col_slope[0, c0] * (col_gamma[c] - col_gamma[c0])
                piece = -2 if col_best[0, c] <= line + tol else -1  # the envelope there is on the two lines
                order[at] = c
                split[at] = piece
                at -= 1
                order[at] = c0
                split[at] = piece
            else:
                order[at] = order[k]
                split[at] = split[k]
            at -= 1
        n = m
    for k in range(n):
        gamma[k] = col_gamma[order[k]]
        space.best_slope[k] = col_slope[0, order[k]]
    if n > start.shape[0]:
        best = space.best
        for v in range(n_nodes):
            for k in range(n):
                best[v, k] = col_best[v, order[k]]
    prefixes(lo_e, hi_e, n_nodes, source, target, a, b, gamma, n, space.prefix)
    return n


@njit(cache=True, nogil=True, inline="always")
def sum_split(split, n):
    """How many of the intervals ``split[:n]`` are split at a point (>= 0)."""
    count = 0
    for k in range(n):
        if split[k] >= 0:
            count += 1
    return count
