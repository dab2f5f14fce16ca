"""Numba kernels of search-graph lattices: per-edge features, and the upper envelope of all paths.

A search graph (``pbmt.search.decoder.SearchGraph``) is a lattice whose nodes
are recombination classes: hypothesis ``h`` is an edge from its parent's class
to its own. Recombination keys hold everything a later block's scores depend
on (coverage, state, the previous option), so the features an edge adds
are a function of the edge alone, whichever path reaches its source node:
the option-local values of its option and ``_scoring_kernels.transition``'s
per-column values of its block after its parent's (with the sentence end
when it completes the sentence).
"""

from collections import namedtuple

import numpy as np
from numba import njit

from pbmt.search._lattice_point_kernels import POINTS_PER_START, point_space, sample_points
from pbmt.search._scoring_kernels import transition


@njit(cache=True)
def hypothesis_transitions(tr, parent, option, klass, final_class, opt_start, opt_end, n_cols):
    """What each hypothesis's edge adds beyond its option's local values: ``float64[n, n_cols]``, every
    transition feature's values (``_scoring_kernels.transition``, per column) of option[h] after its parent's
    block in its parent's state, with the sentence end for complete hypotheses (row 0, the start: zeros).

    tr: ``Transitions``; parent, option, klass: int32[n] of a search graph (hypothesis 0 the empty start; a
    parent precedes its children); final_class: the class of complete hypotheses; opt_start, opt_end: int32[n_opt]
    source spans of the options.
    """
    n = parent.shape[0]
    states = np.empty((n, tr.begin.shape[0]), dtype=np.int64)
    states[0] = tr.begin
    out = np.zeros((n, n_cols))
    for h in range(1, n):
        p = parent[h]
        o = option[h]
        q = option[p] if p > 0 else -1
        prev_start = opt_start[q] if q >= 0 else 0
        prev_end = opt_end[q] if q >= 0 else 0
        transition(tr, states, p, states, h, prev_start, prev_end, q, o, opt_start[o], opt_end[o],
                   klass[h] == final_class, False, out[h])
    return out


@njit(cache=True)
def live_edges(parent, option, klass, final_class, opt_start, opt_end):
    """The edges of a search graph on some complete path, as a lattice in topological order.

    parent, option, klass: int32[n] (hypothesis 0 the start, parents before
    children); final_class >= 0. A class is a node if a complete hypothesis
    descends from one of its members; nodes are numbered by the number of
    source words they cover (then by class id), so the start is node 0, the
    final class the last node, and every edge goes to a higher number.
    Returns ``(hyp int64[e], source int32[e], target int32[e], n_nodes)``:
    the hypotheses that are edges between nodes, sorted by target node (then
    by hypothesis), and their nodes.
    """
    n = parent.shape[0]
    n_classes = 0
    for h in range(n):
        n_classes = max(n_classes, klass[h] + 1)
    covered = np.zeros(n, dtype=np.int64)
    class_covered = np.zeros(n_classes, dtype=np.int64)
    for h in range(1, n):
        o = option[h]
        covered[h] = covered[parent[h]] + opt_end[o] - opt_start[o]
        class_covered[klass[h]] = covered[h]
    alive = np.zeros(n_classes, dtype=np.bool_)
    alive[final_class] = True
    for h in range(n - 1, 0, -1):
        if alive[klass[h]]:
            alive[klass[parent[h]]] = True
    classes = np.flatnonzero(alive)
    order = classes[np.argsort(class_covered[classes], kind="mergesort")]
    node = np.full(n_classes, -1, dtype=np.int32)
    for i in range(order.shape[0]):
        node[order[i]] = i
    count = 0
    for h in range(1, n):
        if alive[klass[h]]:
            count += 1
    hyp = np.empty(count, dtype=np.int64)
    key = np.empty(count, dtype=np.int64)
    e = 0
    for h in range(1, n):
        if alive[klass[h]]:
            hyp[e] = h
            key[e] = node[klass[h]]
            e += 1
    hyp = hyp[np.argsort(key, kind="mergesort")]
    source = np.empty(count, dtype=np.int32)
    target = np.empty(count, dtype=np.int32)
    for e in range(count):
        source[e] = node[klass[parent[hyp[e]]]]
        target[e] = node[klass[hyp[e]]]
    return hyp, source, target, order.shape[0]


