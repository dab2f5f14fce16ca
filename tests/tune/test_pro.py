import argparse
import gzip
import itertools

import numpy as np
import pytest

from pbmt.commands import optimize
from pbmt.commands.cli import main
from pbmt.base.config import MosesConfig
from pbmt.metrics.bleu import sentence_bleu_plus1
from pbmt.tune.gains import names_of
from pbmt.model.features import FeatureLayout
from pbmt.model.model import TranslationModel
from pbmt.features.translation import Translator
from pbmt.tune.pool import Pool
from pbmt.tune.pro import Pro, logistic_regression, sample_pairs
from pbmt.tune.registry import POOL_TUNERS
from pbmt.tune.tuner import TuningData


def linear_pool(rng, n_sent=60, n_cand=30, n_features=5, length=60):
    """A pool whose BLEU+1 rises with the candidates' score under hidden weights w* (returned too).

    Per sentence, q = the gold score ``x @ w*`` scaled to [0, 1]; every n-gram
    order matches a share 0.1 + 0.8 q of its words (hypothesis and reference
    of ``length`` words).
    """
    w_star = rng.normal(size=n_features)
    features = rng.normal(size=(n_sent * n_cand, n_features))
    gold = (features @ w_star).reshape(n_sent, n_cand)
    q = ((gold - gold.min(axis=1, keepdims=True)) / np.ptp(gold, axis=1, keepdims=True)).ravel()
    stats = np.zeros((n_sent * n_cand, 10), dtype=np.int64)
    stats[:, 0] = stats[:, 1] = length
    for n in range(4):
        stats[:, 6 + n] = length - n
        stats[:, 2 + n] = np.rint((length - n) * (0.1 + 0.8 * q))
    layout = FeatureLayout(tuple(f"F{i}" for i in range(n_features)), ("",) * n_features, (1,) * n_features)
    offsets = np.arange(0, n_sent * n_cand + 1, n_cand)
    keys = np.arange(len(features), dtype=np.uint64)
    return Pool(layout, features, stats, offsets, keys, ("",) * len(features)), w_star


def cosine(a, b):
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def split(better, worse, offsets):
    """The pairs of each sentence as a list of (better, worse) arrays."""
    sentence = np.searchsorted(offsets, better, side="right") - 1
    return [(better[sentence == s], worse[sentence == s]) for s in range(len(offsets) - 1)]


@pytest.fixture
def random_gains():
    rng = np.random.default_rng(4)
    counts = rng.integers(1, 40, size=30)
    offsets = np.r_[0, np.cumsum(counts)]
    return rng.integers(0, 30, size=offsets[-1]) / 50, offsets  # ties in gain on purpose


@pytest.mark.parametrize("samples, keep, min_difference", [(5000, 50, 0.05), (200, 30, 0.1), (50, 80, 0.0)])
def test_sampled_pairs_obey_gamma_alpha_and_xi(random_gains, samples, keep, min_difference):
    gains, offsets = random_gains
    better, worse = sample_pairs(gains, offsets, np.random.default_rng(0), samples, keep, min_difference)
    difference = gains[better] - gains[worse]
    assert np.all(difference >= min_difference) and np.all(difference > 0)
    for s, (b, w) in enumerate(split(better, worse, offsets)):
        assert len(b) <= min(keep, samples)
        assert np.all((offsets[s] <= b) & (b < offsets[s + 1]) & (offsets[s] <= w) & (w < offsets[s + 1]))
        assert np.all(np.diff(gains[b] - gains[w]) <= 0)  # largest differences first
    # Xi = Gamma keeps every accepted pair; a smaller Xi keeps the first Xi of those
    every = split(*sample_pairs(gains, offsets, np.random.default_rng(0), samples, samples, min_difference), offsets)
    for (b, w), (all_b, all_w) in zip(split(better, worse, offsets), every):
        assert np.array_equal(b, all_b[:keep]) and np.array_equal(w, all_w[:keep])
        assert len(all_b) <= samples


