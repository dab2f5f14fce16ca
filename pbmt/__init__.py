"""pbmt: phrase-based statistical machine translation.

Moses-format models (phrase tables, ARPA LMs, moses.ini, n-best lists) load
unchanged; numba kernels do the scoring and search. The Python API
(``docs/python-api.md``): ``pbmt.load`` a model once, then translate, explain
and evaluate with it. Its names come from ``pbmt.api`` when first used, so
that importing one of pbmt's modules does not load them all. Every import of pbmt
first stamps numba's cache of its kernels with their sources and makes its saves safe for
processes compiling at once (``pbmt.base.numba_cache``), and has numba compile an overloaded function
such as ``np.empty`` once per signature rather than once per calling kernel's flags
(``pbmt.base.numba_overloads``), a search kernel without a second optimisation of the kernels it links in
(``pbmt.base.numba_linking``), and numba's first kernel without importing SciPy's linear algebra
(``pbmt.base.numba_blas``).
"""

from pbmt.base import numba_blas as _numba_blas, numba_cache as _numba_cache, numba_linking as _numba_linking
from pbmt.base import numba_overloads as _numba_overloads

_numba_cache.install()
_numba_overloads.install()
_numba_linking.install()
_numba_blas.install()
del _numba_blas, _numba_cache, _numba_linking, _numba_overloads

__version__ = "0.1.0"
__all__ = ["load", "evaluate", "Model", "Translation", "NBestTranslation", "Explanation", "Bleu", "Tuning",
           "DEFAULT_MODEL", "__version__"]


def __getattr__(name: str):
    if name in __all__:
        from pbmt import api

        return getattr(api, name)
    raise AttributeError(f"module 'pbmt' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
