"""Numba kernel of the stack decoder.

Hypotheses live in a pool of parallel arrays (``Pool``). Hypotheses with
the same recombination key (coverage, the row of the state matrix that the
stateful features keep, and the previous block: its end, or the option
itself when lexicalized reordering or sparse transition features need it)
form a class; the best member represents the class in its stack, the others
are kept as recombined arcs for n-best extraction. All complete hypotheses
form one final class. Scores are weighted natural-log model scores.

Two reordering spaces: Moses's distortion limit, or Tillmann & Zhang's
MON/SWAP block orientation model (monotone, or a block swapped with its
right neighbour: the coverage is a prefix, or a prefix plus one block whose
left gap the next block must fill exactly, in one phrase).
"""

from collections import namedtuple

import numpy as np
from numba import njit

from pbmt.search._array_kernels import best_first, grow1, grow2
from pbmt.search._scoring_kernels import extension_score

STAT_NAMES = ("classes", "expanded", "added", "recombined", "beam-rejected")

Sentence = namedtuple("Sentence", [
    "n",  # int: source words, at least 1
    "local_score",  # float64[n_opt]: each option's weighted option-local score
    "estimate",  # float64[n_opt]: each option's estimated score (cube pruning sorts a span's options by it)
    "span_offsets",  # int64[n * max_length + 1]: options of each span (TranslationOptions.span)
    "max_length",  # int
    "future",  # float64[n + 1, n + 1]: future cost estimates of source spans
    "zones", "walls",  # int32[z, 2], int32[w, 3]: reordering constraints (TranslationOptions.zones, .walls)
])
"""A sentence's ``TranslationOptions`` as the search kernels read them."""

Limits = namedtuple("Limits", [
    "distortion_limit",  # int: < 0 for none
    "stack_size",  # int
    "log_beam",  # float: natural log of the beam threshold (-inf: no threshold pruning)
    "mon_swap",  # bool: search the MON/SWAP space (the distortion limit is ignored)
    "keep_arcs",  # bool: keep every recombined hypothesis as an arc (n-best lists, search graphs)
    "pop_limit",  # int: hypotheses cube pruning creates per stack, at least 1
])
"""The search settings the kernels read."""

Pool = namedtuple("Pool", [
    "cov",  # uint64[cap, words]: coverage bitmap
    "prev_start", "prev_end",  # int32[cap]: source span of the last block
    "state",  # int64[cap, width]: the stateful features' state (-1 when complete)
    "option",  # int32[cap]: the last block's option
    "parent",  # int32[cap]
    "score",  # float64[cap]: accumulated weighted score
    "fut",  # float64[cap]: future estimate
    "klass",  # int32[cap]: recombination class
    "key",  # int64[cap]: recombination key beyond coverage and state: the last block's end, or its option
])
"""The hypotheses of one search, parallel arrays indexed by hypothesis (0: the empty start)."""

Classes = namedtuple("Classes", [
    "rep",  # int32[cap]: each class's best member
    "next",  # int32[cap]: the next class of the same stack (-1: last)
    "table",  # int32[2**k]: open-addressing hash table of classes by recombination key (-1: empty)
    "counts",  # int64[2]: the number of classes, the final class (-1: none yet)
])
"""Recombination classes."""

Stacks = namedtuple("Stacks", [
    "head",  # int32[n + 1]: each stack's first class (-1: empty)
    "best",  # float64[n + 1]: each stack's best score plus future estimate so far
    "stats",  # int64[n + 1, 5]: counts per stack (STAT_NAMES)
])
"""The stacks, one per number of covered source words."""


@njit(cache=True, inline="always")
def _covered(cov, h, i):
    return (cov[h, i >> 6] >> np.uint64(i & 63)) & np.uint64(1)


# Called by kernels only: compiled without the CPython and C-function wrappers a call from Python needs
# (their unboxing of tuples of arrays is compiled and optimised anew; docs/decoding.md, "The first run").
@njit(cache=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)
def _future_of(cov, h, n, future):
    """Future estimate of hypothesis h's uncovered spans (``future``: float64[n + 1, n + 1])."""
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
def _hash(cov, h, x):
    """Hash of hypothesis h's coverage, from seed x (uint64)."""
    for k in range(cov.shape[1]):
        x = (x ^ cov[h, k]) * np.uint64(0x100000001B3)
        x ^= x >> np.uint64(31)
    return x


