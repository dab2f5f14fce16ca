"""A model's own feature modules: Python files outside pbmt that define features its ``moses.ini`` names.

A researcher's feature is a ``FeatureFunction`` subclass registered under a
name of its own (``pbmt.model.features``, ``docs/writing-a-feature.md``) in a
``.py`` file of theirs. The ``pbmt.toml`` beside the ``moses.ini`` names it::

    [features]
    modules = ["repeats.py"]

(paths relative to the model folder, or absolute). ``MosesConfig.read`` runs
each module once per process before it parses the ``[feature]`` lines, so a
feature's name and syntax are known wherever a model is read: every verb, a
worker process that rebuilds the model from its path, the Python API. A
module runs under the name ``pbmt_user_<stem>_<digest of its path>``, the same
in every process, so that its classes pickle by reference (numba's caches of
the searches compiled for its features record them).

Loading a model with such a module runs the module's code, as importing it
would: load model folders you trust.

``run_module`` runs any such file of a user's, once per process: also the
plugins of ``pbmt tune``, ``optimize`` and ``rescore`` (``--plugins FILE``,
``pbmt.commands.plugins``); an error raised later in a file it ran is that
file's (``module_frame``), not pbmt's.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import re
import sys
import traceback
from pathlib import Path
from types import ModuleType

from pbmt.base.errors import FormatError
from pbmt.base.pbmt_toml import FILE, check_keys, key_line, read_tables

TABLE = "features"

FEATURE_MODULE = "a feature module of the model ([features] modules in its pbmt.toml)"

# resolved path of a module run in this process -> (its module name, what it is: FEATURE_MODULE or a plugin's words)
_LOADED: dict[Path, tuple[str, str]] = {}


def load_feature_modules(folder: str | os.PathLike) -> tuple[Path, ...]:
    """Run each module ``[features] modules`` of ``folder/pbmt.toml`` names (once per process) and return their
    resolved paths, in order (empty without the file or the table). A module that is missing or raises
    while it runs is a one-line error naming ``pbmt.toml``'s line, the module and, for an error raised in it,
    its own file and line."""
    table = read_tables(folder).get(TABLE, {})
    check_keys(folder, TABLE, table, ("modules",))
    where = Path(folder) / FILE
    names = table.get("modules", [])
    if not isinstance(names, list) or not all(isinstance(n, str) and n for n in names):
        raise FormatError(where, key_line(where, "modules"), f"[{TABLE}] modules must be a list of file names "
                          f"(relative to {Path(folder)}), got {names!r}")
    paths = []
    for name in names:
        path = (Path(folder) / name).resolve()
        if path not in _LOADED:
            _run(path, name, where)
        paths.append(path)
    return tuple(paths)


def module_name(path: Path) -> str:
    """The name a feature module at (resolved) ``path`` runs under: one per path, the same in every process."""
    stem = re.sub(r"\W", "_", path.stem)
    return f"pbmt_user_{stem}_{hashlib.sha256(str(path).encode()).hexdigest()[:10]}"


def _run(path: Path, name: str, where: Path) -> None:
    line = key_line(where, "modules")
    if not path.is_file():
        raise FormatError(where, line, f"[{TABLE}] modules: {name!r}: {path} is not a file")
    if path.suffix != ".py":
        raise FormatError(where, line, f"[{TABLE}] modules: {name!r} is not a Python file (.py)")
    try:
        run_module(path, FEATURE_MODULE)
    except Exception as err:  # the user's code: any error it raises is theirs, said on one line
        raise FormatError(where, line, f"[{TABLE}] modules: {name!r} failed to load: "
                          f"{error_place(err, path, where.parent / name)}"
                          f"{type(err).__name__}: {' '.join(str(err).split())}") from None


def run_module(path: Path, what: str) -> ModuleType:
    """Run the Python file at (resolved) ``path`` under ``module_name(path)``, unless this process ran it
    already, and return its module; ``what`` says what it is in the error ``module_frame`` finds. An exception
    the file raises while it runs is raised again, the module forgotten."""
    if path in _LOADED:
        return sys.modules[_LOADED[path][0]]
    spec = importlib.util.spec_from_file_location(module_name(path), path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # before it runs, as an import does: its classes' pickles name it
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[spec.name]
        raise
    _LOADED[path] = (spec.name, what)
    return module


def user_module(name: str) -> tuple[Path, str] | None:
    """The file ``run_module`` ran in this process as the module ``name``, and what it is, or None: what
    another process must run (``run_module(*user_module(name))``) before it can use the module's classes."""
    return next(((path, what) for path, (loaded, what) in _LOADED.items() if loaded == name), None)


def error_place(err: Exception, path: Path, shown: Path) -> str:
    """``shown:line: `` (``shown``: the module's path as pbmt.toml names it) of the deepest frame of ``err`` in
    the module's own file ``path``, or of its syntax error."""
    if isinstance(err, SyntaxError) and err.filename and Path(err.filename) == path:
        return f"{shown}:{err.lineno}: "
    frames = [f for f in traceback.extract_tb(err.__traceback__) if Path(f.filename) == path]
    return f"{shown}:{frames[-1].lineno}: " if frames else ""


def module_frame(err: BaseException) -> tuple[traceback.FrameSummary, str] | None:
    """The deepest frame of ``err``'s traceback in a file ``run_module`` ran in this process, and what the file
    is (``FEATURE_MODULE``, a plugin), or None: an error raised there is the file's, not pbmt's."""
    loaded = {str(path): what for path, (_, what) in _LOADED.items()}
    frames = [f for f in traceback.extract_tb(err.__traceback__) if f.filename in loaded]
    return (frames[-1], loaded[frames[-1].filename]) if frames else None
