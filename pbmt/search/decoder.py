"""Stack decoding with n-best lists (Koehn's beam search, Moses's settings).

``decode`` runs the numba kernel over a sentence's ``TranslationOptions`` and
reads the best derivations out of its search graph: the 1-best follows back
pointers from the best complete hypothesis; further entries replace one
hypothesis on the path by a worse member of its recombination class, lazily,
best first.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numba
import numpy as np
from numba import types

from pbmt.base import csr
from pbmt.model.model import SearchSettings, TranslationModel
from pbmt.search._cube_kernels import cube_kernel, cube_parts
from pbmt.search._decoder_kernels import Limits, Sentence, stack_kernel
from pbmt.search._nbest_kernels import best_path, k_best_paths
from pbmt.search._scoring_kernels import Transitions
from pbmt.search.derivation import Derivation, model_score
from pbmt.search.options import TranslationOptions
from pbmt.search.transitions import transitions


@dataclass(frozen=True)
class ScoredDerivation:
    """A derivation with its model score (weighted sum of features, natural log)."""

    derivation: Derivation
    score: float


@dataclass(frozen=True)
class SearchGraph:
    """What one stack-decoding run explored.

    Hypothesis ``h`` extended ``parent[h]`` with option ``option[h]`` to an
    accumulated model score ``score[h]`` (natural log, weighted; complete
    hypotheses include the end of sentence); hypothesis 0 is the empty start.
    ``klass[h]`` is its recombination class; ``final_class`` the class of all
    complete hypotheses (-1: none survived). ``stats[s]`` counts per stack
    (``_decoder_kernels.STAT_NAMES``: classes, expanded, added, recombined, beam-rejected).
    """

    parent: np.ndarray
    option: np.ndarray
    score: np.ndarray
    klass: np.ndarray
    final_class: int
    stats: np.ndarray


def search(model: TranslationModel, options: TranslationOptions, settings: SearchSettings | None = None,
           arcs: bool = True, sentence_transitions: Transitions | None = None) -> SearchGraph:
    """Search a sentence of at least one word by the settings' algorithm (``settings.search``: stack
    decoding or cube pruning); ``settings`` default to the model's. ``arcs``: keep every recombined
    hypothesis (for n-best lists and search graphs); without, the graph holds each recombination class's
    best member only, enough for the 1-best.

    A model with sparse features (``model.sparse``) decodes with them: their
    option-local part is in ``options.local_score`` (``TranslationOptions.build``),
    the rest are transition scores (``pbmt.search.transitions``): ``sentence_transitions``, those of
    ``options`` (``transitions(model, options)``, built here when None).
    """
    settings = settings or model.settings
    sentence, limits = kernel_inputs(options, settings, arcs)
    if sentence_transitions is None:
        sentence_transitions = transitions(model, options)
    graph = search_kernel(settings)(sentence, sentence_transitions, limits)
    return SearchGraph(*graph)


def search_kernel(settings: SearchSettings):
    """The kernel (numba dispatcher) that searches by ``settings.search``: cube pruning or stack decoding."""
    return cube_kernel if settings.search == "cube" else stack_kernel


def kernel_parts(model: TranslationModel, options: TranslationOptions, settings: SearchSettings | None = None,
                 arcs: bool = True) -> list[tuple[object, tuple]]:
    """The search kernel's biggest callees, each with the numba types the search of ``options`` calls it with
    under ``settings`` (default the model's; ``arcs`` as ``search``'s): (kernel, argument types) pairs to compile
    apart from the search kernel (``_cube_kernels.cube_parts``; none for stack decoding, compiled whole)."""
    settings = settings or model.settings
    if settings.search != "cube":
        return []
    sentence, limits = kernel_inputs(options, settings, arcs)
    return cube_parts(*(numba.typeof(x) for x in (sentence, transitions(model, options), limits)))


def path_kernel(options: TranslationOptions, n_best: int = 1, distinct: bool = False) -> tuple[object, tuple]:
    """The kernel that reads the ``n_best`` best derivations (``distinct`` as ``decode``'s) out of the search
    graph of ``options`` (``best_path``, or ``k_best_paths``), with the numba types ``best_path_arrays`` calls
    it with: a (kernel, argument types) pair to compile before any search has run, while another process
    compiles the search (``pbmt.commands.precompile``)."""
    graph = (types.int32[::1], types.int32[::1], types.float64[::1], types.int32[::1])  # parent, option, score, klass
    if n_best == 1:
        return best_path, (*graph, types.int64)
    return k_best_paths, (*graph, types.int64, types.int64, types.int64, types.boolean,
                          numba.typeof(options.tgt_offsets), numba.typeof(options.tgt_words))


def kernel_inputs(options: TranslationOptions, settings: SearchSettings, arcs: bool) -> tuple[Sentence, Limits]:
    """A sentence's options and the search settings as the search kernels read them (``arcs``: keep every
    recombined hypothesis)."""
    log_beam = math.log(settings.beam_threshold) if settings.beam_threshold > 0 else -math.inf
    pop_limit = settings.pop_limit if settings.pop_limit > 0 else np.iinfo(np.int64).max
    limits = Limits(settings.distortion_limit, settings.stack_size, log_beam, settings.reordering == "mon-swap",
                    arcs, pop_limit)
    estimate = options.local_score + options.lm_estimate if settings.search == "cube" else options.local_score
    sentence = Sentence(options.n_words, options.local_score, estimate, options.span_offsets, options.max_length,
                        options.future, options.zones, options.walls)
    return sentence, limits


def decode(model: TranslationModel, options: TranslationOptions, n_best: int = 1, distinct: bool = False,
           settings: SearchSettings | None = None) -> list[ScoredDerivation]:
    """The ``n_best`` highest-scoring derivations the search finds, best first.

    ``distinct``: skip derivations whose target words equal a better one's.
    ``settings`` default to the model's (stack size, beam threshold, distortion limit).
    """
    return decode_paths(model, options, n_best, distinct, settings).scored(options)


def decode_paths(model: TranslationModel, options: TranslationOptions, n_best: int = 1, distinct: bool = False,
                 settings: SearchSettings | None = None, sentence_transitions: Transitions | None = None
                 ) -> "Paths":
    """``decode``'s derivations as arrays (``Paths``): an n-best list is written from them without a
    ``Derivation`` object each. ``sentence_transitions``: ``search``'s."""
    if options.n_words == 0:
        empty = Derivation.from_options(options, [])
        return Paths(np.zeros(2, np.int64), np.zeros(0, np.int32), np.array([model_score(empty, options, model)]))
    graph = search(model, options, settings, arcs=n_best > 1, sentence_transitions=sentence_transitions)
    if graph.final_class < 0:
        return Paths(np.zeros(1, np.int64), np.zeros(0, np.int32), np.zeros(0))
    return best_path_arrays(options, graph, n_best, distinct)


