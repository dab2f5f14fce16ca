"""Moses phrase tables: text format in, integer arrays out.

A line is ``src ||| tgt ||| p(f|e) lex(f|e) p(e|f) lex(e|f) ||| alignment ||| counts``;
fields after the scores are optional and further fields are ignored. Scores are
probabilities; pbmt's features are their natural logs floored at -100, as in
Moses. The parsed, unpruned table is cached as memory-mapped arrays beside the
text file (see ``pbmt.model.cache``), so pruning under new weights is cheap.
"""

from __future__ import annotations

import contextlib
import gc
import itertools
import math
import re
import sys
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
from tqdm import tqdm

from pbmt.base import csr
from pbmt.base.errors import FormatError, PbmtError
from pbmt.base.files import parse_float, read_lines
from pbmt.model import cache
from pbmt.base.hashtable import build_table
from pbmt.model._phrase_kernels import lookup_spans
from pbmt.base.vocab import Vocab

LOG_FLOOR = -100.0  # Moses's floor for log scores
_CACHE_KIND = "phrase-table"
_CACHE_VERSION = "4"  # 4: meta.json with sizes and checksums
_CACHE_ARRAYS = ("src_vocab", "tgt_vocab", "src_offsets", "src_local", "cand_offsets", "tgt_offsets", "tgt_local",
                 "scores", "align_offsets", "align", "trie_keys", "trie_values", "node_phrase")


