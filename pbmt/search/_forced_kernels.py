"""Numba kernels of the constrained searches: forced decoding and prefix-constrained decoding.

A hypothesis is the decoder's (coverage bitmap, last block, state row,
accumulated score) plus ``pos``, the number of target words of the constraint
it has produced: a block may extend it only if its target words agree with
the constraint from ``pos`` on (``fit``). Forced decoding's constraint is the
whole reference; prefix decoding's a prefix, after which ``pos`` stays at the
prefix length and the search is free.

Hypotheses with the same coverage, last block (its end, or the option when
lexicalized reordering or sparse transitions read it), ``pos`` and state
continue identically, so only the best of such a class needs expanding: with
no pruning the search is exact dynamic programming over that state space
(under forced decoding the LM states are a function of ``pos``, the target
words being fixed). Stacks hold classes by source words covered; a block
covers at least one source word, so stack ``s`` is final before it is
expanded. Prefix decoding prunes only the classes past the prefix (histogram and threshold
pruning by score plus future estimate, as the stack decoder does); classes
still inside the prefix are all kept. Every hypothesis stays in the pool as
an arc of its class, so n-best lists come from ``_nbest_kernels``.

``prefix_cube_kernel`` is prefix decoding with cube pruning past the prefix:
the decoder's own pool, classes and cube (``_decoder_kernels``, ``_cube_kernels``), with the
position inside the prefix carried in the recombination key.
"""

from collections import namedtuple

import numpy as np
from numba import njit

from pbmt.search._array_kernels import grow1, grow2
from pbmt.search._cube_kernels import _add_edges, fill_stack, new_cube_search
from pbmt.search._decoder_kernels import (_class_room, _future_of, _future_with, _graph, _grow_pool, _place, _write,
                                          reachable_spans, state_hash)
from pbmt.search._scoring_kernels import extension_score

Sentence = namedtuple("Sentence", [
    "n",  # int: source words
    "opt_start", "opt_end",  # int32[n_opt]: each option's source span [start, end)
    "tgt_offsets", "tgt_words",  # option o produces tgt_words[tgt_offsets[o]:tgt_offsets[o + 1]]
    "local_score",  # float64[n_opt]: weighted option-local score (natural log)
    "span_offsets",  # int64[n * max_length + 1]: options of span (i, i + l + 1) as in TranslationOptions
    "max_length",  # int: longest source phrase
    "future",  # float64[n + 1, n + 1]: future-cost table (TranslationOptions.future)
    "zones", "walls",  # int32[z, 2], int32[w, 3]: reordering constraints (TranslationOptions.zones, .walls)
])
"""One sentence's translation options as the constrained kernels read them (``TranslationOptions``)."""

Constraint = namedtuple("Constraint", [
    "fit",  # bool[n_opt, length + 1]: option o may start at constraint position t
    "length",  # int: constraint words (the reference, or the prefix)
    "exact",  # bool: the output must be exactly the constraint (forced decoding), else begin with it
    "distortion_limit",  # int: < 0 unlimited
    "mon_swap",  # bool: the MON/SWAP space instead of the distortion limit
    "stack_size",  # int: classes kept per stack past the prefix (<= 0: all)
    "log_beam",  # float: past the prefix, keep classes within this of the stack's best (natural log; -inf: all)
    "max_hypotheses",  # int: stop (and say so) when the pool would grow past this
])
"""What a constrained search must produce and in which space (``forced_kernel``)."""

OVERFLOW = -2  # final_class when the search stopped at Constraint.max_hypotheses


