"""Numba kernel of the lexical weights (see ``pbmt.train.score``)."""

import numpy as np
from numba import njit

from pbmt.base.hashtable import find
from pbmt.train._extract_kernels import MASK_STRIDE


@njit(cache=True, inline="always")
def _prob(keys, values, n_tgt, probs, f, e):
    # Moses's permissiveLookup: a word pair missing from the table counts 1.
    i = find(keys, values, n_tgt, f, e)
    return probs[i] if i >= 0 else 1.0


@njit(cache=True)
def lexical_weights(
    src_ids, src_start, src_len, tgt_ids, tgt_start, tgt_len, align_direct, align_inverse,
    keys, values, n_tgt, p_tgt_src, p_src_tgt,
):
    """lex(f|e) and lex(e|f) of every phrase pair (Koehn et al. 2003, as Moses's ``score``).

    Pair ``p`` has source words ``src_ids[src_start[p] : + src_len[p]]`` and
    target words likewise; word ids are shifted by one so that 0 is NULL.
    ``align_direct``/``align_inverse``: uint64 masks (bit ``e * 8 + f``) used
    for lex(e|f) and lex(f|e). The word table is a ``pbmt.base.hashtable``
    over (source id, target id) with ``n_tgt`` target ids (NULL included),
    giving rows of ``p_tgt_src`` (p(e|f)) and ``p_src_tgt`` (p(f|e)).
    lex(e|f) = prod over target words e of the mean p(e|f) over the source
    words f aligned to e, or p(e|NULL) if there are none; lex(f|e) likewise.
    Returns float64[n, 2]: lex(f|e), lex(e|f).
    """
    n = src_start.shape[0]
    out = np.empty((n, 2), dtype=np.float64)
    for p in range(n):
        fs = src_ids[src_start[p] : src_start[p] + src_len[p]]
        es = tgt_ids[tgt_start[p] : tgt_start[p] + tgt_len[p]]
        out[p, 0] = _lex_weight(fs, es, align_inverse[p], False, keys, values, n_tgt, p_src_tgt)
        out[p, 1] = _lex_weight(es, fs, align_direct[p], True, keys, values, n_tgt, p_tgt_src)
    return out


@njit(cache=True, inline="always")
def _lex_weight(predicted, given, mask, predicted_is_target, keys, values, n_tgt, probs):
    # Product over the predicted words of the mean probability over the given
    # words linked to each (bit e * 8 + f of mask), or of the probability given NULL.
    weight = 1.0
    for a in range(predicted.shape[0]):
        total = 0.0
        links = 0
        for b in range(given.shape[0]):
            e, f = (a, b) if predicted_is_target else (b, a)
            if (mask >> np.uint64(e * MASK_STRIDE + f)) & np.uint64(1):
                fw, ew = (given[b], predicted[a]) if predicted_is_target else (predicted[a], given[b])
                total += _prob(keys, values, n_tgt, probs, fw, ew)
                links += 1
        if links == 0:
            fw, ew = (0, predicted[a]) if predicted_is_target else (predicted[a], 0)
            weight *= _prob(keys, values, n_tgt, probs, fw, ew)
        else:
            weight *= total / links
    return weight
