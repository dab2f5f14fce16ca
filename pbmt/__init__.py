"""pbmt: phrase-based statistical machine translation.

Moses-format models (phrase tables, ARPA LMs, moses.ini, n-best lists) load
unchanged; numba kernels do the scoring and search.
"""

__version__ = "0.1.0"
