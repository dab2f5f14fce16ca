"""Translation options against a brute-force layout: every span looked up one by one in the phrase table's own
source phrases, unknown words passed through, markup translations merged, the future-cost table from every
segmentation of every span."""

import dataclasses
import itertools
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pbmt.base.markup import Markup, SpanTranslations
from pbmt.model.model import TranslationModel
from pbmt.model.phrase_table import PhrasePairs
from pbmt.search.options import MARKUP, UNKNOWN, TranslationOptions

WORDS = ["a", "b", "c", "d", "e", "x", "5", "!?", "é"]  # a-e: the tiny table's source words; the rest unknown


@pytest.fixture(scope="module")
def tiny(tiny_model_dir):
    return TranslationModel.load(tiny_model_dir / "moses.ini")


def _source_phrases(model):
    p = model.phrases
    return {tuple(p.src_words[p.src_offsets[k]:p.src_offsets[k + 1]].tolist()): k
            for k in range(len(p.src_offsets) - 1)}


def _unknown_row(model, vocab, word_id):
    """An unknown word passed through, scored one by one."""
    letterless = not any(c.isalpha() for c in vocab.word(word_id))
    one = np.array([0, 1])
    ids = np.array([word_id], np.int32)
    estimate = model.estimate(PhrasePairs(one, ids, one, ids, one, np.zeros((1, 2), np.int16), np.ones(1, bool),
                                          vocab))[0]
    return dict(candidate=UNKNOWN, tgt=[word_id], align=[(0, 0)],
                local=model.unknown_word_local(letterless=letterless), reordering=np.zeros(model.reordering.shape[1]),
                lm_estimate=estimate)


def _expected_rows(model, options, width):
    """(start, end, row) of every option, sorted by (start, length), a span's candidates in the table's order."""
    phrases, table = _source_phrases(model), model.phrases
    sentence = options.sentence.tolist()
    rows = []
    for i in range(len(sentence)):
        for length in range(1, min(width, len(sentence) - i) + 1):
            phrase = phrases.get(tuple(sentence[i:i + length]))
            if phrase is None:
                if length == 1:
                    rows.append((i, i + 1, _unknown_row(model, options.vocab, sentence[i])))
                continue
            for c in range(table.cand_offsets[phrase], table.cand_offsets[phrase + 1]):
                rows.append((i, i + length, dict(
                    candidate=c, tgt=table.target(c).tolist(),
                    align=[tuple(r) for r in table.align[table.align_offsets[c]:table.align_offsets[c + 1]].tolist()],
                    local=model.cand_local[c], reordering=model.reordering[c], lm_estimate=model.cand_lm_estimate[c])))
    return rows


def _check(options, model, rows, width):
    assert options.max_length == width
    assert options.start.tolist() == [s for s, _, _ in rows] and options.start.dtype == np.int32
    assert options.end.tolist() == [e for _, e, _ in rows] and options.end.dtype == np.int32
    assert options.candidate.tolist() == [r["candidate"] for _, _, r in rows]
    assert [options.target(o).tolist() for o in range(len(options))] == [r["tgt"] for _, _, r in rows]
    assert [[tuple(a) for a in options.align[options.align_offsets[o]:options.align_offsets[o + 1]].tolist()]
            for o in range(len(options))] == [r["align"] for _, _, r in rows]
    assert options.align.dtype == np.int16 and options.align.shape[1:] == (2,)
    n_features, n_reordering = model.layout.size, model.reordering.shape[1]
    np.testing.assert_array_equal(options.local, np.array([r["local"] for _, _, r in rows]).reshape(-1, n_features))
    np.testing.assert_array_equal(options.reordering,
                                  np.array([r["reordering"] for _, _, r in rows]).reshape(-1, n_reordering))
    np.testing.assert_allclose(options.lm_estimate, [r["lm_estimate"] for _, _, r in rows], rtol=1e-12)
    np.testing.assert_allclose(options.local_score, options.local @ model.weights, rtol=1e-12)
    n = options.n_words
    for i in range(n):
        for j in range(i + 1, min(n, i + width) + 1):
            assert [options.start[o] == i and options.end[o] == j for o in options.span(i, j)] == \
                   [True] * sum(s == i and e == j for s, e, _ in rows)
    best = {}
    for o in range(len(options)):
        key = (int(options.start[o]), int(options.end[o]))
        best[key] = max(best.get(key, -math.inf), options.local_score[o] + options.lm_estimate[o])
    for i, j in itertools.combinations(range(n + 1), 2):
        every = [sum(best.get((a, b), -math.inf) for a, b in zip((i, *cuts), (*cuts, j)))
                 for k in range(j - i) for cuts in itertools.combinations(range(i + 1, j), k)]
        assert options.future[i, j] == pytest.approx(max(every), rel=1e-12) if max(every) > -math.inf \
            else options.future[i, j] == -math.inf


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(words=st.lists(st.sampled_from(WORDS), max_size=7), max_length=st.integers(1, 4))
def test_options_are_every_spans_candidates_and_the_unknown_words(tiny, words, max_length):
    model = dataclasses.replace(tiny, settings=dataclasses.replace(tiny.settings, max_phrase_length=max_length))
    options = TranslationOptions.of_words(model, words)
    width = max(1, min(max_length, len(words)))
    _check(options, model, _expected_rows(model, options, width), width)
    python = TranslationOptions.of_words(model, words, compiled=False)  # the layout kernel's Python, uncompiled
    _check(python, model, _expected_rows(model, python, width), width)
    for field in dataclasses.fields(options):  # the same arrays and types: the searches compile for these
        ours, theirs = getattr(options, field.name), getattr(python, field.name)
        if isinstance(ours, np.ndarray):
            assert ours.dtype == theirs.dtype and ours.shape == theirs.shape, field.name
            np.testing.assert_array_equal(ours, theirs, err_msg=field.name)


