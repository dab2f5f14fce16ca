"""Numba kernels of cube pruning (Huang & Chiang, 2007), over the stack decoder's pool, classes and stacks
(``_decoder_kernels``): each stack is filled by popping the best cells of a queue over edges, which pair a
group of kept hypotheses with a span they may translate next, and the span's options sorted by their
estimate.
"""

from collections import namedtuple

import numpy as np
from numba import njit, types

from pbmt.base.numba_linking import driver
from pbmt.search._array_kernels import best_first, grow1
from pbmt.search._decoder_kernels import (_class_room, _future_with, _graph, _grow_pool, _hash, _kept, _new_search,
                                          _place, _write, reachable_spans)
from pbmt.search._scoring_kernels import end_parts, extension_score

Queue = namedtuple("Queue", [
    "edge", "row", "col",  # int64[cap]: each cell's edge, hypothesis row and option column
    "score",  # float64[cap]: its score
    "state",  # int64[cap, width]: its state
    "total",  # float64[cap]: its score plus future estimate
    "heap_keys", "heap",  # float64[cap], int64[cap]: the max-heap of cells by total
])
"""Cube pruning's scored cells of the stack being filled."""

Edges = namedtuple("Edges", [
    "group",  # int64[cap]: the edge's group of kept hypotheses
    "start", "end",  # int32[cap]: the span it translates
    "fut",  # float64[cap]: future estimate after it
    "next",  # int64[cap]: the next edge into the same stack (-1: last)
    "members",  # int32[cap]: grouped kept hypotheses of every expanded stack
    "group_lo",  # int64[cap]: group g's members are members[group_lo[g]:group_lo[g + 1]]
])
"""Cube pruning's edges: groups of kept hypotheses times the spans they may translate next."""


# Called by kernels only: compiled without the CPython and C-function wrappers a call from Python needs
# (their unboxing of tuples of arrays is compiled and optimised anew; docs/decoding.md, "The first run").
@njit(cache=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)
def _options_by_estimate(span_offsets, estimate):
    """Option indices with each span's options sorted by ``estimate`` (best first, stable)."""
    order = np.arange(estimate.shape[0])
    for k in range(span_offsets.shape[0] - 1):
        lo, hi = span_offsets[k], span_offsets[k + 1]
        if hi - lo > 1:
            ranked = best_first(estimate[lo:hi])
            for i in range(hi - lo):  # a loop, not a slice copy: no shape check to compile
                order[lo + i] = lo + ranked[i]
    return order


@njit(cache=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)
def _groups(kept, cov, prev_end):
    """Kept hypotheses (best first) grouped by (coverage, last block end), each group best first.

    Returns (hypotheses int32[k] in group order, group offsets int64[g + 1]).
    """
    k = kept.shape[0]
    size = 16
    while size < 2 * k:
        size *= 2
    table = np.full(size, -1, dtype=np.int64)
    first = np.empty(k, dtype=np.int32)  # a member of each group
    group = np.empty(k, dtype=np.int64)
    n_group = 0
    for r in range(k):
        h = kept[r]
        slot = np.int64(_hash(cov, h, np.uint64(prev_end[h] + 7) * np.uint64(0xC2B2AE3D27D4EB4F))
                        & np.uint64(size - 1))
        while table[slot] >= 0:
            other = first[table[slot]]
            if prev_end[other] == prev_end[h]:
                same = True
                for w in range(cov.shape[1]):
                    if cov[other, w] != cov[h, w]:
                        same = False
                        break
                if same:
                    break
            slot = (slot + 1) & (size - 1)
        if table[slot] < 0:
            table[slot] = n_group
            first[n_group] = h
            n_group += 1
        group[r] = table[slot]
    offsets = np.zeros(n_group + 1, dtype=np.int64)
    for r in range(k):
        offsets[group[r] + 1] += 1
    offsets = np.cumsum(offsets)
    fill = offsets[:-1].copy()
    out = np.empty(k, dtype=np.int32)
    for r in range(k):
        out[fill[group[r]]] = kept[r]
        fill[group[r]] += 1
    return out, offsets


@njit(cache=True, inline="always")
def _ahead(key_a, cell_a, key_b, cell_b):
    """Whether cell a comes out of the queue before cell b: the higher key first, ties to the earlier cell."""
    return key_a > key_b or (key_a == key_b and cell_a < cell_b)


@njit(cache=True, inline="always")
def _queue_push(keys, cells, size, key, c):
    """Push cell ``c`` with priority ``key`` on the max-heap (``keys``, ``cells``, with room) of ``size``
    entries; ties go to the earlier cell. Returns the new size."""
    i = size
    while i > 0:
        up = (i - 1) >> 1
        if _ahead(keys[up], cells[up], key, c):
            break
        keys[i] = keys[up]
        cells[i] = cells[up]
        i = up
    keys[i] = key
    cells[i] = c
    return size + 1


