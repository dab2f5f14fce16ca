"""Batch MIRA: the kernel against a plain-Python kbmira, sparse rows as dense ones, recovery of a known ranking,
the tuning loop, ``pbmt optimize``, and Moses's kbmira on the shared dev 100-best pool."""

from __future__ import annotations

import gzip
import itertools
import math
import subprocess

import numpy as np
import pytest
import scipy.sparse

from pbmt.commands.cli import main
from pbmt.base.config import MosesConfig
from pbmt.model.features import FeatureLayout
from pbmt.tune._mira_kernels import background_bleu
from pbmt.tune.mira import Mira
from pbmt.tune.pool import Pool, References, read_pool
from pbmt.tune.tuner import TuningData

def _pool(rng, n_sent=30, per=12, size=5, features=None):
    """A pool whose candidates' BLEU statistics rise with ``features @ w_star``; returns (pool, w_star)."""
    n = n_sent * per
    w_star = np.array([1.0, -0.5, 0.3, 0.8, -1.2])[:size]
    x = rng.normal(size=(n, size)) if features is None else features
    quality = x @ w_star
    q = (quality - quality.min()) / (quality.max() - quality.min())
    stats = np.zeros((n, 10), np.int64)
    length = rng.integers(15, 25, n)
    stats[:, 0] = length
    stats[:, 1] = 20
    for k in range(4):
        stats[:, 6 + k] = length - k
        stats[:, 2 + k] = np.floor(q * (length - k) * (0.9 - 0.15 * k) + rng.random(n)).astype(np.int64)
    layout = FeatureLayout(("A", "B"), ("", ""), (1, size - 1))
    offsets = np.arange(0, n + 1, per, dtype=np.int64)
    return Pool(layout, x, stats, offsets, np.arange(n, dtype=np.uint64), ("x",) * n), w_star


def _plain_kbmira(pool, initial, orders, c=0.01, decay=0.999):
    """Batch MIRA as kbmira runs it, in plain Python over dense features: (averaged weights per epoch)."""
    x, stats = pool.features, pool.stats.astype(float)
    w, total, count = initial.copy(), initial.copy(), 0
    background = np.ones(10)

    def bleu(row):
        s = row + background
        log_bleu = sum(math.log(s[2 + n]) - math.log(s[6 + n]) for n in range(4)) / 4
        log_bleu += min(0.0, 1 - s[1] / s[6])
        return math.exp(log_bleu) * s[1]

    out = []
    for order in orders:
        for s in order:
            rows = range(pool.offsets[s], pool.offsets[s + 1])
            b = {i: bleu(stats[i]) for i in rows}
            hope = max(rows, key=lambda i: (x[i] @ w + b[i], -i))
            fear = max(rows, key=lambda i: (x[i] @ w - b[i], -i))
            if hope == fear or not b[hope] > b[fear]:
                continue
            diff = x[hope] - x[fear]
            loss = b[hope] - b[fear] - w @ diff
            if loss > 0:
                w = w + min(c, loss / (diff @ diff)) * diff
                total, count = total + w, count + 1
            background = decay * background + stats[hope]
        out.append(total / count if count else w.copy())
    return out


def test_background_bleu_is_chiangs_pseudo_document_bleu_in_reference_words():
    stats = np.array([10, 12, 8, 5, 3, 1, 10, 9, 8, 7], float)
    background = np.ones(10)
    s = stats + background
    precisions = [s[2 + n] / s[6 + n] for n in range(4)]
    expected = math.exp(sum(map(math.log, precisions)) / 4 + min(0.0, 1 - s[1] / s[6])) * s[1]
    assert background_bleu(stats, background) == pytest.approx(expected, rel=1e-12)
    longer = stats.copy()
    longer[6] = 20  # longer than the reference: no brevity penalty
    assert background_bleu(longer, background) < background_bleu(stats, background) * 2


def test_the_kernel_is_kbmira_in_plain_python():
    rng = np.random.default_rng(4)
    pool, _ = _pool(rng)
    initial = rng.normal(size=5) * 0.1
    mira = Mira(epochs=3, interpolation=1.0).fit(TuningData(pool=pool), initial, np.random.default_rng(7))
    draws = np.random.default_rng(7)
    orders = [draws.permutation(pool.n_sentences) for _ in range(3)]
    plain = _plain_kbmira(pool, initial, orders)
    best = max(range(3), key=lambda e: (pool.bleu(plain[e]), -e))
    np.testing.assert_allclose(mira.weights_, plain[best], rtol=1e-9, atol=1e-12)
    assert mira.kept_epoch_ == best + 1
    assert [h[2] for h in mira.history_] == pytest.approx([pool.bleu(w) for w in plain], abs=1e-12)


