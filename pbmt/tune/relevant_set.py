"""Online relevant-set training: Costmargin and perceptron (Tillmann & Zhang, Tables II and III).

The dev set is decoded ``passes`` times (the paper's L = 30). Every decoding
adds the decoder's 1-best (or n-best) block sequence of each sentence to that
sentence's *relevant set* V_rel (a ``Pool``: dense features and BLEU
statistics, duplicates dropped). Between decodings an *online training step*
learns new weights on the relevant sets alone, **from zero** each time as the
paper does: ``sgd_passes`` passes (R = 40) over the sentences in random order,

- Costmargin (Table II, Eq. 4, 6, 7): the truth z_s is the highest-BLEU
  candidate, the alternative z_t the one maximising Eq. 4's cost-sensitive
  squared-hinge loss ``(b_s - b_t) (1 - (s_s - s_t))_+^2`` against it under
  the current weights (Eq. 6), and Eq. 7 updates
  ``w <- w + eta (b_s - b_t) y (1 - w.y)_+`` with ``y = x_s - x_t``
  (eta = 1e-4);
- perceptron (Table III): z_s the highest-BLEU candidate, z_t the
  highest-scoring one under w; ``w <- w + eta (x_s - x_t)`` (eta = 1e-5).

Both start from two *seed* block sequences per sentence (Section V, also used
for Costmargin in the paper's dense-feature experiments, VI-B): pass 1 decodes
with the flat weights ``w1 = 0.1`` everywhere, pass 2 with ``w2 = w1 +
U[-0.01, 0.01]`` per weight; passes 3..L decode with the trained weights
``w_l``. pbmt's w2 is, by default, the model's own weights (``model_seed``; the
paper's perturbed w1 with ``model_seed=False``): the relevant sets then hold
the untuned weights' 1-best, and the output can be those weights when no
trained pass decodes the dev set better. Why: on a small dev set (100
sentences) no pass trained from the paper's two nearly identical flat seeds
decoded its own dev set better than the untuned weights (43.08 against
43.14), so tuning ended below its start (docs/tuning-results.md). The output (``keep``) is the ``w_l`` (seeds included) whose decoding has the
highest dev BLEU: the paper keeps "the weight vector w_l which corresponds to
the highest development set BLEU score", which pbmt reads as corpus BLEU
("best-dev", the default, as the decode-optimise loop's ``--keep``); the
averaged sentence BLEU+1 its tables report for the training data is the other
reading ("best-sentence-bleu"). On the Bible model the corpus reading keeps
passes whose test output is longer and scores higher: the averaged sentence
gain, like every sentence-level BLEU, favours short translations
(docs/tuning-results.md). "last" keeps the last pass's.

Notes on the paper. Table II prints the update without Eq. 7's hinge factor
and picks z_t by *minimising* ``l(z', z) = -(Bl(z') - Bl(z))(s(z') - s(z) - 1)``,
which would choose the best-separated alternative; pbmt follows Section III's
derivation (Eq. 6 and 7), which Table II is meant to implement. BLEU of a
candidate is sentence BLEU+1 (``pbmt.tune.gains.GAINS["bleu+1"]``) in
[0, 1]. Features are the model's unnormalised dense features (natural logs),
as the paper's learning rates assume. The fixed features (``fixed``, default
``UnknownWordPenalty0``, which Moses never tunes) keep the model's weight in
both seeds and every pass and take no part in the training, as in MERT:
trained from zero, their weight would stay 0 wherever the relevant sets hold
no unknown word.

**Outputs** in the run's folder (``pbmt.base.run_state.RunFolder``): ``moses.ini``
(the best ``w_l``), ``run{l}.moses.ini``, ``log.tsv``
(``RELEVANT_SET_LOG.columns``, per pass: the weights decoded, the averaged
sentence BLEU+1 and corpus BLEU of their 1-best in percent, the relevant
sets' corpus BLEU under them, new candidates, relevant-set size, seconds
decoding and in the online training step, updates), ``dev-bleu.png`` and
``checkpoint.npz`` (relevant sets, seed weights, random generator state,
log; written atomically after every pass). ``resume=True`` continues to
exactly the weights and log an uninterrupted run reaches; raising
``passes`` extends a finished run.
"""

from __future__ import annotations

import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

from pbmt.base.config import MosesConfig
from pbmt.base.errors import PbmtError
from pbmt.model.features import FeatureLayout
from pbmt.base.plots import LogFormat, read_tuning_log, save_png, tuning_figure
from pbmt.base.run_state import LOG, RunFolder, generator_state, restored_generator
from pbmt.tune._relevant_set_kernels import costmargin_epoch, perceptron_epoch
from pbmt.tune.loop import Decoder, decoded_pool, tuned_config, weight_line
from pbmt.tune.gains import GAINS
from pbmt.tune.options import DEDUP_OPTION, FEATURES, KEEP
from pbmt.tune.pool import DEDUP, Pool, References, tuned_columns
from pbmt.tune.tuner import TUNER_DEFAULT, Group, Option, Tuner, TuningData

