"""SampleRank: neighbour statistics, the incremental batch gain, the update, determinism, mixing and resume."""

import dataclasses

import numpy as np
import pytest
import sacrebleu

from pbmt.commands.cli import main
from pbmt.base.documents import Documents
from pbmt.base.errors import PbmtError
from pbmt.metrics.bleu import batch_bleu, segment_stats_ids
from pbmt.model.block_features import BlockWeights
from pbmt.model.model import TranslationModel
from pbmt.model.sparse import SparseModel, WordClasses
from pbmt.search.decoder import decode
from pbmt.model import distortion_bins
from pbmt.search.derivation import jump_features, model_score, score_derivation, sparse_features, sparse_score
from pbmt.base.plots import read_tuning_log
from pbmt.tune.samplerank import SAMPLERANK_LOG
from pbmt.search.options import TranslationOptions
from pbmt.search.sampler import Sampler, gloss
from pbmt.features.translation import Translator
from sampler_task import fitted_on
from resumption import assert_resumed_as_uninterrupted
from pbmt.tune.samplerank import SampleRank
from pbmt.tune.sampler_chains import (OPERATORS, BatchGain, Settings, encode_dev, mira_update, mix, batches,
                                      neighbour_stats, run_chain, shards, update_pair, gain_covariance,
                                      with_sparse_weights, set_sparse_weights)
from pbmt.tune.gains import GAINS


@pytest.fixture(scope="module")
def dev(bible):
    model = TranslationModel.load(bible / "model" / "moses.ini")
    src = (bible / "dev.tok.es").read_text(encoding="utf-8").splitlines()[:12]
    ref = (bible / "dev.tok.en").read_text(encoding="utf-8").splitlines()[:12]
    return model, encode_dev(model, src, ref), (src, ref)


def stats_of(words, sentence, references):
    return segment_stats_ids(np.array([0, len(words)]), np.asarray(words, np.int32), [sentence], references)[0]


def test_neighbour_stats_match_each_candidate_scored_alone(dev):
    model, dev_set, text = dev
    sources, references = dev_set.sources, dev_set.references
    rng = np.random.default_rng(3)
    for s in range(4):
        options = dev_set.options(model, s)
        sampler = Sampler(model, options, operator_weights=OPERATORS)
        chain = sampler.start(gloss(options))
        for _ in range(40):
            nb = sampler.propose(chain, rng)
            if nb.operator is None:
                continue
            stats = neighbour_stats(nb, references, s)
            expected = [stats_of(d.target_words(options), s, references) for d in nb.derivations()]
            np.testing.assert_array_equal(stats, expected)
            sampler.apply(chain, nb, int(rng.integers(len(nb))))


@pytest.mark.parametrize("clipped", [True, False])
def test_incremental_batch_gain_equals_recomputation(dev, clipped):
    model, dev_set, text = dev
    sources, references = dev_set.sources, dev_set.references
    rng = np.random.default_rng(5)
    batch = [0, 1, 2, 3, 4]
    samplers = [Sampler(model, dev_set.options(model, s), operator_weights=OPERATORS)
                for s in batch]
    chains = [sp.start(gloss(sp.options)) for sp in samplers]

    def recomputed():
        return np.array([stats_of(c.derivation.target_words(sp.options), s, references)
                         for c, sp, s in zip(chains, samplers, batch)])

    gain = BatchGain(recomputed(), GAINS["batch-bleu" if clipped else "batch-bleu-unclipped"])
    for _ in range(25):
        j = int(rng.integers(len(batch)))
        nb = samplers[j].propose(chains[j], rng)
        if nb.operator is None:
            continue
        stats = neighbour_stats(nb, references, batch[j])
        gains = gain.with_replaced(j, stats)
        for c in range(len(nb)):
            rows = recomputed()
            rows[j] = stats_of(nb.derivation(c).target_words(samplers[j].options), batch[j], references)
            assert gains[c] == pytest.approx(float(batch_bleu(rows.sum(axis=0), 0.01, clipped)), abs=1e-12)
        c = int(rng.integers(len(nb)))
        samplers[j].apply(chains[j], nb, c)
        gain.replace(j, stats[c])
        np.testing.assert_array_equal(gain.total, recomputed().sum(axis=0))
        assert gain.value == float(batch_bleu(recomputed().sum(axis=0), 0.01, clipped))


