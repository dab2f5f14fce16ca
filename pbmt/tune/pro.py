"""Pairwise ranking optimisation, PRO (Hopkins & May, 2011), on an n-best pool.

Tuning as ranking: a weight vector should score the better of two candidate
translations of a sentence higher, which is a linear binary classification
of their feature difference. Per sentence, the sampler of the paper's Fig. 4
draws Γ = 5000 candidate pairs uniformly (with replacement) from the
sentence's candidates, accepts a pair when its gain difference is at least
0.05 (the step function α of § 4.2), and keeps the Ξ = 50 accepted pairs of
largest difference. Each kept pair gives two training examples, ``x_i - x_j``
labelled +1 and ``x_j - x_i`` labelled -1 (``b_i > b_j``). A logistic
regression without bias learns w' from them, and the new weights interpolate
with the previous ones: ``w_t = Ψ w' + (1 - Ψ) w_{t-1}``, Ψ = 0.1 (§ 5.4.3).

The gain (``pbmt.tune.gains``) is by default BLEU+1 with the
unclipped brevity penalty, Nakov et al. (2012)'s cure for the short translations
PRO learns from the paper's BLEU+1 (``gain="bleu+1"``,
``pbmt.tune.gains.GAINS``), which keeps the output as short as the untuned
weights' (docs/tuning-results.md).
The paper does not print the scale of its 0.05 threshold; it is read here on
the [0, 1] scale, five BLEU+1 points: on the percent scale it would accept
almost every pair of different gains, and Dreyer & Dong (2015), who
re-run PRO with α in {0.03, 0.05}, use the same fractional values.

The classifier is pbmt's own L2-regularised logistic regression solved by
scipy's L-BFGS (the paper ran MegaM with its defaults); the penalty
``l2 / 2 * ||w||^2`` on the summed log-losses equals scikit-learn's
``LogisticRegression(C=1 / l2, fit_intercept=False)``. Fixed features
(default ``UnknownWordPenalty0``, which Moses never tunes) take no part and
keep their weights, as in ``pbmt.tune.mert``.
"""

from __future__ import annotations

import numpy as np

from pbmt.tune.gains import gain_of
from pbmt.tune.options import (DEDUP_OPTION, GAIN, INTERPOLATION, ITERATIONS, KEEP, RANKING, SPARSE_L1,
                               SPARSE_MIN_SENTENCES)
from pbmt.tune.pool import weight_columns
from pbmt.tune.regularisation import minimize_l1
from pbmt.tune.tuner import Option, Tuner, TuningData, check_min_sentences

# sentences whose pairs are drawn at once (bounds the memory of the draws)
_BLOCK = 256


def sample_pairs(gains: np.ndarray, offsets: np.ndarray, rng: np.random.Generator, samples: int = 5000,
                 keep: int = 50, min_difference: float = 0.05) -> tuple[np.ndarray, np.ndarray]:
    """PRO's sampler (Hopkins & May, 2011, Fig. 4) over every sentence.

    gains: float64[n_cand] (sentence gains, BLEU+1 in [0, 1]); offsets: int64[n_sent+1] (CSR
    by sentence, none empty). Per sentence: ``samples`` (Γ) pairs drawn uniformly with
    replacement from its candidates x its candidates; a pair is accepted when
    its gain difference is at least ``min_difference`` (α) and not zero
    (equal gains have no label); the ``keep`` (Ξ) accepted pairs of largest
    difference are kept (on equal differences, the earlier drawn). Returns
    ``(better, worse)``: int64[m] candidate indices into ``gains`` with
    ``gains[better] > gains[worse]``, sentence by sentence, each sentence's
    pairs in decreasing difference.
    """
    gains = np.asarray(gains, dtype=np.float64)
    offsets = np.asarray(offsets, dtype=np.int64)
    if samples < 0 or keep < 0:
        raise ValueError("samples and keep must not be negative")
    if np.any(np.diff(offsets) == 0):
        raise ValueError("every sentence needs a candidate")
    better, worse = [], []
    sizes = np.diff(offsets)
    for block in range(0, len(sizes), _BLOCK):
        starts = offsets[:-1][block:block + _BLOCK]
        size = sizes[block:block + _BLOCK]
        drawn = starts[:, None, None] + rng.integers(0, size[:, None, None], size=(len(size), samples, 2))
        first, second = drawn[..., 0], drawn[..., 1]
        difference = np.abs(gains[first] - gains[second])
        accepted = (difference >= min_difference) & (difference > 0)
        order = np.argsort(np.where(accepted, -difference, np.inf), axis=1, kind="stable")[:, :keep]
        taken = np.take_along_axis(accepted, order, axis=1)
        first = np.take_along_axis(first, order, axis=1)[taken]
        second = np.take_along_axis(second, order, axis=1)[taken]
        higher = gains[first] > gains[second]
        better.append(np.where(higher, first, second))
        worse.append(np.where(higher, second, first))
    if not better:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    return np.concatenate(better).astype(np.int64), np.concatenate(worse).astype(np.int64)


