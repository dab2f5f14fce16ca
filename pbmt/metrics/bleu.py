"""BLEU (Papineni et al., 2002) from per-segment sufficient statistics.

Following sacrebleu, a segment is reduced once to ten integers (the *statistics*)
and every score is a function of the sum of those rows:

    column      0        1         2 .. 5             6 .. 9
    meaning     hyp_len  ref_len   matches_1..4       totals_1..4

``ref_len`` is the length of the reference closest to ``hyp_len`` (ties go to the
shorter reference); ``matches_n`` counts the hypothesis n-grams that occur in a
reference, each clipped to its largest count in any single reference;
``totals_n = max(hyp_len - n + 1, 0)``. Rows are ``int64`` arrays of shape
(..., 10); sums of rows are statistics too, so a tuner replaces one sentence in a
batch with ``batch - old_row + new_row``.

Scores are BLEU in [0, 1] (never percent; only printed output multiplies by 100).
The scoring functions are vectorised over leading dimensions: MERT scores an
array of k summed rows, shape (k, 10), in one call.

Smoothing methods (``SMOOTHING``; Chen & Cherry 2014 compare them):

=========  ==========================================================  =====================================
name       what is smoothed                                            source
=========  ==========================================================  =====================================
none       nothing: an order without a match makes BLEU 0              Papineni et al. (2002)
exp        the i-th order without a match (counting from n = 1) gets   NIST mteval-v13a; Chen & Cherry (2014)
           precision 1 / (2^i * totals_n); sacrebleu's default          method 3
add-k      k added to matches and totals of orders n > 1 only;          Lin & Och (2004); Chen & Cherry (2014)
           k = 1 is BLEU+1, the sentence BLEU of PRO, APRO, ListNet    method 2 (sacrebleu's ``add-k``)
add-all    k added to matches and totals of every order n = 1..4       Haddow, Arun & Koehn (2011): SampleRank
                                                                       batch BLEU, k = 0.01
=========  ==========================================================  =====================================

Lengths, hence the brevity penalty ``min(1, exp(1 - ref_len / hyp_len))`` (0 for
an empty hypothesis), are never smoothed. As in sacrebleu, ``none``, ``exp`` and
``add-k`` give 0 when no order has a match at all (checked before adding k), and
an order whose total is 0 gives BLEU 0.

Statistics are computed on integer ids (``pbmt.base.vocab.Vocab``): the references of
each reference set are compiled once into an exact n-gram trie with clipping
counts (``ReferenceSets``), then any number of hypotheses is counted against it
by a numba kernel. ``segment_stats`` is the same on whitespace-split strings.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from pbmt.metrics._bleu_kernels import hypothesis_stats
from pbmt.base.hashtable import build_table
from pbmt.base.vocab import Vocab

MAX_ORDER = 4
HYP_LEN = 0
REF_LEN = 1
MATCHES = slice(2, 2 + MAX_ORDER)
TOTALS = slice(2 + MAX_ORDER, 2 + 2 * MAX_ORDER)
N_STATS = 2 + 2 * MAX_ORDER


@dataclass(frozen=True)
class Smoothing:
    """One smoothing method: what it smooths, its constant's default, its source."""

    smoothed: str
    default: float | None
    citation: str


SMOOTHING: dict[str, Smoothing] = {
    "none": Smoothing("nothing", None, "Papineni et al. (2002)"),
    "exp": Smoothing(
        "i-th order without a match: precision 1 / (2^i * total)",
        None,
        "NIST mteval-v13a; Chen & Cherry (2014) method 3",
    ),
    "add-k": Smoothing(
        "k added to matches and totals of orders n > 1",
        1.0,
        "Lin & Och (2004); Chen & Cherry (2014) method 2",
    ),
    "add-all": Smoothing(
        "k added to matches and totals of every order",
        0.01,
        "Haddow, Arun & Koehn (2011)",
    ),
}