def test_sparse_features_train_as_the_dense_ones():
    rng = np.random.default_rng(5)
    pool, _ = _pool(rng)
    sparse = scipy.sparse.csr_matrix(np.where(np.abs(pool.features) < 0.5, 0.0, pool.features))
    dense_pool = Pool(pool.layout, sparse.toarray(), pool.stats, pool.offsets, pool.keys, pool.texts)
    sparse_pool = Pool(pool.layout, sparse, pool.stats, pool.offsets, pool.keys, pool.texts)
    dense = Mira(epochs=4).fit(TuningData(pool=dense_pool), np.zeros(5), np.random.default_rng(1))
    csr = Mira(epochs=4, fixed=()).fit(TuningData(pool=sparse_pool), np.zeros(5), np.random.default_rng(1))
    np.testing.assert_allclose(csr.weights_, dense.weights_, rtol=1e-12, atol=1e-15)


def test_the_pools_sparse_columns_are_tuned_as_dense_ones_when_the_weights_cover_them():
    """A pool's sparse columns (``Pool.sparse``) tuned beside the dense ones give the weights of the same columns
    held densely (MIRA's answer, Psi = 1: a step part of the way measures the dense weights alone, below);
    dense initial weights alone leave the sparse columns out."""
    rng = np.random.default_rng(9)
    pool, _ = _pool(rng)
    values = np.where(np.abs(pool.features) < 0.5, 0.0, pool.features)
    layout = FeatureLayout(("A",), ("",), (2,))
    split = Pool(layout, values[:, :2], pool.stats, pool.offsets, pool.keys, pool.texts,
                 scipy.sparse.csr_matrix(values[:, 2:]), ("s_1", "s_2", "s_3"))
    whole = Pool(pool.layout, values, pool.stats, pool.offsets, pool.keys, pool.texts)
    start = np.array([0.1, 0.0, 0.0, 0.2, 0.0])
    both = Mira(epochs=4, interpolation=1.0).fit(TuningData(pool=split), start, np.random.default_rng(1))
    dense = Mira(epochs=4, interpolation=1.0).fit(TuningData(pool=whole), start, np.random.default_rng(1))
    np.testing.assert_allclose(both.weights_, dense.weights_, rtol=1e-12, atol=1e-15)
    assert np.count_nonzero(both.weights_[2:]) == 3
    alone = Mira(epochs=4).fit(TuningData(pool=split), start[:2], np.random.default_rng(1))
    assert alone.weights_.shape == (2,)


def test_mira_recovers_the_ranking_weights_and_keeps_fixed_ones():
    rng = np.random.default_rng(6)
    pool, w_star = _pool(rng, n_sent=80, per=20)
    start = np.array([0.0, 0.0, 0.0, 0.0, 0.7])
    mira = Mira(epochs=20, interpolation=1.0, fixed=("A",)).fit(TuningData(pool=pool), start,
                                                                  np.random.default_rng(2))
    assert mira.weights_[0] == 0.0  # A is fixed
    assert mira.score_ > pool.bleu(start) + 0.05
    direction = mira.weights_[1:] / np.linalg.norm(mira.weights_[1:])
    assert direction @ (w_star[1:] / np.linalg.norm(w_star[1:])) > 0.9


def test_interpolation_steps_part_of_the_way_by_direction_at_the_starting_weights_scale():
    pool, _ = _pool(np.random.default_rng(10))
    start = np.array([0.5, 0.2, -0.3, 0.1, 0.4])
    whole = Mira(epochs=3, interpolation=1.0, fixed=()).fit(TuningData(pool=pool), start, np.random.default_rng(2))
    part = Mira(epochs=3, interpolation=0.3, fixed=()).fit(TuningData(pool=pool), start, np.random.default_rng(2))
    direction = 0.3 * whole.weights_ / np.abs(whole.weights_).sum() + 0.7 * start / np.abs(start).sum()
    np.testing.assert_allclose(part.weights_, np.abs(start).sum() * direction, rtol=1e-12)
    assert not np.allclose(part.weights_, whole.weights_)
    assert part.score_ == pytest.approx(pool.bleu(part.weights_), abs=1e-12)
    # from zero weights there is no direction to keep: MIRA's answer whole
    zero = Mira(epochs=3, interpolation=0.3, fixed=()).fit(TuningData(pool=pool), np.zeros(5),
                                                           np.random.default_rng(2))
    np.testing.assert_array_equal(zero.weights_, Mira(epochs=3, interpolation=1.0, fixed=()).fit(
        TuningData(pool=pool), np.zeros(5), np.random.default_rng(2)).weights_)


