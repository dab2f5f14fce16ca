"""Translating text: preprocessing, decoding, n-best entries, postprocessing.

``Translator`` is what ``pbmt translate`` runs, in one process or in each
worker process: it turns a line of plain text into a ``Translation``: the
line is tokenised and truecased (or lowercased) as the model's ``pbmt.toml``
says, unless it is already in the model's token form; the output is
detruecased (a capital at the start, unless the source line starts
lowercase) and detokenised. A source word the
phrase table does not know passes through in its original form (casing
included), not in the model's casing. ``translate_document`` translates the
lines of a document jointly, with the sampler and global features.
"""

from __future__ import annotations

import dataclasses
import threading
import unicodedata
from collections import OrderedDict
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Callable, Container, Sequence

import numpy as np

from pbmt.base.errors import FormatError, PbmtError
from pbmt.features.base import GlobalFeature
from pbmt.base.markup import XML_MODES, Markup, MarkupError, matched_quotes, parse as parse_markup
from pbmt.model.model import DEFAULT_ANNEAL, TranslationModel
from pbmt.search.decoder import Paths, best_path_arrays, decode_paths, search
from pbmt.search.derivation import Derivation
from pbmt.search.options import UNKNOWN, TranslationOptions
from pbmt.search.output import NBestList, derivation_layout
from pbmt.search.transitions import Transitions, transitions
from pbmt.base.placeholders import restore
from pbmt.base.text import starts_lowercase, tokenizer, tokens
from pbmt.base.nbest import NBestEntry

if TYPE_CHECKING:  # forced, lattice and document decoding load when first used: a plain run never needs them
    from pbmt.search.forced import ForcedDecoder, ForcedResult
    from pbmt.search.lattice import Lattice


RECENT_SENTENCES = 16  # sentences whose translation options prefix completion keeps (``_recent_options``)
_RECENT: OrderedDict = OrderedDict()  # (model id, line, reading) -> (model, tokens, options), oldest first
_RECENT_LOCK = threading.Lock()


@dataclass(frozen=True)
class Translation:
    """The translation of one line: output text, n-best entries (``pbmt.search.output.NBestList``; empty: a
    tuple), 1-best word alignment; ``nbest_output``: each n-best entry's output text (as ``text`` is made)
    when the translator was asked for them, else empty; under a constraint none satisfies (forced decoding),
    the empty translation and ``unreachable``, why. ``source_length``: the line's tokens as the translator read
    them (``Translator.read``), counted while it had them, so a caller need not tokenise the line again."""

    text: str
    nbest: Sequence[NBestEntry]
    alignment: tuple[tuple[int, int], ...]
    nbest_output: tuple[str, ...] = ()
    unreachable: str = ""
    source_length: int = 0


