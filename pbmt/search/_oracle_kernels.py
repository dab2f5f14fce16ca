"""Numba kernel of the BLEU oracle search over MON/SWAP block sequences.

A hypothesis covers the source prefix ``[0, p)`` and, while a swap waits,
the block ``[q, r)`` with ``p < q``; the next block must then be ``[p, q)``.
It carries its clipped n-gram counts against the one reference, so its
BLEU statistics grow exactly as words are appended. Stacks hold hypotheses by
source words covered; a stack keeps its ``beam`` best by partial BLEU+1
(reference length scaled by the share of the source covered). Hypotheses with
the same coverage state and the same target words are one (their futures are
equal); nothing else is recombined, since BLEU does not decompose.
"""

import numpy as np
from numba import njit

from pbmt.search._array_kernels import grow1, grow2

ORDER = 4
NO_MATCH = -1e300  # log BLEU+1 of a hypothesis without a unigram match (BLEU+1 = 0)


@njit(cache=True)
def _ngram_id(ref, ref_id, context, n_context, word, k):
    """Id of the reference k-gram ``context[-(k-1):] + word`` (-1: not in the reference)."""
    m = ref.shape[0]
    for j in range(k - 1, m):
        if ref[j] != word or ref_id[k - 1, j] < 0:
            continue
        same = True
        for i in range(1, k):
            if ref[j - i] != context[n_context - i]:
                same = False
                break
        if same:
            return ref_id[k - 1, j]
    return -1


@njit(cache=True)
def log_bleu_plus1(hyp_len, ref_len, matches, exact):
    """Natural log of BLEU+1 (orders 2..4 add 1 to matches and totals); ``ref_len`` may be fractional.

    ``exact``: a hypothesis without a unigram match scores NO_MATCH (BLEU+1 = 0);
    otherwise (partial hypotheses) unigrams are smoothed by 0.01 so that such
    hypotheses are still ordered.
    """
    if hyp_len == 0:
        return NO_MATCH
    if exact and matches[0] == 0:
        return NO_MATCH
    total = 0.0
    for k in range(ORDER):
        t = max(hyp_len - k, 0)
        if k == 0:
            add = 0.0 if exact else 0.01
        else:
            add = 1.0
        if t + add == 0.0:
            return NO_MATCH
        total += np.log((matches[k] + add) / (t + add))
    bp = min(0.0, 1.0 - ref_len / hyp_len)
    return bp + total / ORDER


@njit(cache=True)
def _extend_stats(o, tgt_offsets, tgt_words, ref, ref_id, clip, counts_row, hist, n_hist, hyp_len, matches,
                  added_ids, added_counts):
    """Matches and history after appending option ``o``'s words; counts_row is the parent's (not changed).

    Returns (new hyp_len, new n_hist); ``matches``/``hist`` are updated in place;
    ``added_ids``/``added_counts`` list the reference n-grams counted (first ``n_added``).
    """
    n_added = 0
    for w in range(tgt_offsets[o], tgt_offsets[o + 1]):
        word = tgt_words[w]
        for k in range(1, ORDER + 1):
            if k - 1 > n_hist:
                break
            g = _ngram_id(ref, ref_id, hist, n_hist, word, k)
            if g < 0:
                continue
            seen = counts_row[g]
            slot = -1
            for a in range(n_added):
                if added_ids[a] == g:
                    slot = a
                    break
            if slot < 0:
                slot = n_added
                added_ids[slot] = g
                added_counts[slot] = 0
                n_added += 1
            if seen + added_counts[slot] < clip[g]:
                matches[k - 1] += 1
            added_counts[slot] += 1
        # shift the history (the last ORDER - 1 words)
        if n_hist < ORDER - 1:
            hist[n_hist] = word
            n_hist += 1
        else:
            for i in range(ORDER - 2):
                hist[i] = hist[i + 1]
            hist[ORDER - 2] = word
        hyp_len += 1
    return hyp_len, n_hist, n_added


