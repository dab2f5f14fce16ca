"""Word-class induction: deterministic, better than its start, its objective equal to a from-scratch one;
its bigram counts equal to a Counter's, whatever the chunks they are counted in."""

from collections import Counter

import numpy as np
import pytest

import pbmt.train.word_classes
from pbmt.train.word_classes import class_objective, count_bigrams, induce_classes


@pytest.fixture(scope="module")
def text(bible, tmp_path_factory):
    path = tmp_path_factory.mktemp("classes") / "text.en"
    path.write_text("\n".join((bible / "train.tok.en").read_text(encoding="utf-8").splitlines()[:400]) + "\n",
                    encoding="utf-8")
    return path


def test_exchange_improves_the_objective_deterministically(text):
    first = induce_classes(text, n_classes=8, max_passes=4)
    again = induce_classes(text, n_classes=8, max_passes=4)
    assert first.classes.words == again.classes.words
    np.testing.assert_array_equal(first.classes.classes, again.classes.classes)
    assert np.all(np.diff(first.objectives) >= -1e-6)  # no pass makes it worse
    assert first.objectives[-1] > first.objectives[0] + 100  # and it is much better than the start
    assert first.objectives[-1] == pytest.approx(class_objective(first.classes, text), rel=1e-12)
    assert first.moved[0] > 0 and len(set(first.classes.classes.tolist())) == 8


def test_the_start_is_words_by_frequency_dealt_out(text):
    start = induce_classes(text, n_classes=5, max_passes=0)
    assert start.objectives == (pytest.approx(class_objective(start.classes, text)),)
    np.testing.assert_array_equal(start.classes.classes[:10], [0, 1, 2, 3, 4, 0, 1, 2, 3, 4])
    with pytest.raises(ValueError, match="fewer than the"):
        induce_classes(text, n_classes=10**6)


def test_bigram_counts_equal_a_counter_of_the_lines_in_any_chunks(text, monkeypatch):
    lines = [line.split() for line in text.read_text(encoding="utf-8").splitlines()]
    unigrams = Counter(w for words in lines for w in words)
    pairs = Counter(p for words in lines for p in zip(words, words[1:]))
    whole = count_bigrams(text)
    assert whole.words == tuple(sorted(unigrams, key=lambda w: (-unigrams[w], w)))
    assert whole.counts.tolist() == [unigrams[w] for w in whole.words]
    got = {(whole.words[a], whole.words[b]): c
           for a, b, c in zip(whole.first.tolist(), whole.second.tolist(), whole.pair_counts.tolist())}
    assert got == pairs
    assert list(zip(whole.first.tolist(), whole.second.tolist())) == sorted(zip(whole.first.tolist(),
                                                                                whole.second.tolist()))

    reference = induce_classes(text, n_classes=8, max_passes=3)
    monkeypatch.setattr(pbmt.train.word_classes, "_CHUNK_TOKENS", 100)  # lines cut into many chunks
    monkeypatch.setattr(pbmt.train.word_classes, "_MERGE_AT", 500)  # and merged often
    chunked = count_bigrams(text)
    for field in ("counts", "first", "second", "pair_counts"):
        np.testing.assert_array_equal(getattr(chunked, field), getattr(whole, field))
    again = induce_classes(text, n_classes=8, max_passes=3)
    assert again.classes.words == reference.classes.words and again.objectives == reference.objectives
    np.testing.assert_array_equal(again.classes.classes, reference.classes.classes)
