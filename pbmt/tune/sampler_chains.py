"""SampleRank's chains on the Gibbs sampler (Haddow, Arun & Koehn, 2011, Algorithm 1): what a chain does
with a batch, and the pieces ``pbmt.tune.samplerank.SampleRank`` runs them with.

Unlike the n-best optimisers of ``pbmt.tune.loop``, SampleRank never runs the
decoder: it walks translation hypotheses with the sampler of
``pbmt.search.sampler`` and updates the weights online, pair by pair.

For every epoch the tuning set is shuffled and cut into batches. Each batch's
hypotheses start as glosses (``pbmt.search.sampler.gloss``; ``start``
"decoder": the stack decoder's 1-best). A step then

1. picks a sentence j of the batch at random and lists a neighbourhood N of
   its hypothesis e_j with a random operator (MERGE-SPLIT or REORDER, equally
   likely, at a random place);
2. draws the sample e' from N with probability ∝ exp(w · h(e) / T), T the
   ``temperature`` (the paper's 1);
3. takes the oracle e+ in N maximising S * gain(y, y_e) + w · h(e), where
   y_e is the batch's hypothesis set with e_j replaced by e, the gain is the
   batch's corpus BLEU in [0, 1] with 0.01 added to every match and total
   count (``pbmt.tune.gains``, "batch-bleu"; ``gain`` "batch-bleu-unclipped":
   with the brevity penalty not clipped at 1, above 1 for a batch longer than
   its references) and S is the gain scale;
4. updates w iff the model and the gain rank (e', e+) differently:
   (G' - G+) (S' - S+) < 0 (G = gain, S = w · h);
5. moves e_j to e'.

The update is the closed-form solution of (5)-(6) of the paper, the
passive-aggressive step of Crammer et al. (2006) with one constraint::

    w <- w + tau * a,   tau = min(C, b / ||a||^2)
    a = h(winner) - h(loser)
    b = M * S * (gain(winner) - gain(loser)) - (w · a) > 0

where (winner, loser) is the pair ordered by gain, C clips the step and the
margin scale is M = gain(y, y+) in [0, 1]. ``update`` "hope-fear" imposes the
same constraint between e+ (hope) and the candidate violating it most (fear),
whatever the sample (``update_pair``). ``update`` "expected-gain" replaces 4.
by a gradient step on the expected batch gain over N under the sampling
distribution q, after every step: ``w <- w + step * S * Cov_q(h, gain)``
(``gain_covariance``), so pairs the model ranks right count as much as
misranked ones.

The gain scale S (nats per unit of BLEU; the paper has none, S = 1) puts the
gain on the scale of the model score it is added to: a step moves a batch's
BLEU by 1e-4 to 1e-2 while neighbours' scores differ by 0.1 to 10 nats.
docs/samplerank.md has the measurements behind the defaults S = 300 and
C = 1e-4 and behind the expected-gain variant.

The first ``burn_in_per_sentence`` × |batch| steps of a batch make no updates
and collect nothing; after each later step the weights are collected, and the
tuned weights (``weights_``) are their average. With ``chains`` > 1 every
chain runs the epoch on its own shard of the shuffled tuning set with its own
copy of the weights, and the chains' final weights are averaged before the
next epoch. Everything random is drawn from generators seeded by (run seed,
epoch) and (run seed, epoch, chain), so a run is determined by its seed and
the number of chains, whichever processes run them, and a resumed run equals
an uninterrupted one.

The tuned weights are the average of every weight vector collected so far
after the last epoch, or, with a held-out part of the tuning set
(``pbmt.tune.held_out``: sentences no chain sees), after the epoch whose
averaged weights decode it best, as the paper reports its "maximum held-out"
weights. Held-out and tuning-set decodes (``decoded_bleu``'s 1-best stack
decoding) run on the chains' workers between epochs.

Translation options are built once per batch with the model's weights as
loaded (with ``start`` "decoder", under the chain's weights at the batch's
start). Features, and the weight vector, are laid out as the model's dense
ones (natural log, ``model.layout``), then its sparse ones
(``pbmt.model.sparse``, counts: the boundary family's in id order, then the
distortion family's bins, ``sparse_weights``; the block family's weights stay
as loaded), then the global features' (``pbmt.features``):
a batch's chains share one ``DocumentSampler``, so a document-level feature
sees the batch as its document.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Sequence

import numpy as np

from pbmt.base.errors import PbmtError
from pbmt.base.feature_modules import run_module
from pbmt.base.vocab import Overlay
from pbmt.features import FeatureSpec, GlobalFeature, build
from pbmt.features.registry import user_files
from pbmt.metrics.bleu import ReferenceSets, corpus_bleu, reference_sets, segment_stats_ids
from pbmt.model.lm import LMCache
from pbmt.model.model import TranslationModel
from pbmt.search.decoder import decode
from pbmt.model.sparse import SparseModel
from pbmt.search.derivation import jump_features, sparse_features
from pbmt.search.document_decoder import DocumentSampler
from pbmt.search.options import TranslationOptions
from pbmt.search.sampler import Neighbourhood, gloss
from pbmt.tune.gains import GAINS, Gain, gain_of

GAIN_SCALE = 300.0  # nats per unit of batch BLEU: about the reference words of a batch of 10 (docs/samplerank.md)
CLIP = 1e-4  # C; with the paper's 0.01 the LM and TM weights fall far (docs/samplerank.md)
STEP = 0.01  # expected-gain's step size (docs/samplerank.md)
UPDATES = ("sample-oracle", "hope-fear", "expected-gain")  # see Settings
STARTS = ("gloss", "decoder")  # a batch's chains start at the gloss (the paper's) or the stack decoder's 1-best
OPERATORS = (1.0, 1.0, 0.0)  # MERGE-SPLIT and REORDER equally likely, no RETRANS (the paper's choice)
# named sets of ``SampleRank`` parameters (``pbmt tune --samplerank-preset``); the others keep their defaults
PRESETS = {
    # Haddow et al. (2011): batch BLEU unscaled beside the model score, C = 0.01, chains from the gloss at T = 1,
    # 100 burn-in and 100 sampled steps per sentence, 8 chains (their Figure 3 and Table 4; they give no batch size)
    "paper": {"update": "sample-oracle", "gain_scale": 1.0, "c": 0.01, "temperature": 1.0, "start": "gloss",
              "samples_per_sentence": 100, "burn_in_per_sentence": 100, "chains": 8, "gain": "batch-bleu"},
    # the defaults: the expected-gain variant, with the batch gain's brevity penalty unclipped (docs/samplerank.md
    # and docs/tuning-results.md compare it with the paper's settings)
    "expected-gain": {"update": "expected-gain", "start": "decoder", "temperature": 0.1, "step": STEP,
                      "gain_scale": GAIN_SCALE, "chains": 4, "gain": "batch-bleu-unclipped"},
}


@dataclass(frozen=True)
class DevSet:
    """A tuning set in word ids: ``sources`` (``int32`` arrays) and ``references`` (compiled), in the ids of
    ``vocab``, an ``Overlay`` of the model's vocabulary holding the set's words the model does not know."""

    sources: tuple[np.ndarray, ...]
    references: ReferenceSets
    vocab: Overlay

    def __len__(self) -> int:
        return len(self.sources)

    def options(self, model: TranslationModel, sentence: int) -> TranslationOptions:
        """The translation options of source ``sentence`` under ``model`` (whose vocabulary ``vocab`` extends)."""
        return TranslationOptions.build(model, self.sources[sentence], self.vocab)

def encode_dev(model: TranslationModel, sources: Sequence[str], references: Sequence[str]) -> DevSet:
    """Source sentences and their references (whitespace-tokenised lines) in word ids.

    Words ``model`` does not know get ids in one ``Overlay`` for the whole set
    (``TranslationModel.overlay``), so a source word passed through matches
    the same word in its reference; the model's vocabulary does not grow.
    Build global features (whose LMs add words to it) before encoding.
    """
    tokens = [line.split() for line in sources]
    refs = [line.split() for line in references]
    overlay = model.overlay(w for line in tokens + refs for w in line)
    ids = tuple(overlay.ids(line) for line in tokens)
    ref_ids = [overlay.ids(line) for line in refs]
    offsets = np.zeros(len(ref_ids) + 1, np.int64)
    np.cumsum([len(r) for r in ref_ids], out=offsets[1:])
    words = np.concatenate(ref_ids) if ref_ids else np.zeros(0, np.int32)
    return DevSet(ids, reference_sets(offsets, words), overlay)


def neighbour_stats(neighbourhood: Neighbourhood, references: ReferenceSets, sentence: int) -> np.ndarray:
    """BLEU statistics ``int64[len(neighbourhood), 10]`` of every candidate against reference set ``sentence``."""
    offsets, words = neighbourhood.target_words
    return segment_stats_ids(offsets, words, np.full(len(offsets) - 1, sentence, np.int64), references)


class BatchGain:
    """The ``gain`` of a batch (a ``pbmt.tune.gains`` gain of level "batch": smoothed corpus BLEU of the batch),
    kept up to date one sentence at a time.

    ``stats``: ``int64[k, 10]``, the statistics of the batch's current
    hypotheses (copied). Summed statistics are integers, so swapping a row in
    and out gives exactly the recomputed sum.
    """

    def __init__(self, stats: np.ndarray, gain: Gain = GAINS["batch-bleu"]):
        self.stats = np.array(stats, dtype=np.int64)
        self.total = self.stats.sum(axis=0)
        self.gain = gain

    @property
    def value(self) -> float:
        """BLEU of the current hypotheses, in [0, 1] (unclipped: above 1 for a batch longer than its references)."""
        return float(self.gain.score(self.total))

    def with_replaced(self, j: int, rows: np.ndarray) -> np.ndarray:
        """Gains ``float64[n]`` of the batch with sentence ``j``'s statistics replaced by each of ``rows`` (n, 10)."""
        return self.gain.score(self.total - self.stats[j] + rows)

    def replace(self, j: int, row: np.ndarray) -> None:
        """Make ``row`` the statistics of sentence ``j``."""
        self.total += row - self.stats[j]
        self.stats[j] = row