@njit(cache=True, nogil=True)
def fit_table(tgt_offsets, tgt_words, constraint, last_ok, exact):
    """``fit[o, t]``: option ``o``'s target words agree with ``constraint`` (``int32[m]`` ids) from position
    ``t`` (``0 <= t <= m``). ``exact``: the words must lie within the constraint and equal it (forced
    decoding); else they must equal it where they overlap it (a prefix: words past its end are free).
    ``last_ok``: ``bool[V]`` over word ids, the words allowed at the constraint's last position in place of
    equality (a prefix ending mid-word: the words it begins), or an empty array for equality there too."""
    n_opt = tgt_offsets.shape[0] - 1
    m = constraint.shape[0]
    fit = np.zeros((n_opt, m + 1), dtype=np.bool_)
    for o in range(n_opt):
        lo, hi = tgt_offsets[o], tgt_offsets[o + 1]
        for t in range(m + 1):
            if exact and t + hi - lo > m:
                break
            ok = True
            for k in range(lo, hi):
                j = t + k - lo
                if j >= m:
                    break
                w = tgt_words[k]
                if j == m - 1 and last_ok.shape[0] > 0:
                    if w >= last_ok.shape[0] or not last_ok[w]:
                        ok = False
                        break
                elif w != constraint[j]:
                    ok = False
                    break
            fit[o, t] = ok
    return fit


@njit(cache=True)
def _same_key(cov, key_a, state, a, b):
    if key_a[a] != key_a[b]:
        return False
    for m in range(state.shape[1]):
        if state[a, m] != state[b, m]:
            return False
    for w in range(cov.shape[1]):
        if cov[a, w] != cov[b, w]:
            return False
    return True


@njit(cache=True)
def _kept(head, c_next, c_rep, pos, score, cov, n, future, prefix_end, stack_size, log_beam):
    """Representatives of one stack's classes to expand: every class inside the constraint, and of those
    past it (``pos == prefix_end`` of a prefix) the ``stack_size`` best by score plus future estimate that
    are within ``log_beam`` of the best (the stack decoder's histogram and threshold pruning)."""
    count = 0
    c = head
    while c >= 0:
        count += 1
        c = c_next[c]
    reps = np.empty(count, dtype=np.int32)
    totals = np.empty(count)
    free = np.zeros(count, dtype=np.bool_)
    k = 0
    c = head
    while c >= 0:
        h = c_rep[c]
        reps[k] = h
        free[k] = prefix_end >= 0 and pos[h] == prefix_end
        totals[k] = score[h] + _future_of(cov, h, n, future) if free[k] else np.inf
        k += 1
        c = c_next[c]
    if stack_size <= 0:
        return reps
    order = np.argsort(-totals, kind="mergesort")
    keep = np.empty(count, dtype=np.int32)
    n_keep = 0
    n_free = 0
    best = -np.inf
    for i in order:
        if free[i]:
            best = max(best, totals[i])
            if n_free == stack_size or totals[i] < best + log_beam:
                continue
            n_free += 1
        keep[n_keep] = reps[i]
        n_keep += 1
    return keep[:n_keep]


@njit(cache=True)
def _extension(tr, state, h, g, prev_start, prev_end, prev_option, o, start, end, complete):
    """``extension_score`` of hypothesis h extended to g in the state matrix ``state``: a function of its own,
    because ``forced_kernel`` reassigns ``state`` as it grows, which the transition features' unrolled loop
    over them cannot be inlined into."""
    return extension_score(tr, state, h, state, g, prev_start, prev_end, prev_option, o, start, end, complete)


