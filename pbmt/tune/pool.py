"""The accumulated n-best pool every tuner optimises on.

A ``Pool`` holds, for every candidate translation of every dev sentence, its
dense feature vector and its BLEU sufficient statistics, grouped by sentence
(CSR). Tuning iterations merge each new n-best list into the pool, dropping
candidates it already has, so the optimiser sees everything decoded so far
(Och, 2003; Hopkins & May, 2011, Fig. 1: candidate generation, then
optimisation on the pool).

Candidates are deduplicated within their sentence by a key:

- ``"derivation"``: target string and segmentation (source span and target
  span of every phrase pair), so one string made by two derivations with
  different features stays twice, as a decoder's n-best list has it. An entry
  without a segmentation field (another decoder's list) is keyed by its string
  and its feature values instead.
- ``"string"``: the target string alone; the first derivation seen is kept.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np

from pbmt.base.errors import FormatError, PbmtError
from pbmt.base.files import read_lines
from pbmt.metrics.bleu import N_STATS, bleu, encode_segments, reference_sets, segment_stats_ids
from pbmt.model.features import FeatureLayout
from pbmt.base.nbest import NBestEntry, parse_line
from pbmt.base.vocab import Vocab

DEDUP = ("derivation", "string")


class References:
    """Dev references compiled once for counting BLEU statistics (one reference per sentence).

    ``lines``: the reference of each sentence, whitespace-tokenised as the
    hypotheses are. Statistics are counted on word ids with
    ``pbmt.metrics.bleu``'s id path.
    """

    def __init__(self, lines: Sequence[str]):
        self.vocab = Vocab()
        offsets, words = encode_segments(lines, self.vocab)
        self.compiled = reference_sets(offsets, words)
        self.n_sentences = len(lines)

    @classmethod
    def read(cls, path: str | Path, limit: int | None = None) -> "References":
        """The first ``limit`` lines (default: all) of a reference file."""
        lines = [line for number, line in read_lines(path) if limit is None or number <= limit]
        return cls(lines)

    def stats(self, texts: Sequence[str], sentences: np.ndarray) -> np.ndarray:
        """BLEU statistics ``int64[n, 10]`` of ``texts`` against the references of ``sentences`` (int[n])."""
        offsets, words = encode_segments(texts, self.vocab)
        return segment_stats_ids(offsets, words, np.asarray(sentences, dtype=np.int64), self.compiled)


@dataclass(frozen=True)
class Pool:
    """Candidates of every dev sentence: features, BLEU statistics, dedup keys.

    layout: names and sizes of the feature columns (types are empty strings for
    a pool read from an n-best file); features: float64[n_cand, layout.size],
    natural log, as ``score_derivation`` gives them; stats: int64[n_cand, 10]
    (``pbmt.metrics.bleu``); offsets: int64[n_sent+1], sentence ``s`` owns
    candidates ``offsets[s]:offsets[s+1]``, in the order they entered the pool;
    keys: uint64[n_cand], dedup keys (see the module docstring); texts: the
    target strings.
    """

    layout: FeatureLayout
    features: np.ndarray
    stats: np.ndarray
    offsets: np.ndarray
    keys: np.ndarray
    texts: tuple[str, ...]

    @classmethod
    def empty(cls, layout: FeatureLayout, n_sentences: int) -> "Pool":
        """A pool without candidates."""
        return cls(layout, np.zeros((0, layout.size)), np.zeros((0, N_STATS), dtype=np.int64),
                   np.zeros(n_sentences + 1, dtype=np.int64), np.zeros(0, dtype=np.uint64), ())

    @property
    def n_sentences(self) -> int:
        return len(self.offsets) - 1

    @property
    def n_candidates(self) -> int:
        return len(self.keys)

    @property
    def sentence(self) -> np.ndarray:
        """int64[n_cand]: the sentence of each candidate."""
        return np.repeat(np.arange(self.n_sentences, dtype=np.int64), np.diff(self.offsets))

    def merge(self, other: "Pool") -> tuple["Pool", int]:
        """This pool plus the candidates of ``other`` it does not have yet; also their number.

        Within a sentence, old candidates keep their order and new ones follow
        in ``other``'s order; a key repeated within ``other`` counts once.
        """
        if other.layout.names != self.layout.names or other.layout.sizes != self.layout.sizes:
            raise PbmtError(f"cannot merge pools of different features: {other.layout.names} vs {self.layout.names}")
        if other.n_sentences != self.n_sentences:
            raise PbmtError(f"cannot merge pools of {other.n_sentences} and {self.n_sentences} sentences")
        sentence = np.concatenate([self.sentence, other.sentence])
        keys = np.concatenate([self.keys, other.keys])
        pairs = np.stack([sentence.astype(np.uint64), keys], axis=1)
        _, first = np.unique(pairs, axis=0, return_index=True)
        kept = np.sort(first)
        kept = kept[np.argsort(sentence[kept], kind="stable")]
        texts = self.texts + other.texts
        offsets = np.zeros_like(self.offsets)
        np.cumsum(np.bincount(sentence[kept], minlength=self.n_sentences), out=offsets[1:])
        merged = Pool(self.layout, np.concatenate([self.features, other.features])[kept],
                      np.concatenate([self.stats, other.stats])[kept], offsets, keys[kept],
                      tuple(texts[i] for i in kept))
        return merged, merged.n_candidates - self.n_candidates

    def check_complete(self) -> None:
        """Raise PbmtError unless every sentence has a candidate (what optimisers need)."""
        empty = np.flatnonzero(np.diff(self.offsets) == 0)
        if len(empty):
            shown = ", ".join(str(s) for s in empty[:5]) + (", ..." if len(empty) > 5 else "")
            raise PbmtError(f"{len(empty)} of {self.n_sentences} sentences have no candidate in the pool: {shown}")

    def best(self, weights: np.ndarray) -> np.ndarray:
        """int64[n_sent]: each sentence's highest-scoring candidate under ``weights``
        (float64[n_features]); ties go to the earlier candidate. Every sentence needs a candidate."""
        self.check_complete()
        return argmax_by_sentence(self.features @ np.asarray(weights, dtype=np.float64), self.offsets)

    def bleu(self, weights: np.ndarray) -> float:
        """Corpus BLEU in [0, 1] of the pool's 1-best under ``weights`` (``exp`` smoothing, as sacrebleu)."""
        return float(bleu(self.stats[self.best(weights)].sum(axis=0)))

    def arrays(self) -> dict[str, np.ndarray]:
        """The pool as named arrays (for ``np.savez``); ``from_arrays`` inverts it."""
        layout = json.dumps({"names": self.layout.names, "types": self.layout.types, "sizes": self.layout.sizes})
        text = "\n".join(self.texts).encode("utf-8")
        return {"pool_features": self.features, "pool_stats": self.stats, "pool_offsets": self.offsets,
                "pool_keys": self.keys, "pool_texts": np.frombuffer(text, dtype=np.uint8),
                "pool_layout": np.frombuffer(layout.encode("utf-8"), dtype=np.uint8)}

    @classmethod
    def from_arrays(cls, arrays) -> "Pool":
        """The pool ``arrays()`` gave (a dict or an opened ``.npz``)."""
        spec = json.loads(bytes(arrays["pool_layout"]).decode("utf-8"))
        layout = FeatureLayout(tuple(spec["names"]), tuple(spec["types"]), tuple(spec["sizes"]))
        keys = np.asarray(arrays["pool_keys"], dtype=np.uint64)
        text = bytes(arrays["pool_texts"]).decode("utf-8")
        texts = tuple(text.split("\n")) if len(keys) else ()
        return cls(layout, np.asarray(arrays["pool_features"], dtype=np.float64),
                   np.asarray(arrays["pool_stats"], dtype=np.int64), np.asarray(arrays["pool_offsets"], dtype=np.int64),
                   keys, texts)


