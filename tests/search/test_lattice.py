import dataclasses
import itertools

import numpy as np
import pytest

from pbmt.model.model import SearchSettings, TranslationModel
from pbmt.search.decoder import best_paths, search
from pbmt.search.derivation import Derivation, score_derivation
from pbmt.search._lattice_point_kernels import point_space, sample_points
from pbmt.search.lattice import Lattices, graph_lattice, hypothesis_features
from pbmt.search.options import TranslationOptions

from lattice_paths import complete_paths


@pytest.fixture(scope="module")
def tiny(tiny_model_dir):
    return TranslationModel.load(tiny_model_dir / "moses.ini")


def graph_of(model, sentence):
    options = TranslationOptions.build(model, model.vocab.ids(sentence.split()))
    return options, search(model, options, arcs=True)


def path_derivation(lattice, options, path):
    """The derivation of a lattice path."""
    return Derivation.from_options(options, lattice.sentence_option[lattice.option[path]])


def searched(shared, index):
    """The shared model, and the translation options and search graph (with arcs) of dev line ``index``."""
    model, lines = shared
    options = TranslationOptions.build(model, model.vocab.ids(lines[index].split()))
    return model, options, search(model, options, arcs=True)


@pytest.mark.parametrize("index", [0, 7, 400])
def test_hypothesis_features_reproduce_decoder_scores(shared, index):
    model, options, graph = searched(shared, index)
    deltas = hypothesis_features(graph, options, model)
    totals = deltas.copy()
    for h in range(1, len(totals)):
        totals[h] += totals[graph.parent[h]]
    np.testing.assert_allclose(totals @ model.weights, graph.score, rtol=0, atol=1e-6)
    # every complete hypothesis: its accumulated vector is score_derivation of its derivation
    complete = np.flatnonzero(graph.klass == graph.final_class)
    for h in complete[:50]:
        chosen = []
        g = int(h)
        while g > 0:
            chosen.append(int(graph.option[g]))
            g = int(graph.parent[g])
        derivation = Derivation.from_options(options, chosen[::-1])
        np.testing.assert_allclose(totals[h], score_derivation(derivation, options, model), rtol=0, atol=1e-6)


@pytest.mark.parametrize("index", [0, 400])
def test_lattice_paths_of_nbest_derivations(shared, index):
    """The n-best derivations are lattice paths whose summed edge features are score_derivation's."""
    model, options, graph = searched(shared, index)
    lattice = graph_lattice(graph, options, model)
    features = lattice.features()
    key_of = {}
    for e in range(lattice.n_edges):
        key_of.setdefault((int(lattice.source[e]), int(lattice.sentence_option[lattice.option[e]])), e)
    for found in best_paths(options, graph, 30):
        node, total = 0, np.zeros(model.layout.size)
        for o in found.derivation.option:
            e = key_of[(node, int(o))]
            total += features[e]
            node = int(lattice.target[e])
        assert node == lattice.n_nodes - 1
        np.testing.assert_allclose(total, score_derivation(found.derivation, options, model), rtol=0, atol=1e-6)
        assert total @ model.weights == pytest.approx(found.score, abs=1e-6)


def dev_lattices(shared, n):
    """The shared model's lattices of the first n dev lines."""
    return [graph_lattice(graph, options, model) for model, options, graph in (searched(shared, i) for i in range(n))]


def test_edge_scores_equal_features_times_vector(shared):
    model, _ = shared
    lattices = dev_lattices(shared, 3)
    joined = Lattices.concatenate(lattices)
    vector = np.random.default_rng(3).standard_normal(model.layout.size)
    expected = np.concatenate([x.features() @ vector for x in lattices])
    np.testing.assert_allclose(joined.scores(vector), expected, rtol=1e-12, atol=1e-9)


def test_near_lattices_score_only_the_options_their_edges_use(shared):
    """A near lattice shares every option of the whole; its scores, from the options its edges use alone,
    equal its edges' features times the vector."""
    model, _ = shared
    joined = Lattices.concatenate(dev_lattices(shared, 3))
    a = joined.scores(model.weights)
    near = joined.near(a, 0.5)
    assert len(near._used_options[0]) < len(joined.joined.local)
    vector = np.random.default_rng(5).standard_normal(model.layout.size)
    np.testing.assert_allclose(near.scores(vector), near.joined.features() @ vector, rtol=1e-12, atol=1e-9)


