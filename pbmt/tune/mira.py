"""Batch MIRA (Cherry & Foster, 2012), as Moses's ``kbmira`` runs it, on an n-best pool.

Online passive-aggressive updates over the pool's sentences, ``epochs``
passes (kbmira's J = 60) in a fresh random order each. For each sentence,
under the current weights w, with ``b(e)`` the sentence BLEU of candidate e
against a pseudo-document (below):

- hope e+ = argmax w·h(e) + b(e), fear e- = argmax w·h(e) - b(e) (the
  first of equals, as kbmira);
- if they differ and b(e+) > b(e-): loss = b(e+) - b(e-) - w·(h(e+) - h(e-)),
  and when it is positive ``w += eta (h(e+) - h(e-))`` with
  ``eta = min(C, loss / ||h(e+) - h(e-)||^2)``, C = 0.01 (kbmira's);
- then the pseudo-document decays by 0.999 and takes e+'s statistics
  (``background="model"``: the model's 1-best's, kbmira's ``--model-bg``).

The sentence BLEU is Chiang et al. (2008)'s: BLEU of the candidate's
statistics plus the pseudo-document's, unsmoothed, times their summed
reference length (``_mira_kernels.background_bleu``); the pseudo-document
starts at 1 in every count, as kbmira's. It is a gain of its own, not one of
``pbmt.tune.gains``: it changes with every update.

After each epoch the weights are averaged as kbmira averages them: the
starting weights plus the weights after each update so far, divided by the
number of updates; the pool's corpus BLEU under the average is measured, and
the average of the epoch where it was highest (the earliest of equals) is
MIRA's answer w'. ``weights_`` is w' interpolated with the starting
weights w0 by direction: ``||w0||_1 (Psi l1(w') + (1 - Psi) l1(w0))``,
``l1`` dividing by the L1 norm of the dense weights (from all-zero w0, w'
whole), Psi (``interpolation``) 0.3 by default; Psi = 1 returns w' as it
is, kbmira's answer. The norms leave the sparse weights out because their
features are counts of about 1 where the dense ones are log-probabilities
and lengths of tens: a weight of 0.05 on each of 20,000 sparse features
makes an L1 norm of 1,000 beside the dense weights' 4 (MIRA's answer on the
first pool of all of dev with every family), and a step by the norm of all
weights would shrink the dense weights by 1 - Psi and leave the sparse ones
near zero, a step that moves nothing. Why: on the pool of one decode, w' fits that pool and can decode far
outside it (kbmira's first answer on the shared dev list of the untuned
weights puts a negative weight on the LM); a step part of the way there,
PRO's damping (Hopkins & May), stays where the pool can judge it. In
``pbmt tune``'s loop on all of the shared dev set, Psi = 0.3 kept every
decode above the untuned weights' dev BLEU over three seeds, where Psi = 1's
second decode fell 7 to 9 BLEU below it (``docs/sparse-features.md``).
The result keeps w0's L1 norm, so that C's reach against the weights is the
same at every iteration of the loop. Fixed features (default ``UnknownWordPenalty0``) take no part
and keep their weights. The scale of the weights is MIRA's own (not
normalised): the hope and fear trade model score against BLEU in
reference words.

Features may be dense (float64[n_cand, n_features]) or a
``scipy.sparse`` matrix: both run as CSR rows in the kernels
(``pbmt.tune._mira_kernels``), so the cost of an update is the number of
features the hope and fear have, not the number of features.
"""

from __future__ import annotations

import numpy as np

from pbmt.metrics.bleu import corpus_bleu
from pbmt.tune._mira_kernels import averaged, epoch, scores
from pbmt.tune.options import DEDUP_OPTION, INTERPOLATION, ITERATIONS, KEEP, SPARSE_MIN_SENTENCES
from pbmt.tune.pool import argmax_by_sentence, weight_columns
from pbmt.tune.tuner import Group, Option, Tuner, TuningData, check_min_sentences, toward

BACKGROUNDS = ("hope", "model")
PSI = 0.3  # the default share of MIRA's answer; 1 is kbmira's (module docstring says why)
GROUP = Group("MIRA", "batch MIRA (Cherry & Foster, 2012) as Moses's kbmira: passes over the pool's sentences, each "
              "a clipped update towards the hope (high model score and sentence BLEU) and away from the fear (high "
              "model score, low BLEU); the averaged weights of the pass with the best pool BLEU")


def csr_rows(features) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(indptr int64[n+1], indices int64[nnz], values float64[nnz]) of a dense float64[n, d] array or a
    ``scipy.sparse`` matrix of n candidates' features."""
    if hasattr(features, "tocsr"):
        csr = features.tocsr()
        return (csr.indptr.astype(np.int64), csr.indices.astype(np.int64),
                np.asarray(csr.data, dtype=np.float64))
    dense = np.ascontiguousarray(features, dtype=np.float64)
    n, d = dense.shape
    return (np.arange(0, n * d + 1, max(d, 1), dtype=np.int64)[:n + 1] if d else np.zeros(n + 1, np.int64),
            np.tile(np.arange(d, dtype=np.int64), n), dense.ravel())