def test_alpha_accepts_a_difference_of_exactly_the_threshold_and_no_tie():
    gains = np.array([0.0, 0.05, 0.07, 0.2, 0.2])
    better, worse = sample_pairs(gains, np.array([0, 5]), np.random.default_rng(1), 5000, 5000, 0.05)
    found = set(zip(better.tolist(), worse.tolist()))
    assert found == {(1, 0), (2, 0), (3, 0), (4, 0), (3, 1), (4, 1), (3, 2), (4, 2)}


def test_pairs_are_drawn_uniformly_with_replacement():
    """Two candidates of gains 0 and 1: a draw is accepted unless both ends are the same candidate."""
    better, _ = sample_pairs(np.array([0.0, 1.0] * 50), np.arange(0, 101, 2), np.random.default_rng(2), 4000, 4000)
    counts = np.bincount(np.searchsorted(np.arange(0, 101, 2), better, side="right") - 1)
    assert np.all(np.abs(counts - 2000) < 5 * np.sqrt(1000))  # binomial(4000, 1/2)


def test_the_sampler_is_reproducible_from_a_seed(random_gains):
    gains, offsets = random_gains
    first = sample_pairs(gains, offsets, np.random.default_rng(7), 300, 20)
    again = sample_pairs(gains, offsets, np.random.default_rng(7), 300, 20)
    other = sample_pairs(gains, offsets, np.random.default_rng(8), 300, 20)
    assert all(np.array_equal(a, b) for a, b in zip(first, again))
    assert not all(np.array_equal(a, b) for a, b in zip(first, other))


