"""ListNet: gradient against finite differences, normalisation, learning a synthetic ranking."""

import numpy as np
import pytest

from pbmt.metrics.bleu import sentence_bleu_plus1
from pbmt.model.features import FeatureLayout
from pbmt.base.csr import segment_softmax
from pbmt.tune.listnet import FeatureScaling, ListNet, distinct_candidates, loss_and_gradient, reference_scores
from pbmt.tune.registry import POOL_TUNERS
from pbmt.tune.pool import Pool
from pbmt.tune.tuner import TuningData


def _lists(rng, n_lists=4, n_features=5):
    lengths = rng.integers(1, 12, size=n_lists)
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    features = rng.normal(size=(offsets[-1], n_features)) * rng.uniform(0.5, 3, size=n_features)
    target = segment_softmax(rng.uniform(0, 60, size=offsets[-1]), offsets)
    return features, offsets, target


def _brute_loss(features, offsets, target, weights, score_range):
    """Eq. 2 list by list, with plain Python loops."""
    total = 0.0
    for s in range(len(offsets) - 1):
        z = features[offsets[s]:offsets[s + 1]] @ weights
        if score_range is not None and np.abs(z).max() > 0:
            z = score_range * z / np.abs(z).max()
        log_p = z - np.log(np.exp(z).sum())
        total -= (target[offsets[s]:offsets[s + 1]] * log_p).sum()
    return total


@pytest.mark.parametrize("score_range", [None, 10.0])
def test_gradient_equals_numerical_gradient(score_range):
    rng = np.random.default_rng(3)
    features, offsets, target = _lists(rng)
    weights = rng.normal(size=features.shape[1])
    loss, gradient = loss_and_gradient(features, offsets, target, weights, score_range)
    assert loss == pytest.approx(_brute_loss(features, offsets, target, weights, score_range), rel=1e-12)
    step = 1e-6
    numerical = [(_brute_loss(features, offsets, target, weights + e, score_range)
                  - _brute_loss(features, offsets, target, weights - e, score_range)) / (2 * step)
                 for e in np.eye(len(weights)) * step]
    np.testing.assert_allclose(gradient, numerical, rtol=1e-6, atol=1e-7)


def test_top_one_is_a_softmax_per_list():
    scores = np.array([1.0, 2.0, 3.0, 1000.0, 1000.0, -5.0])
    probs = segment_softmax(scores, np.array([0, 3, 5, 6]))
    np.testing.assert_allclose(probs[:3], np.exp([1, 2, 3]) / np.exp([1, 2, 3]).sum())
    np.testing.assert_allclose(probs[3:], [0.5, 0.5, 1.0])


def test_feature_normalisation_maps_dev_to_unit_range_and_test_alike():
    rng = np.random.default_rng(0)
    dev = rng.normal(-50, 20, size=(300, 4))
    dev[:, 3] = 7.0
    scaling = FeatureScaling.fit(dev)
    scaled = scaling.transform(dev)
    assert np.array_equal(scaled[:, :3].min(axis=0), [-1.0, -1.0, -1.0])
    assert np.array_equal(scaled[:, :3].max(axis=0), [1.0, 1.0, 1.0])
    assert np.all(scaled[:, 3] == 0.0)
    test = rng.normal(-50, 30, size=(50, 4))
    m, big = dev.min(axis=0)[:3], dev.max(axis=0)[:3]
    np.testing.assert_allclose(scaling.transform(test)[:, :3], (2 * test[:, :3] - (big + m)) / (big - m))
    # raw-space weights rank exactly as scaled weights on scaled features: scores differ by a constant
    scaled_weights = rng.normal(size=4)
    difference = scaling.transform(test) @ scaled_weights - test @ scaling.raw_weights(scaled_weights)
    np.testing.assert_allclose(difference, difference[0])
    np.testing.assert_allclose(scaling.scaled_weights(scaling.raw_weights(scaled_weights))[:3], scaled_weights[:3])


def _synthetic_pool(rng, n_sent=150, n_cand=20, n_features=5):
    """A pool whose BLEU+1 order is the order of ``features @ truth``: quality q in [0, 1] fixes
    the matches of a 20-word hypothesis against a 20-word reference."""
    truth = rng.normal(size=n_features)
    features = rng.normal(size=(n_sent * n_cand, n_features)) * [1, 10, 0.1, 5, 2][:n_features]
    gold = features @ (truth / [1, 10, 0.1, 5, 2][:n_features])
    offsets = np.arange(n_sent + 1, dtype=np.int64) * n_cand
    quality = np.empty_like(gold)
    for s in range(n_sent):
        block = gold[offsets[s]:offsets[s + 1]]
        quality[offsets[s]:offsets[s + 1]] = np.argsort(np.argsort(block)) / (n_cand - 1)
    stats = np.zeros((len(gold), 10), dtype=np.int64)
    stats[:, 0] = stats[:, 1] = 20
    for n in range(4):
        stats[:, 2 + n] = np.round(2 + quality * (18 - 2 * n))
        stats[:, 6 + n] = 20 - n
    layout = FeatureLayout(tuple(f"F{i}" for i in range(n_features)), ("",) * n_features, (1,) * n_features)
    pool = Pool(layout, features, stats, offsets, np.arange(len(gold), dtype=np.uint64),
                tuple(str(i) for i in range(len(gold))))
    bleu1 = sentence_bleu_plus1(stats)
    assert all(np.argmax(bleu1[offsets[s]:offsets[s + 1]]) == np.argmax(gold[offsets[s]:offsets[s + 1]])
               for s in range(n_sent))
    return pool