@njit(cache=True, inline="always")
def _queue_sink(keys, cells, size, key, c):
    """Put cell ``c`` with priority ``key`` in the free top of the max-heap of ``size`` entries (counting the
    top) and sift it down."""
    i = 0
    while True:
        child = 2 * i + 1
        if child >= size:
            break
        if child + 1 < size and _ahead(keys[child + 1], cells[child + 1], keys[child], cells[child]):
            child += 1
        if _ahead(key, c, keys[child], cells[child]):
            break
        keys[i] = keys[child]
        cells[i] = cells[child]
        i = child
    keys[i] = key
    cells[i] = c


@njit(cache=True, _nrt=False, no_cpython_wrapper=True, no_cfunc_wrapper=True)
def _fill_stack(s, first_edge, edges, order, sentence, tr, limits, stacks, pool, n_hyp, classes, key_option, queue):
    """Fill stack s of ``cube_kernel`` from its edges (the list from ``first_edge``); returns the new number
    of hypotheses. Allocates nothing (no reference counting in the hot loop): the caller makes room in the
    pool, the classes and the queue for everything the stack can add."""
    n, span_offsets, max_length = sentence.n, sentence.span_offsets, sentence.max_length
    heap_keys, heap = queue.heap_keys, queue.heap
    # fill stack s: seed the queue with every edge's best cell, then pop
    n_cand = 0
    size = 0
    pops = 0
    top_free = False  # the heap's top is a popped cell whose place is free
    seed = first_edge
    while seed >= 0 or (size > 0 and pops < limits.pop_limit):
        if seed >= 0:
            ce, ci, cj = seed, 0, 0
            seed = edges.next[seed]
            n_next = 1  # the cell itself
        else:
            c = heap[0]  # the top stays in the heap until its first successor takes its place (see below)
            top_free = True
            pops += 1
            ce, ci, cj = queue.edge[c], queue.row[c], queue.col[c]
            if queue.total[c] < stacks.best[s] + limits.log_beam:
                stacks.stats[s, 4] += 1
            else:
                if queue.total[c] > stacks.best[s]:
                    stacks.best[s] = queue.total[c]
                h = edges.members[edges.group_lo[edges.group[ce]] + ci]
                o = order[span_offsets[edges.start[ce] * max_length + edges.end[ce] - edges.start[ce] - 1] + cj]
                _write(pool, n_hyp, h, o, edges.start[ce], edges.end[ce], queue.score[c], queue.state, c, s == n,
                       edges.fut[ce], key_option)
                if _place(pool, n_hyp, s, s == n, classes, stacks, limits.keep_arcs):
                    n_hyp += 1
            n_next = 2  # its successors in the grid (see below)
        lo = edges.group_lo[edges.group[ce]]
        rows = edges.group_lo[edges.group[ce] + 1] - lo
        span = edges.start[ce] * max_length + edges.end[ce] - edges.start[ce] - 1
        cols = span_offsets[span + 1] - span_offsets[span]
        for q in range(n_next):
            if n_next == 1:
                i, j = ci, cj
            elif q == 0:
                i, j = ci, cj + 1
            elif cj == 0:
                i, j = ci + 1, cj
            else:
                continue  # (i + 1, j) is queued by (i + 1, j - 1)
            if i >= rows or j >= cols:
                continue
            h = edges.members[lo + i]
            o = order[span_offsets[span] + j]
            step = extension_score(tr, pool.state, h, queue.state, np.int64(n_cand), pool.prev_start[h],
                                   pool.prev_end[h], pool.option[h], o, edges.start[ce], edges.end[ce], s == n)
            queue.edge[n_cand], queue.row[n_cand], queue.col[n_cand] = ce, i, j
            queue.score[n_cand] = pool.score[h] + sentence.local_score[o] + step
            queue.total[n_cand] = queue.score[n_cand] + edges.fut[ce]
            if top_free:
                _queue_sink(heap_keys, heap, size, queue.total[n_cand], n_cand)
                top_free = False
            else:
                size = _queue_push(heap_keys, heap, size, queue.total[n_cand], n_cand)
            n_cand += 1
        if top_free:  # a popped cell without successors: the heap's last entry takes its place
            size -= 1
            _queue_sink(heap_keys, heap, size, heap_keys[size], heap[size])
            top_free = False
    return n_hyp


