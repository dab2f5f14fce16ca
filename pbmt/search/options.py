"""Translation options of one source sentence.

For every source span up to the maximum phrase length: the phrase table's
candidates (pruned under the model's weights), their option-local feature
values and scores, and the future-cost table. A source word the table does not
know gets one option that passes it through with the unknown-word penalty
(Moses's -100), except a token without letters (a number, punctuation), which
copying translates: it passes through at no penalty. Translations the input's
markup gives (``pbmt.base.markup``) join them as options of their spans, and the
markup's walls and zones are the sentence's reordering constraints.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from pbmt.base import csr
from pbmt.base.markup import Markup
from pbmt.model.model import TranslationModel
from pbmt.model.phrase_table import PhrasePairs
from pbmt.search._future_kernels import future_table
from pbmt.base.vocab import Overlay, Vocab


@dataclass(frozen=True)
class TranslationOptions:
    """Options of one sentence, sorted by (start, length), as flat arrays.

    Option ``o`` covers source words ``start[o] .. end[o] - 1`` and produces
    ``tgt_words[tgt_offsets[o]:tgt_offsets[o+1]]`` (global ids). ``candidate[o]``
    is its phrase-table candidate (``UNKNOWN``: an unknown word passed through;
    ``MARKUP - k``: translation ``k`` the input's markup gives, ``markup_translations``).
    ``local[o]`` holds its option-local feature values (``float64[n_opt,
    n_features]``, natural log; transition columns are zero), ``local_score[o]``
    their weighted sum, ``reordering[o]`` its six reordering log probabilities in each reordering
    table (``TranslationModel.reordering``), ``lm_estimate[o]`` the features' weighted estimate of it out
    of context (the LMs' of its target words, the OSM's of its operations: ``TranslationModel.estimate``,
    natural log). ``align[align_offsets[o]:align_offsets[o + 1]]``
    (``int16[k, 2]``) links option ``o``'s words, (source, target) positions within its phrase pair: the
    phrase pair's word alignment; an unknown word is linked to itself, and every word of a translation the
    markup gives to every word of its span.
    Options of span ``(i, i + l + 1)`` are ``span_offsets[i * max_length + l]``
    up to ``span_offsets[i * max_length + l + 1]``. ``future[i, j]`` is the best
    estimated score of translating ``[i, j)`` (natural log, weighted).
    ``vocab`` turns the sentence's ids back into words: the model's, or an
    ``Overlay`` of it holding the sentence's words the model does not know.
    ``zones`` (``int32[z, 2]``) and ``walls`` (``int32[w, 3]``) are the
    sentence's reordering constraints (``pbmt.base.markup.Markup.constraints``),
    which every search respects.
    """

    sentence: np.ndarray
    max_length: int
    start: np.ndarray
    end: np.ndarray
    candidate: np.ndarray
    tgt_offsets: np.ndarray
    tgt_words: np.ndarray
    local: np.ndarray
    local_score: np.ndarray
    reordering: np.ndarray
    lm_estimate: np.ndarray
    span_offsets: np.ndarray
    future: np.ndarray
    align_offsets: np.ndarray
    align: np.ndarray
    vocab: Vocab | Overlay = field(repr=False)
    zones: np.ndarray = field(default_factory=lambda: np.zeros((0, 2), np.int32), repr=False)
    walls: np.ndarray = field(default_factory=lambda: np.zeros((0, 3), np.int32), repr=False)

    @property
    def n_words(self) -> int:
        """Source sentence length."""
        return len(self.sentence)

    def __len__(self) -> int:
        return len(self.start)

    def target(self, option: int) -> np.ndarray:
        """Target word ids of one option."""
        return self.tgt_words[self.tgt_offsets[option]:self.tgt_offsets[option + 1]]

    def span(self, start: int, end: int) -> range:
        """Indices of the options covering exactly ``[start, end)``."""
        k = start * self.max_length + (end - start - 1)
        return range(self.span_offsets[k], self.span_offsets[k + 1])

    def block_scores(self, model: TranslationModel) -> tuple[np.ndarray, np.ndarray]:
        """The model's block family on these options (``TranslationModel.block_scores``, which must be set):
        (option-local ``float64[n_opt]``, orientation weights ``float64[n_opt, 3]`` in msd order)."""
        other = np.flatnonzero(self.candidate < 0)  # unknown words and markup: their own source and target
        src_offsets = np.concatenate([[0], np.cumsum(self.end[other] - self.start[other])]).astype(np.int64)
        src_words = (np.concatenate([self.sentence[self.start[o]:self.end[o]] for o in other]) if len(other)
                     else np.zeros(0, np.int32))
        return model.block_scores.options(self.candidate, src_offsets, src_words,
                                          *csr.take(self.tgt_offsets, self.tgt_words, other))

    def is_unknown(self, option: int) -> bool:
        """Whether option ``option`` is an unknown word passed through."""
        return bool(self.candidate[option] == UNKNOWN)

    def is_markup(self, option: int) -> bool:
        """Whether option ``option`` is a translation the input's markup gives."""
        return bool(self.candidate[option] <= MARKUP)

    @classmethod
    def build(cls, model: TranslationModel, sentence: np.ndarray, vocab: Vocab | Overlay | None = None,
              markup: Markup | None = None) -> "TranslationOptions":
        """Options of ``sentence`` (``int32[n]`` ids in ``vocab``: ``model.vocab`` or an ``Overlay`` of it, see
        ``of_words``); with the model's block features (``pbmt.model.block_features``), ``local_score`` includes their
        option-local part. ``markup``: what the input's markup says of the sentence (``pbmt.base.markup``): its
        translations join the options as its ``use`` says (their words must be in ``vocab``), and its walls and
        zones constrain the searches."""
        vocab = model.vocab if vocab is None else vocab
        markup = Markup() if markup is None else markup
        sentence = np.asarray(sentence, dtype=np.int32)
        n = len(sentence)
        longest = max((s.end - s.start for s in markup.spans), default=1)
        width = max(1, min(max(model.settings.max_phrase_length, longest), n))
        phrases = model.phrases
        spans = phrases.lookup(sentence, width) if n else np.zeros((0, width), np.int32)

        starts, lengths = np.nonzero(spans >= 0)
        phrase = spans[starts, lengths]
        first = phrases.cand_offsets[phrase]
        counts = phrases.cand_offsets[phrase + 1] - first
        known_offsets = np.zeros(len(counts) + 1, dtype=np.int64)
        np.cumsum(counts, out=known_offsets[1:])
        candidate = (np.repeat(first - known_offsets[:-1], counts) + np.arange(known_offsets[-1])).astype(np.int64)
        opt_start = np.repeat(starts, counts)
        opt_len = np.repeat(lengths, counts)
        unknown = np.flatnonzero(spans[:, 0] < 0) if n else np.zeros(0, np.int64)
        given = [(s.start, s.end, words, log_p) for s in markup.spans
                 for words, log_p in zip(s.translations, s.log_probs())]
        if given:
            keep, keep_unknown = _agreeing(opt_start, opt_start + opt_len + 1, candidate, unknown, markup, phrases,
                                           vocab)
            opt_start, opt_len, candidate = opt_start[keep], opt_len[keep], candidate[keep]
            unknown = unknown[keep_unknown]

        opt_start = np.concatenate([opt_start, unknown, [g[0] for g in given]]).astype(np.int32)
        opt_len = np.concatenate([opt_len, np.zeros(len(unknown), np.int64),
                                  [g[1] - g[0] - 1 for g in given]]).astype(np.int32)
        candidate = np.concatenate([candidate, np.full(len(unknown), UNKNOWN), MARKUP - np.arange(len(given))])
        order = np.lexsort((opt_len, opt_start))  # stable: candidates keep the table's best-first order
        opt_start, opt_len, candidate = opt_start[order], opt_len[order], candidate[order]
        opt_end = (opt_start + opt_len + 1).astype(np.int32)
        is_unknown = candidate == UNKNOWN
        is_given = candidate <= MARKUP
        is_table = candidate >= 0
        known = candidate[is_table]

        # the table's rows for its options; unknown words and given translations take rows of their own (the
        # unknown words' first, in option order, then the given ones), merged in option order
        unknown_words = sentence[opt_start[is_unknown]]
        given_offsets, given_words = csr.from_rows([vocab.ids(g[2]) for g in given])
        other = ~is_table
        other_rows = np.where(is_unknown, np.cumsum(is_unknown) - 1, len(unknown_words) + MARKUP - candidate)[other]
        other_offsets = np.concatenate([np.arange(len(unknown_words) + 1), len(unknown_words) + given_offsets[1:]])
        other_words = np.concatenate([unknown_words, given_words]).astype(np.int32)
        tgt_offsets, tgt_words = csr.merged(is_table, csr.take(phrases.tgt_offsets, phrases.tgt_words, known),
                                            csr.take(other_offsets, other_words, other_rows))
        every_pair = [np.array([(s, t) for s in range(n_src) for t in range(n_tgt)], np.int16).reshape(-1, 2)
                      for n_src, n_tgt in [(1, 1)] * len(unknown_words) + [(g[1] - g[0], len(g[2])) for g in given]]
        link_offsets, links = csr.from_rows(every_pair, np.int16) if every_pair else (np.zeros(1, np.int64),
                                                                                      np.zeros(0, np.int16))
        align_offsets, align = csr.merged(is_table, csr.take(phrases.align_offsets, phrases.align, known),
                                          csr.take(link_offsets, links.reshape(-1, 2), other_rows))

        local = np.empty((len(candidate), model.layout.size))
        local[is_table] = model.cand_local[known]
        if len(unknown_words):
            letterless = np.array([not any(c.isalpha() for c in w) for w in vocab.words(unknown_words)], bool)
            local[is_unknown] = np.where(letterless[:, None], model.unknown_word_local(letterless=True),
                                         model.unknown_word_local())
        for o in np.flatnonzero(is_given):
            _, _, words, log_p = given[MARKUP - candidate[o]]
            local[o] = model.markup_local(len(words), log_p)
        reordering = np.zeros((len(candidate), model.reordering.shape[1]))
        reordering[is_table] = model.reordering[known]
        if model.reordering_tables and is_given.any():
            given_rows = np.flatnonzero(is_given)
            pairs = (*csr.from_rows([sentence[opt_start[o]:opt_end[o]] for o in given_rows]),
                     *csr.take(tgt_offsets, tgt_words, given_rows))
            reordering[given_rows] = np.hstack([table.pair_scores(*pairs) for table in model.reordering_tables])
        lm_estimate = np.empty(len(candidate))
        lm_estimate[is_table] = model.cand_lm_estimate[known]
        outside = np.flatnonzero(other)  # unknown words and given translations
        if len(outside):
            lm_estimate[outside] = model.estimate(PhrasePairs(
                *csr.from_rows([sentence[opt_start[o]:opt_end[o]] for o in outside]),
                *csr.take(tgt_offsets, tgt_words, outside), *csr.take(align_offsets, align, outside),
                is_unknown[outside], vocab))
        local_score = local @ model.weights

        span_counts = np.bincount(opt_start.astype(np.int64) * width + opt_len, minlength=n * width)
        span_offsets = np.zeros(n * width + 1, dtype=np.int64)
        np.cumsum(span_counts, out=span_offsets[1:])
        options = cls(sentence, width, opt_start, opt_end, candidate, tgt_offsets, tgt_words, local, local_score,
                      reordering, lm_estimate, span_offsets, np.zeros((n + 1, n + 1)), align_offsets, align, vocab,
                      *markup.constraints(n))
        if model.block_scores is not None:
            local_score = local_score + options.block_scores(model)[0]
        if isinstance(vocab, Overlay) and len(model.vocab) != vocab.size:
            raise RuntimeError("the model's vocabulary grew after the sentence's overlay was made (make it with "
                               "TranslationModel.overlay), so their ids collide")
        return replace(options, local_score=local_score,
                       future=future_table(n, opt_start, opt_end, local_score + lm_estimate))


    @classmethod
    def of_words(cls, model: TranslationModel, words: list[str], markup: Markup | None = None
                 ) -> "TranslationOptions":
        """Options of a sentence given as the model's tokens, and what its markup says (``build``); words the
        model does not know get ids in an ``Overlay`` of this sentence alone (``model.vocab`` is shared and
        never grows)."""
        given = [w for s in markup.spans for t in s.translations for w in t] if markup is not None else []
        overlay = model.overlay(list(words) + given)
        return cls.build(model, overlay.ids(words), overlay, markup)


UNKNOWN = -1  # ``TranslationOptions.candidate`` of an unknown word passed through
MARKUP = -2  # ... and, minus k, of translation k the input's markup gives


def _agreeing(start, end, candidate, unknown, markup: Markup, phrases, vocab) -> tuple[np.ndarray, np.ndarray]:
    """Which table options (spans ``[start, end)``, ``candidate``) and which unknown words (positions
    ``unknown``) take part beside the translations ``markup`` gives, as its ``use`` says (``pbmt.base.markup``):
    (bool mask of the options, bool mask of the unknown words). A word inside a given span is never passed
    through unknown but in ``inclusive`` use."""
    keep = np.ones(len(start), bool)
    keep_unknown = np.ones(len(unknown), bool)
    if markup.use == "inclusive":
        return keep, keep_unknown
    for span in markup.spans:
        overlaps = (start < span.end) & (end > span.start)
        keep_unknown &= (unknown < span.start) | (unknown >= span.end)
        if markup.use == "exclusive":
            keep &= ~overlaps
            continue
        covers = (start <= span.start) & (end >= span.end)
        keep &= ~overlaps | covers
        wanted = [vocab.ids(t) for t in span.translations]
        for o in np.flatnonzero(keep & covers):
            target = phrases.tgt_words[phrases.tgt_offsets[candidate[o]]:phrases.tgt_offsets[candidate[o] + 1]]
            keep[o] = any(_contains(target, w) for w in wanted)
    return keep, keep_unknown


def _contains(words: np.ndarray, part: np.ndarray) -> bool:
    """Whether ``part`` occurs in ``words`` as a contiguous run."""
    return any(np.array_equal(words[i:i + len(part)], part) for i in range(len(words) - len(part) + 1))

