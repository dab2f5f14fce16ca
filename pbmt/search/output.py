"""Derivations as text, word alignments and n-best entries, and back."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from pbmt.base import csr
from pbmt.base.errors import PbmtError
from pbmt.model.model import TranslationModel
from pbmt.search._output_kernels import path_layout
from pbmt.search.decoder import Paths, ScoredDerivation
from pbmt.search._scoring_kernels import score_dense_paths
from pbmt.model.block_features import sequence_names
from pbmt.model.distortion_bins import NAMES as JUMP_NAMES
from pbmt.model.sparse import nbest_name
from pbmt.search.derivation import Derivation, derivation_blocks, jump_features, sparse_features
from pbmt.search.options import TranslationOptions
from pbmt.search.transitions import transitions
from pbmt.base.nbest import Entries, NBestEntry, entries_text


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

    Made from the derivations' arrays (``Paths``, or scored derivations) by kernels that run without the lock,
    so threads decoding other sentences go on meanwhile: the dense features by ``score_derivation``'s kernel
    (``score_dense_paths``), the target words, segmentation and word alignment by ``path_layout``, and the
    lines by ``write_lines``; the sparse features are those of the model's families (``_sparse_pairs``, in
    Python, for a model that has them).
    """

    def __init__(self, sentence: int, found: Paths | Sequence[ScoredDerivation], options: TranslationOptions,
                 model: TranslationModel):
        paths = found if isinstance(found, Paths) else Paths.of(found)
        chosen = paths.chosen.astype(np.int32)
        self._features = np.zeros((len(paths), model.layout.size))
        score_dense_paths(transitions(model, options, sparse=False), paths.offsets, chosen, options.start,
                          options.end, options.local, self._features)
        used, self._words, self._word_offsets, self._blocks, self._links, self._link_offsets = path_layout(
            paths.offsets, chosen, options.start, options.end, options.tgt_offsets, options.tgt_words,
            options.align_offsets, options.align)
        self._vocabulary = options.vocab.words(used)
        self.sentence = sentence
        self._totals = paths.totals
        self._block_offsets = paths.offsets
        self._layout = model.layout
        self._columns = model.layout.slices
        self._sparse = (None if model.sparse is None
                        else [_sparse_pairs(s.derivation, options, model) for s in paths.scored(options)])
        self._entries: list[NBestEntry | None] = [None] * len(paths)
        self._text: str | None = None

    def __len__(self) -> int:
        return len(self._entries)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return tuple(self[k] for k in range(len(self))[i])
        entry = self._entries[i]
        if entry is None:
            i = range(len(self))[i]
            row = self._features[i].tolist()
            words = self._words[self._word_offsets[i]:self._word_offsets[i + 1]].tolist()
            blocks = self._blocks[self._block_offsets[i]:self._block_offsets[i + 1]].tolist()
            links = self._links[self._link_offsets[i]:self._link_offsets[i + 1]].tolist()
            entry = NBestEntry(self.sentence, " ".join([self._vocabulary[w] for w in words]),
                               {name: tuple(row[c]) for name, c in self._columns}, float(self._totals[i]),
                               tuple(map(tuple, blocks)), tuple(map(tuple, links)),
                               self._sparse[i] if self._sparse is not None else ())
            self._entries[i] = entry
        return entry

    def __eq__(self, other) -> bool:
        return isinstance(other, Sequence) and tuple(self) == tuple(other)

    __hash__ = None

    def __repr__(self) -> str:
        return f"NBestList({list(self)!r})"

    def text(self) -> str:
        """Every entry's line in Moses's format, newlines included: ``"".join(e.to_line() + "\n" for e in
        self)``, written from the arrays by a kernel (once: kept for the next call)."""
        if self._text is None:
            self._text = self._write()
        return self._text

    def _write(self) -> str:
        names = list(self._layout.names)
        sparse_offsets, sparse_names, sparse_values = np.zeros(len(self) + 1, np.int64), np.zeros(0, np.int64), \
            np.zeros(0)
        if self._sparse is not None:
            pairs = [pair for entry in self._sparse for pair in entry]
            ids: dict[str, int] = {}
            sparse_names = np.array([ids.setdefault(name, len(names) + len(ids)) for name, _ in pairs], np.int64)
            names += list(ids)
            sparse_values = np.array([value for _, value in pairs], np.float64)
            sparse_offsets = csr.offsets(np.array([len(entry) for entry in self._sparse], np.int64))
        return entries_text(self.sentence, Entries(self._word_offsets, self._words, self._features, sparse_offsets,
                                                   sparse_names, sparse_values, self._totals, self._block_offsets,
                                                   self._blocks, self._link_offsets, self._links),
                            self._vocabulary, names, self._layout.sizes)


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