def brute_envelope(lines, low, high):
    """The upper envelope of (intercept, slope) lines over [low, high]: the highest line between consecutive
    pairwise crossings, merged where it does not change. Returns (breakpoints, lines in order)."""
    a, b = lines[:, 0], lines[:, 1]
    xs = {low, high} if np.isfinite(low) and np.isfinite(high) else set()
    for i, j in itertools.combinations(range(len(lines)), 2):
        if b[i] != b[j]:
            x = (a[i] - a[j]) / (b[j] - b[i])
            if low < x < high:
                xs.add(x)
    xs = sorted(xs)
    span = max(1.0, max((abs(x) for x in xs), default=1.0))
    probes = ([xs[0] - span] if not np.isfinite(low) and xs else []) + \
        [0.5 * (u + v) for u, v in zip(xs, xs[1:])] + ([xs[-1] + span] if not np.isfinite(high) and xs else [])
    if not xs:
        probes = [0.0]
    best = []
    for p in probes:
        values = a + p * b
        top = values.max()
        winners = np.flatnonzero(values >= top - 1e-9)
        best.append(max(winners, key=lambda i: (b[i] if p > 0 else -b[i])))
    order, bounds = [best[0]], []
    for k in range(1, len(best)):
        i, j = order[-1], best[k]
        if abs(a[i] - a[j]) > 1e-9 or abs(b[i] - b[j]) > 1e-9:
            bounds.append((a[i] - a[j]) / (b[j] - b[i]))
            order.append(j)
    return np.array(bounds), lines[order]


