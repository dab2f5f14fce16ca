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

from dataclasses import dataclass
from functools import lru_cache
from itertools import chain
from pathlib import Path
from typing import IO, Iterable, Iterator

from pbmt.base.errors import FormatError
from pbmt.base.files import parse_finite, parse_int, read_lines


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
        elif current is None:
            raise FormatError(path, number, f"feature value {token!r} before any feature name")
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
    out = []
    for token in text.split():
        s, dash, t = token.partition("-")
        if not (dash and s.isascii() and s.isdigit() and t.isascii() and t.isdigit()):
            raise FormatError(path, number, f"alignment point {token!r} is not of the form i-j")
        out.append((int(s), int(t)))
    return tuple(out)


def write_nbest(entries: Iterable[NBestEntry], handle: IO[str]) -> None:
    """Write entries, one line each, to an open text handle."""
    for entry in entries:
        handle.write(entry.to_line() + "\n")