# log.tsv, one line per decoding pass: the weights decoded, the averaged sentence BLEU+1 and corpus BLEU of their
# 1-best, the relevant sets' BLEU under them
RELEVANT_SET_LOG = LogFormat("relevant-set", ("pass", "decoded_weights", "dev_sentence_bleu", "dev_bleu",
                                              "relevant_bleu", "new_candidates", "relevant_size", "decode_s",
                                              "online_s", "updates"),
                             pool="relevant_bleu", pool_label="relevant sets' BLEU under the pass's weights")

KEEPS = ("best-dev", "best-sentence-bleu", "last")  # which pass's weights the output is (module docstring)
SEEDS = 2  # passes decoded with the seed weights w1, w2

GROUP = Group("costmargin, perceptron", "decode the dev set --passes times, each adding the 1-best to every "
              "sentence's relevant set, and retrain from zero on the sets between decodings; the first two decodings "
              "use the seed weights w1 (flat) and w2 (the model's own, or w1 perturbed as in the paper: --second-seed); "
              "moses.ini gets the weights of the pass with the best dev BLEU (--keep)")


@dataclass(frozen=True)
class RelevantSetSettings:
    """The loop's settings: passes: decodings of the dev set (L); n_best: block
    sequences added per sentence and decoding; flat: the seed weight w1 of
    every feature; perturbation: w2 = w1 + U[-p, p]; seed: of the random
    generator (w2 and the sentence orders); dedup: as ``Pool``; keep: which
    pass's weights are the output, one of ``KEEPS`` (module docstring);
    model_seed: w2 is the model's own weights (its moses.ini's) instead of w1
    perturbed (module docstring: why)."""

    passes: int = 30
    n_best: int = 1
    flat: float = 0.1
    perturbation: float = 0.01
    seed: int = 1
    dedup: str = "derivation"
    keep: str = "best-dev"
    model_seed: bool = True

    def __post_init__(self):
        if self.passes < SEEDS:
            raise PbmtError(f"passes must be at least {SEEDS} (the two seed decodings)")
        if self.n_best < 1:
            raise PbmtError("n-best must be at least 1")
        if self.perturbation < 0:
            raise PbmtError("the perturbation must not be negative")
        if self.dedup not in DEDUP:
            raise PbmtError(f"dedup must be one of {', '.join(DEDUP)}")
        if self.keep not in KEEPS:
            raise PbmtError(f"keep must be one of {', '.join(KEEPS)}")


PASSES = Option(("--passes",), "decodings of the dev set, the two seed decodings included (the paper's L)",
                group=GROUP, default=RelevantSetSettings.passes, type=int)
SGD_PASSES = Option(("--sgd-passes",), "passes over the relevant sets in each training step, from zero weights (R)",
                    "sgd_passes", GROUP, type=int)
LEARNING_RATE = Option(("--learning-rate",), "eta (default: costmargin {Costmargin.learning_rate:g}, perceptron "
                       "{Perceptron.learning_rate:g}, as in the paper)", "learning_rate", GROUP,
                       default=TUNER_DEFAULT, type=float)
# the options of the relevant-set loop (its settings: RelevantSetSettings) and of its tuners' training step
OPTIONS = (
    DEDUP_OPTION, KEEP, PASSES, SGD_PASSES, LEARNING_RATE,
    Option(("--flat-weight",), "every weight of the first seed decoding (w1) but UnknownWordPenalty0's, which "
           "keeps the model's", group=GROUP,
           default=RelevantSetSettings.flat, type=float),
    Option(("--second-seed",), "the second seed decoding's weights w2: the model's own, so a small dev set cannot "
           "end below them (docs/tuning-results.md), or the paper's w1 + U[-p, p] per weight", group=GROUP,
           default="model", choices=("model", "perturbed")),
    Option(("--perturbation",), "--second-seed perturbed: w2 = w1 + U[-p, p] per weight", group=GROUP,
           default=RelevantSetSettings.perturbation, type=float),
)