@pytest.mark.parametrize("sentence", ["a b c", "c a e b", "b d a", "e d c b a", "a c e"])
@pytest.mark.parametrize("segment", [(-np.inf, np.inf), (-0.3, 0.8)])
def test_envelope_equals_enumerated_paths(tiny, sentence, segment):
    model = dataclasses.replace(tiny, settings=SearchSettings(stack_size=10**6, beam_threshold=0.0,
                                                              distortion_limit=2))
    options, graph = graph_of(model, sentence)
    lattice = graph_lattice(graph, options, model)
    joined = Lattices.concatenate([lattice])
    rng = np.random.default_rng(len(sentence))
    w, d = model.weights, rng.standard_normal(model.layout.size)
    a, b = joined.scores(w), joined.scores(d)
    ids = np.arange(len(lattice.words), dtype=np.int32)
    env = joined.envelopes(a, b, ids, *segment)
    paths = complete_paths(lattice)
    assert len(paths) > 10
    lines = np.array([[a[p].sum(), b[p].sum()] for p in paths])
    # every path is a complete derivation whose features are score_derivation's
    features = lattice.features()
    for p in paths[:: max(1, len(paths) // 20)]:
        derivation = path_derivation(lattice, options, p)
        assert derivation.covers(options.n_words)
        np.testing.assert_allclose(features[p].sum(axis=0), score_derivation(derivation, options, model),
                                   rtol=0, atol=1e-9)
    bounds, expected = brute_envelope(lines, *segment)
    got = np.column_stack([env.intercept, env.slope])
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-9)
    got_bounds = (env.intercept[:-1] - env.intercept[1:]) / (env.slope[1:] - env.slope[:-1])
    np.testing.assert_allclose(got_bounds, bounds, rtol=0, atol=1e-9)
    # each envelope line's words are those of an enumerated path with that line
    for i in range(len(env.intercept)):
        words = env.words[env.word_offsets[i]:env.word_offsets[i + 1]]
        same = [p for p, line in zip(paths, lines) if np.allclose(line, got[i], atol=1e-9)]
        assert any(np.array_equal(np.concatenate([ids[lattice.word_offsets[lattice.option[e]]:
                                                      lattice.word_offsets[lattice.option[e] + 1]] for e in p]),
                                  words) for p in same)


def test_envelopes_of_many_sentences_are_each_sentences(tiny):
    """Concatenated lattices give each sentence the envelope it has alone (the CSR bookkeeping)."""
    model = tiny
    lattices = [graph_lattice(*reversed(graph_of(model, s)), model) for s in ["a b c", "e d c b a", "d e"]]
    d = np.random.default_rng(5).standard_normal(model.layout.size)
    joined = Lattices.concatenate(lattices)
    env = joined.envelopes(joined.scores(model.weights), joined.scores(d), np.arange(len(joined.words)))
    for s, lattice in enumerate(lattices):
        alone = Lattices.concatenate([lattice])
        single = alone.envelopes(alone.scores(model.weights), alone.scores(d), np.arange(len(alone.words)))
        lo, hi = env.line_offsets[s], env.line_offsets[s + 1]
        np.testing.assert_allclose(env.intercept[lo:hi], single.intercept)
        np.testing.assert_allclose(env.slope[lo:hi], single.slope)
        texts = [joined.words[env.words[env.word_offsets[i]:env.word_offsets[i + 1]]].tolist() for i in range(lo, hi)]
        alone_texts = [alone.words[single.words[single.word_offsets[i]:single.word_offsets[i + 1]]].tolist()
                       for i in range(len(single.intercept))]
        assert texts == alone_texts


def test_envelopes_on_threads_and_pruned_are_the_sweep_alone(shared, monkeypatch):
    """Blocks of sentences on threads and the lines dropped at the sample points change no envelope: the
    shared model's graphs of a few dev lines, along random directions over bounded segments and along every
    coordinate over a climb's long segment (where each line is tested only where its node's envelope has it
    highest), at 5 or 17 points, with or without the rounds that split the segment where the best paths change
    (6 rounds: until the work space has no room left), against one thread with no pruning."""
    import pbmt.search.lattice as lattice_module

    model, _ = shared
    lattices = dev_lattices(shared, 4)
    joined = Lattices.concatenate(lattices)
    rng = np.random.default_rng(8)
    a = joined.scores(model.weights / np.abs(model.weights).sum())
    ids = np.arange(len(joined.words), dtype=np.int32)
    randoms = [(rng.standard_normal(model.layout.size) / model.layout.size, low, high)
               for low, high in [(-0.3, 0.2), (-0.05, 0.6), (0.0, 0.01)]]
    directions = [(direction, low, high, None, rounds) for direction, low, high in randoms for rounds in (0, 2)]
    directions += [(np.eye(model.layout.size)[k], -0.05, 2.0, samples, rounds) for k in range(model.layout.size)
                   for samples, rounds in ((None, 0), (17, 0), (None, lattice_module.COORDINATE_ROUNDS), (3, 6))]
    for direction, low, high, samples, rounds in directions:
        b = joined.scores(direction)
        envelopes = [joined.envelopes(a, b, ids, low, high, threads=n, samples=samples, rounds=rounds)
                     for n in (1, 2, 3)]
        monkeypatch.setattr(lattice_module, "SAMPLES", 0)
        alone = joined.envelopes(a, b, ids, low, high, threads=1)
        monkeypatch.undo()
        assert len(alone.intercept) > len(lattices) or np.count_nonzero(direction) == 1  # a coordinate may move no path
        for env in envelopes:
            for name in ("line_offsets", "intercept", "slope", "word_offsets", "words"):
                np.testing.assert_array_equal(getattr(env, name), getattr(alone, name))


@pytest.mark.parametrize("sentence", ["a b c", "c a e b", "e d c b a"])
def test_split_points_find_the_enumerated_envelope(tiny, sentence):
    """Splitting a segment at the crossing of its ends' best lines until nothing splits finds, by Viterbi
    passes alone, every line of the sentence's envelope over the segment as the best path at some point (the
    envelope of the enumerated paths); the points are in increasing order and each node's best completion and
    best prefix there are the enumerated paths' highest."""
    model = dataclasses.replace(tiny, settings=SearchSettings(stack_size=10**6, beam_threshold=0.0,
                                                              distortion_limit=2))
    options, graph = graph_of(model, sentence)
    lattice = graph_lattice(graph, options, model)
    joined = Lattices.concatenate([lattice])
    d = np.random.default_rng(len(sentence)).standard_normal(model.layout.size)
    a, b = joined.scores(model.weights), joined.scores(d)
    paths = complete_paths(lattice)
    lines = np.array([[a[p].sum(), b[p].sum()] for p in paths])
    low, high = -2.0, 3.0
    _, expected = brute_envelope(lines, low, high)
    assert len(expected) > 2
    cap, rows = 256, lattice.n_nodes
    space = point_space(rows, cap)
    n = sample_points(0, lattice.n_edges, lattice.n_nodes, lattice.source, lattice.target, a, b,
                      np.array([low, high]), 50, space)
    assert n < cap
    points = space.gamma[:n]
    assert np.all(np.diff(points) > 0) and points[0] == low and points[-1] == high
    best = space.best if n > 2 else space.col_best
    found = {round(float(slope), 9) for slope in space.best_slope[:n]}
    assert found == {round(float(slope), 9) for slope in expected[:, 1]}
    np.testing.assert_allclose(best[0, :n], [np.max(lines[:, 0] + g * lines[:, 1]) for g in points], atol=1e-9)
    for v in range(lattice.n_nodes):
        into = [p for p in paths if v == 0 or v in lattice.target[p]]
        at = [list(lattice.target[p]).index(v) + 1 if v else 0 for p in into]
        prefix = [max(a[p[:k]].sum() + g * b[p[:k]].sum() for p, k in zip(into, at)) for g in points]
        completion = [max(a[p[k:]].sum() + g * b[p[k:]].sum() for p, k in zip(into, at)) for g in points]
        np.testing.assert_allclose(space.prefix[v, :n], prefix, atol=1e-9)
        np.testing.assert_allclose(best[v, :n], completion, atol=1e-9)
