"""Numba kernels of a sentence's translation options: the phrase table's candidates of every span and the
unknown words passed through, as the flat arrays of ``TranslationOptions``, without Python's lock."""

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def table_options(spans, cand_offsets, tgt_offsets, tgt_words, align_offsets, align, cand_local,
                  cand_lm_estimate, cand_reordering, sentence, unknown_local, letterless, unknown_estimate):
    """The options of one sentence the phrase table gives, and one for each word it does not know.

    spans: int32[n, width], the table's source phrase of words ``i .. i + l`` (-1: none; ``lookup_spans``);
    cand_offsets, tgt_offsets/tgt_words, align_offsets/align (int16[k, 2]): the pruned table's candidates of a
    phrase, target words and word links of a candidate; cand_local float64[n_cand, n_features],
    cand_lm_estimate float64[n_cand], cand_reordering float64[n_cand, r]: the model's per candidate;
    sentence int32[n]. Word ``i`` is unknown where ``spans[i, 0] < 0``: its option passes it through
    (candidate -1, its own word, linked to itself) with the local features ``unknown_local[1]`` where
    ``letterless[i]`` (bool[n]) and ``unknown_local[0]`` elsewhere (float64[2, n_features]), estimate
    ``unknown_estimate[i]`` (float64[n]) and no reordering scores.

    Returns, for options sorted by (start, length), a span's candidates in the table's order:
    (start int32, end int32, candidate int64, tgt_offsets int64, tgt_words, align_offsets int64, align,
    local float64[n_opt, n_features], reordering float64[n_opt, r], lm_estimate float64[n_opt],
    span_offsets int64[n * width + 1] as ``span_offsets`` gives).
    """
    n, width = spans.shape
    n_opt = n_tgt = n_align = 0
    for i in range(n):
        if spans[i, 0] < 0:
            n_opt += 1
            n_tgt += 1
            n_align += 1
        for length in range(width):
            phrase = spans[i, length]
            if phrase >= 0:
                first, last = cand_offsets[phrase], cand_offsets[phrase + 1]
                n_opt += last - first
                n_tgt += tgt_offsets[last] - tgt_offsets[first]
                n_align += align_offsets[last] - align_offsets[first]
    start = np.empty(n_opt, np.int32)
    end = np.empty(n_opt, np.int32)
    candidate = np.empty(n_opt, np.int64)
    out_tgt_offsets = np.zeros(n_opt + 1, np.int64)
    out_tgt_words = np.empty(n_tgt, tgt_words.dtype)
    out_align_offsets = np.zeros(n_opt + 1, np.int64)
    out_align = np.empty((n_align, 2), align.dtype)
    n_features, n_reordering = cand_local.shape[1], cand_reordering.shape[1]
    local = np.empty((n_opt, n_features))
    reordering = np.zeros((n_opt, n_reordering))
    lm_estimate = np.empty(n_opt)
    o = t = a = 0
    for i in range(n):
        for length in range(width):
            phrase = spans[i, length]
            if phrase < 0:
                if length == 0:
                    start[o] = i
                    end[o] = i + 1
                    candidate[o] = -1
                    out_tgt_words[t] = sentence[i]
                    out_align[a, 0] = 0
                    out_align[a, 1] = 0
                    row = 1 if letterless[i] else 0
                    for f in range(n_features):
                        local[o, f] = unknown_local[row, f]
                    lm_estimate[o] = unknown_estimate[i]
                    o += 1
                    t += 1
                    a += 1
                    out_tgt_offsets[o] = t
                    out_align_offsets[o] = a
                continue
            for c in range(cand_offsets[phrase], cand_offsets[phrase + 1]):
                start[o] = i
                end[o] = i + length + 1
                candidate[o] = c
                for k in range(tgt_offsets[c], tgt_offsets[c + 1]):
                    out_tgt_words[t] = tgt_words[k]
                    t += 1
                for k in range(align_offsets[c], align_offsets[c + 1]):
                    out_align[a, 0] = align[k, 0]
                    out_align[a, 1] = align[k, 1]
                    a += 1
                for f in range(n_features):
                    local[o, f] = cand_local[c, f]
                for f in range(n_reordering):
                    reordering[o, f] = cand_reordering[c, f]
                lm_estimate[o] = cand_lm_estimate[c]
                o += 1
                out_tgt_offsets[o] = t
                out_align_offsets[o] = a
    return (start, end, candidate, out_tgt_offsets, out_tgt_words, out_align_offsets, out_align, local, reordering,
            lm_estimate, span_offsets(n, width, start, end))


@njit(cache=True, nogil=True)
def span_offsets(n, width, start, end):
    """Where each span's options begin among options sorted by (start, length): int64[n * width + 1], the
    options of ``[i, i + l + 1)`` are ``span_offsets[i * width + l]`` up to the next entry. start/end int32[n_opt]
    (end exclusive, at most ``width`` past start)."""
    out = np.zeros(n * width + 1, np.int64)
    for o in range(start.shape[0]):
        out[start[o] * width + end[o] - start[o]] += 1
    for k in range(n * width):
        out[k + 1] += out[k]
    return out
