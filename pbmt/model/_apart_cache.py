"""Numba's cache of whatever is compiled for a feature defined outside pbmt, kept apart from pbmt's own.

A search compiled for a model's features is specialised on each feature's
sentence-data named tuple (``pbmt.model._feature_kernels``), and numba's cache
index of every kernel records the types it was compiled for, naming the class.
Were a class of a user's module (``pbmt.base.feature_modules``) recorded in
the index of one of pbmt's kernels, a process without that module could not
read the index, so not load that kernel at all; and the compiled search, which
holds the feature's kernels' code, would outlive an edit of the module (numba
checks the stamp of the kernel's own source file only).

So a compilation whose types name such a class is cached in a folder keyed by
the content of the modules of the classes it names: ``__pycache__/pbmt-numba-
<digest>`` beside the module (or under ``NUMBA_CACHE_DIR`` when set, or
``~/.cache/pbmt`` when the module's folder is not writable). Every other
compilation stays where numba puts it. The routing wraps numba's
``FunctionCache`` when the first such class registers its kernels: a process
without one runs numba's caching unchanged.
"""

from __future__ import annotations

import copy
import hashlib
import inspect
import os
import sys
from pathlib import Path

from numba.core import caching, config, types

_OUTSIDE: dict[type, str] = {}  # class defined outside pbmt -> "path:content digest" of its module
_ORIGINAL = {}  # FunctionCache's own load_overload and save_overload


def cache_apart(data_class: type) -> None:
    """Cache every compilation for ``data_class`` (a feature's sentence data, defined outside pbmt) apart."""
    module = sys.modules.get(data_class.__module__)
    path = Path(getattr(module, "__file__", None) or "")
    if not path.is_file():
        raise TypeError(f"{data_class.__qualname__}: a feature's sentence data must be defined in a module file, so "
                        "that the searches compiled for it can be cached with that file")
    path = path.resolve()
    _OUTSIDE[data_class] = f"{path}:{hashlib.sha256(path.read_bytes()).hexdigest()}"
    if not _ORIGINAL:
        cls = caching.FunctionCache
        _ORIGINAL.update(load=cls.load_overload, save=cls.save_overload)
        cls.load_overload, cls.save_overload = _load_overload, _save_overload


def source_of(data_class: type) -> str | None:
    """The digest of the content of the module outside pbmt that defines ``data_class``, or None."""
    key = _OUTSIDE.get(data_class)
    return key.rsplit(":", 1)[1] if key else None


def _outside_classes(sig) -> list[type]:
    """The classes of ``_OUTSIDE`` the types of a signature (or tuple of argument types) name, in any tuple."""
    found, todo = set(), list(getattr(sig, "args", sig))
    while todo:
        t = todo.pop()
        if isinstance(t, types.BaseNamedTuple) and t.instance_class in _OUTSIDE:
            found.add(t.instance_class)
        if isinstance(t, types.BaseTuple):
            todo.extend(t.types)
    return sorted(found, key=lambda c: _OUTSIDE[c])


def _root(classes: list[type]) -> Path:
    """The folder of the compilations for ``classes``."""
    key = "pbmt-numba-" + hashlib.sha256("\n".join(_OUTSIDE[c] for c in classes).encode()).hexdigest()[:16]
    if config.CACHE_DIR:
        return Path(config.CACHE_DIR) / key
    beside = Path(_OUTSIDE[classes[0]].rsplit(":", 1)[0]).parent / "__pycache__"
    try:
        beside.mkdir(exist_ok=True)
        if os.access(beside, os.W_OK):
            return beside / key
    except OSError:
        pass
    return Path.home() / ".cache" / "pbmt" / key


def _apart(cache, classes: list[type]):
    """``cache`` (a kernel's ``FunctionCache``) with its index and data files in the folder of ``classes``."""
    root = _root(classes)
    made = cache.__dict__.setdefault("_pbmt_apart", {})
    if root not in made:
        locator = cache._impl.locator
        folder = root / locator.get_suitable_cache_subpath(inspect.getfile(cache._py_func))
        folder.mkdir(parents=True, exist_ok=True)
        apart = copy.copy(cache)
        apart.__dict__["_pbmt_apart"] = None
        apart._cache_path = str(folder)
        apart._cache_file = caching.IndexDataCacheFile(cache_path=str(folder), filename_base=cache._impl.filename_base,
                                                       source_stamp=locator.get_source_stamp())
        made[root] = apart
    return made[root]


def _routed(cache, sig):
    classes = _outside_classes(sig)
    return _apart(cache, classes) if classes and cache.__dict__.get("_pbmt_apart", {}) is not None else cache


def _load_overload(self, sig, target_context):
    return _ORIGINAL["load"](_routed(self, sig), sig, target_context)


def _save_overload(self, sig, data):
    return _ORIGINAL["save"](_routed(self, sig), sig, data)
