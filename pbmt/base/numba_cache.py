"""Numba's on-disk cache of pbmt's kernels: fresh only while the sources they are compiled from are, and
safe for several processes compiling into it at once.

**Freshness.** Numba keeps a cached function until its own source file changes. A kernel
that calls a kernel of another module holds a copy of the callee's code (and
of every constant and named-tuple layout it read while compiling), so after an
edit or an upgrade that changes only the callee's module the caller's cache is
stale: it crashes or computes with the old code. ``install`` registers a cache
locator that stamps every kernel of pbmt, and of a model's feature modules
(``pbmt.base.feature_modules``), with its own file's stamp and the
``fingerprint`` of pbmt's kernel sources: a change to any of them recompiles
every cached kernel once, and nothing else does. A stamp per kernel module (the
sources its module imports) would not be sound: the searches' kernels inline the
feature kernels registered for their sentence data (``pbmt.model._feature_kernels``)
from modules they never import (the LM's, the OSM's, the reordering's), and a
named tuple's layout is compiled into every kernel it is passed to, while the
modules defining them import, directly or not, nearly every other kernel source. The cache files stay where
numba puts them (beside the module, under ``NUMBA_CACHE_DIR`` when set, or in
the user-wide folder); only the stamp in their index differs.

**Saves.** Numba keeps the specialisations of a ``cache=True`` function as numbered data
files (``NAME.N.nbc``) and one index (``NAME.nbi``) mapping each signature to
its file. Saving a new specialisation reads the index, takes the first number
no entry uses, writes the index and then the data file, with no lock. Two
processes that compile different specialisations of one function at once
(``--workers N`` starting cold, ``pytest -n 2``, two commands run side by side)
can so both read the same index and take the same number: one entry is lost,
or worse, the index names for one signature the file the other process wrote,
and a later run loads the wrong code for that signature (a crash, or wrong
numbers). ``tests/test_numba_cache.py`` has processes race to show it.

``install`` (``import pbmt`` calls it first) makes every save take an
exclusive lock on its cache folder (``.pbmt-numba.lock`` there: ``flock``,
released when the save ends or the process dies), read the index afresh
inside it, write the data file and only then the index entry naming it, so
a reader without the lock finds either no entry or one whose file is whole.
Loading takes no lock: numba replaces both files whole (a temporary file then
a rename). Where ``fcntl`` does not exist (Windows) saves stay numba's own.
An index that cannot be read back (cut short, or naming a type of a module this
process cannot import, such as a feature module's named tuple in a search
kernel's index) is a cache miss, as numba's own reading makes a stale one: the
next save writes a new index over it, where numba's own reading would raise at
every later load of the kernel.

**Compiles.** ``install`` also has each process compile a specialisation
the cache lacks under a lock of its own (a byte of
``.pbmt-numba-compiling.lock`` in its cache folder, at an offset hashed
from the function's index and the argument types: a POSIX record lock,
held by the process and dropped when it dies), so that two processes
needing one specialisation at once compile it once: the second waits for
the first and loads what it saved (``pbmt.commands.precompile`` splits a
run's compiling between two processes so). A kernel's compile holds its
lock while numba compiles the kernels it calls, which take their own: the
locks follow calls, so no two processes wait for each other. A wait ends
after ``COMPILE_WAIT`` seconds (a stopped process) with a compile of its
own. ``compile_unless_elsewhere`` compiles a specialisation only if no
other process is compiling it.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import itertools
import os
import pickle
import re
import time
from pathlib import Path

from numba.core import caching, dispatcher, sigutils
from numba.core.compiler_lock import global_compiler_lock

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None

PACKAGE = Path(__file__).resolve().parent.parent  # pbmt's own folder
USER_MODULE_PREFIX = "pbmt_user_"  # the modules pbmt.base.feature_modules runs
_IMPL = getattr(caching, "CacheImpl", None) or caching._CacheImpl  # named _CacheImpl in older numba

# The sources kernels are compiled from: every module that uses numba and, transitively, the modules of the
# package it imports (numba freezes the values of the globals a kernel reads into its code), and every module that
# defines a named tuple or an enum (numba compiles its field or member layout into the kernels it is passed to).
_NUMBA = re.compile(r"^[ \t]*(?:from|import)[ \t]+numba\b", re.M)
_LAYOUT = re.compile(r"namedtuple\(|NamedTuple\b|Enum\b")
_FROM_IMPORT = re.compile(r"from[ \t]+([\w.]+)[ \t]+import[ \t]+(\([^)]*\)|[^\n]*)")
_IMPORT = re.compile(r"import[ \t]+([\w.]+)")


def kernel_sources(package: Path = PACKAGE) -> list[Path]:
    """The ``.py`` files of ``package`` (a folder named as its package) that kernels are compiled from, sorted."""
    sources = {path: path.read_bytes().decode("utf-8", "replace") for path in package.rglob("*.py")}
    prefix = len(str(package)) - len(package.name)
    by_module = {str(path)[prefix:-3].replace(os.sep, ".").removesuffix(".__init__"): path for path in sources}
    todo = [path for path, text in sources.items() if "numba" in text and _NUMBA.search(text)]
    chosen = set(todo) | {path for path, text in sources.items() if ("Enum" in text or "amedTuple" in text
                                                                     or "namedtuple" in text) and _LAYOUT.search(text)}
    while todo:
        text = sources[todo.pop()]
        names = [m for m in _IMPORT.findall(text) if m.split(".")[0] == package.name]
        for module, imported in _FROM_IMPORT.findall(text):
            if module.split(".")[0] == package.name:
                names += [module] + [f"{module}.{name}" for name in re.findall(r"\w+", imported)]
        for path in (by_module[n] for n in names if n in by_module):
            if path not in chosen:
                chosen.add(path)
                todo.append(path)
    return sorted(chosen)


def fingerprint(package: Path = PACKAGE) -> str:
    """SHA-256 (hex) of the paths (relative to ``package``) and contents of ``package``'s kernel sources."""
    digest = hashlib.sha256()
    for path in kernel_sources(package):
        data = path.read_bytes()
        digest.update(f"{path.relative_to(package).as_posix()}\0{len(data)}\0".encode())
        digest.update(data)
    return digest.hexdigest()


