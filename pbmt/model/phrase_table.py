"""Moses phrase tables: text format in, integer arrays out.

A line is ``src ||| tgt ||| p(f|e) lex(f|e) p(e|f) lex(e|f) ||| alignment ||| counts``;
fields after the scores are optional and further fields are ignored. Scores are
probabilities; pbmt's features are their natural logs floored at -100, as in
Moses. The parsed, unpruned table is cached as memory-mapped arrays beside the
text file (see ``pbmt.model.cache``), so pruning under new weights is cheap.
"""

from __future__ import annotations

import codecs
import gzip
import math
import sys
import zlib
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
from tqdm import tqdm

from pbmt.base import csr
from pbmt.base.errors import FormatError, PbmtError
from pbmt.base.files import alignment_point, open_binary, parse_float, read_lines
from pbmt.model import cache
from pbmt.base.hashtable import build_table
from pbmt.model._phrase_kernels import lookup_spans, top_candidates
from pbmt.base.byte_text import intern_words
from pbmt.model._table_text_kernels import MAX_PHRASE_POSITION, scan_lines, source_trie
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
            arrays = _no_pairs(n_scores or 1) if cache.stand_in() else _parse(path)
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
        kept, cand_offsets = top_candidates(self.cand_offsets, np.ascontiguousarray(estimates, np.float64), limit)
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

    The text's bytes are read whole and scanned by numba kernels (``_table_text_kernels``) in runs of whole
    lines, a progress bar on a terminal advancing run by run. Anything the kernels do not accept (text that is
    no UTF-8, a damaged gzip stream, a malformed line) sends the lines through ``_check_line`` one by one, for
    the message naming the first bad one.
    """
    data = _read_text(path)
    if data is None:
        _name_bad_line(path)
    text = np.frombuffer(data, np.uint8)
    lines, src, tgt, probs, links = _scan(path, data, text)
    deferred = np.flatnonzero(np.isnan(probs).any(axis=1))
    try:
        for row in deferred:  # numbers a decimal fast path cannot read exactly, e.g. 1e-30
            line_end = data.find(b"\n", lines[row, 0])
            line = data[lines[row, 0]:line_end if line_end >= 0 else len(data)].decode("utf-8")
            probs[row] = [parse_float(token) for token in line.split("|||")[2].split()]
    except ValueError:
        _name_bad_line(path)
    if not (np.isfinite(probs).all() and (probs > 0).all()):
        _name_bad_line(path)

    src_ids, n_src_words, src_vocab = intern_words(text, src)
    tgt_ids, _, tgt_vocab = intern_words(text, tgt)
    phrase_of_line, src_offsets, src_local, parents, last_words, node_phrase = source_trie(
        src_ids, csr.offsets(lines[:, 1]), n_src_words)
    n_phrases = len(src_offsets) - 1
    order = np.argsort(phrase_of_line, kind="stable")
    cand_offsets = csr.offsets(np.bincount(phrase_of_line, minlength=n_phrases))
    tgt_offsets, tgt_local = csr.take(csr.offsets(lines[:, 2]), tgt_ids, order)
    align_offsets, align = csr.take(csr.offsets(lines[:, 3]), links, order)
    scores = np.maximum(np.log(probs), LOG_FLOOR)[order]
    trie_keys, trie_values = build_table(parents, last_words, n_src_words)
    return {
        "src_vocab": src_vocab,
        "tgt_vocab": tgt_vocab,
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


def _no_pairs(n_scores: int) -> dict[str, np.ndarray]:
    """The cache arrays of a table without phrase pairs, typed as ``_parse`` makes them: a stand-in's table
    (``cache.standing_in``), made without a kernel (its trie: the 16 empty slots and the root node of
    ``build_table`` and ``source_trie`` given nothing)."""
    no_words, nothing = cache.encode_words([]), np.zeros(0, np.int32)
    start = np.zeros(1, np.int64)
    return {"src_vocab": no_words, "tgt_vocab": no_words, "src_offsets": start, "src_local": nothing,
            "cand_offsets": start, "tgt_offsets": start, "tgt_local": nothing, "scores": np.zeros((0, n_scores)),
            "align_offsets": start, "align": np.zeros((0, 2), np.int16), "trie_keys": np.full(16, -1, np.int64),
            "trie_values": np.full(16, -1, np.int64), "node_phrase": np.full(1, -1, np.int32)}


_RUN_BYTES = 1 << 22  # text scanned per kernel call: the progress bar's step


def _scan(path: Path, data: bytes, text: np.ndarray):
    """``scan_lines`` over ``data`` (``text``: the same bytes as uint8) run by run: (lines int64[n, 4]: each
    line's first byte, source tokens, target tokens, alignment points; source and target tokens int64[k, 2]:
    first byte and length; probabilities float64[n, n_scores], NaN where Python's ``float`` must read them;
    alignment points int16[m, 2])."""
    n_scores, runs = -1, []
    with _progress(path, len(data), "parsing") as bar:
        start = 0
        while start < len(data):
            end = data.find(b"\n", start + _RUN_BYTES) + 1 or len(data)
            max_tokens = (end - start) // 2 + 1  # a token and a space at least
            lines = np.empty((data.count(b"\n", start, end) + 1, 4), np.int64)
            src, tgt = np.empty((max_tokens, 2), np.int64), np.empty((max_tokens, 2), np.int64)
            probs, links = np.empty(max_tokens), np.empty((max_tokens, 2), np.int16)
            n_scores, bad, n_lines, n_src, n_tgt, n_links = scan_lines(text, start, end, n_scores, lines, src, tgt,
                                                                       probs, links)
            if bad >= 0:
                _name_bad_line(path)
            if n_lines:
                runs.append((lines[:n_lines], src[:n_src], tgt[:n_tgt], probs[:n_lines * n_scores], links[:n_links]))
            bar.update(end - start)
            start = end
    if not runs:
        raise FormatError(path, None, "the phrase table is empty")
    lines, src, tgt, probs, links = (np.concatenate(column) for column in zip(*runs))
    return lines, src, tgt, probs.reshape(-1, n_scores), links


def _read_text(path: Path) -> bytes | None:
    """The bytes of ``path``'s text (gzip decompressed), or None when they are no UTF-8 or cannot be read
    whole (``read_lines`` then names the line). The progress bar counts the file's bytes read: a gzip
    trailer's size of the text is that of its last member only."""
    chunks = []
    decoder = codecs.getincrementaldecoder("utf-8")()
    try:
        with open_binary(path) as handle, _progress(path, path.stat().st_size, "reading") as bar:
            raw = handle.fileobj if isinstance(handle, gzip.GzipFile) else handle
            while chunk := handle.read(_RUN_BYTES):
                decoder.decode(chunk)
                chunks.append(chunk)
                bar.update(raw.tell() - bar.n)
        decoder.decode(b"", final=True)
    except (UnicodeDecodeError, OSError, EOFError, zlib.error):
        return None
    return b"".join(chunks)