@njit(cache=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)
def _new_queue(cap, width):
    """Room for ``cap`` scored cells (``Queue``)."""
    return Queue(np.empty(cap, np.int64), np.empty(cap, np.int64), np.empty(cap, np.int64), np.empty(cap),
                 np.empty((cap, width), np.int64), np.empty(cap), np.empty(cap), np.empty(cap, np.int64))


@njit(cache=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)
def _grow_edges(edges, cap):
    """The edges with room for ``cap`` edges (members and groups unchanged)."""
    return Edges(grow1(edges.group, cap), grow1(edges.start, cap), grow1(edges.end, cap), grow1(edges.fut, cap),
                 grow1(edges.next, cap), edges.members, edges.group_lo)


@driver  # once a stack: no second optimisation of the growing kernels it links in
@njit(cache=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)
def _stack_room(s, edge_head, edges, sentence, limits, pool, n_hyp, classes, queue):
    """Room for what filling stack s can add: at most min(pop limit, cells) hypotheses and classes, and the
    seeds plus two successors per pop as queued cells. Returns (pool, classes, queue)."""
    cells = 0
    seeds = 0
    e = edge_head[s]
    while e >= 0:
        span = edges.start[e] * sentence.max_length + edges.end[e] - edges.start[e] - 1
        cells += ((edges.group_lo[edges.group[e] + 1] - edges.group_lo[edges.group[e]])
                  * (sentence.span_offsets[span + 1] - sentence.span_offsets[span]))
        seeds += 1
        e = edges.next[e]
    most = min(limits.pop_limit, cells)
    if n_hyp + most > pool.cov.shape[0]:
        pool = _grow_pool(pool, max(2 * pool.cov.shape[0], n_hyp + most))
    classes = _class_room(classes, most, pool)
    room = min(cells, seeds + 2 * most)
    if room > queue.edge.shape[0]:
        queue = _new_queue(room, pool.state.shape[1])
    return pool, classes, queue


@njit(cache=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)
def _add_edges(s, kept, edge_head, edges, counts, sentence, limits, pool, spans):
    """Group the kept hypotheses of stack s (``_groups``) and add the edges out of each group to the lists
    from ``edge_head``. counts: int64[3], the members, groups and edges so far (updated). Returns the edges
    (grown)."""
    n, max_length = sentence.n, sentence.max_length
    n_members, n_group, n_edge = counts[0], counts[1], counts[2]
    grouped, offsets = _groups(kept, pool.cov, pool.prev_end)
    members, group_lo = edges.members, edges.group_lo
    if n_members + grouped.shape[0] > members.shape[0]:
        members = grow1(members, 2 * (n_members + grouped.shape[0]))
    if n_group + offsets.shape[0] > group_lo.shape[0]:
        group_lo = grow1(group_lo, 2 * (n_group + offsets.shape[0]))
    edges = Edges(edges.group, edges.start, edges.end, edges.fut, edges.next, members, group_lo)
    for i in range(grouped.shape[0]):
        members[n_members + i] = grouped[i]
    for g in range(offsets.shape[0] - 1):
        group = n_group + g
        group_lo[group] = n_members + offsets[g]
        group_lo[group + 1] = n_members + offsets[g + 1]
        h = grouped[offsets[g]]
        n_spans = reachable_spans(pool.cov, h, n, pool.prev_end[h], max_length, limits.distortion_limit,
                                  limits.mon_swap, sentence.span_offsets, spans, sentence.zones, sentence.walls)
        if n_edge + n_spans > edges.group.shape[0]:
            edges = _grow_edges(edges, 2 * (n_edge + n_spans))
        for k in range(n_spans):
            start, end = spans[k, 0], spans[k, 1]
            t = s + end - start
            edges.group[n_edge], edges.start[n_edge], edges.end[n_edge] = group, start, end
            edges.fut[n_edge] = 0.0 if t == n else _future_with(pool.cov, h, start, end, n, sentence.future)
            edges.next[n_edge] = edge_head[t]
            edge_head[t] = n_edge
            n_edge += 1
    counts[0] = n_members + grouped.shape[0]
    counts[1] = n_group + offsets.shape[0] - 1
    counts[2] = n_edge
    return edges


@driver  # once a sentence: no second optimisation of the kernels it links in
@njit(cache=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)
def new_cube_search(sentence, tr):
    """A cube pruning search's start: the stack decoder's (``_new_search``: pool, classes, stacks, room for
    spans), each span's options by estimate, and empty edges, edge lists (``int64[n + 1]``), edge counts
    (``_add_edges``) and queue."""
    pool, classes, stacks, spans = _new_search(sentence, tr)
    order = _options_by_estimate(sentence.span_offsets, sentence.estimate)
    edges = Edges(np.empty(256, np.int64), np.empty(256, np.int32), np.empty(256, np.int32), np.empty(256),
                  np.empty(256, np.int64), np.empty(256, np.int32), np.zeros(64, np.int64))
    edge_head = np.full(sentence.n + 1, -1, dtype=np.int64)
    counts = np.zeros(3, np.int64)
    queue = _new_queue(np.int64(256), pool.state.shape[1])
    return pool, classes, stacks, spans, order, edges, edge_head, counts, queue


