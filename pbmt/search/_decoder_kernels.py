"""Numba kernel of the stack decoder.

Hypotheses live in a pool of parallel arrays. Hypotheses with the same
recombination key (coverage, LM state, and the previous block: its end, or the
option itself when lexicalized reordering or sparse transition features need
it) form a
class; the best member represents the class in its stack, the others are kept
as recombined arcs for n-best extraction. All complete hypotheses form one
final class. Scores are weighted natural-log model scores.

Two reordering spaces: Moses's distortion limit, or Tillmann & Zhang's
MON/SWAP block orientation model (monotone, or a block swapped with its
right neighbour: the coverage is a prefix, or a prefix plus one block whose
left gap the next block must fill exactly, in one phrase).
"""

import numpy as np
from numba import njit

from pbmt.search._array_kernels import grow1, grow2
from pbmt.search._scoring_kernels import extension_score

STAT_NAMES = ("classes", "expanded", "added", "recombined", "beam-rejected")

@njit(cache=True, inline="always")
def _covered(cov, h, i):
    return (cov[h, i >> 6] >> np.uint64(i & 63)) & np.uint64(1)


@njit(cache=True)
def _future_of(cov, h, n, future):
    total = 0.0
    i = 0
    while i < n:
        if _covered(cov, h, i):
            i += 1
            continue
        j = i
        while j < n and not _covered(cov, h, j):
            j += 1
        total += future[i, j]
        i = j
    return total


@njit(cache=True, inline="always")
def _hash(cov, h, key_a, lm_state):
    x = np.uint64(lm_state) * np.uint64(0x9E3779B97F4A7C15) ^ np.uint64(key_a + 7) * np.uint64(0xC2B2AE3D27D4EB4F)
    for k in range(cov.shape[1]):
        x = (x ^ cov[h, k]) * np.uint64(0x100000001B3)
        x ^= x >> np.uint64(31)
    return x


@njit(cache=True)
def respects_constraints(cov, h, start, end, zones, walls):
    """Whether hypothesis h (coverage ``cov[h]``) may translate ``[start, end)`` next under the sentence's
    reordering constraints (``TranslationOptions.zones`` and ``walls``).

    A wall (w, lo, hi): no word of ``[w, hi)`` is translated while a word of ``[lo, w)`` outside this block
    is still untranslated. A zone [zs, ze): the blocks that touch it follow one another, so a block that
    does not touch it is refused while it is partly translated.
    """
    for k in range(walls.shape[0]):
        w, lo, hi = walls[k, 0], walls[k, 1], walls[k, 2]
        if start < hi and end > w:
            for i in range(lo, min(w, start)):
                if not _covered(cov, h, i):
                    return False
    for k in range(zones.shape[0]):
        zs, ze = zones[k, 0], zones[k, 1]
        if start < ze and end > zs:
            continue
        done = 0
        for i in range(zs, ze):
            if _covered(cov, h, i):
                done += 1
        if 0 < done < ze - zs:
            return False
    return True


@njit(cache=True)
def reachable_spans(cov, h, n, prev_end, max_length, distortion_limit, mon_swap, span_offsets, spans, zones, walls):
    """The source spans a hypothesis with coverage ``cov[h]`` and last block ending at ``prev_end`` may
    translate next and that have options: their (start, end) in ``spans`` (int32[>= n * max_length, 2]);
    returns how many.

    Distortion limit (< 0: none): the jump from ``prev_end`` and the reach past the first gap are at most
    the limit, as Moses checks. MON/SWAP (``mon_swap``): the next block starts at the first gap, or it is a
    swapped block whose left gap one option must then fill exactly; while such a gap is open, only a
    block filling it exactly. Either way, the sentence's walls and zones hold (``respects_constraints``).
    """
    count = 0
    first_gap = 0
    while first_gap < n and _covered(cov, h, first_gap):
        first_gap += 1
    gap_end = first_gap
    while gap_end < n and not _covered(cov, h, gap_end):
        gap_end += 1
    for start in range(first_gap, n):
        if _covered(cov, h, start):
            continue
        if mon_swap:
            if gap_end < n and start > first_gap:
                break  # a swapped block waits: fill its gap first
            if start > first_gap:
                skipped = start - first_gap
                if skipped > max_length:
                    break
                gap_span = first_gap * max_length + skipped - 1
                if span_offsets[gap_span] == span_offsets[gap_span + 1]:
                    continue  # no single block could fill the gap
        elif distortion_limit >= 0 and abs(start - prev_end) > distortion_limit:
            continue
        for length in range(min(max_length, n - start)):
            end = start + length + 1
            if _covered(cov, h, end - 1):
                break
            if mon_swap:
                if gap_end < n and end != gap_end:
                    continue
            elif distortion_limit >= 0 and start != first_gap and end - first_gap > distortion_limit:
                break
            span = start * max_length + length
            if span_offsets[span] < span_offsets[span + 1]:
                spans[count, 0] = start
                spans[count, 1] = end
                count += 1
    if zones.shape[0] + walls.shape[0] > 0:
        count = _keep_respecting(cov, h, spans, count, zones, walls)
    return count


