"""Phrase and reordering tables of a corpus of any size: extraction in shards
whose counts go to sorted runs on disk, scoring in a k-way merge of the runs.

Moses's ``extract`` writes every phrase pair occurrence to a file that
``sort`` and ``score`` then stream through; pbmt's in-memory path
(``pbmt.train.extract`` and ``pbmt.train.score``) holds every occurrence of
the corpus at once. Here the corpus is cut into shards of sentence pairs:

1. Each shard (``extract_shard``) runs the extraction kernel on its
   sentences, gives every occurrence a fixed-width byte key (source phrase,
   target phrase, alignment mask; ``_shard_kernels.phrase_pair_keys``) and
   writes two runs (``pbmt.train.runs``): its distinct (pair, mask) keys with
   their counts and orientation counts, and its distinct target phrases with
   their counts. It also returns its word pair counts for the word
   translation tables. Shards are independent: they run here, on local
   worker processes or on a dask cluster (``pbmt.base.parallel``), reading the
   corpus arrays from a shared folder and writing their runs there.
2. The target runs are merged into one sorted table of count(e) on disk.
3. The pair runs are merged in blocks that hold whole source phrases; each
   block is reduced, its alignments chosen and its pairs scored and written
   (``score_runs``), so count(f) comes from the block and count(e) from a
   binary search in the table of step 2.

Peak memory follows the shard and block sizes, not the corpus; the lines are
byte for byte those of the in-memory path, in Moses's order.

The order. A phrase's key is the Moses-order rank of each of its words
(``WordRanks``), then the rank of the terminator ``|||``, then zeros: Moses
sorts lines bytewise by ``phrase |||``, which is word-by-word order with
``|||`` ending each phrase, as long as no word continues another word with a
character below the space (checked; such a pair of words is an error).
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Callable

import numpy as np
from tqdm import tqdm

from pbmt.base.errors import PbmtError
from pbmt.base.files import atomic_write
from pbmt.base.hashtable import build_table
from pbmt.base.parallel import ParallelMap
from pbmt.train._extract_kernels import extract_kernel
from pbmt.train._score_kernels import lexical_weights
from pbmt.train._shard_kernels import phrase_pair_keys
from pbmt.train.corpus import Alignment, Corpus
from pbmt.train import MAX_SUPPORTED_LENGTH
from pbmt.train.extract import moses_alignments
from pbmt.train.filter import prune_rows
from pbmt.train.runs import group_starts, key_bytes, lower_bound, merge_runs, write_run
from pbmt.train.score import (
    REORDERING_SMOOTHING,
    WordTranslation,
    phrase_table_lines,
    reordering_probabilities,
    reordering_table_lines,
    word_pair_counts,
    word_translation_from_counts,
    write_lines,
)
from pbmt.base.vocab import Vocab

#: Sentence pairs per shard: the table step's peak memory follows it, not the corpus's size.
DEFAULT_SHARD_SENTENCES = 20_000
#: Source tokens per merge partition (each partition is one gzip member of the tables).
DEFAULT_PARTITION_TOKENS = 200_000
#: Records read in a merge round, shared out among the runs.
DEFAULT_BLOCK_ROWS = 1 << 17
_TERMINATOR = "|||"


@dataclass(frozen=True)
class WordRanks:
    """Words of one side numbered in Moses's order (code point order, which
    is UTF-8 byte order), from 1; ``terminator`` is the rank of the phrase
    end ``|||``, just before the word ``|||`` would be.

    ``rank``: uint32[len(vocab)], the rank of every word id; ``words``: the
    word of every rank (``words[0]`` and ``words[terminator]`` unused);
    ``word_id``: int32 word id of every rank (-1 for 0 and the terminator).
    """

    rank: np.ndarray
    words: list[str]
    word_id: np.ndarray
    terminator: int

    @classmethod
    def of(cls, vocab: Vocab, side: str) -> "WordRanks":
        """The ranks of ``vocab``'s words; PbmtError naming ``side`` (source or
        target) when two words would sort differently as phrases than as words."""
        words = vocab.words(range(len(vocab)))
        known = set(words)
        for word in words:
            for k in range(1, len(word)):
                if word[k] < " " and word[:k] in known:
                    raise PbmtError(f"{side} word {word!r} continues the word {word[:k]!r} with the control "
                                    f"character {word[k]!r}: the phrase table's sort order is undefined for it")
        order = sorted([(w, 1, i) for i, w in enumerate(words)] + [(_TERMINATOR, 0, -1)])
        rank = np.zeros(len(words), dtype=np.uint32)
        word_id = np.full(len(order) + 1, -1, dtype=np.int32)
        terminator = 0
        for r, (_, _, i) in enumerate(order, 1):
            if i < 0:
                terminator = r
            else:
                rank[i] = r
                word_id[r] = i
        return cls(rank, [""] + [w for w, _, _ in order], word_id, terminator)


@dataclass(frozen=True)
class ShardInputs:
    """The arrays every shard reads, saved in (and memory-mapped from) one folder.

    Corpora as ``pbmt.train.corpus`` holds them (``src_ids``/``tgt_ids``
    int32 tokens, ``src_off``/``tgt_off`` int64[n + 1]), the alignment as CSR
    (``a_src``, ``a_tgt`` int32, ``a_off`` int64[n + 1]), the rank of every
    token (``src_rank``/``tgt_rank``, uint32 per token) and the settings.
    """

    folder: Path
    src_ids: np.ndarray
    src_off: np.ndarray
    tgt_ids: np.ndarray
    tgt_off: np.ndarray
    a_src: np.ndarray
    a_tgt: np.ndarray
    a_off: np.ndarray
    src_rank: np.ndarray
    tgt_rank: np.ndarray
    settings: dict

    ARRAYS = ("src_ids", "src_off", "tgt_ids", "tgt_off", "a_src", "a_tgt", "a_off", "src_rank", "tgt_rank")

    @classmethod
    def save(cls, folder: Path, src: Corpus, tgt: Corpus, alignment: Alignment,
             src_ranks: WordRanks, tgt_ranks: WordRanks, max_length: int) -> None:
        """Write the shards' inputs to ``folder``."""
        folder.mkdir(parents=True, exist_ok=True)
        arrays = {
            "src_ids": src.ids, "src_off": src.offsets, "tgt_ids": tgt.ids, "tgt_off": tgt.offsets,
            "a_src": alignment.src, "a_tgt": alignment.tgt, "a_off": alignment.offsets,
            "src_rank": src_ranks.rank[src.ids], "tgt_rank": tgt_ranks.rank[tgt.ids],
        }
        for name, array in arrays.items():
            with atomic_write(folder / f"{name}.npy", "wb") as out:
                np.save(out, array)
        settings = {"max_length": max_length, "src_terminator": src_ranks.terminator,
                    "tgt_terminator": tgt_ranks.terminator, "n_tgt": len(tgt.vocab)}
        with atomic_write(folder / "settings.json") as out:
            json.dump(settings, out)

    @classmethod
    def load(cls, folder: Path) -> "ShardInputs":
        """The inputs in ``folder``, memory-mapped."""
        arrays = {name: np.load(folder / f"{name}.npy", mmap_mode="r") for name in cls.ARRAYS}
        return cls(folder, **arrays, settings=json.loads((folder / "settings.json").read_text("utf-8")))

    @property
    def slots(self) -> int:
        return self.settings["max_length"] + 1


