"""Derivations as text, word alignments and n-best entries, and back."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from pbmt.base import csr
from pbmt.base.errors import PbmtError
from pbmt.model.model import TranslationModel
from pbmt.search._output_kernels import BlockKeys, path_layout, path_sparse
from pbmt.search.decoder import Paths, ScoredDerivation
from pbmt.search._scoring_kernels import Transitions, score_dense_paths
from pbmt.model.block_features import BOS_WORD, EOS_WORD, ORIENT_LETTERS, bigram_name, local_names, orient_name
from pbmt.model.distortion_bins import JUMP_BINS, NAMES as JUMP_NAMES, SIZE as JUMP_SIZE
from pbmt.model.sparse import nbest_name
from pbmt.search.derivation import Derivation
from pbmt.search.options import TranslationOptions
from pbmt.search.transitions import boundary_arrays, transitions
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
    """(source position, target position) pairs from the phrase pairs' internal alignments, sorted."""
    return derivation_layout(derivation.option, options)[2]


def derivation_layout(chosen: np.ndarray, options: TranslationOptions
                      ) -> tuple[np.ndarray, np.ndarray, list[tuple[int, int]]]:
    """What a derivation's output is made of, laid out in one call of ``path_layout`` (without the lock) instead
    of Python a block: its target word ids (``int64[|e|]``), each block's first target position (``int64[k]``)
    and its word alignment (the phrase pairs' internal alignments placed at their blocks: (source position,
    target position) pairs, sorted). ``chosen``: the options the derivation uses, in target order
    (``Derivation.option``)."""
    chosen = np.array(chosen, dtype=np.int32)  # a writable copy: the kernel's one specialisation (not read-only)
    used, words, _, blocks, links, _ = path_layout(np.array([0, len(chosen)], np.int64), chosen, options.start,
                                                   options.end, options.tgt_offsets, options.tgt_words,
                                                   options.align_offsets, options.align)
    return used[words], blocks[:, 2], list(map(tuple, links.tolist()))


class NBestList(Sequence[NBestEntry]):
    """A sentence's n-best entries (``NBestEntry``), best first, kept as arrays until read: an entry is made
    when it is first read, and ``text()`` writes the whole list in Moses's format without making any (a
    100-best list of a 1,000-sentence dev set is 100,000 entries).

    Made from the derivations' arrays (``Paths``, or scored derivations) by kernels that run without the lock,
    so threads decoding other sentences go on meanwhile: the dense features by ``score_derivation``'s kernel
    (``score_dense_paths``, with ``sentence_transitions``, the search's ``transitions(model, options)`` if at
    hand, when the model has no sparse features), the target words, segmentation and word alignment by
    ``path_layout``, the sparse features of the model's families by ``path_sparse`` (``sparse_counts``), and
    the lines by ``write_lines``.
    """

    def __init__(self, sentence: int, found: Paths | Sequence[ScoredDerivation], options: TranslationOptions,
                 model: TranslationModel, sentence_transitions: Transitions | None = None):
        paths = found if isinstance(found, Paths) else Paths.of(found)
        chosen = paths.chosen.astype(np.int32)
        self._features = np.zeros((len(paths), model.layout.size))
        if sentence_transitions is None or model.sparse is not None:  # the dense features' alone
            sentence_transitions = transitions(model, options, sparse=False)
        score_dense_paths(sentence_transitions, paths.offsets, chosen, options.start, options.end, options.local,
                          self._features)
        used, self._words, self._word_offsets, self._blocks, self._links, self._link_offsets = path_layout(
            paths.offsets, chosen, options.start, options.end, options.tgt_offsets, options.tgt_words,
            options.align_offsets, options.align)
        self._vocabulary = options.vocab.words(used)
        self.sentence = sentence
        self._totals = paths.totals
        self._block_offsets = paths.offsets
        self.layout = model.layout
        self._columns = model.layout.slices
        self._sparse = None if model.sparse is None else sparse_counts(paths, options, model)
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
                               self._sparse.pairs(i) if self._sparse is not None else ())
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

    def arrays(self) -> tuple[Entries, list[str], list[str]]:
        """The entries as arrays (``Entries``, their dense values in ``layout``'s columns), the words their
        hypotheses' word ids index, and the feature names their sparse features' ids index (``layout``'s names,
        then the n-best names of the sparse features any entry fires): what the writer and tune's pools read
        without making an entry."""
        names = list(self.layout.names)
        sparse_offsets, sparse_names, sparse_values = np.zeros(len(self) + 1, np.int64), np.zeros(0, np.int64), \
            np.zeros(0)
        if self._sparse is not None:
            sparse_offsets, sparse_names, sparse_values = self._sparse.offsets, self._sparse.ids + len(names), \
                self._sparse.values
            names += self._sparse.names
        return Entries(self._word_offsets, self._words, self._features, sparse_offsets, sparse_names, sparse_values,
                       self._totals, self._block_offsets, self._blocks, self._link_offsets, self._links), \
            self._vocabulary, names

    def _write(self) -> str:
        return entries_text(self.sentence, *self.arrays(), self.layout.sizes)


def nbest_text(entries: Sequence[NBestEntry]) -> str:
    """N-best entries as lines in Moses's format, newlines included (``NBestList.text`` when they are one)."""
    if isinstance(entries, NBestList):
        return entries.text()
    return "".join(e.to_line() + "\n" for e in entries)