def test_update_equals_hand_computed_example():
    w = np.array([1.0, 0.0])
    # sample scores 1 with gain 0.2, oracle scores 0 with gain 0.5: a = (-1, 1), w·a = -1, M = 0.5,
    # b = 0.5 * 0.3 + 1 = 1.15, ||a||^2 = 2, b / ||a||^2 = 0.575
    np.testing.assert_allclose(mira_update(w, [1, 0], [0, 1], 0.2, 0.5, c=0.01), [0.99, 0.01])
    np.testing.assert_allclose(mira_update(w, [1, 0], [0, 1], 0.2, 0.5, c=1.0), [0.425, 0.575])
    # the sample has the higher gain and the model prefers the oracle: the same step with roles exchanged
    np.testing.assert_allclose(mira_update(w, [0, 1], [1, 0], 0.5, 0.2, c=1.0), [1 - 0.53, 0.53])
    assert mira_update(w, [0, 1], [1, 0], 0.2, 0.5) is None  # same ranking
    assert mira_update(w, [0, 1], [0, 2], 0.2, 0.5) is None  # equal scores
    assert mira_update(w, [1, 0], [0, 1], 0.5, 0.5) is None  # equal gains
    # gain scale 10: the margin is M * 10 * 0.3 = 1.5 nats, b = 1.5 + 1 = 2.5, b / ||a||^2 = 1.25
    np.testing.assert_allclose(mira_update(w, [1, 0], [0, 1], 0.2, 0.5, c=2.0, gain_scale=10.0), [-0.25, 1.25])
    # ranked right (the oracle scores 1 more) but by less than the margin 1.5: only the passive-aggressive rule
    # updates, by b = 1.5 - 1 = 0.5 along a = (1, 0)
    assert mira_update(w, [0, 0], [1, 0], 0.2, 0.5, c=1.0, gain_scale=10.0) is None
    np.testing.assert_allclose(mira_update(w, [0, 0], [1, 0], 0.2, 0.5, c=1.0, gain_scale=10.0,
                                           margin_updates=True), [1.5, 0.0])
    assert mira_update(w, [0, 0], [2, 0], 0.2, 0.5, c=1.0, gain_scale=10.0, margin_updates=True) is None


def test_update_fixes_the_ranking_or_moves_toward_it_by_c():
    rng = np.random.default_rng(11)
    for _ in range(200):
        w, h_sample, h_oracle = rng.normal(size=(3, 6))
        g_sample, g_oracle = rng.uniform(size=2)
        scale = rng.choice([1.0, 100.0])
        new = mira_update(w, h_sample, h_oracle, g_sample, g_oracle, c=1e6, gain_scale=scale)
        if new is None:
            assert (g_oracle - g_sample) * ((h_oracle - h_sample) @ w) >= 0
            continue
        sign = np.sign(g_oracle - g_sample)
        margin = sign * (h_oracle - h_sample) @ new
        assert margin == pytest.approx(g_oracle * scale * abs(g_oracle - g_sample))
        assert sign * (g_oracle - g_sample) > 0 and margin > 0  # the pair is now ranked as the gain ranks it
        clipped = mira_update(w, h_sample, h_oracle, g_sample, g_oracle, c=1e-4, gain_scale=scale)
        a = sign * (h_oracle - h_sample)
        np.testing.assert_allclose(clipped - w, 1e-4 * a)
        assert a @ clipped > a @ w