@njit(cache=True, nogil=True, _nrt=False)
def edge_scores(option_scores, option, transition, weights, first, last, out):
    """``out[e] = option_scores[option[e]] + transition[e] . weights`` for edges ``first:last``: what each edge adds
    to a path's score under a weight vector, its option's local part (float64[n_opt], ``local @ vector``) and its
    transition columns' (transition: float64[n_edges, c], weights: float64[c], those columns' weights; a column
    of zero weight is skipped). Writes into ``out`` (float64[n_edges]), so that threads fill blocks of it."""
    for e in range(first, last):
        total = 0.0
        for j in range(weights.shape[0]):
            w = weights[j]
            if w != 0.0:
                total += transition[e, j] * w
        out[e] = option_scores[option[e]] + total


@njit(cache=True, nogil=True)
def _room(array, need):
    """``array``, or a copy of it with room for ``need`` entries (at least twice the size)."""
    if need <= array.shape[0]:
        return array
    out = np.empty(max(2 * array.shape[0], need), dtype=array.dtype)
    for i in range(array.shape[0]):
        out[i] = array[i]
    return out


@njit(cache=True, nogil=True)
def near_edges(edge_offsets, node_offsets, source, target, a, margin, first, last, keep, new_source, new_target,
               counts):
    """Marks the edges of sentences ``first:last`` that lie on some complete path scoring within ``margin`` of
    the sentence's best path, where an edge adds ``a`` (float64[n_edges]) to a path's score: a forward and a
    backward Viterbi pass give each edge's best path through it.

    edge_offsets, node_offsets, source, target: as ``envelopes`` reads them. Writes keep: bool[n_edges];
    new_source, new_target: int32[n_edges], a kept edge's nodes numbered among its sentence's kept nodes in the
    same order (so the start stays 0, the final node last and every kept edge goes to a higher number); counts:
    int64[n_sent, 2], each sentence's kept nodes and edges. The best paths are kept whatever the rounding of
    their sums (a margin of 1e-9 of the best score is added), and a kept edge is on a complete path of kept edges
    (checked by reachability)."""
    prefix = np.empty(16)
    best = np.empty(16)
    reach = np.empty(16, dtype=np.bool_)
    coreach = np.empty(16, dtype=np.bool_)
    node_id = np.empty(16, dtype=np.int32)
    for s in range(first, last):
        lo_e = edge_offsets[s]
        hi_e = edge_offsets[s + 1]
        n_nodes = node_offsets[s + 1] - node_offsets[s]
        if prefix.shape[0] < n_nodes:
            prefix = np.empty(2 * n_nodes)
            best = np.empty(2 * n_nodes)
            reach = np.empty(2 * n_nodes, dtype=np.bool_)
            coreach = np.empty(2 * n_nodes, dtype=np.bool_)
            node_id = np.empty(2 * n_nodes, dtype=np.int32)
        for v in range(n_nodes):
            prefix[v] = -np.inf
            best[v] = -np.inf
            reach[v] = False
            coreach[v] = False
        prefix[0] = 0.0
        best[n_nodes - 1] = 0.0
        for e in range(lo_e, hi_e):
            prefix[target[e]] = max(prefix[target[e]], prefix[source[e]] + a[e])
        for e in range(hi_e - 1, lo_e - 1, -1):
            best[source[e]] = max(best[source[e]], best[target[e]] + a[e])
        cut = best[0] - margin - 1e-9 * (1.0 + abs(best[0]))
        reach[0] = True
        for e in range(lo_e, hi_e):
            keep[e] = prefix[source[e]] + a[e] + best[target[e]] >= cut
            if keep[e] and reach[source[e]]:
                reach[target[e]] = True
        coreach[n_nodes - 1] = True
        for e in range(hi_e - 1, lo_e - 1, -1):
            keep[e] = keep[e] and reach[source[e]] and coreach[target[e]]
            if keep[e]:
                coreach[source[e]] = True
        n_kept = 0
        for v in range(n_nodes):
            node_id[v] = n_kept
            if reach[v] and coreach[v]:
                n_kept += 1
        n_edges = 0
        for e in range(lo_e, hi_e):
            if keep[e]:
                new_source[e] = node_id[source[e]]
                new_target[e] = node_id[target[e]]
                n_edges += 1
        counts[s, 0] = n_kept
        counts[s, 1] = n_edges