def mira_update(weights: np.ndarray, features_sample: np.ndarray, features_oracle: np.ndarray,
                gain_sample: float, gain_oracle: float, c: float = 0.01,
                gain_scale: float = 1.0, margin_updates: bool = False) -> np.ndarray | None:
    """SampleRank's update of ``weights`` for a (sample, oracle) pair, or None when there is none.

    features_*: ``float64[n_features]`` (natural log; any common offset, such
    as feature deltas from one base); gains: BLEU in [0, 1]. Updates iff model
    score and gain rank the pair differently; then returns ``weights + tau *
    a`` with ``a = h(winner) - h(loser)`` (ordered by gain), ``b = M *
    gain_scale * (gain(winner) - gain(loser)) - weights · a`` (nats),
    ``M = gain_oracle`` and ``tau = min(c, b / ||a||^2)`` (see the module
    docstring). ``margin_updates``: also update a pair the model ranks as the
    gain does but by less than the margin (whenever b > 0: the
    passive-aggressive rule) instead of only misranked pairs (the paper's).
    """
    a = np.asarray(features_oracle, np.float64) - np.asarray(features_sample, np.float64)
    score_diff = float(a @ weights)
    gain_diff = gain_oracle - gain_sample
    if gain_diff == 0 or not (margin_updates or gain_diff * score_diff < 0):
        return None
    if gain_diff < 0:
        a, score_diff = -a, -score_diff
    b = gain_oracle * gain_scale * abs(gain_diff) - score_diff
    if b <= 0 or not a.any():
        return None
    return weights + min(c, b / float(a @ a)) * a


