"""L1 penalties on some weights of a smooth convex objective, minimised by bounded L-BFGS.

PRO and APRO over thousands of sparse features need an L1 penalty beside their
L2 one: most sparse features fire in a handful of the sampled pairs, and an
L2 penalty alone gives every one of them a small non-zero weight fitted to
those few pairs (noise the decoder then searches with), where an L1 penalty
leaves a feature at exactly zero unless its summed evidence outweighs
``l1`` (Tibshirani, 1996; Tsuruoka, Tsujii & Ananiadou, 2009, for log-linear
models with millions of features). The dense features stay unpenalised by
L1: they are few, always present, and all relevant.

The L1 term is not differentiable at zero, so each penalised weight is split
into its positive and negative parts, ``w = p - n`` with ``p, n >= 0``, and
``f(w) + l1 * sum(p + n)`` is minimised over the bounded variables with
scipy's L-BFGS-B: at the optimum one of ``p``, ``n`` is zero and the penalty
equals ``l1 * |w|``. Without penalised weights it is L-BFGS-B from zero on
``f`` itself.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

Objective = Callable[[np.ndarray], tuple[float, np.ndarray]]


def minimize_l1(objective: Objective, n_weights: int, penalised: np.ndarray | None = None, l1: float = 0.0,
                tolerance: float = 1e-10, max_iterations: int = 1000):
    """Minimise ``objective(w) + l1 * |w[penalised]|_1`` from w = 0.

    objective: w (float64[n_weights]) -> (value, gradient float64[n_weights]), convex;
    penalised: bool[n_weights], the weights under the L1 penalty (None: none);
    l1 >= 0. Returns scipy's ``OptimizeResult`` with ``x`` float64[n_weights], the weights
    (exact zeros where the penalty wins), and ``fun`` the penalised objective.
    """
    from scipy.optimize import minimize  # imported here: scipy.optimize costs every pbmt verb 0.3 s at start-up

    options = {"maxiter": max_iterations, "ftol": tolerance, "gtol": tolerance}
    penalised = np.zeros(n_weights, dtype=bool) if penalised is None else np.asarray(penalised, dtype=bool)
    if l1 < 0:
        raise ValueError(f"l1 must not be negative, got {l1}")
    if l1 == 0 or not penalised.any():
        return minimize(objective, np.zeros(n_weights), jac=True, method="L-BFGS-B", options=options)
    split = np.flatnonzero(penalised)

    def weights(x: np.ndarray) -> np.ndarray:
        w = x[:n_weights].copy()
        w[split] -= x[n_weights:]
        return w

    def penalised_objective(x: np.ndarray) -> tuple[float, np.ndarray]:
        value, gradient = objective(weights(x))
        positive = gradient.copy()
        positive[split] += l1
        return value + l1 * (x[split].sum() + x[n_weights:].sum()), np.concatenate([positive, l1 - gradient[split]])

    bounds = [(0.0, None) if p else (None, None) for p in penalised] + [(0.0, None)] * len(split)
    result = minimize(penalised_objective, np.zeros(n_weights + len(split)), jac=True, method="L-BFGS-B",
                      bounds=bounds, options=options)
    result.x = weights(result.x)
    return result
