"""``best_first`` orders indices as ``np.argsort(-values, kind="mergesort")`` does: highest first, NaN last, ties
in index order."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from numba import njit

from pbmt.search._array_kernels import best_first


@njit
def _best_first(values):
    return best_first(values)


VALUES = st.lists(st.sampled_from([0.0, -0.0, 1.5, -2.0, 3.0, np.inf, -np.inf, np.nan, 1e-300]) | st.floats(-5, 5),
                  max_size=120)


@settings(max_examples=300, deadline=None)
@given(VALUES)
def test_best_first_is_a_stable_argsort_of_the_negated_values(values):
    values = np.array(values, dtype=np.float64)
    assert _best_first(values).tolist() == np.argsort(-values, kind="mergesort").tolist()


def test_best_first_over_many_runs():
    rng = np.random.default_rng(1)
    for n in (0, 1, 15, 16, 17, 31, 32, 33, 100, 1000, 5001):
        values = rng.integers(0, 7, n).astype(np.float64)  # many ties
        assert _best_first(values).tolist() == np.argsort(-values, kind="mergesort").tolist()
