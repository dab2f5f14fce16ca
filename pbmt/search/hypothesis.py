"""What global (sentence- or document-level) features see, and the interface the searches call them through.

A global feature maps the hypotheses of a document (its sentences'
translations, ``Hypothesis``) to a few named values. The sampler, document
decoding and rescoring call it through ``DocumentFeature``, and the sampler
hands it the members of a neighbourhood as ``Candidates``; both are
protocols, so the searches need nothing of ``pbmt.features``, which holds
the base classes features are written against (``GlobalFeature``,
``SentenceFeature``) and the registry of built-in kinds.
``DocumentScores`` keeps a document's values up to date as the sampler moves
its sentences; ``score_document`` recomputes every value from scratch, the
reference the sampler's deltas are tested against.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, Sequence

import numpy as np

from pbmt.model.model import TranslationModel
from pbmt.search.derivation import Derivation, score_derivation
from pbmt.search.options import TranslationOptions
from pbmt.search.output import word_alignment


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
    derivation: Derivation | None = field(default=None, repr=False)
    options: TranslationOptions | None = field(default=None, repr=False)

    def __post_init__(self):
        object.__setattr__(self, "source", np.asarray(self.source, np.int32))
        object.__setattr__(self, "target", np.asarray(self.target, np.int32))
        if self.alignment is not None:
            links = np.asarray(self.alignment, np.int32).reshape(-1, 2)
            object.__setattr__(self, "alignment", links[np.lexsort((links[:, 1], links[:, 0]))])

    @classmethod
    def of(cls, derivation: Derivation, options: TranslationOptions, model: TranslationModel) -> "Hypothesis":
        """The hypothesis of a derivation: word links from the phrase pairs' internal alignments."""
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


class Candidates(Protocol):
    """The members of a sampler neighbourhood of one sentence, as a global feature's ``delta`` sees them.

    ``current``: the index of the unchanged member. Member ``c`` is the
    current derivation with the blocks of options ``removed`` (``int32``, the
    same for every member) replaced by the blocks of options ``added(c)``;
    both cover the same source words. ``options``: the sentence's options.
    """

    current: int
    removed: np.ndarray
    options: TranslationOptions

    def __len__(self) -> int: ...

    def added(self, c: int) -> np.ndarray:
        """Options (``int32[1 or 2]``) member ``c`` puts in place of ``removed``."""

    def hypothesis(self, c: int) -> Hypothesis:
        """Member ``c`` in full."""

    def target_words(self) -> tuple[np.ndarray, np.ndarray]:
        """Every member's target words as CSR: (``int64[len + 1]`` offsets, ``int32`` word ids)."""


class DocumentFeature(Protocol):
    """A global feature as the searches call it (``pbmt.features.GlobalFeature`` implements it).

    ``size`` values named ``names``; ``document_level``: whether the value depends on several sentences
    together (False: it is a sum over sentences). ``values(document)``: ``float64[size]`` for the
    hypotheses of a document, one per sentence in order. Incrementally, for the sampler: ``start(document)``
    makes a state, ``delta(state, j, candidates)`` gives ``float64[len(candidates), size]``, the values with
    sentence ``j`` replaced by each candidate minus the current ones, and ``move(state, j, candidates, c)``
    returns the state after candidate ``c`` became sentence ``j``.
    """

    size: int
    names: tuple[str, ...]
    document_level: bool

    def values(self, document: Sequence[Hypothesis]) -> np.ndarray: ...

    def start(self, document: Sequence[Hypothesis]) -> Any: ...

    def delta(self, state: Any, j: int, candidates: Candidates) -> np.ndarray: ...

    def move(self, state: Any, j: int, candidates: Candidates, c: int) -> Any: ...


class DocumentScores:
    """The global features of one document, kept up to date as the sampler moves its sentences.

    ``values``: ``float64[sum of sizes]``, the features' current values in
    order.
    """

    def __init__(self, features: Sequence[DocumentFeature], document: Sequence[Hypothesis]):
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


def feature_values(features: Sequence[DocumentFeature], document: Sequence[Hypothesis]) -> np.ndarray:
    """Every feature's values on ``document``, concatenated: ``float64[sum of sizes]``."""
    parts = [np.asarray(f.values(document), np.float64).reshape(f.size) for f in features]
    return np.concatenate(parts) if parts else np.zeros(0)


def score_document(derivations: Sequence[Derivation], options: Sequence[TranslationOptions], model: TranslationModel,
                   global_features: Sequence[DocumentFeature] = ()) -> np.ndarray:
    """Dense and global features of a document (or of one sentence: a document of one), from scratch.

    ``float64[layout.size + sum of the features' sizes]``: ``score_derivation``
    summed over the sentences, then the global features' values on the
    document's hypotheses, natural logs.
    """
    dense = np.zeros(model.layout.size)
    for d, o in zip(derivations, options):
        dense += score_derivation(d, o, model)
    hypotheses = [Hypothesis.of(d, o, model) for d, o in zip(derivations, options)] if global_features else []
    return np.concatenate([dense, feature_values(global_features, hypotheses)])