def logistic_regression(examples, labels: np.ndarray, l2: float = 1.0, tolerance: float = 1e-10,
                        max_iterations: int = 1000, l1: float = 0.0, penalised: np.ndarray | None = None) -> np.ndarray:
    """Weights float64[n_features] of a logistic regression without bias.

    examples: float64[n, n_features], a numpy array or a ``scipy.sparse`` matrix; labels: float64[n]
    in {-1, +1}. Minimises ``sum log(1 + exp(-y * w.x)) + l2 / 2 * ||w||^2 + l1 * |w[penalised]|_1``
    (natural log) with L-BFGS from w = 0 (``pbmt.tune.regularisation``: the L1 term on the columns
    ``penalised``, bool[n_features], only); ``l2`` > 0 makes the problem strictly convex, so the
    result does not depend on the start.
    """
    from scipy.special import expit

    if isinstance(examples, np.ndarray):
        examples = np.ascontiguousarray(examples, dtype=np.float64)
    labels = np.asarray(labels, dtype=np.float64)

    def objective(w):
        margins = labels * (examples @ w)
        loss = np.logaddexp(0.0, -margins).sum() + 0.5 * l2 * (w @ w)
        return loss, -(examples.T @ (labels * expit(-margins))) + l2 * w

    return minimize_l1(objective, examples.shape[1], penalised, l1, tolerance, max_iterations).x


