"""Forced decoding against brute-force enumeration of every derivation on the tiny model, in both spaces."""

import dataclasses
from collections import defaultdict

import numpy as np
import pytest

from pbmt.model.model import SearchSettings, TranslationModel
from pbmt.search.derivation import model_score
from pbmt.search.forced import ForcedDecoder, Unreachable
from pbmt.search.options import TranslationOptions

from enumeration import all_derivations, mon_swap_derivations

SENTENCES = ["a b c", "c a e b", "a b c d e", "e d c b a", "b x a d"]
SPACES = {"distortion-2": dict(distortion_limit=2), "distortion-0": dict(distortion_limit=0),
          "mon-swap": dict(reordering="mon-swap")}


@pytest.fixture(scope="module")
def tiny(tiny_model_dir):
    return TranslationModel.load(tiny_model_dir / "moses.ini")


def enumerate_space(options, settings):
    if settings.reordering == "mon-swap":
        return mon_swap_derivations(options)
    return all_derivations(options, settings.distortion_limit)


def by_output(model, options, derivations):
    """Every target string the derivations produce -> their model scores from scratch."""
    out = defaultdict(list)
    for d in derivations:
        out[tuple(options.vocab.words(d.target_words(options)))].append(model_score(d, options, model))
    return out


@pytest.mark.parametrize("space", SPACES)
@pytest.mark.parametrize("sentence", SENTENCES)
def test_forced_best_equals_enumeration(tiny, sentence, space):
    model = dataclasses.replace(tiny, settings=SearchSettings(**SPACES[space]))
    options = TranslationOptions.of_words(model, sentence.split())
    outputs = by_output(model, options, enumerate_space(options, model.settings))
    forced = ForcedDecoder(model)
    for reference, scores in outputs.items():
        result = forced.decode(options, list(reference), n_best=len(scores) + 3)
        assert result.reachable and result.reason is None
        # every derivation of the reference, best first, scored as score_derivation scores it
        np.testing.assert_allclose([f.score for f in result.found], sorted(scores, reverse=True), atol=1e-6)
        for f in result.found:
            assert tuple(options.vocab.words(f.derivation.target_words(options))) == reference
            assert f.derivation.covers(options.n_words)
            assert model_score(f.derivation, options, model) == pytest.approx(f.score, abs=1e-6)
        assert len(set(f.derivation for f in result.found)) == len(result.found)


@pytest.mark.parametrize("space", SPACES)
@pytest.mark.parametrize("sentence", SENTENCES)
def test_unreachable_references_are_those_no_derivation_produces(tiny, sentence, space):
    model = dataclasses.replace(tiny, settings=SearchSettings(**SPACES[space]))
    options = TranslationOptions.of_words(model, sentence.split())
    reachable = set(by_output(model, options, enumerate_space(options, model.settings)))
    # candidates: every output of the unlimited space (some need more reordering), and perturbations
    everything = set(by_output(model, options, all_derivations(options, -1)))
    candidates = set(everything)
    for words in everything:
        candidates.add(words[:-1])
        candidates.add(words[1:] + words[:1])
        candidates.add(words + ("the",))
    forced = ForcedDecoder(model)
    for reference in candidates:
        result = forced.decode(options, list(reference))
        assert result.reachable == (reference in reachable), reference
        if not result.reachable:
            assert result.reason is not None
            if reference in everything:
                # the derivations exist in the unlimited space: the reordering limit is why
                assert result.reason in (Unreachable.DISTORTION_LIMIT, Unreachable.MON_SWAP)


def test_reasons_name_the_words(tiny):
    model = dataclasses.replace(tiny, settings=SearchSettings(distortion_limit=2))
    options = TranslationOptions.of_words(model, "a b c".split())
    forced = ForcedDecoder(model)
    result = forced.decode(options, "the zebra".split())
    assert result.reason is Unreachable.REFERENCE_WORD and "'zebra' (word 2)" in result.detail
    # an unknown source word passes through: it is reachable only with itself in the reference
    options = TranslationOptions.of_words(model, "b x".split())
    assert not forced.decode(options, [w for w in "the".split()]).reachable
    reachable = [r for r in by_output(model, options, all_derivations(options, 2))]
    assert all("x" in r for r in reachable)
    assert forced.decode(options, list(reachable[0])).reachable
    # an empty reference of a sentence with words (a blank line in the references) is named as such
    assert forced.decode(TranslationOptions.of_words(model, "a b c".split()), []).reason is Unreachable.EMPTY


def test_search_limit_is_a_reason(tiny):
    model = dataclasses.replace(tiny, settings=SearchSettings(distortion_limit=-1))
    options = TranslationOptions.of_words(model, "a b c d e".split())
    reference = next(iter(by_output(model, options, all_derivations(options, -1))))
    result = ForcedDecoder(model, max_hypotheses=2).decode(options, list(reference))
    assert not result.reachable and result.reason is Unreachable.SEARCH_LIMIT


def test_table_limit_is_found(tiny_model_dir):
    """A reference only a candidate beyond the table limit produces is unreachable for that reason."""
    full = TranslationModel.load(tiny_model_dir / "moses.ini")
    options = TranslationOptions.of_words(full, ["a"])
    targets = [tuple(options.vocab.words(options.target(o))) for o in options.span(0, 1)]
    assert len(targets) >= 2
    limited = TranslationModel.load(tiny_model_dir / "moses.ini", SearchSettings(table_limit=1))
    options = TranslationOptions.of_words(limited, ["a"])
    produced = {tuple(options.vocab.words(options.target(o))) for o in options.span(0, 1)}
    pruned = [t for t in targets if t not in produced]
    assert len(produced) == 1 and pruned
    result = ForcedDecoder(limited).decode(options, list(pruned[0]))
    assert result.reason is Unreachable.TABLE_LIMIT


# Moses 1's ConstrainedDecoding (path=REFS max-unknowns=0, stack 1000) on the first 100 dev sentences of the
# shared model: the references it reaches and its best scores as printed (benchmarks/bench_forced.py).
MOSES_REACHED = {9: -19.5813, 12: -37.3489, 46: -40.2975, 47: -45.4298, 62: -46.6014, 70: -41.4323,
                 73: -5.67802, 74: -34.4392, 92: -36.2007}


def test_reaches_every_reference_moses_reaches_with_a_score_at_least_its(shared, bible):
    model, lines = shared
    refs = (bible / "dev.tok.en").read_text(encoding="utf-8").splitlines()
    forced = ForcedDecoder(model)
    for k, moses in MOSES_REACHED.items():
        options = TranslationOptions.of_words(model, lines[k].split())
        result = forced.decode(options, refs[k].split())
        assert result.reachable, (k, result.reason)
        assert result.found[0].score >= moses - 5e-6 * abs(moses)
        best = result.found[0]
        assert model_score(best.derivation, options, model) == pytest.approx(best.score, abs=1e-6)
    # Moses's beam loses sentence 68's reference; the exact search does not
    options = TranslationOptions.of_words(model, lines[68].split())
    assert forced.decode(options, refs[68].split(), explain=False).reachable
