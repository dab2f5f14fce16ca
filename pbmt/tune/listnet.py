"""ListNet: log-linear weights learned from whole n-best lists (Niehues et al., 2015).

Every dev sentence's candidate list is one training instance. For scores
``s`` of a list, the top-one probability of candidate ``j`` is
``P_s(j) = exp(s_j) / sum_k exp(s_k)`` (Eq. 1; Cao et al., 2007). The model
scores are ``z_j = w . x_j``; the reference scores are the candidates'
sentence gains **in percent** (in [0, 1] the reference distribution would be
nearly flat, Sec. 4.2). The loss of a list is the cross entropy
``L = -sum_j P_y(j) log P_z(j)`` (Eq. 2), whose gradient (Eq. 3) is
``sum_j (P_z(j) - P_y(j)) x_j``.

The gain (``pbmt.tune.gains``):

- ``"bleu+1"`` (the paper's): BLEU+1 (``pbmt.metrics.bleu.sentence_bleu_plus1``);
- ``"bleu+1-unclipped"`` (the default): BLEU+1 with Nakov et al. (2012)'s
  unclipped brevity penalty, ``exp(1 - r/c)`` also when ``c > r``. With
  plain BLEU+1 ListNet learns translations shorter than the references and
  corpus BLEU pays the brevity penalty; the unclipped penalty moves the
  length ratio to that of MERT (docs/rescoring.md).

The list items (``distinct``): an n-best list of a phrase-based decoder
holds each translation several times, once per segmentation (most entries
of a 100-best list repeat a translation above them). Both
distributions are over items, so a translation with k derivations would
weigh k times in the target and the model would be trained to spread its
probability evenly over derivations that BLEU cannot tell apart.
``distinct=True`` (the default) trains on each distinct translation of a
sentence once, its first entry (the decoder's best derivation of it);
``False`` (the paper's lists, which it does not say were made distinct)
trains on every entry. The dev BLEU that chooses the weights is measured on
all entries either way, as rescoring applies them.

Scores are kept in a range where ``exp`` is usable by one of two
normalisations (Sec. 4.1):

- ``"features"`` (the paper's default): every feature is mapped linearly to
  [-1, 1] with the training pool's per-feature minimum ``m`` and maximum
  ``M``, ``x' = 2 (x - m) / (M - m) - 1`` (Eq. 5); the same map applies to
  test lists (``FeatureScaling``). A constant feature maps to 0.
- ``"score"``: the model scores of each list are divided by the list's
  largest absolute score and multiplied by the target range ``r``
  (``score_range``; Eqs. 6-7). The gradient includes the derivative of that
  maximum (a subgradient where two candidates tie for it).

Neither changes which candidate wins: a feature map adds a constant per
feature (the same for every candidate) and scales its weight, a score map
divides a list by a positive number. So the learned weights are also given
in raw feature space (``weights_``: ``w_k = 2 w'_k / (M_k - m_k)``), where
``features @ weights_`` ranks as the normalised model does; that is what the
tuning loop and ``Pool.best`` use.

Training (Sec. 4.3): stochastic gradient descent on batches of
``batch_size`` (10) sentences drawn without replacement (a new permutation
each epoch), stepping by ``learning_rate / (1 + decay * t)`` (t: batches so
far; ``decay = 0``, the default, keeps the rate fixed) times the batch's
mean gradient. Training starts from the given initial weights (those of the
decoder, so step 0 is the baseline ranking) and runs ``max_batches``
(100,000, the paper's) batches, or ``epochs`` epochs if that ends first
(None: no epoch limit). Every ``eval_every`` batches (default: once per
epoch) and at the start and end, the pool's corpus BLEU of the 1-best is
measured; the weights with the best one are kept (the earliest on ties), as
the paper selects its model on the development data, so ListNet never ends
below its starting point on the training pool.

The learning rate: the paper chose it on the development data among rates
"around 1". With features mapped to [-1, 1] over the whole dev set, a
feature such as the LM varies far more between sentences than within a
list, so its gradient is small and at rate 1 the loss still falls after
100,000 batches; rate 10 reaches a higher dev BLEU (docs/rescoring.md) and
is the default. ``PRESETS["paper"]`` holds the paper's settings.

Each batch is a handful of numpy operations over the batch's candidates
(segment softmax over the CSR pool); there is no Python loop over sentences.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

import numpy as np
from tqdm import tqdm

from pbmt.base.csr import segment_softmax, take
from pbmt.tune.gains import gain_of
from pbmt.tune.options import DEDUP_OPTION, ITERATIONS, KEEP
from pbmt.tune.pool import Pool, argmax_by_sentence
from pbmt.tune.tuner import Tuner, TuningData

NORMALISATIONS = ("features", "score", "none")
# named sets of ``ListNet`` parameters (``pbmt rescore --listnet-preset``); the others keep their defaults.
# Niehues et al. (2015): BLEU+1 percent as the reference scores, a fixed rate "around 1", every list entry
# (the paper does not say its lists were made distinct); feature normalisation, batches of 10 sentences and
# 100,000 batches, chosen by dev BLEU, are the defaults anyway
PRESETS = {"paper": {"gain": "bleu+1", "learning_rate": 1.0, "distinct": False}}


@dataclass(frozen=True)
class FeatureScaling:
    """The linear map of every feature to [-1, 1] (Eq. 5).

    minimum, maximum: float64[n_features], each feature's extremes on the
    training pool. Columns with ``maximum == minimum`` map to 0.
    """

    minimum: np.ndarray
    maximum: np.ndarray

    @classmethod
    def fit(cls, features: np.ndarray) -> "FeatureScaling":
        """The scaling of ``features`` float64[n_cand, n_features] (n_cand >= 1)."""
        features = np.asarray(features, dtype=np.float64)
        return cls(features.min(axis=0), features.max(axis=0))

    @property
    def width(self) -> np.ndarray:
        """float64[n_features]: ``maximum - minimum``, 1 for constant features (their value maps to 0)."""
        width = self.maximum - self.minimum
        return np.where(width > 0, width, 1.0)

    def transform(self, features: np.ndarray) -> np.ndarray:
        """float64[n, n_features]: ``2 (x - minimum) / (maximum - minimum) - 1`` (exactly -1 and 1
        at the training extremes); values outside the training range map outside [-1, 1]."""
        scaled = 2.0 * (np.asarray(features, dtype=np.float64) - self.minimum) / self.width - 1.0
        scaled[:, self.maximum == self.minimum] = 0.0
        return scaled

    def raw_weights(self, scaled_weights: np.ndarray) -> np.ndarray:
        """float64[n_features]: weights on raw features that rank as ``scaled_weights`` do on
        transformed ones (scores differ by a constant); 0 for constant features."""
        weights = 2.0 * np.asarray(scaled_weights, dtype=np.float64) / self.width
        return np.where(self.maximum == self.minimum, 0.0, weights)

    def scaled_weights(self, raw_weights: np.ndarray) -> np.ndarray:
        """The inverse of ``raw_weights`` (a constant feature's weight becomes 0)."""
        weights = np.asarray(raw_weights, dtype=np.float64) * self.width / 2.0
        return np.where(self.maximum == self.minimum, 0.0, weights)


def reference_scores(stats: np.ndarray, gain: str = "bleu+1") -> np.ndarray:
    """float64[n_cand]: the sentence gain named ``gain`` (``pbmt.tune.gains``) in percent of BLEU statistics
    int64[n_cand, 10], the reference ranking."""
    return 100.0 * gain_of(gain, "sentence").score(stats)


def distinct_candidates(pool: Pool) -> np.ndarray:
    """int64[n_distinct]: the first candidate of every distinct text within each sentence of ``pool``,
    in pool order (a pool whose texts are all distinct within their sentences gives every candidate)."""
    ids: dict[str, int] = {}
    text_ids = np.array([ids.setdefault(text, len(ids)) for text in pool.texts], dtype=np.int64)
    pairs = np.stack([pool.sentence, text_ids], axis=1)
    return np.sort(np.unique(pairs, axis=0, return_index=True)[1])


def loss_and_gradient(features: np.ndarray, offsets: np.ndarray, target: np.ndarray, weights: np.ndarray,
                      score_range: float | None = None) -> tuple[float, np.ndarray]:
    """The summed ListNet loss of some lists (Eq. 2, natural log) and its gradient (Eq. 3).

    features: float64[n_cand, n_features] (already scaled when feature
    normalisation is used); offsets: int64[n_lists+1] over them, none empty;
    target: float64[n_cand], the reference top-one probabilities
    (``segment_softmax(reference_scores(stats), offsets)``); weights:
    float64[n_features]; score_range: ``r`` of the final-score normalisation
    (None: scores are ``features @ weights`` as they are; a list whose scores
    are all 0 is left unscaled). Returns (loss, float64[n_features]).
    """
    z = features @ weights
    lengths = np.diff(offsets)
    if score_range is None:
        scores, scale = z, None
    else:
        peak = argmax_by_sentence(np.abs(z), offsets)
        top = np.abs(z[peak])
        scale = np.where(top > 0, score_range / np.where(top > 0, top, 1.0), 1.0)
        scores = z * np.repeat(scale, lengths)
    probs = segment_softmax(scores, offsets)
    starts = offsets[:-1]
    log_sum = np.log(np.add.reduceat(np.exp(scores - np.repeat(np.maximum.reduceat(scores, starts), lengths)),
                                     starts)) + np.maximum.reduceat(scores, starts)
    loss = float(-(target * (scores - np.repeat(log_sum, lengths))).sum())
    residual = probs - target
    if scale is None:
        return loss, features.T @ residual
    coefficient = residual * np.repeat(scale, lengths)
    # d(r z_j / |z_a|) / dw = r x_j / |z_a| - r z_j sign(z_a) x_a / z_a^2, for the list's peak a
    moved = np.add.reduceat(residual * z, starts) * scale * np.sign(z[peak]) / np.where(top > 0, top, 1.0)
    coefficient[peak] -= np.where(top > 0, moved, 0.0)
    return loss, features.T @ coefficient


class ListNet(Tuner):
    """ListNet, a tuner (``pbmt.tune.tuner``) of the decode-optimise loop, over its ``pool`` (module docstring);
    ``pbmt rescore`` trains it on n-best lists with rescoring features.

    normalisation: "features", "score" or "none"; score_range: ``r`` for
    "score"; gain: the name of a ``pbmt.tune.gains`` gain of level "sentence"; distinct: train on each distinct
    translation of a sentence once (else on every candidate); learning_rate:
    the step at batch 0; decay: the step at batch t is
    ``learning_rate / (1 + decay * t)``; batch_size: sentences per batch;
    max_batches, epochs: the budget (whichever ends first; epochs None: no
    epoch limit); eval_every: batches between dev BLEU evaluations (None:
    once per epoch); progress: a tqdm bar of the batches on standard error.

    After ``fit``: ``weights_`` float64[n_features] in raw feature space (the
    best by the pool's corpus BLEU), ``scaled_weights_`` the same weights in
    the space training used (equal to ``weights_`` unless "features"),
    ``scaling_`` the FeatureScaling (None unless "features"), ``score_`` the
    pool's corpus BLEU in [0, 1] under ``weights_``, ``history_`` a list of
    (batches, corpus BLEU in [0, 1], mean loss per list) at each evaluation,
    ``n_batches_``, ``n_items_`` the candidates trained on. Deterministic
    given the random generator.
    """

    name, title, loop, reads, gain_level = "listnet", "ListNet", "decode-optimise", ("pool",), "sentence"
    options = (ITERATIONS, KEEP, DEDUP_OPTION)

    def __init__(self, normalisation: str = "features", score_range: float = 10.0, gain: str = "bleu+1-unclipped",
                 distinct: bool = True, learning_rate: float = 10.0, decay: float = 0.0, batch_size: int = 10,
                 max_batches: int = 100_000, epochs: int | None = None, eval_every: int | None = None,
                 progress: bool = False):
        if normalisation not in NORMALISATIONS:
            raise ValueError(f"normalisation must be one of {NORMALISATIONS}, got {normalisation!r}")
        gain_of(gain, self.gain_level)
        if learning_rate <= 0 or decay < 0 or score_range <= 0:
            raise ValueError("learning_rate and score_range must be positive, decay non-negative")
        if (batch_size < 1 or max_batches < 0 or (epochs is not None and epochs < 0)
                or (eval_every is not None and eval_every < 1)):
            raise ValueError("batch_size and eval_every must be positive, epochs and max_batches non-negative")
        self.normalisation = normalisation
        self.score_range = score_range
        self.gain = gain
        self.distinct = distinct
        self.learning_rate = learning_rate
        self.decay = decay
        self.batch_size = batch_size
        self.max_batches = max_batches
        self.epochs = epochs
        self.eval_every = eval_every
        self.progress = progress

    def fit(self, data: TuningData, initial_weights: np.ndarray, rng: np.random.Generator) -> "ListNet":
        """Train on ``data.pool`` from ``initial_weights`` (float64[n_features], pool column order)."""
        pool, initial, _ = self.checked_start(data, initial_weights)
        items = distinct_candidates(pool) if self.distinct else np.arange(pool.n_candidates)
        offsets = np.zeros_like(pool.offsets)
        np.cumsum(np.bincount(pool.sentence[items], minlength=pool.n_sentences), out=offsets[1:])
        self.n_items_ = len(items)
        self.scaling_ = FeatureScaling.fit(pool.features[items]) if self.normalisation == "features" else None
        features = pool.features[items] if self.scaling_ is None else self.scaling_.transform(pool.features[items])
        weights = initial if self.scaling_ is None else self.scaling_.scaled_weights(initial)
        target = segment_softmax(reference_scores(pool.stats[items], self.gain), offsets)
        score_range = self.score_range if self.normalisation == "score" else None
        n_sent = pool.n_sentences
        per_epoch = -(-n_sent // self.batch_size)
        budget = self.max_batches if self.epochs is None else min(self.max_batches, self.epochs * per_epoch)
        eval_every = self.eval_every or per_epoch

        def evaluate(t: int, w: np.ndarray) -> None:
            raw = w if self.scaling_ is None else self.scaling_.raw_weights(w)
            score = pool.bleu(raw)
            loss = loss_and_gradient(features, offsets, target, w, score_range)[0] / n_sent
            self.history_.append((t, score, loss))
            if score > self.score_:
                self.score_, self.scaled_weights_, self.weights_ = score, w.copy(), raw

        self.history_, self.score_ = [], -np.inf
        evaluate(0, weights)
        t = 0
        bar = tqdm(total=budget, unit="batch", desc="ListNet", disable=not self.progress or None, file=sys.stderr,
                   leave=False)
        while t < budget:
            order = rng.permutation(n_sent)
            batch_offsets, candidates = take(offsets, np.arange(len(items)), order)
            for first in range(0, n_sent, self.batch_size):
                if t == budget:
                    break
                lo, hi = batch_offsets[first], batch_offsets[min(first + self.batch_size, n_sent)]
                rows = candidates[lo:hi]
                local = batch_offsets[first:min(first + self.batch_size, n_sent) + 1] - lo
                gradient = loss_and_gradient(features[rows], local, target[rows], weights, score_range)[1]
                weights = weights - self.learning_rate / (1.0 + self.decay * t) * gradient / (len(local) - 1)
                t += 1
                if t % eval_every == 0 or t == budget:
                    evaluate(t, weights)
                    bar.update(t - bar.n)
                    bar.set_postfix(best=f"{100 * self.score_:.2f}")
        bar.close()
        self.n_batches_ = t
        return self