def update_pair(scores: np.ndarray, gains: np.ndarray, sample: int, settings: "Settings") -> tuple[int, int] | None:
    """The (loser, winner) candidates of a neighbourhood that an update is tried on, or None when there is none.

    scores: ``float64[n]``, the candidates' model scores (nats, any common
    offset); gains: ``float64[n]``, the batch BLEU in [0, 1] with each
    candidate; sample: the sampled candidate. The winner is the oracle e+,
    argmax of ``gain_scale * gain + score``. ``settings.update``:

    - ``"sample-oracle"`` (the paper's): the loser is the sample; None unless
      the model and the gain rank the pair differently (or, with
      ``margin_updates``, the pair violates the margin);
    - ``"hope-fear"``: the loser is the fear, argmax of ``score - M *
      gain_scale * gain`` with ``M = gain(e+)``: the candidate whose
      constraint (6) against e+ is violated most; None when it is not
      violated (the fear is then e+ or has its gain).
    """
    scale = settings.gain_scale
    winner = int(np.argmax(scale * gains + scores))
    if settings.update == "hope-fear":
        loser = int(np.argmax(scores - gains[winner] * scale * gains))
    else:
        loser = sample
    gain_diff, score_diff = gains[winner] - gains[loser], scores[winner] - scores[loser]
    if gain_diff == 0:
        return None
    if settings.update == "hope-fear" or settings.margin_updates:
        violated = gains[winner] * scale * abs(gain_diff) > np.sign(gain_diff) * score_diff
    else:
        violated = gain_diff * score_diff < 0
    return (loser, winner) if violated else None


