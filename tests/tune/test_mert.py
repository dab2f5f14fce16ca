import numpy as np
import pytest

from pbmt.metrics.bleu import bleu, corpus_bleu, segment_stats
from pbmt.model.features import FeatureLayout
from pbmt.tune.mert import DAMPED_INTERPOLATION, SMALL_DEV_SENTENCES, Mert, default_interpolation, line_search
from pbmt.tune.pool import Pool
from pbmt.tune.tuner import TuningData

WORDS = "the lord said unto moses and house of israel go".split()


def random_pool(rng, n_sent=12, max_cand=10, n_features=3, integer=False) -> Pool:
    """Random candidates with real BLEU statistics of random strings against random references."""
    counts = rng.integers(1, max_cand + 1, size=n_sent)
    offsets = np.r_[0, np.cumsum(counts)]
    refs = [" ".join(rng.choice(WORDS, size=int(rng.integers(4, 12)))) for _ in range(n_sent)]
    hyps = [" ".join(rng.choice(WORDS, size=int(rng.integers(1, 12)))) for _ in range(offsets[-1])]
    sentence = np.repeat(np.arange(n_sent), counts)
    stats = segment_stats(hyps, [[r] for r in refs], sentence)
    if integer:
        features = rng.integers(-3, 4, size=(offsets[-1], n_features)).astype(np.float64)
    else:
        features = rng.normal(size=(offsets[-1], n_features))
    layout = FeatureLayout(tuple(f"F{i}" for i in range(n_features)), ("",) * n_features, (1,) * n_features)
    return Pool(layout, features, stats, offsets, np.arange(offsets[-1], dtype=np.uint64), tuple(hyps))


def brute_bleu(pool: Pool, a: np.ndarray, b: np.ndarray, gammas: np.ndarray) -> np.ndarray:
    """Corpus BLEU of each sentence's argmax(a + gamma b) (first on ties), for every gamma."""
    scores = a[None, :] + gammas[:, None] * b[None, :]
    rows = np.zeros((len(gammas), 10), dtype=np.int64)
    for s in range(pool.n_sentences):
        lo, hi = pool.offsets[s], pool.offsets[s + 1]
        rows += pool.stats[lo + np.argmax(scores[:, lo:hi], axis=1)]
    return bleu(rows)


