"""Session fixtures for translation-model training: the shared Bible corpus,
its grow-diag-final-and alignment, and pbmt's tables trained from it once
(about 20 s), with readers for Moses's reference files."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from pbmt.train.corpus import read_alignment, read_corpus
from pbmt.train.extract import extract_phrase_pairs
from pbmt.train.filter import filter_to_sentences
from pbmt.train.score import score_phrase_pairs, word_translation


@pytest.fixture(scope="session")
def bible_corpus(bible):
    """(source corpus, target corpus, grow-diag-final-and alignment) of the training split."""
    src = read_corpus(bible / "train.tok.es")
    tgt = read_corpus(bible / "train.tok.en")
    return src, tgt, read_alignment(bible / "train.align.gdfa", src, tgt)


@pytest.fixture(scope="session")
def bible_lexicon(bible_corpus):
    return word_translation(*bible_corpus)


@pytest.fixture(scope="session")
def bible_pairs(bible_corpus):
    return extract_phrase_pairs(*bible_corpus, max_length=7)


@pytest.fixture(scope="session")
def bible_table(bible_pairs, bible_lexicon):
    return score_phrase_pairs(bible_pairs, bible_lexicon)


@pytest.fixture(scope="session")
def bible_table_for_dev_test(bible, bible_table):
    """pbmt's table filtered to dev + test, as the shared Moses model was."""
    lines = (bible / "dev.tok.es").read_text("utf-8").splitlines()
    lines += (bible / "test.tok.es").read_text("utf-8").splitlines()
    sentences = [line.split() for line in lines]
    return filter_to_sentences(bible_table, sentences)


def _moses_lines(path: Path) -> list[list[str]]:
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        return [[field.strip() for field in line.rstrip("\n").split("|||")] for line in handle]


@pytest.fixture(scope="session")
def moses_phrase_table(bible):
    """Fields of every line of Moses's phrase table (filtered to dev + test), stripped."""
    return _moses_lines(bible / "model" / "phrase-table.gz")


@pytest.fixture(scope="session")
def moses_reordering_table(bible):
    """Fields of every line of Moses's reordering table, stripped."""
    return _moses_lines(bible / "model" / "reordering-table.gz")


def moses_style_random_corpus(rng, n_sentences, src_words=("a", "b", "ab", "ñ"), tgt_words=("x", "y", "xy", "é")):
    """Tiny random sentence pairs with random alignments (some words unaligned),
    as (source sentences, target sentences, alignment point lists)."""
    srcs, tgts, aligns = [], [], []
    for _ in range(n_sentences):
        m, n = (int(k) for k in rng.integers(1, 9, size=2))
        srcs.append([src_words[k] for k in rng.integers(len(src_words), size=m)])
        tgts.append([tgt_words[k] for k in rng.integers(len(tgt_words), size=n)])
        density = rng.uniform(0.05, 0.4)
        aligns.append([(i, j) for i in range(m) for j in range(n) if rng.random() < density])
    return srcs, tgts, aligns


@pytest.fixture
def random_corpus():
    """``moses_style_random_corpus`` as a fixture: call it with (rng, n_sentences)."""
    return moses_style_random_corpus