def test_mira_is_deterministic_given_the_generator_and_checks_its_settings():
    pool, _ = _pool(np.random.default_rng(8))
    first = Mira(epochs=2).fit(TuningData(pool=pool), np.zeros(5), np.random.default_rng(3))
    again = Mira(epochs=2).fit(TuningData(pool=pool), np.zeros(5), np.random.default_rng(3))
    assert np.array_equal(first.weights_, again.weights_) and first.history_ == again.history_
    for bad in ({"c": 0}, {"epochs": 0}, {"decay": 1.5}, {"background": "fear"}, {"interpolation": 1.5}):
        with pytest.raises(ValueError):
            Mira(**bad)


def test_pbmt_tune_runs_mira(tiny_model_dir, tiny_dev, tmp_path):
    assert main(["tune", "-q", "-f", str(tiny_model_dir / "moses.ini"), "--tokenized", "--src",
                 str(tiny_dev / "dev.src"), "--refs", str(tiny_dev / "dev.ref"), "--out", str(tmp_path / "run"),
                 "--algorithm", "mira", "--iterations", "2", "--n-best-size", "10", "--mira-epochs", "5"]) == 0
    log = (tmp_path / "run" / "log.tsv").read_text().splitlines()
    assert (tmp_path / "run" / "moses.ini").exists() and len(log) == 3  # the header and two iterations


SENTENCES = 300  # of the shared dev list: a third of its 1,031 keeps the test to seconds (the benchmark takes all)


