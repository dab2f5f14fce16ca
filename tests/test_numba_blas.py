"""With pbmt imported (``pbmt.base.numba_blas``), numba's first kernel leaves SciPy's linear algebra unimported and
numba's answer to "is there a BLAS?" is what importing it says; a kernel calling BLAS still compiles and computes
numpy's result."""

from __future__ import annotations

import json
import subprocess
import sys

FIRST_KERNEL = """
import json, sys
import numpy as np
import pbmt
from pbmt.base import numba_blas
from pbmt.base.byte_text import write_int

out = np.zeros(8, np.uint8)
write_int(out, 0, 42)  # a pbmt kernel: loading or compiling it loads numba's implementations
unimported = "scipy.linalg" not in sys.modules
from numba.np import arraymath, linalg
try:
    import scipy.linalg.cython_blas
    importable = True
except ImportError:
    importable = False
print(json.dumps({"unimported": unimported, "have_blas": arraymath._HAVE_BLAS, "importable": importable,
                  "numbas_check_back": arraymath.ensure_blas is linalg.ensure_blas
                  and linalg.ensure_blas.__module__ == "numba.np.linalg",
                  "installed_again": numba_blas.install(),
                  "numbas_method_back": numba_blas._CONTEXT.load_additional_registries is numba_blas._NUMBAS}))
"""

DOT = """
import numpy as np
import pbmt
from numba import njit


@njit
def dot(a, b):
    return np.dot(a, b), a @ b


a, b = np.linspace(-1, 2, 12).reshape(3, 4), np.linspace(3, 5, 4)
got = dot(a, b)
np.testing.assert_allclose(got[0], a.dot(b))
np.testing.assert_allclose(got[1], a.dot(b))
print("ok")
"""


def _python(code: str) -> str:
    return subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout


def test_the_first_kernel_checks_for_blas_without_importing_it():
    found = json.loads(_python(FIRST_KERNEL))
    assert found["unimported"]
    assert found["have_blas"] == found["importable"]
    assert found["numbas_check_back"]
    assert not found["installed_again"] and found["numbas_method_back"]  # checked: nothing more to change


def test_a_kernel_calling_blas_computes_numpys_result():
    assert _python(DOT).strip() == "ok"


def test_the_files_answer_as_the_import_does():
    from pbmt.base.numba_blas import scipy_blas_found

    try:
        import scipy.linalg.cython_blas  # noqa: F401
        importable = True
    except ImportError:
        importable = False
    assert scipy_blas_found() == importable


def test_numbas_own_method_is_back_after_its_first_call_whatever_it_found(monkeypatch):
    """A numba whose first call imports no arraymath, or whose linalg has no ``ensure_blas``, runs as without
    pbmt: numba's method called once through the wrapper, then in its class, and its ``ensure_blas`` untouched."""
    from numba.np import linalg

    from pbmt.base import numba_blas

    numbas_check = linalg.ensure_blas
    for without_check in (False, True):
        calls = []
        monkeypatch.setattr(numba_blas, "_NUMBAS", lambda context: calls.append(getattr(linalg, "ensure_blas", None)))
        monkeypatch.setattr(numba_blas._CONTEXT, "load_additional_registries", numba_blas._load_additional_registries)
        if without_check:
            monkeypatch.delattr(linalg, "ensure_blas")
        numba_blas._CONTEXT.load_additional_registries(None)
        assert numba_blas._CONTEXT.load_additional_registries is numba_blas._NUMBAS
        assert len(calls) == 1 and (calls[0] is None) == without_check
        monkeypatch.undo()
        assert linalg.ensure_blas is numbas_check
