"""eflomal wrapper: both directions come back as pbmt alignments with eflomal's
one-link-per-word property, and a corpus of word-for-word translations is
aligned on the diagonal."""

import numpy as np
import pytest

from pbmt.base.errors import PbmtError
from pbmt.train.corpus import corpus_from_lines

pytest.importorskip("eflomal")

from pbmt.train.align import eflomal_align  # noqa: E402


def test_word_for_word_corpus_is_aligned_on_the_diagonal():
    rng = np.random.default_rng(0)
    srcs, tgts = [], []
    for _ in range(300):
        words = rng.integers(30, size=int(rng.integers(2, 9)))
        srcs.append([f"s{w}" for w in words])
        tgts.append([f"t{w}" for w in words])
    srcs.append([])  # an empty sentence pair comes through empty
    tgts.append([])
    fwd, rev = eflomal_align(corpus_from_lines(srcs), corpus_from_lines(tgts))
    assert len(fwd) == len(rev) == len(srcs)
    assert fwd.points(len(srcs) - 1) == rev.points(len(srcs) - 1) == []
    for s in range(len(srcs)):
        targets = [j for _, j in fwd.points(s)]
        sources = [i for i, _ in rev.points(s)]
        assert len(targets) == len(set(targets))  # fwd: at most one link per target word
        assert len(sources) == len(set(sources))  # rev: at most one link per source word
    links = [p for a in (fwd, rev) for s in range(len(srcs)) for p in a.points(s)]
    assert np.mean([i == j for i, j in links]) > 0.95


def test_sentence_counts_must_agree():
    with pytest.raises(PbmtError, match="sentences"):
        eflomal_align(corpus_from_lines([["a"]]), corpus_from_lines([["x"], ["y"]]))