@njit(cache=True)
def _keep_respecting(cov, h, spans, count, zones, walls):
    """Of the first ``count`` spans of ``spans``, keep those hypothesis h may translate next under the
    reordering constraints (``respects_constraints``) at the front, in order; returns how many. A pass of its
    own after ``reachable_spans``'s loop, so that loop is the same on a sentence without constraints."""
    kept = 0
    for k in range(count):
        if respects_constraints(cov, h, spans[k, 0], spans[k, 1], zones, walls):
            spans[kept, 0] = spans[k, 0]
            spans[kept, 1] = spans[k, 1]
            kept += 1
    return kept


@njit(cache=True)
def _grow_pool(cap, cov, prev_start, prev_end, lm_state, option, parent, score, fut, klass, key_a):
    return (grow2(cov, cap), grow1(prev_start, cap), grow1(prev_end, cap), grow1(lm_state, cap),
            grow1(option, cap), grow1(parent, cap), grow1(score, cap), grow1(fut, cap), grow1(klass, cap),
            grow1(key_a, cap))


@njit(cache=True, inline="always")
def _find_class(table, c_rep, cov, key_a, lm_state, g):
    """Recombination: the class whose key (coverage, ``key_a``, LM state) equals hypothesis g's, or -1;
    and the table slot where it is, or where a new class of g goes."""
    mask = table.shape[0] - 1
    slot = np.int64(_hash(cov, g, key_a[g], lm_state[g]) & np.uint64(mask))
    while table[slot] >= 0:
        rep = c_rep[table[slot]]
        if key_a[rep] == key_a[g] and lm_state[rep] == lm_state[g]:
            same = True
            for w in range(cov.shape[1]):
                if cov[rep, w] != cov[g, w]:
                    same = False
                    break
            if same:
                return table[slot], slot
        slot = (slot + 1) & mask
    return -1, slot


@njit(cache=True)
def _rehash(table, n_class, c_rep, cov, key_a, lm_state):
    """A table twice as large holding every class."""
    table = np.full(2 * table.shape[0], -1, dtype=np.int32)
    mask = table.shape[0] - 1
    for cl in range(n_class):
        rep = c_rep[cl]
        sl = np.int64(_hash(cov, rep, key_a[rep], lm_state[rep]) & np.uint64(mask))
        while table[sl] >= 0:
            sl = (sl + 1) & mask
        table[sl] = cl
    return table


@njit(cache=True)
def _kept(s, stack_head, c_rep, c_next, score, fut, stack_best, stack_size, log_beam, stats):
    """Representatives of the classes of stack s that survive pruning (at most ``stack_size``, within the
    beam of the stack's best), best first."""
    count = 0
    c = stack_head[s]
    while c >= 0:
        count += 1
        c = c_next[c]
    reps = np.empty(count, dtype=np.int32)
    totals = np.empty(count)
    c = stack_head[s]
    k = 0
    while c >= 0:
        reps[k] = c_rep[c]
        totals[k] = score[c_rep[c]] + fut[c_rep[c]]
        k += 1
        c = c_next[c]
    order = np.argsort(-totals, kind="mergesort")
    keep = 0
    while keep < min(count, stack_size) and totals[order[keep]] >= stack_best[s] + log_beam:
        keep += 1
    stats[s, 0] = count
    stats[s, 1] = keep
    return reps[order[:keep]]