@dataclass(frozen=True)
class PhraseTable:
    """Phrase pairs grouped by source phrase, as CSR integer arrays.

    Source phrase ``p`` has words ``src_words[src_offsets[p]:src_offsets[p+1]]``
    and candidates ``cand_offsets[p] .. cand_offsets[p+1]``.
    Candidate ``c`` has target words ``tgt_words[tgt_offsets[c]:tgt_offsets[c+1]]``
    (global Vocab ids), feature values ``scores[c]`` (natural log, floored at
    -100, shape ``(n_cand, n_scores)``) and word alignment
    ``align[align_offsets[c]:align_offsets[c+1]]`` (rows of (source position,
    target position) within the phrase pair). Source phrases are found by
    ``lookup``, through a trie over table-local source word ids.
    """

    path: Path
    n_scores: int
    src_offsets: np.ndarray  # int64[n_src + 1]: CSR of the source phrases' words
    src_words: np.ndarray  # int32: global ids
    cand_offsets: np.ndarray
    tgt_offsets: np.ndarray
    tgt_words: np.ndarray
    scores: np.ndarray
    align_offsets: np.ndarray
    align: np.ndarray
    src_word_map: np.ndarray  # int32[len(vocab) at load]: global id -> local source id, -1 if none
    n_src_words: int
    trie_keys: np.ndarray
    trie_values: np.ndarray
    node_phrase: np.ndarray  # int32[n_nodes]: source phrase ending at a trie node, or -1

    @property
    def n_phrases(self) -> int:
        """Number of source phrases."""
        return len(self.cand_offsets) - 1

    @property
    def n_candidates(self) -> int:
        """Number of phrase pairs."""
        return len(self.tgt_offsets) - 1

    @classmethod
    def load(cls, path: str | Path, vocab: Vocab, n_scores: int | None = None) -> "PhraseTable":
        """Load a Moses text phrase table (plain or gzip), unpruned.

        Words are added to ``vocab``. The first load parses the text and
        writes the binary cache; later loads map the cache. ``n_scores``, if
        given, is checked against the table (a moses.ini's num-features).
        """
        path = Path(path)
        arrays = cache.load_arrays(path, _CACHE_KIND, _CACHE_VERSION, _CACHE_ARRAYS)
        if arrays is None:
            arrays = _parse(path)
            cache.save_arrays(path, _CACHE_KIND, _CACHE_VERSION, arrays)
        found = arrays["scores"].shape[1]
        if n_scores is not None and found != n_scores:
            raise PbmtError(f"{path}: the table has {found} scores per phrase pair, the configuration says {n_scores}")

        src_global = vocab.ids(cache.decode_words(arrays["src_vocab"]))
        tgt_global = vocab.ids(cache.decode_words(arrays["tgt_vocab"]))
        src_word_map = np.full(len(vocab), -1, dtype=np.int32)
        src_word_map[src_global] = np.arange(len(src_global), dtype=np.int32)
        return read_only(cls(
            path=path,
            n_scores=found,
            src_offsets=arrays["src_offsets"],
            src_words=src_global[arrays["src_local"]],
            cand_offsets=arrays["cand_offsets"],
            tgt_offsets=arrays["tgt_offsets"],
            tgt_words=tgt_global[arrays["tgt_local"]],
            scores=arrays["scores"],
            align_offsets=arrays["align_offsets"],
            align=arrays["align"],
            src_word_map=src_word_map,
            n_src_words=len(src_global),
            trie_keys=arrays["trie_keys"],
            trie_values=arrays["trie_values"],
            node_phrase=arrays["node_phrase"],
        ))

    def lookup(self, sentence: np.ndarray, max_length: int) -> np.ndarray:
        """Source phrase of every span of ``sentence`` (int32 global ids).

        Returns ``int32[n, max_length]``: entry ``[i, l]`` is the source phrase
        covering words ``i .. i+l`` or -1 if the table has none.
        """
        return lookup_spans(
            np.asarray(sentence, dtype=np.int32), self.src_word_map, self.trie_keys,
            self.trie_values, self.n_src_words, self.node_phrase, max_length,
        )

    def candidates(self, phrase: int) -> range:
        """Candidate indices of source phrase ``phrase``."""
        return range(self.cand_offsets[phrase], self.cand_offsets[phrase + 1])

    def source(self, phrase: int) -> np.ndarray:
        """Source word ids of source phrase ``phrase``."""
        return self.src_words[self.src_offsets[phrase]:self.src_offsets[phrase + 1]]

    def target(self, candidate: int) -> np.ndarray:
        """Target word ids of one candidate."""
        return self.tgt_words[self.tgt_offsets[candidate]:self.tgt_offsets[candidate + 1]]

    def estimates(self, tm_weights, word_penalty_weight: float = 0.0) -> np.ndarray:
        """The table's part of Moses's pruning score of every candidate, ``float64[n_cand]`` (natural log scale):
        ``scores @ tm_weights`` + word penalty (-1 per target word). Moses adds the other features' estimates
        (``TranslationModel.estimate``: the LMs' of the target phrase, the OSM's of the pair). The phrase
        penalty is the same for every candidate and does not change the ranking.
        """
        tm_weights = np.asarray(tm_weights, dtype=np.float64)
        if tm_weights.shape != (self.n_scores,):
            raise ValueError(f"expected {self.n_scores} translation-model weights, got {tm_weights.shape}")
        return self.scores @ tm_weights - word_penalty_weight * np.diff(self.tgt_offsets)

    def prune(self, limit: int, estimates: np.ndarray) -> tuple["PhraseTable", np.ndarray]:
        """Keep the ``limit`` candidates with the highest ``estimates`` per source phrase: the pruned table and
        the candidates it kept (``int64[k]``, indices into this table, in the pruned table's order).

        Candidates come out sorted best first within each source phrase.
        """
        if limit <= 0:
            raise ValueError("the table limit must be positive")
        kept, cand_offsets = _top_candidates(self.cand_offsets, np.asarray(estimates, np.float64), limit)
        tgt_offsets, tgt_words = csr.take(self.tgt_offsets, self.tgt_words, kept)
        align_offsets, align = csr.take(self.align_offsets, self.align, kept)
        return read_only(replace(
            self, cand_offsets=cand_offsets, tgt_offsets=tgt_offsets, tgt_words=tgt_words,
            scores=np.ascontiguousarray(self.scores[kept]), align_offsets=align_offsets, align=align,
        )), kept

    def pairs(self, vocab: Vocab) -> "PhrasePairs":
        """Every candidate as a phrase pair out of context (``PhrasePairs``; ``vocab``: the table's)."""
        phrase = np.repeat(np.arange(self.n_phrases), np.diff(self.cand_offsets))
        return PhrasePairs(*csr.take(self.src_offsets, self.src_words, phrase), self.tgt_offsets, self.tgt_words,
                           self.align_offsets, self.align, np.zeros(self.n_candidates, bool), vocab)


