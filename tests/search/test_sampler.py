"""The Gibbs sampler against rescoring from scratch, brute-force distributions and the stack decoder."""

import dataclasses
import itertools

import numpy as np
import pytest
from test_decoder import all_derivations

from pbmt.features import SentenceFeature
from pbmt.model.model import SearchSettings, TranslationModel
from pbmt.search.decoder import decode
from pbmt.search.derivation import Derivation, score_derivation
from pbmt.search.options import TranslationOptions
from pbmt.search.sampler import Operator, Sampler, anneal, gloss, initial_derivation, sample_decode


@pytest.fixture(scope="module")
def tiny(tiny_model_dir):
    return TranslationModel.load(tiny_model_dir / "moses.ini")


def with_limit(model, limit):
    return dataclasses.replace(model, settings=SearchSettings(stack_size=10**6, beam_threshold=0.0,
                                                              distortion_limit=limit))


def obeys_moses_rules(derivation, n, limit):
    """Moses's distortion rules, block by block (as tests/search/test_decoder.py::all_derivations applies them)."""
    covered = [False] * n
    prev_end = 0
    for s, e in zip(derivation.src_start.tolist(), derivation.src_end.tolist()):
        first_gap = covered.index(False)
        if limit >= 0 and (abs(s - prev_end) > limit or (s != first_gap and e - first_gap > limit)):
            return False
        covered[s:e] = [True] * (e - s)
        prev_end = e
    return True


class RepeatedWords(SentenceFeature):
    """Target words equal to an earlier target word: a whole-sentence feature (default, recomputed deltas)."""

    names = ("Repeats",)

    def sentence_values(self, hypothesis):
        words = hypothesis.target.tolist()
        return np.array([len(words) - len(set(words))], dtype=float)


class Blocks(SentenceFeature):
    """Number of blocks squared, with its own batched candidate values (counts the calls)."""

    names = ("BlocksSquared",)
    delta_calls = 0

    def sentence_values(self, hypothesis):
        return np.array([len(hypothesis.derivation) ** 2], dtype=float)

    def candidate_values(self, candidates):
        Blocks.delta_calls += 1
        base = len(candidates.neighbourhood.base)
        change = np.array([len(candidates.added(c)) - len(candidates.removed) for c in range(len(candidates))])
        return ((base + change) ** 2).astype(float)[:, None]


def exact_distribution(sampler, space, temperature):
    scores = np.array([sampler.features(d) @ sampler.weights for d in space]) / temperature
    p = np.exp(scores - scores.max())
    return p / p.sum()


def total_variation(run, space, p):
    counts = dict(run.derivations())
    total = sum(counts.values())
    assert set(counts) <= set(space)
    return 0.5 * sum(abs(counts.get(d, 0) / total - q) for d, q in zip(space, p))


def test_every_delta_equals_rescoring_on_dev(shared):
    model, lines = shared
    rng = np.random.default_rng(3)
    limit = model.settings.distortion_limit
    moves, checked, seen = 0, 0, set()
    for line in lines[:6]:
        options = TranslationOptions.build(model, model.vocab.ids(line.split()))
        sampler = Sampler(model, options)
        chain = sampler.start(gloss(options))
        for _ in range(600):
            nb = sampler.propose(chain, rng)
            seen.add(nb.operator)
            before = score_derivation(nb.base, options, model)
            np.testing.assert_allclose(chain.features, before, atol=1e-6)
            assert nb.derivation(nb.current) == nb.base and not nb.delta[nb.current].any()
            pick = int(rng.choice(len(nb), p=np.exp(nb.score - nb.score.max()) / np.exp(nb.score - nb.score.max()).sum()))
            for c in {pick, *rng.integers(len(nb), size=4).tolist()}:
                after = nb.derivation(c)
                assert after.covers(options.n_words) and obeys_moses_rules(after, options.n_words, limit)
                np.testing.assert_allclose(nb.delta[c], score_derivation(after, options, model) - before, atol=1e-6)
                assert nb.score[c] == pytest.approx(nb.delta[c] @ model.weights, abs=1e-9)
                checked += 1
            sampler.apply(chain, nb, pick)
            moves += 1
        np.testing.assert_allclose(chain.features, score_derivation(chain.derivation, options, model), atol=1e-6)
    assert moves >= 3000 and checked >= 10000
    assert seen >= {Operator.MERGE_SPLIT, Operator.REORDER, Operator.RETRANS}


