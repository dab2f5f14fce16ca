"""Documents of a corpus: which consecutive lines belong together, from a ``*.keys`` file.

A keys file has one key per corpus line, ``BOOK CHAPTER:VERSE`` (the shared
Bible data: ``Joshua 1:1``, ``1 Kings 2:3``, ``Song of Solomon 1:1``). The
book is everything before the last space-separated field. A document is a
maximal run of consecutive lines with the same book (``level="book"``) or the
same book and chapter (``level="chapter"``, the default). Tuning batches that
must not cross document boundaries, and document-level features and decoding,
all take their documents from here.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Iterator, Sequence

import numpy as np

from pbmt.base.errors import FormatError
from pbmt.base.files import read_lines

LEVELS = ("chapter", "book")


@dataclass(frozen=True)
class Documents:
    """Documents as line ranges: document ``d`` is lines ``offsets[d]`` .. ``offsets[d + 1] - 1`` (0-based).

    ``offsets``: ``int64[n_documents + 1]``, from 0 to the number of lines,
    strictly increasing; ``names``: one name per document (``"Joshua 1"`` at
    chapter level, ``"Joshua"`` at book level).
    """

    offsets: np.ndarray
    names: tuple[str, ...]

    def __post_init__(self):
        offsets = np.array(self.offsets, dtype=np.int64)
        offsets.flags.writeable = False
        if offsets.ndim != 1 or len(offsets) < 1 or offsets[0] != 0 or np.any(np.diff(offsets) <= 0):
            raise ValueError(f"offsets must start at 0 and increase strictly, got {offsets}")
        if len(self.names) != len(offsets) - 1:
            raise ValueError(f"{len(offsets) - 1} documents but {len(self.names)} names")
        object.__setattr__(self, "offsets", offsets)
        object.__setattr__(self, "names", tuple(self.names))

    @classmethod
    def from_keys(cls, keys: Sequence[str], level: str = "chapter", source: str | os.PathLike = "<keys>",
                  first_line: int = 1) -> "Documents":
        """Documents of the lines whose keys are ``keys`` (``BOOK CHAPTER:VERSE`` each).

        ``source`` and ``first_line`` name the keys in errors (FormatError:
        file, line, what is wrong).
        """
        if level not in LEVELS:
            raise ValueError(f"level must be one of {LEVELS}, got {level!r}")
        names, starts = [], []
        for i, key in enumerate(keys):
            name = _document_name(key, level, source, first_line + i)
            if not names or name != names[-1]:
                names.append(name)
                starts.append(i)
        return cls(np.array(starts + [len(keys)], np.int64), tuple(names))

    @classmethod
    def read(cls, path: str | os.PathLike, level: str = "chapter", limit: int | None = None) -> "Documents":
        """Documents of a keys file; ``limit``: only its first ``limit`` lines (as ``--sentences`` does)."""
        keys = []
        for number, line in read_lines(path):
            if limit is not None and number > limit:
                break
            keys.append(line)
        return cls.from_keys(keys, level, path)

    @classmethod
    def single(cls, n_lines: int, name: str = "document") -> "Documents":
        """All ``n_lines`` (> 0) lines as one document."""
        return cls(np.array([0, n_lines], np.int64), (name,))

    def __len__(self) -> int:
        return len(self.offsets) - 1

    @property
    def n_lines(self) -> int:
        """Number of lines (sentences) covered."""
        return int(self.offsets[-1])

    def spans(self) -> Iterator[tuple[int, int]]:
        """``(first line, end line)`` of every document, 0-based, end exclusive."""
        for lo, hi in zip(self.offsets[:-1].tolist(), self.offsets[1:].tolist()):
            yield lo, hi

    def document_of(self) -> np.ndarray:
        """``int64[n_lines]``: the document of every line."""
        return np.repeat(np.arange(len(self), dtype=np.int64), np.diff(self.offsets))

    def chunks(self, size: int) -> np.ndarray:
        """``int64[n_lines]``: every line's chunk, cutting each document into runs of at most ``size`` lines.

        A document of ``m`` lines becomes ``ceil(m / size)`` chunks of
        consecutive lines, as equal in length as possible; chunk ids increase
        with the line number. No chunk crosses a document boundary.
        """
        if size < 1:
            raise ValueError(f"size must be at least 1, got {size}")
        out = np.empty(self.n_lines, np.int64)
        next_id = 0
        for lo, hi in self.spans():
            pieces = -(-(hi - lo) // size)
            out[lo:hi] = next_id + np.repeat(np.arange(pieces), [len(p) for p in np.array_split(np.arange(hi - lo),
                                                                                                  pieces)])
            next_id += pieces
        return out


def _document_name(key: str, level: str, source, line: int) -> str:
    fields = key.split()
    if len(fields) < 2:
        raise FormatError(source, line, f"expected 'BOOK CHAPTER:VERSE', got {key!r}")
    chapter, colon, verse = fields[-1].partition(":")
    if not colon or not chapter or not verse:
        raise FormatError(source, line, f"expected CHAPTER:VERSE as the last field, got {fields[-1]!r}")
    book = " ".join(fields[:-1])
    return book if level == "book" else f"{book} {chapter}"