@njit(cache=True, inline="always")
def state_hash(cov, state, key, h):
    """Hash of hypothesis h's recombination key: coverage ``cov[h]``, state row ``state[h]`` and ``key[h]``."""
    x = np.uint64(key[h] + 7) * np.uint64(0xC2B2AE3D27D4EB4F)
    for m in range(state.shape[1]):
        x = (x ^ np.uint64(state[h, m])) * np.uint64(0x9E3779B97F4A7C15)
        x ^= x >> np.uint64(29)
    return _hash(cov, h, x)


@njit(cache=True, inline="always")
def _key_hash(pool, h):
    """Hash of hypothesis h's recombination key (``state_hash``)."""
    return state_hash(pool.cov, pool.state, pool.key, h)


@njit(cache=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)
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


@njit(cache=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)
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
        count = _keep_respecting(cov, h, spans, np.int64(count), zones, walls)
    return count


@njit(cache=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)
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


@njit(cache=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)
def _grow_pool(pool, cap):
    """The pool with room for ``cap`` hypotheses."""
    return Pool(grow2(pool.cov, cap), grow1(pool.prev_start, cap), grow1(pool.prev_end, cap),
                grow2(pool.state, cap), grow1(pool.option, cap), grow1(pool.parent, cap), grow1(pool.score, cap),
                grow1(pool.fut, cap), grow1(pool.klass, cap), grow1(pool.key, cap))


@njit(cache=True, inline="always")
def _same_key(pool, a, b):
    """Whether hypotheses a and b have the same recombination key."""
    if pool.key[a] != pool.key[b]:
        return False
    for m in range(pool.state.shape[1]):
        if pool.state[a, m] != pool.state[b, m]:
            return False
    for w in range(pool.cov.shape[1]):
        if pool.cov[a, w] != pool.cov[b, w]:
            return False
    return True


@njit(cache=True, inline="always")
def _find_class(classes, pool, g):
    """Recombination: the class whose key (coverage, state, ``key``) equals hypothesis g's, or -1; and the
    table slot where it is, or where a new class of g goes."""
    table = classes.table
    mask = table.shape[0] - 1
    slot = np.int64(_key_hash(pool, g) & np.uint64(mask))
    while table[slot] >= 0:
        if _same_key(pool, classes.rep[table[slot]], g):
            return table[slot], slot
        slot = (slot + 1) & mask
    return -1, slot


@njit(cache=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)
def _rehash(table, n_class, c_rep, pool):
    """A table twice as large holding every class."""
    table = np.full(2 * table.shape[0], -1, dtype=np.int32)
    mask = table.shape[0] - 1
    for cl in range(n_class):
        sl = np.int64(_key_hash(pool, c_rep[cl]) & np.uint64(mask))
        while table[sl] >= 0:
            sl = (sl + 1) & mask
        table[sl] = cl
    return table


@njit(cache=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)
def _kept(s, stacks, classes, pool, limits):
    """Representatives of the classes of stack s that survive pruning (at most ``stack_size``, within the
    beam of the stack's best), best first."""
    count = 0
    c = stacks.head[s]
    while c >= 0:
        count += 1
        c = classes.next[c]
    reps = np.empty(count, dtype=np.int32)
    totals = np.empty(count)
    c = stacks.head[s]
    k = 0
    while c >= 0:
        rep = classes.rep[c]
        reps[k] = rep
        totals[k] = pool.score[rep] + pool.fut[rep]
        k += 1
        c = classes.next[c]
    order = best_first(totals)
    keep = 0
    while keep < min(count, limits.stack_size) and totals[order[keep]] >= stacks.best[s] + limits.log_beam:
        keep += 1
    stacks.stats[s, 0] = count
    stacks.stats[s, 1] = keep
    return reps[order[:keep]]


