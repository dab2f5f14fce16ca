"""Sorted runs of fixed-size records on disk, and their k-way merge in bounded memory.

A run is a file of records (a numpy structured dtype whose first field,
``key``, is a fixed-width byte string ``S{n}``) sorted by ``key``; bytewise
order of big-endian integers is their numeric order, so a key packs several
integer columns and one comparison sorts by all of them. Runs are read with
plain file reads, never memory-mapped, so a merge's resident memory is its
blocks, not the runs it has passed through.

``merge_runs`` yields the records of several runs in key order, in blocks of
about ``block_rows`` records per run that never split a group (the records
sharing the first ``group_bytes`` bytes of their key), so a caller can reduce
each block on its own. This is the external merge sort of Moses's ``extract``
and ``score`` (sorted files, merged) and of lmplz, with numpy blocks in place
of line-by-line streams.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterator, Sequence

import numpy as np

from pbmt.base.files import atomic_write

#: Fewest records read from a run in a merge round.
MIN_READ = 1024


def write_run(path: str | os.PathLike, records: np.ndarray) -> None:
    """Write ``records`` (already sorted by ``key``) as a run file, atomically."""
    with atomic_write(path, "wb") as out:
        out.write(records.tobytes())


def run_length(path: str | os.PathLike, dtype: np.dtype) -> int:
    """Number of records in the run file ``path``."""
    return os.path.getsize(path) // dtype.itemsize


def read_run(path: str | os.PathLike, dtype: np.dtype, start: int = 0, count: int = -1) -> np.ndarray:
    """Records ``start .. start + count`` of a run (``count`` -1: to the end)."""
    with open(path, "rb") as handle:
        return np.fromfile(handle, dtype=dtype, count=count, offset=start * dtype.itemsize)


def key_bytes(keys: np.ndarray, start: int, stop: int) -> np.ndarray:
    """Bytes ``start .. stop - 1`` of every key of ``keys`` (``S{n}``) as ``S{stop - start}``."""
    width = keys.dtype.itemsize
    if (start, stop) == (0, width):
        return keys
    keys = np.ascontiguousarray(keys)
    return np.ascontiguousarray(keys.view(np.uint8).reshape(-1, width)[:, start:stop]).view(f"S{stop - start}").ravel()


def group_starts(keys: np.ndarray) -> np.ndarray:
    """Indices where a new value starts in the sorted array ``keys`` (int64, first is 0)."""
    if len(keys) == 0:
        return np.zeros(0, dtype=np.int64)
    new = np.ones(len(keys), dtype=bool)
    new[1:] = keys[1:] != keys[:-1]
    return np.flatnonzero(new)


def lower_bound(path: str | os.PathLike, dtype: np.dtype, prefix: bytes) -> int:
    """The first record of the run ``path`` whose key does not start below
    ``prefix`` (bytes), by binary search with one-record reads."""
    lo, hi = 0, run_length(path, dtype)
    with open(path, "rb") as handle:
        while lo < hi:
            mid = (lo + hi) // 2
            handle.seek(mid * dtype.itemsize)
            key = np.frombuffer(handle.read(dtype.itemsize), dtype=dtype)["key"][0]
            if key[: len(prefix)].ljust(len(prefix), b"\0") < prefix:
                lo = mid + 1
            else:
                hi = mid
    return lo


def merge_runs(paths: Sequence[str | os.PathLike], dtype: np.dtype, group_bytes: int,
               block_rows: int = 1 << 18, ranges: Sequence[tuple[int, int]] | None = None) -> Iterator[np.ndarray]:
    """The records of the runs ``paths`` in key order (stable across runs in
    their given order), in blocks that each hold whole groups.

    Each round reads ``block_rows`` records shared out among the unfinished
    runs (at least ``MIN_READ`` from each); the least last-group among the
    runs that have more to come bounds the block, and every record of a lower
    group is merged and yielded. A group larger than a read is read again
    with twice the rows until it fits. ``ranges``: merge only records
    ``start .. stop - 1`` of each run.
    """
    paths = [Path(p) for p in paths]
    if ranges is None:
        ranges = [(0, run_length(p, dtype)) for p in paths]
    position = [start for start, _ in ranges]
    lengths = [stop for _, stop in ranges]
    growth = 1
    while True:
        active = [r for r in range(len(paths)) if position[r] < lengths[r]]
        if not active:
            return
        rows = max(MIN_READ, block_rows // len(active)) * growth
        chunks = {r: read_run(paths[r], dtype, position[r], min(rows, lengths[r] - position[r])) for r in active}
        prefixes = {r: key_bytes(chunk["key"], 0, group_bytes) for r, chunk in chunks.items()}
        open_ends = [prefixes[r][-1] for r in active if position[r] + len(chunks[r]) < lengths[r]]
        if open_ends:
            bound = min(open_ends)
            take = {r: int(np.searchsorted(prefixes[r], bound, side="left")) for r in active}
        else:
            take = {r: len(chunks[r]) for r in active}
        if not any(take.values()):
            growth *= 2
            continue
        growth = 1
        parts = [chunks[r][: take[r]] for r in active if take[r]]
        for r in active:
            position[r] += take[r]
        block = np.concatenate(parts) if len(parts) > 1 else parts[0]
        yield block[np.argsort(block["key"], kind="stable")] if len(parts) > 1 else block
