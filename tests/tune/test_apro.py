import numpy as np
import pytest
from test_pro import cosine, linear_pool

from pbmt.tune.gains import gain_of, names_of
from pbmt.model.features import FeatureLayout
from pbmt.tune.apro import Apro, ranking_objective
from pbmt.tune.pool import Pool
from pbmt.tune.tuner import TuningData


def all_pairs_objective(w, features, gains, offsets, c):
    """APRO's objective and gradient by enumerating every pair of every sentence."""
    scores = features @ w
    loss, gradient = 0.0, np.zeros_like(w)
    for s in range(len(offsets) - 1):
        for i in range(offsets[s], offsets[s + 1]):
            for j in range(offsets[s], offsets[s + 1]):
                if gains[i] > gains[j]:
                    margin = 1.0 - (scores[i] - scores[j])
                    if margin > 0:
                        loss += margin ** 2
                        gradient += 2 * margin * (features[j] - features[i])
    return 0.5 * w @ w + c * loss, w + c * gradient


def random_problem(rng, integer):
    counts = rng.integers(1, 25, size=15)
    offsets = np.r_[0, np.cumsum(counts)]
    if integer:  # ties in gain, in model score and in score difference (margins of exactly 0 and 1)
        features = rng.integers(-3, 4, size=(offsets[-1], 4)).astype(np.float64)
        gains = rng.integers(0, 6, size=offsets[-1]) / 10
        w = rng.integers(-2, 3, size=4) / 2
    else:
        features = rng.normal(scale=2.0, size=(offsets[-1], 4)) + rng.normal(scale=50.0, size=(1, 4))
        gains = rng.uniform(size=offsets[-1])
        w = rng.normal(size=4)
    return w, features, gains, offsets


@pytest.mark.parametrize("integer", [False, True])
@pytest.mark.parametrize("seed", range(4))
def test_objective_and_gradient_equal_the_all_pairs_sums(seed, integer):
    w, features, gains, offsets = random_problem(np.random.default_rng(seed), integer)
    value, gradient = ranking_objective(w, features, gains, offsets, c=0.7)
    expected_value, expected_gradient = all_pairs_objective(w, features, gains, offsets, 0.7)
    assert value == pytest.approx(expected_value, rel=1e-8)
    assert np.allclose(gradient, expected_gradient, rtol=1e-8, atol=1e-8 * np.abs(expected_gradient).max())


def test_equal_gains_make_no_pair():
    features = np.random.default_rng(0).normal(size=(6, 3))
    w = np.array([0.3, -1.0, 2.0])
    value, gradient = ranking_objective(w, features, np.full(6, 0.4), np.array([0, 6]))
    assert value == pytest.approx(0.5 * w @ w)
    assert np.allclose(gradient, w)


@pytest.mark.parametrize("seed", range(3))
def test_apro_recovers_the_gold_weights_of_a_linear_pool(seed):
    pool, w_star = linear_pool(np.random.default_rng(seed))
    apro = Apro().fit(TuningData(pool=pool), np.zeros(len(w_star)), np.random.default_rng(0))
    assert cosine(apro.weights_, w_star) > 0.99
    assert pool.bleu(apro.weights_) > pool.bleu(-w_star) + 0.1


@pytest.mark.parametrize("gain", names_of("sentence"))
def test_apro_minimises_the_objective_without_randomness_and_keeps_fixed_weights(gain):
    pool, _ = linear_pool(np.random.default_rng(6), n_sent=20)
    layout = FeatureLayout(("F0", "UnknownWordPenalty0", "F2"), ("", "", ""), (2, 1, 2))
    pool = Pool(layout, pool.features, pool.stats, pool.offsets, pool.keys, pool.texts)
    start = np.array([0.5, -0.5, 1.0, 0.2, 0.1])
    rng = np.random.default_rng(1)
    state = rng.bit_generator.state
    apro = Apro(c=0.5, interpolation=0.3, gain=gain).fit(TuningData(pool=pool), start, rng)
    assert rng.bit_generator.state == state
    again = Apro(c=0.5, interpolation=0.3, gain=gain).fit(TuningData(pool=pool), start * 3, None)
    free = np.array([True, True, False, True, True])
    assert np.array_equal(apro.solution_weights_, again.solution_weights_)
    value, gradient = ranking_objective(apro.solution_weights_[free], pool.features[:, free],
                                        gain_of(gain, "sentence").score(pool.stats), pool.offsets, 0.5)
    assert value == pytest.approx(apro.objective_)
    assert np.abs(gradient).max() < 1e-4
    assert apro.solution_weights_[2] == 0.0
    assert np.allclose(apro.weights_[free], 0.3 * apro.solution_weights_[free] + 0.7 * start[free])
    assert apro.weights_[2] == 1.0
