"""One integer id space for every word a session sees.

The phrase table (both sides) and every language model map their words into
the same ``Vocab``, so numba kernels only ever see ``int32`` ids. A source word
and a target word with the same spelling share an id, which is what lets an
unknown source word pass through untranslated.
"""

from __future__ import annotations

from typing import Iterable, Sequence

import numpy as np

UNK, BOS, EOS = 0, 1, 2
SPECIAL_WORDS = ("<unk>", "<s>", "</s>")


class Vocab:
    """Interning table between words and ids (``int32``).

    Ids 0, 1, 2 are ``<unk>``, ``<s>`` and ``</s>``; every other word gets the
    next free id the first time it is added. Ids never change once given.
    """

    def __init__(self, words: Iterable[str] = ()):
        self._ids: dict[str, int] = {}
        self._words: list[str] = []
        for word in SPECIAL_WORDS:
            self.add(word)
        self.ids(words)

    def __len__(self) -> int:
        return len(self._words)

    def __contains__(self, word: str) -> bool:
        return word in self._ids

    def add(self, word: str) -> int:
        """The id of ``word``, given a new id if it has none yet."""
        found = self._ids.get(word)
        if found is None:
            found = self._ids[word] = len(self._words)
            self._words.append(word)
        return found

    def get(self, word: str) -> int:
        """The id of ``word``, or ``UNK`` (0) if it has none."""
        return self._ids.get(word, UNK)

    def ids(self, words: Iterable[str], add: bool = True) -> np.ndarray:
        """Ids of ``words`` as an ``int32`` array; unseen words are added (or UNK)."""
        lookup = self.add if add else self.get
        return np.fromiter((lookup(w) for w in words), dtype=np.int32)

    def word(self, word_id: int) -> str:
        """The word with id ``word_id``."""
        return self._words[word_id]

    def words(self, ids: Sequence[int] | np.ndarray) -> list[str]:
        """The words of a sequence of ids."""
        table = self._words
        return [table[i] for i in ids]
