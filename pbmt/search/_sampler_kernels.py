"""Numba kernels of the Gibbs sampler over derivations (``pbmt.search.sampler``).

A chain (``ChainArrays``) holds one derivation, blocks in target order, and
caches what delta scoring needs: the state (the stateful features' state
row, as the searches keep it) before and after every block, the stateful features'
values of every block and of </s>, the target position of the block
covering each source word, and the first uncovered source word before each
block is placed (Moses's distortion rule).

A neighbourhood replaces the blocks at target positions [lo, hi) of the
current derivation. Candidate c puts there ``first[c]`` alone when
``second[c] < 0``, else ``first[c]``, the unchanged blocks [mid_lo, mid_hi)
and ``second[c]`` (options in target order). Its feature delta is the feature
vector of the new blocks (option-local values, the transitions into, inside
and out of the region, their LM words, and the LM words after the region
rescored until the state meets the old derivation's) minus the same for
the old blocks, all in ``_scoring_kernels.transition``'s per-column form.
Both sides go through the same arithmetic, so the current derivation's own
delta is exactly zero.
"""

from collections import namedtuple

import numpy as np
from numba import njit

from pbmt.search._scoring_kernels import end_score, jump_score, stateful_score, transition

# Nothing here allocates, so the kernels are compiled without numba's reference counting: its
# atomic increments and decrements of every array passed to a function cost more than scoring a
# candidate (docs/decoding.md). Numba's own hot helpers do the same. They release Python's lock, so
# chains on threads of one process sample side by side.
_kernel = njit(cache=True, _nrt=False, nogil=True)
_inline = njit(cache=True, _nrt=False, inline="always")

MERGE_SPLIT, REORDER, RETRANS = 0, 1, 2
# fields of Workspace.region
OP, LO, HI, MID_LO, MID_HI, CURRENT, COUNT = range(7)

OptionArrays = namedtuple("OptionArrays", [
    "start", "end",  # int32[n_opt]: source span of each option
    "tgt_offsets", "tgt_words",  # CSR of the options' target words (global ids)
    "local",  # float64[n_opt, n_dense]: option-local feature values (the weighted sparse ones in sparse_col)
    "span_offsets",  # int64[n * max_length + 1]: options of each span (TranslationOptions.span)
    "max_length",  # int
])
"""A sentence's ``TranslationOptions`` as the kernels read them."""

Scoring = namedtuple("Scoring", [
    "tr",  # Transitions (pbmt.search._scoring_kernels): LMs and their cache, reordering, sparse transitions,
    # the columns of each (the weighted sparse transitions in tr.sparse_col, -1 when the model has none)
    "limit",  # int: distortion limit, < 0 for none
    "weights",  # float64[n_dense]
])
"""The model's side of scoring: the transition features in the decoders' one form (``Transitions``, read
through a direct-mapped cache of LM scores) with the dense feature columns the deltas keep apart (a tuner
learns their weights), the distortion limit and the dense weights. Neighbourhoods score the same few
(state, word) pairs again and again; a cache hit costs one access where the LM's own lookup costs several
cache misses."""

MEMO_BITS = 6

ChainArrays = namedtuple("ChainArrays", [
    "start", "end", "option",  # int32[n]: the first size[0] entries are the blocks in target order
    "state",  # int64[n + 1, width]: row b the state before block b (row 0 the sentence start's)
    "lm_score",  # float64[n, n_stateful]: each block's values of the stateful features' columns (tr.stateful_cols)
    "word_pos",  # int32[n]: target position of the block covering each source word
    "first_gap",  # int32[n]: first uncovered source word before each block is placed
    "size",  # int64[1]: number of blocks
    "eos",  # float64[n_stateful]: the stateful features' values of the sentence end
    "features",  # float64[n_dense]: dense features of the derivation
])
"""One chain's derivation and caches (mutated in place by ``apply``)."""

Workspace = namedtuple("Workspace", [
    "first", "second",  # int32[cap]: each candidate's new options (see the module docstring)
    "delta",  # float64[cap, n_dense]: each candidate's dense feature delta
    "score",  # float64[cap]: delta @ weights
    "weight",  # float64[cap] scratch: sampling weights
    "region",  # int64[7]: OP, LO, HI, MID_LO, MID_HI, CURRENT (candidate equal to the chain), COUNT
    "structures",  # int64[2, 4]: the neighbourhood's structures (see _candidates)
    "states",  # int64[3, width] scratch: the states of a candidate's blocks, and of the blocks after it
    "memo_state",  # int64[2**MEMO_BITS, width]: a state after the region (column 0 -1: empty slot) ...
    "memo_change",  # float64[2**MEMO_BITS, n_stateful]: ... and the stateful columns' change after the region
    "row", "old", "scratch",  # float64[n_dense] scratch: a shared prefix, the old blocks' part, a rescoring
    "mark",  # int64[n] scratch marks of source words, valid where equal to stamp[0]
    "stamp",  # int64[1]
    "blocks",  # int32[n] scratch
])
"""A neighbourhood, filled by ``neighbourhood`` and read by ``apply``."""


