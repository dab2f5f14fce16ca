"""pbmt.base.vocab: ids given in bulk are those ``add`` gives one word at a time."""

import numpy as np
from hypothesis import given, strategies as st

from pbmt.base.vocab import UNK, Vocab

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