@dataclass(frozen=True)
class Settings:
    """What a chain does with a batch.

    batch_size: sentences per batch; samples_per_sentence and
    burn_in_per_sentence: steps per batch (times its size) with and before
    updates; c: the update's clip C; gain_scale: nats per unit of batch
    BLEU in the oracle's choice and the margin; margin_updates: update on margin
    violations too, not only on misranked pairs (see ``mira_update``);
    update, one of ``UPDATES``: ``"sample-oracle"`` (the paper's) and
    ``"hope-fear"`` make the MIRA-like update on the pair ``update_pair``
    chooses; ``"expected-gain"`` instead adds ``step * gain_scale *
    gain_covariance(...)`` after every step, a stochastic gradient step on the
    expected batch gain over the neighbourhood (no pair, no clip C);
    temperature: the sample is drawn with probability ∝ exp(w · h /
    temperature) (the paper's 1; below 1 the chains stay near the model's
    best); gain: a batch gain of ``pbmt.tune.gains`` (the paper's "batch-bleu"; unclipped, the
    default, the tuned output is not shorter than the untuned weights':
    docs/tuning-results.md); start: where a
    batch's chains start, one of ``STARTS`` (the
    decoder's 1-best is searched under the chain's weights at the batch's start,
    without global features, the batch's translation options then built under
    them too).
    """

    batch_size: int = 10
    samples_per_sentence: int = 100
    burn_in_per_sentence: int = 100
    c: float = CLIP
    gain_scale: float = GAIN_SCALE
    margin_updates: bool = False
    update: str = "expected-gain"
    temperature: float = 0.1
    start: str = "decoder"
    step: float = STEP
    gain: str = "batch-bleu-unclipped"

    def __post_init__(self):
        if self.update not in UPDATES:
            raise ValueError(f"update must be one of {', '.join(UPDATES)}, got {self.update!r}")
        if self.start not in STARTS:
            raise ValueError(f"start must be one of {', '.join(STARTS)}, got {self.start!r}")
        gain_of(self.gain, "batch")
        if (self.batch_size < 1 or self.samples_per_sentence < 1 or self.burn_in_per_sentence < 0 or self.c <= 0
                or self.gain_scale <= 0 or self.temperature <= 0 or self.step <= 0):
            raise ValueError(f"need batch_size >= 1, samples_per_sentence >= 1, burn_in_per_sentence >= 0, "
                             f"c > 0, gain_scale > 0; got {self}")