@functools.cache
def _package_fingerprint(package: Path) -> str:
    return fingerprint(package)


class StampedLocator(caching._CacheLocator):
    """The locator numba would choose for a function of ``packages`` (a pbmt kernel, or one of a feature module
    of a model), with the fingerprint of the package's kernel sources added to the function's source stamp."""

    packages: dict[str, Path] = {}  # top-level module name (or prefix of names) -> the package folder it stamps

    def __init__(self, inner: caching._CacheLocator, package: Path):
        self._inner = inner
        self._package = package

    @classmethod
    def from_function(cls, py_func, py_file):
        package = cls.package_of(getattr(py_func, "__module__", None) or "")
        if package is None:
            return None
        for other in _IMPL._locator_classes:
            if other is not cls:
                inner = other.from_function(py_func, py_file)
                if inner is not None:
                    return cls(inner, package)
        return None

    @classmethod
    def package_of(cls, module: str) -> Path | None:
        """The package folder whose fingerprint stamps the kernels of ``module``, or None (numba's own stamp)."""
        top = module.split(".")[0]
        for name, package in cls.packages.items():
            if top == name or (name.endswith("_") and top.startswith(name)):
                return package
        return None

    @property
    def _py_file(self) -> str:
        """The kernel's source file: numba names it in its warning about a compile result it cannot cache."""
        return self._inner._py_file

    def ensure_cache_path(self):
        self._inner.ensure_cache_path()

    def get_cache_path(self):
        return self._inner.get_cache_path()

    def get_source_stamp(self):
        return self._inner.get_source_stamp(), _package_fingerprint(self._package)

    def get_disambiguator(self):
        return self._inner.get_disambiguator()

    def get_suitable_cache_subpath(self, py_file):
        return self._inner.get_suitable_cache_subpath(py_file)


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


_numba_load_index = caching.IndexDataCacheFile._load_index


def _load_index(self: caching.IndexDataCacheFile) -> dict:
    """``IndexDataCacheFile._load_index``, with an index that cannot be read back taken as empty (module
    docstring)."""
    try:
        return _numba_load_index(self)
    except (ImportError, AttributeError, EOFError, ValueError, TypeError, pickle.UnpicklingError):
        return {}


COMPILE_LOCK_NAME = ".pbmt-numba-compiling.lock"
COMPILE_WAIT = 300.0  # seconds a process waits for another's compile of a specialisation before its own
_numba_compile = dispatcher.Dispatcher.compile
_lock_files: dict[str, int] = {}  # cache folder -> this process's descriptor of its compile lock file (never
# closed: closing any descriptor of a file drops every record lock the process holds on it)
_held: set[tuple[str, int]] = set()  # the specialisations this process holds the lock of


