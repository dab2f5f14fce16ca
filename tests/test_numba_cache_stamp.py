"""Numba's cache of a kernel is invalidated by a change to a kernel it calls in another module
(``pbmt.base.numba_cache``): numba's own stamp, of the caller's file alone, keeps the stale code."""

import os
import subprocess
import sys
import textwrap

import pytest

from pbmt.base.numba_cache import PACKAGE, StampedLocator, fingerprint, kernel_sources

CALLEE = """
from numba import njit


@njit(cache=True)
def value():
    return {}
"""

CALLER = """
from numba import njit

from {}.b import value


@njit(cache=True)
def caller():
    return value() * 10
"""

# "plain" is cached as numba does alone, "stamped" with pbmt's locator over its own folder.
RUN = """
import sys
from pathlib import Path

from pbmt.base.numba_cache import install

install({"stamped": Path(sys.argv[1]) / "stamped"})
from plain.a import caller as plain
from stamped.a import caller as stamped

print(plain(), stamped())
"""


def _package(root, name):
    (root / name).mkdir()
    (root / name / "__init__.py").write_text("")
    (root / name / "a.py").write_text(CALLER.format(name))
    (root / name / "b.py").write_text(CALLEE.format(1))


def _run(root, env):
    done = subprocess.run([sys.executable, "-c", RUN, str(root)], capture_output=True, text=True, env=env,
                          cwd=root, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout.split("\n")[-2].split(), done.stdout


@pytest.mark.parametrize("cache_dir", [False, True], ids=["beside-module", "NUMBA_CACHE_DIR"])
def test_a_change_to_a_callee_module_recompiles_its_callers(tmp_path, cache_dir):
    for name in ("plain", "stamped"):
        _package(tmp_path, name)
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    env.pop("NUMBA_CACHE_DIR", None)
    if cache_dir:
        env["NUMBA_CACHE_DIR"] = str(tmp_path / "numba-cache")
    assert _run(tmp_path, env)[0] == ["10", "10"]
    for name in ("plain", "stamped"):  # the callee's constant, at the same size: the caller's file is untouched
        (tmp_path / name / "b.py").write_text(CALLEE.format(2))
    assert _run(tmp_path, env)[0] == ["10", "20"]  # numba alone runs the caller's stale code
    values, log = _run(tmp_path, {**env, "NUMBA_DEBUG_CACHE": "1"})
    assert values == ["10", "20"]
    stamped_log = [line for line in log.splitlines() if "stamped" in line]
    assert any("data loaded" in line for line in stamped_log)
    assert not any("data saved" in line for line in stamped_log), "a warm run compiled again"


def test_the_fingerprint_follows_kernel_sources_and_what_they_import(tmp_path):
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "_k_kernels.py").write_text("from numba import njit\nfrom pkg.constants import (\n    SIZE,\n)\n")
    (package / "constants.py").write_text("SIZE = 4\n")
    (package / "layout.py").write_text("from collections import namedtuple\nData = namedtuple('Data', 'a b')\n")
    (package / "cli.py").write_text("HELP = 'help'\n")
    assert [p.name for p in kernel_sources(package)] == ["_k_kernels.py", "constants.py", "layout.py"]
    seen = {fingerprint(package)}
    for name, text in [("cli.py", "HELP = 'more help'\n"), ("constants.py", "SIZE = 8\n"),
                       ("layout.py", "from collections import namedtuple\nData = namedtuple('Data', 'b a')\n"),
                       ("_k_kernels.py", "from numba import njit\nfrom pkg.constants import SIZE\n")]:
        (package / name).write_text(text)
        seen.add(fingerprint(package))
        assert len(seen) == (1 if name == "cli.py" else 1 + ["constants.py", "layout.py", "_k_kernels.py"]
                             .index(name) + 1), name


def test_pbmt_kernels_and_feature_modules_are_stamped_with_pbmt_kernel_sources():
    from pbmt.model._lm_kernels import cached_score_word

    assert isinstance(cached_score_word._cache._impl.locator, StampedLocator)
    assert StampedLocator.package_of("pbmt_user_repeats_0123456789") == PACKAGE
    assert StampedLocator.package_of("numpy") is None
    names = {p.relative_to(PACKAGE).as_posix() for p in kernel_sources()}
    assert {"model/_lm_kernels.py", "search/_cube_kernels.py", "base/hashtable.py"} <= names
    assert "commands/cli.py" not in names


def test_a_stamped_kernel_names_its_source_file_as_numbas_own_locator_does():
    """numba's warning about a compile result it cannot cache (seen with NUMBA_OPT=0) names the locator's file."""
    from pbmt.model import _lm_kernels
    from pbmt.model._lm_kernels import cached_score_word

    assert cached_score_word._cache._impl.locator._py_file == _lm_kernels.__file__