@dataclass(frozen=True)
class ChainResult:
    """One chain's epoch: its final weights, the sum and count of the weights it collected, its update count."""

    weights: np.ndarray
    weight_sum: np.ndarray
    collected: int
    updates: int
    steps: int


def run_chain(model: TranslationModel, dev: DevSet, sentences: np.ndarray, weights: np.ndarray,
              rng: np.random.Generator, settings: Settings = Settings(), chunk_of: np.ndarray | None = None,
              global_features: Sequence[GlobalFeature] = ()) -> ChainResult:
    """One epoch of Algorithm 1 over ``sentences`` (indices into ``dev``), from ``weights``.

    The sentences are processed in the batches of ``batches`` (``chunk_of``:
    see there); see the module docstring for a step. ``weights``:
    ``float64[n_weights(model) + global columns]``, the dense weights then,
    when the model has sparse features, the sparse ones (their starting
    values in the model are ignored), then those of ``global_features``
    (``pbmt.features``), which see each batch as one document.
    """
    w = np.array(weights, dtype=np.float64)
    dense, tuned = model.layout.size, n_weights(model)
    width = tuned + sum(f.size for f in global_features)
    if w.shape != (width,):
        raise ValueError(f"expected {width} weights, got shape {w.shape}")
    if model.sparse is not None:
        if model.sparse.boundary is not None and model.sparse.blocks is not None:
            # the samplers see the block family's bigrams and the boundary pairs summed in one table per sentence,
            # so the in-place updates below would not reach them
            raise PbmtError("SampleRank tunes the boundary family of a model without the block family: drop "
                            "\"block\" or \"boundary\" from [sparse] families in its pbmt.toml")
        # the samplers' kernels read the sparse weights through views of these arrays, updated in place below
        model = replace(model, sparse=with_sparse_weights(model.sparse, w[dense:tuned]))
    weight_sum = np.zeros_like(w)
    collected = updates = steps = 0
    cache = LMCache.new()
    for batch in batches(sentences, settings.batch_size, rng, chunk_of):
        # from the decoder's 1-best, the batch's options are those the decoder prunes under the chain's weights:
        # the samplers and the global features then read that model's phrase table (an option's candidate index
        # is into it), and its sparse weights stay the array updated in place below
        current = replace(model.with_weights(w[:dense]), sparse=model.sparse) if settings.start == "decoder" else model
        document = DocumentSampler(current, [dev.options(current, s) for s in batch],
                                   global_features, operator_weights=OPERATORS, lm_cache=cache)
        samplers = document.samplers
        chains = document.start([_start(current, sampler.options, settings.start) for sampler in samplers])
        first = [chain.derivation.target_words(sampler.options) for chain, sampler in zip(chains, samplers)]
        offsets = np.concatenate([[0], np.cumsum([len(f) for f in first])]).astype(np.int64)
        words = np.concatenate(first).astype(np.int32) if first else np.zeros(0, np.int32)
        gain = BatchGain(segment_stats_ids(offsets, words, batch, dev.references), gain_of(settings.gain, "batch"))
        burn_in = settings.burn_in_per_sentence * len(batch)
        for step in range(burn_in + settings.samples_per_sentence * len(batch)):
            j = int(rng.integers(len(batch)))
            nb = samplers[j].propose(chains[j], rng)
            u = rng.random()
            if nb.operator is not None:
                scores = nb.delta[:, :dense] @ w[:dense]
                if model.sparse is not None:
                    scores += nb.delta[:, dense]  # the weighted sparse features (Sparse0)
                if global_features:
                    scores += nb.delta[:, dense + (model.sparse is not None):] @ w[tuned:]
                p = np.exp((scores - scores.max()) / settings.temperature)
                cumulative = np.cumsum(p)
                sample = min(int(np.searchsorted(cumulative, u * cumulative[-1], side="right")), len(p) - 1)
                stats = neighbour_stats(nb, dev.references, int(batch[j]))
                gains = gain.with_replaced(j, stats)
                if step >= burn_in:
                    new = _updated(w, nb, p / cumulative[-1], scores, gains, sample, model, settings)
                    if new is not None:
                        w, updates = new, updates + 1
                        if model.sparse is not None:
                            set_sparse_weights(model.sparse, w[dense:tuned])
                samplers[j].apply(chains[j], nb, sample)
                gain.replace(j, stats[sample])
            if step >= burn_in:
                weight_sum += w
                collected += 1
            steps += 1
    return ChainResult(w, weight_sum, collected, updates, steps)


