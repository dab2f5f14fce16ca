"""PRO and APRO over thousands of sparse features: Hopkins & May's synthetic experiment (§3, Fig. 3) at 10,000
features, most of them irrelevant; the L1 penalty on sparse weights recovers the relevant ones."""

import numpy as np
import pytest
from scipy import sparse

from pbmt.tune.apro import Apro
from pbmt.tune.pro import Pro
from pbmt.tune.regularisation import minimize_l1

N_FEATURES, RELEVANT = 10_000, 100


@pytest.fixture(scope="module")
def synthetic():
    """300 "sentences" of 50 candidates; each candidate fires 60 of the 10,000 features (values uniform in [0, 1],
    every feature equally often); the gold gain is a linear function of 100 of them (the paper's G = H_w*), scaled
    to [0, 1] so that PRO's alpha = 0.05 keeps its meaning."""
    rng = np.random.default_rng(0)
    gold = np.zeros(N_FEATURES)
    relevant = rng.choice(N_FEATURES, RELEVANT, replace=False)
    gold[relevant] = rng.choice([-1.0, 1.0], RELEVANT) * rng.uniform(0.5, 1.5, RELEVANT)
    n, active = 300 * 50, 60
    columns = np.concatenate([rng.choice(N_FEATURES, active, replace=False) for _ in range(n)])
    x = sparse.csr_matrix((rng.uniform(0, 1, n * active), columns, np.arange(0, n * active + 1, active)),
                          shape=(n, N_FEATURES))
    gains = x @ gold
    gains = (gains - gains.min()) / (gains.max() - gains.min())
    return x, gains, np.arange(0, n + 1, 50), gold


def _fit(optimiser, synthetic):
    x, gains, offsets, _ = synthetic
    everything = np.ones(N_FEATURES, dtype=bool)
    args = (x, gains, offsets, np.zeros(N_FEATURES), everything, everything)
    return (optimiser.fit_gains(*args, np.random.default_rng(1)) if isinstance(optimiser, Pro)
            else optimiser.fit_gains(*args)).weights_


def _cosine(a, b):
    return float(a @ b / np.linalg.norm(a) / np.linalg.norm(b))


def test_sparse_pro_recovers_the_relevant_features(synthetic):
    gold = synthetic[3]
    relevant = gold != 0
    weights = _fit(Pro(interpolation=1.0), synthetic)  # the default l1 = 1
    assert _cosine(weights, gold) > 0.95
    assert np.sum(np.sign(weights[relevant]) == np.sign(gold[relevant])) >= 95
    assert np.count_nonzero(weights[~relevant]) < 0.05 * (~relevant).sum()  # exact zeros, not small values
    assert len(set(np.argsort(-np.abs(weights))[:RELEVANT]) & set(np.flatnonzero(relevant))) >= 95
    # why the L1 penalty: with the L2 one alone every feature that fired in a pair gets a weight, and the
    # weight vector points further from the gold one
    l2_only = _fit(Pro(interpolation=1.0, l1=0.0), synthetic)
    assert np.count_nonzero(l2_only[~relevant]) > 0.9 * (~relevant).sum()
    assert _cosine(l2_only, gold) < _cosine(weights, gold) - 0.1


def test_sparse_apro_ranks_the_relevant_features_first(synthetic):
    gold = synthetic[3]
    relevant = gold != 0
    weights = _fit(Apro(), synthetic)
    assert _cosine(weights, gold) > 0.95
    assert np.all(np.sign(weights[relevant]) == np.sign(gold[relevant]))
    assert np.abs(weights[~relevant]).max() < np.abs(weights[relevant]).min()


def test_minimize_l1_equals_the_soft_threshold_of_a_separable_quadratic():
    """f(w) = 1/2 ||w - c||^2 + l1 |w|_1 has the closed form sign(c) max(|c| - l1, 0) (the lasso's soft threshold)."""
    c = np.array([3.0, -0.5, 0.2, -2.0, 1.0])
    penalised = np.array([True, True, True, True, False])
    result = minimize_l1(lambda w: (0.5 * (w - c) @ (w - c), w - c), len(c), penalised, 1.0)
    expected = np.where(penalised, np.sign(c) * np.maximum(np.abs(c) - 1.0, 0.0), c)
    np.testing.assert_allclose(result.x, expected, atol=1e-8)
    assert result.x[1] == 0.0 and result.x[2] == 0.0
