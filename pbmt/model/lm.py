"""KenLM-compatible back-off n-gram language model read from an ARPA file.

``NgramLM.load(path, vocab)`` parses an ARPA file (plain or gzip) into flat
arrays (see ``_lm_kernels``) and caches them (``pbmt.model.cache``), so later
loads memory-map them. Scores are log10 probabilities equal to the ``kenlm``
module's: p(w | context) is the probability of the longest n-gram of the
model ending in w whose context is a suffix of the state, plus the backoffs
of the longer contexts in the state. A state is an int64 (0 = empty); it is
the shortest context that still matters (KenLM's state minimisation), so two
histories with the same state score every continuation identically and a
decoder may recombine hypotheses on it.

Kernels elsewhere score through ``score_word(lm.arrays, state, word)`` from
``pbmt.model._lm_kernels``, with global word ids of the shared ``Vocab``.
"""

from __future__ import annotations

import re
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from pbmt.base.errors import FormatError, PbmtError
from pbmt.base.files import open_text, parse_float
from pbmt.model import MAX_ORDER, cache
from pbmt.base.hashtable import table_capacity
from pbmt.model._lm_kernels import (
    CACHE_BITS,
    CACHE_ENTRY,
    DUPLICATE,
    ENTRY,
    MISSING_CONTEXT,
    LMArrays,
    count_fields,
    link_order,
    minimal_states,
    score_batch,
    score_sequence,
    score_word,
)
from pbmt.base.vocab import SPECIAL_WORDS, Vocab

_KIND = "lm"
_VERSION = "4"  # 4: meta.json with sizes and checksums
_ARRAYS = ("words", "specials", "entries", "counts")
_KENLM_BINARY = b"mmap lm "
_NGRAM_COUNT = re.compile(rb"ngram\s+(\d+)\s*=\s*(\d+)")
#: Where a section's lines end: a newline before a line of whitespace alone (or the end of the file), or before a
#: ``\`` line (the next header).
_BLOCK_END = re.compile(rb"\n(?:[ \t\r\f\v]*(?:\n|\Z)|\\)")
_UNK, _BOS, _EOS = (w.encode() for w in SPECIAL_WORDS)
# A stand-in's LM (``cache.standing_in``): the special words alone.
_STAND_IN = b"\\data\\\nngram 1=3\n\n\\1-grams:\n-1\t<unk>\n-99\t<s>\n-1\t</s>\n\n\\end\\\n"
# What KenLM gives <unk> when the ARPA file has no <unk> 1-gram.
_MISSING_UNK_LOG10 = -100.0


@dataclass(frozen=True, eq=False)
class LMCache:
    """A direct-mapped cache of LM scores, keyed by (which LM, LM state, word) (``_lm_kernels.cached_score_word``);
    shareable by every search of one model in one thread (a search writes it, so threads never share one)."""

    entries: np.ndarray

    @classmethod
    def new(cls) -> "LMCache":
        """An empty cache of ``2**CACHE_BITS`` slots (512 KB)."""
        entries = np.zeros(1 << CACHE_BITS, CACHE_ENTRY)
        entries["key"] = np.iinfo(np.uint64).max
        return cls(entries)


