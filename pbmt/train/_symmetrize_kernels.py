"""Numba kernel of alignment symmetrisation (see ``pbmt.train.symmetrize``)."""

import numpy as np
from numba import njit

_FWD, _REV, _CUR = 1, 2, 4

# (target, source) offsets in the order symal tries them: the four
# neighbours sharing a side, then the four diagonal ones.
_NEIGHBOURS = np.array(
    [[-1, 0], [0, -1], [1, 0], [0, 1], [-1, -1], [-1, 1], [1, -1], [1, 1]], dtype=np.int64
)


@njit(cache=True)
def symmetrize_kernel(
    fwd_src, fwd_tgt, fwd_off, rev_src, rev_tgt, rev_off, src_len, tgt_len, union, grow, diagonal, final, final_and
):
    """Symmetrise two directed alignments sentence by sentence.

    fwd_*/rev_*: CSR alignments (int32 source and target positions, int64
    offsets) over the same sentences; src_len/tgt_len: int64[n_sentences].
    union: return the union and ignore the other switches;
    grow/diagonal/final/final_and: the symal switches. Starts from the
    intersection; ``grow`` then adds union points next to current points
    (``diagonal``: the 8-neighbourhood, else the 4-neighbourhood) that cover a
    word not covered yet, scanning current points in (target, source) order
    while they are added, until nothing changes; ``final`` then adds the
    remaining fwd-only points, then the rev-only points, in (target, source)
    order, that cover an uncovered word (``final_and``: two uncovered words).
    Without ``grow`` and ``final`` the result is the intersection.
    Returns (src int32[k], tgt int32[k], offsets int64[n + 1]), each sentence's
    points sorted by target then source, as symal prints them.
    """
    n_sent = src_len.shape[0]
    max_src = 1
    max_tgt = 1
    for s in range(n_sent):
        max_src = max(max_src, src_len[s])
        max_tgt = max(max_tgt, tgt_len[s])
    cell = np.zeros((max_tgt, max_src), dtype=np.uint8)
    src_cov = np.zeros(max_src, dtype=np.bool_)
    tgt_cov = np.zeros(max_tgt, dtype=np.bool_)
    out_src = np.empty(fwd_src.shape[0] + rev_src.shape[0], dtype=np.int32)
    out_tgt = np.empty_like(out_src)
    out_off = np.zeros(n_sent + 1, dtype=np.int64)
    n_neigh = 8 if diagonal else 4
    k = 0
    for s in range(n_sent):
        m = src_len[s]
        n = tgt_len[s]
        cell[:n, :m] = 0
        src_cov[:m] = False
        tgt_cov[:n] = False
        for p in range(fwd_off[s], fwd_off[s + 1]):
            cell[fwd_tgt[p], fwd_src[p]] |= _FWD
        for p in range(rev_off[s], rev_off[s + 1]):
            cell[rev_tgt[p], rev_src[p]] |= _REV
        for i in range(n):
            for j in range(m):
                c = cell[i, j]
                if c == _FWD | _REV or (union and c != 0):
                    cell[i, j] = c | _CUR
                    tgt_cov[i] = True
                    src_cov[j] = True
        added = grow and not union
        while added:
            added = False
            # A point added after the scan position is visited in this same
            # pass, one added before it only in the next (symal's set order).
            for i in range(n):
                for j in range(m):
                    if not cell[i, j] & _CUR:
                        continue
                    for o in range(n_neigh):
                        ti = i + _NEIGHBOURS[o, 0]
                        sj = j + _NEIGHBOURS[o, 1]
                        if ti < 0 or ti >= n or sj < 0 or sj >= m:
                            continue
                        c = cell[ti, sj]
                        if c & (_FWD | _REV) and not (tgt_cov[ti] and src_cov[sj]):
                            cell[ti, sj] = c | _CUR
                            tgt_cov[ti] = True
                            src_cov[sj] = True
                            added = True
        if final and not union:
            for only in (_FWD, _REV):
                for i in range(n):
                    for j in range(m):
                        if cell[i, j] != only:
                            continue
                        if final_and:
                            ok = not tgt_cov[i] and not src_cov[j]
                        else:
                            ok = not (tgt_cov[i] and src_cov[j])
                        if ok:
                            cell[i, j] = only | _CUR
                            tgt_cov[i] = True
                            src_cov[j] = True
        for i in range(n):
            for j in range(m):
                if cell[i, j] & _CUR:
                    out_src[k] = j
                    out_tgt[k] = i
                    k += 1
        out_off[s + 1] = k
    return out_src[:k].copy(), out_tgt[:k].copy(), out_off
