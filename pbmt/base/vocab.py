"""One integer id space for every word a session sees.

The phrase table (both sides) and every language model map their words into
the same ``Vocab``, so numba kernels only ever see ``int32`` ids. A source word
and a target word with the same spelling share an id, which is what lets an
unknown source word pass through untranslated.

A loaded model's ``Vocab`` is shared (by every sentence, and rebuilt
identically in every worker process from the model's files), so input text
never adds to it: the words of one input the model does not know get ids in
an ``Overlay`` scoped to that input (a sentence, a document, a tuning set),
numbered from the base's size up. The n-gram LM maps every such id to <unk>
(``pbmt.model.lm``), as it maps any word it does not know.
"""

from __future__ import annotations

from dataclasses import dataclass, field
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
        """Ids of ``words`` as an ``int32`` array; unseen words are added (or UNK), in the order first seen, as
        ``add`` one word at a time would. A table's or an LM's tens of thousands of words at a load are
        looked up in bulk (C loops over the dictionary, not a Python call a word)."""
        words = words if isinstance(words, (list, tuple)) else list(words)
        if not add:
            return np.fromiter(map(self.get, words), dtype=np.int32, count=len(words))
        known = self._ids
        fresh = [word for word in dict.fromkeys(words) if word not in known]
        known.update(zip(fresh, range(len(self._words), len(self._words) + len(fresh))))
        self._words.extend(fresh)
        return np.fromiter(map(known.__getitem__, words), dtype=np.int32, count=len(words))

    def word(self, word_id: int) -> str:
        """The word with id ``word_id``."""
        return self._words[word_id]

    def words(self, ids: Sequence[int] | np.ndarray) -> list[str]:
        """The words of a sequence of ids."""
        table = self._words
        return [table[i] for i in (ids.tolist() if isinstance(ids, np.ndarray) else ids)]

    def overlay(self, words: Iterable[str]) -> "Overlay":
        """An ``Overlay`` giving ``words`` not in this vocabulary ids of their own (in first-seen order), without
        adding them here."""
        size = len(self._words)
        extra: dict[str, int] = {}
        for word in words:
            if word not in self._ids and word not in extra:
                extra[word] = size + len(extra)
        return Overlay(self, size, tuple(extra), extra)


@dataclass(frozen=True, eq=False)
class Overlay:
    """A vocabulary seen from one input: the shared ``base`` (ids below ``size``, its length when the overlay was
    made) and ``extra``, the input's words the base does not know, with ids ``size``, ``size + 1``, ...

    It reads like a ``Vocab`` (``get``, ``ids`` without adding, ``word``, ``words``, ``in``, ``len``), so code
    that turns ids back into words takes either.
    """

    base: Vocab
    size: int
    extra: tuple[str, ...]
    _extra_ids: dict[str, int] = field(repr=False)

    def __len__(self) -> int:
        return self.size + len(self.extra)

    def __contains__(self, word: str) -> bool:
        return word in self._extra_ids or word in self.base

    def get(self, word: str) -> int:
        """The id of ``word`` (base or overlay), or ``UNK`` (0) if it has none."""
        found = self._extra_ids.get(word)
        return self.base.get(word) if found is None else found

    def ids(self, words: Iterable[str], add: bool = False) -> np.ndarray:
        """Ids of ``words`` as an ``int32`` array (UNK for words in neither part); an overlay never grows."""
        extra, known = self._extra_ids, self.base._ids
        words = words if isinstance(words, (list, tuple)) else list(words)
        return np.fromiter((known.get(w, UNK) if (found := extra.get(w)) is None else found for w in words),
                           dtype=np.int32, count=len(words))

    def word(self, word_id: int) -> str:
        """The word with id ``word_id``."""
        return self.extra[word_id - self.size] if word_id >= self.size else self.base.word(word_id)

    def words(self, ids: Sequence[int] | np.ndarray) -> list[str]:
        """The words of a sequence of ids."""
        table, size, extra = self.base._words, self.size, self.extra
        return [table[i] if i < size else extra[i - size]
                for i in (ids.tolist() if isinstance(ids, np.ndarray) else map(int, ids))]
