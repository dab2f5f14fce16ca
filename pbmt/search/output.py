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
from pbmt.model.distortion_bins import NAMES as JUMP_NAMES
from pbmt.model.sparse import nbest_name
from pbmt.search.derivation import Derivation, derivation_blocks, jump_features, sparse_features
from pbmt.search.options import TranslationOptions
from pbmt.search.transitions import transitions
from pbmt.base.nbest import NBestEntry, features_format, format_block, format_link, moses_line


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


class NBestList(Sequence[NBestEntry]):
    """A sentence's n-best entries (``NBestEntry``), best first, kept as arrays until read: an entry is made
    when it is first read, and ``text()`` writes the whole list in Moses's format without making any (a
    100-best list of a 1,000-sentence dev set is 100,000 entries).

    Features come from ``score_derivation``'s kernel, run once over all the derivations; each option's word
    links are placed once; the sparse features are those of the model's families (``_sparse_pairs``).
    """

    def __init__(self, sentence: int, found: Sequence[ScoredDerivation], options: TranslationOptions,
                 model: TranslationModel):
        lengths = np.array([len(s.derivation) for s in found], dtype=np.int64)
        offsets = np.concatenate([[0], np.cumsum(lengths)])
        chosen = (np.concatenate([s.derivation.option for s in found]) if offsets[-1] else np.zeros(0)).astype(np.int32)
        features = np.zeros((len(found), model.layout.size))
        score_dense_paths(transitions(model, options, sparse=False), offsets, chosen, options.start, options.end,
                          options.local, features)
        self.sentence = sentence
        self._totals = [s.score for s in found]
        self._features = features.tolist()
        self._columns = model.layout.slices
        self._format = features_format(*model.layout.names, *model.layout.sizes)
        self._sparse = ([_sparse_pairs(s.derivation, options, model) for s in found] if model.sparse is not None
                        else [()] * len(found))
        texts = {o: " ".join(options.vocab.words(options.target(o))) for o in np.unique(chosen).tolist()}
        paths = chosen.tolist()
        self._block_offsets = offsets.tolist()
        self._texts = [" ".join([texts[o] for o in paths[lo:hi] if texts[o]])
                       for lo, hi in zip(self._block_offsets[:-1], self._block_offsets[1:])]
        blocks = _block_positions(chosen, offsets, options)
        self._blocks = list(zip(*(column.tolist() for column in blocks)))
        self._link_offsets, self._links = _alignment_points(chosen, offsets, blocks, options)
        self._entries: list[NBestEntry | None] = [None] * len(found)

    def __len__(self) -> int:
        return len(self._texts)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return tuple(self[k] for k in range(len(self))[i])
        entry = self._entries[i]
        if entry is None:
            row, (lo, hi), (a, b) = self._features[i], self._bounds(self._block_offsets, i), \
                self._bounds(self._link_offsets, i)
            entry = NBestEntry(self.sentence, self._texts[i], {name: tuple(row[c]) for name, c in self._columns},
                               self._totals[i], tuple(self._blocks[lo:hi]), tuple(self._links[a:b]), self._sparse[i])
            self._entries[i] = entry
        return entry

    def __eq__(self, other) -> bool:
        return isinstance(other, Sequence) and tuple(self) == tuple(other)

    __hash__ = None

    def __repr__(self) -> str:
        return f"NBestList({list(self)!r})"

    @staticmethod
    def _bounds(offsets: list[int], i: int) -> tuple[int, int]:
        return offsets[i], offsets[i + 1]

    def text(self) -> str:
        """Every entry's line in Moses's format, newlines included: ``"".join(e.to_line() + "\n" for e in
        self)``, made from the arrays."""
        blocks = list(map(format_block, self._blocks))
        links = list(map(format_link, self._links))
        block_offsets, link_offsets = self._block_offsets, self._link_offsets
        return "".join([moses_line(self.sentence, text, self._format % tuple(row), sparse, total,
                                   " ".join(blocks[block_offsets[i]:block_offsets[i + 1]]),
                                   " ".join(links[link_offsets[i]:link_offsets[i + 1]])) + "\n"
                        for i, (text, row, sparse, total) in enumerate(zip(self._texts, self._features,
                                                                           self._sparse, self._totals))])


def nbest_text(entries: Sequence[NBestEntry]) -> str:
    """N-best entries as lines in Moses's format, newlines included (``NBestList.text`` when they are one)."""
    if isinstance(entries, NBestList):
        return entries.text()
    return "".join(e.to_line() + "\n" for e in entries)


def _sparse_pairs(derivation: Derivation, options: TranslationOptions, model: TranslationModel
                  ) -> tuple[tuple[str, float], ...]:
    """The sparse features ``derivation`` fires, (n-best name, count): the boundary family's in id order
    (``sparse_features``), the distortion family's in id order (``jump_features``), then the block family's
    kinds the model lists (``block_kinds``), by name."""
    if model.sparse is None:
        return ()
    pairs = []
    if model.sparse.boundary is not None:
        counts = sparse_features(derivation, options, model)
        pairs += [(model.sparse.boundary.name(i), float(counts[i])) for i in np.flatnonzero(counts).tolist()]
    if model.sparse.jumps is not None:
        counts = jump_features(derivation)
        pairs += [(JUMP_NAMES[i], float(counts[i])) for i in np.flatnonzero(counts).tolist()]
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
    n_paths = len(offsets) - 1
    link_offsets, links = csr.take(options.align_offsets, options.align, chosen)
    count = np.diff(link_offsets)
    src = links[:, 0] + np.repeat(src_start, count)
    tgt = links[:, 1] + np.repeat(tgt_start, count)
    # one int64 key per link orders by (path, source, target): a single sort, not a three-key lexsort
    n_src, n_tgt = options.n_words + 1, int(tgt.max(initial=0)) + 1
    key = np.repeat(np.repeat(np.arange(n_paths), np.diff(offsets)), count) * (n_src * n_tgt) + src * n_tgt + tgt
    key.sort()
    per_path = np.searchsorted(key, np.arange(n_paths + 1) * (n_src * n_tgt))
    return per_path.tolist(), list(zip((key // n_tgt % n_src).tolist(), (key % n_tgt).tolist()))


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
