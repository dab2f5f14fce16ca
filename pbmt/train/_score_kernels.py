"""Numba kernel of the lexical weights (see ``pbmt.train.score``)."""

import numpy as np
from numba import njit

from pbmt.model._hashtable import find
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
    for lex(e|f) and lex(f|e). The word table is a ``pbmt.model._hashtable``
    over (source id, target id) with ``n_tgt`` target ids (NULL included),
    giving rows of ``p_tgt_src`` (p(e|f)) and ``p_src_tgt`` (p(f|e)).
    lex(e|f) = prod over target words e of the mean p(e|f) over the source
    words f aligned to e, or p(e|NULL) if there are none; lex(f|e) likewise.
    Returns float64[n, 2]: lex(f|e), lex(e|f).
    """
    n = src_start.shape[0]
    out = np.empty((n, 2), dtype=np.float64)
    one = np.uint64(1)
    for p in range(n):
        fs = src_ids[src_start[p] : src_start[p] + src_len[p]]
        es = tgt_ids[tgt_start[p] : tgt_start[p] + tgt_len[p]]
        mask = align_inverse[p]
        lex_fe = 1.0
        for f in range(fs.shape[0]):
            total = 0.0
            links = 0
            for e in range(es.shape[0]):
                if (mask >> np.uint64(e * MASK_STRIDE + f)) & one:
                    total += _prob(keys, values, n_tgt, p_src_tgt, fs[f], es[e])
                    links += 1
            if links == 0:
                lex_fe *= _prob(keys, values, n_tgt, p_src_tgt, fs[f], 0)
            else:
                lex_fe *= total / links
        mask = align_direct[p]
        lex_ef = 1.0
        for e in range(es.shape[0]):
            total = 0.0
            links = 0
            for f in range(fs.shape[0]):
                if (mask >> np.uint64(e * MASK_STRIDE + f)) & one:
                    total += _prob(keys, values, n_tgt, p_tgt_src, fs[f], es[e])
                    links += 1
            if links == 0:
                lex_ef *= _prob(keys, values, n_tgt, p_tgt_src, 0, es[e])
            else:
                lex_ef *= total / links
        out[p, 0] = lex_fe
        out[p, 1] = lex_ef
    return out
