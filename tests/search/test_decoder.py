import dataclasses
import math

import numpy as np
import pytest

from pbmt.model.model import SearchSettings, TranslationModel
from pbmt.search.decoder import best_paths, decode, decode_paths, search
from pbmt.search.derivation import Derivation, score_derivation
from pbmt.search.options import TranslationOptions
from pbmt.search.output import NBestList, derivation_from_entry, word_alignment

from enumeration import all_derivations

NO_PRUNING = dict(stack_size=10**6, beam_threshold=0.0)
# both searches; cube pruning with no pop limit explores every extension the stack search does
SEARCHES = {"stack": dict(search="stack"), "cube": dict(search="cube", pop_limit=0)}


@pytest.fixture(scope="module")
def tiny(tiny_model_dir):
    return TranslationModel.load(tiny_model_dir / "moses.ini")


SENTENCES = ["a b c", "c a e b", "a b c d e", "e d c b a", "b x a d"]


@pytest.mark.parametrize("search", SEARCHES)
@pytest.mark.parametrize("sentence", SENTENCES)
@pytest.mark.parametrize("limit", [2, -1])
def test_exhaustive_best_and_nbest(tiny, sentence, limit, search):
    model = dataclasses.replace(tiny, settings=SearchSettings(**NO_PRUNING, **SEARCHES[search], distortion_limit=limit))
    options = TranslationOptions.build(model, model.vocab.ids(sentence.split()))
    everything = all_derivations(options, limit)
    scores = np.array([score_derivation(d, options, model) @ model.weights for d in everything])
    # exhaustive top-k over distinct target strings
    best_by_string = {}
    for d, s in zip(everything, scores):
        key = tuple(d.target_words(options))
        best_by_string[key] = max(best_by_string.get(key, -math.inf), s)
    expected = sorted(best_by_string.values(), reverse=True)[:25]

    nbest = decode(model, options, n_best=25, distinct=True)
    assert nbest[0].score == pytest.approx(scores.max(), abs=1e-9)
    np.testing.assert_allclose([e.score for e in nbest], expected, atol=1e-9)
    assert len({tuple(e.derivation.target_words(options)) for e in nbest}) == len(nbest)

    # without distinct: every derivation, best first, each once
    every = decode(model, options, n_best=len(everything) + 5)
    assert len(every) == len(everything) and len(set(e.derivation for e in every)) == len(every)
    np.testing.assert_allclose([e.score for e in every], np.sort(scores)[::-1], atol=1e-9)
    for e in every:
        assert e.derivation.covers(options.n_words)
        assert score_derivation(e.derivation, options, model) @ model.weights == pytest.approx(e.score, abs=1e-9)


def test_unknown_word_passes_through_with_penalty(tiny):
    options = TranslationOptions.build(tiny, tiny.vocab.ids("a zzz b".split()))
    best = decode(tiny, options)[0].derivation
    assert "zzz" in tiny.vocab.words(best.target_words(options))
    features = tiny.layout.as_dict(score_derivation(best, options, tiny))
    assert features["UnknownWordPenalty0"] == (-100.0,)


def test_unknown_numbers_and_punctuation_are_copied_without_penalty(tiny):
    words = "a 12 zzz 3,5 b ¡".split()
    options = TranslationOptions.build(tiny, tiny.vocab.ids(words))
    found = decode(tiny, options, n_best=5)
    for entry in found:
        target = tiny.vocab.words(entry.derivation.target_words(options))
        assert {"12", "zzz", "3,5", "¡"} <= set(target)
        features = score_derivation(entry.derivation, options, tiny)
        assert tiny.layout.as_dict(features)["UnknownWordPenalty0"] == (-100.0,)  # zzz only
        assert features @ tiny.weights == pytest.approx(entry.score, abs=1e-9)


@pytest.mark.parametrize("settings", [dict(search="stack"), dict(search="cube", pop_limit=4)])
def test_pruned_search_scores_equal_rescoring(tiny, settings):
    options = TranslationOptions.build(tiny, tiny.vocab.ids("e d c b a".split()))
    model = dataclasses.replace(tiny, settings=SearchSettings(stack_size=3, distortion_limit=2, **settings))
    for entry in decode(model, options, n_best=20):
        assert score_derivation(entry.derivation, options, model) @ model.weights == pytest.approx(entry.score, abs=1e-9)


@pytest.mark.parametrize("settings", [dict(search="stack"), dict(search="cube", pop_limit=4)])
def test_a_graph_without_arcs_has_the_same_best_derivation(tiny, settings):
    options = TranslationOptions.build(tiny, tiny.vocab.ids("e d c b a".split()))
    model = dataclasses.replace(tiny, settings=SearchSettings(stack_size=3, distortion_limit=2, **settings))
    full, lean = search(model, options, arcs=True), search(model, options, arcs=False)
    assert len(lean.parent) < len(full.parent)
    assert np.array_equal(np.unique(lean.klass), np.unique(full.klass))  # every class keeps its best member
    for graph in (full, lean):
        assert graph.final_class >= 0
    [best_full], [best_lean] = best_paths(options, full, 1), best_paths(options, lean, 1)
    assert best_lean.derivation == best_full.derivation and best_lean.score == best_full.score
    assert decode(model, options)[0].derivation == best_full.derivation


def test_derivation_views():
    d = Derivation(np.array([2, 0, 4]), np.array([4, 2, 5]), np.array([7, 3, 9]))
    assert d.jumps().tolist() == [2, -4, 2]
    assert d.orientations().tolist() == [2, 0, 2]  # NEUTRAL, LEFT, NEUTRAL
    assert Derivation([0, 1], [1, 2], [0, 1]).orientations().tolist() == [1, 1]  # RIGHT, RIGHT
    assert hash(d) == hash(Derivation([2, 0, 4], [4, 2, 5], [7, 3, 9])) and d == Derivation([2, 0, 4], [4, 2, 5], [7, 3, 9])
    assert d != Derivation([2, 0, 4], [4, 2, 5], [7, 3, 8])
    assert d.covers(5) and not d.covers(6) and not Derivation([0, 1], [2, 3], [0, 0]).covers(3)


def test_nbest_entries_carry_the_features_of_score_derivation(tiny):
    model = dataclasses.replace(tiny, settings=SearchSettings(stack_size=5, distortion_limit=2))
    options = TranslationOptions.build(model, model.vocab.ids("e d c b a".split()))
    found = decode(model, options, n_best=15)
    entries = NBestList(7, found, options, model)
    assert len(entries) == len(found) > 1
    for scored, entry in zip(found, entries):
        d = scored.derivation
        assert entry.sentence == 7 and entry.total == scored.score
        assert entry.features == model.layout.as_dict(score_derivation(d, options, model))
        assert entry.text == " ".join(model.vocab.words(d.target_words(options)))
        assert tuple(entry.alignment) == tuple(word_alignment(d, options, model))
        assert derivation_from_entry(entry, options, model) == d
    assert entries.text() == "".join(entry.to_line() + "\n" for entry in entries)
    assert NBestList(7, decode_paths(model, options, n_best=15), options, model) == entries  # from the arrays
