"""Derivations as text, word alignments and n-best entries, and back."""

from __future__ import annotations

import numpy as np

from pbmt.errors import PbmtError
from pbmt.model.model import TranslationModel
from pbmt.search.decoder import ScoredDerivation
from pbmt.search.derivation import Derivation, score_derivation
from pbmt.search.options import TranslationOptions
from pbmt.tune.nbest import NBestEntry


def target_text(derivation: Derivation, options: TranslationOptions, model: TranslationModel) -> str:
    """The target words, space-separated."""
    return " ".join(model.vocab.words(derivation.target_words(options)))


def option_links(options: TranslationOptions, model: TranslationModel, option: int) -> list[tuple[int, int]]:
    """(source position in the sentence, target position in the phrase) links of one option.

    From its phrase pair's internal alignment; an unknown word passed through
    is linked to itself.
    """
    c = options.candidate[option]
    start = int(options.start[option])
    if c < 0:
        return [(start, 0)]
    table = model.phrases
    return [(start + int(s), int(t)) for s, t in table.align[table.align_offsets[c]:table.align_offsets[c + 1]]]


def word_alignment(derivation: Derivation, options: TranslationOptions, model: TranslationModel) -> list[tuple[int, int]]:
    """(source position, target position) pairs from the phrase pairs' internal alignments."""
    bounds = derivation.target_boundaries(options)
    return sorted((s, int(bounds[b]) + t) for b, o in enumerate(derivation.option)
                  for s, t in option_links(options, model, o))


def nbest_entry(sentence: int, scored: ScoredDerivation, options: TranslationOptions,
                model: TranslationModel) -> NBestEntry:
    """The Moses n-best entry of a derivation: features from ``score_derivation``."""
    d = scored.derivation
    features = model.layout.as_dict(score_derivation(d, options, model))
    bounds = d.target_boundaries(options)
    segmentation = tuple((int(s), int(e), int(bounds[b]), int(bounds[b + 1]))
                         for b, (s, e) in enumerate(zip(d.src_start, d.src_end)))
    return NBestEntry(sentence, target_text(d, options, model), features, scored.score, segmentation,
                      tuple(word_alignment(d, options, model)))


def derivation_from_entry(entry: NBestEntry, options: TranslationOptions, model: TranslationModel) -> Derivation:
    """Rebuild the derivation an n-best entry's segmentation describes.

    Each block's option is the one over the same source span with the same
    target words. Raises PbmtError if the entry has no segmentation or uses a
    phrase pair the model does not have.
    """
    if not entry.segmentation:
        raise PbmtError(f"n-best entry of sentence {entry.sentence} has no segmentation field")
    words = entry.text.split()
    chosen = []
    for s, e, ts, te in entry.segmentation:
        target = model.vocab.ids(words[ts:te], add=False)
        span = options.span(s, e) if 0 < e - s <= options.max_length else range(0)
        match = [o for o in span if np.array_equal(options.target(o), target)]
        if not match:
            raise PbmtError(f"sentence {entry.sentence}: no option translates source {s}-{e - 1} "
                            f"as {' '.join(words[ts:te])!r}")
        chosen.append(match[0])
    return Derivation.from_options(options, chosen)