def _updated(w: np.ndarray, nb: Neighbourhood, probabilities: np.ndarray, scores: np.ndarray, gains: np.ndarray,
             sample: int, model: TranslationModel, settings: Settings) -> np.ndarray | None:
    """The weights after ``settings.update``'s step on this neighbourhood, or None when the rule makes none."""
    if settings.update == "expected-gain":
        return w + settings.step * settings.gain_scale * gain_covariance(nb, probabilities, gains, model)
    pair = update_pair(scores, gains, sample, settings)
    if pair is None:
        return None
    loser, winner = pair
    return mira_update(w, _features(nb, loser, model), _features(nb, winner, model), gains[loser], gains[winner],
                       settings.c, settings.gain_scale, settings.margin_updates or settings.update == "hope-fear")


def gain_covariance(nb: Neighbourhood, probabilities: np.ndarray, gains: np.ndarray,
                    model: TranslationModel) -> np.ndarray:
    """Cov_q(h, gain) over a neighbourhood: ``float64[n_weights + global columns]``, feature units times BLEU.

    probabilities: ``float64[len(nb)]`` summing to 1, the sampling distribution
    q; gains: ``float64[len(nb)]``, BLEU in [0, 1]. It is the gradient of the
    expected gain E_q[gain] with respect to the weights at temperature 1
    (divided by the temperature otherwise), and equals half the q-weighted sum
    over all pairs of (gain_i - gain_j)(h_i - h_j). Sparse features (counted
    from scratch) are taken over the candidates with q >= 1e-12 only.
    """
    centred = probabilities * (gains - probabilities @ gains)
    if model.sparse is None:
        return nb.delta.T @ centred  # its columns are _features' without sparse features
    kept = np.flatnonzero(probabilities >= 1e-12)
    return np.array([_features(nb, c, model) for c in kept]).T @ centred[kept]


def _start(model: TranslationModel, options: TranslationOptions, start: str):
    """A chain's first derivation: the gloss, or the stack decoder's 1-best under ``model`` (the gloss when the
    search finds no complete derivation)."""
    best = decode(model, options) if start == "decoder" else []
    return best[0].derivation if best else gloss(options)


def n_weights(model: TranslationModel) -> int:
    """How many weights SampleRank tunes: the dense ones, then the sparse ones if the model has them."""
    return model.layout.size + (len(sparse_weights(model.sparse)) if model.sparse is not None else 0)


def sparse_weights(sparse: SparseModel) -> np.ndarray:
    """The sparse weights SampleRank tunes, ``float64[n]``: the boundary family's (id order), then the
    distortion family's bins (``distortion_bins.NAMES`` order). The block family's named weights are scored
    into the translation options when a batch's options are built, so an update within the batch would not
    reach them: they stay as loaded."""
    jumps = sparse.jumps if sparse.jumps is not None else np.zeros(0)
    return np.concatenate([sparse.weights, jumps]).astype(np.float64)


def with_sparse_weights(sparse: SparseModel, weights: np.ndarray) -> SparseModel:
    """``sparse`` with a copy of ``weights`` (laid out as ``sparse_weights``)."""
    weights = np.array(weights, dtype=np.float64)
    if weights.shape != (len(sparse_weights(sparse)),):
        raise ValueError(f"expected {len(sparse_weights(sparse))} sparse weights, got shape {weights.shape}")
    jumps = None if sparse.jumps is None else weights[sparse.size:]
    return replace(sparse.with_weights(weights[:sparse.size]), jumps=jumps)


