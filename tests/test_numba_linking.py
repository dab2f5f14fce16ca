"""A kernel marked a driver (``pbmt.base.numba_linking``) is compiled without LLVM's module-wide passes over the
code it links in, and computes what its Python computes; other kernels, the kernels it calls among them, keep
numba's passes."""

import numba
import numpy as np

from pbmt.base import numba_linking


@numba.njit(no_cpython_wrapper=True, no_cfunc_wrapper=True)
def _inner(values, k):
    total = 0.0
    for i in range(values.shape[0]):
        total += values[i] * (i % k)
    return total


def _outer(values):
    out = np.empty(4)
    for k in range(1, 5):
        out[k - 1] = _inner(values, k)
    return out


def test_a_driver_skips_the_module_passes_and_computes_the_same(monkeypatch):
    assert numba_linking.install()  # as import pbmt has done: installing again changes nothing
    monkeypatch.setattr(numba_linking, "_DRIVERS", dict(numba_linking._DRIVERS))  # marked for this test only
    optimised = []
    numbas = numba_linking._NUMBAS
    monkeypatch.setattr(numba_linking, "_NUMBAS", lambda library: optimised.append(library.name) or numbas(library))
    values = np.linspace(-3.0, 7.0, 101)
    plain = numba.njit(_outer)(values)
    assert "_outer" in optimised and "_inner" in optimised
    optimised.clear()
    marked = numba_linking.driver(numba.njit(_outer))
    np.testing.assert_array_equal(marked(values), plain)
    np.testing.assert_array_equal(marked(values), [_inner.py_func(values, k) for k in range(1, 5)])
    assert "_outer" not in optimised and "_inner" not in optimised  # compiled already: linked in as it is


def test_a_kernel_named_as_a_driver_elsewhere_is_optimised(monkeypatch):
    optimised = []
    numbas = numba_linking._NUMBAS
    monkeypatch.setattr(numba_linking, "_NUMBAS", lambda library: optimised.append(library.name) or numbas(library))
    monkeypatch.setitem(numba_linking._DRIVERS, "_outer", "_ZN8elsewhere6_outer")  # a driver of another module
    numba.njit(_outer)(np.ones(3))
    assert "_outer" in optimised


def test_the_kernels_marked_are_the_cube_searchs_outer_ones():
    from pbmt.search import _cube_kernels

    assert numba_linking._DRIVERS == {name: f"_ZN4pbmt6search13_cube_kernels{len(name)}{name}"
                                      for name in ("cube_kernel", "new_cube_search", "_stack_room")}
    assert all(hasattr(_cube_kernels, name) for name in numba_linking._DRIVERS)


def test_a_library_without_numbas_final_module_is_no_driver(monkeypatch):
    """Another numba, whose code libraries keep their module under another name: a marked kernel keeps numba's
    passes rather than failing to compile."""
    from types import SimpleNamespace

    monkeypatch.setitem(numba_linking._DRIVERS, "_outer", "_ZN5tests17test_numba_linking6_outer")
    assert not numba_linking._is_driver(SimpleNamespace(name="_outer", other_module=None))
