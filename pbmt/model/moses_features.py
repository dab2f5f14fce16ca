"""Moses's standard features as pbmt reads them from ``moses.ini`` (``pbmt.model.features``'s contract): the
phrase table's scores, the word, phrase and unknown-word penalties, distortion, lexicalized reordering and
n-gram LMs (``KENLM``; any number of them). Each is one class and one registry line."""

from __future__ import annotations

import math

import numpy as np

from pbmt.base.config import Feature, MosesConfig
from pbmt.base.errors import FormatError
from pbmt.base.files import parse_int
from pbmt.model._transition_kernels import (DistortionData, LMData, NoTransition, ReorderingData, SparseData,
                                            msd_orientation)
from pbmt.model.features import FeatureFunction, register
from pbmt.model.lm import NgramLM
from pbmt.model.phrase_table import PhrasePairs, PhraseTable
from pbmt.model.reordering import ReorderingTable
from pbmt.base.vocab import Vocab

__all__ = ["PhraseDictionaryMemory", "WordPenalty", "PhrasePenalty", "UnknownWordPenalty", "Distortion",
           "LexicalReordering", "KENLM", "NoTransition", "SparseData", "msd_orientation"]

UNKNOWN_WORD_SCORE = -100.0  # Moses's UnknownWordPenalty value per unknown word


@register
class PhraseDictionaryMemory(FeatureFunction):
    """The phrase table: its candidates are the searches' translation options, its scores their option-local
    values. ``table-limit=N`` on the line is the table limit when the ini has no ``[ttable-limit]``."""

    moses_name = "PhraseDictionaryMemory"

    def __init__(self, spec: Feature, config: MosesConfig, vocab: Vocab):
        super().__init__(spec, config, vocab)
        self.table = PhraseTable.load(config.resolve(spec.args["path"]), vocab, n_scores=spec.n_scores)
        self.table_limit = None
        if "table-limit" in spec.args:
            try:
                self.table_limit = parse_int(spec.args["table-limit"])
            except ValueError:
                raise FormatError(config.path or "moses.ini", spec.line, f"table-limit={spec.args['table-limit']!r} "
                                  f"of {spec.name} is not a positive integer") from None

    def local(self, table) -> np.ndarray:
        return table.scores

    def markup_local(self, n_words: int, log_prob: float) -> np.ndarray:
        """As Moses scores a given translation: its log probability shared equally among the columns."""
        return np.full(self.n_scores, log_prob / self.n_scores)


@register
class WordPenalty(FeatureFunction):
    """Minus the number of target words."""

    moses_name = "WordPenalty"

    def local(self, table) -> np.ndarray:
        return -np.diff(table.tgt_offsets)[:, None].astype(np.float64)

    def unknown_local(self, n_words: int, letterless: bool) -> np.ndarray:
        return np.array([-float(n_words)])

    def markup_local(self, n_words: int, log_prob: float) -> np.ndarray:
        return np.array([-float(n_words)])


@register
class PhrasePenalty(FeatureFunction):
    """The number of phrases."""

    moses_name = "PhrasePenalty"

    def local(self, table) -> np.ndarray:
        return np.ones((table.n_candidates, 1))

    def unknown_local(self, n_words: int, letterless: bool) -> np.ndarray:
        return np.ones(1)

    def markup_local(self, n_words: int, log_prob: float) -> np.ndarray:
        return np.ones(1)


@register
class UnknownWordPenalty(FeatureFunction):
    """-100 per unknown word passed through, none for a word without a letter (a number, punctuation: copying
    it is its translation). Every derivation of a sentence passes its unknown words through alike, so the
    penalty never changes which translation wins; it shows in model scores (n-best totals, ``pbmt explain``)."""

    moses_name = "UnknownWordPenalty"

    def unknown_local(self, n_words: int, letterless: bool) -> np.ndarray:
        return np.array([0.0 if letterless else UNKNOWN_WORD_SCORE * n_words])


@register
class Distortion(FeatureFunction):
    """Minus the width of each jump: from the previous block's end to the block's start (Moses's distance-based
    reordering)."""

    moses_name = "Distortion"
    scores_transitions = True

    def sentence_data(self, options, cache) -> DistortionData:
        return DistortionData(0)


@register
class LexicalReordering(FeatureFunction):
    """Moses's msd-bidirectional-fe lexicalized reordering (``type=`` any of ``reordering.SUPPORTED_TYPES``):
    six log probabilities per phrase pair, the block's orientation after its predecessor (forward) and the
    predecessor's before it (backward). A model may have several, each with its own table and weights (as
    Moses loads them)."""

    moses_name = "LexicalReordering"
    scores_transitions = True
    reads_previous_option = True

    def __init__(self, spec: Feature, config: MosesConfig, vocab: Vocab):
        super().__init__(spec, config, vocab)
        self.table = ReorderingTable.load(config.resolve(spec.args["path"]), vocab,
                                          spec.args.get("type", "wbe-msd-bidirectional-fe-allff"))
        before = config.features[:config.features.index(spec)]
        self.first = 6 * sum(f.type == self.moses_name for f in before)  # its columns of options.reordering

    def sentence_data(self, options, cache) -> ReorderingData:
        return ReorderingData(np.ascontiguousarray(options.reordering[:, self.first:self.first + 6]))


@register
class KENLM(FeatureFunction):
    """An n-gram LM (ARPA, plain or gzip): log10 p(word | history) of every target word and of ``</s>``, times
    ln 10. Its state is the LM state after the words so far (one int64)."""

    moses_name = "KENLM"
    scores_transitions = True
    state_width = 1

    def __init__(self, spec: Feature, config: MosesConfig, vocab: Vocab):
        super().__init__(spec, config, vocab)
        self.lm = NgramLM.load(config.resolve(spec.args["path"]), vocab)
        self.which = config.features.index(spec)  # its key in the LM score cache
        self.estimate_files = (config.resolve(spec.args["path"]),)

    def estimate(self, pairs: PhrasePairs) -> np.ndarray:
        """The target phrase's score alone (no ``<s>``, ``NgramLM.phrase_scores``), Moses's estimate."""
        return (math.log(10) * self.lm.phrase_scores(pairs.tgt_offsets, pairs.tgt_words))[:, None]

    def begin_state(self) -> np.ndarray:
        return np.array([self.lm.begin_state], dtype=np.int64)

    def sentence_data(self, options, cache) -> LMData:
        return LMData(self.lm.arrays, cache.entries, self.which, options.tgt_offsets, options.tgt_words)