@_inline
def _same_state(a, i, b, j):
    """Whether state rows a[i] and b[j] are equal."""
    for m in range(a.shape[1]):
        if a[i, m] != b[j, m]:
            return False
    return True


@_inline
def _copy_state(a, i, b, j):
    """b[j] = a[i] (state rows)."""
    for m in range(a.shape[1]):
        b[j, m] = a[i, m]


@_inline
def _stateful_values(ws, sc, opts, states, r, new_states, g, prev_start, prev_end, prev_option, o, eos):
    """The stateful features' values (``tr.stateful_cols``) of option o (o < 0: none) after the block
    [prev_start, prev_end) with ``prev_option``, and then the sentence end if ``eos``, from state ``states[r]``,
    into ``ws.scratch`` at their columns (its other entries untouched); the state after them to
    ``new_states[g]``."""
    tr = sc.tr
    for j in range(tr.stateful_cols.shape[0]):
        ws.scratch[tr.stateful_cols[j]] = 0.0
    start = opts.start[o] if o >= 0 else 0
    end = opts.end[o] if o >= 0 else 0
    stateful_score(tr, states, np.int64(r), new_states, np.int64(g), np.int64(prev_start), np.int64(prev_end),
                   np.int64(prev_option), np.int64(o), np.int64(start), np.int64(end), np.bool_(eos), np.bool_(False),
                   ws.scratch)


@_inline
def span_range(opts, start, end):
    """Option indices [a, b) of source span [start, end); empty if the span is too long."""
    length = end - start
    if length < 1 or length > opts.max_length:
        return np.int64(0), np.int64(0)
    k = start * opts.max_length + length - 1
    return np.int64(opts.span_offsets[k]), np.int64(opts.span_offsets[k + 1])


@_inline
def _before(ch, b):
    """(start, end, option) of the block before target position b; [0, 0), -1 at the start."""
    if b == 0:
        return np.int64(0), np.int64(0), np.int64(-1)
    return np.int64(ch.start[b - 1]), np.int64(ch.end[b - 1]), np.int64(ch.option[b - 1])


@_inline
def _extend(row, opts, sc, states, r, new_states, g, prev_start, prev_end, prev_option, o):
    """Add option o's local values and its transition from the previous block (in state ``states[r]``) to
    row, per column; its state after it to ``new_states[g]``."""
    for f in range(row.shape[0]):
        row[f] += opts.local[o, f]
    transition(sc.tr, states, r, new_states, g, prev_start, prev_end, prev_option, o, opts.start[o], opts.end[o],
               False, False, row)


@_inline
def _memo_slot(states, r):
    """The memo slot of state row ``states[r]``."""
    x = np.uint64(0)
    for m in range(states.shape[1]):
        x = (x ^ np.uint64(states[r, m])) * np.uint64(0x9E3779B97F4A7C15)
    return np.int64(x >> np.uint64(64 - MEMO_BITS))


@_kernel
def _close(row, opts, sc, ch, ws, states, r, last_start, last_end, last_option, hi):
    """Close a region ending at old position hi with block (last_*) and state ``states[r]``.

    Adds to row the transition into the old block hi (the sentence end if hi is past the last block) and the
    change in the stateful columns of the old blocks from hi on (and the end), rescored from ``states[r]`` until it
    equals the old derivation's state at a block boundary. The change depends on the state alone within a
    neighbourhood, so it is memoised in the workspace (cleared by ``_clear_memo``).
    """
    tr = sc.tr
    k = ch.size[0]
    if hi < k:
        jump_score(tr, np.int64(last_start), np.int64(last_end), np.int64(last_option), np.int64(ch.start[hi]),
                   np.int64(ch.end[hi]), np.int64(ch.option[hi]), np.bool_(False), row)
    else:
        end_score(tr, np.int64(last_option), np.bool_(False), row)
    cols = tr.stateful_cols
    slot = _memo_slot(states, r)
    change = ws.memo_change[slot]
    if not _same_state(ws.memo_state, slot, states, r):
        _copy_state(states, r, ws.memo_state, slot)
        for j in range(cols.shape[0]):
            change[j] = 0.0
        cont = ws.states
        _copy_state(states, r, cont, 2)
        ps, pe, po = last_start, last_end, last_option
        for j in range(hi, k + 1):
            if _same_state(cont, 2, ch.state, j):
                break
            if j > hi:
                ps, pe, po = _before(ch, j)
            _stateful_values(ws, sc, opts, cont, 2, cont, 2, ps, pe, po, ch.option[j] if j < k else -1, j == k)
            for c in range(cols.shape[0]):
                change[c] += ws.scratch[cols[c]] - (ch.eos[c] if j == k else ch.lm_score[j, c])
    for c in range(cols.shape[0]):
        row[cols[c]] += change[c]


