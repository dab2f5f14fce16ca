"""Compressed sparse rows: a list of variable-length rows as (offsets, data).

Row ``i`` is ``data[offsets[i]:offsets[i + 1]]``; ``offsets`` is ``int64[n + 1]``
starting at 0. Phrase tables, corpora and n-best lists are all stored so.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np


def offsets(lengths: np.ndarray) -> np.ndarray:
    """The offsets int64[n + 1] of rows of ``lengths`` (int[n])."""
    out = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=out[1:])
    return out


def from_rows(rows: Sequence[Sequence[int]] | Sequence[np.ndarray], dtype=np.int32) -> tuple[np.ndarray, np.ndarray]:
    """Pack rows into (offsets int64[n + 1], data)."""
    lengths = np.fromiter((len(r) for r in rows), dtype=np.int64, count=len(rows))
    offsets = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    data = np.concatenate([np.asarray(r, dtype=dtype) for r in rows]) if len(rows) else np.empty(0, dtype)
    return offsets, data.astype(dtype, copy=False)


def take(offsets: np.ndarray, data: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The rows ``rows`` (int array, any order, repeats allowed) as a new CSR."""
    starts = offsets[:-1][rows]
    lengths = offsets[1:][rows] - starts
    new_offsets = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum(lengths, out=new_offsets[1:])
    gather = np.repeat(starts - new_offsets[:-1], lengths) + np.arange(new_offsets[-1])
    return new_offsets, data[gather]


def merged(first: np.ndarray, rows_a: tuple[np.ndarray, np.ndarray], rows_b: tuple[np.ndarray, np.ndarray]
           ) -> tuple[np.ndarray, np.ndarray]:
    """One CSR of ``len(first)`` rows: where ``first`` (bool) is set, the next row of CSR ``rows_a``, elsewhere the
    next of ``rows_b`` (each CSR's rows in order; data of the same dtype and row shape)."""
    (offsets_a, data_a), (offsets_b, data_b) = rows_a, rows_b
    lengths = np.empty(len(first), dtype=np.int64)
    lengths[first] = np.diff(offsets_a)
    lengths[~first] = np.diff(offsets_b)
    offsets = np.zeros(len(first) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    from_a = np.repeat(first, lengths)
    data = np.empty((offsets[-1], *data_a.shape[1:]), dtype=data_a.dtype)
    data[from_a] = data_a
    data[~from_a] = data_b
    return offsets, data


def segment_softmax(scores: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """A softmax within each row: ``float64[n]``, summing to 1 over each row of the CSR ``offsets``
    (``int64[n_rows + 1]``, no row empty) over ``scores`` (``float64[n]``, natural log). ListNet's top-one
    probability (Cao et al. 2007, Eq. 1) and the n-best posteriors of the consensus feature."""
    starts = offsets[:-1]
    lengths = np.diff(offsets)
    shifted = np.exp(scores - np.repeat(np.maximum.reduceat(scores, starts), lengths))
    return shifted / np.repeat(np.add.reduceat(shifted, starts), lengths)
