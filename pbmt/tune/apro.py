"""APRO (Dreyer & Dong, 2015): PRO with all pairs and no sampling.

Every preference pair of every sentence, ``(i, j)`` with BLEU+1 ``b_i > b_j``
(equal gains make no pair), enters a ranking SVM with squared hinge loss and
L2 regularisation (Airola et al., 2011; Lee & Lin, 2014):

    f(w) = 1/2 ||w||^2 + C * sum_s sum_{(i, j) in P_s} max(0, 1 - w.(x_i - x_j))^2

The loss and its gradient are computed without enumerating the pairs, in
O(k log k) per sentence of k candidates (``pbmt.tune._apro_kernels``), and
f is minimised by scipy's L-BFGS from w = 0; f is strictly convex, so the
result is deterministic and independent of the start. As in PRO's step 4
the new weights may interpolate with the previous ones, ``w_t = Ψ w' + (1 - Ψ)
w_{t-1}``. Dreyer & Dong run APRO with Ψ in {0.1, 0.5, 1} (Hopkins & May's
0.1 among them) and find it converges faster at 1; the default is 1, no
interpolation: APRO's solution is exact and needs no sampling noise
damped. C = 1 is pbmt's default (the excerpt of the paper does not give its
value). Fixed features (default ``UnknownWordPenalty0``) take no part and
keep their weights. The gain (``pbmt.tune.gains``) is by
default BLEU+1 with the unclipped brevity penalty, as for PRO
(``pbmt.tune.pro``); ``gain="bleu+1"`` is the paper's. docs/tuning-results.md
compares the defaults with the paper's gain and Ψ = 0.1.
"""

from __future__ import annotations

import numpy as np

from pbmt.tune._apro_kernels import squared_hinge_ranking
from pbmt.tune.gains import gain_of
from pbmt.tune.options import (DEDUP_OPTION, GAIN, INTERPOLATION, ITERATIONS, KEEP, RANKING, SPARSE_L1,
                               SPARSE_MIN_SENTENCES)
from pbmt.tune.pool import weight_columns
from pbmt.tune.regularisation import minimize_l1
from pbmt.tune.tuner import Option, Tuner, TuningData, check_min_sentences


def ranking_objective(weights: np.ndarray, features, gains: np.ndarray, offsets: np.ndarray,
                      c: float = 1.0) -> tuple[float, np.ndarray]:
    """APRO's objective f(w) (module docstring) and its gradient, float64[n_features].

    weights: float64[n_features]; features: float64[n_cand, n_features] (numpy or ``scipy.sparse``);
    gains: float64[n_cand] (sentence gains, BLEU+1 in [0, 1]); offsets: int64[n_sent+1] (CSR
    by sentence). O(n_cand * (n_features + log k)) time.
    """
    loss, coef = squared_hinge_ranking(features @ weights, np.asarray(gains, dtype=np.float64),
                                       np.asarray(offsets, dtype=np.int64))
    return 0.5 * (weights @ weights) + c * loss, weights + c * (features.T @ coef)


class Apro(Tuner):
    """APRO, a tuner (``pbmt.tune.tuner``) of the decode-optimise loop, over its ``pool`` (module docstring).

    c: weight of the summed squared hinge losses against 1/2 ||w||^2;
    l1: an L1 penalty on the sparse features' weights (``pbmt.tune.regularisation``
    says why; the dense ones have none);
    interpolation: Ψ, weight of the new solution against the previous weights
    (1: the solution alone); gain: the sentence gain that orders the pairs (the
    name of a ``pbmt.tune.gains`` gain of level "sentence"); fixed: feature names whose weights stay as given;
    min_sentences: the sparse features tuned are those present in at least that many of the pool's sentences
    (``pbmt.tune.pool.tuned_weights``), the others keep their weights;
    tolerance and max_iterations: L-BFGS's stopping rule (relative change of f
    and projected gradient; iterations).

    The weights tuned are those ``initial_weights`` covers (``pbmt.tune.pool.checked_weights``):
    the dense ones alone, or dense then sparse. After ``fit``: ``weights_`` (the same length),
    ``solution_weights_`` (w', 0 in fixed columns), ``objective_`` f(w') (with the L1 term),
    ``n_iterations_``. Uses no randomness (``rng`` is accepted for the loop's interface and left alone).
    """

    name, title, loop, reads, gain_level = "apro", "APRO", "decode-optimise", ("pool",), "sentence"
    sparse = True
    options = (ITERATIONS, KEEP, DEDUP_OPTION,
               Option(("--apro-c",), "APRO: weight of the summed squared hinge losses against 1/2 ||w||^2", "c",
                      RANKING, type=float, dest="apro_c"),
               GAIN, INTERPOLATION, SPARSE_L1, SPARSE_MIN_SENTENCES)

    def __init__(self, c: float = 1.0, interpolation: float = 1.0, gain: str = "bleu+1-unclipped",
                 fixed: tuple[str, ...] = ("UnknownWordPenalty0",), tolerance: float = 1e-10,
                 max_iterations: int = 2000, l1: float = 1.0, min_sentences: int = 1):
        gain_of(gain, self.gain_level)
        check_min_sentences(min_sentences)
        self.c = c
        self.l1 = l1
        self.interpolation = interpolation
        self.gain = gain
        self.fixed = fixed
        self.tolerance = tolerance
        self.max_iterations = max_iterations
        self.min_sentences = min_sentences

    def fit(self, data: TuningData, initial_weights: np.ndarray, rng: np.random.Generator | None = None) -> "Apro":
        """Tune on ``data.pool`` from ``initial_weights`` (float64[layout.size] or float64[n_weights], pool
        column order)."""
        pool, initial, free = self.checked_start(data, initial_weights)
        penalised = np.arange(len(initial))[free] >= pool.layout.size
        return self.fit_gains(weight_columns(pool, free), gain_of(self.gain, "sentence").score(pool.stats),
                              pool.offsets, initial, free, penalised)

    def fit_gains(self, columns, gains: np.ndarray, offsets: np.ndarray, initial: np.ndarray, free: np.ndarray,
                  penalised: np.ndarray) -> "Apro":
        """``fit`` on given candidates: ``columns`` float64[n_cand, k] (numpy or ``scipy.sparse``), the
        values of the ``free`` weights (bool[n], k of them true) of ``initial`` (float64[n]); ``gains``
        float64[n_cand] and ``offsets`` int64[n_sent+1] (CSR by sentence); ``penalised`` bool[k], the
        free columns under the L1 penalty."""
        if not 0.0 <= self.interpolation <= 1.0:
            raise ValueError(f"interpolation must be in [0, 1], got {self.interpolation}")
        if self.c <= 0:
            raise ValueError(f"c must be positive, got {self.c}")
        if isinstance(columns, np.ndarray):
            columns = np.ascontiguousarray(columns)
        offsets = np.asarray(offsets, dtype=np.int64)
        result = minimize_l1(lambda w: ranking_objective(w, columns, gains, offsets, self.c), columns.shape[1],
                             penalised, self.l1, self.tolerance, self.max_iterations)
        self.solution_weights_ = np.zeros(len(initial))
        self.solution_weights_[free] = result.x
        self.objective_ = float(result.fun)
        self.n_iterations_ = int(result.nit)
        self.weights_ = initial.copy()
        self.weights_[free] = self.interpolation * result.x + (1.0 - self.interpolation) * initial[free]
        return self