@dataclass(frozen=True)
class SparseCounts:
    """The sparse features of a sentence's derivations (``Paths``): derivation ``i`` fires features
    ``names[ids[offsets[i]:offsets[i + 1]]]`` (int64; ``offsets`` int64[n + 1]) ``values`` times
    (float64), in the order an n-best entry lists them: the boundary family's in id order, the distortion
    family's in bin order, then the block family's kinds the model lists (``block_kinds``) by their n-best
    names. ``names``: the n-best names of the features any of them fires."""

    offsets: np.ndarray
    ids: np.ndarray
    values: np.ndarray
    names: tuple[str, ...]

    def pairs(self, i: int) -> tuple[tuple[str, float], ...]:
        """Derivation ``i``'s features as (n-best name, value) pairs."""
        lo, hi = self.offsets[i], self.offsets[i + 1]
        return tuple(zip([self.names[k] for k in self.ids[lo:hi].tolist()], self.values[lo:hi].tolist()))


def sparse_counts(paths: Paths, options: TranslationOptions, model: TranslationModel) -> SparseCounts:
    """The sparse features of the model's families that ``paths`` fire, counted by a kernel without the lock
    (``path_sparse``); the block family's names are made once for each option the paths use and each
    boundary bigram they hold, not once a derivation. Each derivation's counts equal ``sparse_features``,
    ``jump_features`` and ``sequence_names`` of ``derivation_blocks`` from scratch."""
    sparse = model.sparse
    none = np.zeros(0, np.int64)
    left, right, _, bos, eos, has_boundary = boundary_arrays(model, options)
    n_keys = sparse.boundary.n_keys if has_boundary else 0
    jump_base = n_keys * n_keys
    block_base = jump_base + (JUMP_SIZE if sparse.jumps is not None else 0)
    chosen = paths.chosen.astype(np.int32)
    local_offsets, local_keys, orient_keys, pair_keys, end_keys = np.zeros(len(options) + 1, np.int64), none, \
        np.zeros((0, 3), np.int64), none, none
    block_names: list[str] = []
    if sparse.blocks is not None:
        block_names, local_offsets, local_keys, orient_keys, pair_keys, end_keys = _block_keys(
            paths, chosen, options, sparse.block_prefixes, block_base)
    offsets, keys, values = path_sparse(paths.offsets, chosen, options.start, options.end, left, right, bos, eos,
                                        n_keys, JUMP_BINS if sparse.jumps is not None else none, jump_base,
                                        BlockKeys(local_offsets, local_keys, orient_keys, pair_keys, end_keys))
    fired, ids = np.unique(keys, return_inverse=True)
    names = tuple(sparse.boundary.name(k) if k < jump_base else JUMP_NAMES[k - jump_base] if k < block_base
                  else block_names[k - block_base] for k in fired.tolist())
    return SparseCounts(offsets, ids.astype(np.int64), values, names)


def _block_keys(paths: Paths, chosen: np.ndarray, options: TranslationOptions, prefixes: tuple[str, ...],
                base: int) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``path_sparse``'s arrays of the block family's kinds named by ``prefixes``: (every n-best name the paths
    can fire, sorted; ``local_offsets``, ``local_keys``, ``orient_keys``, ``pair_keys``, ``end_keys``), a
    name's key ``base`` plus its place in that order."""
    vocab, n = options.vocab, len(paths)
    index: dict[str, int] = {}

    def key(name: str) -> int:
        return index.setdefault(name, len(index)) if name.startswith(prefixes) else -1

    source = vocab.words(options.sentence)
    used = np.unique(chosen).tolist()
    local, orient = {}, np.full((len(options), 3), -1, np.int64)
    for o in used:
        src = source[options.start[o]:options.end[o]]
        tgt = vocab.words(options.target(o))
        local[o] = [k for k in map(key, local_names(src, tgt)) if k >= 0]
        orient[o] = [key(orient_name(letter, src, tgt)) for letter in ORIENT_LETTERS]
    lengths = np.zeros(len(options), np.int64)
    lengths[used] = [len(local[o]) for o in used]
    local_keys = np.array([k for o in used for k in local[o]], np.int64)
    # each block's boundary bigram (the previous block's last target word, or the start, and its first), then
    # each derivation's at the end (its last word, or the start, and the end): -1 the start, -2 the end
    first = options.tgt_words[options.tgt_offsets[chosen]].astype(np.int64)
    last = options.tgt_words[options.tgt_offsets[chosen + 1] - 1].astype(np.int64)
    sizes = np.diff(paths.offsets)
    opens = np.zeros(len(chosen), bool)
    opens[paths.offsets[:-1][sizes > 0]] = True
    before = np.where(opens, -1, np.roll(last, 1))
    final = np.full(n, -1, np.int64)
    final[sizes > 0] = last[paths.offsets[1:][sizes > 0] - 1]
    span = int(max(options.tgt_words.max(initial=0), 0)) + 3
    pairs, pair_of = np.unique(np.concatenate([(before + 2) * span + first + 2, (final + 2) * span]),
                               return_inverse=True)
    ends = np.unique(np.concatenate([first, last])).tolist()
    words = {-1: BOS_WORD, -2: EOS_WORD, **dict(zip(ends, vocab.words(ends)))}
    pair_key = np.array([key(bigram_name(words[p // span - 2], words[p % span - 2])) for p in pairs.tolist()],
                        np.int64)[pair_of]
    names = [nbest_name(name) for name in index]
    order = sorted(range(len(names)), key=names.__getitem__)
    rank = np.empty(len(names) + 1, np.int64)
    rank[order] = np.arange(len(names)) + base
    rank[-1] = -1  # a name of a kind left out
    return ([names[k] for k in order], csr.offsets(lengths), rank[local_keys], rank[orient],
            rank[pair_key[:len(chosen)]], rank[pair_key[len(chosen):]])


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
