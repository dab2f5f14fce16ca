"""Reading text files (plain or gzip) line by line, and atomic writes."""

from __future__ import annotations

import contextlib
import gzip
import io
import os
import tempfile
from pathlib import Path
from typing import IO, Iterator

from pbmt.errors import FormatError, PbmtError


def open_text(path: str | os.PathLike) -> IO[str]:
    """Open a UTF-8 text file for reading; ``.gz`` files are decompressed.

    Raises PbmtError (naming the file) when it does not exist.
    """
    path = Path(path)
    try:
        raw = open(path, "rb")
    except FileNotFoundError:
        raise PbmtError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise PbmtError(f"{path}: is a directory, expected a file") from None
    if path.suffix == ".gz":
        raw = gzip.GzipFile(fileobj=raw, mode="rb")  # type: ignore[assignment]
    return io.TextIOWrapper(io.BufferedReader(raw, 1 << 20), encoding="utf-8", newline="\n")


def read_lines(path: str | os.PathLike) -> Iterator[tuple[int, str]]:
    """Yield ``(line_number, line)`` pairs, 1-based, without the newline.

    A line that is not valid UTF-8, or a corrupt gzip stream, raises
    FormatError naming the file and the line.
    """
    number = 0
    with open_text(path) as handle:
        try:
            for number, line in enumerate(handle, 1):
                yield number, line.rstrip("\n").rstrip("\r")
        except UnicodeDecodeError as err:
            raise FormatError(path, number + 1, f"not valid UTF-8 ({err.reason})") from None
        except (OSError, EOFError) as err:
            raise FormatError(path, number + 1, f"cannot read: {err}") from None


@contextlib.contextmanager
def atomic_write(path: str | os.PathLike, mode: str = "w") -> Iterator[IO]:
    """Write ``path`` through a temporary file in the same folder, renamed on success.

    If the body raises, the temporary file is removed and ``path`` is left as
    it was: nothing half-written is ever visible under the final name.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        encoding = None if "b" in mode else "utf-8"
        with open(fd, mode, encoding=encoding) as handle:
            yield handle
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
