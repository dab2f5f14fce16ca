"""A further n-gram language model as a sentence-level feature (a second LM)."""

from __future__ import annotations

import math

import numpy as np

from pbmt.features.base import Candidates, Hypothesis, SentenceFeature
from pbmt.features.registry import register
from pbmt.model.lm import NgramLM
from pbmt.base.vocab import Vocab


@register("lm", prefix="LM", takes_argument=True)
class LanguageModel(SentenceFeature):
    """Natural-log probability of the target sentence with <s> and </s> under the ARPA LM given as argument.

    KenLM's log10 score times ln 10, like the decoder's ``LM0``; one column.
    Loading adds the LM's words to the vocabulary.
    """

    def __init__(self, argument: str, vocab: Vocab):
        self.lm = NgramLM.load(argument, vocab)

    def sentence_values(self, hypothesis: Hypothesis) -> np.ndarray:
        return self._scores(np.array([0, len(hypothesis.target)], np.int64), hypothesis.target)

    def candidate_values(self, candidates: Candidates) -> np.ndarray:
        return self._scores(*candidates.target_words())[:, None]

    def nbest_values(self, lists) -> np.ndarray:
        """``float64[n_cand, 1]`` for every entry of ``NBestLists`` (one kernel call)."""
        return self._scores(*lists.words)[:, None]

    def _scores(self, offsets: np.ndarray, words: np.ndarray) -> np.ndarray:
        return math.log(10.0) * self.lm.score_sentences(offsets, words)