def set_sparse_weights(sparse: SparseModel, weights: np.ndarray) -> None:
    """Write ``weights`` (laid out as ``sparse_weights``) into ``sparse``'s arrays, which the kernels read."""
    sparse.weights[:] = weights[:sparse.size]
    if sparse.jumps is not None:
        sparse.jumps[:] = weights[sparse.size:]


def with_tuned_weights(model: TranslationModel, weights: np.ndarray) -> TranslationModel:
    """``model`` under SampleRank's weights (``float64[n_weights(model)]``: dense, then sparse if it has them)."""
    dense = model.layout.size
    tuned = model.with_weights(np.asarray(weights, np.float64)[:dense])
    if model.sparse is not None:
        tuned = replace(tuned, sparse=with_sparse_weights(model.sparse, weights[dense:]))
    return tuned


def decoded_bleu(model: TranslationModel, weights: np.ndarray, dev: DevSet) -> float:
    """Corpus BLEU in [0, 1] of the stack decoder's 1-best of ``dev``'s sources under SampleRank's ``weights``.

    One process, the model's search settings; for held-out checks and tuning curves.
    """
    tuned = with_tuned_weights(model, weights)
    sentences = np.arange(len(dev))
    return outputs_bleu([decoded_words(tuned, dev, s) for s in sentences], sentences, dev.references)


def decoded_words(tuned: TranslationModel, dev: DevSet, sentence: int) -> np.ndarray:
    """The target words (``int32``, ``dev``'s ids) of the stack decoder's 1-best of source ``sentence`` under
    ``tuned`` (``with_tuned_weights``); none when the search finds no complete derivation."""
    options = dev.options(tuned, sentence)
    best = decode(tuned, options)
    return best[0].derivation.target_words(options) if best else np.zeros(0, np.int32)


def outputs_bleu(outputs: Sequence[np.ndarray], sentences: np.ndarray, references: ReferenceSets) -> float:
    """Corpus BLEU in [0, 1] of ``outputs`` (target words of each of ``sentences``) against their references."""
    offsets = np.concatenate([[0], np.cumsum([len(o) for o in outputs])]).astype(np.int64)
    words = np.concatenate(outputs).astype(np.int32) if len(outputs) else np.zeros(0, np.int32)
    return corpus_bleu(segment_stats_ids(offsets, words, np.asarray(sentences, np.int64), references))


def _features(nb: Neighbourhood, c: int, model: TranslationModel) -> np.ndarray:
    """Candidate c's features relative to the neighbourhood's base (dense part), its sparse features (counts),
    then its global features relative to the base."""
    size = model.layout.size
    dense, extra = nb.delta[c, :size], nb.delta[c, size + (model.sparse is not None):]
    if model.sparse is None:
        return np.concatenate([dense, extra])
    derivation = nb.derivation(c)
    jumps = jump_features(derivation) if model.sparse.jumps is not None else np.zeros(0)
    return np.concatenate([dense, sparse_features(derivation, nb.options, model), jumps, extra])


def mix(results: Sequence[ChainResult]) -> tuple[np.ndarray, np.ndarray, int]:
    """The chains' epochs combined: (mean of their final weights, summed collected weights, summed count)."""
    mixed = np.mean([r.weights for r in results], axis=0)
    return mixed, np.sum([r.weight_sum for r in results], axis=0), sum(r.collected for r in results)


def batches(sentences: np.ndarray, batch_size: int, rng: np.random.Generator,
            chunk_of: np.ndarray | None = None) -> list[np.ndarray]:
    """A chain's batches of ``sentences`` (``int64`` indices) for one epoch.

    Without ``chunk_of``: the sentences shuffled and cut into batches of
    ``batch_size``. With ``chunk_of`` (``int64[n_sources]``, the chunk of
    every tuning sentence, as ``pbmt.base.documents.Documents.chunks(batch_size)``
    gives: runs of at most ``batch_size`` consecutive sentences of one
    document): every chunk present is one batch, its sentences in line order,
    the chunks in random order, so no batch crosses a document boundary.
    """
    sentences = np.asarray(sentences, dtype=np.int64)
    if chunk_of is None:
        order = rng.permutation(sentences)
        return [order[lo:lo + batch_size] for lo in range(0, len(order), batch_size)]
    chunk = np.asarray(chunk_of)[sentences]
    return [np.sort(sentences[chunk == c]) for c in rng.permutation(np.unique(chunk))]