def test_update_pair_hand_computed_example():
    paper, margins, hope_fear = (Settings(gain_scale=10.0, update=u, margin_updates=m)
                                 for u, m in [("sample-oracle", False), ("sample-oracle", True),
                                              ("hope-fear", False)])
    scores, gains = np.array([0.0, 1.0, 3.0]), np.array([0.6, 0.4, 0.2])
    # oracle: 10 * gain + score = (6, 5, 5) -> 0, M = 0.6; fear: score - 6 * gain = (-3.6, -1.4, 1.8) -> 2
    assert update_pair(scores, gains, 1, paper) == (1, 0)
    assert update_pair(scores, gains, 0, paper) is None  # the sample is the oracle
    assert update_pair(scores, gains, 0, hope_fear) == (2, 0)  # whatever the sample
    # ranked as the gain ranks them, by 2 nats < the margin 0.6 * 10 * 0.4 = 2.4: only a margin violation
    scores, gains = np.array([2.0, 0.0]), np.array([0.6, 0.2])
    assert update_pair(scores, gains, 1, paper) is None
    assert update_pair(scores, gains, 1, margins) == (1, 0)
    assert update_pair(scores, gains, 0, hope_fear) == (1, 0)
    # by 5 nats > 2.4: no violation; the fear is the oracle itself
    scores = np.array([5.0, 0.0])
    assert update_pair(scores, gains, 1, margins) is None
    assert update_pair(scores, gains, 1, hope_fear) is None


def test_hope_fear_update_satisfies_the_violated_constraint_or_moves_toward_it_by_c():
    rng = np.random.default_rng(12)
    settings = Settings(gain_scale=30.0, update="hope-fear")
    for _ in range(200):
        w, features = rng.normal(size=6), rng.normal(size=(5, 6))
        gains = rng.uniform(0.1, 0.4, size=5)
        pair = update_pair(features @ w, gains, 0, settings)
        if pair is None:
            continue
        fear, hope = pair
        assert hope == np.argmax(30 * gains + features @ w) and gains[hope] > gains[fear]
        a, margin = features[hope] - features[fear], gains[hope] * 30 * (gains[hope] - gains[fear])
        assert a @ w < margin  # the constraint (6) is violated ...
        new = mira_update(w, features[fear], features[hope], gains[fear], gains[hope], c=1e6, gain_scale=30.0,
                          margin_updates=True)
        assert a @ new == pytest.approx(margin)  # ... and holds after the update
        clipped = mira_update(w, features[fear], features[hope], gains[fear], gains[hope], c=1e-4,
                              gain_scale=30.0, margin_updates=True)
        np.testing.assert_allclose(clipped - w, 1e-4 * a)
        assert a @ w < a @ clipped <= margin


def test_gain_covariance_is_the_expected_gain_gradient(dev):
    model, dev_set, text = dev
    sources, references = dev_set.sources, dev_set.references
    rng = np.random.default_rng(4)
    options = dev_set.options(model, 2)
    sampler = Sampler(model, options, operator_weights=OPERATORS)
    chain = sampler.start(gloss(options))
    nb = sampler.propose(chain, rng)
    while nb.operator is None or len(nb) < 3:
        nb = sampler.propose(chain, rng)
    gains = rng.uniform(0.2, 0.4, size=len(nb))
    features = np.array([score_derivation(d, options, model) for d in nb.derivations()])  # from scratch

    def expected_gain(w):
        scores = features @ w
        q = np.exp(scores - scores.max())
        return q @ gains / q.sum()

    w = model.weights
    q = np.exp(features @ w - (features @ w).max())
    q /= q.sum()
    covariance = gain_covariance(nb, q, gains, model)
    numeric = [(expected_gain(w + 1e-6 * e) - expected_gain(w - 1e-6 * e)) / 2e-6 for e in np.eye(len(w))]
    np.testing.assert_allclose(covariance, numeric, atol=1e-8)


@pytest.mark.parametrize("bins", [False, True])
def test_gain_covariance_with_sparse_features_equals_from_scratch(dev, tmp_path, bins):
    model, dev_set, text = dev
    sources, references = dev_set.sources, dev_set.references
    words = sorted({w for s in sources[:3] for w in dev_set.vocab.words(s)} | set(model.vocab.words(range(50))))
    classes = tmp_path / "classes.txt"
    classes.write_text("".join(f"{w}\tk{i % 3}\n" for i, w in enumerate(words)), encoding="utf-8")
    sparse = SparseModel.new(WordClasses.read(classes))
    sparse = sparse.with_weights(np.linspace(-0.5, 0.5, sparse.size))
    if bins:  # the distortion family beside it: its bins follow the boundary weights
        sparse = dataclasses.replace(sparse, jumps=np.linspace(0.3, -0.3, distortion_bins.SIZE))
    model = dataclasses.replace(model, sparse=sparse)
    rng = np.random.default_rng(6)
    options = dev_set.options(model, 1)
    sampler = Sampler(model, options, operator_weights=OPERATORS)
    nb = sampler.propose(sampler.start(gloss(options)), rng)
    while nb.operator is None or len(nb) < 3:
        nb = sampler.propose(sampler.start(gloss(options)), rng)
    q, gains = rng.dirichlet(np.ones(len(nb))), rng.uniform(0.2, 0.4, size=len(nb))
    features = np.array([np.concatenate([score_derivation(d, options, model), sparse_features(d, options, model),
                                         jump_features(d) if bins else []]) for d in nb.derivations()])
    assert np.ptp(features[:, model.layout.size:], axis=0).any()  # the sparse features vary
    expected = (features - q @ features).T @ (q * (gains - q @ gains))
    np.testing.assert_allclose(gain_covariance(nb, q, gains, model), expected, atol=1e-10)


