"""Numba's on-disk cache, safe for several processes compiling into it at once.

Numba keeps the specialisations of a ``cache=True`` function as numbered data
files (``NAME.N.nbc``) and one index (``NAME.nbi``) mapping each signature to
its file. Saving a new specialisation reads the index, takes the first number
no entry uses, writes the index and then the data file, with no lock. Two
processes that compile different specialisations of one function at once
(``--workers N`` starting cold, ``pytest -n 2``, two commands run side by side)
can so both read the same index and take the same number: one entry is lost,
or worse, the index names for one signature the file the other process wrote,
and a later run loads the wrong code for that signature (a crash, or wrong
numbers). ``tests/test_numba_cache.py`` has processes race to show it.

Importing this module (``pbmt`` does, first) makes every save take an
exclusive lock on its cache folder (``.pbmt-numba.lock`` there: ``flock``,
released when the save ends or the process dies), read the index afresh
inside it, write the data file and only then the index entry naming it, so
a reader without the lock finds either no entry or one whose file is whole.
Loading takes no lock: numba replaces both files whole (a temporary file then
a rename). Where ``fcntl`` does not exist (Windows) saves stay numba's own.
"""

from __future__ import annotations

import contextlib
import itertools
import os

from numba.core import caching

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None

LOCK_NAME = ".pbmt-numba.lock"


@contextlib.contextmanager
def locked(folder: str):
    """An exclusive lock on ``folder``'s numba cache for the time of the ``with`` block (waits for it).

    The lock file is opened for reading, so that a cache folder shared by several users locks whoever made
    the file; where even that fails, the block runs unlocked, as numba's own save would.
    """
    try:
        fd = os.open(os.path.join(folder, LOCK_NAME), os.O_RDONLY | os.O_CREAT, 0o666)
    except OSError:
        yield
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _save(self: caching.IndexDataCacheFile, key, data) -> None:
    """``IndexDataCacheFile.save`` under the folder's lock: the data file first, then the index entry."""
    with locked(self._cache_path):
        overloads = self._load_index()
        name = overloads.get(key)
        if name is None:
            taken = set(overloads.values())
            name = next(n for n in map(self._data_name, itertools.count(1)) if n not in taken)
        self._save_data(name, data)
        if overloads.get(key) != name:
            overloads[key] = name
            self._save_index(overloads)


if fcntl is not None:
    caching.IndexDataCacheFile.save = _save
