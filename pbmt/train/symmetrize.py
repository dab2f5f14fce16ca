"""Symmetrisation of two directed word alignments, as Moses's ``symal`` does it.

``fwd`` links each target word to at most one source word and ``rev`` each
source word to at most one target word (any points are accepted, though).
grow-diag-final-and (Koehn et al. 2003; Koehn's "Statistical Machine
Translation" §4.5.3) starts from their intersection and:

1. grow-diag: repeatedly scans the current points in (target, source) order
   and adds each union point among a point's neighbours (left, above, right,
   below, then the four diagonals) that covers a word not yet covered. Points
   added during a scan are visited in the same scan when they come after the
   scan position, else in the next scan; scans repeat until none adds a point.
2. final-and: adds the union points found only in ``fwd``, then those found
   only in ``rev``, each in (target, source) order, whose source word and
   target word are both still uncovered.

The order matters for the result; it is symal's (verified line for line on
the shared Bible corpus in tests/train/test_symmetrize.py).
"""

from __future__ import annotations

import numpy as np

from pbmt.base.errors import PbmtError
from pbmt.train._symmetrize_kernels import symmetrize_kernel
from pbmt.train.corpus import Alignment

# method -> (union, grow, diagonal, final, final_and)
METHODS = {
    "intersect": (False, False, False, False, False),
    "union": (True, False, False, False, False),
    "grow": (False, True, False, False, False),
    "grow-diag": (False, True, True, False, False),
    "grow-final": (False, True, False, True, False),
    "grow-final-and": (False, True, False, True, True),
    "grow-diag-final": (False, True, True, True, False),
    "grow-diag-final-and": (False, True, True, True, True),
}


def symmetrize(
    fwd: Alignment,
    rev: Alignment,
    src_lengths: np.ndarray,
    tgt_lengths: np.ndarray,
    method: str = "grow-diag-final-and",
) -> Alignment:
    """Symmetrise ``fwd`` and ``rev`` (same sentences) with ``method`` (a key of METHODS).

    ``src_lengths``/``tgt_lengths``: sentence lengths in words, ``int[n]``;
    every point must lie inside its sentence pair. Each sentence's points come
    out sorted by target position, then source position (symal's order).
    """
    if method not in METHODS:
        raise PbmtError(f"unknown symmetrisation {method!r}; choose one of {', '.join(METHODS)}")
    src_lengths = np.asarray(src_lengths, dtype=np.int64)
    tgt_lengths = np.asarray(tgt_lengths, dtype=np.int64)
    fwd.check(src_lengths, tgt_lengths, "symmetrize (fwd)")
    rev.check(src_lengths, tgt_lengths, "symmetrize (rev)")
    src, tgt, offsets = symmetrize_kernel(
        fwd.src, fwd.tgt, fwd.offsets, rev.src, rev.tgt, rev.offsets, src_lengths, tgt_lengths, *METHODS[method]
    )
    return Alignment(src=src, tgt=tgt, offsets=offsets)
