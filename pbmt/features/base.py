"""What a global (sentence- or document-level) feature is, and what it sees.

A global feature maps the hypotheses of a document (its sentences'
translations, ``Hypothesis``) to a few named values. Dense features are sums
of block-local terms, which the stack decoder scores while it searches; a
global feature may look at a whole sentence or at every sentence of a
document at once, so only the sampler (``pbmt.search.sampler``), SampleRank
and n-best rescoring can use it.

A feature is a ``GlobalFeature``:

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

from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

if TYPE_CHECKING:
    from pbmt.model.model import TranslationModel
    from pbmt.search.derivation import Derivation
    from pbmt.search.options import TranslationOptions
    from pbmt.search.sampler import Neighbourhood


@dataclass(frozen=True, eq=False)
class Hypothesis:
    """One sentence's translation as a global feature sees it.

    ``source``: ``int32[n]`` source word ids; ``target``: ``int32[m]`` target
    word ids (one id space: the model's vocabulary, or the n-best lists');
    ``alignment``: ``int32[a, 2]`` (source position, target position) word
    links sorted by source then target position, or None when unknown (an
    n-best list without alignments). ``derivation`` and ``options``: the
    derivation it comes from, when it comes from one.
    """

    source: np.ndarray
    target: np.ndarray
    alignment: np.ndarray | None = None
    derivation: "Derivation | None" = field(default=None, repr=False)
    options: "TranslationOptions | None" = field(default=None, repr=False)

    def __post_init__(self):
        object.__setattr__(self, "source", np.asarray(self.source, np.int32))
        object.__setattr__(self, "target", np.asarray(self.target, np.int32))
        if self.alignment is not None:
            links = np.asarray(self.alignment, np.int32).reshape(-1, 2)
            object.__setattr__(self, "alignment", links[np.lexsort((links[:, 1], links[:, 0]))])

    @classmethod
    def of(cls, derivation: "Derivation", options: "TranslationOptions", model: "TranslationModel") -> "Hypothesis":
        """The hypothesis of a derivation: word links from the phrase pairs' internal alignments."""
        from pbmt.search.output import word_alignment

        return cls(options.sentence, derivation.target_words(options),
                   np.array(word_alignment(derivation, options, model), np.int32).reshape(-1, 2),
                   derivation, options)

    def translations(self) -> list[tuple[int, ...]]:
        """For each source position, the target word ids linked to it, in target order (``()``: none).

        Raises ValueError when the alignment is unknown.
        """
        if self.alignment is None:
            raise ValueError("the hypothesis has no word alignment")
        out: list[list[int]] = [[] for _ in range(len(self.source))]
        for s, t in self.alignment:
            out[s].append(int(self.target[t]))
        return [tuple(words) for words in out]


class Candidates:
    """The members of a sampler neighbourhood of one sentence, for global features' deltas.

    ``current``: the index of the unchanged member. Member ``c`` is the
    current derivation with the blocks of options ``removed`` (the same for
    every member) replaced by the blocks of options ``added(c)``; both cover
    the same source words.
    """

    def __init__(self, neighbourhood: "Neighbourhood", model: "TranslationModel"):
        self.neighbourhood = neighbourhood
        self.model = model
        self.options = neighbourhood.options
        self.current = neighbourhood.current
        nb = neighbourhood
        base = nb.base.option
        kept = set(range(nb.mid_lo, nb.mid_hi))
        self.removed = np.array([base[b] for b in range(nb.lo, nb.hi) if b not in kept], np.int32)
        self._hypotheses: dict[int, Hypothesis] = {}

    def __len__(self) -> int:
        return len(self.neighbourhood)

    def added(self, c: int) -> np.ndarray:
        """Options (``int32[1 or 2]``) member ``c`` puts in place of ``removed``."""
        nb = self.neighbourhood
        if c == nb.current:
            return self.removed
        return np.array([nb.first[c]] if nb.second[c] < 0 else [nb.first[c], nb.second[c]], np.int32)

    def hypothesis(self, c: int) -> Hypothesis:
        """Member ``c`` in full (built once)."""
        if c not in self._hypotheses:
            self._hypotheses[c] = Hypothesis.of(self.neighbourhood.derivation(c), self.options, self.model)
        return self._hypotheses[c]

    @cached_property
    def _words(self) -> tuple[np.ndarray, np.ndarray]:
        from pbmt.tune._samplerank_kernels import neighbour_words

        nb = self.neighbourhood
        return neighbour_words(nb.base.option, nb.lo, nb.hi, nb.mid_lo, nb.mid_hi, nb.first, nb.second,
                               self.options.tgt_offsets, self.options.tgt_words)

    def target_words(self) -> tuple[np.ndarray, np.ndarray]:
        """Every member's target words as CSR: (``int64[len + 1]`` offsets, ``int32`` word ids)."""
        return self._words


class GlobalFeature:
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

    def values(self, document: Sequence[Hypothesis]) -> np.ndarray:
        total = np.zeros(self.size)
        for h in document:
            total += np.asarray(self.sentence_values(h), np.float64).reshape(self.size)
        return total

    def candidate_values(self, candidates: Candidates) -> np.ndarray:
        """``float64[len(candidates), size]``: each candidate's ``sentence_values`` (override to batch)."""
        return np.array([np.asarray(self.sentence_values(candidates.hypothesis(c)), np.float64).reshape(self.size)
                         for c in range(len(candidates))])

    def start(self, document: Sequence[Hypothesis]) -> Any:
        return [np.asarray(self.sentence_values(h), np.float64).reshape(self.size) for h in document]

    def delta(self, state: Any, j: int, candidates: Candidates) -> np.ndarray:
        out = self.candidate_values(candidates) - state[j]
        out[candidates.current] = 0.0
        return out

    def move(self, state: Any, j: int, candidates: Candidates, c: int) -> Any:
        state = list(state)
        state[j] = state[j] + self.delta(state, j, candidates)[c]
        return state


class DocumentScores:
    """The global features of one document, kept up to date as the sampler moves its sentences.

    ``values``: ``float64[sum of sizes]``, the features' current values in
    order.
    """

    def __init__(self, features: Sequence[GlobalFeature], document: Sequence[Hypothesis]):
        self.features = tuple(features)
        self.states = [f.start(document) for f in self.features]
        self.values = feature_values(self.features, document)

    def delta(self, j: int, candidates: Candidates) -> np.ndarray:
        """``float64[len(candidates), sum of sizes]``: change of every value if sentence ``j`` became each candidate."""
        parts = [np.asarray(f.delta(s, j, candidates), np.float64).reshape(len(candidates), f.size)
                 for f, s in zip(self.features, self.states)]
        return np.hstack(parts) if parts else np.zeros((len(candidates), 0))

    def move(self, j: int, candidates: Candidates, c: int, delta: np.ndarray) -> None:
        """Make candidate ``c`` sentence ``j``'s hypothesis; ``delta`` is its row of ``self.delta``."""
        self.states = [f.move(s, j, candidates, c) for f, s in zip(self.features, self.states)]
        self.values = self.values + delta


def feature_values(features: Sequence[GlobalFeature], document: Sequence[Hypothesis]) -> np.ndarray:
    """Every feature's values on ``document``, concatenated: ``float64[sum of sizes]``."""
    parts = [np.asarray(f.values(document), np.float64).reshape(f.size) for f in features]
    return np.concatenate(parts) if parts else np.zeros(0)
