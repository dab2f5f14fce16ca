"""Sentence-level repetition of target n-grams."""

from __future__ import annotations

import numpy as np

from pbmt.base.errors import PbmtError
from pbmt.features._repetition_kernels import repeated_ngrams
from pbmt.features.base import Candidates, Hypothesis, SentenceFeature
from pbmt.features.registry import register
from pbmt.base.vocab import Vocab

DEFAULT_MAX_ORDER = 3


@register("repetition", prefix="Repetition", takes_argument=None)
class Repetition(SentenceFeature):
    """Minus the repeated target n-grams of a sentence, for n = 2 .. N.

    For each order n, the number of positions i of the target sentence whose
    n-gram e[i:i+n] already occurred at an earlier position of the same
    sentence, negated (≤ 0; a position counts once however many earlier
    copies there are: "of the lord of the lord" has 2 repeated bigrams and 1
    repeated trigram). The argument is N (default 3); the feature has N - 1
    columns.
    """

    def __init__(self, argument: str | None, vocab: Vocab):
        try:
            self.max_order = DEFAULT_MAX_ORDER if argument is None else int(argument)
        except ValueError:
            self.max_order = 0
        if self.max_order < 2:
            raise PbmtError(f"repetition: the argument is the largest n-gram order, at least 2; got {argument!r}")
        self.size = self.max_order - 1

    def sentence_values(self, hypothesis: Hypothesis) -> np.ndarray:
        return self._values(np.array([0, len(hypothesis.target)], np.int64), hypothesis.target)[0]

    def candidate_values(self, candidates: Candidates) -> np.ndarray:
        return self._values(*candidates.target_words())

    def _values(self, offsets: np.ndarray, words: np.ndarray) -> np.ndarray:
        offsets = np.ascontiguousarray(offsets, np.int64)
        words = np.ascontiguousarray(words, np.int32)
        return -np.stack([repeated_ngrams(offsets, words, n) for n in range(2, self.max_order + 1)],
                         axis=1).astype(np.float64)
