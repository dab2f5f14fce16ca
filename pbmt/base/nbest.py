"""Moses n-best lists, read and written.

A line is ``sid ||| hypothesis ||| Name0= v v Name1= v ||| total`` optionally
followed by ``||| segmentation`` (``0-1=0-4``: source words 0-1 made target
words 0-4) and ``||| word alignment`` (``0-0 1-3``). Feature values are
unweighted natural logs; ``total`` is the weighted model score. pbmt writes
both optional fields; it reads lists with or without them, from any decoder.

Sparse features follow the dense ones in the features field as Moses writes
them, ``pb_c3_c7= 2``: one value each, only those that fire, and a name
with an underscore. That is how Moses's ``extractor`` and ``mert`` tell
them apart (a dense feature's name, ``LM0``, has none), and so does
``parse_line``: a name with an underscore and one value is sparse. A dense
feature named with an underscore (``name=LM_big`` in a moses.ini) would be
read as a sparse one here, as Moses's tools read it.
"""

from __future__ import annotations

import codecs
import zlib
from dataclasses import dataclass
from functools import lru_cache
from itertools import chain
from pathlib import Path
from typing import IO, Iterable, Iterator, Sequence

import numpy as np

from pbmt.base._nbest_kernels import (BLOCKS, GROUPS, LINE_START, N_COLUMNS, SEGMENTATION_END, SEGMENTATION_START,
                                      SENTENCE, TEXT_END, TEXT_START, TOTAL_END, TOTAL_START, WORDS, derivation_keys,
                                      joined_spans, scan_entries, segmentation_keys, text_keys)
from pbmt.base._nbest_writer_kernels import Entries, Strings, write_lines
from pbmt.base import csr
from pbmt.base.byte_text import intern_words
from pbmt.base.errors import FormatError
from pbmt.base.files import MAX_INDEX, alignment_point, open_binary, parse_finite, parse_int, read_lines


@dataclass(frozen=True)
class NBestEntry:
    """One line of an n-best list.

    ``segmentation`` holds (src_start, src_end, tgt_start, tgt_end) per block,
    ends exclusive, in target order (empty when the list has none);
    ``alignment`` holds (source, target) word pairs; ``sparse`` the
    sparse features that fire, (name, value) in the order written (empty
    for a dense-only list; see the module docstring).
    """

    sentence: int
    text: str
    features: dict[str, tuple[float, ...]]
    total: float
    segmentation: tuple[tuple[int, int, int, int], ...] = ()
    alignment: tuple[tuple[int, int], ...] = ()
    sparse: tuple[tuple[str, float], ...] = ()

    def to_line(self) -> str:
        """The entry in Moses's format (without newline)."""
        features = self.features
        dense = features_format(*features, *map(len, features.values())) % tuple(chain.from_iterable(features.values()))
        return moses_line(self.sentence, self.text, dense, self.sparse, self.total,
                          " ".join(map(format_block, self.segmentation)), " ".join(map(format_link, self.alignment)))


def moses_line(sentence: int, text: str, dense: str, sparse: Iterable[tuple[str, float]], total: float,
               segmentation: str, alignment: str) -> str:
    """An n-best line (without newline) of its fields: ``dense``, the dense features' field
    (``features_format``); ``segmentation`` and ``alignment``, those fields' text (``format_block`` and
    ``format_link`` of each block and link; both empty: the line has neither field)."""
    sparse = [f"{name}= {value:.6g}" for name, value in sparse]
    if sparse:
        dense = " ".join([dense] * bool(dense) + sparse)
    fields = [str(sentence), text, dense, f"{total:.6g}"]
    if segmentation or alignment:
        fields += [segmentation, alignment]
    return " ||| ".join(fields)


@lru_cache(maxsize=64)
def features_format(*names_and_sizes) -> str:
    """The %-format of the dense features' field whose feature names and numbers of values are
    ``names_and_sizes`` (every name, then every size), to be given the values in order: a list writes
    thousands of entries of one layout."""
    half = len(names_and_sizes) // 2
    return " ".join(name.replace("%", "%%") + "= " + " ".join(["%.6g"] * size)
                    for name, size in zip(names_and_sizes[:half], names_and_sizes[half:]))


@lru_cache(maxsize=1 << 16)
def format_block(block: tuple[int, int, int, int]) -> str:
    """A segmentation field's block ``0-1=0-4``: source words 0-1 made target words 0-4 (one word: ``3=5``)."""
    a, b, c, d = block
    return f"{_span(a, b)}={_span(c, d)}"