class Mira(Tuner):
    """Batch MIRA, a tuner (``pbmt.tune.tuner``) of the decode-optimise loop, over its ``pool`` (module
    docstring).

    c: the step cap C; epochs: passes over the pool (J); decay: of the
    pseudo-document per update; background: whose statistics join the
    pseudo-document, the "hope" (kbmira's default) or the "model"'s 1-best;
    interpolation: Psi in [0, 1], the share of MIRA's answer in the weights
    returned (module docstring; 1: kbmira's answer as it is); fixed: feature
    names whose weights stay as given; min_sentences: the sparse features
    tuned are those present in at least that many of the pool's sentences
    (``pbmt.tune.pool.tuned_weights``), the others keep their weights.

    The weights tuned are those ``initial_weights`` covers (``pbmt.tune.pool.checked_weights``): the dense
    ones alone, or dense then sparse (no penalty: an update moves only the features where hope and fear
    differ, and the averaging keeps a feature seen once small). After ``fit``: ``weights_`` (the kept epoch's
    averaged weights, interpolated), ``score_`` the pool's corpus BLEU in [0, 1] under them,
    ``kept_epoch_`` (1-based), ``history_`` a list of (updates, mean loss per
    sentence, pool BLEU in [0, 1]) per epoch. Deterministic given the random
    generator.
    """

    name, title, loop, reads, sparse = "mira", "batch MIRA", "decode-optimise", ("pool",), True
    options = (ITERATIONS, KEEP, DEDUP_OPTION, INTERPOLATION,
               Option(("--mira-c",), "MIRA: the cap C of each update's step (kbmira's -C)", "c", GROUP, type=float,
                      dest="mira_c"),
               Option(("--mira-epochs",), "MIRA: passes over the pool (kbmira's -J)", "epochs", GROUP, type=int,
                      dest="mira_epochs"),
               Option(("--mira-decay",), "MIRA: decay of the BLEU pseudo-document per update (kbmira's -D)", "decay",
                      GROUP, type=float, dest="mira_decay"),
               Option(("--mira-background",), "MIRA: whose statistics join the BLEU pseudo-document: the hope's or "
                      "the model's 1-best's (kbmira's --model-bg)", "background", GROUP, choices=BACKGROUNDS,
                      dest="mira_background"),
               SPARSE_MIN_SENTENCES)

    def __init__(self, c: float = 0.01, epochs: int = 60, decay: float = 0.999, background: str = "hope",
                 interpolation: float = PSI, fixed: tuple[str, ...] = ("UnknownWordPenalty0",),
                 min_sentences: int = 1):
        if not c > 0 or epochs < 1 or not 0.0 < decay <= 1.0:
            raise ValueError(f"need c > 0, epochs >= 1 and decay in (0, 1]; got {c}, {epochs} and {decay}")
        if not 0.0 <= interpolation <= 1.0:
            raise ValueError(f"interpolation must be in [0, 1], got {interpolation}")
        if background not in BACKGROUNDS:
            raise ValueError(f"background must be one of {BACKGROUNDS}, got {background!r}")
        check_min_sentences(min_sentences)
        self.c = c
        self.epochs = epochs
        self.decay = decay
        self.background = background
        self.interpolation = interpolation
        self.fixed = fixed
        self.min_sentences = min_sentences

    def fit(self, data: TuningData, initial_weights: np.ndarray, rng: np.random.Generator) -> "Mira":
        """Tune on ``data.pool`` from ``initial_weights`` (float64[layout.size] or float64[n_weights], pool
        column order)."""
        pool, initial, free = self.checked_start(data, initial_weights)
        rows = csr_rows(weight_columns(pool, free))
        stats = np.ascontiguousarray(pool.stats, dtype=np.float64)
        weights = initial[free].copy()
        size = len(weights)
        average = (weights.copy(), np.zeros(size, np.int64), np.zeros(1, np.int64))
        work = (np.zeros(size), np.zeros(size, np.int64), np.zeros(size, dtype=np.bool_))
        background = np.ones(10)
        self.history_, self.score_, kept = [], -np.inf, weights
        for number in range(self.epochs):
            updates, loss = epoch(rng.permutation(pool.n_sentences).astype(np.int64), pool.offsets, rows, stats,
                                  weights, average, background, self.c, self.decay, self.background == "model", work)
            mean = averaged(weights, average[0], average[1], int(average[2][0]))
            bleu = corpus_bleu(pool.stats[argmax_by_sentence(scores(*rows, mean), pool.offsets)])
            self.history_.append((int(updates), float(loss) / pool.n_sentences, bleu))
            if bleu > self.score_:
                self.score_, kept, self.kept_epoch_ = bleu, mean, number + 1
        dense = np.flatnonzero(free) < pool.layout.size  # the tuned weights that are dense ones
        norm = np.abs(initial[free][dense]).sum()
        if self.interpolation < 1.0 and norm > 0:  # zero starting weights have no direction to keep
            kept = norm * toward(kept, initial[free], self.interpolation, dense)
            self.score_ = corpus_bleu(pool.stats[argmax_by_sentence(scores(*rows, kept), pool.offsets)])
        self.weights_ = initial.copy()
        self.weights_[free] = kept
        return self
