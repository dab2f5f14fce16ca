"""The distortion-bin family: one sparse feature per bin of a block's jump, a transition family.

A block ``[start, end)`` after a block ending at ``prev_end`` (0 at the
sentence start) jumps ``start - prev_end`` source words: 0 is monotone,
positive skips words forward, negative goes back. ``Distortion0`` scores the
jump's width linearly; this family gives each bin of jumps a weight of its
own, forward and backward apart (Chiang, Knight & Wang, 2009, tune such
distortion features with MIRA), so the tuner can learn that a jump of one
word back is cheap and one of six forward is not. The sentence end scores
no jump, as ``Distortion0``.

Bins (``NAMES``, in id order): ``db_0``; forward ``db_f1``, ``db_f2``,
``db_f3``, ``db_f4-5``, ``db_f6-8``, ``db_f9+``; backward ``db_b1`` ...
``db_b9+`` alike. Values are counts (blocks of the derivation in the bin).
The searches read the family as ``jump_data(weights)``: the weights and
``JUMP_BINS`` (int64[2 * MAX_JUMP + 1]: the bin of jump ``d`` at
``min(max(d, -MAX_JUMP), MAX_JUMP) + MAX_JUMP``), the sentence data of its
transition kernel (``pbmt.model._transition_kernels.jump_bin_transition``).
"""

from __future__ import annotations

from typing import Iterable

import numpy as np

from pbmt.model._transition_kernels import JumpBinData

PREFIX = "db_"
# the least width of each bin after the first, in words: 1, 2, 3, 4-5, 6-8, 9 and more
EDGES = (1, 2, 3, 4, 6, 9)
MAX_JUMP = EDGES[-1]


def _width_name(k: int) -> str:
    low, high = EDGES[k], EDGES[k + 1] - 1 if k + 1 < len(EDGES) else None
    return f"{low}+" if high is None else (str(low) if high == low else f"{low}-{high}")


NAMES = (f"{PREFIX}0", *(f"{PREFIX}f{_width_name(k)}" for k in range(len(EDGES))),
         *(f"{PREFIX}b{_width_name(k)}" for k in range(len(EDGES))))
SIZE = len(NAMES)


def jump_bin(jump: int) -> int:
    """The id of the bin of a jump of ``jump`` source words (``NAMES[id]``)."""
    if jump == 0:
        return 0
    width = abs(jump)
    k = max(i for i, edge in enumerate(EDGES) if width >= edge)
    return 1 + k + (len(EDGES) if jump < 0 else 0)


JUMP_BINS = np.array([jump_bin(d) for d in range(-MAX_JUMP, MAX_JUMP + 1)], dtype=np.int64)


def jump_counts(spans: Iterable[tuple[int, int]]) -> np.ndarray:
    """float64[SIZE]: the bins of the jumps of blocks with source ``spans`` ((start, end), in target order), from
    scratch: the reference of the searches' incremental scores."""
    counts = np.zeros(SIZE)
    prev_end = 0
    for start, end in spans:
        counts[jump_bin(int(start) - prev_end)] += 1
        prev_end = int(end)
    return counts


def jump_data(weights: np.ndarray) -> JumpBinData:
    """The family's sentence data for the searches' kernels: its weights (float64[SIZE]) and ``JUMP_BINS``."""
    return JumpBinData(weights, JUMP_BINS)