def best_paths(options: TranslationOptions, graph: SearchGraph, n_best: int, distinct: bool = False
               ) -> list[ScoredDerivation]:
    """The ``n_best`` best complete derivations of a search graph, best first (``_nbest_kernels``)."""
    return best_path_arrays(options, graph, n_best, distinct).scored(options)


def best_path_arrays(options: TranslationOptions, graph: SearchGraph, n_best: int, distinct: bool = False
                     ) -> "Paths":
    """``best_paths`` as arrays (``Paths``)."""
    if n_best == 1:
        return Paths(*best_path(graph.parent, graph.option, graph.score, graph.klass, graph.final_class))
    return Paths(*k_best_paths(graph.parent, graph.option, graph.score, graph.klass, int(graph.klass.max()) + 1,
                               graph.final_class, n_best, distinct, options.tgt_offsets, options.tgt_words))


@dataclass(frozen=True)
class Paths:
    """Derivations of one sentence as arrays, best first: derivation ``i`` uses the options
    ``chosen[offsets[i]:offsets[i + 1]]`` (int32; ``offsets`` int64[n + 1]) in target order, and scores
    ``totals[i]`` (float64[n], natural log, weighted)."""

    offsets: np.ndarray
    chosen: np.ndarray
    totals: np.ndarray

    @classmethod
    def of(cls, found: Sequence[ScoredDerivation]) -> "Paths":
        """The arrays of scored derivations."""
        lengths = np.array([len(s.derivation) for s in found], dtype=np.int64)
        chosen = [s.derivation.option for s in found]
        return cls(csr.offsets(lengths), np.concatenate(chosen).astype(np.int32) if chosen else np.zeros(0, np.int32),
                   np.array([s.score for s in found], dtype=np.float64))

    def __len__(self) -> int:
        return len(self.totals)

    def derivation(self, i: int, options: TranslationOptions) -> Derivation:
        """Derivation ``i``."""
        return Derivation.from_options(options, self.chosen[self.offsets[i]:self.offsets[i + 1]])

    def scored(self, options: TranslationOptions) -> list[ScoredDerivation]:
        """Every derivation with its score."""
        return [ScoredDerivation(d, t) for d, t in zip(Derivation.paths(options, self.offsets, self.chosen),
                                                       self.totals.tolist())]