@lru_cache(maxsize=1 << 16)
def format_link(link: tuple[int, int]) -> str:
    """An alignment field's link ``2-5``: source word 2 is aligned with target word 5."""
    return "%d-%d" % link


def _span(start: int, end: int) -> str:
    return str(start) if end - start == 1 else f"{start}-{end - 1}"


def entries_text(sentence: int, entries: Entries, words: Sequence[str], names: Sequence[str], sizes: Sequence[int]
                 ) -> str:
    """The n-best lines of one sentence's entries given as arrays (``Entries``; their words are rows of
    ``words``, their dense features are groups of ``sizes`` values named by the first names of ``names``, their
    sparse features' names rows of ``names``), newlines included: what ``moses_line`` writes for each, written
    by a kernel without Python's lock (``write_lines``), and by ``moses_line`` a line holding a number the
    kernel cannot be sure to round as ``%.6g`` does."""
    lines, offsets, written = write_lines(np.int64(sentence), entries, _strings(words), _strings(names),
                                          np.asarray(sizes, np.int64))
    if written.all():
        return lines.tobytes().decode("utf-8")
    return "".join(lines[offsets[i]:offsets[i + 1]].tobytes().decode("utf-8") if ok
                   else _entry_line(sentence, entries, i, words, names, sizes) + "\n"
                   for i, ok in enumerate(written.tolist()))


def _entry_line(sentence: int, entries: Entries, i: int, words: Sequence[str], names: Sequence[str],
                sizes: Sequence[int]) -> str:
    """``entries_text``'s line of entry ``i``, by ``moses_line``."""
    e = entries
    lo, hi = e.sparse_offsets[i], e.sparse_offsets[i + 1]
    blocks = map(tuple, e.blocks[e.block_offsets[i]:e.block_offsets[i + 1]].tolist())
    links = map(tuple, e.links[e.link_offsets[i]:e.link_offsets[i + 1]].tolist())
    return moses_line(sentence, " ".join([words[w] for w in e.words[e.word_offsets[i]:e.word_offsets[i + 1]].tolist()]),
                      features_format(*names[:len(sizes)], *sizes) % tuple(e.values[i].tolist()),
                      [(names[n], v) for n, v in zip(e.sparse_names[lo:hi].tolist(), e.sparse_values[lo:hi].tolist())],
                      float(e.totals[i]), " ".join(map(format_block, blocks)), " ".join(map(format_link, links)))


def _strings(strings: Sequence[str]) -> Strings:
    """Strings as one CSR of their UTF-8 bytes."""
    encoded = [text.encode() for text in strings]
    return Strings(csr.offsets(np.fromiter(map(len, encoded), np.int64, len(encoded))),
                   np.frombuffer(b"".join(encoded), np.uint8))


def read_nbest(path: str | Path) -> Iterator[NBestEntry]:
    """Entries of an n-best file (plain or gzip), in file order.

    Malformed lines raise FormatError naming the file and line.
    """
    for number, line in read_lines(path):
        if line.strip():
            yield parse_line(line, path, number)


def parse_line(line: str, path: str | Path = "<n-best>", number: int | None = None) -> NBestEntry:
    """One n-best line; ``path`` and ``number`` name it in errors."""
    fields = [f.strip() for f in line.split("|||")]
    if len(fields) < 4:
        raise FormatError(path, number, f"expected at least 4 fields separated by '|||', found {len(fields)}")
    try:
        sentence = parse_int(fields[0])
        if sentence < 0:
            raise ValueError(sentence)
    except ValueError:
        raise FormatError(path, number, f"sentence id {fields[0]!r} is not a non-negative integer") from None
    if sentence > MAX_INDEX:
        raise FormatError(path, number, f"sentence id {fields[0]} is above {MAX_INDEX:,} (an id is an input line's "
                                        "number from 0)")
    features = parse_features(fields[2], path, number)
    sparse = tuple((name, values[0]) for name, values in features.items() if is_sparse(name, values))
    if sparse:
        features = {name: values for name, values in features.items() if not is_sparse(name, values)}
    try:
        total = parse_finite(fields[3])
    except ValueError:
        raise FormatError(path, number, f"total score {fields[3]!r} is not a finite number") from None
    segmentation = _parse_segmentation(fields[4], path, number) if len(fields) > 4 and fields[4] else ()
    alignment = _parse_pairs(fields[5], path, number) if len(fields) > 5 and fields[5] else ()
    return NBestEntry(sentence, fields[1], features, total, segmentation, alignment, sparse)