class Pro(Tuner):
    """PRO, a tuner (``pbmt.tune.tuner``) of the decode-optimise loop, over its ``pool`` (module docstring).

    samples: Γ, pairs drawn per sentence; keep: Ξ, pairs kept per sentence;
    min_difference: α's step, the least BLEU+1 difference (in [0, 1]) of an
    accepted pair; interpolation: Ψ, weight of the classifier's weights
    against the previous ones (1: the classifier's alone); l2: the
    classifier's L2 penalty; l1: its L1 penalty on the sparse features' weights
    (``pbmt.tune.regularisation`` says why; the dense ones have none); gain: the sentence gain that ranks a
    pair (the name of a ``pbmt.tune.gains`` gain of level "sentence"); fixed: feature names whose weights
    stay as given; min_sentences: the sparse features tuned are those present in at least that many of the
    pool's sentences (``pbmt.tune.pool.tuned_weights``), the others keep their weights.

    The weights tuned are those ``initial_weights`` covers (``pbmt.tune.pool.checked_weights``):
    the dense ones alone, or dense then sparse. After ``fit``: ``weights_`` (the same length),
    ``classifier_weights_`` (w', 0 in fixed columns), ``n_pairs_`` the pairs
    kept (each gives two examples). With no acceptable pair the weights stay.
    Deterministic given the random generator.
    """

    name, title, loop, reads, gain_level = "pro", "PRO", "decode-optimise", ("pool",), "sentence"
    sparse = True
    options = (ITERATIONS, KEEP, DEDUP_OPTION,
               Option(("--pro-samples",), "PRO: candidate pairs drawn per sentence (Gamma)", "samples", RANKING,
                      type=int, dest="pro_samples"),
               Option(("--pro-keep",), "PRO: pairs kept per sentence, those of largest gain difference (Xi)", "keep",
                      RANKING, type=int, dest="pro_keep"),
               Option(("--pro-min-difference",), "PRO: least gain difference (BLEU+1 in [0, 1]) of an accepted pair "
                      "(alpha's step)", "min_difference", RANKING, type=float, dest="pro_min_difference"),
               GAIN, INTERPOLATION, SPARSE_L1, SPARSE_MIN_SENTENCES)

    def __init__(self, samples: int = 5000, keep: int = 50, min_difference: float = 0.05,
                 interpolation: float = 0.1, l2: float = 1.0, gain: str = "bleu+1-unclipped",
                 fixed: tuple[str, ...] = ("UnknownWordPenalty0",), l1: float = 1.0, min_sentences: int = 1):
        gain_of(gain, self.gain_level)
        check_min_sentences(min_sentences)
        self.samples = samples
        self.keep = keep
        self.min_difference = min_difference
        self.interpolation = interpolation
        self.l2 = l2
        self.l1 = l1
        self.gain = gain
        self.fixed = fixed
        self.min_sentences = min_sentences

    def fit(self, data: TuningData, initial_weights: np.ndarray, rng: np.random.Generator) -> "Pro":
        """Tune on ``data.pool`` from ``initial_weights`` (float64[layout.size] or float64[n_weights], pool
        column order)."""
        pool, initial, free = self.checked_start(data, initial_weights)
        penalised = np.arange(len(initial))[free] >= pool.layout.size
        return self.fit_gains(weight_columns(pool, free), gain_of(self.gain, "sentence").score(pool.stats),
                              pool.offsets, initial, free, penalised, rng)

    def fit_gains(self, columns, gains: np.ndarray, offsets: np.ndarray, initial: np.ndarray, free: np.ndarray,
                  penalised: np.ndarray, rng: np.random.Generator) -> "Pro":
        """``fit`` on given candidates: ``columns`` float64[n_cand, k] (numpy or ``scipy.sparse``), the
        values of the ``free`` weights (bool[n], k of them true) of ``initial`` (float64[n]); ``gains``
        float64[n_cand] and ``offsets`` int64[n_sent+1] as ``sample_pairs`` takes them; ``penalised``
        bool[k], the free columns under the L1 penalty."""
        if not 0.0 <= self.interpolation <= 1.0:
            raise ValueError(f"interpolation must be in [0, 1], got {self.interpolation}")
        if self.l2 <= 0:
            raise ValueError(f"l2 must be positive, got {self.l2}")
        better, worse = sample_pairs(gains, offsets, rng, self.samples, self.keep, self.min_difference)
        self.n_pairs_ = len(better)
        self.classifier_weights_ = np.zeros(len(initial))
        self.weights_ = initial
        if self.n_pairs_ == 0:
            return self
        difference = columns[better] - columns[worse]
        if isinstance(difference, np.ndarray):
            examples = np.concatenate([difference, -difference])
        else:
            from scipy.sparse import vstack

            examples = vstack([difference, -difference], format="csr")
        labels = np.concatenate([np.ones(difference.shape[0]), -np.ones(difference.shape[0])])
        self.classifier_weights_[free] = logistic_regression(examples, labels, self.l2, l1=self.l1,
                                                             penalised=penalised)
        self.weights_ = initial.copy()
        self.weights_[free] = (self.interpolation * self.classifier_weights_[free]
                               + (1.0 - self.interpolation) * initial[free])
        return self