def shards(sentences: np.ndarray, chains: int, seed: int, epoch: int,
           chunk_of: np.ndarray | None = None) -> list[np.ndarray]:
    """The tuning sentences (sorted ``int64`` indices) shuffled for ``epoch`` and cut into ``chains`` near-equal
    shards.

    With ``chunk_of`` (see ``batches``) whole chunks are shuffled and dealt
    out, so a chunk (and so a batch) is never split between chains.
    """
    sentences = np.asarray(sentences, np.int64)
    rng = np.random.default_rng([seed, epoch])
    if chunk_of is None:
        return np.array_split(rng.permutation(sentences), chains)
    chunk = np.asarray(chunk_of)[sentences]
    groups = np.array_split(rng.permutation(np.unique(chunk)), chains)
    return [sentences[np.isin(chunk, group)] for group in groups]


class Chains:
    """What a chain's epoch and a decode between epochs run on, in this process or in each worker: the model
    (with its sparse features), the tuning set, its chunks, and the global features (built where it arrives,
    from their specs)."""

    def __init__(self, model: TranslationModel, dev: DevSet, chunk_of: np.ndarray | None,
                 specs: Sequence[FeatureSpec], global_features: Sequence[GlobalFeature] | None = None):
        self.model, self.dev, self.chunk_of, self.specs = model, dev, chunk_of, tuple(specs)
        self.global_features = build(self.specs, model.vocab) if global_features is None else global_features
        self._decoding: tuple[tuple[float, ...], TranslationModel] | None = None
        self._lock = threading.Lock()  # threads decoding under new weights prune the table once

    def __reduce__(self):
        return arrived_chains, (self.model, self.dev.sources, self.dev.references, self.dev.vocab.extra,
                                 self.chunk_of, self.specs, user_files(self.specs))

    def epoch(self, settings: Settings, seed: int, item) -> ChainResult:
        epoch, chain, sentences, weights = item
        return run_chain(self.model, self.dev, sentences, weights, np.random.default_rng([seed, epoch, chain]),
                         settings, self.chunk_of, self.global_features)

    def decode(self, weights: tuple[float, ...], sentence: int) -> np.ndarray:
        """``decoded_words`` of ``sentence`` under SampleRank's ``weights`` (dense, then sparse); the model under
        the last weights is kept, as its table is pruned anew for each."""
        with self._lock:
            if self._decoding is None or self._decoding[0] != weights:
                self._decoding = weights, with_tuned_weights(self.model, np.array(weights))
            model = self._decoding[1]
        return decoded_words(model, self.dev, sentence)


def arrived_chains(model: TranslationModel, sources, references, extra: tuple[str, ...], chunk_of, specs,
                   files: Sequence[tuple[Path, str]] = ()) -> Chains:
    """``_Chains`` in a worker: the tuning set's overlay rebuilt over the arrived model's vocabulary (which
    holds the global features' words already, as the sender's did when it encoded the set), the global features
    built after the ``files`` of one's own that registered their kinds have run here too (``user_files``)."""
    for path, what in files:
        run_module(path, what)
    overlay = model.overlay(extra)
    if overlay.extra != extra:
        raise ValueError("the tuning set's own words reached a worker as words of the model")
    return Chains(model, DevSet(sources, references, overlay), chunk_of, specs)


def chain_work(settings: Settings, seed: int, chains: Chains, item) -> ChainResult | np.ndarray:
    """A chain's epoch (``item``: "epoch", epoch, chain, sentences, weights) or a sentence's 1-best words
    (``item``: "decode", weights, sentence)."""
    if item[0] == "decode":
        return chains.decode(*item[1:])
    return chains.epoch(settings, seed, item[1:])


