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
from pbmt.search._scoring_kernels import EOS, lm_words, msd_orientation, score_word

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
def decode_kernel(n, opt_start, opt_end, tgt_offsets, tgt_words, local_score, reordering, span_offsets,
                  max_length, future, lm, begin_state, w_lm_ln, w_dist, w_lr, has_lr,
                  distortion_limit, stack_size, log_beam, mon_swap, orient_score, right_key, left_key, pair_weight,
                  has_transition):
    """Stack decoding of one sentence of ``n`` > 0 words.

    Options as in ``TranslationOptions``; w_lm_ln: LM weight times ln 10;
    w_dist: distortion weight; w_lr: float64[6] reordering weights (used when
    ``has_lr``); distortion_limit < 0: unlimited; log_beam: natural log of the
    beam threshold (-inf: no threshold pruning); mon_swap: search the MON/SWAP
    space instead (the distortion limit is ignored). Weighted transition
    scores of sparse features (used when ``has_transition``): orient_score
    float64[n_opt, 3], the score of option o in each orientation relative to
    its predecessor (msd order: monotone = R, swap = L, discontinuous = N);
    pair_weight float64[n_right + 1, n_left + 1], the score of a block with
    ``left_key`` l after one with ``right_key`` r (row n_right: the sentence
    start; column n_left: the sentence end). Returns the pool:
    (parent int32[h], option int32[h], score float64[h], klass int32[h],
    final_class int, stats int64[n + 1, 5]) — klass[h] is the recombination
    class of hypothesis h; final_class -1 if no complete hypothesis survived;
    stats[s] counts, for stack s (s words covered): its classes when it was
    expanded, the hypotheses expanded after pruning, the hypotheses added to
    it, those of them recombined into an existing class, and the extensions
    rejected by the beam threshold before entering it (see STAT_NAMES).
    """
    words = max(1, (n + 63) // 64)
    cap = 1024
    cov = np.zeros((cap, words), dtype=np.uint64)
    prev_start = np.zeros(cap, dtype=np.int32)
    prev_end = np.zeros(cap, dtype=np.int32)
    lm_state = np.zeros(cap, dtype=np.int64)
    option = np.full(cap, -1, dtype=np.int32)
    parent = np.full(cap, -1, dtype=np.int32)
    score = np.zeros(cap, dtype=np.float64)
    fut = np.zeros(cap, dtype=np.float64)
    klass = np.zeros(cap, dtype=np.int32)
    key_a = np.zeros(cap, dtype=np.int64)
    n_hyp = 1
    lm_state[0] = begin_state
    key_a[0] = 0
    fut[0] = future[0, n]

    ccap = 1024
    c_rep = np.zeros(ccap, dtype=np.int32)
    c_next = np.full(ccap, -1, dtype=np.int32)  # next class in the same stack
    n_class = 1
    stack_head = np.full(n + 1, -1, dtype=np.int32)
    stack_best = np.full(n + 1, -np.inf)
    stack_head[0] = 0
    stack_best[0] = fut[0]
    tcap = 4096
    table = np.full(tcap, -1, dtype=np.int32)
    final_class = -1
    stats = np.zeros((n + 1, 5), dtype=np.int64)

    for s in range(n):
        # the classes of stack s, pruned
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
        keep = min(count, stack_size)
        stats[s, 0] = count
        for r in range(keep):
            idx = order[r]
            if totals[idx] < stack_best[s] + log_beam:
                break
            stats[s, 1] += 1
            h = reps[idx]
            first_gap = 0
            while first_gap < n and _covered(cov, h, first_gap):
                first_gap += 1
            gap_end = first_gap
            while gap_end < n and not _covered(cov, h, gap_end):
                gap_end += 1
            for start in range(first_gap, n):
                if _covered(cov, h, start):
                    continue
                jump = abs(start - prev_end[h])
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
                elif distortion_limit >= 0 and jump > distortion_limit:
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
                    t = s + length + 1
                    for o in range(span_offsets[span], span_offsets[span + 1]):
                        p, new_state = lm_words(lm, lm_state[h], tgt_words, tgt_offsets[o], tgt_offsets[o + 1])
                        new_score = score[h] + local_score[o] + w_lm_ln * p - w_dist * jump
                        if has_lr:
                            orient = msd_orientation(prev_start[h], prev_end[h], start, end)
                            new_score += w_lr[orient] * reordering[o, orient]
                            if option[h] >= 0:
                                new_score += w_lr[3 + orient] * reordering[option[h], 3 + orient]
                        if has_transition:
                            new_score += orient_score[o, msd_orientation(prev_start[h], prev_end[h], start, end)]
                            row = right_key[option[h]] if option[h] >= 0 else pair_weight.shape[0] - 1
                            new_score += pair_weight[row, left_key[o]]
                            if t == n:
                                new_score += pair_weight[right_key[o], pair_weight.shape[1] - 1]
                        if n_hyp == cap:
                            cap *= 2
                            cov = grow2(cov, cap)
                            prev_start = grow1(prev_start, cap)
                            prev_end = grow1(prev_end, cap)
                            lm_state = grow1(lm_state, cap)
                            option = grow1(option, cap)
                            parent = grow1(parent, cap)
                            score = grow1(score, cap)
                            fut = grow1(fut, cap)
                            klass = grow1(klass, cap)
                            key_a = grow1(key_a, cap)
                        g = n_hyp
                        cov[g] = cov[h]
                        for i in range(start, end):
                            cov[g, i >> 6] |= np.uint64(1) << np.uint64(i & 63)
                        complete = t == n
                        if complete:
                            p_end, new_state = score_word(lm, new_state, EOS)
                            new_score += w_lm_ln * p_end
                            fut[g] = 0.0
                        else:
                            fut[g] = _future_of(cov, g, n, future)
                        total = new_score + fut[g]
                        if total < stack_best[t] + log_beam:
                            stats[t, 4] += 1
                            continue
                        prev_start[g] = start
                        prev_end[g] = end
                        lm_state[g] = -1 if complete else new_state
                        option[g] = o
                        parent[g] = h
                        score[g] = new_score
                        key_a[g] = -1 if complete else (o if has_lr or has_transition else end)
                        n_hyp += 1
                        stats[t, 2] += 1
                        if total > stack_best[t]:
                            stack_best[t] = total
                        # find the class of g
                        mask = tcap - 1
                        slot = np.int64(_hash(cov, g, key_a[g], lm_state[g]) & np.uint64(mask))
                        found = -1
                        while table[slot] >= 0:
                            rep = c_rep[table[slot]]
                            if key_a[rep] == key_a[g] and lm_state[rep] == lm_state[g]:
                                same = True
                                for w in range(words):
                                    if cov[rep, w] != cov[g, w]:
                                        same = False
                                        break
                                if same:
                                    found = table[slot]
                                    break
                            slot = (slot + 1) & mask
                        if found >= 0:
                            stats[t, 3] += 1
                            klass[g] = found
                            if new_score > score[c_rep[found]]:
                                c_rep[found] = g
                            continue
                        if n_class == ccap:
                            ccap *= 2
                            c_rep = grow1(c_rep, ccap)
                            c_next = grow1(c_next, ccap)
                        c_rep[n_class] = g
                        c_next[n_class] = stack_head[t]
                        stack_head[t] = n_class
                        klass[g] = n_class
                        if complete:
                            final_class = n_class
                        table[slot] = n_class
                        n_class += 1
                        if 2 * n_class > tcap:
                            tcap *= 2
                            table = np.full(tcap, -1, dtype=np.int32)
                            mask = tcap - 1
                            for cl in range(n_class):
                                rep = c_rep[cl]
                                sl = np.int64(_hash(cov, rep, key_a[rep], lm_state[rep]) & np.uint64(mask))
                                while table[sl] >= 0:
                                    sl = (sl + 1) & mask
                                table[sl] = cl
    c = stack_head[n]
    while c >= 0:
        stats[n, 0] += 1
        c = c_next[c]
    return parent[:n_hyp], option[:n_hyp], score[:n_hyp], klass[:n_hyp], final_class, stats
