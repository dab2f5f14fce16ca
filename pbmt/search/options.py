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
from pbmt.search._options_kernels import span_offsets, table_options
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
              markup: Markup | None = None, compiled: bool = True) -> "TranslationOptions":
        """Options of ``sentence`` (``int32[n]`` ids in ``vocab``: ``model.vocab`` or an ``Overlay`` of it, see
        ``of_words``); with the model's block features (``pbmt.model.block_features``), ``local_score`` includes their
        option-local part. ``markup``: what the input's markup says of the sentence (``pbmt.base.markup``): its
        translations join the options as its ``use`` says (their words must be in ``vocab``), and its walls and
        zones constrain the searches.

        The table's options and the unknown words' are laid out by a kernel that releases Python's lock
        (``_options_kernels.table_options``), so threads decoding other sentences go on meanwhile; a sentence
        whose markup gives translations has them merged in Python. ``compiled=False`` lays them out with the
        kernel's Python instead, without compiling it (milliseconds for a short sentence): for a process that
        lays out one sentence and wants its compile time for other kernels (the compiling child of
        ``pbmt.commands.precompile``), leaving the layout kernel's compile to a process that needs it."""
        vocab = model.vocab if vocab is None else vocab
        markup = Markup() if markup is None else markup
        sentence = np.asarray(sentence, dtype=np.int32)
        n = len(sentence)
        given = [(s.start, s.end, words, log_p) for s in markup.spans
                 for words, log_p in zip(s.translations, s.log_probs())]
        longest = max((s.end - s.start for s in markup.spans), default=1)
        width = max(1, min(max(model.settings.max_phrase_length, longest), n))
        phrases = model.phrases
        spans = phrases.lookup(sentence, width)
        unknown_local, letterless, unknown_estimate = _unknown_words(model, sentence, np.flatnonzero(spans[:, 0] < 0),
                                                                     vocab)
        lay_out = table_options if compiled else table_options.py_func
        arrays = lay_out(spans, phrases.cand_offsets, phrases.tgt_offsets, phrases.tgt_words,
                               phrases.align_offsets, phrases.align, model.cand_local, model.cand_lm_estimate,
                               model.reordering, sentence, unknown_local, letterless, unknown_estimate)
        if given:
            arrays = _with_given(arrays, given, markup, model, sentence, width, vocab)
        start, end, candidate, tgt_offsets, tgt_words, align_offsets, align, local, reordering, lm_estimate, \
            by_span = arrays
        local_score = local @ model.weights
        options = cls(sentence, width, start, end, candidate, tgt_offsets, tgt_words, local, local_score,
                      reordering, lm_estimate, by_span, np.zeros((n + 1, n + 1)), align_offsets, align, vocab,
                      *markup.constraints(n))
        if model.block_scores is not None:
            local_score = local_score + options.block_scores(model)[0]
        if isinstance(vocab, Overlay) and len(model.vocab) != vocab.size:
            raise RuntimeError("the model's vocabulary grew after the sentence's overlay was made (make it with "
                               "TranslationModel.overlay), so their ids collide")
        return replace(options, local_score=local_score, future=future_table(n, start, end, local_score + lm_estimate))


    @classmethod
    def of_words(cls, model: TranslationModel, words: list[str], markup: Markup | None = None,
                 compiled: bool = True) -> "TranslationOptions":
        """Options of a sentence given as the model's tokens, and what its markup says (``build``, as is
        ``compiled``); words the model does not know get ids in an ``Overlay`` of this sentence alone
        (``model.vocab`` is shared and never grows)."""
        given = [w for s in markup.spans for t in s.translations for w in t] if markup is not None else []
        overlay = model.overlay(list(words) + given)
        return cls.build(model, overlay.ids(words), overlay, markup, compiled)


UNKNOWN = -1  # ``TranslationOptions.candidate`` of an unknown word passed through
MARKUP = -2  # ... and, minus k, of translation k the input's markup gives


