"""Derivations as text, word alignments and n-best entries, and back."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from pbmt.base import csr
from pbmt.base.errors import PbmtError
from pbmt.model.model import TranslationModel
from pbmt.search.decoder import ScoredDerivation
from pbmt.search._scoring_kernels import score_dense_paths
from pbmt.model.block_features import sequence_names
from pbmt.model.sparse import nbest_name
from pbmt.search.derivation import Derivation, derivation_blocks, sparse_features
from pbmt.search.options import TranslationOptions
from pbmt.search.transitions import transitions
from pbmt.base.nbest import NBestEntry


def target_text(derivation: Derivation, options: TranslationOptions, model: TranslationModel) -> str:
    """The target words, space-separated."""
    return " ".join(options.vocab.words(derivation.target_words(options)))


def option_links(options: TranslationOptions, option: int) -> list[tuple[int, int]]:
    """(source position in the sentence, target position in the phrase) links of one option
    (``TranslationOptions.align``)."""
    start = int(options.start[option])
    lo, hi = options.align_offsets[option], options.align_offsets[option + 1]
    return [(start + int(s), int(t)) for s, t in options.align[lo:hi]]


def word_alignment(derivation: Derivation, options: TranslationOptions, model: TranslationModel) -> list[tuple[int, int]]:
    """(source position, target position) pairs from the phrase pairs' internal alignments."""
    bounds = derivation.target_boundaries(options)
    return sorted((s, int(bounds[b]) + t) for b, o in enumerate(derivation.option)
                  for s, t in option_links(options, o))


def nbest_entries(sentence: int, found: Sequence[ScoredDerivation], options: TranslationOptions,
                  model: TranslationModel) -> tuple[NBestEntry, ...]:
    """The Moses n-best entries of a sentence's derivations: features from ``score_derivation``'s kernel, run
    once over all of them; each option's word links computed once; the sparse features of the model's families
    (``_sparse_pairs``)."""
    if not found:
        return ()
    lengths = np.array([len(s.derivation) for s in found])
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    chosen = (np.concatenate([s.derivation.option for s in found]) if offsets[-1] else np.zeros(0)).astype(np.int32)
    features = np.zeros((len(found), model.layout.size))
    score_dense_paths(transitions(model, options, sparse=False), offsets, chosen, options.start, options.end,
                      options.local, features)
    blocks = _block_positions(chosen, offsets, options)
    seg_offsets = offsets.tolist()
    segmentation = list(zip(*(column.tolist() for column in blocks)))
    align_offsets, alignment = _alignment_points(chosen, offsets, blocks, options)
    texts = {o: " ".join(options.vocab.words(options.target(o))) for o in np.unique(chosen).tolist()}
    paths = chosen.tolist()
    columns = model.layout.slices
    sparse = model.sparse is not None
    entries = []
    for i, (row, scored) in enumerate(zip(features.tolist(), found)):
        lo, hi = seg_offsets[i], seg_offsets[i + 1]
        entries.append(NBestEntry(sentence, " ".join([texts[o] for o in paths[lo:hi] if texts[o]]),
                                  {name: tuple(row[c]) for name, c in columns}, scored.score,
                                  tuple(segmentation[lo:hi]), tuple(alignment[align_offsets[i]:align_offsets[i + 1]]),
                                  _sparse_pairs(scored.derivation, options, model) if sparse else ()))
    return tuple(entries)


def _sparse_pairs(derivation: Derivation, options: TranslationOptions, model: TranslationModel
                  ) -> tuple[tuple[str, float], ...]:
    """The sparse features ``derivation`` fires, (n-best name, count): the boundary family's in id order
    (``sparse_features``), then the block family's kinds the model lists (``block_kinds``), by name."""
    if model.sparse is None:
        return ()
    pairs = []
    if model.sparse.boundary is not None:
        counts = sparse_features(derivation, options, model)
        pairs += [(model.sparse.boundary.name(i), float(counts[i])) for i in np.flatnonzero(counts).tolist()]
    if model.sparse.blocks is not None:
        prefixes = model.sparse.block_prefixes
        names = sequence_names(derivation_blocks(derivation, options, options.vocab))
        pairs += sorted((nbest_name(name), float(count)) for name, count in names.items() if name.startswith(prefixes))
    return tuple(pairs)


def _block_positions(chosen: np.ndarray, offsets: np.ndarray, options: TranslationOptions
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(src_start, src_end, tgt_start, tgt_end) of every block of paths ``chosen`` split at ``offsets``
    (``int64[k + 1]``); target positions count within each path. Four ``int64[len(chosen)]``."""
    length = np.diff(options.tgt_offsets)[chosen]
    before = np.cumsum(length) - length  # target words before each block, over all paths
    path_start = np.append(before, before[-1] + length[-1] if len(chosen) else 0)[offsets[:-1]]
    tgt_start = before - np.repeat(path_start, np.diff(offsets))
    return (options.start[chosen].astype(np.int64), options.end[chosen].astype(np.int64), tgt_start,
            tgt_start + length)


def _alignment_points(chosen: np.ndarray, offsets: np.ndarray, blocks, options: TranslationOptions
                      ) -> tuple[list[int], list[tuple[int, int]]]:
    """Every path's (source, target) word links, sorted, as one list with per-path offsets (``option_links``
    for all blocks at once)."""
    src_start, _, tgt_start, _ = blocks
    path = np.repeat(np.arange(len(offsets) - 1), np.diff(offsets))
    link_offsets, links = csr.take(options.align_offsets, options.align, chosen)
    count = np.diff(link_offsets)
    src = links[:, 0] + np.repeat(src_start, count)
    tgt = links[:, 1] + np.repeat(tgt_start, count)
    owner = np.repeat(path, count)
    order = np.lexsort((tgt, src, owner))
    per_path = np.zeros(len(offsets), dtype=np.int64)
    np.cumsum(np.bincount(owner, minlength=len(offsets) - 1), out=per_path[1:])
    return per_path.tolist(), list(zip(src[order].tolist(), tgt[order].tolist()))


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
        target = options.vocab.ids(words[ts:te], add=False)
        span = options.span(s, e) if 0 < e - s <= options.max_length else range(0)
        match = [o for o in span if np.array_equal(options.target(o), target)]
        if not match:
            raise PbmtError(f"sentence {entry.sentence}: no option translates source {s}-{e - 1} "
                            f"as {' '.join(words[ts:te])!r}")
        chosen.append(match[0])
    return Derivation.from_options(options, chosen)
