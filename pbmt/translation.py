"""Translating text: preprocessing, decoding, n-best entries, postprocessing.

``Translator`` is what ``pbmt translate`` runs, in one process or in each
worker process: it turns a line of plain text (tokenised and lowercased as the
model's ``pbmt.toml`` says, unless the text is already tokenised) into a
``Translation``.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from pbmt.model.model import TranslationModel
from pbmt.search.decoder import decode
from pbmt.search.options import TranslationOptions
from pbmt.search.output import nbest_entry, target_text, word_alignment
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
        options = TranslationOptions.build(model, model.vocab.ids(self.tokens(line)))
        found = decode(model, options, n_best=max(1, self.n_best), distinct=self.distinct)
        if not found:
            return Translation("", (), ())
        best = found[0].derivation
        text = target_text(best, options, model)
        if model.preprocessing.tokenize and not self.tokenized:
            text = self._detokenizer.detokenize(text.split())
        nbest = tuple(nbest_entry(sentence_id, s, options, model) for s in found) if self.n_best else ()
        return Translation(text, nbest, tuple(word_alignment(best, options, model)))
