"""Errors a user can act on. The command line turns them into exit code 1 (``UsageError``: 2)."""

from __future__ import annotations

from os import PathLike


class PbmtError(Exception):
    """Base class: something in the user's input or setup is wrong."""


class UsageError(PbmtError):
    """An option of the command line is wrong (out of range, inconsistent with another): exit code 2."""


class FormatError(PbmtError, ValueError):
    """A line of an input file is malformed.

    The message names the file, the 1-based line number and what is wrong,
    as ``path:line: what``.
    """

    def __init__(self, path: str | PathLike, line: int | None, message: str):
        self.path = str(path)
        self.line = line
        self.reason = message
        where = f"{self.path}:{line}" if line is not None else self.path
        super().__init__(f"{where}: {message}")