class RelevantSetTuner(Tuner):
    """The online training step of Costmargin or the perceptron (module docstring), a tuner of the relevant-set
    loop: ``fit`` trains weights from zero on the relevant sets ``data.pool``, ``sgd_passes`` passes (R) over
    the sentences in an order ``rng`` draws for each, step ``learning_rate`` (eta). ``fixed``: feature names
    whose weights stay those of ``initial_weights`` (default ``UnknownWordPenalty0``, which Moses never tunes:
    trained from zero it would end at 0, since relevant sets rarely hold an unknown word); they take no part
    in the training, as in ``pbmt.tune.mert``. After ``fit``: ``weights_`` float64[n_features], ``updates_``."""

    loop, reads, options = "relevant-set", ("pool",), OPTIONS

    def __init__(self, sgd_passes: int = 40, learning_rate: float = 1e-4,
                 fixed: tuple[str, ...] = ("UnknownWordPenalty0",)):
        if sgd_passes < 1:
            raise PbmtError("sgd passes must be at least 1")
        if not learning_rate > 0:
            raise PbmtError("the learning rate must be positive")
        self.sgd_passes = sgd_passes
        self.learning_rate = learning_rate
        self.fixed = fixed

    def fit(self, data: TuningData, initial_weights: np.ndarray, rng: np.random.Generator) -> "RelevantSetTuner":
        data.check(self)
        pool = data.pool
        tuned = tuned_columns(pool.layout, self.fixed)
        x = np.ascontiguousarray(pool.features * tuned)
        b = GAINS["bleu+1"].score(pool.stats)
        w = np.where(tuned, 0.0, np.asarray(initial_weights, dtype=np.float64))
        updates = 0
        for _ in range(self.sgd_passes):
            updates += self._epoch(rng.permutation(pool.n_sentences), pool.offsets, x, b, w)
        self.weights_, self.updates_ = w, updates
        return self


class Costmargin(RelevantSetTuner):
    """Costmargin (Table II, Eq. 4, 6, 7): the truth is each relevant set's highest-BLEU candidate (the seed
    approach of Section VI-B; ``pbmt.tune.block_training`` uses the oracle's V5)."""

    name, title, options = "costmargin", "Costmargin", (*OPTIONS, FEATURES)  # --features binary: BlockTraining

    def __init__(self, sgd_passes: int = 40, learning_rate: float = 1e-4,
                 fixed: tuple[str, ...] = ("UnknownWordPenalty0",)):
        super().__init__(sgd_passes, learning_rate, fixed)

    def _epoch(self, order, offsets, x, b, w) -> int:
        return costmargin_epoch(order, offsets, x, b, offsets, x, b, w, self.learning_rate)


class Perceptron(RelevantSetTuner):
    """The perceptron (Table III): the truth is each relevant set's highest-BLEU candidate, the alternative
    the highest-scoring one under the current weights."""

    name, title = "perceptron", "the perceptron"

    def __init__(self, sgd_passes: int = 40, learning_rate: float = 1e-5,
                 fixed: tuple[str, ...] = ("UnknownWordPenalty0",)):
        super().__init__(sgd_passes, learning_rate, fixed)

    def _epoch(self, order, offsets, x, b, w) -> int:
        return perceptron_epoch(order, offsets, x, b, w, self.learning_rate)


def seed_weights(layout: FeatureLayout, settings: RelevantSetSettings, rng: np.random.Generator,
                 model_weights: np.ndarray, fixed: tuple[str, ...] = ()) -> list[np.ndarray]:
    """The seed weights w1 (flat) and w2 (the model's, or w1 + U[-p, p] per feature), float64[n_features] each;
    the ``fixed`` features keep the model's weights in both."""
    model = np.array(model_weights, dtype=np.float64)
    tuned = tuned_columns(layout, fixed)
    w1 = np.where(tuned, settings.flat, model)
    if settings.model_seed:
        return [w1, model]
    return [w1, np.where(tuned, w1 + rng.uniform(-settings.perturbation, settings.perturbation, layout.size), model)]


@dataclass(frozen=True)
class Pass:
    """One decoding pass. BLEU in [0, 1]: ``sentence_bleu`` the averaged sentence BLEU+1 and
    ``corpus_bleu`` the corpus BLEU of the 1-best decoded with ``weights``; ``relevant_bleu``
    the relevant sets' corpus BLEU under ``weights`` after the pass's candidates joined."""

    number: int
    sentence_bleu: float
    corpus_bleu: float
    relevant_bleu: float
    new_candidates: int
    relevant_size: int
    decode_seconds: float
    online_seconds: float
    updates: int
    weights: tuple[float, ...]


@dataclass(frozen=True)
class RelevantSetResult:
    """The best pass's weights (float64[n_features]), that pass, and every pass."""

    weights: np.ndarray
    best: Pass
    passes: tuple[Pass, ...]