class Translator:
    """Translates lines of text with one model.

    ``n_best``: n-best entries per sentence (0: none); ``distinct``: n-best
    entries with distinct target strings; ``tokenized``: input is already in
    the model's token form (skip tokenising, casing, detruecasing and
    detokenising). N-best entries are in the model's token form; ``nbest_output``: also make each one's output
    text (detokenised unless ``tokenized``), which costs a detokenisation per entry.
    ``xml_input``: how markup in a line is read (``pbmt.base.markup.XML_MODES``;
    ``pass-through``: not at all); ``quote_zones``: paired quotes, brackets and
    tags are zones (``pbmt.base.markup.quote_zones``). ``compiled_layout``: lay out each sentence's options with
    the compiled layout kernel (False: with its Python, ``TranslationOptions.build``'s ``compiled``).
    """

    def __init__(self, model: TranslationModel, n_best: int = 0, distinct: bool = False, tokenized: bool = False,
                 nbest_output: bool = False, xml_input: str = "pass-through", quote_zones: bool = True,
                 compiled_layout: bool = True):
        if xml_input not in XML_MODES:
            raise ValueError(f"unknown xml_input {xml_input!r}; known: {', '.join(XML_MODES)}")
        self.model = model
        self.n_best = n_best
        self.distinct = distinct
        self.tokenized = tokenized
        self.nbest_output = nbest_output
        self.xml_input = xml_input
        self.quote_zones = quote_zones
        self.compiled_layout = compiled_layout

    def __reduce__(self):
        # not what it caches
        return type(self), (self.model, self.n_best, self.distinct, self.tokenized, self.nbest_output,
                            self.xml_input, self.quote_zones, self.compiled_layout)

    def read(self, line: str) -> tuple[list[str], Markup]:
        """The tokens of a line of input in their original casing (``split``), without its markup, and what
        the markup says of them (``pbmt.base.markup``). Raises MarkupError for malformed markup, unless
        ``xml_input`` is ``ignore`` (the line is then text)."""
        markup = Markup()
        if self.xml_input == "pass-through":
            words = self.split(line)
        else:
            split_target = tokens if self.tokenized else self.model.preprocessing.target_form.split
            try:
                words, markup = parse_markup(line, self.split, split_target, self.xml_input)
            except MarkupError:
                if self.xml_input != "ignore":
                    raise
                words = self.split(line)
        markup = markup.with_punctuation_walls(words, self.model.preprocessing.source_form.protected)
        return words, markup.with_quote_zones(words) if self.quote_zones else markup

    def model_input(self, line: str) -> tuple[list[str], Markup]:
        """The model's tokens of a line of input and what its markup says of them (``read``, then ``cased``)."""
        words, markup = self.read(line)
        return self.cased(words), markup

    def split(self, line: str) -> list[str]:
        """The tokens of a line of input in their original casing."""
        return tokens(line) if self.tokenized else self.model.preprocessing.source_form.split(line)

    def tokens(self, line: str) -> list[str]:
        """The model's tokens of a line of input."""
        return tokens(line) if self.tokenized else self.model.preprocessing.source_form.tokens(line)

    def translate(self, sentence_id: int, line: str) -> Translation:
        """Translate one line; ``sentence_id`` numbers its n-best entries."""
        words, markup = self.read(line)
        options = self.options(words, markup)
        scores = transitions(self.model, options)  # built once for the search and the n-best entries
        return self._result(sentence_id, decode_paths(self.model, options, n_best=max(1, self.n_best),
                                                      distinct=self.distinct, sentence_transitions=scores),
                            options, words, scores)

    def force(self, sentence_id: int, line: str, reference: str) -> Translation:
        """Forced decoding (``pbmt.search.forced``): the best derivations of one line whose output is exactly
        the line ``reference`` (in the model's target tokens: tokenised and cased as the model's target
        side, unless ``tokenized``); unreachable, the empty translation and why."""
        words, markup = self.read(line)
        options = self.options(words, markup)
        result = self.forced_decoder.decode(options, self.target_tokens(reference), n_best=max(1, self.n_best))
        return self._constrained(sentence_id, result, options, words)

    def complete(self, sentence_id: int, line: str, prefix: str) -> Translation:
        """Prefix-constrained decoding (``pbmt.search.forced.prefix_decode``): the best translations of one line
        that begin with ``prefix`` (target text, in the form of the input: plain, or the model's tokens with
        ``tokenized``), n-best entries with distinct target words. Unless ``prefix`` ends in white space, its
        last word may be unfinished: the translation's word there begins with it. No translation begins with
        it: the empty translation and why. An empty prefix is ``translate``. The translation's first letter is
        cased as the prefix's (``Failed`` typed for a source that starts lowercase: ``Failed to…``, not ``failed
        to…``)."""
        from pbmt.search.forced import prefix_decode

        words, options = self._recent_options(line)
        typed = self.target_tokens(prefix)
        partial = typed.pop() if typed and not prefix[-1:].isspace() else ""
        result = prefix_decode(self.model, options, typed, partial, n_best=max(1, self.n_best))
        unfinished = self._unfinished_token(prefix, typed, partial) if not result.reachable and partial else None
        if unfinished is not None:
            result = prefix_decode(self.model, options, *unfinished, n_best=max(1, self.n_best))
        translation = self._constrained(sentence_id, result, options, words)
        first = prefix.lstrip()[:1]
        if self.tokenized or not first.isalpha():
            return translation
        return dataclasses.replace(translation, text=_first_as(translation.text, first),
                                   nbest_output=tuple(_first_as(text, first) for text in translation.nbest_output))

    def _unfinished_token(self, prefix: str, typed: list[str], partial: str) -> tuple[list[str], str] | None:
        """The prefix's words and unfinished word when its last word, typed so far, is cut into several tokens
        that one token of the translation begins with (``10:`` of ``10:30``, ``<b`` of ``<b>``, ``http:`` of a
        URL: the tokeniser cuts what it keeps whole once finished): that word as one unfinished token; None
        when the last word is one token."""
        pieces = self.target_tokens(prefix.split()[-1])
        cut = len(typed) - (len(pieces) - 1)
        if len(pieces) < 2 or cut < 0 or typed[cut:] + [partial] != pieces:
            return None
        return typed[:cut], "".join(pieces)

    def _recent_options(self, line: str) -> tuple[list[str], TranslationOptions]:
        """A line's tokens (``read``) and translation options, kept for the last ``RECENT_SENTENCES`` lines read
        this way with any translator: interactive translation asks for the completions of many prefixes of
        one sentence, one a keystroke, and the options (phrase look-ups, future costs) do not depend on the
        prefix. A model with other weights or settings is another model, so another key."""
        key = (id(self.model), line, self.tokenized, self.xml_input, self.quote_zones)
        with _RECENT_LOCK:
            kept = _RECENT.get(key)
            if kept is not None and kept[0] is self.model:
                _RECENT.move_to_end(key)
                return list(kept[1]), kept[2]
        words, markup = self.read(line)
        options = self.options(words, markup)
        with _RECENT_LOCK:
            _RECENT[key] = (self.model, words, options)
            while len(_RECENT) > RECENT_SENTENCES:
                _RECENT.popitem(last=False)
        return words, options

    def _constrained(self, sentence_id: int, result: ForcedResult, options: TranslationOptions,
                     words: list[str]) -> Translation:
        if not result.reachable:
            return Translation("", (), (), unreachable=result.why, source_length=len(words))
        return self._result(sentence_id, Paths.of(result.found), options, words)

    def target_tokens(self, line: str) -> list[str]:
        """The model's target tokens of a line of target text (a reference, a prefix)."""
        return tokens(line) if self.tokenized else self.model.preprocessing.target_form.tokens(line)

    @cached_property
    def forced_decoder(self) -> ForcedDecoder:
        """Forced decoding with this translator's model (built once: it keeps the relaxed models that find why
        a reference is unreachable)."""
        from pbmt.search.forced import ForcedDecoder

        return ForcedDecoder(self.model)

    def translate_with_lattice(self, sentence_id: int, line: str) -> tuple[Translation, Lattice | None]:
        """``translate`` a line of at least one word, and the lattice of the search graph its translation and
        n-best entries came from (``pbmt.search.lattice``; None when the search found no translation)."""
        from pbmt.search.lattice import graph_lattice

        words, markup = self.read(line)
        options = self.options(words, markup)
        scores = transitions(self.model, options)
        graph = search(self.model, options, arcs=True, sentence_transitions=scores)
        if graph.final_class < 0:
            return self._result(sentence_id, Paths.of([]), options, words), None
        found = best_path_arrays(options, graph, max(1, self.n_best), self.distinct)
        return self._result(sentence_id, found, options, words, scores), graph_lattice(graph, options, self.model)

    def _result(self, sentence_id: int, found: Paths, options: TranslationOptions, words: list[str],
                sentence_transitions: Transitions | None = None) -> Translation:
        if not len(found):
            return Translation("", (), (), source_length=len(words))
        nbest = NBestList(sentence_id, found, options, self.model, sentence_transitions) if self.n_best else ()
        translation = self._translation(found.chosen[found.offsets[0]:found.offsets[1]], options, words, nbest)
        if not (self.n_best and self.nbest_output):
            return translation
        return dataclasses.replace(translation, nbest_output=tuple(self.output(s.derivation, options, words)
                                                                   for s in found.scored(options)))

    def translate_document(self, lines: Sequence[str], rng: np.random.Generator,
                           global_features: Sequence[GlobalFeature] = (), global_weights: np.ndarray | None = None,
                           steps_per_sentence: int = 1000,
                           temperatures: tuple[float, float] = DEFAULT_ANNEAL) -> tuple[list[Translation], float]:
        """Translate the lines of one document jointly (``pbmt.search.document_decoder.decode_document``).

        Returns one ``Translation`` per line (no n-best entries) and the
        document's model score (dense and global features, natural log).
        """
        from pbmt.search.document_decoder import decode_document

        words = [self.split(line) for line in lines]
        cased = [self.cased(w) for w in words]
        overlay = self.model.overlay(w for line in cased for w in line)  # one id per word in the document
        options = [TranslationOptions.build(self.model, overlay.ids(c), overlay) for c in cased]
        result = decode_document(self.model, options, rng, global_features, global_weights, steps_per_sentence,
                                 temperatures, lm_cache=self.model.lm_cache)
        return ([self._translation(d.option, o, w, ()) for d, o, w in zip(result.derivations, options, words)],
                result.score)

    def cased(self, words: list[str]) -> list[str]:
        """The model's tokens of a line of input whose tokens (``split``) are ``words``."""
        return words if self.tokenized else self.model.preprocessing.source_form.case(words)

    def options(self, words: list[str], markup: Markup | None = None) -> TranslationOptions:
        """The translation options of a line of input whose tokens (``split``) are ``words``, and what its
        markup says of them (``read``)."""
        return TranslationOptions.of_words(self.model, self.cased(words), markup, self.compiled_layout)

    def output(self, derivation: Derivation, options: TranslationOptions, source: list[str]) -> str:
        """The output text of a derivation of the sentence whose tokens (``split``) are ``source``: unknown
        words as they are in ``source``, then, unless ``tokenized``, a quote's closing mark matched to its
        opening one (``pbmt.base.markup.matched_quotes``), with a model of placeholders their originals put back
        (``pbmt.base.placeholders.restore``), detruecased (the first word capitalised unless
        ``source`` starts lowercase) and detokenised."""
        return self._text(derivation.option, derivation_layout(derivation.option, options), options, source)

    def _text(self, chosen: np.ndarray, layout: tuple[np.ndarray, np.ndarray, list[tuple[int, int]]],
              options: TranslationOptions, source: list[str]) -> str:
        """``output`` of the derivation using the options ``chosen`` (in target order), laid out
        (``derivation_layout``)."""
        word_ids, starts, alignment = layout
        words = options.vocab.words(word_ids)
        chosen = np.asarray(chosen)
        for block in np.flatnonzero(options.candidate[chosen] == UNKNOWN).tolist():
            words[starts[block]] = source[options.start[chosen[block]]]
        if self.tokenized:
            return " ".join(words)
        preprocessing = self.model.preprocessing
        protected = preprocessing.source_form.protected
        if len(options.zones):
            words = matched_quotes(words, alignment, source, options.zones)
        if preprocessing.placeholders:
            words = restore(words, alignment, source, protected)
        return preprocessing.target_form.text(words, not starts_lowercase(source, protected))

    def _translation(self, best: np.ndarray, options: TranslationOptions, source: list[str],
                     nbest: Sequence[NBestEntry]) -> Translation:
        """The translation by the derivation using the options ``best`` (in target order)."""
        layout = derivation_layout(best, options)
        return Translation(self._text(best, layout, options, source), nbest, tuple(layout[2]),
                           source_length=len(source))


