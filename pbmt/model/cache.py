"""Memory-mapped binary caches of parsed model files.

A text model (phrase table, ARPA file) is parsed once into numpy arrays that
are saved as one ``.npy`` file each in a cache folder; later loads map them
from disk in milliseconds. The cache sits beside the text file
(``<file>.pbmt-cache/<kind>``) or, when that folder is not writable, under
``$PBMT_CACHE_DIR`` (default ``~/.cache/pbmt``). It records the text file's
size, modification and change times, inode and device and is rebuilt when
any of them changes. It is created readable by others (under the umask), so
a model shared by several users is cached once.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path

import numpy as np

from pbmt.files import remove_stale, temporary_name

_META = "meta.json"


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


def load_arrays(source: Path, kind: str, version: str) -> dict[str, np.ndarray] | None:
    """The cached arrays (read-only memory maps), or None if missing or stale."""
    folder = cache_folder(source, kind)
    try:
        meta = json.loads((folder / _META).read_text())
        if meta["stamp"] != _stamp(source, version):
            return None
        return {name: np.load(folder / f"{name}.npy", mmap_mode="r") for name in meta["arrays"]}
    except (OSError, ValueError, KeyError):
        return None


def save_arrays(source: Path, kind: str, version: str, arrays: dict[str, np.ndarray]) -> None:
    """Write ``arrays`` as the cache of ``source``; failure to write is not an error.

    The folder is written under a temporary name and renamed into place, so a
    reader never sees a half-written cache.
    """
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
        meta = {"stamp": _stamp(source, version), "arrays": sorted(arrays)}
        (tmp / _META).write_text(json.dumps(meta))
        if folder.exists():
            shutil.rmtree(folder, ignore_errors=True)
        os.replace(tmp, folder)
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)


def encode_words(words: list[str]) -> np.ndarray:
    """A word list as one ``uint8`` array (UTF-8, newline-separated) for a cache."""
    return np.frombuffer("\n".join(words).encode("utf-8"), dtype=np.uint8)


def decode_words(blob: np.ndarray) -> list[str]:
    """Inverse of ``encode_words``."""
    text = bytes(blob).decode("utf-8")
    return text.split("\n") if text else []