def relevant_set_tune(decoder: Decoder, references: References, config: MosesConfig, layout: FeatureLayout,
                      tuner: RelevantSetTuner, settings: RelevantSetSettings, out: str | Path, resume: bool = False,
                      quiet: bool = True, inputs: dict[str, str] | None = None) -> RelevantSetResult:
    """Run ``tuner``, Costmargin or the perceptron (module docstring), and write the outputs to the folder ``out``.

    decoder(weights) gives the n-best entries of every dev sentence, best first
    (``pbmt.tune.loop.DevDecoder`` decodes through ``pbmt.base.parallel``); config:
    the moses.ini into which the weights are written; layout: the decoder's
    feature columns. ``quiet``: no per-pass summary on standard error.
    ``inputs``: digests of the files the run reads
    (``pbmt.base.run_state.tuning_inputs``), which a resumed run must match.
    """
    run = RunFolder(out, "relevant-set", RELEVANT_SET_LOG.columns,
                    _fingerprint(tuner, settings, layout, references.n_sentences), inputs, resume, quiet,
                    called=tuner.called)
    out = run.out
    if run.resumed is not None:
        saved = run.resumed
        pool, rng = Pool.from_arrays(saved.arrays), restored_generator(saved.state["rng"])
        seeds = list(np.array(saved.arrays["seeds"], dtype=np.float64))
        records = [Pass(**{**r, "weights": tuple(r["weights"])}) for r in saved.state["records"]]
    else:
        pool = Pool.empty(layout, references.n_sentences)
        rng = np.random.default_rng(settings.seed)
        seeds = seed_weights(layout, settings, rng, layout.weights(config), tuner.fixed)
        records = []
    while len(records) < settings.passes:
        number = len(records) + 1
        started = time.perf_counter()
        updates = 0
        if number <= SEEDS:
            weights = seeds[number - 1]
        else:
            fitted = tuner.fit(TuningData(pool=pool), layout.weights(config), rng)
            weights, updates = fitted.weights_, fitted.updates_
        trained = time.perf_counter()
        batch, dev_bleu = decoded_pool(decoder(weights), layout, references, settings.dedup)
        sentence_bleu = float(GAINS["bleu+1"].score(batch.stats[batch.offsets[:-1]]).mean())
        pool, n_new = pool.merge(batch)
        decoded = time.perf_counter()
        records.append(Pass(number, sentence_bleu, dev_bleu,
                            pool.bleu(weights), n_new, pool.n_candidates, decoded - trained, trained - started,
                            updates, tuple(float(w) for w in weights)))
        tuned_config(config, layout, weights).write(out / f"run{number}.moses.ini")
        run.save({"seeds": np.stack(seeds), **pool.arrays()},
                 {"rng": generator_state(rng), "records": [asdict(r) for r in records]},
                 [_log_row(r, layout) for r in records])
        save_png(tuning_figure([read_tuning_log(out / LOG, [RELEVANT_SET_LOG])], pool=True), out / "dev-bleu.png")
        if not quiet:
            r = records[-1]
            print(f"pass {number}: dev sentence BLEU+1 {100 * r.sentence_bleu:.2f}, corpus BLEU "
                  f"{100 * r.corpus_bleu:.2f}, relevant sets {r.relevant_size} (+{n_new}), online step "
                  f"{r.online_seconds:.2f} s ({r.updates} updates), decode {r.decode_seconds:.1f} s", file=sys.stderr)
    best = kept_pass(records, settings.keep)
    weights = np.array(best.weights)
    tuned_config(config, layout, weights).write(out / "moses.ini")
    return RelevantSetResult(weights, best, tuple(records))


def kept_pass(passes: Sequence[Pass], keep: str) -> Pass:
    """The pass whose weights ``keep`` (one of ``KEEPS``) chooses; the first on ties."""
    if keep == "last":
        return passes[-1]
    return max(passes, key=lambda r: r.corpus_bleu if keep == "best-dev" else r.sentence_bleu)


def _fingerprint(tuner: RelevantSetTuner, settings: RelevantSetSettings, layout: FeatureLayout,
                 n_sentences: int) -> dict:
    """What a resumed run must share with the run it continues (any number of passes, any choice of the kept
    pass)."""
    return {"algorithm": tuner.name, **tuner.params(),
            **{k: v for k, v in asdict(settings).items() if k not in ("passes", "keep")},
            "features": list(layout.names), "sizes": list(layout.sizes), "sentences": n_sentences}


def _log_row(r: Pass, layout: FeatureLayout) -> list[str]:
    """``r`` as a row of ``RELEVANT_SET_LOG.columns`` (BLEU in percent)."""
    return [str(r.number), weight_line(layout, np.array(r.weights)), f"{100 * r.sentence_bleu:.4f}",
            f"{100 * r.corpus_bleu:.4f}", f"{100 * r.relevant_bleu:.4f}", str(r.new_candidates), str(r.relevant_size),
            f"{r.decode_seconds:.2f}", f"{r.online_seconds:.3f}", str(r.updates)]