@pytest.fixture(scope="module")
def dev_nbest(bible, tmp_path_factory):
    """A folder with the first ``SENTENCES`` of the shared dev 100-best list (``nbest``) and their ``refs``."""
    folder = tmp_path_factory.mktemp("dev-nbest")
    with gzip.open(bible / "model" / "dev.moses.nbest100.gz", "rt", encoding="utf-8") as source:
        lines = list(itertools.takewhile(lambda line: int(line.split(" ||| ", 1)[0]) < SENTENCES, source))
    (folder / "nbest").write_text("".join(lines), encoding="utf-8")
    references = (bible / "dev.tok.en").read_text(encoding="utf-8").splitlines()[:SENTENCES]
    (folder / "refs").write_text("\n".join(references) + "\n", encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def kbmira_pool(bible, dev_nbest):
    """Moses's binaries, the folder of ``dev_nbest`` with the feature and score files Moses's extractor writes
    from it for kbmira, and pbmt's pool of the same list."""
    moses = bible.parent.parent / "tools" / "moses" / "bin"
    if not (moses / "kbmira").exists() or not (moses / "extractor").exists():
        pytest.skip(f"Moses's kbmira and extractor not found in {moses}")
    subprocess.run([moses / "extractor", "--sctype", "BLEU", "-r", dev_nbest / "refs", "-n", dev_nbest / "nbest",
                    "-S", dev_nbest / "scores.dat", "-F", dev_nbest / "features.dat"], check=True,
                   capture_output=True)
    references = (dev_nbest / "refs").read_text(encoding="utf-8").splitlines()
    return moses, dev_nbest, read_pool(dev_nbest / "nbest", References(references))


def test_pbmt_optimize_runs_mira(dev_nbest, tmp_path, capsys):
    out = tmp_path / "weights.ini"
    assert main(["optimize", "--algorithm", "mira", "--mira-epochs", "3", "--n-best", str(dev_nbest / "nbest"),
                 "--refs", str(dev_nbest / "refs"), "-o", str(out)]) == 0
    assert out.read_text().startswith("[weight]") and "of mira" in capsys.readouterr().err


def test_mira_reaches_kbmiras_pool_bleu_on_the_shared_dev_pool(kbmira_pool, bible):
    """Both from the untuned weights, at kbmira's defaults: pbmt's pool BLEU at least kbmira's less 0.2, and
    within 0.5 of it.

    Why not closer, and why pbmt's tends to be the higher: kbmira trains on, and keeps the pass best on, part
    of the pool only. Its dedup (``HypPackEnumerator``) compares a feature vector with itself, so any
    hypothesis hashed into a bucket that already holds one is taken for a duplicate and dropped (on dev
    sentence 1 it picks as fear a hypothesis that another one of the list, of equal BLEU and higher model
    score, outranks: that one was dropped). Its order of sentences also comes from its
    own generator. On all of dev (``benchmarks/bench_mira.py``) the two agree within 0.2."""
    moses, folder, pool = kbmira_pool
    start = pool.layout.weights(MosesConfig.read(bible / "model" / "moses.ini"))
    (folder / "init.opt").write_text(" ".join(format(w, ".9g") for w in start) + "\n")
    subprocess.run([moses / "kbmira", "-d", folder / "init.opt", "-S", folder / "scores.dat", "-F",
                    folder / "features.dat", "-r", "1", "-o", folder / "kbmira.out"], check=True, capture_output=True)
    kbmira = np.array([float(line.split()[1]) for line in (folder / "kbmira.out").read_text().splitlines()])
    mira = Mira(interpolation=1.0).fit(TuningData(pool=pool), start, np.random.default_rng(1))
    theirs, ours = 100 * pool.bleu(kbmira), 100 * mira.score_
    assert theirs > 100 * pool.bleu(start) and ours > 100 * pool.bleu(start)
    assert ours > theirs - 0.2 and abs(ours - theirs) < 0.5, (ours, theirs)


def test_a_step_part_of_the_way_is_measured_by_the_dense_weights():
    """Thousands of sparse indicators take most of the L1 norm of MIRA's answer; Psi's step measures both ends by
    their dense weights' norm, so the dense weights turn towards the answer's (not only shrink by 1 - Psi) and the
    sparse ones come at Psi of the answer's scale; without sparse columns it is the step by every weight."""
    rng = np.random.default_rng(12)
    pool, _ = _pool(rng)
    n, n_sparse = pool.n_candidates, 3000
    rows, columns = rng.integers(0, n, 4 * n_sparse), np.repeat(np.arange(n_sparse), 4)
    indicators = scipy.sparse.csr_matrix((np.ones(len(rows)), (rows, columns)), shape=(n, n_sparse))
    split = Pool(pool.layout, pool.features, pool.stats, pool.offsets, pool.keys, pool.texts, indicators,
                 tuple(f"s_{k}" for k in range(n_sparse)))
    start = np.concatenate([[0.0, -1.0, 0.2, 0.3, 0.5], np.zeros(n_sparse)])
    answer = Mira(epochs=4, interpolation=1.0, fixed=()).fit(TuningData(pool=split), start,
                                                             np.random.default_rng(3)).weights_
    step = Mira(epochs=4, interpolation=0.3, fixed=()).fit(TuningData(pool=split), start,
                                                           np.random.default_rng(3)).weights_
    dense_norm, sparse_norm = np.abs(answer[:5]).sum(), np.abs(answer[5:]).sum()
    assert sparse_norm > 3 * dense_norm
    norm = np.abs(start[:5]).sum()
    np.testing.assert_allclose(step, norm * (0.3 * answer / dense_norm + 0.7 * start / norm), rtol=1e-12, atol=1e-15)
    turned = step[:5] / np.linalg.norm(step[:5]) @ (start[:5] / np.linalg.norm(start[:5]))
    assert turned < 0.99
    by_all = norm * (0.3 * answer / (dense_norm + sparse_norm) + 0.7 * start / norm)  # the step it is not
    assert by_all[:5] / np.linalg.norm(by_all[:5]) @ (start[:5] / np.linalg.norm(start[:5])) > 0.999
    dense_only = Mira(epochs=4, fixed=()).fit(TuningData(pool=pool), start[:5], np.random.default_rng(3)).weights_
    whole = Mira(epochs=4, interpolation=1.0, fixed=()).fit(TuningData(pool=pool), start[:5],
                                                            np.random.default_rng(3)).weights_
    np.testing.assert_allclose(dense_only, norm * (0.3 * whole / np.abs(whole).sum() + 0.7 * start[:5] / norm),
                               rtol=1e-12)
