"""Decoding a whole document jointly with the sampler, so that document-level features can be used.

A stack decoder searches one sentence at a time, so it cannot score a feature
that looks at several sentences (such as ``lexical-consistency``). Here every
sentence of a document has its own Markov chain (``pbmt.search.sampler``),
and the chains share one ``DocumentScores``: a move in sentence j is scored
by its dense delta plus the change of the document's global features. A step
picks a sentence uniformly among those with words and makes one Gibbs step
in it; with a falling temperature (``anneal``) this is simulated annealing
over the whole document's derivations. Chains start from the stack decoder's
1-best, and the result is the best document visited (its start included),
so with the global weights at zero it scores at least as well as the stack
decoder under the dense model.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from pbmt.model.model import DEFAULT_ANNEAL, TranslationModel
from pbmt.search.derivation import Derivation
from pbmt.search.hypothesis import DocumentFeature, DocumentScores, score_document
from pbmt.search.options import TranslationOptions
from pbmt.model.lm import LMCache
from pbmt.search.sampler import Sampler, anneal, initial_derivation


@dataclass(frozen=True, eq=False)
class DocumentResult:
    """The best document visited: one derivation per sentence, its features and score.

    features: ``float64[n_features]``: the sentences' dense features summed,
    then the document's global values (natural log); score: ``features @
    weights``; steps: sampler steps taken.
    """

    derivations: tuple[Derivation, ...]
    features: np.ndarray
    score: float
    steps: int


class DocumentSampler:
    """Gibbs sampling over the derivations of every sentence of a document at once.

    ``options``: one ``TranslationOptions`` per sentence, in document order;
    ``global_features`` and ``global_weights`` as for ``Sampler`` (the
    columns follow the model's dense ones). ``samplers[j]`` is sentence j's.
    """

    def __init__(self, model: TranslationModel, options: Sequence[TranslationOptions],
                 global_features: Sequence[DocumentFeature] = (), global_weights: np.ndarray | None = None,
                 operator_weights=(1.0, 1.0, 1.0), lm_cache: LMCache | None = None):
        self.model = model
        self.global_features = tuple(global_features)
        lm_cache = lm_cache or LMCache.new()
        self.samplers = [Sampler(model, o, self.global_features, global_weights, operator_weights=operator_weights,
                                 lm_cache=lm_cache) for o in options]
        self.weights = (self.samplers[0].weights if self.samplers
                        else np.concatenate([model.weights, np.zeros(sum(f.size for f in self.global_features))]))

    def start(self, derivations: Sequence[Derivation]) -> list:
        """One chain per sentence at ``derivations``, sharing the document's global feature state (if any)."""
        if len(derivations) != len(self.samplers):
            raise ValueError(f"{len(derivations)} derivations for {len(self.samplers)} sentences")
        # without global features the chains have no document state (and run as plain chains)
        scores = (DocumentScores(self.global_features, [s.hypothesis(d) for s, d in zip(self.samplers, derivations)])
                  if self.global_features else None)
        return [s.start(d, scores, j) for j, (s, d) in enumerate(zip(self.samplers, derivations))]

    def features(self, chains: Sequence) -> np.ndarray:
        """The document's features (dense summed over sentences, then global), ``float64[n_features]``."""
        dense = sum((c.features[:len(self.model.weights)] for c in chains), np.zeros(len(self.model.weights)))
        return np.concatenate([dense, chains[0].global_values if chains else np.zeros(0)])

    def run(self, chains: Sequence, rng: np.random.Generator, iterations: int, temperature=1.0) -> DocumentResult:
        """``iterations`` steps (each in a sentence drawn uniformly among those with words) at ``temperature``.

        ``temperature``: a number, or ``float64[iterations]`` (``anneal``); 0
        moves greedily. Returns the best document visited, its start included.
        """
        temperature = np.broadcast_to(np.asarray(temperature, dtype=np.float64), (iterations,))
        movable = np.array([j for j, s in enumerate(self.samplers) if s.options.n_words > 0], np.int64)
        current = best = float(self.features(chains) @ self.weights)
        best_options = [c.derivation.option.copy() for c in chains]
        steps = 0
        if len(movable):
            which = movable[rng.integers(len(movable), size=iterations)]
            u = rng.random((iterations, 3))
            for t in range(iterations):
                j = int(which[t])
                change = self.samplers[j].step(chains[j], u[t], temperature[t])
                steps += 1
                if change:
                    current += change
                    if current > best:
                        best = current
                        best_options = [c.derivation.option.copy() for c in chains]
        derivations = tuple(Derivation.from_options(s.options, o) for s, o in zip(self.samplers, best_options))
        features = self._features(derivations)
        return DocumentResult(derivations, features, float(features @ self.weights), steps)

    def _features(self, derivations: Sequence[Derivation]) -> np.ndarray:
        return score_document(derivations, [s.options for s in self.samplers], self.model, self.global_features)


def decode_document(model: TranslationModel, options: Sequence[TranslationOptions], rng: np.random.Generator,
                    global_features: Sequence[DocumentFeature] = (), global_weights: np.ndarray | None = None,
                    steps_per_sentence: int = 1000, temperatures: tuple[float, float] = DEFAULT_ANNEAL,
                    lm_cache: LMCache | None = None) -> DocumentResult:
    """Decode a document: stack-decoder 1-best per sentence, then annealing over the whole document.

    ``steps_per_sentence`` × (sentences) steps, the temperature falling
    geometrically from ``temperatures[0]`` to ``temperatures[1]``.
    """
    sampler = DocumentSampler(model, options, global_features, global_weights, lm_cache=lm_cache)
    chains = sampler.start([initial_derivation(model, o, "decoder") if o.n_words else Derivation([], [], [])
                            for o in options])
    iterations = steps_per_sentence * len(options)
    return sampler.run(chains, rng, iterations, anneal(iterations, *temperatures) if iterations else 0.0)
