"""Reading text files (plain or gzip) line by line, and atomic writes."""

from __future__ import annotations

import contextlib
import gzip
import io
import os
import sys
import tempfile
from pathlib import Path
from typing import IO, Iterator

from pbmt.errors import FormatError, PbmtError

_GZIP_LEVEL = 6


def open_binary(path: str | os.PathLike) -> IO[bytes]:
    """Open a file for reading bytes; ``.gz`` files are decompressed; ``-`` is stdin.

    Raises PbmtError (naming the file) when it does not exist.
    """
    if str(path) == "-":
        return sys.stdin.buffer
    path = Path(path)
    try:
        raw = open(path, "rb")
    except FileNotFoundError:
        raise PbmtError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise PbmtError(f"{path}: is a directory, expected a file") from None
    if path.suffix == ".gz":
        return gzip.GzipFile(fileobj=raw, mode="rb")  # type: ignore[return-value]
    return io.BufferedReader(raw, 1 << 20)


def open_text(path: str | os.PathLike) -> IO[str]:
    """Open a UTF-8 text file (plain, ``.gz``, or ``-`` for stdin) for reading."""
    return io.TextIOWrapper(open_binary(path), encoding="utf-8", newline="\n")


def read_lines(path: str | os.PathLike) -> Iterator[tuple[int, str]]:
    """Yield ``(line_number, line)`` pairs of a UTF-8 file, 1-based, without the newline.

    ``path`` may be ``-`` for standard input. A line that is not valid UTF-8,
    or a corrupt gzip stream, raises FormatError naming the file and the line.
    """
    number = 0
    handle = open_binary(path)
    name = "<stdin>" if str(path) == "-" else path
    try:
        for number, raw in enumerate(handle, 1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as err:
                raise FormatError(name, number, f"not valid UTF-8 (byte {err.start + 1} of the line)") from None
            yield number, line.rstrip("\n").rstrip("\r")
    except (OSError, EOFError) as err:
        raise FormatError(name, number + 1, f"cannot read: {err}") from None
    finally:
        if handle is not sys.stdin.buffer:
            handle.close()


@contextlib.contextmanager
def atomic_write(path: str | os.PathLike, mode: str = "w") -> Iterator[IO]:
    """Write ``path`` through a temporary file in the same folder, renamed on success.

    ``mode`` is ``"w"`` (UTF-8 text) or ``"wb"`` (bytes). A path ending in
    ``.gz`` is gzip-compressed (level 6, gzip's default; no timestamp in the
    header, so equal content gives equal bytes). If the body raises, the
    temporary file is removed and ``path`` is left as it was: nothing
    half-written is ever visible under the final name.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with contextlib.ExitStack() as stack:
            handle: IO = stack.enter_context(open(fd, "wb"))
            if path.suffix == ".gz":
                handle = stack.enter_context(gzip.GzipFile(path.name, "wb", _GZIP_LEVEL, handle, mtime=0))
            if "b" not in mode:
                handle = stack.enter_context(io.TextIOWrapper(handle, encoding="utf-8"))
            yield handle
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