def crossings(pool: Pool, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Every pairwise intersection of two candidates' lines within a sentence (a superset of the breakpoints)."""
    points = []
    for s in range(pool.n_sentences):
        lo, hi = pool.offsets[s], pool.offsets[s + 1]
        da = a[lo:hi, None] - a[None, lo:hi]
        db = b[None, lo:hi] - b[lo:hi, None]
        with np.errstate(divide="ignore", invalid="ignore"):
            x = da / db
        points.append(x[np.isfinite(x)])
    return np.unique(np.concatenate(points))


@pytest.mark.parametrize("seed", range(8))
def test_line_search_equals_brute_force_on_random_pools(seed):
    rng = np.random.default_rng(seed)
    pool = random_pool(rng)
    w, d = rng.normal(size=3), rng.normal(size=3)
    a, b = pool.features @ w, pool.features @ d
    gamma, score = line_search(a, b, pool.offsets, pool.stats)
    points = crossings(pool, a, b)
    between = (points[1:] + points[:-1]) / 2
    grid = np.concatenate([np.linspace(-20, 20, 4001), points, between, [points[0] - 1, points[-1] + 1]])
    assert brute_bleu(pool, a, b, grid).max() == pytest.approx(score, abs=1e-12)
    assert brute_bleu(pool, a, b, np.array([gamma]))[0] == pytest.approx(score, abs=1e-12)


@pytest.mark.parametrize("seed", range(6))
def test_a_bounded_line_search_equals_brute_force_inside_its_reach(seed):
    rng = np.random.default_rng(50 + seed)
    pool = random_pool(rng)
    w, d = rng.normal(size=3), rng.normal(size=3)
    a, b = pool.features @ w, pool.features @ d
    points = crossings(pool, a, b)
    reach = float(np.quantile(np.abs(points), 0.3))  # cuts off most breakpoints
    gamma, score = line_search(a, b, pool.offsets, pool.stats, -reach, reach)
    assert abs(gamma) < reach
    inner = points[np.abs(points) < reach]
    cuts = np.concatenate([[-reach], inner, [reach]])
    grid = np.concatenate([np.linspace(-reach, reach, 4003)[1:-1], inner, (cuts[1:] + cuts[:-1]) / 2])
    assert brute_bleu(pool, a, b, grid).max() == pytest.approx(score, abs=1e-12)
    assert brute_bleu(pool, a, b, np.array([gamma]))[0] == pytest.approx(score, abs=1e-12)


@pytest.mark.parametrize("reach, gamma", [(np.inf, 4.0), (10.0, 4.0), (3.0, 2.5)])
def test_a_half_line_beyond_the_reach_is_clipped_to_its_middle(reach, gamma):
    """Lines 1 - g, 0, -2 + g as below, candidate 2 best: the half-line (2, inf) is cut at ``reach``."""
    stats = np.tile(np.array([10, 10, 5, 3, 2, 1, 10, 9, 8, 7]), (3, 1))
    stats[2, 2:6] += 3
    found, _ = line_search(np.array([1.0, 0.0, -2.0]), np.array([-1.0, 0.0, 1.0]), np.array([0, 3]), stats, -reach, reach)
    assert found == gamma


def test_every_step_of_a_bounded_climb_stays_within_its_reach(monkeypatch):
    import pbmt.tune.mert as mert_module

    steps = []

    def recording(a, b, offsets, stats, low=-np.inf, high=np.inf):
        gamma, score = line_search(a, b, offsets, stats, low, high)
        assert low == -high  # no sign constraint: the segment is symmetric
        steps.append((gamma, high))
        return gamma, score

    monkeypatch.setattr(mert_module, "line_search", recording)
    rng = np.random.default_rng(8)
    pool = random_pool(rng, n_sent=30, max_cand=20, n_features=5)
    start = rng.uniform(0.5, 1.0, size=5)
    mert = Mert(restarts=2, random_directions=3, max_step=0.5, keep_signs=False).fit(TuningData(pool=pool), start,
                                                                                     np.random.default_rng(0))
    assert mert.score_ >= pool.bleu(start)
    assert steps and all(abs(gamma) < reach < np.inf for gamma, reach in steps)
    assert steps[0][1] == pytest.approx(0.5 * start.sum())  # the reach is max_step times the L1 norm
    with pytest.raises(ValueError, match="max_step"):
        Mert(max_step=0.0)


@pytest.mark.parametrize("seed", range(4))
def test_line_search_with_ties_and_parallel_lines(seed):
    """Integer features: equal slopes, equal lines and breakpoints shared by sentences."""
    rng = np.random.default_rng(100 + seed)
    pool = random_pool(rng, n_sent=15, integer=True)
    w, d = rng.integers(-2, 3, size=3).astype(float), rng.integers(-2, 3, size=3).astype(float)
    a, b = pool.features @ w, pool.features @ d
    gamma, score = line_search(a, b, pool.offsets, pool.stats)
    points = crossings(pool, a, b)
    if len(points):
        grid = np.concatenate([(points[1:] + points[:-1]) / 2, [points[0] - 1, points[-1] + 1]])
    else:
        grid = np.array([0.0])
    assert brute_bleu(pool, a, b, grid).max() == pytest.approx(score, abs=1e-12)
    assert brute_bleu(pool, a, b, np.array([gamma]))[0] == pytest.approx(score, abs=1e-12)


def test_a_flat_line_keeps_the_current_point():
    rng = np.random.default_rng(3)
    pool = random_pool(rng)
    a = pool.features @ rng.normal(size=3)
    gamma, score = line_search(a, np.zeros_like(a), pool.offsets, pool.stats)
    assert gamma == 0.0
    assert score == brute_bleu(pool, a, np.zeros_like(a), np.zeros(1))[0]


@pytest.mark.parametrize("best, gamma", [(0, 0.0), (1, 1.5), (2, 4.0)])
def test_the_step_is_the_middle_of_a_bounded_interval(best, gamma):
    """Lines 1 - g, 0, -2 + g: candidate 0 wins below g = 1, 1 on (1, 2), 2 above 2.

    A half-line holding the current point keeps it; one that does not gets
    the point as far past its breakpoint as the breakpoint is from 0.
    """
    stats = np.tile(np.array([10, 10, 5, 3, 2, 1, 10, 9, 8, 7]), (3, 1))
    stats[best, 2:6] += 3
    found, score = line_search(np.array([1.0, 0.0, -2.0]), np.array([-1.0, 0.0, 1.0]), np.array([0, 3]), stats)
    assert found == gamma
    assert score == bleu(stats[best])


def gold_pool(rng, n_sent=40, n_cand=15, n_features=4):
    """Candidates whose BLEU statistics improve with their score under hidden weights w*."""
    w_star = rng.normal(size=n_features)
    features = rng.normal(size=(n_sent * n_cand, n_features))
    stats = np.zeros((n_sent * n_cand, 10), dtype=np.int64)
    length = 20
    for s in range(n_sent):
        rows = slice(s * n_cand, (s + 1) * n_cand)
        rank = np.argsort(np.argsort(features[rows] @ w_star))  # 0 = worst
        stats[rows, 0] = stats[rows, 1] = length
        for n in range(4):
            stats[rows, 6 + n] = length - n
            stats[rows, 2 + n] = np.minimum(length - n, 2 + rank)
    offsets = np.arange(0, n_sent * n_cand + 1, n_cand)
    layout = FeatureLayout(tuple(f"F{i}" for i in range(n_features)), ("",) * n_features, (1,) * n_features)
    pool = Pool(layout, features, stats, offsets, np.arange(len(features), dtype=np.uint64), ("",) * len(features))
    return pool, w_star


@pytest.mark.parametrize("seed", range(3))
def test_mert_reaches_the_gold_bleu_of_a_linear_pool(seed):
    rng = np.random.default_rng(seed)
    pool, w_star = gold_pool(rng)
    gold = pool.bleu(w_star)
    oracle = corpus_bleu(np.array([pool.stats[pool.offsets[s]:pool.offsets[s + 1]].max(axis=0)
                                   for s in range(pool.n_sentences)]))
    assert gold == pytest.approx(oracle)
    start = -w_star
    assert pool.bleu(start) < gold - 0.1
    # the start is -w*: every sign must flip to reach it
    mert = Mert(restarts=5, random_directions=4, keep_signs=False).fit(TuningData(pool=pool), start,
                                                                       np.random.default_rng(seed))
    assert mert.score_ == pytest.approx(gold, abs=1e-12)
    assert pool.bleu(mert.weights_) == pytest.approx(gold, abs=1e-12)
    assert np.abs(mert.weights_).sum() == pytest.approx(1.0)


def test_mert_is_deterministic_given_the_generator_and_keeps_fixed_weights():
    rng = np.random.default_rng(11)
    pool = random_pool(rng, n_sent=20, n_features=4)
    layout = FeatureLayout(("A", "UnknownWordPenalty0", "B"), ("", "", ""), (2, 1, 1))
    pool = Pool(layout, pool.features, pool.stats, pool.offsets, pool.keys, pool.texts)
    start = np.array([0.3, -0.2, 1.0, 0.5])
    first = Mert(restarts=3).fit(TuningData(pool=pool), start, np.random.default_rng(5))
    second = Mert(restarts=3).fit(TuningData(pool=pool), start, np.random.default_rng(5))
    assert np.array_equal(first.weights_, second.weights_)
    assert first.weights_[2] == 1.0
    assert np.abs(first.weights_[[0, 1, 3]]).sum() == pytest.approx(1.0)
    assert first.score_ >= pool.bleu(np.r_[start[:2], 0.0, start[3]]) - 1e-12
    # the fixed column takes no part in the search: changing its values changes nothing
    shuffled = pool.features.copy()
    shuffled[:, 2] = rng.normal(size=len(shuffled))
    other = Mert(restarts=3).fit(TuningData(pool=Pool(layout, shuffled, pool.stats, pool.offsets, pool.keys,
                                 pool.texts)), start,
                                 np.random.default_rng(5))
    assert np.array_equal(other.weights_, first.weights_)


@pytest.mark.parametrize("seed", [3, 8])
def test_mert_on_two_threads_is_one_threads_run_byte_for_byte(seed):
    rng = np.random.default_rng(seed)
    pool = random_pool(rng, n_sent=40, n_features=5)
    start = rng.normal(size=5)
    found = {}
    for threads in (1, 2, 3):
        generator = np.random.default_rng(seed)
        fit = Mert(restarts=4, random_directions=6, threads=threads).fit(TuningData(pool=pool), start, generator)
        # generator.random(): the fit drew as many numbers from it
        found[threads] = (fit.weights_.tobytes(), fit.score_, fit.n_line_searches_, fit.restart_kept_,
                          generator.random())
    assert found[2] == found[1] and found[3] == found[1]
    assert found[1][2] > 2 * (5 + 6)  # several rounds, each of every direction


def test_mert_never_ends_below_its_start():
    rng = np.random.default_rng(21)
    pool = random_pool(rng, n_sent=30, max_cand=20, n_features=5)
    start = rng.normal(size=5)
    mert = Mert(restarts=0, random_directions=0).fit(TuningData(pool=pool), start, np.random.default_rng(0))
    assert mert.score_ >= pool.bleu(start)
    assert pool.bleu(mert.weights_) == pytest.approx(mert.score_, abs=1e-12)


@pytest.mark.parametrize("psi", [0.0, 0.3, 1.0])
def test_interpolation_moves_part_of_the_way_from_the_start_to_the_optimum(psi):
    """Psi times the undamped optimum plus 1 - Psi times the start, both L1-normalised over the tuned columns (the
    fixed one kept), and the score is the pool's BLEU there (the fixed column ignored, as in the search)."""
    rng = np.random.default_rng(3)
    pool = random_pool(rng, n_sent=20, n_features=4)
    layout = FeatureLayout(("A", "UnknownWordPenalty0", "B"), ("", "", ""), (2, 1, 1))
    pool = Pool(layout, pool.features, pool.stats, pool.offsets, pool.keys, pool.texts)
    start = np.array([0.3, -0.2, 1.0, 0.5])
    optimum = Mert(restarts=3).fit(TuningData(pool=pool), start, np.random.default_rng(5)).weights_
    damped = Mert(restarts=3, interpolation=psi).fit(TuningData(pool=pool), start, np.random.default_rng(5))
    tuned = [0, 1, 3]
    expected = psi * optimum[tuned] + (1 - psi) * start[tuned] / np.abs(start[tuned]).sum()
    assert damped.weights_[tuned] == pytest.approx(expected / np.abs(expected).sum(), abs=1e-12)
    assert damped.weights_[2] == 1.0
    assert damped.score_ == pytest.approx(pool.bleu(np.r_[damped.weights_[:2], 0.0, damped.weights_[3]]), abs=1e-12)
    with pytest.raises(ValueError, match="interpolation"):
        Mert(interpolation=1.5)


def test_bad_initial_weights_are_rejected():
    pool = random_pool(np.random.default_rng(0))
    with pytest.raises(ValueError, match="expected 3 initial weights"):
        Mert().fit(TuningData(pool=pool), np.zeros(4), np.random.default_rng(0))
    with pytest.raises(ValueError, match="finite"):
        Mert().fit(TuningData(pool=pool), np.array([0.0, np.nan, 1.0]), np.random.default_rng(0))


def test_a_random_restart_wins_only_when_significantly_better():
    rng = np.random.default_rng(4)
    pool = random_pool(rng, n_sent=40, max_cand=15, n_features=4)
    start = rng.normal(size=4)
    incumbent = Mert(restarts=0).fit(TuningData(pool=pool), start, np.random.default_rng(9))
    moses_like = Mert(restarts=20, significance=0.0).fit(TuningData(pool=pool), start, np.random.default_rng(9))
    tested = Mert(restarts=20).fit(TuningData(pool=pool), start, np.random.default_rng(9))
    # the restarts draw after the climb from the start, so restart 0 is the same climb in all three
    assert moses_like.score_ >= incumbent.score_
    assert moses_like.score_ > incumbent.score_ and not tested.restart_kept_  # a gain of about 0.1 BLEU points
    assert np.array_equal(tested.weights_, incumbent.weights_)
    loose = Mert(restarts=20, significance=0.999).fit(TuningData(pool=pool), start, np.random.default_rng(9))
    assert loose.restart_kept_ == (moses_like.score_ > incumbent.score_)
    assert np.array_equal(loose.weights_, moses_like.weights_)
    with pytest.raises(ValueError, match="significance"):
        Mert(significance=1.0)


def test_a_significantly_better_restart_replaces_a_stuck_climb():
    pool, w_star = gold_pool(np.random.default_rng(1))
    one_round = {"random_directions": 0, "tolerance": 1.0, "keep_signs": False}  # each climb stops after one round of line searches
    stuck = Mert(restarts=0, **one_round).fit(TuningData(pool=pool), -w_star, np.random.default_rng(9))
    mert = Mert(restarts=20, **one_round).fit(TuningData(pool=pool), -w_star, np.random.default_rng(9))
    assert mert.restart_kept_ and mert.score_ > stuck.score_ + 0.05


def swap_trap(n_sent=20):
    """A pool whose optimum lies past a sign flip, and the wider space a decoder would search.

    Features (LM, R), both log-probabilities (<= 0), R summed over swapped
    phrases. Every sentence has, in the pool, a monotone candidate (LM -10)
    and a better one with one swap (LM -11, R -1); beyond the pool, a word
    salad of 50 swaps (LM -60, R -50) that no weights with both signs
    positive prefer. The salad lies 50 times as far as the swap from the
    monotone candidate, in the same direction of feature space: whatever
    weights rank the swap above the monotone one (on the pool, BLEU rises
    then, and only with a sign flipped) rank the salad above both.
    """
    def stats(matches):
        return [10, 10, matches, max(matches - 2, 0), max(matches - 4, 0), max(matches - 5, 0), 10, 9, 8, 7]

    space = np.array([[-10.0, 0.0], [-11.0, -1.0], [-60.0, -50.0]])
    space_stats = np.array([stats(6), stats(8), stats(1)], dtype=np.int64)
    layout = FeatureLayout(("LM0", "R0"), ("", ""), (1, 1))

    def pool_of(rows):
        features = np.tile(space[rows], (n_sent, 1))
        return Pool(layout, features, np.tile(space_stats[rows], (n_sent, 1)),
                    np.arange(0, n_sent * len(rows) + 1, len(rows)), np.arange(n_sent * len(rows), dtype=np.uint64),
                    ("",) * (n_sent * len(rows)))

    return pool_of([0, 1]), pool_of([0, 1, 2])


def test_keeping_signs_stops_the_pool_optimum_that_decodes_word_salad():
    pool, space = swap_trap()
    start = np.array([1.0, 1.0])
    free = Mert(restarts=5, keep_signs=False).fit(TuningData(pool=pool), start, np.random.default_rng(0))
    assert np.any(np.sign(free.weights_) != np.sign(start))  # the pool's optimum flips a sign...
    assert free.score_ > pool.bleu(start) + 0.1
    assert space.bleu(free.weights_) < pool.bleu(start) - 0.3  # ...and the wider space's 1-best is the salad
    kept = Mert(restarts=5).fit(TuningData(pool=pool), start, np.random.default_rng(0))  # the default keeps signs
    assert np.all(kept.weights_ > 0)
    assert space.bleu(kept.weights_) == pytest.approx(pool.bleu(start))


@pytest.mark.parametrize("seed", range(4))
def test_a_climb_keeping_signs_never_flips_one_and_matches_brute_force_on_its_segment(seed):
    rng = np.random.default_rng(200 + seed)
    pool = random_pool(rng, n_sent=20, max_cand=12, n_features=4)
    start = rng.normal(size=4)
    mert = Mert(restarts=3, random_directions=3, keep_signs=True, max_step=None).fit(TuningData(pool=pool), start,
                                                                                       np.random.default_rng(seed))
    assert np.all(np.sign(mert.weights_) * np.sign(start) >= 0)
    assert mert.score_ >= pool.bleu(start)
    # along one coordinate, the search sees exactly the segment that keeps the other signs: up to that weight's zero
    a, b = pool.features @ start, pool.features[:, 0]
    low, high = (-abs(start[0]), np.inf) if start[0] > 0 else (-np.inf, abs(start[0]))
    gamma, score = line_search(a, b, pool.offsets, pool.stats, low, high)
    assert low < gamma < high
    points = crossings(pool, a, b)
    inner = points[(points > low) & (points < high)]
    ends = np.r_[max(low, inner.min(initial=0) - 10), inner, min(high, inner.max(initial=0) + 10)]
    grid = np.concatenate([inner, (ends[1:] + ends[:-1]) / 2])
    assert brute_bleu(pool, a, b, grid).max() == pytest.approx(score, abs=1e-12)


def test_half_steps_by_default_in_mon_swap_and_on_a_small_dev_set():
    assert default_interpolation("distortion", SMALL_DEV_SENTENCES) == 1.0 == default_interpolation("distortion")
    assert default_interpolation("distortion", SMALL_DEV_SENTENCES - 1) == DAMPED_INTERPOLATION == 0.5
    assert default_interpolation("mon-swap", 10_000) == DAMPED_INTERPOLATION


def test_pbmt_tune_damps_mert_on_a_small_dev_set_unless_told_otherwise():
    from pbmt.commands.cli import parse
    from pbmt.commands.tune import OPTIONS

    args = parse(["tune", "-f", "m.ini", "--src", "s", "--refs", "r", "--out", "o", "--algorithm", "mert"])
    assert OPTIONS.build(Mert, args, "distortion", 100).interpolation == 0.5
    assert OPTIONS.build(Mert, args, "distortion", 1031).interpolation == 1.0
    assert OPTIONS.build(Mert, args, "distortion").interpolation == 1.0
    given = parse(["tune", "-f", "m.ini", "--src", "s", "--refs", "r", "--out", "o", "--interpolation", "1"])
    assert OPTIONS.build(Mert, given, "distortion", 100).interpolation == 1.0


def test_pbmt_tune_runs_mert_without_random_restarts_on_a_small_dev_set_unless_told_otherwise():
    from pbmt.commands.cli import parse
    from pbmt.commands.tune import OPTIONS
    from pbmt.tune.lattice_mert import LatticeMert

    args = parse(["tune", "-f", "m.ini", "--src", "s", "--refs", "r", "--out", "o", "--algorithm", "mert"])
    assert OPTIONS.build(Mert, args, "distortion", SMALL_DEV_SENTENCES - 1).restarts == 0
    assert OPTIONS.build(Mert, args, "mon-swap", SMALL_DEV_SENTENCES).restarts == Mert.default("restarts") == 20
    assert OPTIONS.build(Mert, args, "distortion").restarts == 20
    assert OPTIONS.build(LatticeMert, args, "distortion", 1031).restarts == 0
    given = parse(["tune", "-f", "m.ini", "--src", "s", "--refs", "r", "--out", "o", "--restarts", "20"])
    assert OPTIONS.build(Mert, given, "distortion", 100).restarts == 20
    assert OPTIONS.build(Mert, given, "distortion", 100).interpolation == DAMPED_INTERPOLATION