@dataclass(frozen=True)
class PhrasePairs:
    """Phrase pairs out of context, as a feature's estimate sees them (``FeatureFunction.estimate``).

    Pair ``k`` has source words ``src_words[src_offsets[k]:src_offsets[k + 1]]`` and target words
    ``tgt_words[tgt_offsets[k]:tgt_offsets[k + 1]]`` (ids in ``vocab``: a model's ``Vocab``, or a sentence's
    ``Overlay`` of it), word links ``align[align_offsets[k]:align_offsets[k + 1]]`` (``int16[m, 2]``, (source,
    target) positions within the pair) and ``unknown[k]``: an unknown source word passed through.
    """

    src_offsets: np.ndarray
    src_words: np.ndarray
    tgt_offsets: np.ndarray
    tgt_words: np.ndarray
    align_offsets: np.ndarray
    align: np.ndarray
    unknown: np.ndarray
    vocab: Vocab

    def __len__(self) -> int:
        return len(self.tgt_offsets) - 1


def _top_candidates(cand_offsets: np.ndarray, estimates: np.ndarray, limit: int) -> tuple[np.ndarray, np.ndarray]:
    """Indices of the ``limit`` best candidates of every source phrase, and the CSR offsets over them.

    cand_offsets: int64[n_src + 1] CSR over candidates; estimates: float64[n_cand] (higher is better; ties keep
    file order). Returns (kept int64[k] in phrase order, best first within a phrase; new_offsets
    int64[n_src + 1]). One stable sort of the whole table, by phrase and then estimate.
    """
    counts = np.diff(cand_offsets)
    phrase = np.repeat(np.arange(len(counts)), counts)
    order = np.lexsort((-estimates, phrase))
    rank = np.arange(len(order)) - np.repeat(cand_offsets[:-1], counts)
    new_offsets = np.zeros_like(cand_offsets)
    np.cumsum(np.minimum(counts, limit), out=new_offsets[1:])
    return order[rank < limit].astype(np.int64), new_offsets


def read_only(holder):
    """``holder`` (a frozen dataclass) with its numpy arrays made read-only, and returned.

    A loaded model is shared by every search of a process, on every thread: no search may write it, and a
    read-only array makes a write an error instead of a race. The kernels then also see the same array types
    whether the arrays were parsed or memory-mapped from the cache, so a model's second load compiles no
    specialisation its first did not.
    """
    for name in holder.__dataclass_fields__:
        value = getattr(holder, name)
        if isinstance(value, np.ndarray):
            value.flags.writeable = False
    return holder


