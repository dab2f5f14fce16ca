"""Symmetrisation: line for line equal to Moses's symal on the shared corpus,
and equal to a plain set-based reference on random small alignments."""

import numpy as np
import pytest

from pbmt.base.errors import PbmtError
from pbmt.train.corpus import alignment_from_points, read_alignment, read_corpus
from pbmt.train.symmetrize import METHODS, symmetrize


def test_grow_diag_final_and_equals_symal_on_every_line(bible):
    src = read_corpus(bible / "train.tok.es")
    tgt = read_corpus(bible / "train.tok.en")
    fwd = read_alignment(bible / "train.align.fwd", src, tgt)
    rev = read_alignment(bible / "train.align.rev", src, tgt)
    expected = read_alignment(bible / "train.align.gdfa", src, tgt)
    got = symmetrize(fwd, rev, src.lengths, tgt.lengths, "grow-diag-final-and")
    assert len(got) == len(expected) == 28169
    # same points in the same order (symal prints by target, then source)
    np.testing.assert_array_equal(got.offsets, expected.offsets)
    np.testing.assert_array_equal(got.src, expected.src)
    np.testing.assert_array_equal(got.tgt, expected.tgt)


def _reference(fwd, rev, m, n, method):
    """symal's algorithm on Python sets: points are (target, source) pairs, and a
    scan moves to the smallest current point above the last one visited, so
    points added ahead of the scan are visited in the same scan."""
    union_only, grow, diagonal, final, final_and = METHODS[method]
    fwd = {(j, i) for i, j in fwd}
    rev = {(j, i) for i, j in rev}
    union = fwd | rev
    if union_only:
        return sorted(union)
    current = fwd & rev
    tcov = {t for t, _ in current}
    scov = {s for _, s in current}
    steps = [(-1, 0), (0, -1), (1, 0), (0, 1)] + ([(-1, -1), (-1, 1), (1, -1), (1, 1)] if diagonal else [])
    added = grow
    while added:
        added = False
        last = (-1, -1)
        while True:
            later = [p for p in current if p > last]
            if not later:
                break
            last = min(later)
            for dt, ds in steps:
                t, s = last[0] + dt, last[1] + ds
                if (t, s) in union and not (t in tcov and s in scov):
                    current.add((t, s))
                    tcov.add(t)
                    scov.add(s)
                    added = True
    if final:
        for only in (fwd - rev, rev - fwd):
            for t, s in sorted(only):
                if (t, s) in current:
                    continue
                ok = (t not in tcov and s not in scov) if final_and else not (t in tcov and s in scov)
                if ok:
                    current.add((t, s))
                    tcov.add(t)
                    scov.add(s)
    return sorted(current)


@pytest.mark.parametrize("method", sorted(METHODS))
def test_random_alignments_match_the_set_reference(method):
    rng = np.random.default_rng(7)
    fwds, revs, lengths = [], [], []
    for _ in range(300):
        m, n = rng.integers(1, 9, size=2)
        # fwd: each target word to at most one source word; rev: the converse
        fwds.append([(int(rng.integers(m)), j) for j in range(n) if rng.random() < 0.8])
        revs.append([(i, int(rng.integers(n))) for i in range(m) if rng.random() < 0.8])
        lengths.append((m, n))
    src_len = np.array([m for m, _ in lengths])
    tgt_len = np.array([n for _, n in lengths])
    got = symmetrize(alignment_from_points(fwds), alignment_from_points(revs), src_len, tgt_len, method)
    for s, (m, n) in enumerate(lengths):
        expected = [(src, t) for t, src in _reference(fwds[s], revs[s], m, n, method)]
        assert got.points(s) == expected, (s, fwds[s], revs[s])


def test_point_outside_the_sentence_is_an_error():
    a = alignment_from_points([[(0, 0), (3, 1)]])
    with pytest.raises(PbmtError, match="sentence 1 has a point outside"):
        symmetrize(a, a, np.array([2]), np.array([2]))
    with pytest.raises(PbmtError, match="unknown symmetrisation"):
        symmetrize(a, a, np.array([4]), np.array([2]), "diag")