@dataclass(frozen=True, eq=False)
class NgramLM:
    """A back-off n-gram model with integer states, scoring global word ids.

    ``words[i]`` is the model's local word i; ``counts[k-1]`` the number of
    k-grams in the file; ``arrays`` what the numba kernels read (its
    ``word_map`` covers the vocabulary as it was at load time: later words
    are <unk>); ``from_cache`` tells whether the arrays were memory-mapped
    from the binary cache rather than parsed.
    """

    path: Path
    words: tuple[str, ...]
    counts: tuple[int, ...]
    arrays: LMArrays
    from_cache: bool

    @classmethod
    def load(cls, path: str | Path, vocab: Vocab) -> NgramLM:
        """Read an ARPA file (plain or ``.gz``), through its binary cache.

        Every word of the model is added to ``vocab``. Raises FormatError
        (file, line, what) for a malformed file and PbmtError for a KenLM
        binary file.
        """
        path = Path(path)
        stored = cache.load_arrays(path, _KIND, _VERSION, _ARRAYS)
        from_cache = stored is not None
        if stored is None:
            stored = _parse_arpa(path, _STAND_IN if cache.stand_in() else None)
            cache.save_arrays(path, _KIND, _VERSION, stored)
        words = cache.decode_words(stored["words"])
        local = np.arange(len(words), dtype=np.int32)
        unk, begin = (int(x) for x in stored["specials"])
        global_ids = vocab.ids(words)
        word_map = np.full(len(vocab), unk, dtype=np.int32)
        word_map[global_ids] = local
        entries = np.asarray(stored["entries"]).view(ENTRY)
        arrays = LMArrays(
            word_map=word_map,
            unk=unk,
            begin=begin,
            n_words=len(words),
            entries=entries,
            keys=entries["key"][1 + len(words) :],
        )
        for array in arrays:
            if isinstance(array, np.ndarray):
                array.flags.writeable = False
        counts = tuple(int(c) for c in stored["counts"])
        return cls(path, tuple(words), counts, arrays, from_cache)

    @property
    def order(self) -> int:
        """The longest n-gram length of the model."""
        return len(self.counts)

    @property
    def begin_state(self) -> int:
        """The state after <s> (the empty state is 0)."""
        return self.arrays.begin

    def score(self, state: int, word_id: int) -> tuple[float, int]:
        """(log10 p(word | state), new state) for one global word id."""
        if word_id < 0:
            raise ValueError(f"word id {word_id} is negative")
        prob, new_state = score_word(self.arrays, np.int64(state), np.int64(word_id))
        return float(prob), int(new_state)

    def score_tokens(self, ids: np.ndarray, bos: bool = True, eos: bool = True) -> np.ndarray:
        """Per-token log10 probabilities of a sentence of global ids.

        ids: int[n]. Returns float64[n + eos] (the last one is </s> when
        ``eos``), as the first elements of ``kenlm.Model.full_scores``.
        """
        ids = _word_ids(ids)
        return score_sequence(self.arrays, ids, bos, eos)

    def score_sentences(
        self, offsets: np.ndarray, words: np.ndarray, bos: bool = True, eos: bool = True
    ) -> np.ndarray:
        """log10 probability of each sentence of a CSR corpus, in one kernel call.

        offsets: int[n+1] (sentence i is ``words[offsets[i]:offsets[i+1]]``),
        words: int[offsets[-1]] global ids. Returns float64[n], as
        ``kenlm.Model.score(sentence, bos, eos)``.
        """
        offsets, words = _csr(offsets, words)
        return score_batch(self.arrays, offsets, words, bos, eos)

    def phrase_scores(self, offsets: np.ndarray, words: np.ndarray) -> np.ndarray:
        """log10 probability of each phrase alone: from the empty state, no <s> or </s>.

        This is the LM estimate Moses uses to prune phrase tables and for
        future costs (``kenlm.Model.score(phrase, bos=False, eos=False)``).
        offsets: int[n+1], words: int[offsets[-1]] as in ``score_sentences``.
        Returns float64[n].
        """
        return self.score_sentences(offsets, words, bos=False, eos=False)


def _word_ids(ids: np.ndarray) -> np.ndarray:
    ids = np.ascontiguousarray(ids, dtype=np.int32)
    if ids.ndim != 1:
        raise ValueError(f"expected a 1-d array of word ids, got shape {ids.shape}")
    if ids.size and ids.min() < 0:
        raise ValueError("word ids must be non-negative")
    return ids