def _parse(path: Path) -> dict[str, np.ndarray]:
    """Parse the text table into the arrays of the cache (table-local word ids).

    Column by column over all lines (a split per field, one dictionary per vocabulary, numpy for the numbers),
    with the garbage collector paused while millions of small lists live. Any malformed line sends the lines
    through ``_check_line`` one by one, for the message naming the first.
    """
    with _collector_paused():
        lines = [(number, line) for number, line in _with_progress(path, read_lines(path))
                 if line and not line.isspace()]
        if not lines:
            raise FormatError(path, None, "the phrase table is empty")
        fields = [line.split("|||") for _, line in lines]
        try:
            columns = _columns(fields)
        except ValueError:
            columns = None
        if columns is None:
            n_scores = len(fields[0][2].split()) if len(fields[0]) >= 3 else 0  # a first line of < 3 fails first
            for (number, _), line_fields in zip(lines, fields):
                _check_line(path, number, line_fields, n_scores)
            raise AssertionError("a malformed phrase table line went unnamed")  # _check_line names it
        src_tokens, tgt_tokens, probs, align_counts, links = columns

        src_ids: dict[tuple[str, ...], int] = {}  # source phrase tokens -> index, in order of first sight
        phrase_of_line = np.fromiter((src_ids.setdefault(key, len(src_ids)) for key in map(tuple, src_tokens)),
                                     np.int64, len(src_tokens))
        src_words: dict[str, int] = {}
        src_phrases = [[src_words.setdefault(w, len(src_words)) for w in phrase] for phrase in src_ids]
        tgt_words: dict[str, int] = {}
        tgt_lengths = np.fromiter(map(len, tgt_tokens), np.int64, len(tgt_tokens))
        tgt_ids = np.fromiter((tgt_words.setdefault(w, len(tgt_words)) for w in itertools.chain.from_iterable(
            tgt_tokens)), np.int32, int(tgt_lengths.sum()))
        parents, last_words, node_phrase = _trie(src_phrases)

    order = np.argsort(phrase_of_line, kind="stable")
    counts = np.bincount(phrase_of_line, minlength=len(src_ids))
    cand_offsets = np.zeros(len(src_ids) + 1, dtype=np.int64)
    np.cumsum(counts, out=cand_offsets[1:])
    tgt_offsets, tgt_local = csr.take(_offsets(tgt_lengths), tgt_ids, order)
    align_offsets, align = csr.take(_offsets(align_counts), links, order)
    scores = np.maximum(np.log(probs), LOG_FLOOR)[order]

    src_offsets = _offsets(np.fromiter(map(len, src_phrases), np.int64, len(src_phrases)))
    src_local = np.fromiter(itertools.chain.from_iterable(src_phrases), np.int32, int(src_offsets[-1]))
    trie_keys, trie_values = build_table(parents, last_words, len(src_words))
    return {
        "src_vocab": cache.encode_words(list(src_words)),
        "tgt_vocab": cache.encode_words(list(tgt_words)),
        "src_offsets": src_offsets,
        "src_local": src_local,
        "cand_offsets": cand_offsets,
        "tgt_offsets": tgt_offsets,
        "tgt_local": tgt_local,
        "scores": scores,
        "align_offsets": align_offsets,
        "align": align,
        "trie_keys": trie_keys,
        "trie_values": trie_values,
        "node_phrase": node_phrase,
    }


def _columns(fields: list[list[str]]):
    """The columns of a table's lines split at '|||': (source tokens, target tokens, probabilities
    float64[n, n_scores], alignment points per line int64[n], the points int16[k, 2]), or None when a line
    is malformed (ValueError too: a score or point that is no number)."""
    if min(map(len, fields)) < 3:
        return None
    src_tokens = [f[0].split() for f in fields]
    tgt_tokens = [f[1].split() for f in fields]
    if not all(src_tokens) or not all(tgt_tokens):
        return None
    score_tokens = [f[2].split() for f in fields]
    score_text = "".join(itertools.chain.from_iterable(score_tokens))
    if not score_text.isascii() or "_" in score_text:
        return None
    n_scores = len(score_tokens[0])
    if n_scores == 0 or any(len(t) != n_scores for t in score_tokens):
        return None
    probs = np.array(list(itertools.chain.from_iterable(score_tokens)), dtype=np.float64).reshape(-1, n_scores)
    if not (np.isfinite(probs).all() and (probs > 0).all()):
        return None
    align_tokens = [f[3].split() if len(f) > 3 else () for f in fields]
    points = " ".join(itertools.chain.from_iterable(align_tokens))
    if points and not _POINTS.fullmatch(points):
        return None
    links = np.array(points.replace("-", " ").split(), dtype=np.int64).reshape(-1, 2)
    align_counts = np.fromiter(map(len, align_tokens), np.int64, len(align_tokens))
    line = np.repeat(np.arange(len(fields)), align_counts)
    src_lengths = np.fromiter(map(len, src_tokens), np.int64, len(src_tokens))
    tgt_lengths = np.fromiter(map(len, tgt_tokens), np.int64, len(tgt_tokens))
    if (links[:, 0] >= src_lengths[line]).any() or (links[:, 1] >= tgt_lengths[line]).any():
        return None
    return src_tokens, tgt_tokens, probs, align_counts, links.astype(np.int16)