@_inline
def _clear_memo(ws):
    for slot in range(ws.memo_state.shape[0]):
        ws.memo_state[slot, 0] = -1


@_kernel
def _score_old(ws, opts, sc, ch, lo, hi):
    """Set ws.old to the part of the old blocks [lo, hi)."""
    row = ws.old
    for f in range(row.shape[0]):
        row[f] = 0.0
    ps, pe, po = _before(ch, lo)
    _copy_state(ch.state, lo, ws.states, 0)
    for j in range(lo, hi):
        o = np.int64(ch.option[j])
        _extend(row, opts, sc, ws.states, 0, ws.states, 0, ps, pe, po, o)
        ps, pe, po = np.int64(ch.start[j]), np.int64(ch.end[j]), o
    _close(row, opts, sc, ch, ws, ws.states, np.int64(0), ps, pe, po, hi)


@_inline
def _finish(ws, sc, c):
    """Turn candidate c's row (new part) into its delta and weighted score."""
    row = ws.delta[c]
    for f in range(row.shape[0]):
        row[f] -= ws.old[f]
    s = 0.0
    for f in range(row.shape[0]):
        s += row[f] * sc.weights[f]
    ws.score[c] = s


@_kernel
def _candidates(ws, opts, sc, ch, n_cand, s):
    """Append the candidates of structure s of the neighbourhood in ``ws``; returns the new count.

    Structure (x_lo, x_hi, y_lo, y_hi): every option x in [x_lo, x_hi) alone
    when y_lo < 0, else x, the blocks [mid_lo, mid_hi) and every option y in
    [y_lo, y_hi). The part up to y is shared by the candidates with the same x.
    """
    reg, st = ws.region, ws.structures
    lo, hi, mid_lo, mid_hi = reg[LO], reg[HI], reg[MID_LO], reg[MID_HI]
    x_lo, x_hi, y_lo, y_hi = st[s, 0], st[s, 1], st[s, 2], st[s, 3]
    ps, pe, po = _before(ch, lo)
    single = y_lo < 0
    vx = ws.row
    states = ws.states
    for x in range(x_lo, x_hi):
        for f in range(vx.shape[0]):
            vx[f] = 0.0
        _extend(vx, opts, sc, ch.state, lo, states, 0, ps, pe, po, x)
        qs, qe, qo = np.int64(opts.start[x]), np.int64(opts.end[x]), x
        if not single:
            for j in range(mid_lo, mid_hi):
                o = np.int64(ch.option[j])
                _extend(vx, opts, sc, states, 0, states, 0, qs, qe, qo, o)
                qs, qe, qo = np.int64(ch.start[j]), np.int64(ch.end[j]), o
        # one block: the candidate is x itself, closed once
        first_y, last_y = (x, x + 1) if single else (y_lo, y_hi)
        for y in range(first_y, last_y):
            row = ws.delta[n_cand]
            for f in range(row.shape[0]):
                row[f] = vx[f]
            last = 0
            if not single:
                _extend(row, opts, sc, states, 0, states, 1, qs, qe, qo, y)
                last = 1
            _close(row, opts, sc, ch, ws, states, last, np.int64(opts.start[y]), np.int64(opts.end[y]), y, hi)
            _finish(ws, sc, n_cand)
            ws.first[n_cand] = x
            ws.second[n_cand] = -1 if single else y
            n_cand += 1
    return n_cand
