"""With pbmt imported (``pbmt.base.numba_overloads``), an overloaded function called by kernels compiled with
different flags is compiled once per signature (numba alone: once per caller's flags), and an overload of pbmt's
declared ``inline="always"`` is inlined without being compiled first (numba alone compiles it)."""

from __future__ import annotations

import subprocess
import sys

from pbmt.base import numba_overloads

CALLERS = """
import sys
import numpy as np
from numba import njit
from numba.core import event
from numba.extending import overload

if sys.argv[1] == "pbmt":
    import pbmt

compiled = []


class Compiles(event.Listener):
    def on_start(self, ev):
        pass

    def on_end(self, ev):
        compiled.append(ev.data["dispatcher"].py_func.__qualname__)


event.register("numba:compile", Compiles())


@njit(nogil=True)
def released(n):
    return np.zeros((n, 3), np.uint16).shape[0]


@njit(no_cpython_wrapper=True, no_cfunc_wrapper=True)
def inner(n):
    return np.zeros((n, 3), np.uint16).shape[0]


@njit
def outer(n):
    return inner(n)


def twice(x):
    raise NotImplementedError


def _twice(x):
    def impl(x):
        return 2 * x

    return impl


_twice.__module__ = "pbmt.probe"  # as if declared in pbmt
overload(twice, inline="always")(_twice)


@njit
def uses(x):
    return twice(x) + 1


print(released(4), outer(5), sum(name.startswith("ol_np_zeros") for name in compiled), uses(20),
      sum(name.startswith("_twice") for name in compiled))
"""


def compiles(mode: str) -> list[int]:
    done = subprocess.run([sys.executable, "-c", CALLERS, mode], capture_output=True, text=True, check=True)
    return [int(x) for x in done.stdout.split()]


def test_an_overload_compiles_once_whatever_its_callers_flags_and_pbmts_inlined_ones_not_at_all():
    assert compiles("numba") == [4, 5, 2, 41, 1]  # numba alone: once for each caller's flags; the inlined one too
    assert compiles("pbmt") == [4, 5, 1, 41, 0]


def test_the_flags_an_implementation_inherits_are_read_from_numba():
    names = numba_overloads.inherited_flags()
    assert "nrt" in names and "error_model" in names and "fastmath" in names
    assert "release_gil" not in names and "no_cpython_wrapper" not in names
    assert numba_overloads.install()  # import pbmt installed it; a second call changes nothing