@dataclass(frozen=True)
class NBestText:
    """The entries of an n-best list as arrays over its text, read by numba kernels, up to the first line
    they did not read (``refused``).

    ``text``: the file's text, uint8[n_bytes] (UTF-8); per entry, in file order: ``lines`` int64[n, N_COLUMNS]
    (``pbmt.base._nbest_kernels``' columns: the line's first byte, sentence id, the hypothesis's first and end byte
    (stripped), ...), ``totals`` float64[n]; the features as groups (a name and its values, in the order written),
    CSR by ``group_offsets`` int64[n + 1]: ``group_names`` int64[n_groups] (into ``names``, every name in order of
    first sight), ``group_sizes`` int64[n_groups] (values each), ``values`` float64[sum of the sizes]; the
    hypothesis's words (first byte, length), CSR by ``word_offsets``. ``refused``: (the number, from 1, of the
    first line not read, its text), or None when every line was read: a line the kernels do not read is
    malformed, or one only Python reads (``parse_line`` tells which).
    """

    text: np.ndarray
    lines: np.ndarray
    totals: np.ndarray
    group_offsets: np.ndarray
    group_names: np.ndarray
    group_sizes: np.ndarray
    names: tuple[str, ...]
    values: np.ndarray
    word_offsets: np.ndarray
    words: np.ndarray
    refused: tuple[int, str] | None

    @property
    def n_entries(self) -> int:
        return len(self.lines)

    @property
    def sentences(self) -> np.ndarray:
        """int64[n]: each entry's sentence id."""
        return self.lines[:, SENTENCE]

    @property
    def text_spans(self) -> np.ndarray:
        """int64[n, 2]: each hypothesis's first and end byte in ``text``."""
        return np.ascontiguousarray(self.lines[:, TEXT_START:TEXT_END + 1])

    def hypotheses(self, order: np.ndarray) -> list[str]:
        """The hypotheses of the entries ``order`` (int64[k]), in that order."""
        return bytes(joined_spans(self.text, self.text_spans, order)).decode("utf-8").split("\n")

    @property
    def segmented(self) -> np.ndarray:
        """bool[n]: the entries with a segmentation (a block at least)."""
        return self.lines[:, BLOCKS] > 0

    def text_keys(self) -> np.ndarray:
        """uint64[n]: each hypothesis's 64-bit BLAKE2b (``int.from_bytes(blake2b(text.encode(), digest_size=8)
        .digest(), "little")``)."""
        return text_keys(self.text, self.text_spans)

    def derivation_keys(self) -> np.ndarray:
        """uint64[n]: the 64-bit BLAKE2b of each entry's hypothesis, 0x1F and its segmentation as ``repr`` writes
        ``NBestEntry.segmentation`` (``(text + "\\x1f" + repr(entry.segmentation)).encode()``)."""
        return derivation_keys(self.text, self.text_spans,
                               np.ascontiguousarray(self.lines[:, SEGMENTATION_START:SEGMENTATION_END + 1]))

    def alignments(self, order: np.ndarray) -> tuple[np.ndarray, ...] | None:
        """The word alignments of the entries ``order`` (int64[k]), each int32[a, 2] of (source, target)
        positions as ``parse_line`` reads them; None when one of these entries has none (no or an empty field)."""
        ends = self.lines[order, SEGMENTATION_END]  # the alignment field, if any, is the next
        text, data = self.text, self.text.data
        if not len(order) or np.any(ends + 3 > len(text)):
            return None
        if not np.all((text[ends] == 124) & (text[ends + 1] == 124) & (text[ends + 2] == 124)):  # '|||'
            return None
        line_ends = np.append(np.flatnonzero(text == 10), len(text))
        line_ends = line_ends[np.searchsorted(line_ends, ends)]
        fields = [bytes(data[start:end]).split(b"|||", 1)[0] for start, end in zip((ends + 3).tolist(),
                                                                                   line_ends.tolist())]
        counts = np.array([field.count(b"-") for field in fields], dtype=np.int64)  # a point is 'i-j' (checked)
        if not counts.all():
            return None
        joined = b" ".join(fields).replace(b"-", b" ")
        if joined.translate(None, b"0123456789 \t\r"):  # other whitespace (the kernels take str.isspace's)
            points = np.array(joined.decode("utf-8").split(), dtype=np.int32)
        else:
            points = np.fromstring(joined, dtype=np.int32, sep=" ")
        return tuple(np.split(points.reshape(-1, 2), np.cumsum(counts)[:-1]))

    def line(self, entry: int) -> tuple[int, str]:
        """(number from 1, text) of the line of ``entry``."""
        return _line_at(self.text, int(self.lines[entry, LINE_START]))

    def head(self, n: int, refused: tuple[int, str] | None) -> "NBestText":
        """The first ``n`` entries, the line after them ``refused``."""
        groups, words = self.group_offsets[n], self.word_offsets[n]
        return NBestText(self.text, self.lines[:n], self.totals[:n], self.group_offsets[:n + 1],
                         self.group_names[:groups], self.group_sizes[:groups], self.names,
                         self.values[:self.group_sizes[:groups].sum()], self.word_offsets[:n + 1],
                         self.words[:words], refused)