@dataclass(frozen=True)
class ReferenceSets:
    """References compiled for counting: one n-gram trie per reference set.

    Node ``s < n_sets`` is the root of set ``s``; every other node is an n-gram
    (n <= 4) of some reference of its set, keyed by (parent node, last word id) in
    the hash table ``keys``/``values`` of ``pbmt.base.hashtable``. Keys are
    exact (no hashing of n-grams), so matches are exact.

    set_offsets: int64[n_sets+1], the references of set ``s`` are
    ``lengths[set_offsets[s]:set_offsets[s+1]]``; lengths: int64[n_refs], in
    words; clip: int64[n_nodes], the largest count of each node's n-gram in any
    one reference of its set (0 for roots); n_words: word ids are below it.
    """

    set_offsets: np.ndarray
    lengths: np.ndarray
    keys: np.ndarray
    values: np.ndarray
    clip: np.ndarray
    n_words: int

    @property
    def n_sets(self) -> int:
        """Number of reference sets."""
        return len(self.set_offsets) - 1


def _check_offsets(offsets: np.ndarray, size: int, what: str) -> np.ndarray:
    offsets = np.asarray(offsets, dtype=np.int64)
    if offsets.ndim != 1 or len(offsets) == 0 or offsets[0] != 0 or offsets[-1] != size:
        raise ValueError(f"{what} offsets: expected int64[n+1] rising from 0 to {size}")
    if np.any(np.diff(offsets) < 0):
        raise ValueError(f"{what} offsets: must not decrease")
    return offsets


def _check_csr(offsets: np.ndarray, words: np.ndarray, what: str) -> tuple[np.ndarray, np.ndarray]:
    words = np.asarray(words)
    if words.ndim != 1 or not np.issubdtype(words.dtype, np.integer):
        raise ValueError(f"{what} words: expected a 1-d integer array, got {words.dtype} {words.shape}")
    return _check_offsets(offsets, len(words), what), words.astype(np.int32, copy=False)


