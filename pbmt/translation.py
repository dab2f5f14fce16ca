"""Translating text: preprocessing, decoding, n-best entries, postprocessing.

``Translator`` is what ``pbmt translate`` runs, in one process or in each
worker process: it turns a line of plain text (tokenised and lowercased as the
model's ``pbmt.toml`` says, unless the text is already tokenised) into a
``Translation``; ``translate_document`` translates the lines of a document
jointly, with the sampler and global features.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Sequence

import numpy as np

from pbmt.features.base import GlobalFeature
from pbmt.model.model import TranslationModel
from pbmt.search.decoder import decode
from pbmt.search.derivation import Derivation
from pbmt.search.document_decoder import DEFAULT_ANNEAL, decode_document
from pbmt.search.options import TranslationOptions
from pbmt.search.output import nbest_entries, target_text, word_alignment
from pbmt.model.lm import LMCache
from pbmt.train.corpus import text_tokenizer
from pbmt.tune.nbest import NBestEntry


@dataclass(frozen=True)
class Translation:
    """The translation of one line: output text, n-best entries, 1-best word alignment."""

    text: str
    nbest: tuple[NBestEntry, ...]
    alignment: tuple[tuple[int, int], ...]


class Translator:
    """Translates lines of text with one model.

    ``n_best``: n-best entries per sentence (0: none); ``distinct``: n-best
    entries with distinct target strings; ``tokenized``: input is already in
    the model's token form (skip tokenising, lowercasing and detokenising).
    """

    def __init__(self, model: TranslationModel, n_best: int = 0, distinct: bool = False, tokenized: bool = False):
        self.model = model
        self.n_best = n_best
        self.distinct = distinct
        self.tokenized = tokenized

    @cached_property
    def _tokenizer(self):
        prep = self.model.preprocessing
        if self.tokenized:
            return text_tokenizer(prep.source_language, False, False)
        return text_tokenizer(prep.source_language, prep.tokenize, prep.lowercase)

    @cached_property
    def _detokenizer(self):
        from sacremoses import MosesDetokenizer
        return MosesDetokenizer(self.model.preprocessing.target_language)

    def tokens(self, line: str) -> list[str]:
        """The model's tokens of a line of input."""
        return self._tokenizer(line)

    def translate(self, sentence_id: int, line: str) -> Translation:
        """Translate one line; ``sentence_id`` numbers its n-best entries."""
        model = self.model
        options = self.options(line)
        found = decode(model, options, n_best=max(1, self.n_best), distinct=self.distinct)
        if not found:
            return Translation("", (), ())
        nbest = nbest_entries(sentence_id, found, options, model) if self.n_best else ()
        return self._translation(found[0].derivation, options, nbest)

    def translate_document(self, lines: Sequence[str], rng: np.random.Generator,
                           global_features: Sequence[GlobalFeature] = (), global_weights: np.ndarray | None = None,
                           steps_per_sentence: int = 1000,
                           temperatures: tuple[float, float] = DEFAULT_ANNEAL) -> tuple[list[Translation], float]:
        """Translate the lines of one document jointly (``pbmt.search.document_decoder.decode_document``).

        Returns one ``Translation`` per line (no n-best entries) and the
        document's model score (dense and global features, natural log).
        """
        options = [self.options(line) for line in lines]
        result = decode_document(self.model, options, rng, global_features, global_weights, steps_per_sentence,
                                 temperatures, lm_cache=self._lm_cache)
        return [self._translation(d, o, ()) for d, o in zip(result.derivations, options)], result.score

    def options(self, line: str) -> TranslationOptions:
        """The translation options of a line of input."""
        return TranslationOptions.build(self.model, self.model.vocab.ids(self.tokens(line)))

    @cached_property
    def _lm_cache(self) -> LMCache:
        return LMCache.new()

    def _translation(self, best: Derivation, options: TranslationOptions, nbest: tuple) -> Translation:
        model = self.model
        text = target_text(best, options, model)
        if model.preprocessing.tokenize and not self.tokenized:
            text = self._detokenizer.detokenize(text.split())
        return Translation(text, nbest, tuple(word_alignment(best, options, model)))