def _unknown_words(model: TranslationModel, sentence: np.ndarray, unknown: np.ndarray, vocab: Vocab | Overlay
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """What ``table_options`` reads of the words at positions ``unknown`` of ``sentence``, which the table does
    not know: (the option-local features of an unknown word with letters and of one without, ``float64[2,
    n_features]``: ``TranslationModel.unknown_rows``; which words have no letter, ``bool[n]``; the estimate of each
    passed through, ``float64[n]``: ``TranslationModel.estimate``). Zeros where every word is known, but for the
    features (read-only, whatever the sentence: one specialisation of the kernel)."""
    n = len(sentence)
    letterless = np.zeros(n, bool)
    estimate = np.zeros(n)
    if not len(unknown):
        return model.unknown_rows, letterless, estimate
    words = sentence[unknown]
    letterless[unknown] = [not any(c.isalpha() for c in w) for w in vocab.words(words)]
    ones = np.arange(len(unknown) + 1, dtype=np.int64)
    links = np.zeros((len(unknown), 2), np.int16)  # each word to itself
    estimate[unknown] = model.estimate(PhrasePairs(ones, words, ones, words, ones, links, np.ones(len(unknown), bool),
                                                   vocab))
    return model.unknown_rows, letterless, estimate


def _with_given(arrays: tuple, given: list, markup: Markup, model: TranslationModel, sentence: np.ndarray,
                width: int, vocab: Vocab | Overlay) -> tuple:
    """``table_options``'s arrays with the translations the markup gives (``given``: (start, end, target words,
    log probability) each) in their places, after the options that take part beside them as its ``use`` says
    (``_agreeing``); the same arrays of the options sorted by (start, length), the table's and unknown words'
    before the given ones of a span."""
    start, end, candidate, tgt_offsets, tgt_words, align_offsets, align, local, reordering, lm_estimate, _ = arrays
    kept = np.flatnonzero(_agreeing(start, end, candidate, markup, model.phrases, vocab))
    every_start = np.concatenate([start[kept], [s for s, _, _, _ in given]]).astype(np.int32)
    every_end = np.concatenate([end[kept], [e for _, e, _, _ in given]]).astype(np.int32)
    order = np.lexsort((every_end - every_start, every_start))  # stable: the kept options first
    from_table = order < len(kept)
    rows = kept[order[from_table]]
    marked = order[~from_table] - len(kept)  # the given translations, in option order
    out_start, out_end = every_start[order], every_end[order]
    out_candidate = np.concatenate([candidate[kept], MARKUP - np.arange(len(given))])[order]
    given_src = csr.from_rows([sentence[given[k][0]:given[k][1]] for k in marked])
    given_tgt = csr.from_rows([vocab.ids(given[k][2]) for k in marked])
    given_align = csr.from_rows([np.array([(s, t) for s in range(given[k][1] - given[k][0])
                                           for t in range(len(given[k][2]))], np.int16).reshape(-1, 2)
                                 for k in marked], np.int16)
    out_tgt = csr.merged(from_table, csr.take(tgt_offsets, tgt_words, rows), given_tgt)
    out_align = csr.merged(from_table, csr.take(align_offsets, align, rows), given_align)
    out_local = np.empty((len(order), local.shape[1]))
    out_local[from_table] = local[rows]
    out_local[~from_table] = [model.markup_local(len(given[k][2]), given[k][3]) for k in marked]
    out_reordering = np.zeros((len(order), reordering.shape[1]))
    out_reordering[from_table] = reordering[rows]
    if model.reordering_tables:
        out_reordering[~from_table] = np.hstack([table.pair_scores(*given_src, *given_tgt)
                                                 for table in model.reordering_tables])
    out_estimate = np.empty(len(order))
    out_estimate[from_table] = lm_estimate[rows]
    out_estimate[~from_table] = model.estimate(PhrasePairs(*given_src, *given_tgt, *given_align,
                                                           np.zeros(len(marked), bool), vocab))
    return (out_start, out_end, out_candidate, *out_tgt, *out_align, out_local, out_reordering, out_estimate,
            span_offsets(len(sentence), width, out_start, out_end))


def _agreeing(start, end, candidate, markup: Markup, phrases, vocab) -> np.ndarray:
    """Which of the table's and unknown words' options (spans ``[start, end)``, ``candidate``) take part beside
    the translations ``markup`` gives, as its ``use`` says (``pbmt.base.markup``): a bool mask. A word inside a
    given span is never passed through unknown but in ``inclusive`` use."""
    keep = np.ones(len(start), bool)
    if markup.use == "inclusive":
        return keep
    for span in markup.spans:
        overlaps = (start < span.end) & (end > span.start)
        if markup.use == "exclusive":
            keep &= ~overlaps
            continue
        covers = (start <= span.start) & (end >= span.end) & (candidate != UNKNOWN)
        keep &= ~overlaps | covers
        wanted = [vocab.ids(t) for t in span.translations]
        for o in np.flatnonzero(keep & covers):
            target = phrases.tgt_words[phrases.tgt_offsets[candidate[o]]:phrases.tgt_offsets[candidate[o] + 1]]
            keep[o] = any(_contains(target, w) for w in wanted)
    return keep


def _contains(words: np.ndarray, part: np.ndarray) -> bool:
    """Whether ``part`` occurs in ``words`` as a contiguous run."""
    return any(np.array_equal(words[i:i + len(part)], part) for i in range(len(words) - len(part) + 1))