def reference_sets(
    offsets: np.ndarray, words: np.ndarray, set_offsets: np.ndarray | None = None
) -> ReferenceSets:
    """Compile references (CSR of word ids) into ``ReferenceSets``, once per set.

    offsets: int64[n_refs+1] and words: int32[...] (reference ``r`` is
    ``words[offsets[r]:offsets[r+1]]``, ids >= 0); set_offsets: int64[n_sets+1],
    set ``s`` holds references ``set_offsets[s]:set_offsets[s+1]`` (default: one
    reference per set). Every set needs at least one reference.

    Vectorised numpy: the n-grams of order n are the order-(n-1) nodes extended by
    one word, deduplicated with ``np.unique``; O(T log T) for T reference words.
    """
    offsets, words = _check_csr(offsets, words, "reference")
    n_refs = len(offsets) - 1
    if set_offsets is None:
        set_offsets = np.arange(n_refs + 1, dtype=np.int64)
    set_offsets = _check_offsets(set_offsets, n_refs, "reference set")
    if np.any(np.diff(set_offsets) == 0):
        empty = int(np.flatnonzero(np.diff(set_offsets) == 0)[0])
        raise ValueError(f"reference set {empty} has no reference")
    if len(words) and words.min() < 0:
        raise ValueError("reference words: ids must be >= 0")
    n_sets = len(set_offsets) - 1
    lengths = np.diff(offsets)
    n_words = int(words.max()) + 1 if len(words) else 1
    wide = words.astype(np.int64)

    ref_of = np.repeat(np.arange(n_refs, dtype=np.int64), lengths)
    set_of = np.repeat(np.arange(n_sets, dtype=np.int64), np.diff(set_offsets))[ref_of]
    left = offsets[1:][ref_of] - np.arange(len(words))  # words from here to the end of its reference

    parents = [np.full(n_sets, -1, dtype=np.int64)]
    last_words = [np.zeros(n_sets, dtype=np.int32)]
    clips = [np.zeros(n_sets, dtype=np.int64)]
    n_nodes = n_sets
    at = np.arange(len(words))  # start positions of the n-grams of the current order
    node = set_of  # node of the n-gram of the previous order at each start (roots)
    for k in range(MAX_ORDER):
        keep = left[at] > k
        at, node = at[keep], node[keep]
        if len(at) == 0:
            break
        unique, local = np.unique(node * n_words + wide[at + k], return_inverse=True)
        parents.append(unique // n_words)
        last_words.append((unique % n_words).astype(np.int32))
        # occurrences per (node, reference), then the largest per node
        pairs, counts = np.unique(local * n_refs + ref_of[at], return_counts=True)
        starts = np.flatnonzero(np.r_[True, np.diff(pairs // n_refs) != 0])
        clips.append(np.maximum.reduceat(counts, starts).astype(np.int64))
        node = n_nodes + local
        n_nodes += len(unique)

    keys, values = build_table(np.concatenate(parents), np.concatenate(last_words), n_words)
    return ReferenceSets(set_offsets, lengths, keys, values, np.concatenate(clips), n_words)


def segment_stats_ids(
    offsets: np.ndarray, words: np.ndarray, ref_set: np.ndarray, references: ReferenceSets
) -> np.ndarray:
    """Statistics of hypotheses given as word ids, shape (n, 10), ``int64``.

    offsets: int64[n+1] and words: int32[...] (hypothesis ``h`` is
    ``words[offsets[h]:offsets[h+1]]``, ids from the same ``Vocab`` as the
    references); ref_set: int[n], the reference set each hypothesis is scored
    against (an n-best list: the sentence index of each entry). Each set was
    compiled once by ``reference_sets``; a hypothesis costs about one hash probe
    per word and order.
    """
    offsets, words = _check_csr(offsets, words, "hypothesis")
    ref_set = np.asarray(ref_set, dtype=np.int64)
    if ref_set.shape != (len(offsets) - 1,):
        raise ValueError(f"ref_set: expected shape ({len(offsets) - 1},), got {ref_set.shape}")
    if len(ref_set) and (ref_set.min() < 0 or ref_set.max() >= references.n_sets):
        raise ValueError(f"ref_set: indices must be in [0, {references.n_sets})")
    return hypothesis_stats(
        offsets,
        words,
        ref_set,
        references.set_offsets,
        references.lengths,
        references.keys,
        references.values,
        references.n_words,
        references.clip,
        MAX_ORDER,
    )


def encode_segments(texts: Sequence[str], vocab: Vocab) -> tuple[np.ndarray, np.ndarray]:
    """Whitespace-split ``texts`` into CSR word ids: (offsets int64[n+1], words int32[...]).

    Splits like ``str.split()`` (what sacrebleu does after tokenising); words new
    to ``vocab`` are added to it.
    """
    tokens = [text.split() for text in texts]
    offsets = np.zeros(len(tokens) + 1, dtype=np.int64)
    np.cumsum(np.fromiter(map(len, tokens), dtype=np.int64, count=len(tokens)), out=offsets[1:])
    return offsets, vocab.ids(itertools.chain.from_iterable(tokens))


def segment_stats(
    hypotheses: Sequence[str],
    references: Sequence[Sequence[str]],
    ref_index: np.ndarray | None = None,
    vocab: Vocab | None = None,
) -> np.ndarray:
    """Statistics of tokenised strings, shape (n, 10), ``int64``.

    hypotheses: n strings, words separated by whitespace; references: one list
    of reference strings per segment (``references[s]`` are the references of
    segment ``s`` -- per segment, not per stream as in sacrebleu); ref_index:
    int[n], the segment each hypothesis belongs to (default: hypothesis i to
    segment i). vocab: where words get their ids (default: a fresh one).
    Equal to ``segment_stats_ids`` on the ids of the same words.
    """
    vocab = Vocab() if vocab is None else vocab
    set_offsets = np.zeros(len(references) + 1, dtype=np.int64)
    np.cumsum([len(refs) for refs in references], out=set_offsets[1:])
    ref_offsets, ref_words = encode_segments([r for refs in references for r in refs], vocab)
    hyp_offsets, hyp_words = encode_segments(hypotheses, vocab)
    if ref_index is None:
        if len(hypotheses) != len(references):
            raise ValueError(
                f"{len(hypotheses)} hypotheses but {len(references)} reference sets; pass ref_index"
            )
        ref_index = np.arange(len(hypotheses))
    compiled = reference_sets(ref_offsets, ref_words, set_offsets)
    return segment_stats_ids(hyp_offsets, hyp_words, ref_index, compiled)


def _stats(stats: np.ndarray) -> np.ndarray:
    stats = np.asarray(stats)
    if stats.shape[-1:] != (N_STATS,):
        raise ValueError(f"BLEU statistics: expected shape (..., {N_STATS}), got {stats.shape}")
    return stats


def _constant(smoothing: str, value: float | None) -> float | None:
    if smoothing not in SMOOTHING:
        raise ValueError(f"unknown smoothing {smoothing!r}; expected one of {', '.join(SMOOTHING)}")
    return SMOOTHING[smoothing].default if value is None else value


def precisions(stats: np.ndarray, smoothing: str = "exp", value: float | None = None) -> np.ndarray:
    """The n-gram precisions BLEU averages, in [0, 1], shape (..., 4).

    stats: summed statistics, shape (..., 10); smoothing: a key of ``SMOOTHING``;
    value: its constant k (default: the method's). A precision is 0 where it
    makes BLEU 0 (no match and no smoothing, an order with total 0 and the
    orders after it, or -- except for ``add-all`` -- no match in any order),
    which is what sacrebleu prints.
    """
    stats = _stats(stats)
    k = _constant(smoothing, value)
    matches = stats[..., MATCHES].astype(np.float64)
    totals = stats[..., TOTALS].astype(np.float64)
    if smoothing == "add-k":
        matches[..., 1:] += k
        totals[..., 1:] += k
    elif smoothing == "add-all":
        matches += k
        totals += k
    counted = np.cumprod(totals > 0, axis=-1, dtype=bool)  # sacrebleu stops at the first empty order
    safe = np.where(counted, totals, 1.0)
    result = np.where(counted, matches / safe, 0.0)
    if smoothing == "exp":
        unmatched = counted & (matches == 0)
        halvings = np.cumsum(unmatched, axis=-1)
        result = np.where(unmatched, 1.0 / (np.exp2(halvings) * safe), result)
    if smoothing != "add-all":
        any_match = np.any(stats[..., MATCHES] > 0, axis=-1, keepdims=True)
        result = np.where(any_match, result, 0.0)
    return result


def brevity_penalty(stats: np.ndarray, clipped: bool = True) -> np.ndarray:
    """``min(1, exp(1 - ref_len / hyp_len))``, 0 when hyp_len = 0 < ref_len; shape stats.shape[:-1].

    clipped=False drops the ``min(1, ...)``: a hypothesis longer than its
    reference scores above 1 (Nakov et al., 2012's "unclipped" brevity
    penalty, a cure for the short translations a sentence-level gain favours).
    """
    stats = _stats(stats)
    hyp = stats[..., HYP_LEN].astype(np.float64)
    ref = stats[..., REF_LEN].astype(np.float64)
    penalty = np.where(hyp > 0, np.exp(1.0 - ref / np.where(hyp > 0, hyp, 1.0)), np.where(ref > 0, 0.0, 1.0))
    return np.where(hyp >= ref, 1.0, penalty) if clipped else penalty


def bleu(stats: np.ndarray, smoothing: str = "exp", value: float | None = None, clipped: bool = True) -> np.ndarray:
    """BLEU in [0, 1] of summed statistics, shape (..., 10) -> (...).

    ``brevity_penalty * exp(mean(log(precisions)))`` with the given smoothing
    (a key of ``SMOOTHING``; value: its constant k, default the method's);
    clipped=False: the unclipped brevity penalty (``brevity_penalty``), so
    above 1 for a hypothesis longer than the reference. No Python loop over
    leading dimensions. With ``exp`` this equals
    ``sacrebleu.corpus_bleu(..., tokenize='none', force=True).score / 100``.
    """
    with np.errstate(divide="ignore"):
        log_p = np.log(precisions(stats, smoothing, value))
    return brevity_penalty(stats, clipped) * np.exp(log_p.mean(axis=-1))


def corpus_bleu(stats: np.ndarray) -> float:
    """Corpus BLEU in [0, 1] of segment statistics, shape (n, 10): sum, then ``exp`` smoothing.

    The same number as ``sacrebleu.corpus_bleu(..., tokenize='none', force=True)``
    (divided by 100).
    """
    return float(bleu(_stats(stats).sum(axis=-2), "exp"))


def paired_bootstrap(stats_a: np.ndarray, stats_b: np.ndarray, rng: np.random.Generator,
                     resamples: int = 1000) -> float:
    """The share of bootstrap resamples of the sentences in which system b's corpus BLEU beats system a's.

    stats_a, stats_b: int64[n_sent, 10], the two systems' statistics of the
    same sentences. Each resample draws n_sent sentences with replacement
    (the same draw for both systems: paired, Koehn 2004) and compares
    ``corpus_bleu`` of the two sums. A share of at least 0.95 is the usual
    "b is better at p < 0.05".
    """
    stats_a, stats_b = _stats(stats_a), _stats(stats_b)
    n = len(stats_a)
    counts = rng.multinomial(n, np.full(n, 1.0 / n), size=resamples)
    return float(np.mean(bleu(counts @ stats_b) > bleu(counts @ stats_a)))


def sentence_bleu_plus1(stats: np.ndarray, clipped: bool = True) -> np.ndarray:
    """BLEU+1 in [0, 1] of each row of statistics, shape (..., 10) -> (...).

    Lin & Och (2004): 1 added to matches and totals of orders 2..4, unigrams and
    lengths unsmoothed; a hypothesis without a unigram match scores 0. Equals
    sacrebleu's ``sentence_bleu(..., smooth_method='add-k', smooth_value=1)``.
    This is the sentence gain of PRO, APRO and ListNet. PRO and ListNet cite
    BLEU+1 via Liang et al. (2006), and other tools smooth unigrams or the
    reference length too; pbmt pins Lin & Och's definition (as APRO does).
    clipped=False: with the unclipped brevity penalty (``brevity_penalty``),
    so above 1 for a hypothesis longer than its reference.
    """
    return bleu(stats, "add-k", 1.0, clipped)


def batch_bleu(stats: np.ndarray, add: float = 0.01, clipped: bool = True) -> np.ndarray:
    """Smoothed BLEU in [0, 1] of summed batch statistics, shape (..., 10) -> (...).

    ``add`` is added to the matches and the totals of every order 1..4, so
    ``p_n = (matches_n + add) / (totals_n + add)``; lengths and the brevity
    penalty are not smoothed. SampleRank's gain with add = 0.01 (Haddow et al.,
    2011). Pass k summed rows (k, 10) to score k candidate batches at once.
    clipped=False: with the unclipped brevity penalty (``brevity_penalty``),
    above 1 for a batch longer than its references.
    """
    return bleu(stats, "add-all", add, clipped)


def format_bleu(stats: np.ndarray, smoothing: str = "exp", value: float | None = None) -> str:
    """sacrebleu's one-line summary of summed statistics, shape (10,), in percent.

    ``BLEU = 38.57 70.1/45.2/30.1/21.0 (BP = 0.980 ratio = 0.980 hyp_len = 9 ref_len = 9)``
    """
    stats = _stats(stats)
    hyp_len, ref_len = int(stats[HYP_LEN]), int(stats[REF_LEN])
    ratio = hyp_len / ref_len if ref_len else 0.0
    shown = "/".join(f"{100 * p:.1f}" for p in precisions(stats, smoothing, value))
    return (
        f"BLEU = {100 * float(bleu(stats, smoothing, value)):.2f} {shown} "
        f"(BP = {float(brevity_penalty(stats)):.3f} ratio = {ratio:.3f} "
        f"hyp_len = {hyp_len} ref_len = {ref_len})"
    )