_POINTS = re.compile(r"[0-9]+-[0-9]+(?: [0-9]+-[0-9]+)*")  # alignment points i-j, one space apart


def _check_line(path: Path, number: int, fields: list[str], n_scores: int) -> None:
    """Raise FormatError naming line ``number`` of ``path`` (split at '|||' into ``fields``) if it is
    malformed; ``n_scores``: the scores of the first line."""
    fields = [f.strip() for f in fields]
    if len(fields) < 3:
        raise FormatError(path, number, f"expected at least 3 fields separated by '|||', found {len(fields)}")
    src, tgt, score_text = fields[0], fields[1], fields[2]
    src_tokens, tgt_tokens = src.split(), tgt.split()
    if not src_tokens or not tgt_tokens:
        raise FormatError(path, number, "empty source or target phrase")
    try:
        probs = [parse_float(v) for v in score_text.split()]
    except ValueError:
        raise FormatError(path, number, f"scores are not all numbers: {score_text!r}") from None
    if n_scores == 0:
        raise FormatError(path, number, "no scores in the third field")
    if len(probs) != n_scores:
        raise FormatError(path, number, f"{len(probs)} scores, but the first line has {n_scores}")
    if min(probs) <= 0 or not all(math.isfinite(p) for p in probs):
        raise FormatError(path, number, f"scores must be positive finite probabilities, found {score_text!r}")
    if len(fields) > 3 and fields[3]:
        for token in fields[3].split():
            i, dash, j = token.partition("-")
            if not (dash and i.isascii() and i.isdigit() and j.isascii() and j.isdigit()):
                raise FormatError(path, number, f"alignment point {token!r} is not of the form i-j")
            if int(i) >= len(src_tokens) or int(j) >= len(tgt_tokens):
                raise FormatError(path, number, f"alignment point {token!r} lies outside the phrase pair")


@contextlib.contextmanager
def _collector_paused():
    """Python's cyclic garbage collector off while a parse builds millions of small acyclic lists (it would
    scan them again and again: a third of the parse's time)."""
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()


def _offsets(lengths: np.ndarray) -> np.ndarray:
    """CSR offsets int64[n + 1] of rows of ``lengths``."""
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return offsets


def _with_progress(path: Path, lines):
    """``lines`` of ``path``, with a progress bar in its text's bytes on a terminal (standard error): the
    first load of a large table parses for minutes, a later one maps the cache in milliseconds."""
    if not sys.stderr.isatty():
        yield from lines
        return
    with tqdm(total=_text_size(path), unit="B", unit_scale=True, desc=f"caching {path.name}", leave=False,
              file=sys.stderr, mininterval=0.5) as bar:
        done = 0
        for number, line in lines:
            done += len(line) + 1  # characters: about the bytes of a mostly ASCII table
            if number % 16384 == 0:
                bar.update(done - bar.n)
            yield number, line


def _text_size(path: Path) -> int | None:
    """The bytes of the text in ``path``: its size, or a gzip file's from its trailer (which keeps the size
    modulo 2**32, so a larger text has no known size)."""
    size = path.stat().st_size
    if path.suffix != ".gz":
        return size
    with open(path, "rb") as handle:
        handle.seek(max(size - 4, 0))
        text = int.from_bytes(handle.read(4), "little")
    return text if text >= size else None


def _trie(phrases: list[list[int]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Trie nodes of the source phrases: (parent int64[n], word int32[n], phrase int32[n]); node 0 is the root."""
    children: dict[tuple[int, int], int] = {}
    parents, words, phrase_at = [-1], [0], [-1]
    for index, phrase in enumerate(phrases):
        node = 0
        for w in phrase:
            child = children.get((node, w))
            if child is None:
                child = children[(node, w)] = len(parents)
                parents.append(node)
                words.append(w)
                phrase_at.append(-1)
            node = child
        phrase_at[node] = index
    return (np.asarray(parents, dtype=np.int64), np.asarray(words, dtype=np.int32),
            np.asarray(phrase_at, dtype=np.int32))
