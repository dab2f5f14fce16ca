"""What a global (sentence- or document-level) feature is: the base classes features are written against.

A global feature maps the hypotheses of a document (its sentences'
translations, ``Hypothesis``) to a few named values. Dense features are sums
of block-local terms, which the decoders score while they search; a global
feature may look at a whole sentence or at every sentence of a document at
once, so only the sampler (``pbmt.search.sampler``), SampleRank and n-best
rescoring can use it. They call it through the protocols of
``pbmt.search.hypothesis`` (``DocumentFeature``, ``Candidates``), which the
classes here implement:

- ``values(document)``: ``float64[size]`` for a list of hypotheses (one per
  sentence, in document order). A sentence-level feature is the sum over the
  sentences of ``SentenceFeature.sentence_values``; a document is then just
  its sentences.
- incrementally, for the sampler: ``start(document)`` makes a state,
  ``delta(state, j, candidates)`` gives ``float64[len(candidates), size]``,
  the values of the document with sentence ``j`` replaced by each candidate
  minus its current values, and ``move(state, j, candidates, c)`` makes
  candidate ``c`` current. The defaults recompute ``values`` from scratch;
  a feature overrides them when it can do better (the built-in ones do).

``Candidates`` are the members of a sampler neighbourhood: each is the
current hypothesis of sentence ``j`` with the blocks ``removed`` replaced by
the blocks ``added(c)``; ``hypothesis(c)`` builds one in full and
``target_words()`` gives every candidate's target words at once.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from pbmt.search.hypothesis import Candidates, DocumentFeature, DocumentScores, Hypothesis, feature_values

__all__ = ["Candidates", "DocumentFeature", "DocumentScores", "GlobalFeature", "Hypothesis", "SentenceFeature",
           "feature_values"]


class GlobalFeature(DocumentFeature):
    """A feature of a whole document's (or sentence's) hypotheses: see the module docstring.

    Subclasses set ``size`` (number of values) and implement ``values``;
    ``names`` (one column name, as in a moses.ini: ``Name0``) is given by the
    registry. ``document_level`` says whether the value depends on several
    sentences together (False: it is a sum over sentences).
    """

    size: int = 1
    document_level: bool = True
    names: tuple[str, ...] = ()

    def values(self, document: Sequence[Hypothesis]) -> np.ndarray:
        """``float64[size]`` for the document's hypotheses (one per sentence, in order)."""
        raise NotImplementedError

    def start(self, document: Sequence[Hypothesis]) -> Any:
        """The incremental state of ``document`` (default: its hypotheses and values)."""
        document = list(document)
        return [document, np.asarray(self.values(document), np.float64)]

    def delta(self, state: Any, j: int, candidates: Candidates) -> np.ndarray:
        """``float64[len(candidates), size]``: values with sentence ``j`` as each candidate, minus the current."""
        document, current = state
        out = np.zeros((len(candidates), self.size))
        for c in range(len(candidates)):
            if c != candidates.current:
                changed = document[:j] + [candidates.hypothesis(c)] + document[j + 1:]
                out[c] = np.asarray(self.values(changed), np.float64) - current
        return out

    def move(self, state: Any, j: int, candidates: Candidates, c: int) -> Any:
        """The state after sentence ``j`` became candidate ``c``."""
        document, _ = state
        document = document[:j] + [candidates.hypothesis(c)] + document[j + 1:]
        return [document, np.asarray(self.values(document), np.float64)]


class SentenceFeature(GlobalFeature):
    """A global feature that is a sum over sentences: implement ``sentence_values``."""

    document_level = False

    def sentence_values(self, hypothesis: Hypothesis) -> np.ndarray:
        """``float64[size]`` of one sentence's hypothesis."""
        raise NotImplementedError

    def _row(self, hypothesis: Hypothesis) -> np.ndarray:
        """``sentence_values`` as float64[size]; ValueError saying how many values it gave otherwise."""
        values = np.asarray(self.sentence_values(hypothesis), np.float64)
        if values.size != self.size:
            raise ValueError(f"sentence_values gave {values.size} values, not {self.size} (the feature's size)")
        return values.reshape(self.size)

    def values(self, document: Sequence[Hypothesis]) -> np.ndarray:
        total = np.zeros(self.size)
        for h in document:
            total += self._row(h)
        return total

    def candidate_values(self, candidates: Candidates) -> np.ndarray:
        """``float64[len(candidates), size]``: each candidate's ``sentence_values`` (override to batch)."""
        return np.array([self._row(candidates.hypothesis(c)) for c in range(len(candidates))])

    def start(self, document: Sequence[Hypothesis]) -> Any:
        return [self._row(h) for h in document]

    def delta(self, state: Any, j: int, candidates: Candidates) -> np.ndarray:
        out = self.candidate_values(candidates) - state[j]
        out[candidates.current] = 0.0
        return out

    def move(self, state: Any, j: int, candidates: Candidates, c: int) -> Any:
        state = list(state)
        state[j] = state[j] + self.delta(state, j, candidates)[c]
        return state
