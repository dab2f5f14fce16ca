"""Translation options of one source sentence.

For every source span up to the maximum phrase length: the phrase table's
candidates (pruned under the model's weights), their option-local feature
values and scores, and the future-cost table. A source word the table does not
know gets one option that passes it through with the unknown-word penalty
(Moses's -100), except a token without letters (a number, punctuation), which
copying translates: it passes through at no penalty.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from pbmt import csr
from pbmt.model.model import TranslationModel
from pbmt.search._future_kernels import future_table
from pbmt.vocab import Overlay, Vocab


@dataclass(frozen=True)
class TranslationOptions:
    """Options of one sentence, sorted by (start, length), as flat arrays.

    Option ``o`` covers source words ``start[o] .. end[o] - 1`` and produces
    ``tgt_words[tgt_offsets[o]:tgt_offsets[o+1]]`` (global ids). ``candidate[o]``
    is its phrase-table candidate (-1: unknown word passed through).
    ``local[o]`` holds its option-local feature values (``float64[n_opt,
    n_features]``, natural log; transition columns are zero), ``local_score[o]``
    their weighted sum, ``reordering[o]`` its six reordering log probabilities,
    ``lm_inside[o]`` the LM's inside estimate of its target words (log10).
    Options of span ``(i, i + l + 1)`` are ``span_offsets[i * max_length + l]``
    up to ``span_offsets[i * max_length + l + 1]``. ``future[i, j]`` is the best
    estimated score of translating ``[i, j)`` (natural log, weighted).
    ``vocab`` turns the sentence's ids back into words: the model's, or an
    ``Overlay`` of it holding the sentence's words the model does not know.
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
    lm_inside: np.ndarray
    span_offsets: np.ndarray
    future: np.ndarray
    vocab: Vocab | Overlay = field(repr=False)

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
        return model.block_scores.options(self.candidate, self.sentence[self.start[self.candidate < 0]])

    @classmethod
    def build(cls, model: TranslationModel, sentence: np.ndarray,
              vocab: Vocab | Overlay | None = None) -> "TranslationOptions":
        """Options of ``sentence`` (``int32[n]`` ids in ``vocab``: ``model.vocab`` or an ``Overlay`` of it, see
        ``of_words``); with the model's block features (``pbmt.model.block_features``), ``local_score`` includes their
        option-local part."""
        vocab = model.vocab if vocab is None else vocab
        sentence = np.asarray(sentence, dtype=np.int32)
        n = len(sentence)
        width = max(1, min(model.settings.max_phrase_length, n))
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
        opt_start = np.concatenate([opt_start, unknown]).astype(np.int32)
        opt_len = np.concatenate([opt_len, np.zeros(len(unknown), np.int64)]).astype(np.int32)
        candidate = np.concatenate([candidate, np.full(len(unknown), -1)])
        order = np.lexsort((opt_len, opt_start))  # stable: candidates keep the table's best-first order
        opt_start, opt_len, candidate = opt_start[order], opt_len[order], candidate[order]
        is_unknown = candidate < 0
        known = candidate[~is_unknown]

        # unknown words become extra one-word rows after the table's own
        unknown_words = sentence[opt_start[is_unknown]]
        n_cand = phrases.n_candidates
        rows = np.where(is_unknown, n_cand + np.cumsum(is_unknown) - 1, candidate)
        ext_offsets = np.concatenate([phrases.tgt_offsets, phrases.tgt_offsets[-1] + 1 + np.arange(len(unknown_words))])
        ext_words = np.concatenate([phrases.tgt_words, unknown_words]).astype(np.int32)
        tgt_offsets, tgt_words = csr.take(ext_offsets, ext_words, rows)

        local = np.empty((len(candidate), model.layout.size))
        local[~is_unknown] = model.cand_local[known]
        letterless = np.array([not any(c.isalpha() for c in w) for w in vocab.words(unknown_words)], bool)
        local[is_unknown] = np.where(letterless[:, None], model.unknown_word_local(letterless=True),
                                     model.unknown_word_local())
        reordering = np.zeros((len(candidate), model.reordering.shape[1]))
        reordering[~is_unknown] = model.reordering[known]
        lm_inside = np.empty(len(candidate))
        lm_inside[~is_unknown] = model.cand_lm_inside[known]
        lm_inside[is_unknown] = model.lm.phrase_scores(np.arange(len(unknown_words) + 1, dtype=np.int64), unknown_words)
        local_score = local @ model.weights

        span_counts = np.bincount(opt_start.astype(np.int64) * width + opt_len, minlength=n * width)
        span_offsets = np.zeros(n * width + 1, dtype=np.int64)
        np.cumsum(span_counts, out=span_offsets[1:])
        opt_end = (opt_start + opt_len + 1).astype(np.int32)
        options = cls(sentence, width, opt_start, opt_end, candidate, tgt_offsets, tgt_words, local, local_score,
                      reordering, lm_inside, span_offsets, np.zeros((n + 1, n + 1)), vocab)
        if model.block_scores is not None:
            local_score = local_score + options.block_scores(model)[0]
        if isinstance(vocab, Overlay) and len(model.vocab) != vocab.size:
            raise RuntimeError("the model's vocabulary grew after the sentence's overlay was made (make it with "
                               "TranslationModel.overlay), so their ids collide")
        return replace(options, local_score=local_score,
                       future=_future(n, opt_start, opt_end, local_score, lm_inside, model))


    @classmethod
    def of_words(cls, model: TranslationModel, words: list[str]) -> "TranslationOptions":
        """Options of a sentence given as the model's tokens; words the model does not know get ids in an
        ``Overlay`` of this sentence alone (``model.vocab`` is shared and never grows)."""
        overlay = model.overlay(words)
        return cls.build(model, overlay.ids(words), overlay)


def _future(n, start, end, local_score, lm_inside, model: TranslationModel) -> np.ndarray:
    return future_table(n, start, end, local_score + model.lm_weight_ln * lm_inside)