@_inline
def _place(ch, ws, n, lo, limit, stamp, gap, prev_end, start, end):
    """Moses's distortion rules for block [start, end) after a block ending at prev_end.

    ``gap`` is the first uncovered source word; words covered so far are those
    of blocks before target position lo and the words marked with ``stamp``.
    Marks the block. Returns (allowed, the new first uncovered word).
    """
    if abs(start - prev_end) > limit or (start != gap and end - gap > limit):
        return False, gap
    for w in range(start, end):
        ws.mark[w] = stamp
    while gap < n and (ch.word_pos[gap] < lo or ws.mark[gap] == stamp):
        gap += 1
    return True, gap


@_kernel
def _valid(ch, ws, sc, n, lo, hi, s1, e1, s2, e2):
    """Whether replacing blocks [lo, hi) by [s1, e1), the region's middle blocks and [s2, e2) obeys the distortion limit.

    s2 < 0: no second block (and no middle). Only the region and the jump out
    of it can change: the coverage before every later block is the same.
    """
    limit = sc.limit
    if limit < 0:
        return True
    ws.stamp[0] += 1
    stamp = ws.stamp[0]
    gap = np.int64(ch.first_gap[lo])
    prev_end = np.int64(ch.end[lo - 1]) if lo > 0 else np.int64(0)
    ok, gap = _place(ch, ws, n, lo, limit, stamp, gap, prev_end, s1, e1)
    if not ok:
        return False
    prev_end = np.int64(e1)
    if s2 >= 0:
        for j in range(ws.region[MID_LO], ws.region[MID_HI]):
            ok, gap = _place(ch, ws, n, lo, limit, stamp, gap, prev_end, ch.start[j], ch.end[j])
            if not ok:
                return False
            prev_end = np.int64(ch.end[j])
        ok, gap = _place(ch, ws, n, lo, limit, stamp, gap, prev_end, s2, e2)
        if not ok:
            return False
        prev_end = np.int64(e2)
    return hi >= ch.size[0] or abs(ch.start[hi] - prev_end) <= limit


@_inline
def _structure(ws, s, x_range, y_range):
    """Set structure s: options x_range (a pair), then y_range, or (-1, -1) for one block."""
    ws.structures[s, 0], ws.structures[s, 1] = x_range
    ws.structures[s, 2], ws.structures[s, 3] = y_range


@_kernel
def _merge_split(ch, opts, sc, ws, n, i):
    """MERGE-SPLIT at the boundary before source word i (0 < i < n); returns the number of structures."""
    reg = ws.region
    b = np.int64(ch.word_pos[i])
    s, e = np.int64(ch.start[b]), np.int64(ch.end[b])
    none = (np.int64(-1), np.int64(-1))
    if s < i:
        # inside block b: keep it whole or split it at i
        reg[LO], reg[HI], reg[MID_LO], reg[MID_HI] = b, b + 1, b + 1, b + 1
        _structure(ws, 0, span_range(opts, s, e), none)
        x, y = span_range(opts, s, i), span_range(opts, i, e)
        _structure(ws, 1, x, y)
        return 2 if x[0] < x[1] and y[0] < y[1] and _valid(ch, ws, sc, n, b, b + 1, s, i, i, e) else 1
    left = np.int64(ch.word_pos[i - 1])
    if left + 1 == b:
        # two blocks meeting at i, adjacent and monotone in the target: keep them apart or merge them
        s = np.int64(ch.start[left])
        reg[LO], reg[HI], reg[MID_LO], reg[MID_HI] = left, b + 1, b + 1, b + 1
        _structure(ws, 0, span_range(opts, s, i), span_range(opts, i, e))
        merged = span_range(opts, s, e)
        _structure(ws, 1, merged, none)
        return 2 if merged[0] < merged[1] and _valid(ch, ws, sc, n, left, b + 1, s, e, none[0], none[1]) else 1
    # not adjacent in the target: retranslate both, the blocks between them unchanged
    lo, hi = min(left, b), max(left, b) + 1
    reg[LO], reg[HI], reg[MID_LO], reg[MID_HI] = lo, hi, lo + 1, hi - 1
    _structure(ws, 0, span_range(opts, ch.start[lo], ch.end[lo]), span_range(opts, ch.start[hi - 1], ch.end[hi - 1]))
    return 1


