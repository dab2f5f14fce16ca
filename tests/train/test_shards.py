"""Sharded extraction and scoring: the tables written from runs on disk are
byte for byte those of the in-memory path (which equals Moses's on the
Bible, tests/train/test_score.py), whatever the shard size, the merge's block
size or the number of workers."""

import gzip

import numpy as np
import pytest

from pbmt.base.errors import PbmtError
from pbmt.train.corpus import alignment_from_points, corpus_from_lines, read_alignment, read_corpus
from pbmt.train.extract import extract_phrase_pairs
from pbmt.train.filter import prune
from pbmt.train.runs import merge_runs, write_run
from pbmt.train.score import score_phrase_pairs, word_translation, write_phrase_table, write_reordering_table
from pbmt.train.shards import WordRanks, build_tables
from pbmt.base.vocab import Vocab

N = 300  # Bible verses: enough for source phrases with many pairs, fast enough for CI


def _in_memory(tmp_path, src, tgt, alignment, max_length=7, min_count=1, prune_limit=None):
    table = score_phrase_pairs(extract_phrase_pairs(src, tgt, alignment, max_length), word_translation(src, tgt, alignment))
    if min_count > 1:
        single = table.pairs.src.length[table.pairs.src_index] == 1
        table = table.take(np.flatnonzero((table.pairs.count >= min_count) | single))
    if prune_limit is not None:
        table = prune(table, prune_limit)
    write_phrase_table(tmp_path / "memory-pt.gz", table)
    write_reordering_table(tmp_path / "memory-rt.gz", table)
    return [gzip.open(tmp_path / f"memory-{n}.gz").read() for n in ("pt", "rt")]


def _sharded(tmp_path, src, tgt, alignment, name, **options):
    """The tables' text, counts and lexicon."""
    paths = tmp_path / f"{name}-pt.gz", tmp_path / f"{name}-rt.gz"
    counts, lexicon = build_tables(src, tgt, alignment, *paths, tmp_path / f"{name}-scratch", **options)
    assert not (tmp_path / f"{name}-scratch").exists()
    return [gzip.open(p).read() for p in paths], counts, lexicon


@pytest.fixture(scope="module")
def bible_subset(bible, tmp_path_factory):
    folder = tmp_path_factory.mktemp("subset")
    for name in ("train.tok.es", "train.tok.en", "train.align.gdfa"):
        lines = (bible / name).read_text("utf-8").splitlines()[:N]
        (folder / name).write_text("\n".join(lines) + "\n", "utf-8")
    src, tgt = read_corpus(folder / "train.tok.es"), read_corpus(folder / "train.tok.en")
    return src, tgt, read_alignment(folder / "train.align.gdfa", src, tgt)


def test_tiny_shards_and_blocks_give_the_in_memory_tables(bible_subset, tmp_path):
    expected = _in_memory(tmp_path, *bible_subset)
    one, counts, lexicon = _sharded(tmp_path, *bible_subset, "one", shard_sentences=N)
    assert counts.shards == 1 and one == expected
    # 7 verses a shard: 43 runs; 64-record merge rounds: many rounds, and the
    # largest source phrases' groups need the reads to grow
    # and partitions of the merge of ~500 tokens: 13 gzip members
    tiny, counts, tiny_lexicon = _sharded(tmp_path, *bible_subset, "tiny", shard_sentences=7, block_rows=64,
                                          partition_tokens=500)
    assert counts.shards == 43 and counts.partitions > 5 and tiny == expected
    assert counts.extracted == counts.written == expected[0].count(b"\n")
    reference = word_translation(*bible_subset)
    for ours in (lexicon, tiny_lexicon):
        for field in ("src", "tgt", "p_tgt_given_src", "p_src_given_tgt"):
            np.testing.assert_array_equal(getattr(ours, field), getattr(reference, field))


def test_pruned_tables_equal_the_in_memory_ones(bible_subset, tmp_path):
    expected = _in_memory(tmp_path, *bible_subset, min_count=2, prune_limit=3)
    tables, counts, _ = _sharded(tmp_path, *bible_subset, "pruned", shard_sentences=11, block_rows=128,
                                 min_count=2, prune_limit=3)
    assert tables == expected and counts.written < counts.extracted


def test_two_workers_give_the_serial_files(bible_subset, tmp_path):
    _sharded(tmp_path, *bible_subset, "serial", shard_sentences=300, partition_tokens=1000)
    _, counts, _ = _sharded(tmp_path, *bible_subset, "parallel", shard_sentences=40, partition_tokens=1000, workers=2)
    assert counts.shards == 8 and counts.partitions > 3
    for table in ("pt", "rt"):  # byte for byte, gzip members included
        assert (tmp_path / f"parallel-{table}.gz").read_bytes() == (tmp_path / f"serial-{table}.gz").read_bytes()


@pytest.mark.parametrize("max_length", [1, 3, 8])
def test_words_that_sort_unlike_their_ids(random_corpus, tmp_path, max_length):
    # "|||" as a word, words that continue others ("a", "ab", "a|"), and
    # non-ASCII: the phrase end must sort as Moses's "phrase |||" does
    rng = np.random.default_rng(max_length)
    words = ("a", "ab", "|||", "a|", "||||", "ñ", "Z", "{")
    srcs, tgts, aligns = random_corpus(rng, 200, words, words[::-1])
    src, tgt, alignment = corpus_from_lines(srcs), corpus_from_lines(tgts), alignment_from_points(aligns)
    expected = _in_memory(tmp_path, src, tgt, alignment, max_length)
    tables, _, _ = _sharded(tmp_path, src, tgt, alignment, "random", max_length=max_length, shard_sentences=9,
                            block_rows=32)
    assert tables == expected


def test_a_word_that_continues_another_with_a_control_character_is_refused():
    WordRanks.of(Vocab(["b", "a\x1fb"]), "source")  # no word "a": the order is still the strings'
    with pytest.raises(PbmtError, match="source word 'a\\\\x1fb' continues the word 'a'"):
        WordRanks.of(Vocab(["a", "a\x1fb"]), "source")


def test_merge_yields_every_record_in_order_in_whole_groups(tmp_path):
    rng = np.random.default_rng(0)
    dtype = np.dtype([("key", "S3"), ("value", "<i8")])
    runs, everything = [], []
    for r in range(5):
        records = np.empty(int(rng.integers(0, 400)), dtype=dtype)
        # groups by the first byte, a few of them large
        records["key"] = [bytes([int(rng.choice([1, 7, 9, 200])) if rng.random() < 0.5 else int(g), int(b), 0])
                          for g, b in rng.integers(0, 256, size=(len(records), 2))]
        records["value"] = rng.integers(0, 1000, size=len(records))
        records.sort(order="key", kind="stable")
        write_run(tmp_path / f"{r}.run", records)
        runs.append(tmp_path / f"{r}.run")
        everything.append(records)
    blocks = list(merge_runs(runs, dtype, group_bytes=1, block_rows=8))
    merged = np.concatenate(blocks)
    expected = np.concatenate(everything)
    expected = expected[np.argsort(expected["key"], kind="stable")]
    assert merged.tolist() == expected.tolist()
    firsts = [set(np.ascontiguousarray(b["key"]).view(np.uint8).reshape(-1, 3)[:, 0].tolist()) for b in blocks]
    assert all(a.isdisjoint(b) for i, a in enumerate(firsts) for b in firsts[i + 1:])