def hypothesis_keys(text: np.ndarray, spans: np.ndarray) -> np.ndarray:
    """uint64[n]: ``NBestText.text_keys`` of hypotheses given as the bytes ``text[spans[k, 0]:spans[k, 1]]``
    (``text`` uint8, UTF-8; ``spans`` int64[n, 2]), hashed by a kernel."""
    return text_keys(text, spans)


def block_keys(text: np.ndarray, spans: np.ndarray, block_offsets: np.ndarray, blocks: np.ndarray) -> np.ndarray:
    """uint64[n]: ``NBestText.derivation_keys`` of entries given as arrays: hypothesis ``k`` the bytes
    ``text[spans[k, 0]:spans[k, 1]]``, its segmentation the int64[m, 4] rows ``blocks[block_offsets[k]:
    block_offsets[k + 1]]`` (``NBestEntry.segmentation``'s blocks), hashed by a kernel without the lock."""
    return segmentation_keys(text, spans, block_offsets, blocks)


_RUN_BYTES = 1 << 22  # text scanned per kernel call


def scan_nbest(path: str | Path) -> NBestText | None:
    """The entries of the n-best file ``path`` (plain or gzip) read by numba kernels, up to the first line they do
    not read; None when its text is not UTF-8 or cannot be read whole (a damaged gzip stream, standard input):
    ``read_nbest`` names the line then.

    Numbers the kernels cannot read exactly are read by ``parse_finite``; a line where it fails is refused.
    """
    if str(path) == "-":
        return None
    decoder = codecs.getincrementaldecoder("utf-8")()
    try:
        with open_binary(path) as handle:
            data = handle.read()
        for start in range(0, len(data), _RUN_BYTES):  # checked run by run: no string of the whole text
            decoder.decode(data[start:start + _RUN_BYTES])
        decoder.decode(b"", final=True)
    except (UnicodeDecodeError, OSError, EOFError, zlib.error):
        return None
    text = np.frombuffer(data, np.uint8)
    runs, refused, start = [], -1, 0
    while refused < 0 and (start < len(data) or not runs):  # one run at least, if empty
        end = data.find(b"\n", start + _RUN_BYTES) + 1 or len(data)
        most = (end - start) // 2 + 1  # a token and a space at least
        lines, totals = np.empty((data.count(b"\n", start, end) + 1, N_COLUMNS), np.int64), np.empty(most)
        groups, values, deferred = np.empty((most, 3), np.int64), np.empty(most), np.empty((most, 2), np.int64)
        words = np.empty((most, 2), np.int64)
        refused, *counts = scan_entries(text, start, end, lines, totals, groups, values, deferred, words)
        runs.append(tuple(array[:count] for array, count in zip((lines, groups, values, deferred, words), counts))
                    + (totals[:counts[0]],))
        start = end
    lines, groups, values, deferred, words, totals = (np.concatenate(column) for column in zip(*runs))
    name_ids, _, name_bytes = intern_words(text, groups[:, :2])
    names = tuple(bytes(name_bytes).decode("utf-8").split("\n")) if len(groups) else ()
    scanned = NBestText(text, lines, totals, csr.offsets(lines[:, GROUPS]), name_ids.astype(np.int64), groups[:, 2],
                        names, values, csr.offsets(lines[:, WORDS]), words,
                        _line_at(text, refused) if refused >= 0 else None)
    return _read_deferred(scanned, data, deferred)