#: rows of the float64[6, g] bounds of a bounded line search (``_hopeless``, ``_hopeless_between``)
GAMMA, TOP, CROSS, CROSS_TOP, CROSS_SHARE, SLOPE = 0, 1, 2, 3, 4, 5


@njit(cache=True, nogil=True, inline="always")
def _hopeless(la, lb, best, t, bound, tol):
    """True if no path that reaches node t on line (la, lb) is highest anywhere between the sample points
    (row t of ``best``: node t's best completions there, ``_lattice_point_kernels.sample_points``). Given
    instead in row t an edge target's best completions plus its source's best prefixes, and the edge's line
    (or zeros and a node's completions plus prefixes), True if no path through the edge (the node) is.

    A node's best completion is convex in gamma (as is the best path through an edge or a node), so below
    its chord between two sample points. Every sentence's envelope is at least its best paths' lines at the
    sample points (``bound[TOP]``: their values at the sample points ``bound[GAMMA]``), so on each interval at
    least the higher of two of them, which cross at ``bound[CROSS]`` (NaN: not inside the interval;
    ``bound[CROSS_TOP]``: their value there, ``bound[CROSS_SHARE]``: its place between the two sample
    points). The line plus the chord minus that bound is
    concave: below ``-tol`` at the two sample points and at the crossing, it is below everywhere between,
    and the pruning is exact."""
    for i in range(bound.shape[1]):
        if la + lb * bound[GAMMA, i] + best[t, i] >= bound[TOP, i] - tol:
            return False
    for i in range(bound.shape[1] - 1):
        x = bound[CROSS, i]
        if x == x:
            chord = best[t, i] + bound[CROSS_SHARE, i] * (best[t, i + 1] - best[t, i])
            if la + lb * x + chord >= bound[CROSS_TOP, i] - tol:
                return False
    return True


@njit(cache=True, nogil=True, inline="always")
def _hopeless_between(la, lb, best, t, bound, tol, left, right):
    """True if no path that reaches node t on line (la, lb) is highest anywhere in ``left <= gamma <= right``
    (inside the sample points; row t of ``best``: node t's best completions there).

    As ``_hopeless``, but on a part of the segment, and below the higher of the best paths' lines at the two
    sample points around each gamma (slopes ``bound[SLOPE]``) rather than their values at the points alone:
    on each interval between sample points the line plus the chord minus that bound is concave, so below
    ``-tol`` at the ends of the part of [left, right] inside it and at the crossing, it is below throughout."""
    for i in range(bound.shape[1] - 1):
        g0, g1 = bound[GAMMA, i], bound[GAMMA, i + 1]
        p, q = max(left, g0), min(right, g1)
        if p > q:
            continue
        for k in range(3):
            x = p if k == 0 else q if k == 1 else bound[CROSS, i]
            if k == 2 and not p < x < q:  # also NaN: no crossing inside the interval
                continue
            chord = best[t, i] + (x - g0) / (g1 - g0) * (best[t, i + 1] - best[t, i])
            floor = max(bound[TOP, i] + bound[SLOPE, i] * (x - g0), bound[TOP, i + 1] + bound[SLOPE, i + 1] * (x - g1))
            if la + lb * x + chord >= floor - tol:
                return False
    return True