def _csr(offsets: np.ndarray, words: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    offsets = np.ascontiguousarray(offsets, dtype=np.int64)
    words = _word_ids(words)
    if (
        offsets.ndim != 1
        or offsets.size == 0
        or offsets[0] != 0
        or offsets[-1] != words.size
        or np.any(np.diff(offsets) < 0)
    ):
        raise ValueError(
            "offsets must be non-decreasing int[n+1] from 0 to len(words) "
            f"= {words.size}"
        )
    return _read_only(offsets), _read_only(words)


def _read_only(array: np.ndarray) -> np.ndarray:
    """A read-only view of ``array``: the kernels are given read-only arrays whether the caller's are or not
    (memory-mapped model arrays are), so numba compiles them once."""
    view = array.view()
    view.flags.writeable = False
    return view


def _read_bytes(path: Path) -> bytes:
    with open_text(path) as handle:
        raw = handle.buffer
        try:
            head = raw.read(len(_KENLM_BINARY))
            if head == _KENLM_BINARY:
                raise PbmtError(
                    f"{path}: is a KenLM binary file; pbmt reads ARPA files: "
                    "pass the ARPA file (plain or .gz) it was built from"
                )
            data = head + raw.read()
            return data[3:] if data.startswith(b"\xef\xbb\xbf") else data  # a BOM is not part of '\\data\\'
        except (OSError, EOFError, zlib.error) as err:
            raise FormatError(path, None, f"cannot read: {err}") from None


def _show(line: bytes) -> str:
    text = line.decode("utf-8", "replace").strip()
    return repr(text if len(text) <= 60 else text[:57] + "...")


class _Lines:
    """Cursor over the lines of an ARPA file, counting line numbers (1-based)."""

    def __init__(self, path: Path, data: bytes):
        self.path = path
        self.data = data
        self.pos = 0
        self.number = 0  # the line last returned

    def next(self) -> bytes | None:
        """The next line (without its newline), or None at the end."""
        if self.pos >= len(self.data):
            return None
        end = self.data.find(b"\n", self.pos)
        if end < 0:
            end = len(self.data)
        line = self.data[self.pos : end]
        self.pos = end + 1
        self.number += 1
        return line

    def peek(self) -> bytes | None:
        """The next line, left unread."""
        pos, number = self.pos, self.number
        line = self.next()
        self.pos, self.number = pos, number
        return line

    def next_nonblank(self) -> bytes | None:
        """The next line that is not blank, or None at the end."""
        while (line := self.next()) is not None and not line.strip():
            pass
        return line

    def block(self) -> tuple[bytes, int]:
        """The lines up to the next blank line (whitespace alone, as KenLM reads one) or ``\\`` line, joined;
        and their count."""
        data, start = self.data, self.pos
        found = _BLOCK_END.search(data, start - 1)  # from the newline that ends the section's header line
        end = found.start() if found else len(data)
        if end < start:
            return b"", 0
        block = data[start:end]
        self.pos = end + 1
        n_lines = block.count(b"\n") + 1
        self.number += n_lines
        return block, n_lines

    def error(self, message: str) -> FormatError:
        return FormatError(self.path, self.number, message)


def _read_counts(lines: _Lines) -> list[tuple[int, int]]:
    """The ``\\data\\`` header: (n-gram count, its line number) for orders 1..N."""
    line = lines.next_nonblank()
    if line is None or line.strip() != b"\\data\\":
        found = "the file is empty" if line is None else f"found {_show(line)}"
        raise lines.error(f"expected the ARPA header '\\data\\', {found}")
    counts: list[tuple[int, int]] = []
    while (line := lines.peek()) is not None and line.strip() and not line.startswith(b"\\"):
        lines.next()
        match = _NGRAM_COUNT.fullmatch(line.strip())
        if match is None:
            raise lines.error(
                f"expected 'ngram N=count' in the \\data\\ header, found {_show(line)}"
            )
        order, count = int(match[1]), int(match[2])
        if order > MAX_ORDER:
            raise lines.error(f"'ngram {order}=': pbmt loads n-grams of order at most {MAX_ORDER}")
        if order != len(counts) + 1:
            raise lines.error(f"expected 'ngram {len(counts) + 1}=count', found order {order}")
        counts.append((count, lines.number))
    if not counts:
        raise lines.error("the \\data\\ header lists no 'ngram N=count' lines")
    return counts


class _Section:
    """The lines of one ``\\k-grams:`` section, split into fields in bulk."""

    def __init__(self, lines: _Lines, k: int, top: int, count: int, count_line: int):
        line = lines.next_nonblank()
        title = f"\\{k}-grams:"
        if line is None or line.strip() != title.encode():
            found = "the end of the file" if line is None else _show(line)
            raise lines.error(f"expected the section header '{title}', found {found}")
        header_line = lines.number
        block, n = lines.block()
        if n != count:
            raise FormatError(
                lines.path,
                header_line,
                f"line {count_line} declares {count} {k}-grams but this section has {n}",
            )
        self.path = lines.path
        self.k = k
        self.n = n
        self.first_line = header_line + 1
        fields = count_fields(np.frombuffer(block, dtype=np.uint8)) if n else np.zeros(0, np.int32)
        bad = (fields != k + 1) & ((fields != k + 2) | (k == top))
        if bad.any():
            row = int(np.argmax(bad))
            backoff = " and an optional backoff" if k < top else ""
            raise self.error(
                row,
                f"expected a log10 probability, {k} word{'s' if k > 1 else ''}{backoff}; "
                f"found {fields[row]} fields, i.e. {fields[row] - 1} words or a missing field",
            )
        self.tokens = block.split()
        self.fields = fields
        self.uniform = n == 0 or fields.min() == fields.max()
        self.starts = None if self.uniform else np.cumsum(fields) - fields

    def error(self, row: int, message: str) -> FormatError:
        return FormatError(self.path, self.first_line + row, message)

    def column(self, j: int) -> list[bytes]:
        """Field j of every line (every line has it)."""
        if self.uniform:
            return self.tokens[j :: int(self.fields[0])] if self.n else []
        return list(map(self.tokens.__getitem__, (self.starts + j).tolist()))

    def numbers(self, tokens: list[bytes], rows: np.ndarray | None, what: str, most: float = np.inf) -> np.ndarray:
        """``tokens`` (of lines ``rows``, default all) as float32; each must be a finite number of at most
        ``most`` (a log10 probability: 0), or FormatError names its line."""
        try:
            if b"_" in b"".join(tokens):  # numpy, as Python, reads '1_0' as 10
                raise ValueError("digit-group underscore")
            values = np.array(tokens, dtype=np.float64)
        except ValueError:
            for i, token in enumerate(tokens):
                try:
                    parse_float(token.decode("utf-8", "replace"))
                except ValueError:
                    row = i if rows is None else int(rows[i])
                    raise self.error(row, f"the {what} {_show(token)} is not a number") from None
            raise
        bad = ~np.isfinite(values) | (values > most)
        if bad.any():
            i = int(np.argmax(bad))
            row = i if rows is None else int(rows[i])
            limit = "" if most == np.inf else f" of at most {most:g}"
            raise self.error(row, f"the {what} {_show(tokens[i])} is not a finite number{limit}")
        return values.astype(np.float32)

    def probs(self) -> np.ndarray:
        """log10 probabilities, float32[n]."""
        return self.numbers(self.column(0), None, "log10 probability", most=0.0)

    def backoffs(self) -> np.ndarray:
        """log10 backoffs, float32[n] (0 where a line has none)."""
        has = self.fields == self.k + 2
        if self.n and has.all():
            return self.numbers(self.column(self.k + 1), None, "backoff")
        out = np.zeros(self.n, dtype=np.float32)
        if has.any():
            rows = np.flatnonzero(has)
            tokens = list(map(self.tokens.__getitem__, (self.starts[rows] + self.k + 1).tolist()))
            out[rows] = self.numbers(tokens, rows, "backoff")
        return out

    def word_ids(self, index: dict[bytes, int]) -> np.ndarray:
        """Local ids of the words, int32[n, k]."""
        ids = np.empty((self.n, self.k), dtype=np.int32)
        for j in range(self.k):
            column = self.column(j + 1)
            try:
                ids[:, j] = np.fromiter(map(index.__getitem__, column), np.int32, self.n)
            except KeyError:
                row = next(i for i, w in enumerate(column) if w not in index)
                raise self.error(row, f"the word {_show(column[row])} is not a 1-gram") from None
        return ids


def _read_section(
    lines: _Lines, k: int, top: int, counts: list[tuple[int, int]], index: dict[bytes, int]
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """The k-grams (k >= 2): local word ids int32[n, k], log10 probabilities and
    backoffs float32[n], and the line number of the first one."""
    section = _Section(lines, k, top, *counts[k - 1])
    return section.word_ids(index), section.probs(), section.backoffs(), section.first_line


def _unigrams(section: _Section) -> tuple[list[str], dict[bytes, int]]:
    words = section.column(1)
    index: dict[bytes, int] = {}
    for row, word in enumerate(words):
        if index.setdefault(word, row) != row:
            raise section.error(row, f"duplicate 1-gram {_show(word)} (also on line "
                                f"{section.first_line + index[word]})")
    try:
        text = [w.decode("utf-8") for w in words]
    except UnicodeDecodeError:
        row = next(i for i, w in enumerate(words) if not _is_utf8(w))
        raise section.error(row, "the word is not valid UTF-8") from None
    for special in (_BOS, _EOS):
        if special not in index:
            raise FormatError(
                section.path, section.first_line - 1, f"the 1-grams lack {special.decode()}"
            )
    return text, index


def _is_utf8(word: bytes) -> bool:
    try:
        word.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _parse_arpa(path: Path, text: bytes | None = None) -> dict[str, np.ndarray]:
    """Parse an ARPA file (or ``text``, as read from it) into the arrays of its cache (see ``NgramLM.load``)."""
    lines = _Lines(path, _read_bytes(path) if text is None else text)
    counts = _read_counts(lines)
    top = len(counts)
    unigrams = _Section(lines, 1, top, *counts[0])
    words, index = _unigrams(unigrams)
    unigram_prob, unigram_backoff = unigrams.probs(), unigrams.backoffs()
    if _UNK not in index:
        index[_UNK] = len(words)
        words.append(_UNK.decode())
        unigram_prob = np.append(unigram_prob, np.float32(_MISSING_UNK_LOG10))
        unigram_backoff = np.append(unigram_backoff, np.float32(0))
    n_words = len(words)

    capacity = table_capacity(sum(count for count, _ in counts[1:]))
    entries = np.zeros(1 + n_words + capacity, dtype=ENTRY)
    entries["key"] = -1
    entries["prob"][1 : 1 + n_words] = unigram_prob
    entries["backoff"][1 : 1 + n_words] = unigram_backoff
    keys = entries["key"][1 + n_words :]
    order = np.zeros(entries.shape[0], dtype=np.int8)
    order[1 : 1 + n_words] = 1
    for k in range(2, top + 1):
        ids, prob, backoff, first_line = _read_section(lines, k, top, counts, index)
        row, problem = link_order(ids, prob, backoff, entries, keys, n_words, order)
        if problem == MISSING_CONTEXT:
            context = " ".join(words[w] for w in ids[row, :-1])
            raise FormatError(
                path,
                first_line + row,
                f"the context {context!r} of this {k}-gram is not a {k - 1}-gram",
            )
        if problem == DUPLICATE:
            raise FormatError(path, first_line + row, f"duplicate {k}-gram")

    line = lines.next_nonblank()
    if line is None:
        raise lines.error("missing '\\end\\': the file ends after the last section")
    if line.strip() != b"\\end\\":
        raise lines.error(f"expected '\\end\\' after the {top}-grams, found {_show(line)}")

    minimal_states(entries, order, top)
    return {
        "words": cache.encode_words(words),
        "counts": np.array([count for count, _ in counts], dtype=np.int64),
        "specials": np.array([index[_UNK], entries[1 + index[_BOS]]["next_state"]], dtype=np.int64),
        "entries": entries,
    }