@njit(cache=True, inline="always")
def fill_stack(s, edge_head, edges, order, sentence, tr, limits, stacks, pool, n_hyp, classes, queue):
    """Fill stack s > 0 from its edges (``_fill_stack``, room made first); returns (pool, classes, queue,
    number of hypotheses). Inlined into its callers: as a kernel of its own, numba would link, optimise and
    turn into machine code all of ``_fill_stack``'s code once more for it (about 1.5 CPU s of a cold run)."""
    pool, classes, queue = _stack_room(s, edge_head, edges, sentence, limits, pool, n_hyp, classes, queue)
    n_hyp = _fill_stack(s, edge_head[s], edges, order, sentence, tr, limits, stacks, pool, n_hyp, classes,
                        tr.key_option, queue)
    return pool, classes, queue, n_hyp


@driver  # its own code is the loop over stacks: no second optimisation of the code it links in
@njit(cache=True, nogil=True)
def cube_kernel(sentence, tr, limits):
    """Cube pruning of one sentence of ``sentence.n`` > 0 words (Chiang 2007; Moses's ``-search-algorithm 1``).

    Arguments and result as ``stack_kernel``'s; a span's options are tried in the order of
    ``sentence.estimate`` (best first), and ``limits.pop_limit`` bounds the hypotheses created per stack.
    Each stack is filled from edges: a group of kept hypotheses of an earlier stack with the same coverage
    and last block end (best first) times the options of one span they may translate next (best estimate
    first). A queue holds scored cells (hypothesis i, option j) of every edge into the stack, starting with
    each edge's (0, 0); each pop adds its hypothesis to the stack and queues the cell to its right, (i, j +
    1), and on the first column the one below, (i + 1, 0): every cell has one predecessor, so none is queued
    twice and no set of queued cells is needed (with no pop limit, every cell is reached). Stats column 1
    counts the hypotheses kept for extension.
    """
    n = sentence.n
    pool, classes, stacks, spans, order, edges, edge_head, counts, queue = new_cube_search(sentence, tr)
    n_hyp = np.int64(1)  # not the literal 1: the kernel it goes to would compile once more for a literal
    for s in range(n + 1):
        if s > 0:
            pool, classes, queue, n_hyp = fill_stack(s, edge_head, edges, order, sentence, tr, limits, stacks, pool,
                                                     n_hyp, classes, queue)
        if s == n:
            break
        kept = _kept(s, stacks, classes, pool, limits)
        edges = _add_edges(s, kept, edge_head, edges, counts, sentence, limits, pool, spans)
    return _graph(pool, n_hyp, classes, stacks, n)


def cube_parts(sentence, tr, limits):
    """The biggest kernels ``cube_kernel`` calls, each with the numba types it calls it with when its arguments
    have the numba types ``sentence``, ``tr`` and ``limits``: (kernel, argument types) pairs, so that a process
    compiling them while another compiles ``cube_kernel`` meets it in the middle (``pbmt.commands.precompile``):
    the feature kernels of the sentence end (reached halfway through ``_fill_stack``), then the rest in the
    reverse of the order in which compiling ``cube_kernel`` reaches them. Compiles (or loads)
    ``new_cube_search`` and ``_kept`` for the types they return."""
    i64 = types.int64
    pool, classes, stacks, spans, order, edges, edge_head, counts, queue = _returned(new_cube_search, (sentence, tr))
    kept = _returned(_kept, (i64, stacks, classes, pool, limits))
    key_option = tr.types[tr.fields.index("key_option")]
    return end_parts(tr, queue.types[queue.fields.index("state")]) + [(_add_edges, (i64, kept, edge_head, edges, counts, sentence, limits, pool, spans)),
            (_graph, (pool, i64, classes, stacks, i64)),
            (_fill_stack, (i64, i64, edges, order, sentence, tr, limits, stacks, pool, i64, classes, key_option,
                           queue)),
            (_stack_room, (i64, edge_head, edges, sentence, limits, pool, i64, classes, queue))]


def _returned(kernel, args):
    """The numba type ``kernel`` returns for arguments of the numba types ``args`` (compiling it if need be)."""
    kernel.compile(args)
    return kernel.overloads[args].signature.return_type