def _name_bad_line(path: Path) -> None:
    """Raise the FormatError naming the first malformed line of ``path`` (a kernel found one)."""
    n_scores = None
    for number, line in read_lines(path):
        if line and not line.isspace():
            fields = line.split("|||")
            if n_scores is None:
                n_scores = len(fields[2].split()) if len(fields) >= 3 else 0  # a first line of < 3 fails first
            _check_line(path, number, fields, n_scores)
    raise AssertionError("a malformed phrase table line went unnamed")  # _check_line names it


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
            i, j = alignment_point(token, path, number)
            if i >= len(src_tokens) or j >= len(tgt_tokens):
                raise FormatError(path, number, f"alignment point {token!r} lies outside the phrase pair")
            if max(i, j) > MAX_PHRASE_POSITION:
                raise FormatError(path, number, f"alignment point {token!r} names a word position above "
                                                f"{MAX_PHRASE_POSITION:,} (a phrase pair's links are 16-bit)")


def _progress(path: Path, total: int, verb: str) -> tqdm:
    """A progress bar of ``total`` bytes of ``path`` on a terminal (standard error), silent elsewhere: the first
    load of a large table reads and parses for a while, a later one maps the cache in milliseconds."""
    return tqdm(total=total, unit="B", unit_scale=True, desc=f"{verb} {path.name}", leave=False, file=sys.stderr,
                mininterval=0.5, disable=not sys.stderr.isatty())
