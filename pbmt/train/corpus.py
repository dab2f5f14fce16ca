"""Tokenised corpora and word alignments as CSR integer arrays.

A corpus is one sentence a line, tokens separated by spaces (tabs count as
spaces, as in Moses's training scripts); an alignment file has one line per
sentence pair of ``i-j`` points, source position ``i`` and target position
``j``, 0-based. Both are read into CSR arrays (see ``pbmt.base.csr``): sentence
``s`` is ``data[offsets[s]:offsets[s + 1]]``.
"""

from __future__ import annotations

import os
from array import array
from dataclasses import dataclass

import numpy as np

from pbmt.base import csr
from pbmt.base.errors import FormatError, PbmtError
from pbmt.base.files import alignment_point, atomic_write, read_lines
from pbmt.base.text import tokens
from pbmt.base.vocab import Vocab


@dataclass(frozen=True)
class Corpus:
    """Sentences as word ids: ``ids[offsets[s]:offsets[s + 1]]`` is sentence ``s``.

    ``ids`` is ``int32[n_tokens]`` in ``vocab``'s id space, ``offsets`` is
    ``int64[n_sentences + 1]``.
    """

    ids: np.ndarray
    offsets: np.ndarray
    vocab: Vocab

    def __len__(self) -> int:
        return len(self.offsets) - 1

    @property
    def lengths(self) -> np.ndarray:
        """Sentence lengths, ``int64[n_sentences]``."""
        return np.diff(self.offsets)

    def sentence(self, s: int) -> list[str]:
        """The words of sentence ``s``."""
        return self.vocab.words(self.ids[self.offsets[s] : self.offsets[s + 1]])

    def utf8(self) -> tuple[bytes, np.ndarray]:
        """All tokens as one UTF-8 text, joined by single spaces, and the byte
        offset of every token (int64[n_tokens + 1]; the last is the length + 1),
        so the span of tokens ``i .. j - 1`` is ``text[start[i] : start[j] - 1]``."""
        words = [w.encode("utf-8") for w in self.vocab.words(range(len(self.vocab)))]
        text = b" ".join([words[i] for i in self.ids.tolist()])
        byte_len = np.fromiter(map(len, words), dtype=np.int64, count=len(words))[self.ids]
        start = np.zeros(len(self.ids) + 1, dtype=np.int64)
        np.cumsum(byte_len + 1, out=start[1:])
        return text, start

    def spans(self, starts: np.ndarray, lengths: np.ndarray, suffix: str = "") -> list[str]:
        """The text of token spans: span ``k`` is the ``lengths[k]`` tokens from
        token offset ``starts[k]`` (int arrays), words joined by single spaces,
        followed by ``suffix``."""
        text, token_start = self.utf8()
        starts = np.asarray(starts, dtype=np.int64)
        begin = token_start[starts].tolist()
        end = (token_start[starts + lengths] - 1).tolist()
        return [text[b:e].decode("utf-8") + suffix for b, e in zip(begin, end)]


@dataclass(frozen=True)
class Alignment:
    """Word alignment points of a corpus pair, CSR by sentence.

    Sentence ``s`` has points ``(src[k], tgt[k])`` for ``k`` in
    ``offsets[s] .. offsets[s + 1]``, positions 0-based within the sentence
    (``int32[n_points]`` each; ``offsets`` is ``int64[n_sentences + 1]``).
    """

    src: np.ndarray
    tgt: np.ndarray
    offsets: np.ndarray

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def check(self, src_lengths: np.ndarray, tgt_lengths: np.ndarray, what: str) -> None:
        """Raise PbmtError (naming ``what``) unless this alignment has one entry per
        sentence pair and every point lies inside its sentences (lengths ``int[n]``)."""
        n = len(src_lengths)
        if len(self) != n or len(tgt_lengths) != n:
            raise PbmtError(f"{what}: {len(self)} alignments for {n} source and {len(tgt_lengths)} target sentences")
        sent = np.repeat(np.arange(n), np.diff(self.offsets))
        src_lengths = np.asarray(src_lengths)
        tgt_lengths = np.asarray(tgt_lengths)
        outside = (self.src < 0) | (self.tgt < 0) | (self.src >= src_lengths[sent]) | (self.tgt >= tgt_lengths[sent])
        if outside.any():
            raise PbmtError(f"{what}: sentence {sent[outside.argmax()] + 1} has a point outside the sentence pair")

    def points(self, s: int) -> list[tuple[int, int]]:
        """The points of sentence ``s`` as ``(source, target)`` pairs, in file order."""
        lo, hi = self.offsets[s], self.offsets[s + 1]
        return list(zip(self.src[lo:hi].tolist(), self.tgt[lo:hi].tolist()))