@pytest.mark.parametrize("kw", [{}, {"update": "hope-fear"},
                                {"update": "expected-gain", "temperature": 0.1, "start": "decoder"}])
def test_run_chain_counts_and_is_deterministic(dev, kw):
    model, dev_set, text = dev
    sources, references = dev_set.sources, dev_set.references
    settings = Settings(batch_size=4, samples_per_sentence=20, burn_in_per_sentence=2, **kw)
    one = run_chain(model, dev_set, np.arange(6), model.weights, np.random.default_rng(2), settings)
    two = run_chain(model, dev_set, np.arange(6), model.weights, np.random.default_rng(2), settings)
    assert one.steps == (20 + 2) * 6 and one.collected == 20 * 6
    assert one.updates > 0
    np.testing.assert_array_equal(one.weights, two.weights)
    np.testing.assert_array_equal(one.weight_sum, two.weight_sum)


def test_fit_mixes_chains_and_averages_exactly(dev):
    model, dev_set, text = dev
    sources, references = dev_set.sources, dev_set.references
    kw = dict(batch_size=3, samples_per_sentence=4, burn_in_per_sentence=1)
    fitted = fitted_on(SampleRank(epochs=2, chains=2, **kw), model, *text, np.random.default_rng(9))
    seed = int(np.random.default_rng(9).integers(2**63))
    weights, total, count = np.array(model.weights), 0.0, 0
    for epoch in range(2):
        results = [run_chain(model, dev_set, shard, weights, np.random.default_rng([seed, epoch, c]),
                             Settings(**kw)) for c, shard in enumerate(shards(np.arange(len(sources)), 2, seed, epoch))]
        weights, epoch_sum, epoch_count = mix(results)
        np.testing.assert_array_equal(weights, (results[0].weights + results[1].weights) / 2)
        total, count = total + epoch_sum, count + epoch_count
        np.testing.assert_array_equal(fitted.log_[epoch].weights, weights)
        np.testing.assert_array_equal(fitted.log_[epoch].averaged, total / count)
    assert count == 2 * 4 * len(sources)
    np.testing.assert_array_equal(fitted.weights_, total / count)
    np.testing.assert_array_equal(fitted.last_weights_, weights)
    again = fitted_on(SampleRank(epochs=2, chains=2, **kw), model, *text, np.random.default_rng(9))
    np.testing.assert_array_equal(again.weights_, fitted.weights_)


def test_document_batches_and_shards_never_cross_a_document():
    keys = [f"Book{b} {c}:{v}" for b, c, verses in [(1, 1, 7), (1, 2, 2), (2, 1, 9), (3, 4, 1), (3, 5, 5)]
            for v in range(1, verses + 1)]
    documents = Documents.from_keys(keys)
    document = documents.document_of()
    chunk_of = documents.chunks(4)
    rng = np.random.default_rng(0)
    for seed in range(5):
        parts = shards(np.arange(len(keys)), 3, seed, 0, chunk_of)
        np.testing.assert_array_equal(np.sort(np.concatenate(parts)), np.arange(len(keys)))
        for part in parts:
            assert np.all(np.isin(np.flatnonzero(np.isin(chunk_of, chunk_of[part])), part))  # whole chunks
            seen = []
            for batch in batches(part, 4, rng, chunk_of):
                assert 1 <= len(batch) <= 4 and len(set(document[batch])) == 1
                seen.extend(batch)
            np.testing.assert_array_equal(np.sort(seen), np.sort(part))