def _first_as(text: str, letter: str) -> str:
    """``text`` with its first letter as ``letter`` when they differ by case alone."""
    return letter + text[1:] if text[:1] != letter and text[:1].lower() == letter.lower() else text


#: What to do with text for a model whose ``pbmt.toml`` says nothing of its form (``Preprocessing.keeps_tokens``):
#: ``pbmt tokenize -f`` copies such text as it is, so the advice names what does make the form.
KEEPS_TOKENS_REMEDY = ("the model neither tokenises nor cases plain text: make its token form with pbmt tokenize "
                       "--language L (--lowercase too for a lowercased model), or say the form in a pbmt.toml beside "
                       "its moses.ini (README, 'A Moses model of your own')")


def check_token_form(path, lines: Sequence[Sequence[str]], known: Container[str], language: str,
                     share: float = 0.5, whose: str = "the model",
                     remedy: str = "give plain text without --tokenized, or make the token form with pbmt tokenize"
                     ) -> None:
    """Raise FormatError naming ``path`` and its first such line when at least ``share`` of ``lines`` (the
    tokens of each line of ``path``, as they would reach the model) hold a token that is clearly not in the
    token form of ``known`` (the words of ``whose``: a model's vocabulary, or an n-best list's words): unknown
    while its lowercased or capitalised form is known (text cased unlike the model's), or split further by
    Moses's tokeniser for ``language`` (untokenised punctuation). ``remedy`` ends the message: what to do.
    The tokeniser (sacremoses: 0.3 s to load) is made only for a word it could split (``unsplittable``): text
    in the token form seldom needs it."""
    split: Callable[[str], list[str]] | None = None
    flagged: list[tuple[int, str]] = []
    for number, words in enumerate(lines, 1):
        for word in words:
            if word in known:
                continue
            for variant in (word.lower(), word[:1].upper() + word[1:]):
                if variant != word and variant in known:
                    flagged.append((number, f"{word!r} is known to {whose} only as {variant!r}"))
                    break
            else:
                if unsplittable(word):
                    continue
                split = split or tokenizer(language)
                pieces = split(word)
                if len(pieces) > 1:
                    flagged.append((number, f"{word!r} is {' '.join(pieces)!r} in {whose}'s tokens"))
            if flagged and flagged[-1][0] == number:
                break
    if lines and len(flagged) >= share * len(lines):
        number, what = flagged[0]
        raise FormatError(path, number, f"{what}; {len(flagged)} of {len(lines)} lines are not in {whose}'s "
                          f"token form ({remedy})")


