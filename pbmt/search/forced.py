"""Constrained search: forced decoding of a reference, and the best completions of a target prefix.

``forced_decode`` finds the model's best derivations whose output is exactly
a reference (Moses's ``ConstrainedDecoding``), in the model's search space
(distortion limit or MON/SWAP). Its search is exact: dynamic programming
over (coverage, last block, reference words produced) with no pruning
(``_forced_kernels``), bounded only by a number of hypotheses; Moses's
beam search with a constraint feature can lose the reference when the beam
drops its partial derivations. A reference it cannot reach gets a reason
(``Unreachable``): found by relaxing one limit at a time.

``prefix_decode`` finds the best derivations whose output begins with a
prefix, the last word of which may be unfinished (``partial``): its words
are searched exactly, the rest as the model's search does (cube pruning,
``prefix_cube_kernel``, or stack decoding; interactive translation: a
translator types the start, the model completes it).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from enum import Enum
from functools import cached_property

import numpy as np

from pbmt.model.model import SearchSettings, TranslationModel
from pbmt.search._forced_kernels import (OVERFLOW, Constraint, Prefix, Sentence, fit_table, forced_kernel,
                                         prefix_cube_kernel)
from pbmt.search.decoder import ScoredDerivation, SearchGraph, best_paths, decode, kernel_inputs
from pbmt.search.options import TranslationOptions
from pbmt.search.transitions import transitions

MAX_HYPOTHESES = 5_000_000  # a forced search stops (Unreachable.SEARCH_LIMIT) past this many hypotheses (~0.5 GB)
RELAXED_HYPOTHESES = 1_000_000  # the same for each search with a limit lifted that looks for the cause


class Unreachable(Enum):
    """Why no derivation of the model produces a reference, most basic cause first."""

    REFERENCE_WORD = "a reference word no phrase pair of the sentence produces in its place"
    SOURCE_WORD = "a source word whose every phrase produces words not in the reference"
    TABLE_LIMIT = "the phrase table limit (ttable-limit) pruned a phrase pair the reference needs"
    PHRASE_LENGTH = "the phrase-length limit (max-phrase-length)"
    DISTORTION_LIMIT = "the distortion limit"
    MON_SWAP = "the MON/SWAP reordering space"
    SEGMENTATION = "no segmentation of the source into the model's phrases yields it"
    SEARCH_LIMIT = "the forced search reached its hypothesis limit"
    EMPTY = "one of the sentence and its reference is empty, the other not"


@dataclass(frozen=True)
class ForcedResult:
    """A constrained search's derivations, best first (empty when none satisfies the constraint), why there
    is none (``reason``, None when found), and the words behind the reason (``detail``, e.g. the reference
    words no phrase produces)."""

    found: tuple[ScoredDerivation, ...]
    reason: Unreachable | None = None
    detail: str = ""

    @property
    def reachable(self) -> bool:
        return bool(self.found)

    @property
    def why(self) -> str:
        """The reason and its detail as one line ("" when found)."""
        if self.reason is None:
            return ""
        return self.reason.value + (f": {self.detail}" if self.detail else "")


def sentence_arrays(options: TranslationOptions) -> Sentence:
    """The constrained kernels' view of a sentence's options."""
    return Sentence(options.n_words, options.start, options.end, options.tgt_offsets, options.tgt_words,
                    options.local_score, options.span_offsets, options.max_length, options.future, options.zones,
                    options.walls)


def reference_ids(options: TranslationOptions, words: list[str]) -> np.ndarray:
    """``int32`` ids of target words in ``options.vocab``, -1 for a word it lacks (which no option produces)."""
    ids = options.vocab.ids(words, add=False).astype(np.int32)
    ids[[w not in options.vocab for w in words]] = -1
    return ids


def constrained_graph(model: TranslationModel, options: TranslationOptions, constraint: np.ndarray,
                      exact: bool, settings: SearchSettings | None = None, last_ok: np.ndarray | None = None,
                      max_hypotheses: int = MAX_HYPOTHESES) -> SearchGraph:
    """The search graph of the constrained search (``_forced_kernels``) of a sentence of at least one word.

    ``constraint``: ``int32[m]`` target ids; ``exact``: the output is the constraint (forced decoding),
    else it begins with it (its completions pruned to ``settings.stack_size`` per stack and its beam
    threshold); ``last_ok``:
    ``bool[V]``, the word ids allowed at the constraint's last position (an unfinished word). ``final_class``
    is -1 when nothing satisfies the constraint, ``OVERFLOW`` past ``max_hypotheses``.
    """
    settings = settings or model.settings
    last_ok = np.zeros(0, np.bool_) if last_ok is None else last_ok
    fit = fit_table(options.tgt_offsets, options.tgt_words, np.asarray(constraint, np.int32), last_ok, exact)
    log_beam = math.log(settings.beam_threshold) if settings.beam_threshold > 0 and not exact else -math.inf
    spec = Constraint(fit, len(constraint), exact, settings.distortion_limit, settings.reordering == "mon-swap",
                      0 if exact else settings.stack_size, log_beam, max_hypotheses)
    parent, option, score, klass, final_class, received = forced_kernel(sentence_arrays(options),
                                                                       transitions(model, options), spec)
    return SearchGraph(parent, option, score, klass, final_class, received[:, None])


class ForcedDecoder:
    """Forced decoding with one model: ``decode`` a sentence's options into a reference.

    ``settings`` (default: the model's) give the search space, distortion limit or MON/SWAP; no pruning
    setting applies, the search being exact up to ``max_hypotheses``. The models without the table and
    phrase-length limits that ``why_unreachable`` searches are built once, when first needed.
    """

    def __init__(self, model: TranslationModel, settings: SearchSettings | None = None,
                 max_hypotheses: int = MAX_HYPOTHESES):
        self.model = model
        self.settings = settings or model.settings
        self.max_hypotheses = max_hypotheses

    def decode(self, options: TranslationOptions, reference: list[str], n_best: int = 1,
               explain: bool = True) -> ForcedResult:
        """The ``n_best`` best derivations whose output is exactly ``reference`` (the model's tokens), best
        first by model score (natural log, as ``model_score``). ``explain``: when there is none, find why
        (``why_unreachable``: more searches); else the reason is ``SEGMENTATION``."""
        words = list(reference)
        reference = reference_ids(options, words)
        if options.n_words == 0 or len(reference) == 0:
            if (options.n_words == 0) != (len(reference) == 0):
                return ForcedResult((), Unreachable.EMPTY)
            found = decode(self.model, options)
            return ForcedResult(tuple(found), None if found else Unreachable.SEGMENTATION)
        graph = constrained_graph(self.model, options, reference, True, self.settings,
                                  max_hypotheses=self.max_hypotheses)
        if graph.final_class >= 0:
            return ForcedResult(tuple(best_paths(options, graph, n_best)))
        if graph.final_class == OVERFLOW:
            return ForcedResult((), Unreachable.SEARCH_LIMIT, f"more than {self.max_hypotheses} hypotheses")
        if not explain:
            return ForcedResult((), Unreachable.SEGMENTATION)
        return ForcedResult((), *self.why_unreachable(options, reference, words))

    def why_unreachable(self, options: TranslationOptions, reference: np.ndarray, words: list[str]
                        ) -> tuple[Unreachable, str]:
        """Why no derivation over ``options`` in the search space produces the reference ``words`` (ids
        ``reference``: ``reference_ids``), which none does: the first of ``Unreachable``'s causes that holds,
        and the words concerned.

        A reference word that no phrase pair of the whole table (no table or phrase-length limit) produces
        there, or a source word none of whose phrase pairs fits the reference, is reported as such. Otherwise
        each limit is lifted alone (the table limit, the phrase length, the reordering space: MON/SWAP to the
        distortion limit, the distortion limit to none), and the first whose lifting reaches the reference is
        the cause; when none alone does, ``SEGMENTATION``. A lifted search stops at ``RELAXED_HYPOTHESES``
        (without the distortion limit the space grows exponentially): then the cause is ``SEARCH_LIMIT``.
        """
        vocab = options.vocab
        full = self._options(self._unlimited, options)
        fit = fit_table(full.tgt_offsets, full.tgt_words, reference, np.zeros(0, np.bool_), True)
        missing = _unproduced(fit, np.diff(full.tgt_offsets))
        if len(missing):
            return Unreachable.REFERENCE_WORD, _quoted(words, missing)
        fits = np.flatnonzero(fit.any(axis=1))
        used = np.zeros(options.n_words + 1, np.int64)
        np.add.at(used, full.start[fits], 1)
        np.add.at(used, full.end[fits], -1)
        unused = np.flatnonzero(np.cumsum(used)[:-1] == 0)
        if len(unused):
            return Unreachable.SOURCE_WORD, _quoted(vocab.words(options.sentence), unused)
        budget = min(self.max_hypotheses, RELAXED_HYPOTHESES)
        space = Unreachable.MON_SWAP if self.settings.reordering == "mon-swap" else Unreachable.DISTORTION_LIMIT
        trials = [(Unreachable.TABLE_LIMIT, self._no_table_limit, self.settings),
                  (Unreachable.PHRASE_LENGTH, self._no_length_limit, self.settings)]
        trials += [(space, self.model, wider) for wider in self._wider_spaces(options.n_words)]
        for cause, model, settings in trials:
            if model is None:
                continue
            graph = constrained_graph(model, self._options(model, options), reference, True, settings,
                                      max_hypotheses=budget)
            if graph.final_class == OVERFLOW:
                return Unreachable.SEARCH_LIMIT, f"lifting {cause.value} takes more than {budget} hypotheses"
            if graph.final_class >= 0:
                if cause is not space:
                    return cause, ""
                limit = settings.distortion_limit
                return cause, f"reachable with distortion limit {limit}" if limit >= 0 else "reachable without it"
        return Unreachable.SEGMENTATION, ""

    def _wider_spaces(self, n: int) -> list[SearchSettings]:
        """Ever wider reordering spaces than the decoder's: from MON/SWAP the distortion limit; from a
        distortion limit, twice and four times it (when below the sentence length), then none."""
        settings = self.settings
        if settings.reordering == "mon-swap":
            return [dataclasses.replace(settings, reordering="distortion")]
        limit = settings.distortion_limit
        if limit < 0:
            return []
        wider = [k * limit for k in (2, 4) if 0 < k * limit < n - 1]
        return [dataclasses.replace(settings, distortion_limit=k) for k in wider + [-1]]

    def _options(self, model: TranslationModel | None, options: TranslationOptions) -> TranslationOptions:
        """The sentence's options under ``model`` (``options`` itself under the decoder's own model)."""
        if model is None or model is self.model:
            return options
        return TranslationOptions.build(model, options.sentence, options.vocab)

    @cached_property
    def _longest_source(self) -> int:
        return int(np.diff(self.model.full_table.src_offsets).max(initial=1))

    def _relaxed(self, table: bool, lengths: bool) -> TranslationModel | None:
        """The model without its table limit and/or phrase-length limit, or None when that lifts nothing."""
        settings = self.model.settings
        wider = lengths and self._longest_source > settings.max_phrase_length
        more = table and self.model.full_table.n_candidates > self.model.phrases.n_candidates
        if not (wider or more):
            return None
        relaxed = dataclasses.replace(settings, table_limit=10**9 if more else settings.table_limit,
                                      max_phrase_length=self._longest_source if wider else settings.max_phrase_length)
        return dataclasses.replace(self.model, settings=relaxed).with_weights(self.model.weights)

    @cached_property
    def _no_table_limit(self) -> TranslationModel | None:
        return self._relaxed(True, False)

    @cached_property
    def _no_length_limit(self) -> TranslationModel | None:
        return self._relaxed(False, True)

    @cached_property
    def _unlimited(self) -> TranslationModel:
        return self._relaxed(True, True) or self.model


def prefix_decode(model: TranslationModel, options: TranslationOptions, prefix: list[str], partial: str = "",
                  n_best: int = 1, distinct: bool = True, settings: SearchSettings | None = None,
                  max_hypotheses: int = MAX_HYPOTHESES) -> ForcedResult:
    """The ``n_best`` best derivations whose output begins with the words ``prefix`` (the model's tokens)
    and then, when ``partial`` is not empty, a word beginning with ``partial`` (an unfinished word), best
    first by model score (natural log); ``distinct``: completions with distinct target words.

    The derivations' prefix part is searched exactly, their completion by ``settings.search`` (default: the
    model's settings): cube pruning up to the pop limit per stack, or stack decoding, either keeping
    ``stack_size`` classes per stack by score plus future estimate, within the beam threshold. With no
    prefix at all, this is ``decode``, the model's own search. None found: ``reason`` is ``REFERENCE_WORD`` (with the words) when
    a prefix word is one no phrase pair of the sentence produces in its place, else ``SEGMENTATION``.
    """
    settings = settings or model.settings
    if not prefix and not partial:
        found = decode(model, options, n_best=n_best, distinct=distinct, settings=settings)
        return ForcedResult(tuple(found), None if found else Unreachable.SEGMENTATION)
    constraint = reference_ids(options, list(prefix) + ([partial] if partial else []))
    last_ok = np.zeros(0, np.bool_)
    if partial:
        ids = np.unique(options.tgt_words)
        last_ok = np.zeros(int(ids.max(initial=0)) + 1, np.bool_)
        last_ok[ids] = [word.startswith(partial) for word in options.vocab.words(ids)]
    if options.n_words == 0:
        return ForcedResult((), Unreachable.EMPTY)
    if settings.search == "cube":
        graph = _prefix_cube_graph(model, options, constraint, settings, last_ok, n_best > 1, max_hypotheses)
    else:
        graph = constrained_graph(model, options, constraint, False, settings, last_ok, max_hypotheses)
    if graph.final_class >= 0:
        return ForcedResult(tuple(best_paths(options, graph, n_best, distinct)))
    if graph.final_class == OVERFLOW:
        return ForcedResult((), Unreachable.SEARCH_LIMIT, f"more than {max_hypotheses} hypotheses")
    missing = _unproduced(fit_table(options.tgt_offsets, options.tgt_words, constraint, last_ok, False),
                          np.diff(options.tgt_offsets))
    if len(missing):
        return ForcedResult((), Unreachable.REFERENCE_WORD, _quoted(list(prefix) + [partial + "…"], missing))
    return ForcedResult((), Unreachable.SEGMENTATION)


def _prefix_cube_graph(model: TranslationModel, options: TranslationOptions, prefix: np.ndarray,
                       settings: SearchSettings, last_ok: np.ndarray, arcs: bool, max_hypotheses: int) -> SearchGraph:
    """The search graph of the cube-pruned completion search (``prefix_cube_kernel``) of a sentence of at least
    one word and a ``prefix`` of at least one word (``int32[m]`` target ids; ``last_ok`` as
    ``constrained_graph``'s); ``arcs``: keep every recombined hypothesis (n-best lists)."""
    sentence, limits = kernel_inputs(options, settings, arcs)
    fit = fit_table(options.tgt_offsets, options.tgt_words, prefix, last_ok, False)
    spec = Prefix(fit, len(prefix), np.diff(options.tgt_offsets).astype(np.int32), max_hypotheses)
    return SearchGraph(*prefix_cube_kernel(sentence, transitions(model, options), limits, spec))


def _unproduced(fit: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Positions of a constraint of ``m`` words that no option produces where it fits (``fit``:
    ``bool[n_opt, m + 1]``, ``fit_table``; ``lengths``: each option's target words)."""
    m = fit.shape[1] - 1
    fits, at = np.nonzero(fit[:, :m])
    produced = np.zeros(m + 1, np.int64)
    np.add.at(produced, at, 1)
    np.add.at(produced, np.minimum(at + lengths[fits], m), -1)
    return np.flatnonzero(np.cumsum(produced)[:-1] == 0)


#: Words a reason quotes at most: a reference of thousands of unknown words makes a line, not a page.
QUOTED_WORDS = 10


def _quoted(words: list[str], positions: np.ndarray) -> str:
    """The ``words`` at ``positions`` (0-based), quoted, with their 1-based position: the first
    ``QUOTED_WORDS``, then how many more."""
    shown = ", ".join(f"{words[p]!r} (word {p + 1})" for p in positions[:QUOTED_WORDS])
    return shown + (f" and {len(positions) - QUOTED_WORDS:,} more" if len(positions) > QUOTED_WORDS else "")
