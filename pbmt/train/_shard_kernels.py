"""Numba kernel of the sortable phrase pair keys of sharded extraction (see ``pbmt.train.shards``)."""

import numpy as np
from numba import njit


@njit(cache=True, inline="always")
def _put_u32(out, k, at, value):
    for b in range(4):
        out[k, at + b] = (value >> (24 - 8 * b)) & 0xFF


@njit(cache=True, inline="always")
def _put_phrase(out, k, at, rank, start, length, slots, terminator):
    for j in range(slots):
        if j < length:
            _put_u32(out, k, at + 4 * j, rank[start + j])
        elif j == length:
            _put_u32(out, k, at + 4 * j, terminator)


@njit(cache=True)
def phrase_pair_keys(src_rank, s_start, s_len, tgt_rank, t_start, t_len, mask, slots, src_term, tgt_term):
    """The key of every phrase pair occurrence, as big-endian bytes.

    ``src_rank``/``tgt_rank``: uint32 rank of every token of the shard (see
    ``pbmt.train.shards.WordRanks``); occurrence ``k`` covers source tokens
    ``s_start[k] .. + s_len[k]`` and target tokens likewise, with alignment
    ``mask[k]`` (uint64). Returns uint8[n, 8 * slots + 8]: ``slots`` uint32
    of source ranks, the terminator rank after the last word and zeros after
    it; the same for the target; then the mask (uint64), all big-endian, so
    that bytewise order is (source phrase, target phrase, mask) in Moses's
    order.
    """
    n = s_start.shape[0]
    out = np.zeros((n, 8 * slots + 8), dtype=np.uint8)
    for k in range(n):
        _put_phrase(out, k, 0, src_rank, s_start[k], s_len[k], slots, src_term)
        _put_phrase(out, k, 4 * slots, tgt_rank, t_start[k], t_len[k], slots, tgt_term)
        m = mask[k]
        for b in range(8):
            out[k, 8 * slots + b] = (m >> np.uint64(56 - 8 * b)) & np.uint64(0xFF)
    return out