@njit(cache=True, nogil=True, inline="always")
def _hopeful(pool_a, pool_b, j, lo, hi, shift_a, shift_b, t, best, bound, tol):
    """The first of the pool lines ``j:hi`` (an envelope ``lo:hi`` in increasing slope), shifted by (shift_a,
    shift_b), that is not ``_hopeless_between`` at node t over the part of the segment where it is the
    envelope's highest (hi: none). A path through another part of the envelope's node is below the path with
    the same completion through the line highest there, so only that part can reach the final envelope; the
    crossings are widened by a margin far above their rounding."""
    low, high = bound[GAMMA, 0], bound[GAMMA, bound.shape[1] - 1]
    while j < hi:
        left, right = low, high
        if j > lo:
            x = (pool_a[j - 1] - pool_a[j]) / (pool_b[j] - pool_b[j - 1])
            left = max(low, x - 1e-9 * (1.0 + abs(x)))
        if j + 1 < hi:
            x = (pool_a[j] - pool_a[j + 1]) / (pool_b[j + 1] - pool_b[j])
            right = min(high, x + 1e-9 * (1.0 + abs(x)))
        if not _hopeless_between(pool_a[j] + shift_a, pool_b[j] + shift_b, best, t, bound, tol, left, right):
            return j
        j += 1
    return j


EnvelopeBuffers = namedtuple("EnvelopeBuffers", ["a", "b", "edge", "prev"])
EnvelopeBuffers.__doc__ = """The two rows of a node's envelope being merged: intercepts ``a``, slopes ``b`` (float64[2, cap]) and
each line's back-pointers, its edge ``edge`` and its source envelope's pool line ``prev`` (int64[2, cap])."""

Pruning = namedtuple("Pruning", ["best", "bound", "tol"])
Pruning.__doc__ = """What the pruning tests read: each node's best completions ``best`` (float64[nodes, g]), the
sentence's bound at the sample points ``bound`` (float64[6, g]) and the rounding margin ``tol``."""


@njit(cache=True, nogil=True, inline="always")
def _push(out_a, out_b, out_e, out_p, r, m, la, lb, le, lp):
    """Push line (la, lb) with back-pointers (le, lp) on the upper envelope ``out[r, :m]`` (lines in increasing
    slope, none steeper than it) after popping the lines it makes never highest; returns the new size.
    A line of the same slope as the top one is dropped: the top one is at least as high."""
    if m > 0 and out_b[r, m - 1] == lb:
        return m
    while m >= 2:
        # the top line stays if the new one overtakes it after it overtook the one below; slopes increase, so
        # the crossings' denominators are positive and the comparison needs no division
        top_a, top_b = out_a[r, m - 1], out_b[r, m - 1]
        if (top_a - la) * (top_b - out_b[r, m - 2]) > (out_a[r, m - 2] - top_a) * (lb - top_b):
            break
        m -= 1
    out_a[r, m] = la
    out_b[r, m] = lb
    out_e[r, m] = le
    out_p[r, m] = lp
    return m + 1


