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

Sparse features (``pbmt.base.nbest``: named, one value, most absent from a
candidate) are held apart from the dense columns, as a ``scipy.sparse``
CSR matrix over the pool's own sparse names (every name seen in an entry,
in order of first sight): a 100-best list of all of dev with 100k active
features is a few million stored values, where a dense matrix of them would
need 80 GB. A weight vector of a pool is the dense weights (layout order)
then, optionally, one weight per sparse name (``Pool.n_weights`` in all);
a vector of the dense weights alone scores the sparse features at zero.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np

from pbmt.base import csr
from pbmt.base.byte_text import intern_words
from pbmt.base.errors import FormatError, PbmtError
from pbmt.base.files import read_lines
from pbmt.metrics.bleu import N_STATS, bleu, encode_segments, reference_sets, segment_stats_ids
from pbmt.model.features import FeatureLayout
from pbmt.base.nbest import NBestEntry, NBestText, parse_line, scan_nbest
from pbmt.base.vocab import Vocab

DEDUP = ("derivation", "string")


class References:
    """Dev references compiled once for counting BLEU statistics: one reference per sentence, or several.

    ``lines``: the reference of each sentence, whitespace-tokenised as the
    hypotheses are; ``more``: further reference streams, each line-parallel
    to ``lines`` (as sacrebleu and Moses's ``mert`` take several references:
    a candidate's n-gram matches are clipped by the most any one reference
    holds, and its reference length is the closest one's). Statistics are
    counted on word ids with ``pbmt.metrics.bleu``'s id path.
    """

    def __init__(self, lines: Sequence[str], *more: Sequence[str]):
        streams = (list(lines), *(list(m) for m in more))
        lengths = sorted({len(stream) for stream in streams})
        if len(lengths) > 1:
            raise PbmtError(f"the reference streams differ in length ({', '.join(map(str, lengths))} lines): "
                            "every stream needs one line per sentence")
        self.vocab = Vocab()
        self.n_sentences = len(streams[0])
        self.n_references = len(streams)
        offsets, words = encode_segments([stream[s] for s in range(self.n_sentences) for stream in streams],
                                         self.vocab)
        self.compiled = reference_sets(offsets, words, np.arange(0, len(offsets), len(streams), dtype=np.int64))

    @classmethod
    def read(cls, path: str | Path | Sequence[str | Path], limit: int | None = None) -> "References":
        """The first ``limit`` lines (default: all) of a reference file, or of each of several line-parallel ones."""
        paths = [path] if isinstance(path, (str, Path)) else list(path)
        streams = [[line for number, line in read_lines(p) if limit is None or number <= limit] for p in paths]
        lengths = {len(stream) for stream in streams}
        if len(lengths) > 1:
            raise PbmtError("the reference files differ in length: " + ", ".join(
                f"{p} has {len(stream)} lines" for p, stream in zip(paths, streams)))
        return cls(*streams)

    def stats(self, texts: Sequence[str], sentences: np.ndarray) -> np.ndarray:
        """BLEU statistics ``int64[n, 10]`` of ``texts`` against the references of ``sentences`` (int[n])."""
        offsets, words = encode_segments(texts, self.vocab)
        return segment_stats_ids(offsets, words, np.asarray(sentences, dtype=np.int64), self.compiled)

    def token_stats(self, text: np.ndarray, offsets: np.ndarray, tokens: np.ndarray, sentences: np.ndarray
                    ) -> np.ndarray:
        """``stats`` of hypotheses given as tokens of UTF-8 bytes: ``text`` uint8[...], hypothesis ``h``'s words
        ``tokens[offsets[h]:offsets[h + 1]]`` (int64[k, 2]: first byte, length). New words join ``vocab`` in
        order of first sight, as ``stats`` adds them."""
        local, n_words, words = intern_words(text, tokens)
        ids = self.vocab.ids(bytes(words).decode("utf-8").split("\n")) if n_words else np.zeros(0, np.int32)
        return segment_stats_ids(offsets, ids[local], np.asarray(sentences, dtype=np.int64), self.compiled)