def argmax_by_sentence(scores: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """int64[n_sent]: the index of the highest of ``scores`` (float64[n_cand]) within each
    sentence of ``offsets`` (int64[n_sent+1], none empty); the first on ties."""
    starts = offsets[:-1]
    top = np.repeat(np.maximum.reduceat(scores, starts), np.diff(offsets))
    return np.minimum.reduceat(np.where(scores == top, np.arange(len(scores)), len(scores)), starts)


def _key(entry: NBestEntry, features: np.ndarray, dedup: str) -> int:
    if dedup == "string":
        material = entry.text.encode("utf-8")
    elif entry.segmentation:
        material = (entry.text + "\x1f" + repr(entry.segmentation)).encode("utf-8")
    else:
        material = entry.text.encode("utf-8") + b"\x1f" + features.tobytes()
    return int.from_bytes(hashlib.blake2b(material, digest_size=8).digest(), "little")


def pool_from_entries(entries: Iterable[NBestEntry], layout: FeatureLayout, references: References,
                      dedup: str = "derivation") -> Pool:
    """A pool of n-best entries (sentence ids index ``references``), duplicates removed.

    Each entry's features must be exactly ``layout``'s names with their sizes,
    all finite; raises PbmtError otherwise (``read_pool`` names the line).
    """
    entries = list(entries)
    features = np.array([_feature_vector(e, layout) for e in entries]).reshape(len(entries), layout.size)
    sentences = np.array([_sentence(e, references.n_sentences) for e in entries], dtype=np.int64)
    return _pool(entries, features, sentences, layout, references, dedup)


def _pool(entries, features, sentences, layout, references, dedup) -> Pool:
    if dedup not in DEDUP:
        raise ValueError(f"dedup must be one of {DEDUP}, got {dedup!r}")
    keys = np.fromiter((_key(e, f, dedup) for e, f in zip(entries, features)), dtype=np.uint64, count=len(entries))
    order = np.argsort(sentences, kind="stable")
    offsets = np.zeros(references.n_sentences + 1, dtype=np.int64)
    np.cumsum(np.bincount(sentences, minlength=references.n_sentences), out=offsets[1:])
    texts = [entries[i].text for i in order]
    batch = Pool(layout, features[order], references.stats(texts, sentences[order]), offsets, keys[order], tuple(texts))
    return Pool.empty(layout, references.n_sentences).merge(batch)[0]


def _feature_vector(entry: NBestEntry, layout: FeatureLayout) -> np.ndarray:
    if tuple(entry.features) != layout.names:
        raise PbmtError(f"features {' '.join(entry.features)} differ from the expected {' '.join(layout.names)}")
    values = [v for vs in entry.features.values() for v in vs]
    for name, size in zip(layout.names, layout.sizes):
        if len(entry.features[name]) != size:
            raise PbmtError(f"{name} has {len(entry.features[name])} values, expected {size}")
    vector = np.array(values, dtype=np.float64)
    if not np.all(np.isfinite(vector)):
        bad = [n for n, vs in entry.features.items() if not all(math.isfinite(v) for v in vs)]
        raise PbmtError(f"feature {bad[0]} is not a finite number ({entry.features[bad[0]]})")
    return vector


def _sentence(entry: NBestEntry, n_sentences: int) -> int:
    if not 0 <= entry.sentence < n_sentences:
        raise PbmtError(f"sentence id {entry.sentence} is outside the {n_sentences} references (ids from 0)")
    return entry.sentence


def read_pool(path: str | Path, references: References, layout: FeatureLayout | None = None,
              dedup: str = "derivation") -> Pool:
    """The pool of a Moses-format n-best file (plain or gzip), from any decoder.

    ``layout``: the expected feature names and sizes (default: those of the
    first entry, with empty types). Every sentence of ``references`` needs at
    least one entry. An empty hypothesis is a valid candidate (length 0, so no
    matches). Raises FormatError naming the line for an entry whose features
    differ from the layout or hold NaN or infinity, or whose sentence id is
    outside the references.
    """
    entries, features, sentences = [], [], []
    for number, line in read_lines(path):
        if not line.strip():
            continue
        entry = parse_line(line, path, number)
        if layout is None:
            layout = FeatureLayout(tuple(entry.features), ("",) * len(entry.features),
                                   tuple(len(v) for v in entry.features.values()))
        try:
            features.append(_feature_vector(entry, layout))
            sentences.append(_sentence(entry, references.n_sentences))
        except PbmtError as err:
            raise FormatError(path, number, str(err)) from None
        entries.append(entry)
    if layout is None:
        raise PbmtError(f"{path}: the n-best list has no entries")
    pool = _pool(entries, np.array(features), np.array(sentences, dtype=np.int64), layout, references, dedup)
    try:
        pool.check_complete()
    except PbmtError as err:
        raise PbmtError(f"{path}: {err}") from None
    return pool


def tuned_columns(layout: FeatureLayout, fixed: tuple[str, ...]) -> np.ndarray:
    """bool[layout.size]: the columns an optimiser tunes, all but those of the ``fixed`` features
    (names absent from ``layout`` are ignored)."""
    free = np.ones(layout.size, dtype=bool)
    for name in fixed:
        if name in layout.names:
            free[layout.columns(name)] = False
    return free


def checked_weights(pool: Pool, initial_weights: np.ndarray) -> np.ndarray:
    """``initial_weights`` as a new float64[n_features] array; ValueError unless finite and of the pool's size."""
    initial = np.array(initial_weights, dtype=np.float64)
    if initial.shape != (pool.layout.size,):
        raise ValueError(f"expected {pool.layout.size} initial weights ({', '.join(pool.layout.names)}), "
                         f"got shape {initial.shape}")
    if not np.all(np.isfinite(initial)):
        raise ValueError("initial weights must be finite")
    return initial