def test_fit_with_documents_batches_within_documents(dev):
    model, dev_set, text = dev
    sources, references = dev_set.sources, dev_set.references
    documents = Documents.from_keys([f"A 1:{v}" for v in range(1, 6)] + [f"B 1:{v}" for v in range(1, 8)])
    kw = dict(batch_size=4, samples_per_sentence=3, burn_in_per_sentence=1)
    fitted = fitted_on(SampleRank(epochs=1, chains=2, **kw), model, *text, np.random.default_rng(9),
                                                      documents=documents)
    seed = int(np.random.default_rng(9).integers(2**63))
    chunk_of = documents.chunks(4)
    results = [run_chain(model, dev_set, shard, model.weights, np.random.default_rng([seed, 0, c]),
                         Settings(**kw), chunk_of) for c, shard in enumerate(shards(np.arange(12), 2, seed, 0, chunk_of))]
    np.testing.assert_array_equal(fitted.last_weights_, mix(results)[0])
    with pytest.raises(ValueError, match="documents cover 5"):
        fitted_on(SampleRank(epochs=1, **kw), model, *text, np.random.default_rng(9),
                                       documents=Documents.from_keys([f"A 1:{v}" for v in range(1, 6)]))


def test_resume_equals_an_uninterrupted_run(dev, tmp_path):
    model, dev_set, text = dev
    kw = dict(batch_size=4, samples_per_sentence=3, burn_in_per_sentence=1, chains=2)
    whole = fitted_on(SampleRank(epochs=3, out=tmp_path / "whole", **kw), model, *text, np.random.default_rng(4))
    fitted_on(SampleRank(epochs=1, out=tmp_path / "parts", **kw), model, *text, np.random.default_rng(4))
    resumed = fitted_on(SampleRank(epochs=3, out=tmp_path / "parts", **kw), model, *text,
                        np.random.default_rng(99), resume=True)
    np.testing.assert_array_equal(resumed.weights_, whole.weights_)
    assert [e.epoch for e in resumed.log_] == [1, 2, 3]
    for a, b in zip(resumed.log_, whole.log_):
        np.testing.assert_array_equal(a.averaged, b.averaged)
    assert_resumed_as_uninterrupted(tmp_path / "parts", tmp_path / "whole", ())
    with pytest.raises(PbmtError, match="cannot resume: the run was started with other settings: chains 2 there, "
                       "3 now"):
        fitted_on(SampleRank(epochs=2, out=tmp_path / "parts", **{**kw, "chains": 3}), model, *text,
                  np.random.default_rng(4), resume=True)