def _specialisation(kernel, args) -> tuple[str, int] | None:
    """(cache folder, byte of its compile lock file) of the specialisation of ``kernel`` for ``args`` (numba
    types), or None where no lock is wanted: no disk cache, or compiled in this process already."""
    cache = getattr(kernel, "_cache", None)
    cache_file = getattr(cache, "_cache_file", None)
    if fcntl is None or cache_file is None or tuple(args) in kernel.overloads:
        return None
    digest = hashlib.sha256(f"{cache_file._index_name}\0{tuple(args)!r}".encode()).digest()
    return cache._cache_path, int.from_bytes(digest[:7], "big")


def _take(key: tuple[str, int], wait: float) -> bool | None:
    """Lock ``key``'s byte, waiting up to ``wait`` seconds: True once held, False if another process still
    holds it, None where no lock can be had (the folder or the file cannot be made, no record locks)."""
    folder, offset = key
    fd = _lock_files.get(folder)
    try:
        if fd is None:
            os.makedirs(folder, exist_ok=True)
            fd = _lock_files[folder] = os.open(os.path.join(folder, COMPILE_LOCK_NAME), os.O_RDWR | os.O_CREAT,
                                               0o666)
        deadline, pause = time.monotonic() + wait, 0.005
        while True:
            try:
                fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, offset)
                return True
            except (BlockingIOError, PermissionError):  # another process holds it
                if time.monotonic() >= deadline:
                    return False
                time.sleep(pause)
                pause = min(2 * pause, 0.05)
    except OSError:
        return None


@contextlib.contextmanager
def _compiling(kernel, args, wait: float = COMPILE_WAIT):
    """The lock of ``kernel``'s specialisation for ``args`` for the time of the block, held by this process
    (waiting up to ``wait`` s for another process to release it); yields False if another still holds it."""
    with global_compiler_lock:  # one thread of this process at a time: record locks are the process's
        key = _specialisation(kernel, args)
        taken = None if key is None or key in _held else _take(key, wait)
        if taken:
            _held.add(key)
        try:
            yield taken is not False
        finally:
            if taken:
                _held.discard(key)
                fcntl.lockf(_lock_files[key[0]], fcntl.LOCK_UN, 1, key[1])


def _compile(self, sig):
    """``Dispatcher.compile`` under the lock of the specialisation (module docstring): what another process
    compiles meanwhile is then loaded from the cache."""
    with _compiling(self, sigutils.normalize_signature(sig)[0]):
        return _numba_compile(self, sig)


def compile_unless_elsewhere(kernel, args) -> bool:
    """Compile (or load from the cache) ``kernel``'s specialisation for ``args`` (numba types) unless another
    process is compiling it; whether this process now has it."""
    with _compiling(kernel, args, wait=0.0) as here:
        if here:
            kernel.compile(tuple(args))
        return here


def install(modules: dict[str, Path] | None = None) -> None:
    """Read an index that cannot be read back as a cache miss, lock every save and every compile of a
    specialisation (where ``fcntl`` exists) and stamp the kernels
    cached from now on of the modules ``modules`` names (top-level name, or a prefix ending in ``_``, -> the
    package folder whose kernel sources stamp them; default pbmt's own and its feature modules'). ``import
    pbmt`` calls it with the default."""
    caching.IndexDataCacheFile._load_index = _load_index
    if fcntl is not None:
        caching.IndexDataCacheFile.save = _save
        dispatcher.Dispatcher.compile = _compile
    StampedLocator.packages.update(modules or {"pbmt": PACKAGE, USER_MODULE_PREFIX: PACKAGE})
    if StampedLocator not in _IMPL._locator_classes:
        _IMPL._locator_classes.insert(0, StampedLocator)


def has_cached(dispatcher) -> bool:
    """Whether numba's cache holds a specialisation of ``dispatcher`` (a ``cache=True`` kernel) that is fresh
    for the present sources (any one: which types a run needs is not known before its model loads)."""
    impl = getattr(dispatcher, "_cache", None)
    cache_file = getattr(impl, "_cache_file", None)
    if cache_file is None:  # caching off: every run compiles
        return False
    try:
        return bool(cache_file._load_index())
    except OSError:
        return False