@pytest.mark.parametrize("sentence", ["c a e b", "a b c d"])
def test_neighbourhoods_are_the_same_from_each_member(tiny, sentence):
    """The condition for each operator to leave exp(score) invariant, checked directly."""
    model = with_limit(tiny, 2)
    options = TranslationOptions.build(model, model.vocab.ids(sentence.split()))
    sampler = Sampler(model, options)
    space = set(all_derivations(options, 2))
    for start in list(space)[::5]:
        chain = sampler.start(start)
        n, k = options.n_words, len(start)
        places = ([(Operator.MERGE_SPLIT, i, 0) for i in range(1, n)]
                  + [(Operator.REORDER, a, b) for a, b in itertools.combinations(range(k), 2)]
                  + [(Operator.RETRANS, b, 0) for b in range(k)])
        for op, a, b in places:
            members = sampler.neighbourhood(chain, op, a, b).derivations()
            assert len(set(members)) == len(members) and set(members) <= space and start in members
            if op == Operator.RETRANS:
                span = options.span(start.src_start[a], start.src_end[a])
                assert {tuple(d.option) for d in members} == {
                    (*start.option[:a], o, *start.option[a + 1:]) for o in span}
            if op == Operator.REORDER:
                order = list(range(k))
                order[a], order[b] = b, a
                swapped = Derivation.from_options(options, start.option[order])
                assert set(members) == {start} | ({swapped} if swapped in space else set())
            for member in members:
                again = sampler.neighbourhood(sampler.start(member), op, a, b).derivations()
                assert set(again) == set(members), (op, a, b)


@pytest.mark.parametrize("sentence,temperature", [("c a e b", 2.0), ("b a d", 1.0), ("d c a e", 1.0)])
def test_samples_follow_the_exact_distribution(tiny, sentence, temperature):
    model = with_limit(tiny, 2)
    options = TranslationOptions.build(model, model.vocab.ids(sentence.split()))
    space = all_derivations(options, 2)
    sampler = Sampler(model, options)
    run = sampler.run(sampler.start(gloss(options)), np.random.default_rng(5), 400_000, temperature, burn_in=1000)
    assert total_variation(run, space, exact_distribution(sampler, space, temperature)) < 0.02


@pytest.mark.parametrize("sentence,limit", [("c a e b", 2), ("a b c d", 2), ("b a d", -1), ("d c b a", -1)])
def test_every_derivation_the_decoder_can_produce_is_reached(tiny, sentence, limit):
    model = with_limit(tiny, limit)
    options = TranslationOptions.build(model, model.vocab.ids(sentence.split()))
    space = set(all_derivations(options, limit))
    assert space == {e.derivation for e in decode(model, options, n_best=10**6)}
    sampler = Sampler(model, options)
    run = sampler.run(sampler.start(gloss(options)), np.random.default_rng(1), 200_000, temperature=1000.0)
    assert {d for d, _ in run.derivations()} == space


def assert_moves_equal_rescoring(sampler, chain, rng, steps, atol):
    """``steps`` random moves of ``chain``: every candidate's delta and the chain's features after each move
    equal ``sampler.features`` from scratch."""
    for _ in range(steps):
        nb = sampler.propose(chain, rng)
        before = sampler.features(nb.base)
        for c in range(len(nb)):
            np.testing.assert_allclose(nb.delta[c], sampler.features(nb.derivation(c)) - before, atol=atol)
        sampler.apply(chain, nb, int(rng.integers(len(nb))))
        np.testing.assert_allclose(chain.features, sampler.features(chain.derivation), atol=atol)


