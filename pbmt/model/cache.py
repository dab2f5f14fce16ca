"""Memory-mapped binary caches of parsed model files.

A text model (phrase table, ARPA file) is parsed once into numpy arrays that
are saved as one ``.npy`` file each in a cache folder; later loads map them
from disk in milliseconds. The cache sits beside the text file
(``<file>.pbmt-cache/<kind>``) or, when that folder is not writable, under
``$PBMT_CACHE_DIR`` (default ``~/.cache/pbmt``). It records the text file's
size, modification and change times, inode and device and is rebuilt when
any of them changes. It is created readable by others (under the umask), so
a model shared by several users is cached once.

Within ``standing_in()`` no cache is read or written, and the loaders make a
stand-in of each text file instead of reading it (see ``standing_in``).

A cache verifies itself: ``meta.json`` records every array file's size and
CRC-32, checked at each load (one pass over the cache's bytes, which also
brings them into the page cache the memory maps then read). A damaged cache (a
file cut short, emptied or overwritten, a ``meta.json`` that is no JSON or
lacks an array) is rebuilt from the text file, with a one-line note on
standard error; a stale one (the text file changed) is rebuilt silently.
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import json
import os
import shutil
import sys
import tempfile
import zlib
from pathlib import Path
from typing import Sequence

import numpy as np

from pbmt.base.files import remove_stale, temporary_name

_META = "meta.json"
_STANDING_IN = contextvars.ContextVar("pbmt_model_standing_in", default=False)


@contextlib.contextmanager
def standing_in():
    """Within the block a model loads as its stand-in: the loaders read no text file and no cache, and make a
    table without phrase pairs for every phrase or reordering table and an LM of ``<unk> <s> </s>`` for every
    ARPA file (``stand_in``); nothing is written. The stand-in has the model's features, settings and weights,
    and its arrays have the types the real ones have, so that a kernel compiled for it is the real model's
    specialisation (``pbmt.commands.precompile`` compiles them in another process so while the real model
    loads)."""
    token = _STANDING_IN.set(True)
    try:
        yield
    finally:
        _STANDING_IN.reset(token)


def stand_in() -> bool:
    """Whether loaders make stand-ins instead of reading files (``standing_in``)."""
    return _STANDING_IN.get()


def cache_folder(source: Path, kind: str) -> Path:
    """Where the cache of kind ``kind`` for the text file ``source`` lives."""
    source = Path(source).resolve()
    if os.access(source.parent, os.W_OK) and "PBMT_CACHE_DIR" not in os.environ:
        return source.parent / f"{source.name}.pbmt-cache" / kind
    root = Path(os.environ.get("PBMT_CACHE_DIR", Path.home() / ".cache" / "pbmt"))
    digest = hashlib.sha1(str(source).encode()).hexdigest()[:16]
    return root / f"{source.name}-{digest}" / kind


def _stamp(source: Path, version: str) -> dict:
    # ctime and inode too: an editor may keep the size and reset the mtime (touch -r), but no user can set the
    # ctime, and a file replaced by rename is another inode
    stat = Path(source).stat()
    return {"version": version, "size": stat.st_size, "mtime_ns": stat.st_mtime_ns, "ctime_ns": stat.st_ctime_ns,
            "inode": stat.st_ino, "device": stat.st_dev}


def derived_kind(kind: str, key: object, inputs: Sequence[Path]) -> str:
    """The cache kind of arrays of ``source`` that also depend on the files ``inputs`` and on ``key`` (any
    JSON value: what else they are computed from): ``kind``, a digest of ``key`` and one of the files' paths
    and stamps, so that a change to any of the files or to ``key`` names another cache (``load_arrays`` checks
    ``source`` itself). A cache of the same ``kind`` and ``key`` whose files' digest differs is stale for good
    (a file's stamp never comes back): ``save_arrays`` removes it (``replaced_kinds``)."""
    key_digest, files_digest = (hashlib.sha1(json.dumps(value, sort_keys=True).encode()).hexdigest()[:8]
                                for value in ([key, [str(Path(p).resolve()) for p in inputs]],
                                              [_stamp(p, "") for p in inputs]))
    return f"{kind}-{key_digest}-{files_digest}"


def replaced_kinds(kind: str) -> str | None:
    """The prefix of the kinds a ``derived_kind`` replaces (its kind and key with other files' stamps), or
    None for a kind of its own."""
    parts = kind.rsplit("-", 2)
    if len(parts) == 3 and all(len(p) == 8 and set(p) <= set("0123456789abcdef") for p in parts[1:]):
        return f"{parts[0]}-{parts[1]}-"
    return None


def _checksum(path: Path) -> int:
    """CRC-32 of a file's bytes."""
    crc = 0
    with open(path, "rb") as handle:
        while block := handle.read(1 << 20):
            crc = zlib.crc32(block, crc)
    return crc


def load_arrays(source: Path, kind: str, version: str, names: Sequence[str]) -> dict[str, np.ndarray] | None:
    """The cached arrays ``names`` (read-only memory maps), or None if missing, stale or damaged (a note on
    standard error says which file; the caller rebuilds the cache). None while ``standing_in``."""
    if stand_in():
        return None
    folder = cache_folder(source, kind)
    try:
        text = (folder / _META).read_text()
    except OSError:
        return None  # no cache yet
    try:
        meta = json.loads(text)
        if meta["stamp"] != _stamp(source, version):
            return None
        files = meta["files"]
        if sorted(files) != sorted(names):
            raise ValueError(f"{_META} lists {', '.join(sorted(files)) or 'no arrays'}")
        arrays = {}
        for name in names:
            path = folder / f"{name}.npy"
            if path.stat().st_size != files[name]["bytes"] or _checksum(path) != files[name]["crc32"]:
                raise ValueError(f"{path.name} differs from what was written")
            arrays[name] = np.load(path, mmap_mode="r")
        return arrays
    except (OSError, ValueError, KeyError, TypeError, EOFError) as err:
        print(f"pbmt: note: the cache {folder} is damaged ({err}); rebuilding it from {source}", file=sys.stderr)
        return None


def save_arrays(source: Path, kind: str, version: str, arrays: dict[str, np.ndarray]) -> None:
    """Write ``arrays`` as the cache of ``source``; failure to write is not an error.

    The folder is written under a temporary name and renamed into place, so a
    reader never sees a half-written cache. Nothing is written while ``standing_in``.
    """
    if stand_in():
        return
    folder = cache_folder(source, kind)
    umask = os.umask(0)
    os.umask(umask)
    try:
        for parent in reversed([folder.parent, *folder.parent.parents]):
            if not parent.exists():
                parent.mkdir(mode=0o777 & ~umask)
        remove_stale(folder.parent, kind)
        tmp = Path(tempfile.mkdtemp(prefix=temporary_name(kind), dir=folder.parent))
        os.chmod(tmp, 0o777 & ~umask)  # mkdtemp makes it private; a shared model's cache is for every user
    except OSError:
        return
    try:
        for name, array in arrays.items():
            np.save(tmp / f"{name}.npy", np.ascontiguousarray(array))
        files = {name: {"bytes": (tmp / f"{name}.npy").stat().st_size, "crc32": _checksum(tmp / f"{name}.npy")}
                 for name in sorted(arrays)}
        meta = {"stamp": _stamp(source, version), "files": files}
        (tmp / _META).write_text(json.dumps(meta))
        if folder.exists():
            shutil.rmtree(folder, ignore_errors=True)
        os.replace(tmp, folder)
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)
        return
    prefix = replaced_kinds(kind)
    if prefix is not None:
        for old in folder.parent.glob(f"{prefix}*"):
            if old.name != kind and old.is_dir() and not old.is_symlink():
                shutil.rmtree(old, ignore_errors=True)


def encode_words(words: list[str]) -> np.ndarray:
    """A word list as one ``uint8`` array (UTF-8, newline-separated) for a cache."""
    return np.frombuffer("\n".join(words).encode("utf-8"), dtype=np.uint8)


def decode_words(blob: np.ndarray) -> list[str]:
    """Inverse of ``encode_words``."""
    text = bytes(blob).decode("utf-8")
    return text.split("\n") if text else []
