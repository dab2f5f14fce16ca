"""Outputs written one record at a time that a killed run resumes: a journal beside partial files.

The writing rules are those of ``pbmt.base.files`` (atomic renames, locks, temporary names); this adds the
record-by-record resume a long ``translate`` needs.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import IO, Callable, Iterable, Iterator

from pbmt.base.errors import PbmtError
from pbmt.base.files import Outputs, hidden_name, output_target


@contextlib.contextmanager
def _naming(path: str | os.PathLike) -> Iterator[None]:
    """An OSError raised inside without a file name (a write's full disk) gets ``path`` as its file name."""
    try:
        yield
    except OSError as err:
        if err.filename is None:
            err.filename = "standard output" if str(path) == "-" else os.fspath(path)
        raise


class Journal:
    """Outputs written one record at a time (a translated sentence: a line or a few in each output), which a
    killed run resumes.

    When every output is a regular, uncompressed file, each is written to a
    partial file beside it (``.NAME.pbmt-partial``) and, after every record,
    a journal (``.FIRST.pbmt-journal``) gets the records done and the partial
    files' lengths. A later run with the same ``fingerprint`` (its inputs'
    content and settings) truncates the partial files to the last journaled
    record and continues after it (``done`` records are skipped); any other
    run starts afresh (``fingerprint`` is called only then: hashing a
    model's files costs a moment), ``dropped`` saying how many records the
    killed run had written. ``commit()`` renames the partial files over the
    targets together and removes the journal. Otherwise (standard output, a
    device, a FIFO, a ``.gz`` output) the outputs are written as ``Outputs``
    writes them, nothing is resumed.

    As a context manager: commit on success; a ``PbmtError`` (bad input, which a rerun with the same input
    would repeat) discards the partial files; any other exception (Ctrl-C, a kill, a full disk) keeps them
    for a resume and gets a note saying so (``add_note``: ``pbmt``'s error line prints it).

    The run holds a lock on every output while it writes (``Outputs.claim``;
    released by the kernel when the process ends, however it ends), so a
    second run writing any of the same outputs at the same time stops with an
    error instead of appending to the same partial files. An output that is
    one of the run's ``inputs`` is a UsageError before anything is written.
    """

    def __init__(self, paths: list[str | os.PathLike], fingerprint: Callable[[], str], resume: bool = True,
                 inputs: Iterable[str | os.PathLike | None] = (), unit: str = "record"):
        self.outputs = Outputs(inputs)
        self.paths = [str(p) for p in paths]
        self.unit = unit  # what a record is, in the note an interrupted run gets
        self.done = 0
        self.dropped = 0  # the records of a killed run of other inputs or settings, which this run starts over
        self.handles: list[IO] = []
        targets = [output_target(p) if str(p) != "-" else (Path("-"), False) for p in paths]
        self.journal: Path | None = None
        if not all(regular and target.suffix != ".gz" for target, regular in targets):
            self.handles = [self.outputs.open(p) for p in paths]
            return
        try:
            self.outputs.claim(paths)  # distinct and locked before the journal or a partial file is touched
        except BaseException:
            self.outputs.release()
            raise
        first = targets[0][0]
        self.journal = first.parent / hidden_name(first.name, "pbmt-journal")
        partials = [t.parent / hidden_name(t.name, "pbmt-partial") for t, _ in targets]
        try:
            self._header = f"pbmt-journal 1 {fingerprint()} {len(paths)}"
            recovered = self._recover(partials) if resume else None
            if recovered is None:
                for partial in partials:
                    partial.write_bytes(b"")
            else:
                self.done, lengths = recovered
                for partial, length in zip(partials, lengths):
                    os.truncate(partial, length)
            self._log = open(self.journal, "a" if recovered is not None else "w", encoding="utf-8")
            if recovered is None:
                self._log.write(self._header + "\n")
                self._log.flush()
        except OSError as err:
            self.outputs.discard()
            raise PbmtError(f"{first}: cannot write beside it: {err.strerror or err}") from None
        except BaseException:
            self.outputs.discard()
            raise
        self.handles = [self.outputs.open(p, temporary=partial) for p, partial in zip(paths, partials)]

    def _recover(self, partials: list[Path]) -> tuple[int, list[int]] | None:
        try:
            lines = self.journal.read_text(encoding="utf-8").split("\n")
            sizes = [p.stat().st_size for p in partials]
        except (OSError, UnicodeDecodeError):
            return None
        best = None
        for line in lines[1:-1]:  # the last is "" after a complete line, or a line cut by a kill
            fields = line.split()
            if len(fields) == len(partials) + 1 and all(f.isascii() and f.isdigit() for f in fields):
                numbers = [int(f) for f in fields]
                if all(n <= size for n, size in zip(numbers[1:], sizes)):
                    best = (numbers[0], numbers[1:])
        if lines[0] != self._header:
            self.dropped = best[0] if best is not None else 0
            return None
        return best if best is not None else (0, [0] * len(partials))

    def write(self, chunks: list[str]) -> None:
        """Write one record: ``chunks[k]`` (text, newlines included) to output k. An OSError (a full disk) names
        the output it came from, and the record is not counted as written (a resume repeats it)."""
        for path, handle, chunk in zip(self.paths, self.handles, chunks):
            with _naming(path):
                handle.write(chunk)
        if self.journal is not None:
            for path, handle in zip(self.paths, self.handles):
                with _naming(path):
                    handle.flush()
            with _naming(self.journal):
                self._log.write(f"{self.done + 1} " + " ".join(str(h.buffer.tell()) for h in self.handles) + "\n")
                self._log.flush()
        self.done += 1

    def commit(self) -> None:
        """Make the outputs visible (renamed together) and forget the journal."""
        self.outputs.commit(keep_locks=True)
        if self.journal is not None:
            with contextlib.suppress(OSError):
                self.journal.unlink()
            self._log.close()
        self.outputs.release()

    def __enter__(self) -> "Journal":
        return self

    def __exit__(self, kind, value, traceback) -> None:
        if kind is None:
            self.commit()
            return
        if isinstance(value, PbmtError) or self.journal is None:
            self.outputs.discard(keep_locks=True)
            if self.journal is not None:
                with contextlib.suppress(OSError):
                    self.journal.unlink()
            elif self.done and not isinstance(value, PbmtError):
                value.add_note(f"{self.done:,} {self.unit}{'' if self.done == 1 else 's'} done, none kept to go on "
                               "from: a run resumes only into plain files, not .gz ones or standard output")
        else:
            self.outputs.close(keep_locks=True)
            value.add_note(f"{self.done:,} {self.unit}{'' if self.done == 1 else 's'} written and kept: the same "
                           "command goes on after them")
        if self.journal is not None:
            self._log.close()
        self.outputs.release()