@njit(cache=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)
def _new_pool(n, begin, future):
    """An empty hypothesis pool with the empty hypothesis 0 in state row ``begin`` (int64[width])."""
    cap = 1024
    words = max(1, (n + 63) // 64)
    pool = Pool(np.zeros((cap, words), dtype=np.uint64), np.zeros(cap, dtype=np.int32),
                np.zeros(cap, dtype=np.int32), np.zeros((cap, begin.shape[0]), dtype=np.int64),
                np.full(cap, -1, dtype=np.int32), np.full(cap, -1, dtype=np.int32), np.zeros(cap, dtype=np.float64),
                np.zeros(cap, dtype=np.float64), np.zeros(cap, dtype=np.int32), np.zeros(cap, dtype=np.int64))
    for m in range(begin.shape[0]):  # a loop, not a row copy: no shape check to compile
        pool.state[0, m] = begin[m]
    pool.fut[0] = future[0, n]
    return pool


@njit(cache=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)
def _new_search(sentence, tr):
    """What both searches start from: the pool with the empty hypothesis in stack 0 (``_new_pool``), the
    classes (``_new_classes``), the stacks, and room for the spans a hypothesis may translate next
    (``reachable_spans``)."""
    n = sentence.n
    pool = _new_pool(n, tr.begin, sentence.future)
    stacks = Stacks(np.full(n + 1, -1, dtype=np.int32), np.full(n + 1, -np.inf),
                    np.zeros((n + 1, 5), dtype=np.int64))
    stacks.head[0] = 0
    stacks.best[0] = pool.fut[0]
    return pool, _new_classes(), stacks, np.empty((n * sentence.max_length + 1, 2), dtype=np.int32)


@njit(cache=True, inline="always")
def _write(pool, g, h, o, start, end, new_score, states, row, complete, fut_g, key_option):
    """Hypothesis g: h extended by option o over [start, end), in state ``states[row]``."""
    cov = pool.cov
    for w in range(cov.shape[1]):
        cov[g, w] = cov[h, w]
    for i in range(start, end):
        cov[g, i >> 6] |= np.uint64(1) << np.uint64(i & 63)
    pool.prev_start[g] = start
    pool.prev_end[g] = end
    for m in range(pool.state.shape[1]):
        pool.state[g, m] = -1 if complete else states[row, m]
    pool.option[g] = o
    pool.parent[g] = h
    pool.score[g] = new_score
    pool.fut[g] = fut_g
    pool.key[g] = -1 if complete else (o if key_option else end)


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


@njit(cache=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)
def _class_room(classes, extra, pool):
    """``classes`` with room for ``extra`` more classes: arrays and hash table grown, the table at most half
    full."""
    c_rep, c_next, table, counts = classes.rep, classes.next, classes.table, classes.counts
    need = counts[0] + extra
    if need > c_rep.shape[0]:
        cap = max(2 * c_rep.shape[0], need)
        c_rep, c_next = grow1(c_rep, cap), grow1(c_next, cap)
    while 2 * need > table.shape[0]:
        table = _rehash(table, counts[0], c_rep, pool)
    return Classes(c_rep, c_next, table, counts)


@njit(cache=True, inline="always")
def _place(pool, g, t, complete, classes, stacks, keep_arcs):
    """Put hypothesis g into stack t: into the class with its recombination key, or a new class (room for it
    made by ``_class_room``). Returns whether g stays in the pool: always with ``keep_arcs``, else only as a
    class's best member (a worse member is an arc only n-best lists and search graphs read)."""
    stats = stacks.stats
    stats[t, 2] += 1
    found, slot = _find_class(classes, pool, g)
    if found >= 0:
        stats[t, 3] += 1
        pool.klass[g] = found
        if pool.score[g] > pool.score[classes.rep[found]]:
            classes.rep[found] = g
            return True
        return keep_arcs
    counts = classes.counts
    n_class = counts[0]
    classes.rep[n_class] = g
    classes.next[n_class] = stacks.head[t]
    stacks.head[t] = n_class
    pool.klass[g] = n_class
    if complete:
        counts[1] = n_class
    classes.table[slot] = n_class
    counts[0] = n_class + 1
    return True


@njit(cache=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)
def _new_classes():
    return Classes(np.zeros(1024, dtype=np.int32), np.full(1024, -1, dtype=np.int32),
                   np.full(4096, -1, dtype=np.int32), np.array([1, -1], dtype=np.int64))


@njit(cache=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)
def _stack_count(stacks, classes, s):
    count = 0
    c = stacks.head[s]
    while c >= 0:
        count += 1
        c = classes.next[c]
    return count


@njit(cache=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)
def _graph(pool, n_hyp, classes, stacks, n):
    """What both searches return (see ``stack_kernel``)."""
    stacks.stats[n, 0] = _stack_count(stacks, classes, n)
    return (pool.parent[:n_hyp], pool.option[:n_hyp], pool.score[:n_hyp], pool.klass[:n_hyp], classes.counts[1],
            stacks.stats)


@njit(cache=True, _nrt=False, no_cpython_wrapper=True, no_cfunc_wrapper=True)
def _extend(s, h, spans, sentence, tr, limits, stacks, pool, n_hyp, classes, key_option):
    """``stack_kernel``'s extensions of hypothesis h of stack s by every option of ``spans`` (int32[k, 2]);
    returns the new number of hypotheses. Allocates nothing (no reference counting in the hot loop): the
    caller makes room in the pool and the classes for every extension."""
    n, span_offsets, max_length = sentence.n, sentence.span_offsets, sentence.max_length
    for k in range(spans.shape[0]):
        start, end = spans[k, 0], spans[k, 1]
        t = s + end - start
        complete = t == n
        fut_g = 0.0 if complete else _future_with(pool.cov, h, start, end, n, sentence.future)
        for o in range(span_offsets[start * max_length + end - start - 1],
                       span_offsets[start * max_length + end - start]):
            step = extension_score(tr, pool.state, h, pool.state, n_hyp, pool.prev_start[h], pool.prev_end[h],
                                   pool.option[h], o, start, end, complete)
            new_score = pool.score[h] + sentence.local_score[o] + step
            total = new_score + fut_g
            if total < stacks.best[t] + limits.log_beam:
                stacks.stats[t, 4] += 1
                continue
            if total > stacks.best[t]:
                stacks.best[t] = total
            _write(pool, n_hyp, h, o, start, end, new_score, pool.state, n_hyp, complete, fut_g, key_option)
            if _place(pool, n_hyp, t, complete, classes, stacks, limits.keep_arcs):
                n_hyp += 1
    return n_hyp


@njit(cache=True, nogil=True)
def stack_kernel(sentence, tr, limits):
    """Stack decoding of one sentence of ``sentence.n`` > 0 words: every kept hypothesis of a stack is
    extended by every option it may take next.

    ``sentence``: its options and reordering constraints (``Sentence``); ``tr``: the transition features
    (``Transitions``); ``limits``: the settings (``Limits``): keep_arcs keeps every recombined hypothesis as
    an arc (n-best lists, search graphs), else only each class's best member, which is all the 1-best needs
    and keeps the pool small.

    The hypothesis pool (``Pool``): parallel arrays indexed by hypothesis (coverage bitmap, the last block's
    source span and option, the state row (-1 when complete), parent, accumulated score, future estimate,
    recombination class, recombination key: the last block's end, or its option when lexicalized reordering
    or sparse transitions look at it). Hypotheses with the same key (coverage, state, that key) form a
    class; the best member represents the class in its stack, the others are kept as arcs for n-best
    extraction (with ``keep_arcs``); every complete hypothesis is in one final class. Returns (parent
    int32[h], option int32[h], score float64[h], klass int32[h], final_class int, stats int64[n + 1, 5]):
    final_class -1 if no complete hypothesis survived; stats[s] counts, for stack s (s words covered), its
    classes when it was expanded, the hypotheses expanded after pruning, the hypotheses added to it, those of
    them recombined into an existing class, and the extensions rejected by the beam threshold before entering
    it (see STAT_NAMES).
    """
    n, span_offsets, max_length = sentence.n, sentence.span_offsets, sentence.max_length
    pool, classes, stacks, spans = _new_search(sentence, tr)
    n_hyp = np.int64(1)  # not the literal 1: the kernel it goes to would compile once more for a literal
    key_option = tr.key_option
    for s in range(n):
        for h in _kept(s, stacks, classes, pool, limits):
            n_spans = reachable_spans(pool.cov, h, n, pool.prev_end[h], max_length, limits.distortion_limit,
                                      limits.mon_swap, span_offsets, spans, sentence.zones, sentence.walls)
            most = np.int64(0)  # room for every extension of h (int64: not a literal type)
            for k in range(n_spans):
                span = spans[k, 0] * max_length + spans[k, 1] - spans[k, 0] - 1
                most += span_offsets[span + 1] - span_offsets[span]
            if n_hyp + most > pool.cov.shape[0]:
                pool = _grow_pool(pool, max(2 * pool.cov.shape[0], n_hyp + most))
            classes = _class_room(classes, most, pool)
            n_hyp = _extend(s, h, spans[:n_spans], sentence, tr, limits, stacks, pool, n_hyp, classes, key_option)
    return _graph(pool, n_hyp, classes, stacks, n)