@njit(cache=True, nogil=True, inline="always")
def _merge(buffers, cur, nh, pool_a, pool_b, lo, hi, shift_a, shift_b, edge, low, high, t, prune, pruning):
    """The upper envelope over [low, high] of the envelope in row ``cur`` of the ``EnvelopeBuffers``
    (``[:nh]``) and the lines ``pool[lo:hi]`` shifted by (shift_a, shift_b) (both in increasing slope; the new
    lines' back-pointers are ``edge`` and their pool index) into the other row; returns its size. On equal
    lines the envelope's stays. With ``prune``, the new lines ``_hopeless`` at node t under ``pruning``
    (a ``Pruning``) are left out."""
    buf_a, buf_b, buf_e, buf_p = buffers.a, buffers.b, buffers.edge, buffers.prev
    best, bound, tol = pruning.best, pruning.bound, pruning.tol
    r = 1 - cur
    m = 0
    i = 0
    j = lo
    if prune:
        j = _hopeful(pool_a, pool_b, j, lo, hi, shift_a, shift_b, t, best, bound, tol)
    while i < nh or j < hi:
        take_h = j >= hi
        if not take_h and i < nh:
            b_new = pool_b[j] + shift_b
            take_h = buf_b[cur, i] < b_new or (buf_b[cur, i] == b_new and buf_a[cur, i] >= pool_a[j] + shift_a)
        if take_h:
            m = _push(buf_a, buf_b, buf_e, buf_p, r, m, buf_a[cur, i], buf_b[cur, i], buf_e[cur, i], buf_p[cur, i])
            i += 1
        else:
            m = _push(buf_a, buf_b, buf_e, buf_p, r, m, pool_a[j] + shift_a, pool_b[j] + shift_b, edge, j)
            j += 1
            if prune:
                j = _hopeful(pool_a, pool_b, j, lo, hi, shift_a, shift_b, t, best, bound, tol)
    # lines highest only below low or above high
    first = 0
    while first + 1 < m and (buf_a[r, first] - buf_a[r, first + 1]) / (buf_b[r, first + 1] - buf_b[r, first]) <= low:
        first += 1
    while m - 1 > first and (buf_a[r, m - 2] - buf_a[r, m - 1]) / (buf_b[r, m - 1] - buf_b[r, m - 2]) >= high:
        m -= 1
    if first > 0:
        for k in range(first, m):
            buf_a[r, k - first] = buf_a[r, k]
            buf_b[r, k - first] = buf_b[r, k]
            buf_e[r, k - first] = buf_e[r, k]
            buf_p[r, k - first] = buf_p[r, k]
    return m - first


EnvelopePool = namedtuple("EnvelopePool", ["a", "b", "edge", "prev", "node_lo", "node_hi"])
EnvelopePool.__doc__ = """Every node's envelope of one sentence: its lines' intercepts ``a``, slopes ``b``
(float64[cap]) and back-pointers ``edge``, ``prev`` (int64[cap]); node v's lines are ``node_lo[v]:node_hi[v]``
(int64[>= nodes])."""


@njit(cache=True, nogil=True)
def _sweep(lo_e, hi_e, source, target, a, b, low, high, n_g, pool, buffers, pruning, prefix):
    """One sentence's sweep (``envelopes``) over its edges ``lo_e:hi_e`` into the ``EnvelopePool`` ``pool``,
    merging in the ``EnvelopeBuffers``; with ``n_g`` sample points, the ``Pruning`` and the nodes' best
    prefixes there (``_lattice_point_kernels.prefixes``) drop what cannot be highest. Returns ``(0, 0)``, or
    the pool size or the buffers' capacity the sentence needs: the caller then gives more room and sweeps
    again. The work space is never grown here: an array that may be replaced inside the loop over the edges
    makes each turn of it several times dearer (docs/tuning-results.md)."""
    pool_a, pool_b, pool_edge, pool_prev, node_lo, node_hi = pool
    buf_a, buf_b, buf_e, buf_p = buffers
    best, bound, tol = pruning
    through = np.empty((1, n_g))
    pool_a[0] = 0.0
    pool_b[0] = 0.0
    pool_edge[0] = -1
    pool_prev[0] = -1
    node_lo[0] = 0
    node_hi[0] = 1
    used = 1
    e = lo_e
    while e < hi_e:
        t = target[e]
        cur = 0
        nh = 0
        if n_g > 0:
            # no path through node t is highest: none of its edges is looked at
            for i in range(n_g):
                through[0, i] = prefix[t, i] + best[t, i]
            if _hopeless(0.0, 0.0, through, 0, bound, tol):
                while e < hi_e and target[e] == t:
                    e += 1
        while e < hi_e and target[e] == t:
            src = source[e]
            if n_g > 0:
                for i in range(n_g):
                    through[0, i] = prefix[src, i] + best[t, i]
                if _hopeless(a[e], b[e], through, 0, bound, tol):
                    e += 1
                    continue
            need = nh + node_hi[src] - node_lo[src]
            if need > buffers.a.shape[1]:
                return 0, need
            nh = _merge(buffers, cur, nh, pool_a, pool_b, node_lo[src], node_hi[src], a[e], b[e], e, low, high,
                        t, n_g > 0, pruning)
            cur = 1 - cur
            e += 1
        if used + nh > pool_a.shape[0]:
            return used + nh, 0
        node_lo[t] = used
        for i in range(nh):
            pool_a[used + i] = buf_a[cur, i]
            pool_b[used + i] = buf_b[cur, i]
            pool_edge[used + i] = buf_e[cur, i]
            pool_prev[used + i] = buf_p[cur, i]
        used += nh
        node_hi[t] = used
    return 0, 0


