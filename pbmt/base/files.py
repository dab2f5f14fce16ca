"""Reading text files (plain or gzip) line by line; atomic and grouped writes (resumable ones: ``journal``).

Writing rules, shared by every verb:

- a regular file (or a path that does not exist yet) is written through a
  temporary file in the same folder and renamed over it on success, so a
  failed or killed run never leaves it half-written; several outputs of one
  run (``Outputs``) are renamed together at the end, so they always come from
  the same run;
- a symlink is followed: the file it points to is replaced, never the link;
- anything that is not a regular file (a device, a FIFO, a process
  substitution, ``/dev/stdout``) and ``-`` (standard output) are written in
  place, as they cannot be renamed over;
- temporary files carry the writing process's id, and a writer removes those
  of dead processes (a killed earlier run) beside its target before it starts.
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import io
import math
import os
import re
import shutil
import stat
import sys
import tempfile
import zlib
from pathlib import Path

try:
    import fcntl
except ImportError:  # not on POSIX: journaled outputs go unlocked
    fcntl = None
from typing import IO, Iterable, Iterator

from pbmt.base.errors import FormatError, PbmtError, UsageError

_GZIP_LEVEL = 6
_BOM = "\ufeff"
_TMP_PREFIX = "pbmt-"  # temporary files: .NAME.pbmt-PID-RANDOM.tmp
_TMP_RESERVE = 32  # bytes of a temporary name after the prefix: a process id, mkstemp's letters, .tmp
_NAME_MAX = 255  # bytes of a file name on Linux, macOS and Windows file systems
MAX_INDEX = 2 ** 31 - 1  # the largest word position or sentence id a file may give (pbmt keeps them as int32)


def open_binary(path: str | os.PathLike) -> IO[bytes]:
    """Open a file for reading bytes; ``.gz`` files are decompressed; ``-`` is stdin.

    Raises PbmtError (naming the file) when it does not exist or cannot be read.
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
    except OSError as err:
        raise PbmtError(f"{path}: cannot open: {err.strerror or err}") from None
    if path.suffix == ".gz":
        return gzip.GzipFile(fileobj=raw, mode="rb")  # type: ignore[return-value]
    return io.BufferedReader(raw, 1 << 20)


def open_text(path: str | os.PathLike) -> IO[str]:
    """Open a UTF-8 text file (plain, ``.gz``, or ``-`` for stdin) for reading; a leading BOM is dropped."""
    return io.TextIOWrapper(open_binary(path), encoding="utf-8-sig", newline="\n")