@njit(cache=True)
def oracle_kernel(n, opt_start, opt_end, tgt_offsets, tgt_words, span_offsets, max_length, ref, ref_id, clip,
                  beam):
    """Beam search for high-BLEU+1 MON/SWAP block sequences of one sentence of ``n`` > 0 words.

    Options (deduplicated by span and target words) as in ``TranslationOptions``;
    ref: int32[m] reference ids; ref_id: int64[4, m], the id of the k-gram
    ending at reference position j (-1 where none); clip: int64[n_ids] its
    count in the reference. Returns (parent int32[h], option int32[h],
    exact int64[f] the final hypotheses, best first by exact log BLEU+1,
    log_bleu float64[f]); hypothesis 0 is the empty start.
    """
    m = ref.shape[0]
    n_ids = clip.shape[0]
    cap = 1024
    parent = np.full(cap, -1, dtype=np.int32)
    option = np.full(cap, -1, dtype=np.int32)
    p_end = np.zeros(cap, dtype=np.int32)
    q_start = np.full(cap, -1, dtype=np.int32)
    r_end = np.zeros(cap, dtype=np.int32)
    hyp_len = np.zeros(cap, dtype=np.int64)
    matches = np.zeros((cap, ORDER), dtype=np.int64)
    hist = np.zeros((cap, ORDER - 1), dtype=np.int32)
    n_hist = np.zeros(cap, dtype=np.int64)
    counts = np.zeros((cap, max(n_ids, 1)), dtype=np.int32)
    words_hash = np.zeros(cap, dtype=np.uint64)
    n_hyp = 1
    stack_members = np.full((n + 1, beam), -1, dtype=np.int64)
    stack_size = np.zeros(n + 1, dtype=np.int64)
    stack_members[0, 0] = 0
    stack_size[0] = 1

    ccap = 4096
    c_parent = np.zeros(ccap, dtype=np.int32)
    c_option = np.zeros(ccap, dtype=np.int32)
    c_stack = np.zeros(ccap, dtype=np.int32)
    c_score = np.zeros(ccap, dtype=np.float64)
    n_cand = 0

    longest = 1
    for o in range(opt_start.shape[0]):
        longest = max(longest, tgt_offsets[o + 1] - tgt_offsets[o])
    added_ids = np.zeros(ORDER * longest, dtype=np.int64)
    added_counts = np.zeros(ORDER * longest, dtype=np.int64)
    scratch_m = np.zeros(ORDER, dtype=np.int64)
    scratch_h = np.zeros(ORDER - 1, dtype=np.int32)
    ref_len = float(m)

    for s in range(n + 1):
        if s > 0:
            # materialise the best candidates of stack s
            pick = np.flatnonzero(c_stack[:n_cand] == s)
            order = np.argsort(-c_score[pick], kind="mergesort")
            for idx in order:
                if stack_size[s] == beam:
                    break
                c = pick[idx]
                h = c_parent[c]
                o = c_option[c]
                if n_hyp == cap:
                    cap *= 2
                    parent = grow1(parent, cap)
                    option = grow1(option, cap)
                    p_end = grow1(p_end, cap)
                    q_start = grow1(q_start, cap)
                    r_end = grow1(r_end, cap)
                    hyp_len = grow1(hyp_len, cap)
                    matches = grow2(matches, cap)
                    hist = grow2(hist, cap)
                    n_hist = grow1(n_hist, cap)
                    counts = grow2(counts, cap)
                    words_hash = grow1(words_hash, cap)
                g = n_hyp
                matches[g] = matches[h]
                hist[g] = hist[h]
                counts[g] = counts[h]
                hyp_len[g], n_hist[g], n_added = _extend_stats(
                    o, tgt_offsets, tgt_words, ref, ref_id, clip, counts[h], hist[g], n_hist[h], hyp_len[h],
                    matches[g], added_ids, added_counts)
                for a in range(n_added):
                    counts[g, added_ids[a]] += added_counts[a]
                x = words_hash[h]
                for w in range(tgt_offsets[o], tgt_offsets[o + 1]):
                    x = (x ^ np.uint64(tgt_words[w] + 1)) * np.uint64(0x100000001B3)
                    x ^= x >> np.uint64(29)
                words_hash[g] = x
                # coverage state
                a, b = opt_start[o], opt_end[o]
                if q_start[h] >= 0:  # filled the gap of a swap
                    p_end[g], q_start[g], r_end[g] = r_end[h], -1, 0
                elif a == p_end[h]:
                    p_end[g], q_start[g], r_end[g] = b, -1, 0
                else:
                    p_end[g], q_start[g], r_end[g] = p_end[h], a, b
                duplicate = False
                for k in range(stack_size[s]):
                    e = stack_members[s, k]
                    if (words_hash[e] == words_hash[g] and hyp_len[e] == hyp_len[g] and p_end[e] == p_end[g]
                            and q_start[e] == q_start[g] and r_end[e] == r_end[g]):
                        duplicate = True
                        break
                if duplicate:
                    continue
                parent[g] = h
                option[g] = o
                stack_members[s, stack_size[s]] = g
                stack_size[s] += 1
                n_hyp += 1
        if s == n:
            break
        # expand stack s into candidates
        for k in range(stack_size[s]):
            h = stack_members[s, k]
            p = p_end[h]
            for a in range(p, n):
                if q_start[h] >= 0 and a > p:
                    break
                if a > p:
                    if a - p > max_length:
                        break
                    gap = p * max_length + (a - p - 1)
                    if span_offsets[gap] == span_offsets[gap + 1]:
                        continue
                for length in range(min(max_length, n - a)):
                    b = a + length + 1
                    if q_start[h] >= 0 and b != q_start[h]:
                        continue
                    span = a * max_length + length
                    t = s + length + 1
                    for o in range(span_offsets[span], span_offsets[span + 1]):
                        scratch_m[:] = matches[h]
                        scratch_h[:] = hist[h]
                        new_len, _, _ = _extend_stats(o, tgt_offsets, tgt_words, ref, ref_id, clip, counts[h],
                                                      scratch_h, n_hist[h], hyp_len[h], scratch_m, added_ids,
                                                      added_counts)
                        if t == n:
                            score = log_bleu_plus1(new_len, ref_len, scratch_m, True)
                        else:
                            score = log_bleu_plus1(new_len, ref_len * t / n, scratch_m, False)
                        if n_cand == ccap:
                            ccap *= 2
                            c_parent = grow1(c_parent, ccap)
                            c_option = grow1(c_option, ccap)
                            c_stack = grow1(c_stack, ccap)
                            c_score = grow1(c_score, ccap)
                        c_parent[n_cand] = h
                        c_option[n_cand] = o
                        c_stack[n_cand] = t
                        c_score[n_cand] = score
                        n_cand += 1
    finals = stack_members[n, :stack_size[n]].copy()
    exact = np.empty(finals.shape[0])
    for k in range(finals.shape[0]):
        exact[k] = log_bleu_plus1(hyp_len[finals[k]], ref_len, matches[finals[k]], True)
    order = np.argsort(-exact, kind="mergesort")
    return parent[:n_hyp], option[:n_hyp], finals[order], exact[order]
