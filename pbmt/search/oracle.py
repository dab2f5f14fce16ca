"""BLEU oracle search: the block sequences closest to a reference (Tillmann & Zhang's V5).

The decoder's search with sentence BLEU+1 against the reference as its only
objective (no model score), under the MON/SWAP reordering restriction.

BLEU does not decompose over blocks, so dynamic programming with
recombination is not exact. The search is a beam search instead: stacks by
source words covered, each hypothesis carrying its exact clipped n-gram
counts; a stack keeps its ``beam`` best by *partial* BLEU+1, the BLEU+1 of
the words so far against a reference length scaled by the share of the
source covered (a prefix covering 40% of the source is measured against 40%
of the reference length, so short prefixes are not punished for being
short). Only hypotheses with the same coverage state and the same target
words are merged (their futures are identical). The search is exact when
the beam holds every hypothesis (as on tiny inputs, which is what the tests
check against enumeration); with a finite beam, like the paper's search, it
has no guarantee of finding the best sequence (Section II).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pbmt.search._oracle_kernels import ORDER, oracle_kernel
from pbmt.search.derivation import Derivation
from pbmt.search.options import TranslationOptions


@dataclass(frozen=True)
class OracleDerivation:
    """A block sequence and its sentence BLEU+1 in [0, 1] against the reference."""

    derivation: Derivation
    bleu: float


def oracle_search(options: TranslationOptions, reference: np.ndarray, n_best: int = 5,
                  beam: int = 100) -> list[OracleDerivation]:
    """The ``n_best`` highest-BLEU+1 MON/SWAP block sequences found, best first, distinct target strings.

    reference: ``int32[m]`` word ids (the vocabulary of ``options``; words the
    model cannot produce never match); beam: hypotheses kept per stack (see the
    module docstring). BLEU+1 as ``pbmt.metrics.bleu.sentence_bleu_plus1``.
    """
    if n_best < 1 or beam < 1:
        raise ValueError("n_best and beam must be at least 1")
    reference = np.asarray(reference, dtype=np.int32)
    if options.n_words == 0:
        return [OracleDerivation(Derivation.from_options(options, []), 0.0)]
    unique, span_offsets = _distinct_options(options)
    ref_id, clip = _reference_ngrams(reference)
    tgt_offsets, tgt_words = _targets(options, unique)
    parent, option, finals, log_bleu = oracle_kernel(
        options.n_words, options.start[unique], options.end[unique], tgt_offsets, tgt_words, span_offsets,
        options.max_length, reference, ref_id, clip, max(beam, n_best))
    out = []
    for h, score in zip(finals[:n_best], log_bleu[:n_best]):
        chosen = []
        while h > 0:
            chosen.append(int(unique[option[h]]))
            h = parent[h]
        out.append(OracleDerivation(Derivation.from_options(options, chosen[::-1]), float(np.exp(score))))
    return out


def _distinct_options(options: TranslationOptions) -> tuple[np.ndarray, np.ndarray]:
    """Indices of the first option of every (span, target words), in option order, and their span offsets."""
    seen = set()
    unique = []
    for o in range(len(options)):
        key = (int(options.start[o]), int(options.end[o]), options.target(o).tobytes())
        if key not in seen:
            seen.add(key)
            unique.append(o)
    unique = np.array(unique, dtype=np.int64)
    width = options.max_length
    spans = options.start[unique].astype(np.int64) * width + (options.end[unique] - options.start[unique] - 1)
    span_offsets = np.zeros(options.n_words * width + 1, dtype=np.int64)
    np.cumsum(np.bincount(spans, minlength=options.n_words * width), out=span_offsets[1:])
    return unique, span_offsets


def _targets(options: TranslationOptions, unique: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    parts = [options.target(o) for o in unique]
    offsets = np.zeros(len(parts) + 1, dtype=np.int64)
    np.cumsum([len(p) for p in parts], out=offsets[1:])
    return offsets, np.concatenate(parts).astype(np.int32)


def _reference_ngrams(reference: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(ref_id int64[4, m]: id of the k-gram ending at each position, -1 before k words; clip int64[n_ids])."""
    m = len(reference)
    ids: dict[tuple[int, ...], int] = {}
    ref_id = np.full((ORDER, max(m, 1)), -1, dtype=np.int64)
    counts: list[int] = []
    for k in range(1, ORDER + 1):
        for j in range(k - 1, m):
            gram = tuple(reference[j - k + 1:j + 1].tolist())
            if gram not in ids:
                ids[gram] = len(counts)
                counts.append(0)
            ref_id[k - 1, j] = ids[gram]
            counts[ids[gram]] += 1
    return ref_id, np.array(counts if counts else [0], dtype=np.int64)