def pair_dtype(slots: int) -> np.dtype:
    """Records of the pair runs: the key (source, target, mask), count(f, e)
    and the orientation counts (monotone, swap, discontinuous to the previous
    phrase, then to the next)."""
    return np.dtype([("key", f"S{8 * slots + 8}"), ("count", "<i8"), ("orientation", "<u4", (6,))])


def target_dtype(slots: int) -> np.dtype:
    """Records of the target runs: the target phrase's key and its count."""
    return np.dtype([("key", f"S{4 * slots}"), ("count", "<i8")])


@dataclass(frozen=True)
class ShardCounts:
    """What a shard reports: its word pair counts (see ``word_pair_counts``)
    and how many phrase pair occurrences it extracted."""

    word_pairs: np.ndarray
    word_pair_count: np.ndarray
    occurrences: int


def _run_paths(folder: Path, index: int) -> tuple[Path, Path]:
    return folder / f"pairs-{index:06d}.run", folder / f"targets-{index:06d}.run"


def _slice_corpus(ids: np.ndarray, offsets: np.ndarray, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray, int]:
    base = int(offsets[lo])
    return np.asarray(ids[base : offsets[hi]]), np.asarray(offsets[lo : hi + 1]) - base, base


def _groups(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(start of every group of equal neighbours in ``keys``, group of every row)."""
    starts = group_starts(keys)
    of_row = np.zeros(len(keys), dtype=np.int64)
    of_row[starts[1:]] = 1
    return starts, np.cumsum(of_row)


def extract_shard(inputs: ShardInputs, shard: tuple[int, int, int]) -> ShardCounts:
    """Extract the sentence pairs ``lo .. hi - 1`` of ``shard = (index, lo, hi)``
    and write its two runs to the inputs' folder; see the module docstring."""
    index, lo, hi = shard
    slots = inputs.slots
    src_ids, src_off, src_base = _slice_corpus(inputs.src_ids, inputs.src_off, lo, hi)
    tgt_ids, tgt_off, tgt_base = _slice_corpus(inputs.tgt_ids, inputs.tgt_off, lo, hi)
    a_off = np.asarray(inputs.a_off[lo : hi + 1])
    alignment = Alignment(np.asarray(inputs.a_src[a_off[0] : a_off[-1]]),
                          np.asarray(inputs.a_tgt[a_off[0] : a_off[-1]]), a_off - a_off[0])
    o_src, o_slen, o_tgt, o_tlen, o_mask, o_prev, o_next = extract_kernel(
        src_off, tgt_off, alignment.src, alignment.tgt, alignment.offsets, inputs.settings["max_length"])
    raw = phrase_pair_keys(
        np.asarray(inputs.src_rank[src_base : src_base + len(src_ids)]), o_src, o_slen,
        np.asarray(inputs.tgt_rank[tgt_base : tgt_base + len(tgt_ids)]), o_tgt, o_tlen, o_mask,
        slots, inputs.settings["src_terminator"], inputs.settings["tgt_terminator"])
    del o_src, o_slen, o_tgt, o_tlen, o_mask
    keys = raw.view(f"S{raw.shape[1]}").ravel()
    order = np.argsort(keys, kind="stable")
    keys = keys[order]
    del raw
    starts, group = _groups(keys)
    n = len(starts)
    pairs = np.empty(n, dtype=pair_dtype(slots))
    pairs["key"] = keys[starts]
    del keys
    pairs["count"] = np.diff(np.append(starts, len(group)))
    pairs["orientation"][:, :3] = np.bincount(group * 3 + o_prev[order], minlength=3 * n).reshape(n, 3)
    pairs["orientation"][:, 3:] = np.bincount(group * 3 + o_next[order], minlength=3 * n).reshape(n, 3)
    del order, group, o_prev, o_next
    pair_path, target_path = _run_paths(inputs.folder, index)
    write_run(pair_path, pairs)
    target_keys = key_bytes(pairs["key"], 4 * slots, 8 * slots)
    order = np.argsort(target_keys, kind="stable")
    target_keys = target_keys[order]
    t_starts = group_starts(target_keys)
    targets = np.empty(len(t_starts), dtype=target_dtype(slots))
    targets["key"] = target_keys[t_starts]
    targets["count"] = np.add.reduceat(pairs["count"][order], t_starts) if len(t_starts) else 0
    write_run(target_path, targets)
    word_keys, word_count = word_pair_counts(
        Corpus(src_ids, src_off, Vocab()), Corpus(tgt_ids, tgt_off, Vocab()), alignment, inputs.settings["n_tgt"])
    return ShardCounts(word_keys, word_count, int(pairs["count"].sum()))


def merge_targets(folder: Path, n_shards: int, slots: int, block_rows: int = DEFAULT_BLOCK_ROWS) -> int:
    """Merge the shards' target runs into ``targets.keys`` (sorted distinct
    target keys) and ``targets.count`` (int64 count(e) of each) in ``folder``;
    returns the number of target phrases."""
    dtype = target_dtype(slots)
    total = 0
    with atomic_write(folder / "targets.keys", "wb") as keys_out, atomic_write(folder / "targets.count", "wb") as out:
        for block in merge_runs([_run_paths(folder, i)[1] for i in range(n_shards)], dtype, 4 * slots, block_rows):
            starts = group_starts(block["key"])
            keys_out.write(block["key"][starts].tobytes())
            out.write(np.add.reduceat(block["count"], starts).astype("<i8").tobytes())
            total += len(starts)
    return total


@dataclass(frozen=True)
class _Scorer:
    """What scoring a block of merged pair records needs besides the block,
    saved in the scratch folder by ``_Scorer.save`` for the workers."""

    slots: int
    src: WordRanks
    tgt: WordRanks
    target_keys: np.ndarray
    target_count: np.ndarray
    lexicon: dict
    min_count: int
    prune_limit: int | None
    smoothing: float

    @staticmethod
    def save(folder: Path, src: WordRanks, tgt: WordRanks, lexicon: WordTranslation, n_tgt: int,
             min_count: int, prune_limit: int | None, suffixes: tuple[str, str]) -> None:
        keys, values = build_table((lexicon.src + 1).astype(np.int64), (lexicon.tgt + 1).astype(np.int32), n_tgt + 1)
        with atomic_write(folder / "scoring.npz", "wb") as out:
            np.savez(out, lex_keys=keys, lex_values=values, p_tgt_given_src=lexicon.p_tgt_given_src,
                     p_src_given_tgt=lexicon.p_src_given_tgt, src_rank=src.rank, tgt_rank=tgt.rank,
                     src_word_id=src.word_id, tgt_word_id=tgt.word_id)
        with atomic_write(folder / "scoring.json") as out:
            json.dump({"src_words": src.words, "tgt_words": tgt.words, "src_terminator": src.terminator,
                       "tgt_terminator": tgt.terminator, "min_count": min_count, "prune_limit": prune_limit,
                       "suffixes": suffixes}, out)

    @classmethod
    def load(cls, folder: Path, slots: int) -> "_Scorer":
        arrays = np.load(folder / "scoring.npz")
        settings = json.loads((folder / "scoring.json").read_text("utf-8"))
        sides = [WordRanks(arrays[f"{side}_rank"], settings[f"{side}_words"], arrays[f"{side}_word_id"],
                           settings[f"{side}_terminator"]) for side in ("src", "tgt")]
        empty = os.path.getsize(folder / "targets.count") == 0
        return cls(
            slots, *sides,
            np.zeros(0, f"S{4 * slots}") if empty else np.memmap(folder / "targets.keys", f"S{4 * slots}", "r"),
            np.zeros(0, np.int64) if empty else np.memmap(folder / "targets.count", "<i8", "r"),
            {name: arrays[name] for name in ("lex_keys", "lex_values", "p_tgt_given_src", "p_src_given_tgt")},
            settings["min_count"], settings["prune_limit"], REORDERING_SMOOTHING,
        )


def _phrases(key_matrix: np.ndarray, ranks: WordRanks) -> tuple[np.ndarray, np.ndarray]:
    """(uint32[n, slots] ranks, int64[n] lengths) of big-endian phrase keys (uint8[n, 4 * slots])."""
    rank = np.ascontiguousarray(key_matrix).view(">u4").astype(np.uint32)
    return rank, np.argmax(rank == ranks.terminator, axis=1)


def _texts(first: np.ndarray, of_row: np.ndarray, rank: np.ndarray, length: np.ndarray,
           ranks: WordRanks) -> list[str]:
    """The text of phrase ``of_row[i]`` for every row ``i``; phrase ``k`` is
    row ``first[k]`` of ``rank``/``length`` and is joined once."""
    words = ranks.words
    text = [" ".join([words[r] for r in row[:n]]) for row, n in zip(rank[first].tolist(), length[first].tolist())]
    return [text[i] for i in of_row.tolist()]


def _score_block(block: np.ndarray, scorer: _Scorer) -> tuple[list[str], list[str], int]:
    """Phrase and reordering table lines of a block of merged pair records
    holding whole source phrases; and the number of distinct pairs in it."""
    slots = scorer.slots
    rec_starts = group_starts(block["key"])
    count_pm = np.add.reduceat(block["count"], rec_starts)
    orient_pm = np.add.reduceat(block["orientation"], rec_starts, axis=0)
    raw = np.ascontiguousarray(block["key"][rec_starts]).view(np.uint8).reshape(len(rec_starts), -1)
    pair_keys = key_bytes(block["key"][rec_starts], 0, 8 * slots)
    pair_starts = group_starts(pair_keys)
    n = len(pair_starts)
    masks = np.ascontiguousarray(raw[:, 8 * slots :]).view(">u8").ravel().astype(np.uint64)
    direct, inverse = moses_alignments(np.append(pair_starts, len(pair_keys)), masks, count_pm)
    count = np.add.reduceat(count_pm, pair_starts)
    orientation = np.add.reduceat(orient_pm, pair_starts, axis=0)
    raw = raw[pair_starts]
    src_keys = key_bytes(pair_keys[pair_starts], 0, 4 * slots)
    tgt_keys = key_bytes(pair_keys[pair_starts], 4 * slots, 8 * slots)
    src_starts, src_group = _groups(src_keys)
    count_f = np.add.reduceat(count, src_starts)[src_group]
    distinct_tgt, tgt_first, tgt_inverse = np.unique(tgt_keys, return_index=True, return_inverse=True)
    count_e = np.asarray(scorer.target_count[np.searchsorted(scorer.target_keys, distinct_tgt)])[tgt_inverse]
    src_rank, src_len = _phrases(raw[:, : 4 * slots], scorer.src)
    tgt_rank, tgt_len = _phrases(raw[:, 4 * slots : 8 * slots], scorer.tgt)
    lex = lexical_weights(
        (scorer.src.word_id[src_rank] + 1).ravel(), np.arange(n, dtype=np.int64) * slots, src_len,
        (scorer.tgt.word_id[tgt_rank] + 1).ravel(), np.arange(n, dtype=np.int64) * slots, tgt_len,
        direct, inverse, scorer.lexicon["lex_keys"], scorer.lexicon["lex_values"], len(scorer.tgt.rank) + 1,
        scorer.lexicon["p_tgt_given_src"], scorer.lexicon["p_src_given_tgt"],
    )
    features = np.column_stack([count / count_e, lex[:, 0], count / count_f, lex[:, 1]])
    rows = np.arange(n)
    if scorer.min_count > 1:
        rows = np.flatnonzero((count >= scorer.min_count) | (src_len == 1))
    if scorer.prune_limit is not None:
        rows = rows[prune_rows(src_group[rows], features[rows, 2], scorer.prune_limit)]
    src_text = _texts(src_starts, src_group[rows], src_rank, src_len, scorer.src)
    tgt_text = _texts(tgt_first, tgt_inverse[rows], tgt_rank, tgt_len, scorer.tgt)
    table = phrase_table_lines(src_text, tgt_text, features[rows], direct[rows], count_e[rows], count_f[rows],
                               count[rows])
    reordering = reordering_table_lines(src_text, tgt_text,
                                        reordering_probabilities(orientation[rows], scorer.smoothing))
    return list(table), list(reordering), n


def partition_bounds(src_rank: np.ndarray, n_ranks: int, partition_tokens: int) -> list[tuple[int, int]]:
    """Ranges ``[lo, hi)`` of first-word ranks of the source phrases, each
    range one partition of the merge, of about ``partition_tokens`` source
    tokens by the words' frequencies (``src_rank``: the rank of every source
    token). A function of the corpus only, so the table files' bytes do not
    depend on the shards or the workers."""
    n_parts = max(1, -(-len(src_rank) // partition_tokens))
    cumulative = np.cumsum(np.bincount(src_rank, minlength=n_ranks + 1))
    cuts = np.searchsorted(cumulative, np.arange(1, n_parts) * (cumulative[-1] / n_parts), side="right")
    edges = [0] + sorted({int(c) for c in cuts if 0 < c <= n_ranks}) + [n_ranks + 1]
    return list(zip(edges[:-1], edges[1:]))


class _Worker:
    """A worker's state: the shard inputs, read where they are first used (a worker reads its own; the client
    reads them only when it does the work itself), and the scorer once the shards are done."""

    def __init__(self, folder: Path):
        self.folder = folder
        self._scorer: _Scorer | None = None

    def __reduce__(self):
        return _Worker, (self.folder,)

    @cached_property
    def inputs(self) -> ShardInputs:
        return ShardInputs.load(self.folder)

    def scorer(self) -> _Scorer:
        if self._scorer is None:
            self._scorer = _Scorer.load(self.inputs.folder, self.inputs.slots)
        return self._scorer


def _part_paths(folder: Path, index: int) -> tuple[Path, Path]:
    table, reordering = json.loads((folder / "scoring.json").read_text("utf-8"))["suffixes"]
    return folder / f"part-{index:06d}.pt{table}", folder / f"part-{index:06d}.rt{reordering}"


def score_partition(worker: _Worker, partition: tuple[int, int, int, int, int]) -> tuple[int, int]:
    """Merge, score and write (in the scratch folder, gzip if the tables are) the pairs whose
    source phrase's first word has a rank in ``[lo, hi)``, for ``partition =
    (index, lo, hi, n_shards, block_rows)``; returns (pairs, lines written)."""
    index, lo, hi, n_shards, block_rows = partition
    scorer = worker.scorer()
    dtype = pair_dtype(scorer.slots)
    runs = [_run_paths(worker.inputs.folder, i)[0] for i in range(n_shards)]
    ranges = [(lower_bound(run, dtype, int(lo).to_bytes(4, "big")), lower_bound(run, dtype, int(hi).to_bytes(4, "big")))
              for run in runs]
    extracted = written = 0
    table_path, reordering_path = _part_paths(worker.inputs.folder, index)
    with atomic_write(table_path, "wb") as table_out, atomic_write(reordering_path, "wb") as reordering_out:
        for block in merge_runs(runs, dtype, 4 * scorer.slots, block_rows, ranges):
            table_lines, reordering_lines, n = _score_block(block, scorer)
            write_lines(table_out, table_lines)
            write_lines(reordering_out, reordering_lines)
            extracted += n
            written += len(table_lines)
    return extracted, written


def _task(worker: _Worker, task: tuple[str, tuple]):
    kind, argument = task
    return extract_shard(worker.inputs, argument) if kind == "extract" else score_partition(worker, argument)


@dataclass(frozen=True)
class ShardedCounts:
    """Phrase pairs ``extracted`` (distinct), ``written`` after pruning, and
    the ``shards`` and merge ``partitions`` they went through."""

    extracted: int
    written: int
    shards: int
    partitions: int


def build_tables(
    src: Corpus,
    tgt: Corpus,
    alignment: Alignment,
    phrase_table: Path,
    reordering_table: Path,
    scratch: Path,
    max_length: int = 7,
    min_count: int = 1,
    prune_limit: int | None = None,
    shard_sentences: int = DEFAULT_SHARD_SENTENCES,
    workers: int = 1,
    scheduler: str | None = None,
    block_rows: int = DEFAULT_BLOCK_ROWS,
    partition_tokens: int = DEFAULT_PARTITION_TOKENS,
    progress: bool = False,
    log: Callable[[str], None] = lambda message: None,
) -> tuple[ShardedCounts, WordTranslation]:
    """Write the phrase table and the msd-bidirectional-fe reordering table of
    the aligned corpus, with the lines ``pbmt.train.score`` writes, extracting
    in shards of ``shard_sentences`` sentence pairs whose runs go to the
    folder ``scratch`` (emptied first, removed at the end; on a cluster it
    must be a folder every worker reads and writes), and merging in
    partitions of about ``partition_tokens`` source tokens, each written as
    one gzip member of the tables. Returns the counts and the word
    translation tables.

    ``min_count``/``prune_limit``: as ``pbmt.train.pipeline.train_tables``;
    ``workers``/``scheduler``: where shards and partitions run
    (``pbmt.base.parallel``); ``block_rows``: records read in a merge round
    (``pbmt.train.runs.merge_runs``).
    """
    if not 1 <= max_length <= MAX_SUPPORTED_LENGTH:
        raise PbmtError(f"max phrase length must be 1 to {MAX_SUPPORTED_LENGTH}, not {max_length}")
    if shard_sentences < 1:
        raise PbmtError(f"the shard size must be at least one sentence pair, not {shard_sentences}")
    if len(src) != len(tgt):
        raise PbmtError(f"extract: {len(src)} source but {len(tgt)} target sentences")
    alignment.check(src.lengths, tgt.lengths, "extract")
    src_ranks, tgt_ranks = WordRanks.of(src.vocab, "source"), WordRanks.of(tgt.vocab, "target")
    scratch = Path(scratch).resolve()  # workers may run elsewhere: the shared folder by its full path
    if scratch.exists():
        shutil.rmtree(scratch)
    ShardInputs.save(scratch, src, tgt, alignment, src_ranks, tgt_ranks, max_length)
    slots = max_length + 1
    bounds = list(range(0, len(src), shard_sentences)) + [len(src)]
    shards = [(i, lo, hi) for i, (lo, hi) in enumerate(zip(bounds[:-1], bounds[1:]))]
    partitions = [(i, lo, hi, len(shards), block_rows) for i, (lo, hi) in enumerate(
        partition_bounds(src_ranks.rank[src.ids], len(src_ranks.words), partition_tokens))]
    log(f"extracting phrase pairs in {len(shards)} shards of up to {shard_sentences:,} sentence pairs")
    word_keys, word_count = [], []
    with ParallelMap(_task, _Worker(scratch), workers, scheduler) as pool:
        with tqdm(total=len(src), desc="extract", unit="pair", disable=not progress or None) as bar:
            for (_, lo, hi), counts in zip(shards, pool.map((("extract", s) for s in shards), chunksize=1)):
                word_keys.append(counts.word_pairs)
                word_count.append(counts.word_pair_count)
                bar.update(hi - lo)
        keys, inverse = np.unique(np.concatenate(word_keys), return_inverse=True)
        lexicon = word_translation_from_counts(src, tgt, keys,
                                               np.bincount(inverse, weights=np.concatenate(word_count)))
        del word_keys, word_count, keys, inverse
        n_targets = merge_targets(scratch, len(shards), slots, block_rows)
        _Scorer.save(scratch, src_ranks, tgt_ranks, lexicon, len(tgt.vocab), min_count, prune_limit,
                     tuple(".gz" if p.suffix == ".gz" else "" for p in (phrase_table, reordering_table)))
        log(f"scoring the phrase pairs of {n_targets:,} target phrases in {len(partitions)} partitions")
        extracted = written = 0
        with tqdm(total=len(partitions), desc="score", unit="part", disable=not progress or None) as bar:
            for n, kept in pool.map((("score", p) for p in partitions), chunksize=1):
                extracted += n
                written += kept
                bar.update(1)
    for k, out in enumerate((phrase_table, reordering_table)):
        with atomic_write(out, "wb", compress=False) as joined:
            for index, *_ in partitions:
                with open(_part_paths(scratch, index)[k], "rb") as part:
                    shutil.copyfileobj(part, joined, 1 << 20)
    shutil.rmtree(scratch)
    return ShardedCounts(extracted, written, len(shards), len(partitions)), lexicon
