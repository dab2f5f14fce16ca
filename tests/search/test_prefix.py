"""Prefix-constrained decoding against brute-force enumeration on the tiny model, in both spaces."""

import dataclasses
from collections import defaultdict

import numpy as np
import pytest

from pbmt.model.model import SearchSettings, TranslationModel
from pbmt.search.decoder import decode
from pbmt.search.derivation import model_score
from pbmt.search.forced import Unreachable, prefix_decode
from pbmt.search.options import TranslationOptions

from enumeration import all_derivations, mon_swap_derivations

SENTENCES = ["a b c", "c a e b", "a b c d e", "b x a d"]
NO_PRUNING = dict(stack_size=10**6, beam_threshold=0.0, pop_limit=0)
SPACES = {"distortion-2": dict(distortion_limit=2), "mon-swap": dict(reordering="mon-swap")}
SEARCHES = ("stack", "cube")


@pytest.fixture(scope="module")
def tiny(tiny_model_dir):
    return TranslationModel.load(tiny_model_dir / "moses.ini")


def best_by_output(model, options):
    """Every target string of the space -> the best model score of a derivation producing it."""
    if model.settings.reordering == "mon-swap":
        derivations = mon_swap_derivations(options)
    else:
        derivations = all_derivations(options, model.settings.distortion_limit)
    best = defaultdict(lambda: -np.inf)
    for d in derivations:
        words = tuple(options.vocab.words(d.target_words(options)))
        best[words] = max(best[words], model_score(d, options, model))
    return best


def prefixes(outputs):
    """(complete words, unfinished word) prefixes of the outputs: every word boundary, and a cut inside
    every word."""
    out = set()
    for words in outputs:
        for k in range(len(words) + 1):
            out.add((words[:k], ""))
            if k < len(words):
                out.add((words[:k], words[k][:max(1, len(words[k]) // 2)]))
    return sorted(out)


def matches(words, prefix, partial):
    k = len(prefix)
    if words[:k] != prefix:
        return False
    return not partial or (len(words) > k and words[k].startswith(partial))


@pytest.mark.parametrize("search", SEARCHES)
@pytest.mark.parametrize("space", SPACES)
@pytest.mark.parametrize("sentence", SENTENCES)
def test_prefix_completions_equal_enumeration(tiny, sentence, space, search):
    """With no pruning, stack decoding and cube pruning (every cell popped) past the prefix are exact."""
    model = dataclasses.replace(tiny, settings=SearchSettings(**NO_PRUNING, **SPACES[space], search=search))
    options = TranslationOptions.of_words(model, sentence.split())
    best = best_by_output(model, options)
    for prefix, partial in prefixes(best):
        expected = sorted((score for words, score in best.items() if matches(words, prefix, partial)), reverse=True)
        result = prefix_decode(model, options, list(prefix), partial, n_best=4)
        assert result.reachable == bool(expected)
        if not expected:
            continue
        assert prefix_decode(model, options, list(prefix), partial).found[0].score == pytest.approx(expected[0])
        # the best distinct completions, best first, with the score of score_derivation
        np.testing.assert_allclose([f.score for f in result.found], expected[:4], atol=1e-6)
        for f in result.found:
            words = tuple(options.vocab.words(f.derivation.target_words(options)))
            assert matches(words, prefix, partial)
            assert f.derivation.covers(options.n_words)
            assert model_score(f.derivation, options, model) == pytest.approx(f.score, abs=1e-6)


@pytest.mark.parametrize("sentence", SENTENCES)
def test_an_empty_prefix_is_the_models_own_search(tiny, sentence):
    options = TranslationOptions.of_words(tiny, sentence.split())
    found = prefix_decode(tiny, options, [], n_best=3).found
    expected = decode(tiny, options, n_best=3, distinct=True)
    assert [f.derivation for f in found] == [e.derivation for e in expected]


def test_a_prefix_no_phrase_produces_says_which_word(tiny):
    options = TranslationOptions.of_words(tiny, "a b c".split())
    result = prefix_decode(tiny, options, ["zebra"], "")
    assert not result.reachable and result.reason is Unreachable.REFERENCE_WORD and "'zebra' (word 1)" in result.detail
    result = prefix_decode(tiny, options, [], "zeb")
    assert not result.reachable and "'zeb…' (word 1)" in result.detail


@pytest.mark.parametrize("search", SEARCHES)
def test_pruned_completion_keeps_the_prefix(tiny, search):
    """With the model's pruning the completion is approximate, but it still begins with the prefix and its
    score is its model score."""
    model = dataclasses.replace(tiny, settings=SearchSettings(stack_size=2, distortion_limit=2, pop_limit=3,
                                                              search=search))
    options = TranslationOptions.of_words(model, "e d c b a".split())
    best = best_by_output(model, options)
    for prefix, partial in prefixes(list(best)[:20]):
        for f in prefix_decode(model, options, list(prefix), partial, n_best=3).found:
            assert matches(tuple(options.vocab.words(f.derivation.target_words(options))), prefix, partial)
            assert model_score(f.derivation, options, model) == pytest.approx(f.score, abs=1e-6)
