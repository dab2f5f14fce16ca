"""The shape of the code a newcomer reads: kernels take named structures, modules stay short.

Every numba function of pbmt takes at most ``MAX_KERNEL_PARAMETERS``
parameters: a kernel that needs more takes named tuples of its data (a
sentence, a pool, a corpus), as the decoder's do, so that a call reads as
what it passes. No module of pbmt is longer than ``MAX_MODULE_LINES``
lines: one module holds one concept, and a longer one holds two. Every
tuner (a class of ``pbmt.tune.tuner.Tuner``) is in ``pbmt.tune.registry``,
the one place ``pbmt tune``, ``optimize``, ``rescore`` and the API find them.
No module imports a private name (``_name``) of another module: what two
modules share is public in the module that owns it (the numba kernel
modules, ``_*_kernels.py``, share their private kernels among themselves).
``python tests/test_structure.py`` prints what breaks a rule.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
import sys
from pathlib import Path

from numba.core.registry import CPUDispatcher

import pbmt

PACKAGE = Path(pbmt.__file__).resolve().parent
MAX_KERNEL_PARAMETERS = 15
MAX_MODULE_LINES = 600


def modules() -> list:
    """Every module of pbmt, imported (``pbmt.__main__`` would run the command line: it is three lines)."""
    names = [m.name for m in pkgutil.walk_packages(pbmt.__path__, "pbmt.") if not m.name.endswith("__main__")]
    return [importlib.import_module(name) for name in sorted(names)]


def kernel_parameters() -> dict[str, int]:
    """``module.function`` -> its parameter count, for every numba function defined in pbmt."""
    found = {}
    for module in modules():
        for name, value in vars(module).items():
            if isinstance(value, CPUDispatcher) and value.py_func.__module__ == module.__name__:
                found[f"{module.__name__}.{name}"] = len(inspect.signature(value.py_func).parameters)
    return found


def module_lines(package: Path = PACKAGE) -> dict[str, int]:
    """``pbmt/...py`` -> its line count, for every Python module under ``package``."""
    return {str(path.relative_to(package.parent)): len(path.read_text(encoding="utf-8").splitlines())
            for path in sorted(package.rglob("*.py"))}


def test_no_kernel_takes_more_than_fifteen_parameters():
    counts = kernel_parameters()
    assert "pbmt.search._cube_kernels.cube_kernel" in counts and "pbmt.train._extract_kernels._sentence" in counts
    assert {name: n for name, n in counts.items() if n > MAX_KERNEL_PARAMETERS} == {}, (
        f"a numba function takes more than {MAX_KERNEL_PARAMETERS} parameters: pass named tuples of its data "
        "(see pbmt/search/_decoder_kernels.py's Sentence, Pool, ...) instead of long positional lists")


def test_no_module_is_longer_than_six_hundred_lines():
    lines = module_lines()
    assert len(lines) > 100 and lines["pbmt/__main__.py"] == 3
    long = {path: n for path, n in lines.items() if n > MAX_MODULE_LINES}
    assert long == {}, (f"a module is longer than {MAX_MODULE_LINES} lines: it holds more than one concept; split "
                        "one out into a module of its own")


def test_every_tuner_is_in_the_registry():
    from pbmt.tune.registry import TUNERS
    from pbmt.tune.tuner import Tuner

    modules()  # every tuner class defined
    found, stack = set(), [Tuner]
    while stack:
        for sub in stack.pop().__subclasses__():
            stack.append(sub)
            if sub.__module__.startswith("pbmt.") and not inspect.isabstract(sub) and "name" in vars(sub):
                found.add(sub)
    assert len(found) >= 9 and found <= set(TUNERS), (
        f"{sorted(t.__name__ for t in found - set(TUNERS))}: a tuner outside pbmt.tune.registry.TUNERS, which "
        "pbmt tune cannot offer: add it there")


def private_imports(package: Path = PACKAGE) -> dict[str, list[str]]:
    """``pbmt/...py`` -> the private names it imports from other modules of ``package``
    (``module._name``); a private module (``from pbmt.x import _y_kernels``) is not a private name,
    and a kernel module may import another kernel module's private kernels."""
    found: dict[str, list[str]] = {}
    for path in sorted(package.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == package.name):
                continue
            source = package.parent.joinpath(*node.module.split("."))
            for name in (alias.name for alias in node.names):
                if not name.startswith("_") or name.startswith("__"):
                    continue
                if (source / f"{name}.py").exists() or (source / name).is_dir():
                    continue
                if path.stem.endswith("_kernels") and source.name.endswith("_kernels"):
                    continue
                found.setdefault(str(path.relative_to(package.parent)), []).append(f"{node.module}.{name}")
    return found


def test_no_module_imports_a_private_name_of_another():
    assert private_imports() == {}, "make the name public in the module that owns it"


def test_the_checks_find_what_they_look_for(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "short.py").write_text("x = 1\n")
    (tmp_path / "pkg" / "long.py").write_text("x = 1\n" * (MAX_MODULE_LINES + 1))
    assert module_lines(tmp_path / "pkg") == {"pkg/long.py": MAX_MODULE_LINES + 1, "pkg/short.py": 1}
    (tmp_path / "pkg" / "_a_kernels.py").write_text("from pkg._b_kernels import _k\nfrom pkg.short import _x\n")
    (tmp_path / "pkg" / "user.py").write_text("from pkg import _a_kernels\nfrom pkg.long import (\n    y,\n    _z,\n)\n")
    assert private_imports(tmp_path / "pkg") == {"pkg/_a_kernels.py": ["pkg.short._x"], "pkg/user.py": ["pkg.long._z"]}


if __name__ == "__main__":
    sys.path.insert(0, str(PACKAGE.parent))
    for name, n in sorted(kernel_parameters().items(), key=lambda item: -item[1]):
        if n > MAX_KERNEL_PARAMETERS:
            print(f"{n} parameters: {name}")
    for path, n in module_lines().items():
        if n > MAX_MODULE_LINES:
            print(f"{n} lines: {path}")
    for path, names in private_imports().items():
        print(f"{path} imports private {', '.join(names)}")
