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

import numpy as np

from pbmt.model.model import SearchSettings, TranslationModel
from pbmt.search._decoder_kernels import Transitions, cube_kernel, stack_kernel
from pbmt.search._nbest_kernels import k_best_paths
from pbmt.search.derivation import Derivation, boundary_arrays, model_score
from pbmt.search.options import TranslationOptions


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


@dataclass(frozen=True)
class TransitionScores:
    """Weighted scores (natural log) of sparse features that look at a block's predecessor, for one sentence.

    ``orient[o, k]``: option ``o`` in orientation ``k`` relative to its
    predecessor (float64[n_opt, 3], columns in msd order: 0 monotone = R,
    1 swap = L, 2 discontinuous = N); ``pair[right_key[p], left_key[o]]``:
    option ``o`` right after option ``p`` (float64[n_right + 1, n_left + 1];
    the last row is the sentence start, the last column the sentence end);
    right_key, left_key: int32[n_opt].
    """

    orient: np.ndarray
    right_key: np.ndarray
    left_key: np.ndarray
    pair: np.ndarray


def sparse_transitions(model: TranslationModel, options: TranslationOptions) -> TransitionScores:
    """The model's sparse features that look at a block's predecessor (``pbmt.model.sparse``), as transition
    scores of ``options``: the boundary family's class pairs, the block family's orientation x block and
    boundary bigrams, or their sum.

    The boundary pair table alone already has the sentence start as its last
    row and the end as its last column; it is then a view of the model's
    sparse weights. With the block family, keys number the sentence's distinct
    last and first target words (its orientation weights and bigram weights come
    from ``model.block_scores``), and the boundary weights join by the words' classes.
    """
    left, right, pair, bos, eos, has_boundary = boundary_arrays(model, options)
    blocks = model.block_scores
    if blocks is None:
        return TransitionScores(np.zeros((len(options), 3)), right, left, pair)
    _, orient = blocks.options(options.candidate, options.sentence[options.start[options.candidate < 0]])
    lasts, word_right = np.unique(options.tgt_words[options.tgt_offsets[1:] - 1], return_inverse=True)
    firsts, word_left = np.unique(options.tgt_words[options.tgt_offsets[:-1]], return_inverse=True)
    word_pair = blocks.bigrams(lasts, firsts)
    word_right, word_left = word_right.astype(np.int32), word_left.astype(np.int32)
    if has_boundary:
        row_class = np.full(word_pair.shape[0], bos)
        row_class[word_right] = right
        col_class = np.full(word_pair.shape[1], eos)
        col_class[word_left] = left
        word_pair = word_pair + pair[np.ix_(row_class, col_class)]
    return TransitionScores(orient, word_right, word_left, word_pair)


def transitions(model: TranslationModel, options: TranslationOptions) -> Transitions:
    """The weighted transition features of ``options`` under ``model``, in the searches' one kernel form."""
    layout, w = model.layout, model.weights
    lr = layout.columns_of_type("LexicalReordering")
    dist = layout.columns_of_type("Distortion")
    sparse = sparse_transitions(model, options) if model.sparse is not None else None
    if sparse is None:
        sparse = TransitionScores(np.zeros((0, 3)), np.zeros(0, np.int32), np.zeros(0, np.int32), np.zeros((1, 1)))
    return Transitions(model.lm.arrays, model.lm.score_cache.entries, np.int64(model.lm.begin_state), model.lm_weight_ln,
                       float(w[dist][0]) if dist is not None else 0.0,
                       np.ascontiguousarray(w[lr]) if lr is not None else np.zeros(6),
                       np.ascontiguousarray(options.reordering), lr is not None, sparse.orient, sparse.right_key,
                       sparse.left_key, sparse.pair, model.sparse is not None)


def search(model: TranslationModel, options: TranslationOptions, settings: SearchSettings | None = None,
           arcs: bool = True) -> SearchGraph:
    """Search a sentence of at least one word by the settings' algorithm (``settings.search``: stack
    decoding or cube pruning); ``settings`` default to the model's. ``arcs``: keep every recombined
    hypothesis (for n-best lists and search graphs); without, the graph holds each recombination class's
    best member only, enough for the 1-best.

    A model with sparse features (``model.sparse``) decodes with them: their
    option-local part is in ``options.local_score`` (``TranslationOptions.build``),
    the rest are transition scores (``sparse_transitions``).
    """
    settings = settings or model.settings
    log_beam = math.log(settings.beam_threshold) if settings.beam_threshold > 0 else -math.inf
    common = (options.span_offsets, options.max_length, options.future, transitions(model, options),
              settings.distortion_limit, settings.stack_size, log_beam, settings.reordering == "mon-swap")
    if settings.search == "cube":
        estimate = options.local_score + model.lm_weight_ln * options.lm_inside
        graph = cube_kernel(options.n_words, options.start, options.end, options.tgt_offsets, options.tgt_words,
                            options.local_score, estimate, *common, arcs, settings.pop_limit)
    else:
        graph = stack_kernel(options.n_words, options.start, options.end, options.tgt_offsets, options.tgt_words,
                             options.local_score, *common, arcs)
    return SearchGraph(*graph)


def decode(model: TranslationModel, options: TranslationOptions, n_best: int = 1, distinct: bool = False,
           settings: SearchSettings | None = None) -> list[ScoredDerivation]:
    """The ``n_best`` highest-scoring derivations the search finds, best first.

    ``distinct``: skip derivations whose target words equal a better one's.
    ``settings`` default to the model's (stack size, beam threshold, distortion limit).
    """
    if options.n_words == 0:
        empty = Derivation.from_options(options, [])
        return [ScoredDerivation(empty, model_score(empty, options, model))]
    graph = search(model, options, settings, arcs=n_best > 1)
    if graph.final_class < 0:
        return []
    return best_paths(options, graph, n_best, distinct)


def best_paths(options: TranslationOptions, graph: SearchGraph, n_best: int, distinct: bool = False
               ) -> list[ScoredDerivation]:
    """The ``n_best`` best complete derivations of a search graph, best first (``_nbest_kernels``)."""
    offsets, chosen, totals = k_best_paths(graph.parent, graph.option, graph.score, graph.klass,
                                           int(graph.klass.max()) + 1, graph.final_class, n_best, distinct,
                                           options.tgt_offsets, options.tgt_words)
    return [ScoredDerivation(Derivation.from_options(options, chosen[offsets[i]:offsets[i + 1]]), float(totals[i]))
            for i in range(len(totals))]