def test_pbmt_tune_samplerank_writes_the_averaged_weights(bible, tmp_path):
    out = tmp_path / "tuned"
    args = ["tune", "-f", str(bible / "model" / "moses.ini"), "--src", str(bible / "dev.tok.es"),
            "--refs", str(bible / "dev.tok.en"), "--out", str(out), "--sentences", "6", "--algorithm", "samplerank",
            "--epochs", "2", "--batch-size", "3", "--samples-per-sentence", "5", "--burn-in-per-sentence", "1",
            "--chains", "2", "--seed", "3", "-q"]
    assert main(args) == 0
    model = TranslationModel.load(bible / "model" / "moses.ini")
    src = (bible / "dev.tok.es").read_text(encoding="utf-8").splitlines()[:6]
    ref = (bible / "dev.tok.en").read_text(encoding="utf-8").splitlines()[:6]
    expected = fitted_on(SampleRank(2, 3, 5, 1, chains=2), model, src, ref, np.random.default_rng(3))
    tuned = TranslationModel.load(out / "moses.ini")
    np.testing.assert_allclose(tuned.weights, expected.weights_, atol=1e-8)
    log = read_tuning_log(out / "log.tsv", [SAMPLERANK_LOG])
    assert (out / "dev-bleu.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert log.algorithm == "samplerank" and log.steps.tolist() == [1, 2]
    for row, epoch in zip(log.weights, expected.log_):
        np.testing.assert_allclose(row, epoch.averaged, atol=1e-8)
    # the last epoch's dev BLEU is the stack decoder's 1-best under the tuned (averaged) weights
    translator = Translator(tuned, tokenized=True)
    firsts = [translator.translate(i, line).text for i, line in enumerate(src)]
    assert log.dev_bleu[-1] == pytest.approx(sacrebleu.corpus_bleu(firsts, [ref], tokenize="none").score, abs=1e-3)
    assert main(args + ["--resume"]) == 0  # nothing left to run: the same weights again
    np.testing.assert_allclose(TranslationModel.load(out / "moses.ini").weights, expected.weights_, atol=1e-8)


def test_pbmt_tune_passes_the_variant_settings(bible, tmp_path):
    out = tmp_path / "tuned"
    args = ["tune", "-f", str(bible / "model" / "moses.ini"), "--src", str(bible / "dev.tok.es"),
            "--refs", str(bible / "dev.tok.en"), "--out", str(out), "--sentences", "4", "--algorithm", "samplerank",
            "--epochs", "1", "--batch-size", "2", "--samples-per-sentence", "5", "--burn-in-per-sentence", "1",
            "--samplerank-update", "expected-gain", "--samplerank-step", "0.05", "--temperature", "0.1",
            "--chain-start", "decoder", "--no-dev-bleu", "--seed", "3", "-q"]
    assert main(args) == 0
    model = TranslationModel.load(bible / "model" / "moses.ini")
    src = (bible / "dev.tok.es").read_text(encoding="utf-8").splitlines()[:4]
    ref = (bible / "dev.tok.en").read_text(encoding="utf-8").splitlines()[:4]
    expected = fitted_on(SampleRank(1, 2, 5, 1, update="expected-gain", step=0.05, temperature=0.1,
                         start="decoder"), model, src, ref, np.random.default_rng(3))
    assert not np.allclose(expected.weights_, model.weights)
    np.testing.assert_allclose(TranslationModel.load(out / "moses.ini").weights, expected.weights_, atol=1e-8)


def test_boundary_features_are_tuned_saved_and_decoded(bible, tmp_path):
    words = sorted({w for line in (bible / "dev.tok.en").read_text(encoding="utf-8").splitlines()[:12]
                    for w in line.split()})
    classes = tmp_path / "classes.txt"
    classes.write_text("".join(f"{w}\tk{i % 4}\n" for i, w in enumerate(words)), encoding="utf-8")
    out = tmp_path / "tuned"
    args = ["tune", "-f", str(bible / "model" / "moses.ini"), "--src", str(bible / "dev.tok.es"),
            "--refs", str(bible / "dev.tok.en"), "--out", str(out), "--sentences", "6", "--algorithm", "samplerank",
            "--epochs", "1", "--batch-size", "3", "--samples-per-sentence", "8", "--burn-in-per-sentence", "1",
            "--features", "boundary", "--word-classes", str(classes), "--documents", str(bible / "dev.keys"),
            "--no-dev-bleu", "--seed", "3", "-q"]
    assert main(args) == 0
    base = TranslationModel.load(bible / "model" / "moses.ini")
    src = (bible / "dev.tok.es").read_text(encoding="utf-8").splitlines()[:6]
    ref = (bible / "dev.tok.en").read_text(encoding="utf-8").splitlines()[:6]
    expected = fitted_on(SampleRank(1, 3, 8, 1), dataclasses.replace(base,
                         sparse=SparseModel.new(WordClasses.read(classes))), src, ref,
        np.random.default_rng(3), documents=Documents.read(bible / "dev.keys", limit=6))
    tuned = TranslationModel.load(out / "moses.ini")
    dense = base.layout.size
    np.testing.assert_allclose(tuned.weights, expected.weights_[:dense], atol=1e-8)
    np.testing.assert_allclose(tuned.sparse.weights, expected.weights_[dense:], rtol=1e-12)
    assert np.count_nonzero(tuned.sparse.weights) > 0
    assert "[sparse]" in (out / "pbmt.toml").read_text()
    # the stack decoder uses them: its scores are the from-scratch dense + sparse scores
    options = TranslationOptions.of_words(tuned, src[0].split())
    best = decode(tuned, options)[0]
    assert best.score == pytest.approx(model_score(best.derivation, options, tuned), abs=1e-6)


def test_a_model_with_both_sparse_families_is_refused_in_one_line(dev, tmp_path):
    """SampleRank updates the boundary weights in place, which a sentence's merged pair table (boundary classes
    plus block bigrams) would not see: such a model is refused with a message saying what to drop."""
    model, dev_set, text = dev
    classes = tmp_path / "classes.txt"
    classes.write_text("".join(f"{w}\tk{i % 2}\n" for i, w in enumerate(model.vocab.words(range(3, 40)))),
                       encoding="utf-8")
    sparse = SparseModel.new(WordClasses.read(classes))
    both = dataclasses.replace(model, sparse=dataclasses.replace(sparse, blocks=BlockWeights(["blk:y|and"], [0.5])))
    weights = np.concatenate([model.weights, np.zeros(sparse.size)])
    with pytest.raises(PbmtError, match=r"^SampleRank tunes the boundary family .*drop \"block\" or \"boundary\""):
        run_chain(both, dev_set, np.arange(2), weights, np.random.default_rng(0), Settings(batch_size=2))


def test_distortion_bins_updated_in_place_reach_the_sampler(dev):
    """run_chain writes each update into the model's arrays, which the sampler's kernels read: after a write,
    a neighbourhood's sparse column (Sparse0) differs between candidates as their from-scratch sparse scores do."""
    model, dev_set, text = dev
    start = SparseModel(None, np.zeros(0), jumps=np.zeros(distortion_bins.SIZE))
    model = dataclasses.replace(model, sparse=with_sparse_weights(start, np.zeros(distortion_bins.SIZE)))
    rng = np.random.default_rng(4)
    options = dev_set.options(model, 2)
    sampler = Sampler(model, options, operator_weights=OPERATORS)
    set_sparse_weights(model.sparse, np.linspace(-1.0, 1.5, distortion_bins.SIZE))  # after the sampler was built
    chain = sampler.start(gloss(options))
    differ = 0
    for _ in range(200):
        nb = sampler.propose(chain, rng)
        if nb.operator is None:
            continue
        scratch = np.array([sparse_score(d, options, model) for d in nb.derivations()])
        column = nb.delta[:, model.layout.size]
        np.testing.assert_allclose(column - column[0], scratch - scratch[0], atol=1e-9)
        differ += bool(np.ptp(scratch))
        sampler.apply(chain, nb, int(rng.integers(len(nb))))
    assert differ > 10  # moves that change the jumps were checked


def test_distortion_bins_are_tuned_saved_and_decoded(bible, tmp_path):
    out = tmp_path / "tuned"
    args = ["tune", "-f", str(bible / "model" / "moses.ini"), "--src", str(bible / "dev.tok.es"),
            "--refs", str(bible / "dev.tok.en"), "--out", str(out), "--sentences", "6", "--algorithm", "samplerank",
            "--epochs", "1", "--batch-size", "3", "--samples-per-sentence", "8", "--burn-in-per-sentence", "1",
            "--features", "distortion", "--no-dev-bleu", "--seed", "3", "-q"]
    assert main(args) == 0
    base = TranslationModel.load(bible / "model" / "moses.ini")
    src = (bible / "dev.tok.es").read_text(encoding="utf-8").splitlines()[:6]
    ref = (bible / "dev.tok.en").read_text(encoding="utf-8").splitlines()[:6]
    bins = SparseModel(None, np.zeros(0), jumps=np.zeros(distortion_bins.SIZE))
    expected = fitted_on(SampleRank(1, 3, 8, 1), dataclasses.replace(base, sparse=bins), src, ref,
                         np.random.default_rng(3))
    tuned = TranslationModel.load(out / "moses.ini")
    dense = base.layout.size
    np.testing.assert_allclose(tuned.weights, expected.weights_[:dense], atol=1e-8)
    np.testing.assert_allclose(tuned.sparse.jumps, expected.weights_[dense:], rtol=1e-12)
    assert np.count_nonzero(tuned.sparse.jumps) > 0 and tuned.sparse.boundary is None
    options = TranslationOptions.of_words(tuned, src[0].split())
    best = decode(tuned, options)[0]
    assert best.score == pytest.approx(model_score(best.derivation, options, tuned), abs=1e-6)
