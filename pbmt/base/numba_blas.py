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
_NUMBAS = getattr(_CONTEXT, "load_additional_registries", None)


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
    (the first call imports it); numba's ``ensure_blas`` is back in both modules and numba's method in its class
    when it returns, so that a numba whose first call imports arraymath elsewhere, or not at all, or has no
    ``ensure_blas``, runs as it would without pbmt."""
    from numba.np import linalg

    _CONTEXT.load_additional_registries = _NUMBAS  # one call is the first kernel's: later ones are numba's
    ensure_blas = getattr(linalg, "ensure_blas", None)
    if ensure_blas is None:
        _NUMBAS(self)
        return
    linalg.ensure_blas = _found_or_import_error
    try:
        _NUMBAS(self)
    finally:
        linalg.ensure_blas = ensure_blas
        arraymath = sys.modules.get("numba.np.arraymath")
        if getattr(arraymath, "ensure_blas", None) is _found_or_import_error:
            arraymath.ensure_blas = ensure_blas


def install() -> bool:
    """Have numba's check at the first kernel ask whether SciPy's BLAS exists rather than import it (once a
    process, before any kernel is loaded; ``import pbmt`` calls it). Returns whether it will: not once numba
    has checked (either way), nor on a numba without the method this wraps."""
    if _NUMBAS is None or "numba.np.arraymath" in sys.modules:
        return False
    _CONTEXT.load_additional_registries = _load_additional_registries
    return True
