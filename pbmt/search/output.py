"""Derivations as text, word alignments and n-best entries, and back."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from pbmt.errors import PbmtError
from pbmt.model.model import TranslationModel
from pbmt.search.decoder import ScoredDerivation
from pbmt.search._scoring_kernels import score_dense_paths
from pbmt.search.derivation import Derivation, feature_columns
from pbmt.search.options import TranslationOptions
from pbmt.nbest import NBestEntry


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


def nbest_entries(sentence: int, found: Sequence[ScoredDerivation], options: TranslationOptions,
                  model: TranslationModel) -> tuple[NBestEntry, ...]:
    """The Moses n-best entries of a sentence's derivations: features from ``score_derivation``'s kernel, run
    once over all of them; each option's word links computed once."""
    if not found:
        return ()
    lengths = np.array([len(s.derivation) for s in found])
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    chosen = (np.concatenate([s.derivation.option for s in found]) if offsets[-1] else np.zeros(0)).astype(np.int32)
    features = np.zeros((len(found), model.layout.size))
    score_dense_paths(offsets, chosen, options.start, options.end, options.local, options.tgt_offsets,
                      options.tgt_words, options.reordering, model.lm.arrays, model.lm.begin_state,
                      *feature_columns(model), features)
    links = {int(o): option_links(options, model, int(o)) for o in np.unique(chosen)}
    words = model.vocab.words
    entries = []
    for scored, row in zip(found, features):
        d = scored.derivation
        bounds = d.target_boundaries(options)
        segmentation = tuple((int(s), int(e), int(bounds[b]), int(bounds[b + 1]))
                             for b, (s, e) in enumerate(zip(d.src_start, d.src_end)))
        alignment = tuple(sorted((s, int(bounds[b]) + t) for b, o in enumerate(d.option) for s, t in links[int(o)]))
        entries.append(NBestEntry(sentence, " ".join(words(d.target_words(options))), model.layout.as_dict(row),
                                  scored.score, segmentation, alignment))
    return tuple(entries)


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
