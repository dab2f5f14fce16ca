"""Numba's check for SciPy's BLAS at its first kernel, made without importing SciPy's linear algebra.

The first time a process loads or compiles a kernel, numba's CPU target imports its implementations
(``CPUContext.load_additional_registries``), among them ``numba.np.arraymath``, whose import calls
``numba.np.linalg.ensure_blas``: it imports ``scipy.linalg.cython_blas`` and so all of ``scipy.linalg`` and its
LAPACK wrappers, only to learn whether ``np.dot`` and friends can be compiled (``_HAVE_BLAS``). That import is
about 0.1 of the 0.9 CPU s of an empty ``pbmt translate``, and no pbmt kernel calls BLAS (``np.dot``, ``@``,
``np.linalg`` appear only in Python code, which numpy runs).

``install`` (``import pbmt`` calls it) has that one check ask whether the module exists (SciPy's package folder
holds ``cython_blas``), not import it; the answer is the same wherever SciPy is installed whole. Numba's other
callers of ``ensure_blas`` (compiling a call of ``np.dot``, ``np.linalg.*``) keep the real one: a kernel that
calls BLAS imports it then, and numba's check of the Fortran integer width runs there. There is no public API
for this; it wraps a method of numba's, as ``pbmt.base.numba_linking`` does. A numba without that method or
module keeps its own.
"""

from __future__ import annotations

import importlib.util
import pkgutil
import sys

from numba.core import cpu

_CONTEXT = cpu.CPUContext
_NUMBAS = _CONTEXT.load_additional_registries


def scipy_blas_found() -> bool:
    """Whether ``scipy.linalg.cython_blas`` can be imported as far as the files say, without importing
    ``scipy.linalg`` (``scipy`` itself is imported: numba's own import checks its version)."""
    try:
        spec = importlib.util.find_spec("scipy.linalg")
    except (ImportError, ValueError):
        return False
    folders = spec.submodule_search_locations if spec is not None else None
    return bool(folders) and any(m.name == "cython_blas" for m in pkgutil.iter_modules(folders))


def _found_or_import_error() -> None:
    """``ensure_blas`` for arraymath's import: raises ImportError (numba's "no BLAS") unless the module exists."""
    if not scipy_blas_found():
        raise ImportError("scipy.linalg.cython_blas not found")


def _load_additional_registries(self):
    """Numba's method, with ``numba.np.arraymath`` imported under ``_found_or_import_error`` as its BLAS check
    (the first call imports it); numba's ``ensure_blas`` is back in both modules when it returns."""
    from numba.np import linalg

    ensure_blas = linalg.ensure_blas
    linalg.ensure_blas = _found_or_import_error
    try:
        _NUMBAS(self)
    finally:
        linalg.ensure_blas = ensure_blas
        arraymath = sys.modules.get("numba.np.arraymath")
        if arraymath is not None:
            arraymath.ensure_blas = ensure_blas
            _CONTEXT.load_additional_registries = _NUMBAS  # checked: later calls need nothing of this


def install() -> bool:
    """Have numba's check at the first kernel ask whether SciPy's BLAS exists rather than import it (once a
    process, before any kernel is loaded; ``import pbmt`` calls it). Returns whether it will: not once numba
    has checked (either way)."""
    if "numba.np.arraymath" in sys.modules:
        return False
    _CONTEXT.load_additional_registries = _load_additional_registries
    return True
