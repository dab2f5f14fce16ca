"""The sparse tuners' cut-off (``--sparse-min-sentences K``): a pool counts the sentences each sparse feature is
present in (against a count over the candidates one by one), and PRO, APRO and MIRA with a cut-off fit what they
fit on the pool without the rarer features, whose weights stay as they were."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse

from pbmt.commands.cli import main
from pbmt.model.features import FeatureLayout
from pbmt.model.sparse import SparseModel, SparseWeights
from pbmt.tune.apro import Apro
from pbmt.tune.mira import Mira
from pbmt.tune.pool import Pool
from pbmt.tune.pro import Pro
from pbmt.tune.tuner import TuningData

N_SENT, PER, N_SPARSE = 40, 8, 30


def _pool(seed: int) -> Pool:
    """Candidates of N_SENT sentences with 3 dense features and N_SPARSE sparse ones, feature k firing in about
    k / 2 sentences (some stored values exactly 0), BLEU statistics rising with a hidden linear score."""
    rng = np.random.default_rng(seed)
    n = N_SENT * PER
    sentence = np.repeat(np.arange(N_SENT), PER)
    values = np.zeros((n, N_SPARSE))
    for k in range(N_SPARSE):
        chosen = rng.choice(N_SENT, size=max(1, k // 2), replace=False)
        rows = np.flatnonzero(np.isin(sentence, chosen) & (rng.random(n) < 0.6))
        values[rows, k] = rng.choice([-1.0, 1.0, 2.0], len(rows))
    stored = values != 0
    stored[rng.random((n, N_SPARSE)) < 0.02] = True  # explicit zeros: stored, not present
    dense = rng.normal(size=(n, 3))
    quality = dense @ np.array([1.0, -0.5, 0.3]) + values @ rng.normal(size=N_SPARSE)
    q = (quality - quality.min()) / (quality.max() - quality.min())
    stats = np.zeros((n, 10), np.int64)
    length = rng.integers(15, 25, n)
    stats[:, 0], stats[:, 1] = length, 20
    for k in range(4):
        stats[:, 6 + k] = length - k
        stats[:, 2 + k] = np.floor(q * (length - k) * (0.9 - 0.15 * k) + rng.random(n)).astype(np.int64)
    rows, columns = np.nonzero(stored)
    csr = scipy.sparse.csr_matrix((values[rows, columns], (rows, columns)), shape=(n, N_SPARSE))
    assert csr.nnz == stored.sum()  # the explicit zeros are kept
    layout = FeatureLayout(("A", "B"), ("", ""), (1, 2))
    return Pool(layout, dense, stats, np.arange(0, n + 1, PER, dtype=np.int64), np.arange(n, dtype=np.uint64),
                ("x",) * n, csr, tuple(f"s_{k}" for k in range(N_SPARSE)))


def _counted_one_by_one(pool: Pool) -> list[int]:
    dense = pool.sparse.toarray()
    return [len({s for s in range(pool.n_sentences) for row in range(pool.offsets[s], pool.offsets[s + 1])
                 if dense[row, k] != 0}) for k in range(len(pool.sparse_names))]


def _without(pool: Pool, kept: np.ndarray) -> Pool:
    return Pool(pool.layout, pool.features, pool.stats, pool.offsets, pool.keys, pool.texts,
                pool.sparse[:, np.flatnonzero(kept)].tocsr(), tuple(np.array(pool.sparse_names)[kept]))


def test_a_pool_counts_the_sentences_each_sparse_feature_is_present_in():
    pool = _pool(1)
    counts = pool.sparse_sentence_counts()
    assert counts.dtype == np.int64 and counts.tolist() == _counted_one_by_one(pool)
    assert set(counts.tolist()) >= {1, 2, 5}
    empty = Pool(pool.layout, pool.features, pool.stats, pool.offsets, pool.keys, pool.texts)
    assert empty.sparse_sentence_counts().tolist() == []


@pytest.mark.parametrize("tuner", [
    lambda k: Mira(epochs=4, min_sentences=k),
    lambda k: Mira(epochs=4, interpolation=1.0, min_sentences=k),
    lambda k: Pro(samples=200, keep=20, l1=0.01, min_sentences=k),
    lambda k: Apro(l1=0.01, min_sentences=k),
], ids=["mira", "mira-psi1", "pro", "apro"])
def test_a_cut_off_tunes_what_the_pool_without_the_rarer_features_tunes(tuner):
    pool = _pool(2)
    rng = np.random.default_rng(3)
    start = np.concatenate([[0.5, -0.2, 0.1], rng.normal(size=N_SPARSE) * 0.01])
    kept = np.array(_counted_one_by_one(pool)) >= 4
    assert 0 < kept.sum() < N_SPARSE
    cut = tuner(4).fit(TuningData(pool=pool), start, np.random.default_rng(5))
    reference = tuner(1).fit(TuningData(pool=_without(pool, kept)), start[np.r_[[True] * 3, kept]],
                             np.random.default_rng(5))
    np.testing.assert_allclose(cut.weights_[np.r_[[True] * 3, kept]], reference.weights_, rtol=1e-9, atol=1e-12)
    np.testing.assert_array_equal(cut.weights_[3:][~kept], start[3:][~kept])  # the rarer ones keep theirs
    assert not np.allclose(cut.weights_[3:][kept], start[3:][kept])
    every = tuner(1).fit(TuningData(pool=pool), start, np.random.default_rng(5))
    assert not np.allclose(every.weights_[3:][~kept], start[3:][~kept])  # without a cut-off they move


@pytest.mark.parametrize("cls", [Mira, Pro, Apro])
@pytest.mark.parametrize("bad", [0, -1, 2.5, True])
def test_a_cut_off_is_a_whole_number_of_sentences(cls, bad):
    with pytest.raises(ValueError, match="min_sentences must be a whole number >= 1"):
        cls(min_sentences=bad)


def test_pbmt_tune_with_a_cut_off_above_every_count_tunes_the_dense_weights_alone(sparse_model_dir, tiny_dev,
                                                                                   tmp_path, capsys):
    out = tmp_path / "run"
    argv = ["tune", "-f", str(sparse_model_dir / "moses.ini"), "--tokenized", "--src", str(tiny_dev / "dev.src"),
            "--refs", str(tiny_dev / "dev.ref"), "--algorithm", "mira", "--iterations", "1", "--n-best-size", "10",
            "--keep", "last", "--mira-epochs", "3"]
    assert main([*argv, "--out", str(out), "--sparse-min-sentences", "100000"]) == 0
    start = SparseModel.read(sparse_model_dir).named_weights()
    proposed = SparseWeights.read(out / "run1.sparse-weights.txt")
    assert dict(zip(proposed.names, proposed.values.tolist())) == {
        n: v for n, v in zip(start.names, start.values.tolist()) if v != 0.0}
    capsys.readouterr()
    with pytest.raises(SystemExit) as stopped:
        main([*argv, "--out", str(tmp_path / "bad"), "--sparse-min-sentences", "0"])
    assert stopped.value.code == 2
    assert "--sparse-min-sentences" in capsys.readouterr().err