@dataclass(frozen=True)
class Pool:
    """Candidates of every dev sentence: features, BLEU statistics, dedup keys.

    layout: names and sizes of the feature columns (types are empty strings for
    a pool read from an n-best file); features: float64[n_cand, layout.size],
    natural log, as ``score_derivation`` gives them; stats: int64[n_cand, 10]
    (``pbmt.metrics.bleu``); offsets: int64[n_sent+1], sentence ``s`` owns
    candidates ``offsets[s]:offsets[s+1]``, in the order they entered the pool;
    keys: uint64[n_cand], dedup keys (see the module docstring); texts: the
    target strings; sparse: the sparse feature values, a ``scipy.sparse``
    CSR matrix float64[n_cand, len(sparse_names)], or None when no candidate
    has one; sparse_names: the name of each of its columns.
    """

    layout: FeatureLayout
    features: np.ndarray
    stats: np.ndarray
    offsets: np.ndarray
    keys: np.ndarray
    texts: tuple[str, ...]
    sparse: object = None
    sparse_names: tuple[str, ...] = ()

    @classmethod
    def empty(cls, layout: FeatureLayout, n_sentences: int) -> "Pool":
        """A pool without candidates."""
        return cls(layout, np.zeros((0, layout.size)), np.zeros((0, N_STATS), dtype=np.int64),
                   np.zeros(n_sentences + 1, dtype=np.int64), np.zeros(0, dtype=np.uint64), ())

    @property
    def n_weights(self) -> int:
        """The length of a weight vector of every column: dense, then one per sparse name."""
        return self.layout.size + len(self.sparse_names)

    def scores(self, weights: np.ndarray) -> np.ndarray:
        """float64[n_cand]: every candidate's model score under ``weights`` (the dense weights alone,
        float64[layout.size], or dense then sparse, float64[n_weights])."""
        weights = np.asarray(weights, dtype=np.float64)
        if len(weights) not in (self.layout.size, self.n_weights):
            raise ValueError(f"expected {self.layout.size} or {self.n_weights} weights, got {len(weights)}")
        scores = self.features @ weights[:self.layout.size]
        if self.sparse is not None and len(weights) > self.layout.size:
            scores = scores + self.sparse @ weights[self.layout.size:]
        return scores

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

    def sparse_sentence_counts(self) -> np.ndarray:
        """int64[len(sparse_names)]: for each sparse feature, how many sentences have a candidate in which it is
        not zero (the evidence the pool holds for its weight: a feature of one sentence can only fit that one)."""
        if self.sparse is None:
            return np.zeros(len(self.sparse_names), dtype=np.int64)
        rows = self.sparse.tocsr()
        present = rows.data != 0
        sentence = np.repeat(self.sentence, np.diff(rows.indptr))[present]
        pairs = np.unique(rows.indices[present].astype(np.int64) * self.n_sentences + sentence)
        return np.bincount(pairs // self.n_sentences, minlength=len(self.sparse_names)).astype(np.int64)

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
        order = np.lexsort((keys, sentence))  # stable: each (sentence, key) run starts at its first candidate
        new = np.ones(len(order), dtype=bool)
        new[1:] = (sentence[order[1:]] != sentence[order[:-1]]) | (keys[order[1:]] != keys[order[:-1]])
        kept = np.sort(order[new])
        kept = kept[np.argsort(sentence[kept], kind="stable")]
        texts = self.texts + other.texts
        offsets = np.zeros_like(self.offsets)
        np.cumsum(np.bincount(sentence[kept], minlength=self.n_sentences), out=offsets[1:])
        names, sparse = _stacked_sparse(self, other, kept)
        merged = Pool(self.layout, np.concatenate([self.features, other.features])[kept],
                      np.concatenate([self.stats, other.stats])[kept], offsets, keys[kept],
                      tuple(texts[i] for i in kept), sparse, names)
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
        return argmax_by_sentence(self.scores(weights), self.offsets)

    def bleu(self, weights: np.ndarray) -> float:
        """Corpus BLEU in [0, 1] of the pool's 1-best under ``weights`` (``exp`` smoothing, as sacrebleu)."""
        return float(bleu(self.stats[self.best(weights)].sum(axis=0)))

    def arrays(self) -> dict[str, np.ndarray]:
        """The pool as named arrays (for ``np.savez``); ``from_arrays`` inverts it."""
        layout = json.dumps({"names": self.layout.names, "types": self.layout.types, "sizes": self.layout.sizes})
        text = "\n".join(self.texts).encode("utf-8")
        arrays = {"pool_features": self.features, "pool_stats": self.stats, "pool_offsets": self.offsets,
                  "pool_keys": self.keys, "pool_texts": np.frombuffer(text, dtype=np.uint8),
                  "pool_layout": np.frombuffer(layout.encode("utf-8"), dtype=np.uint8)}
        if self.sparse is not None:
            names = "\n".join(self.sparse_names).encode("utf-8")
            arrays.update({"pool_sparse_data": self.sparse.data, "pool_sparse_indices": self.sparse.indices,
                           "pool_sparse_indptr": self.sparse.indptr,
                           "pool_sparse_names": np.frombuffer(names, dtype=np.uint8)})
        return arrays

    @classmethod
    def from_arrays(cls, arrays) -> "Pool":
        """The pool ``arrays()`` gave (a dict or an opened ``.npz``)."""
        spec = json.loads(bytes(arrays["pool_layout"]).decode("utf-8"))
        layout = FeatureLayout(tuple(spec["names"]), tuple(spec["types"]), tuple(spec["sizes"]))
        keys = np.asarray(arrays["pool_keys"], dtype=np.uint64)
        text = bytes(arrays["pool_texts"]).decode("utf-8")
        texts = tuple(text.split("\n")) if len(keys) else ()
        sparse, names = None, ()
        if "pool_sparse_indptr" in arrays:
            from scipy.sparse import csr_matrix

            names = tuple(bytes(arrays["pool_sparse_names"]).decode("utf-8").split("\n"))
            sparse = csr_matrix((np.asarray(arrays["pool_sparse_data"], dtype=np.float64),
                                 np.asarray(arrays["pool_sparse_indices"]), np.asarray(arrays["pool_sparse_indptr"])),
                                shape=(len(keys), len(names)))
        return cls(layout, np.asarray(arrays["pool_features"], dtype=np.float64),
                   np.asarray(arrays["pool_stats"], dtype=np.int64), np.asarray(arrays["pool_offsets"], dtype=np.int64),
                   keys, texts, sparse, names)


def _stacked_sparse(first: Pool, second: Pool, rows: np.ndarray) -> tuple[tuple[str, ...], object]:
    """The sparse names of two pools (``first``'s, then those new in ``second``) and the rows ``rows`` (int64[k],
    into the candidates of ``first`` then ``second``) of their sparse values over them (None: neither has any)."""
    if first.sparse is None and second.sparse is None:
        return (), None
    from scipy.sparse import csr_matrix, vstack

    index = {name: i for i, name in enumerate(first.sparse_names)}
    for name in second.sparse_names:
        index.setdefault(name, len(index))
    names = tuple(index)
    blocks = []
    for pool in (first, second):
        if pool.sparse is None:
            blocks.append(csr_matrix((pool.n_candidates, len(names))))
        else:
            column = np.array([index[n] for n in pool.sparse_names], dtype=np.int64)
            blocks.append(csr_matrix((pool.sparse.data, column[pool.sparse.indices], pool.sparse.indptr),
                                     shape=(pool.n_candidates, len(names))))
    return names, vstack(blocks, format="csr")[rows]


def sparse_matrix(entries: Sequence[NBestEntry]) -> tuple[tuple[str, ...], object]:
    """The sparse features of ``entries``: their names in order of first sight, and a CSR matrix
    float64[len(entries), len(names)] of their values (None when no entry has one)."""
    index: dict[str, int] = {}
    columns, values = [], []
    for entry in entries:
        for name, value in entry.sparse:
            columns.append(index.setdefault(name, len(index)))
            values.append(value)
    lengths = np.fromiter((len(entry.sparse) for entry in entries), dtype=np.int64, count=len(entries))
    return tuple(index), sparse_rows(np.array(values, dtype=np.float64), np.array(columns, dtype=np.int64),
                                     lengths, len(index))


def sparse_rows(values: np.ndarray, columns: np.ndarray, lengths: np.ndarray, n_columns: int):
    """The CSR matrix float64[len(lengths), n_columns] of rows of ``lengths`` values (``values``, in ``columns``),
    canonical (each row's columns sorted); None without columns."""
    if not n_columns:
        return None
    from scipy.sparse import csr_matrix

    matrix = csr_matrix((values, columns, csr.offsets(lengths)), shape=(len(lengths), n_columns))
    matrix.sum_duplicates()
    return matrix


def argmax_by_sentence(scores: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """int64[n_sent]: the index of the highest of ``scores`` (float64[n_cand]) within each
    sentence of ``offsets`` (int64[n_sent+1], none empty); the first on ties."""
    starts = offsets[:-1]
    top = np.repeat(np.maximum.reduceat(scores, starts), np.diff(offsets))
    return np.minimum.reduceat(np.where(scores == top, np.arange(len(scores)), len(scores)), starts)


def entry_key(entry: NBestEntry, features: np.ndarray, dedup: str) -> int:
    """The dedup key of ``entry`` (module docstring), ``features`` its dense values (float64[layout.size])."""
    if dedup == "string":
        return _digest(entry.text.encode("utf-8"))
    if entry.segmentation:
        return _digest((entry.text + "\x1f" + repr(entry.segmentation)).encode("utf-8"))
    return _digest(_features_material(entry.text.encode("utf-8"), features, entry.sparse))


def _features_material(text: bytes, features: np.ndarray, sparse: tuple[tuple[str, float], ...]) -> bytes:
    """The key material of an entry without a segmentation: its hypothesis, 0x1F, its feature values."""
    return text + b"\x1f" + features.tobytes() + (repr(sparse).encode("utf-8") if sparse else b"")


def _digest(material: bytes) -> int:
    return int.from_bytes(hashlib.blake2b(material, digest_size=8).digest(), "little")


def pool_from_entries(entries: Iterable[NBestEntry], layout: FeatureLayout, references: References,
                      dedup: str = "derivation", unique: bool = True) -> Pool:
    """A pool of n-best entries (sentence ids index ``references``), duplicates removed (``unique=False``: kept,
    for a caller that merges the pool into another next, as ``Pool.merge`` counts a repeated key once).

    Each entry's features must be exactly ``layout``'s names with their sizes,
    all finite; raises PbmtError otherwise (``read_pool`` names the line).
    """
    entries = list(entries)
    features = np.array([_feature_vector(e, layout) for e in entries]).reshape(len(entries), layout.size)
    sentences = np.array([_sentence(e, references.n_sentences) for e in entries], dtype=np.int64)
    return _entries_pool(entries, features, sentences, layout, references, dedup, unique)


def _entries_pool(entries, features, sentences, layout, references, dedup, unique=True) -> Pool:
    check_dedup(dedup)
    keys = np.fromiter((entry_key(e, f, dedup) for e, f in zip(entries, features)), dtype=np.uint64,
                       count=len(entries))
    order = np.argsort(sentences, kind="stable")
    texts = [entries[i].text for i in order]
    return sorted_pool(layout, references, sentences, order, features, keys, texts,
                       references.stats(texts, sentences[order]), *sparse_matrix(entries), unique=unique)


def check_dedup(dedup: str) -> None:
    """ValueError unless ``dedup`` is one of ``DEDUP``."""
    if dedup not in DEDUP:
        raise ValueError(f"dedup must be one of {DEDUP}, got {dedup!r}")


def sorted_pool(layout, references, sentences, order, features, keys, texts, stats, names, sparse,
                unique: bool = True) -> Pool:
    """The pool of candidates given in file order (``sentences``, ``features``, ``keys``, ``sparse``), ``order``
    the stable sort by sentence, ``texts`` and ``stats`` in that order; duplicates removed (``unique=False``:
    kept, for a caller that merges this pool into another next, which removes them: ``Pool.merge``)."""
    offsets = np.zeros(references.n_sentences + 1, dtype=np.int64)
    np.cumsum(np.bincount(sentences, minlength=references.n_sentences), out=offsets[1:])
    batch = Pool(layout, features[order], stats, offsets, keys[order], tuple(texts),
                 None if sparse is None else sparse[order], names)
    return Pool.empty(layout, references.n_sentences).merge(batch)[0] if unique else batch


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

    The text is read by numba kernels (``pbmt.base.nbest.scan_nbest``); a list
    they do not read whole (text that is not UTF-8, standard input, a line only
    Python reads) is read line by line, to the same pool or the same error.
    """
    check_dedup(dedup)
    scanned = scan_nbest(path)
    pool = None if scanned is None else _scanned_pool(scanned, path, references, layout, dedup)
    if pool is None:
        pool = _read_pool_lines(path, references, layout, dedup)
    counts = np.diff(pool.offsets)
    listed = int(np.flatnonzero(counts)[-1]) + 1 if counts.any() else 0
    if 0 < listed < pool.n_sentences and counts[:listed].all():  # the references run on past the list
        raise PbmtError(f"{path}: the list's sentences end at id {listed - 1} ({listed:,} sentences), but the "
                        f"references have {pool.n_sentences:,} lines: are they the list's dev set?")
    try:
        pool.check_complete()
    except PbmtError as err:
        raise PbmtError(f"{path}: {err}") from None
    return pool


def _read_pool_lines(path: str | Path, references: References, layout: FeatureLayout | None, dedup: str) -> Pool:
    """``read_pool`` through ``parse_line``, line by line."""
    entries, features, sentences = [], [], []
    for number, line in read_lines(path):
        if not line.strip():
            continue
        entry, layout, vector, sentence = _checked_entry(line, path, number, layout, references.n_sentences)
        features.append(vector)
        sentences.append(sentence)
        entries.append(entry)
    if layout is None:
        raise PbmtError(f"{path}: the n-best list has no entries")
    return _entries_pool(entries, np.array(features), np.array(sentences, dtype=np.int64), layout, references, dedup)


def _checked_entry(line: str, path: str | Path, number: int, layout: FeatureLayout | None, n_sentences: int
                   ) -> tuple[NBestEntry, FeatureLayout, np.ndarray, int]:
    """The entry of line ``number`` of ``path``, the layout (``layout``, or the entry's when None), its feature
    vector and its sentence; FormatError naming the line unless the entry fits them."""
    entry = parse_line(line, path, number)
    if layout is None:
        layout = FeatureLayout(tuple(entry.features), ("",) * len(entry.features),
                               tuple(len(v) for v in entry.features.values()))
    try:
        return entry, layout, _feature_vector(entry, layout), _sentence(entry, n_sentences)
    except PbmtError as err:
        raise FormatError(path, number, str(err)) from None


def scanned_layout(scanned: NBestText, layout: FeatureLayout | None
                   ) -> tuple[FeatureLayout | None, np.ndarray, np.ndarray]:
    """How the entries the kernels read fit a feature layout: (``layout``, or when None the first entry's dense
    features' names and sizes with empty types (None without entries); bool[n_groups], the feature groups that
    are sparse features (``pbmt.base.nbest.is_sparse``); bool[n_entries], the entries whose dense features are
    not the layout's names and sizes in order, or that name a feature twice)."""
    n = scanned.n_entries
    names, group_names, sizes = scanned.names, scanned.group_names, scanned.group_sizes
    entry_of_group = np.repeat(np.arange(n), np.diff(scanned.group_offsets))
    sparse = (sizes == 1) & np.array(["_" in name for name in names], dtype=bool)[group_names]  # nbest.is_sparse
    dense_names, dense_sizes, dense_entry = group_names[~sparse], sizes[~sparse], entry_of_group[~sparse]
    if layout is None and n:
        first = dense_entry == 0
        layout = FeatureLayout(tuple(names[i] for i in dense_names[first]), ("",) * int(first.sum()),
                               tuple(int(s) for s in dense_sizes[first]))
    wrong = np.zeros(n, dtype=bool)
    if n:
        index = {name: i for i, name in enumerate(names)}
        ids = np.array([index.get(name, -1) for name in layout.names], dtype=np.int64)
        counts = np.bincount(dense_entry, minlength=n)
        position = np.arange(len(dense_names)) - np.repeat(csr.offsets(counts)[:-1], counts)
        within = position < len(ids)
        fits = within.copy()
        fits[within] = (dense_names[within] == ids[position[within]]) & (
            dense_sizes[within] == np.asarray(layout.sizes, dtype=np.int64)[position[within]])
        wrong = (counts != len(ids)) | (np.bincount(dense_entry[~fits], minlength=n) > 0)
        keys = np.sort(entry_of_group * len(names) + group_names)
        wrong[keys[1:][keys[1:] == keys[:-1]] // len(names)] = True  # a name twice in an entry
    return layout, sparse, wrong


def _scanned_pool(scanned: NBestText, path: str | Path, references: References, layout: FeatureLayout | None,
                  dedup: str) -> Pool | None:
    """The pool of the entries the kernels read; None when a line they refused reads in Python (``read_pool``
    reads the list line by line then). FormatError naming the first line that does not fit, as
    ``_checked_entry`` names it."""
    n = scanned.n_entries
    layout, sparse, wrong = scanned_layout(scanned, layout)
    wrong |= scanned.sentences >= references.n_sentences
    bad = int(np.argmax(wrong)) if wrong.any() else n
    if bad < n or scanned.refused is not None:
        number, line = scanned.line(bad) if bad < n else scanned.refused
        _checked_entry(line, path, number, layout, references.n_sentences)
        return None  # the line reads in Python: let Python read the list
    if not n:
        raise PbmtError(f"{path}: the n-best list has no entries")

    names, group_names, sizes = scanned.names, scanned.group_names, scanned.group_sizes
    entry_of_group = np.repeat(np.arange(n), np.diff(scanned.group_offsets))
    features = scanned.values[np.repeat(~sparse, sizes)].reshape(n, layout.size)
    sentences = scanned.sentences
    order = np.argsort(sentences, kind="stable")
    texts = scanned.hypotheses(order)
    word_offsets, words = csr.take(scanned.word_offsets, scanned.words, order)
    stats = references.token_stats(scanned.text, word_offsets, words, sentences[order])

    firsts = csr.offsets(sizes)[:-1][sparse]
    used, seen = np.unique(group_names[sparse], return_index=True)
    used = used[np.argsort(seen)]  # in order of first sight
    column = np.zeros(len(names), dtype=np.int64)
    column[used] = np.arange(len(used))
    sparse_names = tuple(names[i] for i in used)
    matrix = sparse_rows(scanned.values[firsts], column[group_names[sparse]],
                         np.bincount(entry_of_group[sparse], minlength=n), len(used))
    keys = _scanned_keys(scanned, features, sparse, dedup)
    return sorted_pool(layout, references, sentences, order, features, keys, texts, stats, sparse_names, matrix)


def _scanned_keys(scanned: NBestText, features: np.ndarray, sparse: np.ndarray, dedup: str) -> np.ndarray:
    """uint64[n]: the dedup key (``_key``'s) of each entry the kernels read; ``sparse``: bool[n_groups], the
    groups that are sparse features."""
    if dedup == "string":
        return scanned.text_keys()
    keys = scanned.derivation_keys()
    firsts = csr.offsets(scanned.group_sizes)[:-1]
    for i in np.flatnonzero(~scanned.segmented):  # no segmentation: keyed by the features
        groups = [g for g in range(scanned.group_offsets[i], scanned.group_offsets[i + 1]) if sparse[g]]
        written = tuple((scanned.names[scanned.group_names[g]], float(scanned.values[firsts[g]])) for g in groups)
        text = scanned.hypotheses(np.array([i]))[0].encode("utf-8")
        keys[i] = _digest(_features_material(text, features[i], written))
    return keys


def tuned_columns(layout: FeatureLayout, fixed: tuple[str, ...]) -> np.ndarray:
    """bool[layout.size]: the columns an optimiser tunes, all but those of the ``fixed`` features
    (names absent from ``layout`` are ignored)."""
    free = np.ones(layout.size, dtype=bool)
    for name in fixed:
        if name in layout.names:
            free[layout.columns(name)] = False
    return free


def checked_weights(pool: Pool, initial_weights: np.ndarray, sparse: bool = False) -> np.ndarray:
    """``initial_weights`` as a new float64[n_features] array; ValueError unless finite and of the pool's size.

    With ``sparse`` (an optimiser of sparse features too), the dense weights alone (float64[layout.size],
    to tune the dense columns only, as before there were sparse features) or dense then sparse
    (float64[n_weights], to tune them all) are taken.
    """
    initial = np.array(initial_weights, dtype=np.float64)
    sizes = (pool.layout.size, pool.n_weights) if sparse else (pool.layout.size,)
    if initial.shape not in [(n,) for n in sizes]:
        raise ValueError(f"expected {' or '.join(map(str, sorted(set(sizes))))} initial weights "
                         f"({', '.join(pool.layout.names)}{', then sparse' if pool.sparse_names and sparse else ''}), "
                         f"got shape {initial.shape}")
    if not np.all(np.isfinite(initial)):
        raise ValueError("initial weights must be finite")
    return initial


def tuned_weights(pool: Pool, fixed: tuple[str, ...], n_weights: int, min_sentences: int = 1) -> np.ndarray:
    """bool[n_weights]: the weights an optimiser of sparse features tunes: the dense columns but those of the
    ``fixed`` features, then, when ``n_weights`` covers them (``checked_weights``), the sparse ones not zero in
    the candidates of at least ``min_sentences`` sentences (``Pool.sparse_sentence_counts``; 1: all of them)."""
    sparse = np.ones(n_weights - pool.layout.size, dtype=bool)
    if min_sentences > 1 and len(sparse):
        sparse = pool.sparse_sentence_counts() >= min_sentences
    return np.concatenate([tuned_columns(pool.layout, fixed), sparse])


def weight_columns(pool: Pool, tuned: np.ndarray):
    """The candidates' values in the columns ``tuned`` (bool[layout.size] or bool[n_weights]): a dense
    float64[n_cand, k] for dense columns alone, else a CSR matrix."""
    dense = pool.features[:, tuned[:pool.layout.size]]
    if len(tuned) == pool.layout.size or pool.sparse is None:
        return dense
    from scipy import sparse

    return sparse.hstack([sparse.csr_matrix(dense), pool.sparse[:, tuned[pool.layout.size:]]], format="csr")
