"""Sentence-level target/source length ratio, against the training corpus's ratio."""

from __future__ import annotations

import math

import numpy as np

from pbmt.base.errors import PbmtError
from pbmt.features.base import Candidates, Hypothesis, SentenceFeature
from pbmt.features.registry import register
from pbmt.base.files import read_lines
from pbmt.base.vocab import Vocab


@register("length-ratio", prefix="LengthRatio", takes_argument=None, needs_sources=True)
class LengthRatio(SentenceFeature):
    """Minus the absolute log deviation of a sentence's length ratio from the training corpus's.

    With |e| target and |f| source words and the corpus ratio r (target
    tokens over source tokens of the training corpus), the value is

        -| ln((|e| + 1) / (|f| + 1)) - ln r |

    (natural log; ≤ 0, 0 when the sentence has the corpus's ratio; the +1
    keeps empty sentences finite). The argument gives r: a number, or
    ``SOURCE_FILE+TARGET_FILE``, the tokenised training corpus, whose token
    counts are divided. Without one, r = 1. One column.
    """

    def __init__(self, argument: str | None, vocab: Vocab):
        self.ratio = corpus_ratio(argument) if argument is not None else 1.0
        self._log_ratio = math.log(self.ratio)

    def sentence_values(self, hypothesis: Hypothesis) -> np.ndarray:
        return self._value(np.array([len(hypothesis.target)]), len(hypothesis.source))[:, None]

    def candidate_values(self, candidates: Candidates) -> np.ndarray:
        offsets, _ = candidates.target_words()
        return self._value(np.diff(offsets), candidates.options.n_words)[:, None]

    def _value(self, target_lengths: np.ndarray, source_length: int) -> np.ndarray:
        return -np.abs(np.log((target_lengths + 1.0) / (source_length + 1.0)) - self._log_ratio)


def corpus_ratio(argument: str) -> float:
    """r of ``LengthRatio``: the number ``argument``, or the token ratio of files ``SOURCE+TARGET``."""
    if "+" not in argument:
        try:
            ratio = float(argument)
        except ValueError:
            raise PbmtError(f"length-ratio: the argument is a ratio or SOURCE_FILE+TARGET_FILE, got {argument!r}") \
                from None
    else:
        source, target = argument.split("+", 1)
        counts = [sum(len(line.split()) for _, line in read_lines(path)) for path in (source, target)]
        if not counts[0]:
            raise PbmtError(f"length-ratio: {source} has no tokens")
        ratio = counts[1] / counts[0]
    if not ratio > 0 or not math.isfinite(ratio):
        raise PbmtError(f"length-ratio: the ratio must be positive, got {ratio}")
    return ratio