@_kernel
def _reorder(ch, opts, sc, ws, n, b1, b2):
    """REORDER of the blocks at target positions b1 < b2: as they are, or swapped."""
    reg = ws.region
    reg[LO], reg[HI], reg[MID_LO], reg[MID_HI] = b1, b2 + 1, b1 + 1, b2
    o1, o2 = np.int64(ch.option[b1]), np.int64(ch.option[b2])
    _structure(ws, 0, (o1, o1 + 1), (o2, o2 + 1))
    _structure(ws, 1, (o2, o2 + 1), (o1, o1 + 1))
    s1, e1 = np.int64(ch.start[b2]), np.int64(ch.end[b2])
    s2, e2 = np.int64(ch.start[b1]), np.int64(ch.end[b1])
    return 2 if _valid(ch, ws, sc, n, b1, b2 + 1, s1, e1, s2, e2) else 1


@_kernel
def neighbourhood(ch, opts, sc, ws, n, op, a, b):
    """List the neighbourhood of operator ``op`` into ``ws``; returns its size.

    MERGE_SPLIT: at the boundary before source word a (0 < a < n); REORDER:
    the blocks at target positions a < b; RETRANS: the block at target
    position a. Deltas are natural-log feature deltas, scores weighted.
    Structure 0 is the current derivation's: its member equal to it is the
    current candidate.
    """
    reg, st = ws.region, ws.structures
    reg[OP] = op
    if op == MERGE_SPLIT:
        n_structures = _merge_split(ch, opts, sc, ws, n, a)
    elif op == REORDER:
        n_structures = _reorder(ch, opts, sc, ws, n, a, b)
    else:
        reg[LO], reg[HI], reg[MID_LO], reg[MID_HI] = a, a + 1, a + 1, a + 1
        _structure(ws, 0, span_range(opts, ch.start[a], ch.end[a]), (np.int64(-1), np.int64(-1)))
        n_structures = 1
    lo, hi = reg[LO], reg[HI]
    if st[0, 2] < 0:
        reg[CURRENT] = ch.option[lo] - st[0, 0]
    else:
        reg[CURRENT] = (ch.option[lo] - st[0, 0]) * (st[0, 3] - st[0, 2]) + ch.option[hi - 1] - st[0, 2]
    _clear_memo(ws)
    _score_old(ws, opts, sc, ch, lo, hi)
    count = np.int64(0)
    for s in range(n_structures):
        count = _candidates(ws, opts, sc, ch, count, s)
    reg[COUNT] = count
    return count