def test_an_empty_sentence_has_no_options_and_one_future_cell(tiny):
    options = TranslationOptions.of_words(tiny, [])
    assert len(options) == 0 and options.span_offsets.tolist() == [0]
    assert options.future.shape == (1, 1)


def test_the_longest_phrase_is_found_only_within_max_phrase_length(tiny):
    """"a b c" is a source phrase of the table: a span of three words needs max_phrase_length 3."""
    for max_length, found in ((2, False), (3, True)):
        model = dataclasses.replace(tiny, settings=dataclasses.replace(tiny.settings, max_phrase_length=max_length))
        options = TranslationOptions.of_words(model, ["a", "b", "c"])
        assert options.max_length == max_length
        assert any(options.end - options.start == 3) == found


@pytest.mark.parametrize("use", ["exclusive", "inclusive"])
def test_markup_translations_join_the_table_options_in_span_order(tiny, use):
    """A tag over ``c d`` gives two translations: in exclusive use they replace every option overlapping the
    span (the unknown word inside it too), in inclusive use they join them; either way after the span's own."""
    words = ["a", "x", "c", "d", "e"]
    span = SpanTranslations(1, 4, (("the", "lord"), ("moses",)), (0.5, 1.0))
    markup = Markup((span,), use)
    options = TranslationOptions.of_words(tiny, words, markup)
    width = max(tiny.settings.max_phrase_length, 3)
    width = min(width, len(words))
    rows = [r for r in _expected_rows(tiny, options, width)
            if use == "inclusive" or r[1] <= span.start or r[0] >= span.end]
    for k, (target, log_p) in enumerate(zip(span.translations, span.log_probs())):
        ids = options.vocab.ids(target)
        pairs = PhrasePairs(np.array([0, 3]), options.sentence[1:4], np.array([0, len(ids)]), ids,
                            np.array([0, 3 * len(ids)]),
                            np.array([(s, t) for s in range(3) for t in range(len(ids))], np.int16),
                            np.zeros(1, bool), options.vocab)
        reordering = np.hstack([t.pair_scores(*(np.asarray(x) for x in (pairs.src_offsets, pairs.src_words,
                                                                             pairs.tgt_offsets, pairs.tgt_words)))
                                for t in tiny.reordering_tables])[0]
        rows.append((1, 4, dict(candidate=MARKUP - k, tgt=ids.tolist(),
                                align=[(s, t) for s in range(3) for t in range(len(ids))],
                                local=tiny.markup_local(len(ids), log_p), reordering=reordering,
                                lm_estimate=tiny.estimate(pairs)[0])))
    rows.sort(key=lambda r: (r[0], r[1] - r[0]))  # stable: the table's and unknown words' before the given
    _check(options, tiny, rows, width)
    assert (options.candidate <= MARKUP).sum() == 2