def test_logistic_regression_equals_scikit_learn():
    sklearn = pytest.importorskip("sklearn.linear_model")
    rng = np.random.default_rng(5)
    examples = rng.normal(size=(400, 6))
    labels = np.where(examples @ rng.normal(size=6) + rng.normal(size=400) > 0, 1.0, -1.0)
    reference = sklearn.LogisticRegression(C=1 / 2.0, fit_intercept=False, tol=1e-12, max_iter=10000)
    reference.fit(examples, labels)
    assert np.allclose(logistic_regression(examples, labels, l2=2.0), reference.coef_[0], rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("gain", names_of("sentence"))
def test_pro_trains_on_both_signs_and_interpolates_with_the_previous_weights(gain):
    pool, _ = linear_pool(np.random.default_rng(3), n_sent=20)
    layout = FeatureLayout(("F0", "UnknownWordPenalty0", "F2"), ("", "", ""), (2, 1, 2))
    pool = Pool(layout, pool.features, pool.stats, pool.offsets, pool.keys, pool.texts)
    start = np.array([0.5, -0.5, 1.0, 0.2, 0.1])
    pro = Pro(samples=500, keep=20, gain=gain).fit(TuningData(pool=pool), start, np.random.default_rng(9))
    gains = sentence_bleu_plus1(pool.stats, clipped=gain == "bleu+1")
    better, worse = sample_pairs(gains, pool.offsets, np.random.default_rng(9), 500, 20)
    assert pro.n_pairs_ == len(better)
    free = np.array([True, True, False, True, True])
    difference = pool.features[better][:, free] - pool.features[worse][:, free]
    expected = logistic_regression(np.concatenate([difference, -difference]),
                                   np.r_[np.ones(len(better)), -np.ones(len(better))])
    assert np.allclose(pro.classifier_weights_[free], expected)
    assert pro.classifier_weights_[2] == 0.0
    assert np.allclose(pro.weights_[free], 0.1 * expected + 0.9 * start[free])
    assert pro.weights_[2] == 1.0


@pytest.mark.parametrize("seed", range(3))
def test_pro_recovers_the_gold_weights_of_a_linear_pool(seed):
    pool, w_star = linear_pool(np.random.default_rng(seed))
    pro = Pro().fit(TuningData(pool=pool), np.zeros(len(w_star)), np.random.default_rng(seed))
    assert cosine(pro.weights_, w_star) > 0.99
    assert pool.bleu(pro.weights_) > pool.bleu(-w_star) + 0.1


@pytest.fixture(scope="module")
def moses_nbest(bible, tmp_path_factory):
    """Moses's 100-best lists of the first 50 dev sentences, and their references (on the first 20, APRO's full
    step, Psi = 1, fits its ranking objective and lowers pool BLEU, 43.03 -> 42.40; on 50, it raises it)."""
    folder = tmp_path_factory.mktemp("moses-nbest-pro")
    with gzip.open(bible / "model" / "dev.moses.nbest100.gz", "rt", encoding="utf-8") as f:
        lines = list(itertools.takewhile(lambda line: int(line.split(" |||")[0]) < 50, f))
    (folder / "nbest").write_text("".join(lines))
    refs = (bible / "dev.tok.en").read_text(encoding="utf-8").splitlines()[:50]
    (folder / "refs").write_text("\n".join(refs) + "\n")
    return folder


def optimized_bleu(capsys) -> tuple[float, float]:
    before, after = capsys.readouterr().err.split("BLEU of its 1-best ")[1].split(" after")[0].split(" -> ")
    return float(before), float(after)


@pytest.mark.parametrize("algorithm", ["pro", "apro"])
def test_optimize_raises_the_pool_bleu_of_a_moses_nbest_list(algorithm, bible, moses_nbest, tmp_path, capsys):
    argv = ["optimize", "--algorithm", algorithm, "--n-best", str(moses_nbest / "nbest"),
            "--refs", str(moses_nbest / "refs"), "--config", str(bible / "model" / "moses.ini"),
            "-o", str(tmp_path / "tuned.ini")]
    assert main(argv) == 0
    before, after = optimized_bleu(capsys)
    assert after > before
    assert MosesConfig.read(tmp_path / "tuned.ini").weights["UnknownWordPenalty0"] == (1.0,)


@pytest.mark.parametrize("algorithm", ["pro", "apro"])
def test_tune_runs_the_loop(algorithm, tiny_model_dir, tmp_path):
    sources = ["a b c", "c a e b", "b d a", "e d c b a", "d e", "a c e"]
    translator = Translator(TranslationModel.load(tiny_model_dir / "moses.ini"), n_best=4, distinct=True,
                            tokenized=True)
    refs = [translator.translate(i, line).nbest[-1].text for i, line in enumerate(sources)]
    (tmp_path / "dev.src").write_text("\n".join(sources) + "\n")
    (tmp_path / "dev.ref").write_text("\n".join(refs) + "\n")
    argv = ["tune", "-q", "-f", str(tiny_model_dir / "moses.ini"), "--src", str(tmp_path / "dev.src"),
            "--refs", str(tmp_path / "dev.ref"), "--out", str(tmp_path / "out"), "--n-best-size", "10",
            "--iterations", "3", "--algorithm", algorithm, "--interpolation", "0.5"]
    assert main(argv) == 0
    log = (tmp_path / "out" / "log.tsv").read_text().splitlines()
    assert len(log) >= 2
    assert (tmp_path / "out" / "moses.ini").exists()


@pytest.mark.parametrize("algorithm", ["pro", "mert"])
def test_bad_pro_options_are_usage_errors(moses_nbest, capsys, algorithm):
    argv = ["optimize", "--algorithm", algorithm, "--n-best", str(moses_nbest / "nbest"), "--refs",
            str(moses_nbest / "refs"), "--interpolation", "1.5"]
    with pytest.raises(SystemExit) as exit_:  # a range error is argparse's
        main(argv)
    assert exit_.value.code == 2
    assert "--interpolation must be 0 to 1, not 1.5" in capsys.readouterr().err


def test_the_unclipped_gain_ranks_a_longer_candidate_above_a_short_exact_one():
    """Nakov et al. (2012): against a 10-word reference, BLEU+1 prefers a 9-word candidate whose every n-gram
    matches (brevity penalty 0.895) to a 12-word one of lower precision (0.82, no penalty); with the unclipped
    brevity penalty (1.18 for the longer) the 12-word one wins. Features: the candidates' lengths."""
    short = [9, 10, 9, 8, 7, 6, 9, 8, 7, 6]
    longer = [12, 10, 10, 9, 8, 7, 12, 11, 10, 9]
    layout = FeatureLayout(("Length",), ("",), (1,))
    pool = Pool(layout, np.array([[9.0], [12.0]]), np.array([short, longer]), np.array([0, 2]),
                np.array([1, 2], dtype=np.uint64), ("a", "b"))
    for gain, preferred in (("bleu+1", 0), ("bleu+1-unclipped", 1)):
        better, _ = sample_pairs(sentence_bleu_plus1(pool.stats, clipped=gain == "bleu+1"), pool.offsets,
                                 np.random.default_rng(0), 50, 5, min_difference=0.0)
        assert set(better.tolist()) == {preferred}
        pro = Pro(samples=50, keep=5, min_difference=0.0, interpolation=1.0, gain=gain, fixed=())
        length_weight = pro.fit(TuningData(pool=pool), np.array([0.0]), np.random.default_rng(0)).weights_[0]
        assert length_weight > 0 if preferred else length_weight < 0


def _tuner(argv: list[str], reordering: str = "distortion"):
    """The tuner ``pbmt optimize`` builds from ``argv`` (besides its required options)."""
    parser = argparse.ArgumentParser()
    optimize.add_arguments(parser)
    args = parser.parse_args(["--n-best", "x", "--refs", "y"] + argv)
    return optimize.OPTIONS.build(POOL_TUNERS[args.algorithm], args, reordering)


@pytest.mark.parametrize("algorithm, given, expected", [
    ("pro", None, "bleu+1-unclipped"), ("apro", None, "bleu+1-unclipped"), ("pro", "bleu+1", "bleu+1"),
    ("apro", "bleu+1", "bleu+1")])
def test_gain_defaults_to_each_rankers_own(algorithm, given, expected):
    assert _tuner(["--algorithm", algorithm] + (["--gain", given] if given else [])).gain == expected


def test_a_batch_gain_is_refused_by_pro(moses_nbest, capsys):
    argv = ["optimize", "--algorithm", "pro", "--n-best", str(moses_nbest / "nbest"), "--refs",
            str(moses_nbest / "refs"), "--gain", "batch-bleu"]
    assert main(argv) == 2
    assert "--gain batch-bleu is a batch gain (SampleRank's); PRO and APRO take bleu+1 or" in capsys.readouterr().err


def test_an_unknown_gain_is_refused():
    with pytest.raises(ValueError, match="gain must be one of"):
        Pro(gain="bleu")


@pytest.mark.parametrize("algorithm, given, reordering, expected", [
    ("pro", None, "distortion", 0.1), ("apro", None, "distortion", 1.0), ("mert", None, "distortion", 1.0),
    ("mert", None, "mon-swap", 0.5), ("pro", None, "mon-swap", 0.1), ("pro", "0.4", "distortion", 0.4),
    ("mert", "0.4", "mon-swap", 0.4), ("mert", "1", "mon-swap", 1.0)])
def test_interpolation_defaults_to_each_optimisers_own(algorithm, given, reordering, expected):
    """One --interpolation for MERT, PRO and APRO; unset, each optimiser keeps its class's default, but MERT's is
    damped in the MON/SWAP space."""
    tuner = _tuner(["--algorithm", algorithm] + (["--interpolation", given] if given else []), reordering)
    assert tuner.interpolation == expected