def _read_deferred(scanned: NBestText, data: bytes, deferred: np.ndarray) -> NBestText:
    """``scanned`` with the numbers the kernels left (NaN) read by ``parse_finite`` (``deferred``: the first and
    end byte of each NaN value), cut before the first entry where one is no finite number."""
    bad = scanned.n_entries
    values, totals = scanned.values, scanned.totals
    if len(deferred):
        entry_of_value = np.repeat(np.repeat(np.arange(scanned.n_entries), np.diff(scanned.group_offsets)),
                                   scanned.group_sizes)
        for index, (start, end) in zip(np.flatnonzero(np.isnan(values)), deferred):
            try:
                values[index] = parse_finite(data[start:end].decode("utf-8"))
            except ValueError:
                bad = min(bad, int(entry_of_value[index]))
                break
    for entry in np.flatnonzero(np.isnan(totals[:bad])):
        try:
            totals[entry] = parse_finite(data[scanned.lines[entry, TOTAL_START]:scanned.lines[entry, TOTAL_END]]
                                         .decode("utf-8"))
        except ValueError:
            bad = int(entry)
            break
    if bad == scanned.n_entries:
        return scanned
    return scanned.head(bad, scanned.line(bad))


def _line_at(text: np.ndarray, start: int) -> tuple[int, str]:
    """(number from 1, text without its newline) of the line starting at byte ``start`` of ``text``."""
    data = text.data
    number = bytes(data[:start]).count(b"\n") + 1
    end = bytes(data[start:]).find(b"\n")
    line = bytes(data[start:start + end if end >= 0 else len(text)]).decode("utf-8")
    if number == 1:
        line = line.removeprefix("\ufeff")
    return number, line.rstrip("\r")


def is_sparse(name: str, values: tuple[float, ...]) -> bool:
    """Whether an n-best list's feature ``name`` with ``values`` is a sparse feature (Moses's rule: an
    underscore in the name and one value)."""
    return len(values) == 1 and "_" in name


def parse_features(text: str, path: str | Path = "<features>", number: int | None = None) -> dict[str, tuple[float, ...]]:
    """``Name0= v v Name1= v`` (an n-best list's features, a weight line) as {name: values}, in order.

    ``path`` and ``number`` name the text in errors (FormatError).
    """
    features: dict[str, list[float]] = {}
    current = None
    for token in text.split():
        if token.endswith("="):
            current = token[:-1]
            if current in features:
                raise FormatError(path, number, f"feature {current} appears twice")
            features[current] = []
        elif token.endswith(":") and len(token) > 1:
            raise FormatError(path, number, f"feature label {token!r} is of Moses's old n-best format ('name: v v'); "
                              "pbmt reads the current one ('Name0= v v'), which Moses writes for a moses.ini with "
                              "[feature] and [weight] sections")
        elif current is None:
            name, _, value = token.partition("=")
            spaced = f" (a name ends in '=' and its values follow it after a space: '{name}= {value}')" if value else ""
            raise FormatError(path, number, f"feature value {token!r} before any feature name{spaced}")
        else:
            try:
                features[current].append(parse_finite(token))
            except ValueError:
                raise FormatError(path, number, f"feature value {token!r} of {current} is not a finite number") from None
    return {k: tuple(v) for k, v in features.items()}


def _parse_range(text: str, path, number) -> tuple[int, int]:
    first, _, last = text.partition("-")
    try:
        a = parse_int(first)
        b = parse_int(last) if last else a
    except ValueError:
        raise FormatError(path, number, f"segmentation range {text!r} is not of the form i or i-j") from None
    return a, b + 1


def _parse_segmentation(text: str, path, number) -> tuple[tuple[int, int, int, int], ...]:
    out = []
    for token in text.split():
        src, eq, tgt = token.partition("=")
        if not eq:
            raise FormatError(path, number, f"segmentation block {token!r} is not of the form i-j=k-l")
        out.append(_parse_range(src, path, number) + _parse_range(tgt, path, number))
    return tuple(out)


def _parse_pairs(text: str, path, number) -> tuple[tuple[int, int], ...]:
    return tuple(alignment_point(token, path, number) for token in text.split())


def write_nbest(entries: Iterable[NBestEntry], handle: IO[str]) -> None:
    """Write entries, one line each, to an open text handle."""
    for entry in entries:
        handle.write(entry.to_line() + "\n")
