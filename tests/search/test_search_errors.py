"""Search errors against model errors (Wisniewski et al. 2010's protocol) on the tiny model, against
brute-force enumeration; the bootstrap summary against a direct count."""

import dataclasses
import math

import numpy as np
import pytest

from pbmt.model.model import SearchSettings, TranslationModel
from pbmt.search.decoder import decode
from pbmt.search.derivation import model_score
from pbmt.search.forced import ForcedDecoder
from pbmt.search.options import TranslationOptions
from pbmt.search.search_errors import SentenceAnalysis, Verdict, analyze_sentence, summarize

from support import TINY_SOURCES
from enumeration import all_derivations


@pytest.fixture(scope="module")
def tiny(tiny_model_dir):
    return TranslationModel.load(tiny_model_dir / "moses.ini")


def reference_best(model, options, reference):
    scores = [model_score(d, options, model) for d in all_derivations(options, model.settings.distortion_limit)
              if options.vocab.words(d.target_words(options)) == reference]
    return max(scores) if scores else math.nan


@pytest.mark.parametrize("settings", [dict(stack_size=10**6, beam_threshold=0.0, search="stack"),
                                      dict(stack_size=1, search="stack"), dict(stack_size=2, pop_limit=2)])
def test_verdicts_follow_the_scores_of_enumeration(tiny, tiny_dev, settings):
    model = dataclasses.replace(tiny, settings=SearchSettings(distortion_limit=2, **settings))
    forced = ForcedDecoder(model)
    refs = (tiny_dev / "dev.ref").read_text().splitlines() + ["the lord", "zebra"]
    sources = TINY_SOURCES + ["a b c", "a"]
    verdicts = set()
    for source, ref in zip(sources, refs):
        options = TranslationOptions.of_words(model, source.split())
        analysis = analyze_sentence(model, options, ref.split(), forced)
        best = decode(model, options)[0]
        expected = reference_best(model, options, ref.split())
        assert analysis.best_score == pytest.approx(best.score, abs=1e-9)
        verdicts.add(analysis.verdict)
        if math.isnan(expected):
            assert analysis.verdict is Verdict.UNREACHABLE and analysis.reason
            continue
        assert analysis.reference_score == pytest.approx(expected, abs=1e-6)
        if list(analysis.best) == ref.split():
            assert analysis.verdict is Verdict.CORRECT
        elif expected > best.score + 1e-6:
            assert analysis.verdict is Verdict.SEARCH_ERROR
            assert analysis.pruned_by in ("stack size", "beam threshold", "pop limit", "all together",
                                          "more than these")
        else:
            assert analysis.verdict is Verdict.MODEL_ERROR
    if settings["stack_size"] > 1000:
        assert Verdict.SEARCH_ERROR not in verdicts  # an exhaustive search makes none
    assert Verdict.UNREACHABLE in verdicts


def test_a_search_error_names_the_pruning_that_lost_it(tiny):
    model = dataclasses.replace(tiny, settings=SearchSettings(distortion_limit=2, stack_size=1, search="stack",
                                                              beam_threshold=0.0))
    found = 0
    for source in TINY_SOURCES:
        options = TranslationOptions.of_words(model, source.split())
        every = decode(model, options, n_best=1,
                       settings=dataclasses.replace(model.settings, stack_size=10**6))[0]
        reference = options.vocab.words(every.derivation.target_words(options))
        analysis = analyze_sentence(model, options, reference, ForcedDecoder(model))
        if analysis.verdict is Verdict.SEARCH_ERROR:
            found += 1
            assert analysis.reference_score == pytest.approx(every.score, abs=1e-6)
            assert analysis.pruned_by in ("stack size", "more than these")
    assert found


def test_summary_counts_shares_and_intervals():
    verdicts = [Verdict.CORRECT] * 2 + [Verdict.SEARCH_ERROR] * 3 + [Verdict.MODEL_ERROR] * 5 + \
        [Verdict.UNREACHABLE] * 10
    analyses = [SentenceAnalysis(v, 0.0, 0.0, ()) for v in verdicts]
    shares = summarize(analyses, samples=2000, seed=3)
    assert shares["unreachable"].count == 10 and shares["unreachable"].share == 0.5
    assert shares["reachable"].share == 0.5
    errors = shares["search error, of reachable errors"]
    assert errors.count == 3 and errors.total == 8
    for share in shares.values():
        assert share.low <= share.share <= share.high
    # the interval of a share of 20 sentences is about share ± 2 standard errors
    width = shares["unreachable"].high - shares["unreachable"].low
    assert width == pytest.approx(4 * np.sqrt(0.5 * 0.5 / 20), rel=0.25)
    assert summarize(analyses, samples=2000, seed=3) == shares
