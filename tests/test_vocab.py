"""pbmt.base.vocab: ids given in bulk are those ``add`` gives one word at a time."""

import numpy as np
from hypothesis import HealthCheck, given, settings, strategies as st

from pbmt.base.vocab import UNK, Overlay, Vocab

WORDS = st.lists(st.sampled_from(["a", "b", "<s>", "</s>", "<unk>", "casa", "ümlaut", "x y", ""]), max_size=30)


@given(WORDS, WORDS)
def test_bulk_ids_are_the_word_by_word_ids(first, second):
    bulk, one_by_one = Vocab(first), Vocab()
    for word in first:
        one_by_one.add(word)
    ids = bulk.ids(iter(second))  # any iterable, a generator too
    assert ids.dtype == np.int32 and ids.tolist() == [one_by_one.add(word) for word in second]
    assert bulk.words(range(len(bulk))) == one_by_one.words(range(len(one_by_one)))
    assert {w: bulk.get(w) for w in first + second} == {w: one_by_one.get(w) for w in first + second}


def test_ids_without_adding_are_unk_for_unseen_words_and_leave_the_vocabulary_alone():
    vocab = Vocab(["a", "b"])
    assert vocab.ids(["b", "zz", "a", "zz"], add=False).tolist() == [4, UNK, 3, UNK]
    assert len(vocab) == 5 and "zz" not in vocab
    assert vocab.ids([]).tolist() == [] and len(vocab) == 5


@settings(suppress_health_check=[HealthCheck.too_slow])  # three lists a case: slow to draw on a busy machine
@given(WORDS, WORDS, WORDS)
def test_an_overlays_ids_and_words_are_its_word_by_word_ones(base, extra, asked):
    """``Overlay.ids`` and ``words`` in bulk against ``get`` and ``word`` one word at a time: the base's ids for
    its words, the overlay's own above them, UNK for words in neither; ``words`` of a list, an array or a range."""
    vocab = Vocab(base)
    overlay = vocab.overlay(extra)
    assert isinstance(overlay, Overlay) and len(vocab) == len(Vocab(base))
    ids = overlay.ids(iter(asked))
    assert ids.dtype == np.int32 and ids.tolist() == [overlay.get(w) for w in asked]
    every = range(len(overlay))
    expected = [overlay.word(i) for i in every]
    assert overlay.words(every) == overlay.words(list(every)) == overlay.words(np.arange(len(overlay))) == expected
    assert expected[len(vocab):] == list(dict.fromkeys(w for w in extra if w not in vocab))
    assert vocab.words(np.arange(len(vocab), dtype=np.int32)) == vocab.words(range(len(vocab)))