@_kernel
def choose_move(u_op, u_where, op_cum, n, k):
    """Operator and position from two uniforms in [0, 1): (op, a, b), op = -1 when it cannot apply.

    op_cum: float64[3] cumulative operator probabilities. MERGE_SPLIT picks a
    source boundary 1..n-1, REORDER a pair of target positions among the
    k(k-1)/2, RETRANS a target position: uniform choices that depend only on
    n and k, which the moves of one neighbourhood do not change, so each
    operator leaves exp(score / T) invariant.
    """
    op = MERGE_SPLIT if u_op < op_cum[0] else (REORDER if u_op < op_cum[1] else RETRANS)
    if op == MERGE_SPLIT:
        if n < 2:
            return -1, 0, 0
        return op, 1 + min(np.int64(u_where * (n - 1)), n - 2), 0
    if op == REORDER:
        if k < 2:
            return -1, 0, 0
        p = min(np.int64(u_where * (k * (k - 1) // 2)), k * (k - 1) // 2 - 1)
        b1 = 0
        while p >= k - 1 - b1:
            p -= k - 1 - b1
            b1 += 1
        return op, b1, b1 + 1 + p
    if k < 1:
        return -1, 0, 0
    return op, min(np.int64(u_where * k), k - 1), 0


@_kernel
def choose(score, count, temperature, u, weight):
    """Index drawn from score[:count] with probability ∝ exp(score / temperature), by the uniform u.

    temperature <= 0: the first best (greedy). weight: float64[>= count] scratch.
    """
    best = 0
    for c in range(1, count):
        if score[c] > score[best]:
            best = c
    if temperature <= 0.0 or count == 1:
        return best
    total = 0.0
    for c in range(count):
        weight[c] = np.exp((score[c] - score[best]) / temperature)
        total += weight[c]
    target = u * total
    acc = 0.0
    for c in range(count):
        acc += weight[c]
        if acc > target:
            return c
    return best


@_kernel
def _refresh(ch, opts, sc, ws, n, lo, m):
    """Recompute the caches after blocks [lo, lo + m) changed.

    ``ws.states[2]``: the old state entering block lo + m; the blocks' stateful values are recomputed until the new
    state entering a later block equals the old one.
    """
    k = ch.size[0]
    cols = sc.tr.stateful_cols
    old_in = ws.states
    j = lo
    while j < k:
        if j >= lo + m:
            if _same_state(ch.state, j, old_in, 2):
                break
            _copy_state(ch.state, j + 1, old_in, 2)
        ps, pe, po = _before(ch, j)
        _stateful_values(ws, sc, opts, ch.state, j, ch.state, j + 1, ps, pe, po, ch.option[j], False)
        for c in range(cols.shape[0]):
            ch.lm_score[j, c] = ws.scratch[cols[c]]
        j += 1
    if j == k:
        ps, pe, po = _before(ch, k)
        _stateful_values(ws, sc, opts, ch.state, k, ws.states, 1, ps, pe, po, -1, True)
        for c in range(cols.shape[0]):
            ch.eos[c] = ws.scratch[cols[c]]
    ws.stamp[0] += 1
    stamp = ws.stamp[0]
    gap = 0
    for b in range(k):
        ch.first_gap[b] = gap
        for w in range(ch.start[b], ch.end[b]):
            ch.word_pos[w] = b
            ws.mark[w] = stamp
        while gap < n and ws.mark[gap] == stamp:
            gap += 1


@_kernel
def init_chain(ch, opts, sc, ws, n):
    """Fill the caches of a chain whose blocks and features are set."""
    for m in range(ch.state.shape[1]):
        ch.state[0, m] = sc.tr.begin[m]
    _refresh(ch, opts, sc, ws, n, np.int64(0), np.int64(ch.size[0]))


@_inline
def _move_block(ch, src, dst):
    ch.start[dst] = ch.start[src]
    ch.end[dst] = ch.end[src]
    ch.option[dst] = ch.option[src]
    _copy_state(ch.state, src + 1, ch.state, dst + 1)
    for c in range(ch.lm_score.shape[1]):
        ch.lm_score[dst, c] = ch.lm_score[src, c]


@_kernel
def apply(ch, opts, sc, ws, n, c):
    """Move the chain to candidate c of the neighbourhood in ``ws`` (features += its delta)."""
    reg = ws.region
    if c == reg[CURRENT]:
        return
    lo, hi = reg[LO], reg[HI]
    new = ws.blocks
    m = 0
    new[m] = ws.first[c]
    m += 1
    if ws.second[c] >= 0:
        for j in range(reg[MID_LO], reg[MID_HI]):
            new[m] = ch.option[j]
            m += 1
        new[m] = ws.second[c]
        m += 1
    k = ch.size[0]
    _copy_state(ch.state, hi, ws.states, 2)  # the old state entering block hi
    shift = m - (hi - lo)
    if shift > 0:
        for j in range(k - 1, hi - 1, -1):
            _move_block(ch, j, j + shift)
    elif shift < 0:
        for j in range(hi, k):
            _move_block(ch, j, j + shift)
    ch.size[0] = k + shift
    for j in range(m):
        o = new[j]
        ch.option[lo + j] = o
        ch.start[lo + j] = opts.start[o]
        ch.end[lo + j] = opts.end[o]
    for f in range(ch.features.shape[0]):
        ch.features[f] += ws.delta[c, f]
    _refresh(ch, opts, sc, ws, n, lo, m)


@_kernel
def copy_options(ch, out):
    """out[:k] = the chain's options, out[k:] = -1."""
    k = ch.size[0]
    for j in range(out.shape[0]):
        out[j] = ch.option[j] if j < k else -1


@_kernel
def run_chain(ch, opts, sc, ws, n, op_cum, u, temperature, record, trace, track, best):
    """Run the chain for ``u.shape[0]`` steps.

    u: float64[steps, 3] uniforms (operator, position, sample); temperature:
    float64[steps]; record: bool[steps], whether to copy the derivation after
    the step into the next row of trace (int32[record.sum(), n], options in
    target order padded with -1). track: float64[2], the chain's current and
    the best score seen (weighted, natural log), updated; best: int32[n], the
    best derivation's options padded with -1, updated.
    """
    r = 0
    for t in range(u.shape[0]):
        k = ch.size[0]
        op, a, b = choose_move(u[t, 0], u[t, 1], op_cum, n, k)
        if op >= 0:
            count = neighbourhood(ch, opts, sc, ws, n, op, a, b)
            c = choose(ws.score, count, temperature[t], u[t, 2], ws.weight)
            if c != ws.region[CURRENT]:
                track[0] += ws.score[c]
                apply(ch, opts, sc, ws, n, c)
                if track[0] > track[1]:
                    track[1] = track[0]
                    copy_options(ch, best)
        if record[t]:
            copy_options(ch, trace[r])
            r += 1
