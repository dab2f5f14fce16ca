"""Phrase pair extraction with counts, alignments and reordering orientations.

``extract_phrase_pairs`` does what Moses's ``extract`` (with ``--model
wbe-msd``) and the counting half of its ``score`` do, in memory: it lists
every phrase pair consistent with the word alignment (Och & Ney 2004; Koehn
et al. 2003), at most ``max_length`` words a side, the source side widened over
unaligned words at its ends (the target side is enumerated directly, so
unaligned target words at its ends come in by themselves), and collects per
distinct phrase pair

* count(f, e), the number of extractions, and per phrase count(f) and count(e),
  the number of extractions with that source / target phrase;
* the phrase-internal word alignment Moses's ``score`` would print and use for
  the lexical weights: the pair's most frequent alignment, ties broken by the
  larger alignment in Moses's vector-of-sets order, chosen separately for
  lex(e|f) (over target words) and lex(f|e) (over source words);
* the word-based msd orientations (Koehn et al. 2005; Tillmann 2004) towards
  the previous and the next target phrase: monotone if the corner point
  before (after) the phrase is aligned and the opposite corner is not, swap
  in the mirror case, discontinuous otherwise; the corners beyond the
  sentence ends count as aligned.

Phrases are identified exactly, without hashing: the n-gram starting at
every token gets an id by ranking (id of its first n-1 words, its last word)
pairs with one ``np.unique`` per length.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations

import numpy as np

from pbmt.base.errors import PbmtError
from pbmt.train import MAX_SUPPORTED_LENGTH
from pbmt.train._extract_kernels import MASK_STRIDE, best_alignments, extract_kernel
from pbmt.train.corpus import Alignment, Corpus


def _set_ranks() -> np.ndarray:
    """Rank of every subset of {0..7} (as an 8-bit mask) in lexicographic order
    of its sorted elements, a prefix before its extensions (std::set's order)."""
    subsets = [c for n in range(MASK_STRIDE + 1) for c in combinations(range(MASK_STRIDE), n)]
    ranks = np.empty(1 << MASK_STRIDE, dtype=np.int64)
    for rank, subset in enumerate(sorted(subsets)):
        ranks[sum(1 << b for b in subset)] = rank
    return ranks


_SET_RANK = _set_ranks()


def moses_alignments(
    pair_starts: np.ndarray, mask_of_group: np.ndarray, count_of_group: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Each phrase pair's alignment as Moses's ``score`` picks it, for lex(e|f) and for lex(f|e).

    ``mask_of_group``/``count_of_group`` (one per distinct (pair, alignment) group, sorted by pair;
    pair ``p`` has groups ``pair_starts[p] .. pair_starts[p + 1]``) are the alignment masks
    (``MASK_STRIDE`` bits per target word) and their extraction counts. Returns the chosen masks
    (direct, inverse), uint64[n_pairs] each: the most frequent, ties broken as ``std::set`` orders them.
    """
    return best_alignments(pair_starts, mask_of_group, count_of_group, _SET_RANK)


@dataclass(frozen=True)
class NgramIndex:
    """Exact ids of all n-grams of a corpus up to a length, within sentences.

    ``ids[n - 1, t]`` is the id of the n-gram starting at token ``t`` (int64),
    -1 where it would run past the sentence end; ids of different lengths
    differ. Id ``g`` has ``length[g]`` words and first occurs at token
    ``first[g]``.
    """

    ids: np.ndarray
    length: np.ndarray
    first: np.ndarray

    @classmethod
    def build(cls, corpus: Corpus, max_length: int) -> "NgramIndex":
        """Index the n-grams of ``corpus`` of 1 to ``max_length`` words."""
        n_tok = len(corpus.ids)
        sent_end = np.repeat(corpus.offsets[1:], corpus.lengths)
        ids = np.full((max_length, n_tok), -1, dtype=np.int64)
        lengths, firsts = [], []
        base = 0
        prev = None
        for n in range(1, max_length + 1):
            pos = np.flatnonzero(np.arange(n_tok) + n <= sent_end)
            if n == 1:
                key = corpus.ids[pos].astype(np.int64)
            else:
                key = prev[pos] * (len(corpus.vocab) + 1) + corpus.ids[pos + n - 1]
            _, first, local = np.unique(key, return_index=True, return_inverse=True)
            ids[n - 1, pos] = base + local
            firsts.append(pos[first])
            lengths.append(np.full(len(first), n, dtype=np.int8))
            prev = np.full(n_tok, -1, dtype=np.int64)
            prev[pos] = local
            base += len(first)
        return cls(ids=ids, length=np.concatenate(lengths), first=np.concatenate(firsts))


@dataclass(frozen=True)
class Phrases:
    """The distinct phrases of one side; phrase ``i`` is the span
    ``corpus.ids[start[i] : start[i] + length[i]]`` (``int64``, ``int8``)
    and was extracted ``count[i]`` times in all (``int64``)."""

    corpus: Corpus
    start: np.ndarray
    length: np.ndarray
    count: np.ndarray

    def __len__(self) -> int:
        return len(self.start)

    def take(self, rows: np.ndarray) -> "Phrases":
        """The phrases ``rows`` (int array) only."""
        return Phrases(self.corpus, self.start[rows], self.length[rows], self.count[rows])

    def ids(self, i: int) -> np.ndarray:
        """Word ids of phrase ``i``."""
        return self.corpus.ids[self.start[i] : self.start[i] + self.length[i]]

    def strings(self) -> list[str]:
        """Every phrase as space-separated words."""
        return self.corpus.spans(self.start, self.length)


@dataclass(frozen=True)
class PhrasePairs:
    """Distinct phrase pairs of a corpus with their counts, in Moses's order.

    Pair ``p`` joins source phrase ``src_index[p]`` and target phrase
    ``tgt_index[p]`` (int64 indices into ``src`` and ``tgt``) and was
    extracted ``count[p]`` times (int64). ``align_direct[p]`` and
    ``align_inverse[p]`` (uint64 masks, bit ``e * 8 + f``) are the alignments
    chosen for lex(e|f) (and printed in the phrase table) and for lex(f|e).
    ``orientation[p]`` (int64[6]) counts the monotone, swap and discontinuous
    orientations towards the previous target phrase, then towards the next.
    Phrases are numbered, and pairs sorted, as Moses sorts its tables (by
    source phrase, then target phrase; see ``_moses_order``).
    """

    src: Phrases
    tgt: Phrases
    src_index: np.ndarray
    tgt_index: np.ndarray
    count: np.ndarray
    align_direct: np.ndarray
    align_inverse: np.ndarray
    orientation: np.ndarray

    def __len__(self) -> int:
        return len(self.count)

    def take(self, rows: np.ndarray) -> "PhrasePairs":
        """The pairs ``rows`` (int array) only; phrases and their counts stay as they are."""
        return PhrasePairs(
            self.src,
            self.tgt,
            self.src_index[rows],
            self.tgt_index[rows],
            self.count[rows],
            self.align_direct[rows],
            self.align_inverse[rows],
            self.orientation[rows],
        )


def extract_phrase_pairs(src: Corpus, tgt: Corpus, alignment: Alignment, max_length: int = 7) -> PhrasePairs:
    """All phrase pairs of the aligned corpus, counted as Moses counts them.

    ``alignment`` points are (source, target) positions within each sentence
    pair (e.g. from ``symmetrize``); ``max_length`` (1 to 8) bounds both sides.
    Sentence pairs with an empty side contribute nothing.
    """
    if not 1 <= max_length <= MAX_SUPPORTED_LENGTH:
        raise PbmtError(f"max phrase length must be 1 to {MAX_SUPPORTED_LENGTH}, not {max_length}")
    if len(src) != len(tgt):
        raise PbmtError(f"extract: {len(src)} source but {len(tgt)} target sentences")
    alignment.check(src.lengths, tgt.lengths, "extract")
    o_src, o_slen, o_tgt, o_tlen, o_mask, o_prev, o_next = extract_kernel(
        src.offsets, tgt.offsets, alignment.src, alignment.tgt, alignment.offsets, max_length
    )
    # n-gram ids of the occurrences' phrases; then the big per-token tables can go
    ngrams, occ_phrase = [], []
    for corpus, start, length in ((src, o_src, o_slen), (tgt, o_tgt, o_tlen)):
        index = NgramIndex.build(corpus, max_length)
        occ_phrase.append(index.ids[length - 1, start])
        ngrams.append((corpus, index.first, index.length, np.bincount(occ_phrase[-1], minlength=len(index.length))))
        del index
    del o_src, o_slen, o_tgt, o_tlen
    n_tid = len(ngrams[1][2])
    pair_key, pair_of, count = np.unique(occ_phrase[0] * n_tid + occ_phrase[1], return_inverse=True, return_counts=True)
    del occ_phrase
    n_pairs = len(pair_key)

    orientation = np.empty((n_pairs, 6), dtype=np.int64)
    orientation[:, :3] = np.bincount(pair_of * 3 + o_prev, minlength=3 * n_pairs).reshape(n_pairs, 3)
    orientation[:, 3:] = np.bincount(pair_of * 3 + o_next, minlength=3 * n_pairs).reshape(n_pairs, 3)
    del o_prev, o_next

    mask_values, mask_of = np.unique(o_mask, return_inverse=True)
    del o_mask
    groups, group_count = np.unique(pair_of * len(mask_values) + mask_of, return_counts=True)
    del mask_of, pair_of
    pair_starts = np.searchsorted(groups // len(mask_values), np.arange(n_pairs + 1))
    direct, inverse = moses_alignments(pair_starts, mask_values[groups % len(mask_values)], group_count)
    del groups, group_count

    sides = []
    for (corpus, first, length, total), phrase_of_pair in zip(ngrams, (pair_key // n_tid, pair_key % n_tid)):
        ids, index = np.unique(phrase_of_pair, return_inverse=True)
        phrases = Phrases(corpus, first[ids], length[ids], total[ids])
        order = _moses_order(phrases)
        rank = np.empty_like(order)
        rank[order] = np.arange(len(order))
        sides.append((phrases.take(order), rank[index]))
    (src_phrases, src_index), (tgt_phrases, tgt_index) = sides
    rows = np.lexsort((tgt_index, src_index))
    return PhrasePairs(
        src=src_phrases,
        tgt=tgt_phrases,
        src_index=src_index[rows],
        tgt_index=tgt_index[rows],
        count=count[rows].astype(np.int64),
        align_direct=direct[rows],
        align_inverse=inverse[rows],
        orientation=orientation[rows],
    )


def _moses_order(phrases: Phrases) -> np.ndarray:
    """Phrase indices in the order of Moses's sorted files: bytewise by
    ``phrase |||`` (the rest of the line follows), which for UTF-8 is code
    point order, Python's string order."""
    keys = phrases.corpus.spans(phrases.start, phrases.length, suffix=" |||")
    return np.array(sorted(range(len(keys)), key=keys.__getitem__), dtype=np.int64)