@njit(cache=True)
def _new_pool(n, begin_state, future):
    """An empty hypothesis pool with the empty hypothesis 0 (see ``stack_kernel``)."""
    cap = 1024
    words = max(1, (n + 63) // 64)
    pool = (np.zeros((cap, words), dtype=np.uint64), np.zeros(cap, dtype=np.int32), np.zeros(cap, dtype=np.int32),
            np.zeros(cap, dtype=np.int64), np.full(cap, -1, dtype=np.int32), np.full(cap, -1, dtype=np.int32),
            np.zeros(cap, dtype=np.float64), np.zeros(cap, dtype=np.float64), np.zeros(cap, dtype=np.int32),
            np.zeros(cap, dtype=np.int64))
    pool[3][0] = begin_state
    pool[7][0] = future[0, n]
    return pool


@njit(cache=True)
def _new_search(n, tr, future, max_length):
    """What both searches start from: the pool with the empty hypothesis in stack 0 (``_new_pool``), the
    classes (``_new_classes``), each stack's first class and best total, the stats, and room for the spans a
    hypothesis may translate next (``reachable_spans``)."""
    pool = _new_pool(n, tr.begin_state, future)
    stack_head = np.full(n + 1, -1, dtype=np.int32)
    stack_best = np.full(n + 1, -np.inf)
    stack_head[0] = 0
    stack_best[0] = pool[7][0]
    return (pool, _new_classes(), stack_head, stack_best, np.zeros((n + 1, 5), dtype=np.int64),
            np.empty((n * max_length + 1, 2), dtype=np.int32))


@njit(cache=True, inline="always")
def _write(pool, g, h, o, start, end, new_score, new_state, complete, fut_g, key_option):
    """Hypothesis g: h extended by option o over [start, end)."""
    cov, prev_start, prev_end, lm_state, option, parent, score, fut, klass, key_a = pool
    for w in range(cov.shape[1]):
        cov[g, w] = cov[h, w]
    for i in range(start, end):
        cov[g, i >> 6] |= np.uint64(1) << np.uint64(i & 63)
    prev_start[g] = start
    prev_end[g] = end
    lm_state[g] = -1 if complete else new_state
    option[g] = o
    parent[g] = h
    score[g] = new_score
    fut[g] = fut_g
    key_a[g] = -1 if complete else (o if key_option else end)


@njit(cache=True, inline="always")
def _future_with(cov, h, start, end, n, future):
    """Future estimate of hypothesis h's coverage plus [start, end)."""
    total = 0.0
    i = 0
    while i < n:
        if (start <= i < end) or _covered(cov, h, i):
            i += 1
            continue
        j = i
        while j < n and not (start <= j < end) and not _covered(cov, h, j):
            j += 1
        total += future[i, j]
        i = j
    return total


@njit(cache=True)
def _class_room(classes, extra, pool):
    """``classes`` = (c_rep, c_next, table, counts) with room for ``extra`` more classes: arrays and hash
    table grown, the table at most half full. counts[0] is the number of classes, counts[1] the final one."""
    c_rep, c_next, table, counts = classes
    need = counts[0] + extra
    if need > c_rep.shape[0]:
        cap = max(2 * c_rep.shape[0], need)
        c_rep, c_next = grow1(c_rep, cap), grow1(c_next, cap)
    while 2 * need > table.shape[0]:
        table = _rehash(table, counts[0], c_rep, pool[0], pool[9], pool[3])
    return c_rep, c_next, table, counts


@njit(cache=True, inline="always")
def _place(pool, g, t, complete, classes, stack_head, stats, keep_arcs):
    """Put hypothesis g into stack t: into the class with its recombination key, or a new class (room for it
    made by ``_class_room``). Returns whether g stays in the pool: always with ``keep_arcs``, else only as a
    class's best member (a worse member is an arc only n-best lists and search graphs read)."""
    cov, prev_start, prev_end, lm_state, option, parent, score, fut, klass, key_a = pool
    c_rep, c_next, table, counts = classes
    stats[t, 2] += 1
    found, slot = _find_class(table, c_rep, cov, key_a, lm_state, g)
    if found >= 0:
        stats[t, 3] += 1
        klass[g] = found
        if score[g] > score[c_rep[found]]:
            c_rep[found] = g
            return True
        return keep_arcs
    n_class = counts[0]
    c_rep[n_class] = g
    c_next[n_class] = stack_head[t]
    stack_head[t] = n_class
    klass[g] = n_class
    if complete:
        counts[1] = n_class
    table[slot] = n_class
    counts[0] = n_class + 1
    return True


@njit(cache=True)
def _new_classes():
    c_rep = np.zeros(1024, dtype=np.int32)
    c_next = np.full(1024, -1, dtype=np.int32)
    return c_rep, c_next, np.full(4096, -1, dtype=np.int32), np.array([1, -1], dtype=np.int64)


@njit(cache=True)
def _stack_count(stack_head, c_next, s):
    count = 0
    c = stack_head[s]
    while c >= 0:
        count += 1
        c = c_next[c]
    return count


@njit(cache=True, _nrt=False)
def _extend(s, n, h, spans, future, span_offsets, max_length, local_score, tgt_offsets, tgt_words, tr, log_beam,
            stack_best, stack_head, stats, pool, n_hyp, classes, key_option, keep_arcs):
    """``stack_kernel``'s extensions of hypothesis h of stack s by every option of ``spans`` (int32[k, 2]);
    returns the new number of hypotheses. Allocates nothing (no reference counting in the hot loop): the
    caller makes room in the pool and the classes for every extension."""
    cov, prev_start, prev_end, lm_state, option, parent, score, fut, klass, key_a = pool
    for k in range(spans.shape[0]):
        start, end = spans[k, 0], spans[k, 1]
        t = s + end - start
        complete = t == n
        fut_g = 0.0 if complete else _future_with(cov, h, start, end, n, future)
        for o in range(span_offsets[start * max_length + end - start - 1],
                       span_offsets[start * max_length + end - start]):
            step, new_state = extension_score(tr, tgt_offsets, tgt_words, lm_state[h], prev_start[h],
                                              prev_end[h], option[h], o, start, end, complete)
            new_score = score[h] + local_score[o] + step
            total = new_score + fut_g
            if total < stack_best[t] + log_beam:
                stats[t, 4] += 1
                continue
            if total > stack_best[t]:
                stack_best[t] = total
            _write(pool, n_hyp, h, o, start, end, new_score, new_state, complete, fut_g, key_option)
            if _place(pool, n_hyp, t, complete, classes, stack_head, stats, keep_arcs):
                n_hyp += 1
    return n_hyp


@njit(cache=True, nogil=True)
def stack_kernel(n, opt_start, opt_end, tgt_offsets, tgt_words, local_score, span_offsets, max_length, future,
                 zones, walls, tr, distortion_limit, stack_size, log_beam, mon_swap, keep_arcs):
    """Stack decoding of one sentence of ``n`` > 0 words: every kept hypothesis of a stack is extended by
    every option it may take next.

    Options and reordering constraints (``zones``, ``walls``) as in ``TranslationOptions``; ``tr``: the
    weighted transition features (``Transitions``);
    distortion_limit < 0: unlimited; log_beam: natural log of the beam threshold (-inf: no threshold
    pruning); mon_swap: search the MON/SWAP space instead (the distortion limit is ignored); keep_arcs: keep
    every recombined hypothesis as an arc (n-best lists, search graphs), else only each class's best member,
    which is all the 1-best needs and keeps the pool small.

    The hypothesis pool: parallel arrays indexed by hypothesis (coverage bitmap, the last block's source
    span and option, LM state (-1 when complete), parent, accumulated score, future estimate, recombination
    class, recombination key: the last block's end, or its option when lexicalized reordering or sparse
    transitions look at it). Hypotheses with the same key (coverage, LM state, that key) form a class; the
    best member represents the class in its stack, the others are kept as arcs for n-best extraction (with
    ``keep_arcs``); every
    complete hypothesis is in one final class. Returns (parent int32[h], option int32[h], score float64[h],
    klass int32[h], final_class int, stats int64[n + 1, 5]): final_class -1 if no complete hypothesis
    survived; stats[s] counts, for stack s (s words covered), its classes when it was expanded, the
    hypotheses expanded after pruning, the hypotheses added to it, those of them recombined into an existing
    class, and the extensions rejected by the beam threshold before entering it (see STAT_NAMES).
    """
    pool, classes, stack_head, stack_best, stats, spans = _new_search(n, tr, future, max_length)
    n_hyp = np.int64(1)  # not the literal 1: the kernel it goes to would compile once more for a literal
    key_option = tr.has_lr or tr.has_sparse
    for s in range(n):
        cov, prev_start, prev_end, lm_state, option, parent, score, fut, klass, key_a = pool
        for h in _kept(s, stack_head, classes[0], classes[1], score, fut, stack_best, stack_size, log_beam, stats):
            n_spans = reachable_spans(pool[0], h, n, pool[2][h], max_length, distortion_limit, mon_swap,
                                      span_offsets, spans, zones, walls)
            most = 0  # room for every extension of h
            for k in range(n_spans):
                span = spans[k, 0] * max_length + spans[k, 1] - spans[k, 0] - 1
                most += span_offsets[span + 1] - span_offsets[span]
            if n_hyp + most > pool[0].shape[0]:
                pool = _grow_pool(max(2 * pool[0].shape[0], n_hyp + most), *pool)
            classes = _class_room(classes, most, pool)
            n_hyp = _extend(s, n, h, spans[:n_spans], future, span_offsets, max_length, local_score, tgt_offsets,
                            tgt_words, tr, log_beam, stack_best, stack_head, stats, pool, n_hyp, classes, key_option,
                            keep_arcs)
    stats[n, 0] = _stack_count(stack_head, classes[1], n)
    return pool[5][:n_hyp], pool[4][:n_hyp], pool[6][:n_hyp], pool[8][:n_hyp], classes[3][1], stats


@njit(cache=True)
def _options_by_estimate(span_offsets, estimate):
    """Option indices with each span's options sorted by ``estimate`` (best first, stable)."""
    order = np.arange(estimate.shape[0])
    for k in range(span_offsets.shape[0] - 1):
        lo, hi = span_offsets[k], span_offsets[k + 1]
        if hi - lo > 1:
            order[lo:hi] = lo + np.argsort(-estimate[lo:hi], kind="mergesort")
    return order


@njit(cache=True)
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
        slot = np.int64(_hash(cov, h, prev_end[h], 0) & np.uint64(size - 1))
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
def _queue_push(keys, cells, size, key, c):
    """Push cell ``c`` with priority ``key`` on the max-heap (``keys``, ``cells``, with room) of ``size``
    entries; ties go to the earlier cell. Returns the new size."""
    i = size
    while i > 0:
        up = (i - 1) >> 1
        if keys[up] > key or (keys[up] == key and cells[up] < c):
            break
        keys[i] = keys[up]
        cells[i] = cells[up]
        i = up
    keys[i] = key
    cells[i] = c
    return size + 1


@njit(cache=True, inline="always")
def _queue_pop(keys, cells, size):
    """Remove the top of the max-heap; returns (its cell, the new size)."""
    top = cells[0]
    size -= 1
    key, c = keys[size], cells[size]
    i = 0
    while True:
        child = 2 * i + 1
        if child >= size:
            break
        if child + 1 < size and (keys[child + 1] > keys[child] or (keys[child + 1] == keys[child]
                                                                     and cells[child + 1] < cells[child])):
            child += 1
        if key > keys[child] or (key == keys[child] and c < cells[child]):
            break
        keys[i] = keys[child]
        cells[i] = cells[child]
        i = child
    keys[i] = key
    cells[i] = c
    return top, size


@njit(cache=True, _nrt=False)
def _fill_stack(s, n, first_edge, e_next, e_group, e_start, e_end, e_fut, group_lo, members, order, span_offsets,
                max_length, local_score, tgt_offsets, tgt_words, tr, pop_limit, log_beam, stack_best, stack_head, stats,
                pool, n_hyp, classes, key_option, keep_arcs, queue):
    """Fill stack s of ``cube_kernel`` from its edges (the list from ``first_edge``); returns the new number
    of hypotheses. Allocates nothing (no reference counting in the hot loop): the caller makes room in the
    pool, the classes and the queue (``queue``: the cells' edge, row, column, score, LM state, total, and
    the heap's keys and cells) for everything the stack can add."""
    c_edge, c_i, c_j, c_score, c_state, c_total, heap_keys, heap = queue
    # fill stack s: seed the queue with every edge's best cell, then pop
    n_cand = 0
    size = 0
    pops = 0
    seed = first_edge
    while seed >= 0 or (size > 0 and pops < pop_limit):
        if seed >= 0:
            ce, ci, cj = seed, 0, 0
            seed = e_next[seed]
            n_next = 1  # the cell itself
        else:
            c, size = _queue_pop(heap_keys, heap, size)
            pops += 1
            ce, ci, cj = c_edge[c], c_i[c], c_j[c]
            if c_total[c] < stack_best[s] + log_beam:
                stats[s, 4] += 1
            else:
                if c_total[c] > stack_best[s]:
                    stack_best[s] = c_total[c]
                h = members[group_lo[e_group[ce]] + ci]
                o = order[span_offsets[e_start[ce] * max_length + e_end[ce] - e_start[ce] - 1] + cj]
                _write(pool, n_hyp, h, o, e_start[ce], e_end[ce], c_score[c], c_state[c], s == n,
                       e_fut[ce], key_option)
                if _place(pool, n_hyp, s, s == n, classes, stack_head, stats, keep_arcs):
                    n_hyp += 1
            n_next = 2  # its successors in the grid (see below)
        lo = group_lo[e_group[ce]]
        rows = group_lo[e_group[ce] + 1] - lo
        span = e_start[ce] * max_length + e_end[ce] - e_start[ce] - 1
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
            h = members[lo + i]
            o = order[span_offsets[span] + j]
            cov, prev_start, prev_end, lm_state, option, parent, score, fut, klass, key_a = pool
            step, new_state = extension_score(tr, tgt_offsets, tgt_words, lm_state[h], prev_start[h],
                                              prev_end[h], option[h], o, e_start[ce], e_end[ce], s == n)
            c_edge[n_cand], c_i[n_cand], c_j[n_cand] = ce, i, j
            c_score[n_cand] = score[h] + local_score[o] + step
            c_state[n_cand] = new_state
            c_total[n_cand] = c_score[n_cand] + e_fut[ce]
            size = _queue_push(heap_keys, heap, size, c_total[n_cand], n_cand)
            n_cand += 1
    return n_hyp


@njit(cache=True, nogil=True)
def cube_kernel(n, opt_start, opt_end, tgt_offsets, tgt_words, local_score, estimate, span_offsets, max_length,
                future, zones, walls, tr, distortion_limit, stack_size, log_beam, mon_swap, keep_arcs, pop_limit):
    """Cube pruning of one sentence of ``n`` > 0 words (Chiang 2007; Moses's ``-search-algorithm 1``).

    Arguments and result as ``stack_kernel``'s, plus ``estimate`` float64[n_opt] (each option's estimated
    score, by which a span's options are sorted) and ``pop_limit`` (hypotheses created per stack; <= 0: no
    limit). Each stack is filled from edges: a group of kept hypotheses of an earlier stack with the same
    coverage and last block end (best first) times the options of one span they may translate next (best
    estimate first). A queue holds scored cells (hypothesis i, option j) of every edge into the stack,
    starting with each edge's (0, 0); each pop adds its hypothesis to the stack and queues the cell to its
    right, (i, j + 1), and on the first column the one below, (i + 1, 0): every cell has one predecessor, so
    none is queued twice and no set of queued cells is needed (with no pop limit, every cell is reached).
    Stats column 1 counts the hypotheses kept for extension.
    """
    pool, classes, stack_head, stack_best, stats, spans = _new_search(n, tr, future, max_length)
    n_hyp = np.int64(1)  # not the literal 1: the kernel it goes to would compile once more for a literal
    key_option = tr.has_lr or tr.has_sparse
    order = _options_by_estimate(span_offsets, estimate)
    if pop_limit <= 0:
        pop_limit = np.iinfo(np.int64).max

    # the grouped kept hypotheses of every expanded stack
    members = np.empty(256, dtype=np.int32)
    n_members = 0
    group_lo = np.zeros(64, dtype=np.int64)
    n_group = 0
    # edges: group, span, future estimate after it; linked per target stack
    e_group = np.empty(256, dtype=np.int64)
    e_start = np.empty(256, dtype=np.int32)
    e_end = np.empty(256, dtype=np.int32)
    e_fut = np.empty(256)
    e_next = np.empty(256, dtype=np.int64)
    n_edge = 0
    edge_head = np.full(n + 1, -1, dtype=np.int64)
    # candidate cells of the stack being filled
    c_edge = np.empty(256, dtype=np.int64)
    c_i = np.empty(256, dtype=np.int64)
    c_j = np.empty(256, dtype=np.int64)
    c_score = np.empty(256)
    c_state = np.empty(256, dtype=np.int64)
    c_total = np.empty(256)
    heap_keys = np.empty(256)
    heap = np.empty(256, dtype=np.int64)

    for s in range(n + 1):
        if s > 0:
            # room for what filling stack s can add: at most min(pop limit, cells) hypotheses and classes, and
            # the seeds plus two successors per pop as queued cells
            cells = 0
            seeds = 0
            e = edge_head[s]
            while e >= 0:
                span = e_start[e] * max_length + e_end[e] - e_start[e] - 1
                cells += (group_lo[e_group[e] + 1] - group_lo[e_group[e]]) * (span_offsets[span + 1] - span_offsets[span])
                seeds += 1
                e = e_next[e]
            most = min(pop_limit, cells)
            if n_hyp + most > pool[0].shape[0]:
                pool = _grow_pool(max(2 * pool[0].shape[0], n_hyp + most), *pool)
            classes = _class_room(classes, most, pool)
            room = min(cells, seeds + 2 * most)
            if room > c_edge.shape[0]:
                c_edge, c_i, c_j = np.empty(room, np.int64), np.empty(room, np.int64), np.empty(room, np.int64)
                c_score, c_state, c_total = np.empty(room), np.empty(room, np.int64), np.empty(room)
                heap_keys, heap = np.empty(room), np.empty(room, np.int64)
            n_hyp = _fill_stack(s, n, edge_head[s], e_next, e_group, e_start, e_end, e_fut, group_lo, members, order,
                                span_offsets, max_length, local_score, tgt_offsets, tgt_words, tr, pop_limit,
                                log_beam, stack_best, stack_head, stats, pool, n_hyp, classes, key_option,
                                keep_arcs, (c_edge, c_i, c_j, c_score, c_state, c_total, heap_keys, heap))
        if s == n:
            break
        # prune stack s, group what is kept, and create the edges out of it
        cov, prev_start, prev_end, lm_state, option, parent, score, fut, klass, key_a = pool
        kept = _kept(s, stack_head, classes[0], classes[1], score, fut, stack_best, stack_size, log_beam, stats)
        grouped, offsets = _groups(kept, cov, prev_end)
        if n_members + grouped.shape[0] > members.shape[0]:
            members = grow1(members, 2 * (n_members + grouped.shape[0]))
        if n_group + offsets.shape[0] > group_lo.shape[0]:
            group_lo = grow1(group_lo, 2 * (n_group + offsets.shape[0]))
        members[n_members:n_members + grouped.shape[0]] = grouped
        for g in range(offsets.shape[0] - 1):
            group = n_group + g
            group_lo[group] = n_members + offsets[g]
            group_lo[group + 1] = n_members + offsets[g + 1]
            h = grouped[offsets[g]]
            n_spans = reachable_spans(cov, h, n, prev_end[h], max_length, distortion_limit, mon_swap,
                                      span_offsets, spans, zones, walls)
            if n_edge + n_spans > e_group.shape[0]:
                cap = 2 * (n_edge + n_spans)
                e_group, e_start, e_end = grow1(e_group, cap), grow1(e_start, cap), grow1(e_end, cap)
                e_fut, e_next = grow1(e_fut, cap), grow1(e_next, cap)
            for k in range(n_spans):
                start, end = spans[k, 0], spans[k, 1]
                t = s + end - start
                e_group[n_edge], e_start[n_edge], e_end[n_edge] = group, start, end
                e_fut[n_edge] = 0.0 if t == n else _future_with(cov, h, start, end, n, future)
                e_next[n_edge] = edge_head[t]
                edge_head[t] = n_edge
                n_edge += 1
        n_members += grouped.shape[0]
        n_group += offsets.shape[0] - 1
    stats[n, 0] = _stack_count(stack_head, classes[1], n)
    return pool[5][:n_hyp], pool[4][:n_hyp], pool[6][:n_hyp], pool[8][:n_hyp], classes[3][1], stats