def corpus_from_lines(lines: list[list[str]], vocab: Vocab | None = None) -> Corpus:
    """A corpus from tokenised sentences; words are added to ``vocab`` (a new one if None)."""
    vocab = Vocab() if vocab is None else vocab
    lengths = np.fromiter((len(s) for s in lines), dtype=np.int64, count=len(lines))
    offsets = np.zeros(len(lines) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    ids = vocab.ids(w for s in lines for w in s)
    return Corpus(ids=ids, offsets=offsets, vocab=vocab)


def read_corpus(path: str | os.PathLike, vocab: Vocab | None = None) -> Corpus:
    """Read a tokenised corpus (plain or gzip); words are added to ``vocab``.
    Lines are turned into ids as they are read, so memory holds ids, not words."""
    vocab = Vocab() if vocab is None else vocab
    ids, lengths = array("i"), array("q")
    for _, line in read_lines(path):
        words = tokens(line)
        lengths.append(len(words))
        ids.extend(map(vocab.add, words))
    return Corpus(ids=np.frombuffer(ids, dtype=np.int32).copy(),
                  offsets=csr.offsets(np.frombuffer(lengths, dtype=np.int64)), vocab=vocab)


def alignment_from_points(sentences: list[list[tuple[int, int]]]) -> Alignment:
    """An alignment from a list (one entry per sentence) of ``(source, target)`` points."""
    lengths = np.fromiter((len(p) for p in sentences), dtype=np.int64, count=len(sentences))
    offsets = np.zeros(len(sentences) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    flat = np.array([ij for p in sentences for ij in p], dtype=np.int32).reshape(-1, 2)
    return Alignment(src=flat[:, 0].copy(), tgt=flat[:, 1].copy(), offsets=offsets)


def alignment_points(path: str | os.PathLike, number: int, line: str, n_src: int | None = None,
                     n_tgt: int | None = None) -> list[tuple[int, int]]:
    """The ``(source, target)`` points of line ``number`` of the alignment file
    ``path``; FormatError for a malformed point or, when the sentence
    lengths are given, a point outside the sentence pair."""
    points = [alignment_point(token, path, number) for token in tokens(line)]
    if n_src is not None:
        bad = [(i, j) for i, j in points if i >= n_src or j >= n_tgt]
        if bad:
            i, j = bad[0]
            raise FormatError(path, number, f"point {i}-{j} outside the sentence pair ({n_src} source, {n_tgt} "
                              "target words)")
    return points


def read_alignment(path: str | os.PathLike, src: Corpus | None = None, tgt: Corpus | None = None) -> Alignment:
    """Read an ``i-j`` alignment file (plain or gzip).

    When the corpora are given, the file must have one line per sentence pair
    and every point must lie inside its sentences; a malformed point or a
    point out of range raises FormatError naming the line.
    """
    flat, lengths = array("i"), array("q")
    src_len = src.lengths.tolist() if src is not None else None
    tgt_len = tgt.lengths.tolist() if tgt is not None else None
    for number, line in read_lines(path):
        s = len(lengths)
        known = src_len is not None and s < len(src_len)
        points = alignment_points(path, number, line, src_len[s] if known else None, tgt_len[s] if known else None)
        lengths.append(len(points))
        for point in points:
            flat.extend(point)
    if src_len is not None and len(lengths) != len(src_len):
        raise FormatError(path, None, f"{len(lengths)} lines, but the corpus has {len(src_len)} sentences")
    pairs = np.frombuffer(flat, dtype=np.int32).reshape(-1, 2)
    return Alignment(src=pairs[:, 0].copy(), tgt=pairs[:, 1].copy(),
                     offsets=csr.offsets(np.frombuffer(lengths, dtype=np.int64)))


def write_alignment(path: str | os.PathLike, alignment: Alignment) -> None:
    """Write ``alignment`` as ``i-j`` lines, points in their stored order (atomic)."""
    src, tgt, offsets = alignment.src.tolist(), alignment.tgt.tolist(), alignment.offsets.tolist()
    with atomic_write(path) as out:
        for s in range(len(offsets) - 1):
            lo, hi = offsets[s], offsets[s + 1]
            out.write(" ".join(f"{i}-{j}" for i, j in zip(src[lo:hi], tgt[lo:hi])))
            out.write("\n")