def _top1_accuracy(pool, weights):
    reference = reference_scores(pool.stats)
    best = pool.best(weights)
    top = np.array([pool.offsets[s] + np.argmax(reference[pool.offsets[s]:pool.offsets[s + 1]])
                    for s in range(pool.n_sentences)])
    return float(np.mean(best == top))


# final-score normalisation leaves the features' scales (0.1 to 10 here) to plain SGD: slower, and
# unstable at the default rate, which was chosen with feature normalisation
@pytest.mark.parametrize("normalisation, rate, accuracy", [("features", 10.0, 0.95), ("features", 1.0, 0.95),
                                                           ("score", 1.0, 0.85)])
def test_recovers_a_linear_gold_ranking(normalisation, rate, accuracy):
    pool = _synthetic_pool(np.random.default_rng(5))
    model = ListNet(normalisation=normalisation, learning_rate=rate, epochs=30).fit(TuningData(pool=pool), np.zeros(5),
                                                                                    np.random.default_rng(1))
    assert _top1_accuracy(pool, np.zeros(5)) < 0.2
    assert _top1_accuracy(pool, model.weights_) >= accuracy
    losses = [loss for _, _, loss in model.history_]
    assert losses[-1] < losses[0]
    assert model.score_ == max(score for _, score, _ in model.history_)
    assert model.score_ == pytest.approx(pool.bleu(model.weights_))


def test_deterministic_from_the_seed_and_plugs_into_the_loop():
    pool = _synthetic_pool(np.random.default_rng(2), n_sent=40)
    fits = [POOL_TUNERS["listnet"](epochs=3, eval_every=1).fit(TuningData(pool=pool), np.ones(5),
                                                              np.random.default_rng(seed))
            for seed in (7, 7, 8)]
    assert np.array_equal(fits[0].weights_, fits[1].weights_)
    assert fits[0].history_ == fits[1].history_
    assert [h[2] for h in fits[0].history_] != [h[2] for h in fits[2].history_]
    assert fits[0].n_batches_ == 12


def test_starts_from_the_initial_weights_and_respects_the_budget():
    pool = _synthetic_pool(np.random.default_rng(4), n_sent=30)
    initial = np.array([1.0, 0.1, 10.0, 0.2, 0.5])
    model = ListNet(max_batches=0).fit(TuningData(pool=pool), initial, np.random.default_rng(0))
    np.testing.assert_allclose(model.weights_, initial)
    model = ListNet(epochs=2, max_batches=5, decay=0.5, learning_rate=0.3).fit(TuningData(pool=pool), initial,
                                                                               np.random.default_rng(0))
    assert model.n_batches_ == 5 and [h[0] for h in model.history_] == [0, 3, 5]


def test_bad_parameters_and_inputs():
    with pytest.raises(ValueError, match="normalisation"):
        ListNet(normalisation="z")
    with pytest.raises(ValueError, match="positive"):
        ListNet(learning_rate=0)
    pool = _synthetic_pool(np.random.default_rng(4), n_sent=5)
    with pytest.raises(ValueError, match="expected 5 initial weights"):
        ListNet().fit(TuningData(pool=pool), np.zeros(3), np.random.default_rng(0))


def _with_duplicates(pool, rng, share=0.5):
    """``pool`` with about ``share`` of its candidates repeated (same text and statistics, other
    features: another derivation of the same translation) after their sentence's candidates."""
    rows, sentences = [], []
    for s in range(pool.n_sentences):
        own = np.arange(pool.offsets[s], pool.offsets[s + 1])
        rows += list(own) + list(rng.choice(own, size=int(share * len(own)), replace=True))
        sentences += [s] * (len(rows) - len(sentences))
    rows = np.array(rows)
    offsets = np.zeros_like(pool.offsets)
    np.cumsum(np.bincount(sentences, minlength=pool.n_sentences), out=offsets[1:])
    features = pool.features[rows].copy()
    repeated = np.concatenate([np.arange(offsets[s] + pool.offsets[s + 1] - pool.offsets[s], offsets[s + 1])
                               for s in range(pool.n_sentences)])
    features[repeated] += rng.normal(size=(len(repeated), features.shape[1]))
    return Pool(pool.layout, features, pool.stats[rows], offsets, np.arange(len(rows), dtype=np.uint64),
                tuple(pool.texts[i] for i in rows)), repeated