@njit(cache=True, nogil=True)
def forced_kernel(sentence, tr, constraint):
    """The constrained search of one sentence of ``sentence.n`` > 0 words (see the module docstring).

    ``tr``: the weighted transition features (``Transitions``). Returns the search graph as the stack
    decoder's (``SearchGraph``: parent int32[h], option int32[h], score float64[h], klass int32[h],
    final_class) and how many hypotheses each stack received (int64[n + 1]); final_class is -1 when no
    complete hypothesis satisfies the constraint, ``OVERFLOW`` when the pool reached
    ``constraint.max_hypotheses`` first.
    """
    n, max_length = sentence.n, sentence.max_length
    span_offsets, tgt_offsets = sentence.span_offsets, sentence.tgt_offsets
    fit, m, exact = constraint.fit, constraint.length, constraint.exact
    prefix_end = -1 if exact else m
    key_option = tr.key_option
    cap = 1024
    words = max(1, (n + 63) // 64)
    cov = np.zeros((cap, words), dtype=np.uint64)
    prev_start = np.zeros(cap, dtype=np.int32)
    prev_end = np.zeros(cap, dtype=np.int32)
    state = np.zeros((cap, tr.begin.shape[0]), dtype=np.int64)
    option = np.full(cap, -1, dtype=np.int32)
    parent = np.full(cap, -1, dtype=np.int32)
    score = np.zeros(cap)
    pos = np.zeros(cap, dtype=np.int32)
    key_a = np.zeros(cap, dtype=np.int64)
    klass = np.zeros(cap, dtype=np.int32)
    state[0] = tr.begin
    c_rep = np.zeros(1024, dtype=np.int32)
    c_next = np.full(1024, -1, dtype=np.int32)
    table = np.full(4096, -1, dtype=np.int32)
    n_class = 1
    final_class = -1
    stack_head = np.full(n + 1, -1, dtype=np.int32)
    stack_head[0] = 0
    received = np.zeros(n + 1, dtype=np.int64)
    spans = np.empty((n * max_length + 1, 2), dtype=np.int32)
    n_hyp = 1
    for s in range(n):
        for h in _kept(stack_head[s], c_next, c_rep, pos, score, cov, n, sentence.future, prefix_end,
                       constraint.stack_size, constraint.log_beam):
            n_spans = reachable_spans(cov, h, n, prev_end[h], max_length, constraint.distortion_limit,
                                      constraint.mon_swap, span_offsets, spans, sentence.zones, sentence.walls)
            t = pos[h]
            for k in range(n_spans):
                start, end = spans[k, 0], spans[k, 1]
                covered = s + end - start
                complete = covered == n
                for o in range(span_offsets[start * max_length + end - start - 1],
                               span_offsets[start * max_length + end - start]):
                    if not fit[o, t]:
                        continue
                    new_pos = t + tgt_offsets[o + 1] - tgt_offsets[o]
                    if prefix_end >= 0:
                        new_pos = min(new_pos, prefix_end)
                    if complete and new_pos != m:
                        continue  # the output is not the reference, or is shorter than the prefix
                    if n_hyp == constraint.max_hypotheses:
                        return (parent[:n_hyp], option[:n_hyp], score[:n_hyp], klass[:n_hyp], OVERFLOW,
                                received)
                    if n_hyp == cap:
                        cap *= 2
                        cov, prev_start, prev_end = grow2(cov, cap), grow1(prev_start, cap), grow1(prev_end, cap)
                        state, option, parent = grow2(state, cap), grow1(option, cap), grow1(parent, cap)
                        score, pos, key_a, klass = grow1(score, cap), grow1(pos, cap), grow1(key_a, cap), grow1(klass, cap)
                    g = n_hyp
                    step = _extension(tr, state, h, g, prev_start[h], prev_end[h], option[h], o, start, end,
                                      complete)
                    for w in range(words):
                        cov[g, w] = cov[h, w]
                    for i in range(start, end):
                        cov[g, i >> 6] |= np.uint64(1) << np.uint64(i & 63)
                    prev_start[g], prev_end[g], option[g], parent[g] = start, end, o, h
                    score[g] = score[h] + sentence.local_score[o] + step
                    pos[g] = new_pos
                    if complete:
                        state[g] = -1
                    # the recombination key but the coverage and state: the last block and the words produced
                    key_a[g] = (-1 if complete else (o if key_option else end)) * (m + 2) + new_pos
                    n_hyp += 1
                    received[covered] += 1
                    if 2 * (n_class + 1) > table.shape[0]:
                        table = np.full(2 * table.shape[0], -1, dtype=np.int32)
                        for c in range(n_class):
                            r = c_rep[c]
                            sl = np.int64(state_hash(cov, state, key_a, r) & np.uint64(table.shape[0] - 1))
                            while table[sl] >= 0:
                                sl = (sl + 1) & (table.shape[0] - 1)
                            table[sl] = c
                    mask = table.shape[0] - 1
                    slot = np.int64(state_hash(cov, state, key_a, g) & np.uint64(mask))
                    found = -1
                    while table[slot] >= 0:
                        if _same_key(cov, key_a, state, c_rep[table[slot]], g):
                            found = table[slot]
                            break
                        slot = (slot + 1) & mask
                    if found >= 0:
                        klass[g] = found
                        if score[g] > score[c_rep[found]]:
                            c_rep[found] = g
                        continue
                    if n_class == c_rep.shape[0]:
                        c_rep, c_next = grow1(c_rep, 2 * n_class), grow1(c_next, 2 * n_class)
                    c_rep[n_class] = g
                    c_next[n_class] = stack_head[covered]
                    stack_head[covered] = n_class
                    table[slot] = n_class
                    klass[g] = n_class
                    if complete:
                        final_class = n_class
                    n_class += 1
    return parent[:n_hyp], option[:n_hyp], score[:n_hyp], klass[:n_hyp], final_class, received


Prefix = namedtuple("Prefix", [
    "fit",  # bool[n_opt, length + 1]: option o may start at prefix position t (``fit_table``, not exact)
    "length",  # int: prefix words, at least 1
    "tgt_length",  # int32[n_opt]: each option's target words
    "max_hypotheses",  # int: stop (and say so) when the pool would grow past this
])
"""What a cube-pruned completion must begin with (``prefix_cube_kernel``)."""


@njit(cache=True, inline="always")
def _prefix_pos(key, h, m):
    """Prefix words hypothesis h has produced: a hypothesis inside the prefix carries them in its
    recombination key (``_inside_key``); every other has produced all ``m``."""
    return m if key[h] >= -1 else (-key[h] - 2) % (m + 2)


@njit(cache=True, inline="always")
def _inside_key(key, pos, m):
    """The recombination key of a hypothesis inside the prefix: the decoder's ``key`` (the last block's end
    or option, >= 0) and ``pos`` < m, as a number below -1 (the decoder's keys are at least -1)."""
    return -2 - (key * (m + 2) + pos)


@njit(cache=True)
def _split_kept(s, stacks, classes, pool, limits, m):
    """Stack s's class representatives: those inside the prefix (all of them: the prefix is searched
    exactly), and those past it that survive the decoder's pruning (at most ``stack_size``, by score plus
    future estimate within the beam of the best of them), best first."""
    count = 0
    c = stacks.head[s]
    while c >= 0:
        count += 1
        c = classes.next[c]
    inside = np.empty(count, dtype=np.int32)
    past = np.empty(count, dtype=np.int32)
    totals = np.empty(count)
    n_inside = 0
    n_past = 0
    best = -np.inf
    c = stacks.head[s]
    while c >= 0:
        h = classes.rep[c]
        if _prefix_pos(pool.key, h, m) < m:
            inside[n_inside] = h
            n_inside += 1
        else:
            past[n_past] = h
            totals[n_past] = pool.score[h] + pool.fut[h]
            best = max(best, totals[n_past])
            n_past += 1
        c = classes.next[c]
    order = np.argsort(-totals[:n_past], kind="mergesort")
    keep = 0
    while keep < min(n_past, limits.stack_size) and totals[order[keep]] >= best + limits.log_beam:
        keep += 1
    stacks.stats[s, 0] = count
    stacks.stats[s, 1] = n_inside + keep
    return inside[:n_inside], past[order[:keep]]


@njit(cache=True, _nrt=False)
def _extend_inside(s, h, spans, sentence, tr, stacks, pool, n_hyp, classes, key_option, keep_arcs, prefix):
    """Extensions of hypothesis h of stack s, inside the prefix, by every option of ``spans`` (int32[k, 2])
    whose words agree with the prefix from h's position: none pruned. Returns the new number of hypotheses;
    the caller makes room for every extension."""
    n, span_offsets, max_length, m = sentence.n, sentence.span_offsets, sentence.max_length, prefix.length
    t = _prefix_pos(pool.key, h, m)
    for k in range(spans.shape[0]):
        start, end = spans[k, 0], spans[k, 1]
        u = s + end - start
        complete = u == n
        fut_g = 0.0 if complete else _future_with(pool.cov, h, start, end, n, sentence.future)
        for o in range(span_offsets[start * max_length + end - start - 1],
                       span_offsets[start * max_length + end - start]):
            if not prefix.fit[o, t]:
                continue
            new_pos = min(t + prefix.tgt_length[o], m)
            if complete and new_pos < m:
                continue  # shorter than the prefix
            step = extension_score(tr, pool.state, h, pool.state, n_hyp, pool.prev_start[h], pool.prev_end[h],
                                   pool.option[h], o, start, end, complete)
            new_score = pool.score[h] + sentence.local_score[o] + step
            _write(pool, n_hyp, h, o, start, end, new_score, pool.state, n_hyp, complete, fut_g, key_option)
            if new_pos < m:
                pool.key[n_hyp] = _inside_key(pool.key[n_hyp], new_pos, m)
            elif new_score + fut_g > stacks.best[u]:
                stacks.best[u] = new_score + fut_g
            if _place(pool, n_hyp, u, complete, classes, stacks, keep_arcs):
                n_hyp += 1
    return n_hyp


@njit(cache=True, nogil=True)
def prefix_cube_kernel(sentence, tr, limits, prefix):
    """Cube pruning of one sentence of ``sentence.n`` > 0 words (the decoder's ``Sentence``, ``Limits``;
    ``tr``: ``Transitions``) restricted to derivations whose output begins with ``prefix`` (``Prefix``).

    Hypotheses inside the prefix are extended exactly, every option that fits; once a hypothesis has
    produced the prefix, the search is the decoder's ``cube_kernel``: its stack's survivors of the stack
    size and beam (``_split_kept``) are grouped into edges whose cells are popped best first, up to the pop
    limit per stack. The two kinds share the stacks, recombination classes and search graph; a hypothesis
    inside the prefix has its position in its recombination key, so it recombines only with its like.
    Returns what ``cube_kernel`` returns, the final class ``OVERFLOW`` when the pool reached
    ``prefix.max_hypotheses``.
    """
    n, m = sentence.n, prefix.length
    pool, classes, stacks, spans, order, edges, edge_head, counts, queue = new_cube_search(sentence, tr)
    pool.key[0] = _inside_key(0, 0, m)
    n_hyp = np.int64(1)
    key_option = tr.key_option
    for s in range(n + 1):
        if s > 0:
            pool, classes, queue, n_hyp = fill_stack(s, edge_head, edges, order, sentence, tr, limits, stacks, pool,
                                                     n_hyp, classes, queue)
        if s == n:
            break
        inside, past = _split_kept(s, stacks, classes, pool, limits, m)
        for h in inside:
            n_spans = reachable_spans(pool.cov, h, n, pool.prev_end[h], sentence.max_length, limits.distortion_limit,
                                      limits.mon_swap, sentence.span_offsets, spans, sentence.zones, sentence.walls)
            most = np.int64(0)
            for k in range(n_spans):
                span = spans[k, 0] * sentence.max_length + spans[k, 1] - spans[k, 0] - 1
                most += sentence.span_offsets[span + 1] - sentence.span_offsets[span]
            if n_hyp + most > prefix.max_hypotheses:
                return (pool.parent[:n_hyp], pool.option[:n_hyp], pool.score[:n_hyp], pool.klass[:n_hyp],
                        np.int64(OVERFLOW), stacks.stats)
            if n_hyp + most > pool.cov.shape[0]:
                pool = _grow_pool(pool, max(2 * pool.cov.shape[0], n_hyp + most))
            classes = _class_room(classes, most, pool)
            n_hyp = _extend_inside(s, h, spans[:n_spans], sentence, tr, stacks, pool, n_hyp, classes, key_option,
                                   limits.keep_arcs, prefix)
        edges = _add_edges(s, past, edge_head, edges, counts, sentence, limits, pool, spans)
    return _graph(pool, n_hyp, classes, stacks, n)