def test_global_features_deltas_and_distribution(tiny):
    model = with_limit(tiny, 2)
    options = TranslationOptions.build(model, model.vocab.ids("b a d".split()))
    sampler = Sampler(model, options, [RepeatedWords(), Blocks()], np.array([1.5, -0.3]))
    assert sampler.feature_names[-2:] == ("Repeats", "BlocksSquared") and sampler.n_features == model.layout.size + 2
    chain = sampler.start(gloss(options))
    rng = np.random.default_rng(2)
    calls = Blocks.delta_calls
    assert_moves_equal_rescoring(sampler, chain, rng, 200, atol=1e-9)
    assert Blocks.delta_calls > calls
    space = all_derivations(options, 2)
    run = sampler.run(chain, rng, 30_000, temperature=2.0, burn_in=500)
    assert total_variation(run, space, exact_distribution(sampler, space, 2.0)) < 0.03


def test_python_loop_makes_the_numba_moves(tiny):
    options = TranslationOptions.build(tiny, tiny.vocab.ids("e d c b a c".split()))
    start = gloss(options)
    plain = Sampler(tiny, options)
    with_zero_global = Sampler(tiny, options, [RepeatedWords()])
    runs = [s.run(s.start(start), np.random.default_rng(9), 3000, temperature=0.5, burn_in=1000, thin=7)
            for s in (plain, with_zero_global)]
    assert runs[0].best == runs[1].best and runs[0].best_score == pytest.approx(runs[1].best_score, abs=1e-9)
    assert np.array_equal(runs[0].samples, runs[1].samples) and np.array_equal(runs[0].counts, runs[1].counts)
    assert runs[0].counts.sum() == len(range(1000, 3000, 7))


def test_annealing_reaches_the_wide_beam_optimum_and_never_passes_it(shared):
    model, lines = shared
    wide = dataclasses.replace(model, settings=dataclasses.replace(model.settings, stack_size=400,
                                                                   beam_threshold=0.0))
    short = [line for line in lines if len(line.split()) <= 16][:8]
    rng = np.random.default_rng(11)
    gaps = []
    for line in short:
        options = TranslationOptions.build(model, model.vocab.ids(line.split()))
        optimum = decode(wide, options)[0].score
        found = sample_decode(model, options, rng, iterations=20_000, temperature=anneal(20_000, 1.0, 0.02))
        assert found.score == pytest.approx(score_derivation(found.derivation, options, model) @ model.weights)
        gaps.append(optimum - found.score)
    assert min(gaps) > -1e-6, gaps
    assert np.mean(gaps) < 0.5 and np.median(gaps) < 1e-6, gaps


def test_gloss_and_decoder_initialisation(tiny):
    options = TranslationOptions.build(tiny, tiny.vocab.ids("c a x e b".split()))
    d = gloss(options)
    assert d.src_start.tolist() == [0, 1, 2, 3, 4] and d.src_end.tolist() == [1, 2, 3, 4, 5]
    for o in d.option:
        span = options.span(options.start[o], options.end[o])
        assert options.local_score[o] == options.local_score[span.start:span.stop].max()
    assert initial_derivation(tiny, options, "gloss") == d
    assert initial_derivation(tiny, options, "decoder") == decode(tiny, options)[0].derivation
    with pytest.raises(ValueError, match="init"):
        initial_derivation(tiny, options, "random")


def test_stale_neighbourhoods_are_refused(tiny):
    options = TranslationOptions.build(tiny, tiny.vocab.ids("a b c d".split()))
    sampler = Sampler(tiny, options)
    chain = sampler.start(gloss(options))
    nb = sampler.neighbourhood(chain, Operator.RETRANS, 0)
    other = next(c for c in range(len(nb)) if c != nb.current)
    sampler.apply(chain, nb, other)
    assert chain.derivation == nb.derivation(other)
    with pytest.raises(ValueError, match="before the chain's last move"):
        sampler.apply(chain, nb, nb.current if nb.current != other else 0)
    with pytest.raises(ValueError, match="REORDER"):
        sampler.neighbourhood(chain, Operator.REORDER, 2, 1)