@njit(cache=True, nogil=True)
def envelopes(edge_offsets, node_offsets, source, target, a, b, option, word_offsets, words, low, high, gammas,
              rounds, first, last):
    """Sentences ``first:last``'s upper envelopes of ``A(path) + gamma * B(path)`` over every complete path of
    their lattices, by one sweep over each lattice's nodes in topological order (Macherey et al., 2008,
    Algorithm 1).

    edge_offsets: int64[n_sent+1] (CSR: sentence s owns edges
    ``edge_offsets[s]:edge_offsets[s+1]``); node_offsets: int64[n_sent+1], the
    node numbers of each sentence (node 0 its start, the last its final
    node); source, target: int32[n_edges] nodes within the sentence, edges
    sorted by target, every edge's source below its target; a, b:
    float64[n_edges] what each edge adds to a path's intercept and slope;
    option: int64[n_edges] each edge's option, an index into word_offsets:
    int64[n_opt+1] and words: int32[...], the words an option outputs.

    Each node's envelope is the upper envelope of its incoming edges' source
    envelopes, shifted by the edges' lines, merged one edge at a time (each
    envelope is sorted by slope, so no sort is needed); each of its lines
    keeps the edge and the source envelope's line it came from, which is how
    a path is read out. Only ``low <= gamma <= high`` matters (-inf and inf:
    the whole line): a line of a node's envelope that is highest only
    outside it cannot lead to a final line that is highest inside it, so it
    is dropped at once. With sample points ``gammas`` (float64[g], ``low``
    first and ``high`` last; g = 0 on the whole line), a forward and a
    backward Viterbi pass first find each node's best prefix and best
    completion at each (``_lattice_point_kernels``); then a node, an edge or a line
    every path through which stays below the sentence's best paths between
    the sample points is never looked at (``_hopeless``). This pruning is
    exact (such paths are never highest) and leaves a few percent of the
    edges to sweep on a climb's bounded segment (docs/tuning-results.md).
    Before, ``rounds`` rounds add points where each sentence's best paths
    change (``_lattice_point_kernels.sample_points``, at most
    ``POINTS_PER_START`` times g points a sentence).

    Returns ``(line_offsets int64[last-first+1], A float64[k], B float64[k],
    out_offsets int64[k+1], out_words int32[...])``: sentence first+s's final
    envelope is lines ``line_offsets[s]:line_offsets[s+1]`` in increasing
    slope (increasing gamma), line i the path whose words are
    ``out_words[out_offsets[i]:out_offsets[i+1]]``.
    """
    n_g = gammas.shape[0]
    line_offsets = np.zeros(last - first + 1, dtype=np.int64)
    res_a = np.empty(16)
    res_b = np.empty(16)
    out_offsets = np.zeros(17, dtype=np.int64)
    out_words = np.empty(256, dtype=np.int32)
    # per-sentence work space, grown as needed and reused: every node's envelope in a pool, two buffers for
    # the envelope being merged at a node, and each node's best prefixes and completions at the sample points
    pool_a = np.empty(1024)
    pool_b = np.empty(1024)
    pool_edge = np.empty(1024, dtype=np.int64)
    pool_prev = np.empty(1024, dtype=np.int64)
    buf_a = np.empty((2, 64))
    buf_b = np.empty((2, 64))
    buf_e = np.empty((2, 64), dtype=np.int64)
    buf_p = np.empty((2, 64), dtype=np.int64)
    node_lo = np.empty(16, dtype=np.int64)
    node_hi = np.empty(16, dtype=np.int64)
    space = point_space(16, POINTS_PER_START * n_g)
    bound = np.full((6, 0), np.nan)
    path = np.empty(64, dtype=np.int64)
    k = 0
    for s in range(first, last):
        lo_e = edge_offsets[s]
        hi_e = edge_offsets[s + 1]
        n_nodes = node_offsets[s + 1] - node_offsets[s]
        node_lo = _room(node_lo, n_nodes)
        node_hi = _room(node_hi, n_nodes)
        tol = 0.0
        n_s = 0
        best = space.best
        if n_g > 0:
            if space.best.shape[0] < n_nodes:
                space = point_space(2 * n_nodes, space.gamma.shape[0])
            n_s = sample_points(lo_e, hi_e, n_nodes, source, target, a, b, gammas, rounds, space)
            points, best_slope = space.gamma, space.best_slope
            best = space.best if n_s > n_g else space.col_best
            bound = np.full((6, n_s), np.nan)
            for i in range(n_s):
                bound[GAMMA, i] = points[i]
                bound[TOP, i] = best[0, i]
                bound[SLOPE, i] = best_slope[i]
                tol = max(tol, abs(best[0, i]))
            # a margin far above the rounding of sums taken in another order
            tol = 1e-9 * (1.0 + tol)
            for i in range(n_s - 1):
                # the lines of the best paths at sample points i and i + 1 cross at x
                slope_i, slope_j = best_slope[i], best_slope[i + 1]
                if slope_j > slope_i:
                    x = points[i] + (best[0, i] - best[0, i + 1] + slope_j * (points[i + 1] - points[i])) / \
                        (slope_j - slope_i)
                    if points[i] < x < points[i + 1]:
                        bound[CROSS, i] = x
                        bound[CROSS_TOP, i] = best[0, i] + slope_i * (x - points[i])
                        bound[CROSS_SHARE, i] = (x - points[i]) / (points[i + 1] - points[i])
        while True:  # the sweep, again with more room while the sentence's envelopes outgrow the work space
            pool_need, buf_need = _sweep(lo_e, hi_e, source, target, a, b, low, high, n_s,
                                         EnvelopePool(pool_a, pool_b, pool_edge, pool_prev, node_lo, node_hi),
                                         EnvelopeBuffers(buf_a, buf_b, buf_e, buf_p),
                                         Pruning(best, bound, tol), space.prefix)
            if pool_need == 0 and buf_need == 0:
                break
            if pool_need > 0:
                pool_a, pool_b = _room(pool_a, pool_need), _room(pool_b, pool_need)
                pool_edge, pool_prev = _room(pool_edge, pool_need), _room(pool_prev, pool_need)
            if buf_need > 0:
                cap = max(2 * buf_a.shape[1], buf_need)
                buf_a, buf_b = np.empty((2, cap)), np.empty((2, cap))
                buf_e, buf_p = np.empty((2, cap), dtype=np.int64), np.empty((2, cap), dtype=np.int64)
        final = n_nodes - 1
        n_final = node_hi[final] - node_lo[final]
        line_offsets[s - first + 1] = line_offsets[s - first] + n_final
        res_a = _room(res_a, k + n_final)
        res_b = _room(res_b, k + n_final)
        out_offsets = _room(out_offsets, k + n_final + 1)
        for line in range(node_lo[final], node_hi[final]):
            res_a[k] = pool_a[line]
            res_b[k] = pool_b[line]
            n_path = 0
            at = line
            while pool_edge[at] >= 0:
                path = _room(path, n_path + 1)
                path[n_path] = pool_edge[at]
                n_path += 1
                at = pool_prev[at]
            start = out_offsets[k]
            length = 0
            for p in range(n_path):
                o = option[path[p]]
                length += word_offsets[o + 1] - word_offsets[o]
            out_words = _room(out_words, start + length)
            pos = start
            for p in range(n_path - 1, -1, -1):
                o = option[path[p]]
                for w in range(word_offsets[o], word_offsets[o + 1]):
                    out_words[pos] = words[w]
                    pos += 1
            out_offsets[k + 1] = pos
            k += 1
    return line_offsets, res_a[:k], res_b[:k], out_offsets[:k + 1], out_words[:out_offsets[k]]