def token_form_warning(path, lines: Sequence[Sequence[str]], known: Container[str], language: str,
                       tokenized: bool) -> str | None:
    """What a verb that reads ``lines`` (the tokens of each line of ``path``) as a model's tokens says of them
    (``check_token_form``'s refusal, as a warning: a translation is still made), or None: ``tokenized``, the
    user said the input is tokens; otherwise the model keeps its input's tokens (no pbmt.toml), and the remedy
    is ``KEEPS_TOKENS_REMEDY``."""
    try:
        check_token_form("<stdin>" if str(path) == "-" else path, lines, known, language,
                         **({} if tokenized else {"remedy": KEEPS_TOKENS_REMEDY}))
    except FormatError as err:
        return str(err)
    return None


def unsplittable(word: str) -> bool:
    """Whether Moses's tokeniser leaves ``word`` whole for certain: one character, or runs of Latin, Greek or
    Cyrillic letters (not modifier letters) and decimal digits joined by single hyphens ('Baal-gad'). A test
    checks this against the tokeniser, which splits other numerals such as '㈠', and CJK and Hangul letters from
    digits ('0㐀', '0한')."""
    return len(word) < 2 or all(part and all(c < "\u0530" and unicodedata.category(c) in _WHOLE for c in part)
                                for part in word.split("-"))