def test_start_rejects_derivations_outside_the_decoder_space(tiny):
    model = with_limit(tiny, 1)
    options = TranslationOptions.build(model, model.vocab.ids("a b c d".split()))
    sampler = Sampler(model, options)
    far = [options.span(3, 4)[0], options.span(0, 1)[0], options.span(1, 2)[0], options.span(2, 3)[0]]
    with pytest.raises(ValueError, match="distortion limit"):
        sampler.start(Derivation.from_options(options, far))
    with pytest.raises(ValueError, match="cover"):
        sampler.start(Derivation.from_options(options, far[:2]))


def test_decisions_and_empty_sentences(tiny):
    options = TranslationOptions.build(tiny, tiny.vocab.ids("a b c".split()))
    sampler = Sampler(tiny, options)
    run = sampler.run(sampler.start(gloss(options)), np.random.default_rng(0), 5000, burn_in=100)
    ranked = run.derivations()
    assert sum(c for _, c in ranked) == 4900 and ranked[0][0] == run.max_derivation()
    assert run.best_score >= max(sampler.features(d) @ sampler.weights for d, _ in ranked) - 1e-9
    assert run.max_translation().covers(3)
    for decision in ("best", "max-derivation", "max-translation"):
        found = sample_decode(tiny, options, np.random.default_rng(0), 2000, burn_in=100, decision=decision)
        assert found.score == pytest.approx(score_derivation(found.derivation, options, tiny) @ tiny.weights)
    with pytest.raises(ValueError, match="no samples"):
        sampler.run(sampler.start(gloss(options)), np.random.default_rng(0), 10, burn_in=10).max_derivation()
    empty = TranslationOptions.build(tiny, tiny.vocab.ids([]))
    found = sample_decode(tiny, empty, np.random.default_rng(0), 50, decision="max-derivation")
    assert len(found.derivation) == 0


def test_runs_are_deterministic_given_the_seed(tiny):
    options = TranslationOptions.build(tiny, tiny.vocab.ids("e d c b a".split()))
    sampler = Sampler(tiny, options)
    a, b = (sampler.run(sampler.start(gloss(options)), np.random.default_rng(4), 2000) for _ in range(2))
    assert np.array_equal(a.samples, b.samples) and np.array_equal(a.counts, b.counts) and a.best == b.best


@pytest.mark.parametrize("globals_", [(), (RepeatedWords(),)])
def test_trace_keeps_the_chain_every_k_steps_without_changing_the_run(tiny, globals_):
    options = TranslationOptions.build(tiny, tiny.vocab.ids("e d c b a c".split()))
    sampler = Sampler(tiny, options, list(globals_))
    plain = sampler.run(sampler.start(gloss(options)), np.random.default_rng(5), 1003, temperature=0.7, burn_in=100)
    traced = sampler.run(sampler.start(gloss(options)), np.random.default_rng(5), 1003, temperature=0.7,
                         burn_in=100, trace_every=50)
    assert np.array_equal(plain.samples, traced.samples) and np.array_equal(plain.counts, traced.counts)
    assert plain.best == traced.best and plain.trace() == []
    assert traced.trace_steps.tolist() == list(range(0, 1001, 50)) + [1003]
    # the reference: the same chain advanced by separate runs, read between them
    rng, chain = np.random.default_rng(5), sampler.start(gloss(options))
    expected = [(0, chain.derivation)]
    for lo, hi in zip(traced.trace_steps[:-1], traced.trace_steps[1:]):
        sampler.run(chain, rng, int(hi - lo), temperature=0.7)
        expected.append((int(hi), chain.derivation))
    assert traced.trace() == expected
    trace = []
    found = sample_decode(tiny, options, np.random.default_rng(5), 1003, temperature=0.7, trace=trace, trace_every=50,
                          global_features=list(globals_))
    assert found == sample_decode(tiny, options, np.random.default_rng(5), 1003, temperature=0.7,
                                  global_features=list(globals_))
    assert [(s, d) for s, d, _ in trace] == expected
    for _, d, score in trace:
        assert score == pytest.approx(sampler.features(d) @ sampler.weights, abs=1e-9)