def read_lines(path: str | os.PathLike) -> Iterator[tuple[int, str]]:
    """Yield ``(line_number, line)`` pairs of a UTF-8 file, 1-based, without the newline.

    ``path`` may be ``-`` for standard input. A UTF-8 byte order mark at the
    start is dropped (editors on Windows write one; it is not part of the
    first word). A line that is not valid UTF-8, or a corrupt gzip stream,
    raises FormatError naming the file and the line.
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
            if number == 1 and line.startswith(_BOM):
                line = line[1:]
            yield number, line.rstrip("\n").rstrip("\r")
    except (OSError, EOFError, zlib.error) as err:  # zlib.error: a gzip stream damaged inside
        raise FormatError(name, number + 1, f"cannot read: {err}") from None
    finally:
        if handle is not sys.stdin.buffer:
            handle.close()


_INTEGER = re.compile(r"[+-]?[0-9]+")


def parse_int(text: str) -> int:
    """``int(text)`` for ASCII digits (with an optional sign) only; ValueError otherwise (Python's ``int`` also
    takes other scripts' digits and underscores, which no model file means)."""
    if text.isascii() and text.isdigit():  # the common case, without a pattern match
        return int(text)
    if not _INTEGER.fullmatch(text.strip()):
        raise ValueError(f"invalid integer {text!r}")
    return int(text)


def alignment_point(token: str, path: str | os.PathLike, number: int | None) -> tuple[int, int]:
    """The (source, target) word positions, at most ``MAX_INDEX``, of the alignment point ``token``: ``i-j`` in
    ASCII digits, as alignment files, phrase tables and n-best lists write it; FormatError naming the line else."""
    i, dash, j = token.partition("-")
    if not (dash and i.isascii() and i.isdigit() and j.isascii() and j.isdigit()):
        raise FormatError(path, number, f"alignment point {token!r} is not of the form i-j")
    if max(int(i), int(j)) > MAX_INDEX:
        raise FormatError(path, number, f"alignment point {token!r} names a word position above {MAX_INDEX:,}")
    return int(i), int(j)


def parse_float(text: str) -> float:
    """``float(text)`` for ASCII text without digit-group underscores; ValueError otherwise.

    Python's ``float`` also reads other scripts' digits ('٣') and '1_0'.
    """
    if not text.isascii() or "_" in text:
        raise ValueError(f"invalid number {text!r}")
    return float(text)


def parse_finite(text: str) -> float:
    """``parse_float`` that also refuses nan and infinities (and 1e999, which is one)."""
    value = parse_float(text)
    if not math.isfinite(value):
        raise ValueError(f"not a finite number: {text!r}")
    return value


def file_digest(path: str | os.PathLike) -> str:
    """SHA-256 (hex) of a file's bytes, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as handle:
            while block := handle.read(1 << 20):
                digest.update(block)
    except OSError as err:
        raise PbmtError(f"{path}: cannot read: {err.strerror or err}") from None
    return digest.hexdigest()


def process_running(pid: int) -> bool:
    """Whether a process ``pid`` runs on this machine (another user's included): a temporary file or folder
    whose name carries it belongs to a live writer."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def hidden_name(name: str, suffix: str, reserve: int = 0) -> str:
    """``.NAME.SUFFIX``, the name of a file of pbmt's beside the file ``NAME`` (a partial output, a lock), within
    the file system's 255 bytes (``NAME_MAX``) with ``reserve`` bytes left: a name the file system takes, however
    long, has its files beside it too (a long NAME is cut and ended by a digest of the whole)."""
    room = _NAME_MAX - reserve - len(f"..{suffix}".encode())
    encoded = name.encode("utf-8", "surrogateescape")
    if len(encoded) > room:
        digest = hashlib.sha256(encoded).hexdigest()[:16]
        name = encoded[:room - len(digest) - 1].decode("utf-8", "ignore") + "~" + digest
    return f".{name}.{suffix}"


def remove_stale(folder: Path, name: str) -> None:
    """Remove temporary files (``.NAME.pbmt-PID-*``) that dead processes left beside ``folder/name``."""
    prefix = hidden_name(name, _TMP_PREFIX, _TMP_RESERVE)
    try:
        entries = list(folder.glob(f"{glob_escape(prefix)}*"))
    except OSError:
        return
    for entry in entries:
        match = re.match(rf"{re.escape(prefix)}(\d+)-", entry.name)
        if match and int(match[1]) != os.getpid() and not process_running(int(match[1])):
            with contextlib.suppress(OSError):
                if entry.is_dir() and not entry.is_symlink():
                    shutil.rmtree(entry)
                else:
                    entry.unlink()


def glob_escape(name: str) -> str:
    """``name`` with glob metacharacters escaped."""
    return re.sub(r"([*?\[])", r"[\1]", name)


def temporary_name(name: str) -> str:
    """The prefix of this process's temporary files for ``name`` (see ``remove_stale``)."""
    return f"{hidden_name(name, _TMP_PREFIX, _TMP_RESERVE)}{os.getpid()}-"


def output_target(path: str | os.PathLike) -> tuple[Path, bool]:
    """Where writing ``path`` goes, and whether that is a regular file to be replaced by rename.

    A symlink resolves to the file it points to; a device, FIFO or socket,
    and anything under ``/dev`` or ``/proc`` (``/dev/stdout`` may point to the
    file the shell redirected to), is written in place (False); a directory
    is an error.
    """
    path = Path(path)
    if str(path.absolute()).startswith(("/dev/", "/proc/")):
        return path, False
    try:
        info = os.stat(path)
    except FileNotFoundError:
        info = None
    except OSError as err:
        raise PbmtError(f"{path}: cannot write: {err.strerror or err}") from None
    if info is not None and stat.S_ISDIR(info.st_mode):
        raise PbmtError(f"{path}: is a directory, expected a file to write")
    if info is not None and not stat.S_ISREG(info.st_mode):
        return path, False
    return Path(os.path.realpath(path)), True


class Outputs:
    """Output files of one run, written through temporary files and renamed together by ``commit()``.

    ``open(path, mode)`` gives a handle (``mode`` "w": UTF-8 text, "wb":
    bytes; a path ending in ``.gz`` is gzip-compressed at level 6 without a
    timestamp, so equal content gives equal bytes). Targets that are not
    regular files, and ``-``, are written in place (``pbmt.base.files`` module
    docstring). As a context manager: commit on success; on an exception the
    temporary files are removed and every regular target is left as it was.

    Every regular target is claimed before anything is written (``claim``):
    one file named twice in the run (by two options, a symlink, a hard link),
    or one of the run's ``inputs`` (which the output would replace), is a
    UsageError, and each target is locked (``.NAME.pbmt-lock`` beside
    it, removed when the outputs are committed or dropped) so that a second
    run writing any one of them at the same time stops with an error instead
    of mixing its lines into the first's.
    """

    def __init__(self, inputs: Iterable[str | os.PathLike | None] = ()):
        self._inputs = {_identity(Path(os.path.realpath(p))): Path(p) for p in inputs
                        if p is not None and str(p) != "-" and os.path.isfile(p)}  # identity -> as named
        self._stack = contextlib.ExitStack()
        self._pending: list[tuple[str, Path, int | None]] = []  # (temporary, target, mode to keep)
        self._claimed: dict[tuple, tuple[Path, bool]] = {}  # identity of a target -> (its path, opened yet)
        self._locks: list[tuple[int, Path]] = []
        self._made: list[Path] = []  # the outermost folders made for the targets, removed by discard if empty
        self._stdout_open = False

    def _make_folder(self, path: str | os.PathLike, folder: Path) -> None:
        """Make ``folder`` (and its parents) for the target ``path``, remembering what it made."""
        top = _first_missing(folder)
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise PbmtError(f"{path}: cannot create its folder: {err.strerror or err}") from None
        if top is not None:
            self._made.append(top)

    def claim(self, paths: list[str | os.PathLike]) -> None:
        """Check that ``paths`` name distinct files, not named by this run before, and lock the regular ones;
        PbmtError if another live run holds one (nothing is written either way)."""
        for path in paths:
            if str(path) == "-":
                continue
            target, regular = output_target(path)
            if not regular:
                continue
            key = _identity(target)
            if key in self._claimed:
                raise UsageError(_named_twice(path, self._claimed[key][0]))
            if key in self._inputs:
                also = "" if str(self._inputs[key]) == str(path) else f" (as {self._inputs[key]})"
                raise UsageError(f"{path}: is an input of this run too{also}: writing it would replace what the "
                                 "run reads; give the output its own file")
            self._claimed[key] = (Path(path), False)
            self._make_folder(path, target.parent)
            lock = target.parent / hidden_name(target.name, "pbmt-lock")
            try:
                self._locks.append((_locked(lock, target), lock))
            except OSError as err:
                raise PbmtError(f"{path}: cannot write beside it: {err.strerror or err}") from None

    def release(self) -> None:
        """Unlock the targets (``commit``, ``close`` and ``discard`` do, unless told to keep the locks)."""
        for fd, lock in self._locks:
            with contextlib.suppress(OSError):
                lock.unlink()
            os.close(fd)
        self._locks = []

    def open(self, path: str | os.PathLike, mode: str = "w", temporary: Path | None = None,
             compress: bool = True) -> IO:
        """A handle writing ``path`` (see the class docstring); ``temporary``: a given partial file to append to
        (resumed output), renamed to ``path`` by ``commit``; ``compress=False``: the bytes written to a ``.gz``
        path are gzip data already (concatenated gzip members, say)."""
        if str(path) == "-":
            self._open_stdout(path)
            handle = sys.stdout if "b" not in mode else sys.stdout.buffer
            self._stack.callback(handle.flush)
            return handle
        target, regular = output_target(path)
        if not regular and _is_stdout(target):  # /dev/stdout, /proc/self/fd/1: written in place, beside '-'
            self._open_stdout(path)
        if regular:
            key = _identity(target)
            if key not in self._claimed:
                self.claim([path])
            elif self._claimed[key][1]:
                raise UsageError(_named_twice(path, self._claimed[key][0]))
            self._claimed[key] = (self._claimed[key][0], True)
        if not regular:
            # append: /dev/stdout may be a file the shell opened for appending
            raw = self._stack.enter_context(_open_or_fail(target, "ab"))
        elif regular:
            self._make_folder(path, target.parent)
            remove_stale(target.parent, target.name)
            if temporary is None:
                try:
                    fd, tmp = tempfile.mkstemp(prefix=temporary_name(target.name), suffix=".tmp", dir=target.parent)
                except OSError as err:
                    raise PbmtError(f"{path}: cannot write in {target.parent}: {err.strerror or err}") from None
                raw = open(fd, "wb")
            else:
                tmp = str(temporary)
                raw = _open_or_fail(temporary, "ab")
            keep = None
            with contextlib.suppress(OSError):
                keep = stat.S_IMODE(os.stat(target).st_mode)
            self._pending.append((tmp, target, keep))
            self._stack.enter_context(raw)
        handle = raw
        if target.suffix == ".gz" and compress:
            handle = self._stack.enter_context(gzip.GzipFile(target.name, "wb", _GZIP_LEVEL, handle, mtime=0))
        if "b" not in mode:
            handle = self._stack.enter_context(io.TextIOWrapper(handle, encoding="utf-8", newline="\n"))
        return handle

    def _open_stdout(self, path: str | os.PathLike) -> None:
        """Note that ``path`` ('-', or a name of it) opens standard output; UsageError the second time: two
        outputs there would interleave their lines."""
        if self._stdout_open:
            raise UsageError(f"{path}: standard output named twice as an output of this run; give each output but "
                             "one its own file")
        self._stdout_open = True

    def commit(self, keep_locks: bool = False) -> None:
        """Close every handle, then rename every temporary file over its target."""
        self._stack.close()
        umask = os.umask(0)
        os.umask(umask)
        for tmp, target, keep in self._pending:
            os.chmod(tmp, keep if keep is not None else 0o666 & ~umask)
        for tmp, target, _ in self._pending:
            os.replace(tmp, target)
        self._pending = []
        if not keep_locks:
            self.release()

    def close(self, keep_locks: bool = False) -> None:
        """Close every handle and keep the temporary files (a journaled run resumes from them)."""
        with contextlib.suppress(Exception):
            self._stack.close()
        self._pending = []
        if not keep_locks:
            self.release()

    def discard(self, keep_locks: bool = False) -> None:
        """Close every handle and remove the temporary files; the targets stay as they were, and the folders
        made for them go if nothing else went into them."""
        with contextlib.suppress(Exception):
            self._stack.close()
        for tmp, _, _ in self._pending:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        self._pending = []
        if not keep_locks:
            self.release()
            for top in self._made:
                _remove_empty(top)

    def __enter__(self) -> "Outputs":
        return self

    def __exit__(self, kind, value, traceback) -> None:
        if kind is None:
            try:
                self.commit()
            except BaseException:
                self.discard()
                raise
        else:
            self.discard()


def _named_twice(path, earlier: Path) -> str:
    also = "" if str(earlier) == str(path) else f" (as {earlier} too)"
    return f"{path}: named twice as an output of this run{also}; give each output its own file"


_held_folders: dict[Path, int] = {}  # run folders this process holds: resolved path -> locked descriptor


def lock_folder(folder: str | os.PathLike) -> None:
    """Lock the run folder ``folder`` (a tuner's ``--out``, a model being trained) for this process until
    ``release_folders``: a second run into it at the same time stops at once with an error naming it, instead of
    both writing the same checkpoint and files. The lock, ``.pbmt-lock`` in the folder, goes with the process
    however it ends; locking a folder this process holds already does nothing."""
    folder = Path(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise PbmtError(f"{folder}: cannot create the folder: {err.strerror or err}") from None
    key = folder.resolve()
    if key not in _held_folders:
        try:
            _held_folders[key] = _locked(key / ".pbmt-lock", folder)
        except OSError as err:
            raise PbmtError(f"{folder}: cannot write in it: {err.strerror or err}") from None


def release_folders(only: str | os.PathLike | None = None) -> None:
    """Unlock every run folder this process holds (``pbmt.commands.cli.main`` does when a verb ends), or ``only`` that one
    (a tuning run of the Python API, when it returns)."""
    for folder, fd in list(_held_folders.items()):
        if only is not None and folder != Path(only).resolve():
            continue
        with contextlib.suppress(OSError):
            (folder / ".pbmt-lock").unlink()
        os.close(fd)
        del _held_folders[folder]


@contextlib.contextmanager
def left_clean_on_failure(*folders: str | os.PathLike) -> Iterator[None]:
    """Run the block that makes ``folders`` (and their missing parents); if it fails, remove every folder it made
    and left empty (a run folder this process holds with nothing but its lock counts as empty, and is released),
    so a refused run leaves nothing behind. Files are never removed."""
    made = [top for top in map(_first_missing, map(Path, folders)) if top is not None]
    try:
        yield
    except BaseException:
        for top in made:
            _remove_empty(top)
        raise


def _first_missing(folder: Path) -> Path | None:
    """The outermost of ``folder`` and its parents that does not exist (what making ``folder`` would make)."""
    missing = [p for p in (folder, *folder.parents) if not p.exists()]
    return missing[-1] if missing else None


def _remove_empty(top: Path) -> None:
    """Remove ``top`` and the folders below it that are empty (a run folder this process holds with nothing but
    its lock counts as empty, and is released); files are never removed."""
    if not top.is_dir():
        return
    inner = sorted((p for p in top.rglob("*") if p.is_dir()), key=lambda p: len(p.parts), reverse=True)
    for folder in (*inner, top):
        if folder.resolve() in _held_folders and [p.name for p in folder.iterdir()] == [".pbmt-lock"]:
            release_folders(folder)
        with contextlib.suppress(OSError):
            folder.rmdir()


def _is_stdout(target: Path) -> bool:
    """Whether ``target``, a path written in place, is this process's standard output under another name (a
    pipe, terminal or file it goes to), the null device aside: it holds nothing to interleave."""
    try:
        found, out = os.stat(target), os.fstat(sys.stdout.fileno())
        return os.path.samestat(found, out) and not os.path.samestat(found, os.stat(os.devnull))
    except (OSError, AttributeError, ValueError, io.UnsupportedOperation):  # no such path, or no stdout file
        return False


def _identity(target: Path) -> tuple:
    """What makes two output paths one file: its device and inode when it exists (a hard link), else its
    resolved path."""
    try:
        info = os.stat(target)
    except OSError:
        return ("path", str(target))
    return ("inode", info.st_dev, info.st_ino)


def _open_or_fail(path: Path, mode: str) -> IO[bytes]:
    try:
        return open(path, mode)
    except OSError as err:
        raise PbmtError(f"{path}: cannot write: {err.strerror or err}") from None


@contextlib.contextmanager
def atomic_write(path: str | os.PathLike, mode: str = "w", compress: bool = True,
                 inputs: Iterable[str | os.PathLike | None] = ()) -> Iterator[IO]:
    """Write one output (``Outputs`` with a single file): ``path`` is replaced only when the body succeeds.

    ``mode`` is ``"w"`` (UTF-8 text) or ``"wb"`` (bytes); ``.gz`` paths are
    compressed unless ``compress`` is False (gzip data written as it is).
    If the body raises, ``path`` is left as it was; naming one of ``inputs`` is a UsageError.
    """
    with Outputs(inputs) as outputs:
        yield outputs.open(path, mode, compress=compress)


def _locked(path: Path, target: Path) -> int:
    """A descriptor of ``path`` (created if absent) under this process's exclusive lock; PbmtError naming
    ``target`` when another live process holds it. The lock belongs to the open file, so the path is checked to
    still name the locked file (a finishing run removes its journal while it holds the lock)."""
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        if fcntl is not None:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                raise PbmtError(f"{target}: another pbmt run is writing it now; let it finish, or write to "
                                "another file") from None
        try:
            if os.fstat(fd).st_ino == os.stat(path).st_ino:
                return fd
        except FileNotFoundError:
            pass
        os.close(fd)