def test_distinct_candidates_keep_the_first_entry_of_each_translation():
    rng = np.random.default_rng(6)
    pool, repeated = _with_duplicates(_synthetic_pool(rng, n_sent=12, n_cand=6), rng)
    # the same text in two sentences is two translations
    texts = list(pool.texts)
    texts[pool.offsets[1]] = texts[pool.offsets[0]]
    pool = Pool(pool.layout, pool.features, pool.stats, pool.offsets, pool.keys, tuple(texts))
    seen, expected = set(), []
    for i, (s, text) in enumerate(zip(pool.sentence, pool.texts)):
        if (s, text) not in seen:
            seen.add((s, text))
            expected.append(i)
    assert distinct_candidates(pool).tolist() == expected
    assert set(expected).isdisjoint(repeated)


def test_distinct_trains_on_each_translation_once():
    rng = np.random.default_rng(7)
    clean = _synthetic_pool(rng, n_sent=40, n_cand=10)
    doubled, _ = _with_duplicates(clean, rng)
    initial = rng.normal(size=5)
    # on each distinct translation: the same batches, scaling and losses as on the list without repeats
    fits = {name: ListNet(epochs=3, eval_every=1, distinct=distinct).fit(TuningData(pool=pool), initial,
                                                                         np.random.default_rng(4))
            for name, pool, distinct in (("clean", clean, False), ("distinct", doubled, True),
                                         ("every", doubled, False))}
    assert fits["distinct"].n_items_ == fits["clean"].n_items_ == clean.n_candidates < doubled.n_candidates
    np.testing.assert_array_equal(fits["distinct"].scaling_.minimum, fits["clean"].scaling_.minimum)
    np.testing.assert_allclose([h[2] for h in fits["distinct"].history_], [h[2] for h in fits["clean"].history_],
                               rtol=1e-12)
    assert fits["every"].n_items_ == doubled.n_candidates
    assert [h[2] for h in fits["every"].history_] != [h[2] for h in fits["distinct"].history_]
    # the dev BLEU that chooses the weights is that of every entry
    assert fits["distinct"].score_ == pytest.approx(doubled.bleu(fits["distinct"].weights_))


def test_gains_are_bleu_plus1_percent_with_or_without_the_brevity_cap():
    rng = np.random.default_rng(9)
    stats = np.zeros((50, 10), dtype=np.int64)
    stats[:, 0] = rng.integers(1, 30, size=50)
    stats[:, 1] = rng.integers(1, 30, size=50)
    for n in range(4):
        stats[:, 6 + n] = np.maximum(stats[:, 0] - n, 0)
        stats[:, 2 + n] = rng.integers(0, stats[:, 6 + n] + 1)
    plain, unclipped = reference_scores(stats, "bleu+1"), reference_scores(stats, "bleu+1-unclipped")
    np.testing.assert_allclose(plain, 100 * sentence_bleu_plus1(stats))
    for row, p, u in zip(stats, plain, unclipped):
        c, r = row[0], row[1]
        precision = p / 100 / min(1.0, np.exp(1 - r / c)) if p > 0 else 0.0
        assert u == pytest.approx(100 * precision * np.exp(1 - r / c), rel=1e-12, abs=1e-12)
        assert (u > p) == (c > r and p > 0)
    with pytest.raises(ValueError, match="gain"):
        reference_scores(stats, "bleu")


def test_fit_minimises_the_cross_entropy_towards_its_gain():
    # the loss ListNet logs is Eq. 2 over the distinct translations, computed from scratch, with the gain asked for
    rng = np.random.default_rng(12)
    pool, _ = _with_duplicates(_synthetic_pool(rng, n_sent=15, n_cand=8), rng)
    stats = pool.stats.copy()
    stats[:, 0] = rng.integers(15, 26, size=len(stats))  # hypotheses shorter and longer than the reference
    pool = Pool(pool.layout, pool.features, stats, pool.offsets, pool.keys, pool.texts)
    initial = rng.normal(size=5)
    items = distinct_candidates(pool)
    offsets = np.concatenate([[0], np.cumsum(np.bincount(pool.sentence[items], minlength=pool.n_sentences))])
    losses = {}
    for gain in ("bleu+1", "bleu+1-unclipped"):
        model = ListNet(gain=gain, max_batches=0).fit(TuningData(pool=pool), initial, np.random.default_rng(0))
        scaling = FeatureScaling.fit(pool.features[items])
        target = []
        for s in range(pool.n_sentences):
            gains = 100 * sentence_bleu_plus1(stats[items[offsets[s]:offsets[s + 1]]], clipped=gain == "bleu+1")
            target += list(np.exp(gains - gains.max()) / np.exp(gains - gains.max()).sum())
        expected = _brute_loss(scaling.transform(pool.features[items]), offsets, np.array(target),
                               scaling.scaled_weights(initial), None) / pool.n_sentences
        losses[gain] = model.history_[0][2]
        assert losses[gain] == pytest.approx(expected, rel=1e-12)
    assert losses["bleu+1"] != pytest.approx(losses["bleu+1-unclipped"], rel=1e-3)