_WHOLE = {"Lu", "Ll", "Lt", "Lo", "Nd"}  # not Lm: Moses splits a modifier letter such as 'ʹ' off a digit


def check_not_swapped(src_path, sources: Sequence[Sequence[str]], refs_path, references: Sequence[Sequence[str]],
                      model: TranslationModel) -> None:
    """Raise PbmtError naming both files when the source side looks like the target language: its words
    (those with a letter, in the model's token form) are far less often source words of the phrase table than
    the references' are, as when the two files are given the wrong way round. A dev set in an unfamiliar
    domain has many unknown source words too, but then its references are no better known as source words."""
    source_rate, reference_rate = (_source_word_share(model, lines) for lines in (sources, references))
    if reference_rate >= 0.5 and reference_rate >= source_rate + 0.3:
        raise PbmtError(f"{src_path} looks like the target language and {refs_path} like the source: "
                        f"{100 * source_rate:.0f}% of the source's words are source words of the model, "
                        f"{100 * reference_rate:.0f}% of the references' are; are the dev source and "
                        "references given the wrong way round?")


def _source_word_share(model: TranslationModel, lines: Sequence[Sequence[str]]) -> float:
    """The share of the words with a letter in ``lines`` that the phrase table has as source words (0 when none)."""
    words = [w for line in lines for w in line if any(c.isalpha() for c in w)]
    if not words:
        return 0.0
    known = model.full_table.src_word_map  # word id -> the table's source word id, or -1
    ids = [model.vocab.get(w) for w in words]  # 0 (UNK) for a word the model lacks
    return sum(1 for i in ids if 0 < i < len(known) and known[i] >= 0) / len(words)
