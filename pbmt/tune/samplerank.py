"""SampleRank tuning on the Gibbs sampler (Haddow, Arun & Koehn, 2011, Algorithm 1), a tuner of its own loop.

Unlike the n-best tuners of ``pbmt.tune.loop``, SampleRank never runs the
decoder: its chains (``pbmt.tune.sampler_chains``, where the algorithm is
described) walk translation hypotheses with the sampler and update the
weights online, pair by pair, epoch after epoch. ``SampleRank`` runs the
chains on workers, mixes their weights after each epoch, measures the
averaged weights on held-out (and tuning) sentences, keeps the run's
checkpoint and ``log.tsv``, and declares its command-line options.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import math
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Sequence

import numpy as np
from tqdm import tqdm

from pbmt.base.documents import LEVELS, Documents
from pbmt.base.parallel import ParallelMap
from pbmt.base.plots import MISSING, LogFormat
from pbmt.base.run_state import Checkpoint, RunFolder
from pbmt.features import KINDS, FeatureSpec, build, name_features, parse_requests
from pbmt.model.model import TranslationModel
from pbmt.tune.held_out import held_out_sentences
from pbmt.tune.loop import weight_line
from pbmt.tune.options import FEATURES, GAIN, WORD_CLASSES
from pbmt.tune.sampler_chains import (PRESETS, STARTS, UPDATES, Chains, DevSet, Settings, chain_work, encode_dev, mix,
                                      n_weights, outputs_bleu, shards, sparse_weights)
from pbmt.tune.tuner import TUNER_DEFAULT, Group, Option, Tuner, TuningData

# log.tsv, one line per epoch: the average of the weights collected so far, the BLEU (percent, MISSING when not
# measured) of the decoder's 1-best under them on the tuning sentences and on the held-out ones, and the mixed
# weights the chains ended the epoch with
SAMPLERANK_LOG = LogFormat("samplerank", ("epoch", "averaged_weights", "dev_bleu", "held_out_bleu", "updates", "steps",
                                          "seconds", "mixed_weights"), weights="averaged_weights")

@dataclass(frozen=True)
class EpochLog:
    """One epoch: updates and steps over all chains, the mixed weights, wall-clock seconds, the average of
    every weight vector collected so far (the tuned weights had the run stopped here), and the corpus BLEU in
    [0, 1] of the stack decoder's 1-best under that average on the tuning sentences (``dev_bleu``) and on the
    held-out ones (``held_out_bleu``), NaN where not measured."""

    epoch: int
    updates: int
    steps: int
    weights: np.ndarray
    seconds: float
    averaged: np.ndarray
    dev_bleu: float = math.nan
    held_out_bleu: float = math.nan


def epoch_line(e: EpochLog) -> str:
    """What a run prints after an epoch, as the other tuners print an iteration: the averaged weights' BLEU on
    the tuning (and held-out) sentences, the updates and the time."""
    measured = [f"{name} BLEU {100 * value:.2f}" for name, value in (("dev", e.dev_bleu), ("held-out", e.held_out_bleu))
                if not math.isnan(value)]
    return (f"epoch {e.epoch}: {', '.join(measured) or 'dev BLEU not measured (--no-dev-bleu)'} under the "
            f"averaged weights, {e.updates} updates in {e.steps} steps, {e.seconds:.1f} s")


@dataclass(frozen=True)
class SamplerTask:
    """What SampleRank's ``fit`` samples: ``model`` (tuned from its dense and sparse weights), the tuning
    sentences ``sources`` and their ``references`` (lines in the model's token form), their ``documents``
    (covering exactly those sentences: batches and shards then never cross a document boundary, see
    ``batches``, and whole documents are held out), and the run: ``inputs`` (digests of the files it reads,
    ``pbmt.base.run_state.tuning_inputs``), ``resume`` (continue the run saved in the tuner's ``out``) and
    ``quiet`` (no progress bars)."""

    model: TranslationModel
    sources: Sequence[str]
    references: Sequence[str]
    documents: Documents | None = None
    inputs: dict[str, str] | None = None
    resume: bool = False
    quiet: bool = True

    @property
    def start_weights(self) -> np.ndarray:
        """The model's weights, float64[n_weights(model)]: dense, then sparse."""
        sparse = sparse_weights(self.model.sparse) if self.model.sparse is not None else []
        return np.concatenate([self.model.weights, sparse]).astype(np.float64)


GROUP = Group("samplerank", "sample hypotheses with the Gibbs sampler and update the weights online; moses.ini gets "
              "the averaged weights of the last epoch, or with --held-out those of the epoch that decodes the held-out "
              "sentences best (Haddow et al.'s 'maximum held-out' weights)")
DOCUMENTS = Group("samplerank: documents and global features", "sentence- and document-level features learnt with "
                  "the others and written to global-weights.txt for pbmt translate --documents "
                  "(docs/global-features.md)")


def _preset(flags: tuple[str, ...], help: str, parameter: str, shown: str = "", **kwargs) -> Option:
    """An option a preset sets: not given by default, its help naming SampleRank's default."""
    return Option(flags, f"{help} (default: {{SampleRank.{parameter}{shown}}})", parameter, GROUP,
                  default=TUNER_DEFAULT, dest=flags[-1].lstrip("-").replace("-", "_"), **kwargs)


_PRESET_OPTIONS = (
    _preset(("--samples-per-sentence",), "sampler steps per batch sentence, each a possible update",
            "samples_per_sentence", type=int),
    _preset(("--burn-in-per-sentence",), "sampler steps per batch sentence before updates start",
            "burn_in_per_sentence", type=int),
    _preset(("--samplerank-update",), "the update rule: the paper's MIRA-like step on a misranked (sample, oracle) "
            "pair; the same step on the oracle (hope) and the neighbour violating its margin most (fear); or a "
            "gradient step on the neighbourhood's expected batch BLEU after every sample (docs/samplerank.md "
            "compares them)", "update", choices=UPDATES),
    _preset(("--samplerank-c",), "the clip C of a MIRA-like update (the paper's 0.01)", "c", ":g", type=float),
    _preset(("--samplerank-step",), "expected-gain: the step size, in weight units per nat-scaled covariance of "
            "batch BLEU and a feature", "step", ":g", type=float),
    _preset(("--gain-scale",), "nats of model score per unit of batch BLEU (in [0, 1]) in the oracle's choice and "
            "the update's margin (the paper's 1)", "gain_scale", ":g", type=float),
    _preset(("--temperature",), "samples are drawn with probability proportional to exp(model score / T) (the "
            "paper's 1; below 1 the chains stay near the model's best)", "temperature", ":g", type=float),
    _preset(("--chain-start",), "where each batch's chains start: the gloss (the paper's) or the stack decoder's "
            "1-best under the current weights", "start", choices=STARTS),
    _preset(("--chains",), "chains on shards of the dev set, mixed after each epoch (run on --threads threads, "
            "or --workers processes, several in turn on each)", "chains", type=int),
)
_FLAGS = {**{o.parameter: o.flags[-1] for o in _PRESET_OPTIONS}, "gain": "--gain"}
_DESCRIBED = {"paper": "Haddow et al.'s settings", "expected-gain": "the variant of docs/samplerank.md"}


def _shown(value) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


OPTIONS = (
    GAIN,
    FEATURES,
    WORD_CLASSES,
    Option(("--samplerank-preset",), "set the options below as NAME says, unless they are given: " + "; ".join(
        f"{name} ({_DESCRIBED[name]}): " + " ".join(f"{_FLAGS[p]} {_shown(v)}" for p, v in values.items())
        for name, values in sorted(PRESETS.items(), key=lambda item: item[0] != "paper")), group=GROUP,
        default=None, choices=sorted(PRESETS), metavar="NAME"),
    Option(("--epochs",), "passes over the tuning sentences, each of --burn-in-per-sentence and "
           "--samples-per-sentence sampler steps per sentence", "epochs", GROUP, type=int),
    Option(("--held-out",), "hold out N dev sentences, spread evenly over it (with --documents whole documents, "
           "about N sentences), never tuned on: after every epoch they are decoded (1-best) with its averaged "
           "weights, the held-out BLEU is logged and moses.ini gets the best epoch's weights (the earliest of "
           "equals). Costs a 1-best decode of N sentences per epoch", "held_out", GROUP, default=TUNER_DEFAULT,
           type=int, metavar="N"),
    Option(("--batch-size",), "sentences per batch (the gain is the batch's BLEU)", "batch_size", GROUP, type=int),
    *_PRESET_OPTIONS,
    Option(("--dev-bleu",), "after every epoch, decode the tuning sentences (1-best) with its averaged weights and "
           "log their BLEU (for the log only); it adds about a sixth to an epoch at 100 + 100 steps per sentence "
           "(docs/samplerank.md)", "dev_bleu", GROUP, default=True, boolean=True),
    Option(("--documents",), "a keys file (one 'BOOK CHAPTER:VERSE' per dev line); batches then never cross a "
           "document boundary, and --held-out holds out whole documents", group=DOCUMENTS, default=None, type=Path,
           metavar="KEYS"),
    Option(("--document-level",), "what a document is in --documents", group=DOCUMENTS,
           default=inspect.signature(Documents.read).parameters["level"].default, choices=LEVELS),
    Option(("--global-features",), "global features to learn (with --documents every batch is one whole "
           "document); registered: " + ", ".join(sorted(k for k, v in KINDS.items() if not v.nbest_only)),
           "global_features", DOCUMENTS, default=TUNER_DEFAULT, metavar="NAME[:ARG][,...]"),
)


class SampleRank(Tuner):
    """SampleRank tuning of a model's dense weights, and of its sparse ones when it has them (see the module
    docstring; ``model.sparse``'s families are tuned from its weights), a tuner (``pbmt.tune.tuner``) that
    runs its own loop over the sampler's batches (``data.sampler``, a ``SamplerTask``).

    epochs: passes over the tuning set; chains: chains run side by side on
    shards of it, mixed after each epoch; workers / scheduler / threads: where the
    chains run (``pbmt.base.parallel.ParallelMap``: one worker runs them here, on
    ``threads`` threads over one model, or one after another on one; with global
    features, which may keep state of their own, on one thread; the result does
    not depend on it); out: the run's folder
    (``pbmt.base.run_state.RunFolder``), whose checkpoint and ``log.tsv``
    (``SAMPLERANK_LOG.columns``) are rewritten after every epoch and from which
    a ``SamplerTask`` with ``resume`` continues. global_features:
    ``pbmt.features.FeatureSpec``s whose weights (from 0) are learnt with the
    others, or their requests as ``--global-features`` spells them
    ("NAME[:ARG][,...]", named against the model's features at ``fit``); with
    them, the task's documents make every batch one whole document
    (document-level features see it).
    held_out: hold out about this many sentences (``held_out_sentences``;
    0: none), decode them after every epoch and keep the averaged weights of
    the epoch with the best held-out BLEU (the earliest of equals); dev_bleu:
    decode the tuning sentences after every epoch too (for the log only).
    After ``fit``: ``weights_`` (dense, then sparse, then global weights: the
    averaged weights of the kept epoch), ``kept_epoch_`` (1-based; the last
    without held-out sentences), ``feature_names_`` (the global columns'
    names), ``last_weights_`` (the mixed weights after the last epoch),
    ``log_`` (one ``EpochLog`` per epoch), ``dev_`` (the whole set in word
    ids), ``held_out_`` (sorted ``int64`` indices of the held-out sentences)
    and ``run_`` (the ``RunFolder``, or None without ``out``).
    """

    name, title, loop, reads, features, gain_level = "samplerank", "SampleRank", "sampler", ("sampler",), \
        ("dense", "boundary", "distortion"), "batch"
    options, presets, preset_option = OPTIONS, PRESETS, "samplerank_preset"

    def __init__(self, epochs: int = 5, batch_size: int = Settings.batch_size,
                 samples_per_sentence: int = Settings.samples_per_sentence,
                 burn_in_per_sentence: int = Settings.burn_in_per_sentence, c: float = Settings.c, chains: int = 4,
                 workers: int = 1, scheduler: str | None = None, out: str | Path | None = None, *,
                 gain_scale: float = Settings.gain_scale, margin_updates: bool = Settings.margin_updates,
                 update: str = Settings.update, temperature: float = Settings.temperature, start: str = Settings.start,
                 step: float = Settings.step, gain: str = Settings.gain,
                 global_features: Sequence[FeatureSpec] | str | None = (), held_out: int = 0,
                 dev_bleu: bool = False, threads: int = 1):
        if epochs < 1 or chains < 1 or held_out < 0:
            raise ValueError(f"epochs and chains must be at least 1 and held_out at least 0, got {epochs}, {chains} "
                             f"and {held_out}")
        self.epochs, self.chains, self.workers, self.scheduler = epochs, chains, workers, scheduler
        self.settings = Settings(batch_size, samples_per_sentence, burn_in_per_sentence, c, gain_scale,
                                 margin_updates, update, temperature, start, step, gain)
        self.out = out
        self.global_features = global_features if isinstance(global_features, str) else tuple(global_features or ())
        self.held_out, self.dev_bleu, self.threads = held_out, dev_bleu, threads

    def fit(self, data: TuningData, initial_weights: np.ndarray, rng: np.random.Generator) -> "SampleRank":
        """Tune ``data.sampler.model``'s weights from ``initial_weights`` (float64[n_weights(model)]: dense, then
        sparse) on the task's sentences; the run seed is drawn from ``rng``. A resumed run continues the run
        saved in ``out`` (its seed, weights and sums) instead of starting anew, if its settings and inputs are
        this run's (which it says unless quiet, as it shows progress bars)."""
        data.check(self)
        task = data.sampler
        model, sources, references, documents = task.model, task.sources, task.references, task.documents
        resume, inputs, quiet = task.resume, task.inputs, task.quiet
        initial_weights = np.asarray(initial_weights, dtype=np.float64)
        if initial_weights.shape != (n_weights(model),):
            raise ValueError(f"{len(initial_weights)} initial weights for a model of {n_weights(model)}")
        specs = self.global_specs(model)
        if len(sources) != len(references) or not len(sources):
            raise ValueError(f"{len(sources)} sources for {len(references)} references")
        chunk_of = None
        if documents is not None:
            if documents.n_lines != len(sources):
                raise ValueError(f"the documents cover {documents.n_lines} sentences, the tuning set has "
                                 f"{len(sources)}")
            # global features: whole documents; else runs of at most batch_size lines of one document
            chunk_of = documents.document_of() if specs else documents.chunks(self.settings.batch_size)
        held = self.held_out_ = (held_out_sentences(len(sources), self.held_out, documents) if self.held_out
                                 else np.zeros(0, np.int64))
        tuning = np.setdiff1d(np.arange(len(sources)), held)
        global_features = build(specs, model.vocab)  # first: their LMs add words to the model's
        dev = self.dev_ = encode_dev(model, sources, references)
        self.feature_names_ = tuple(f"{f.names[0]}_{i}" if f.size > 1 else f.names[0]
                                    for f in global_features for i in range(f.size))
        seed = int(rng.integers(2**63))
        weights = np.concatenate([initial_weights, np.zeros(len(self.feature_names_))])
        weight_sum, collected, start, log = np.zeros_like(weights), 0, 0, []
        run = self.run_ = None
        if self.out is not None:
            run = self.run_ = RunFolder(self.out, "samplerank", SAMPLERANK_LOG.columns,
                                        self._fingerprint(model, specs, dev.sources, chunk_of, held), inputs, resume,
                                        quiet, called=self.called)
        if run is not None and run.resumed is not None:
            seed, weights, weight_sum, collected, log = _restored(run.resumed)
            start = len(log)

        def save() -> None:
            if run is not None:
                run.save({"weights": weights, "weight_sum": weight_sum,
                          "log_weights": np.array([e.weights for e in log]),
                          "log_averaged": np.array([e.averaged for e in log]),
                          "log_dev_bleu": np.array([e.dev_bleu for e in log]),
                          "log_held_out_bleu": np.array([e.held_out_bleu for e in log])},
                         {"seed": seed, "collected": collected,
                          "log": [[e.epoch, e.updates, e.steps, e.seconds] for e in log]},
                         [log_row(model, e) for e in log])

        chains = min(self.chains, len(tuning) if chunk_of is None else len(np.unique(chunk_of[tuning])))
        state = Chains(model, dev, chunk_of, tuple(specs), global_features)
        # global features keep chains on one thread here: then a short dev set is no reason to keep workers unstarted
        with (ParallelMap(functools.partial(chain_work, self.settings, seed), state, self.workers,
                          self.scheduler, threads=1 if specs else self.threads,
                          size=None if specs else len(sources)) as pool,
              tqdm(total=self.epochs, initial=min(start, self.epochs), unit="epoch", desc="SampleRank",
                   disable=quiet or None, file=sys.stderr) as progress):
            if (note := pool.note("sampled")) and not quiet:
                tqdm.write(note, file=sys.stderr)
            measure = functools.partial(self._measured, pool, n_weights(model), dev, tuning, quiet)
            log, measured = measure(log)
            if measured:
                save()  # a resumed run measures what its first part left out
            for epoch in range(start, self.epochs):
                started = time.perf_counter()
                items = [("epoch", epoch, chain, shard, weights)
                         for chain, shard in enumerate(shards(tuning, chains, seed, epoch, chunk_of))]
                results = list(pool.map(items, chunksize=1))
                weights, epoch_sum, epoch_count = mix(results)
                weight_sum, collected = weight_sum + epoch_sum, collected + epoch_count
                log.append(EpochLog(epoch + 1, sum(r.updates for r in results), sum(r.steps for r in results),
                                    weights, time.perf_counter() - started, weight_sum / collected))
                log = measure(log)[0]
                save()
                if len(held):
                    progress.set_postfix_str(f"held-out BLEU {100 * log[-1].held_out_bleu:.2f}", refresh=False)
                progress.update()
                if not quiet:
                    progress.write(epoch_line(log[-1]), file=sys.stderr)
        kept = (max(range(len(log)), key=lambda i: (log[i].held_out_bleu, -i)) if len(held)
                else len(log) - 1)
        self.weights_ = log[kept].averaged
        self.kept_epoch_ = log[kept].epoch
        self.last_weights_ = weights
        self.log_ = log
        return self

    def _measured(self, pool: ParallelMap, tuned: int, dev: DevSet, tuning: np.ndarray, quiet: bool,
                  log: list[EpochLog]) -> tuple[list[EpochLog], bool]:
        """``log`` with the held-out and (``dev_bleu``) tuning-set BLEU of every epoch that lacks them, decoded
        on ``pool`` under the epoch's averaged weights (their first ``tuned``: dense and sparse), and whether
        any was missing."""
        def bleu(weights: np.ndarray, sentences: np.ndarray, name: str) -> float:
            key = tuple(float(w) for w in weights[:tuned])
            with tqdm(total=len(sentences), unit="sent", desc=f"decoding the {name}", leave=False,
                      disable=quiet or None, file=sys.stderr) as progress:
                outputs = list(pool.map([("decode", key, int(s)) for s in sentences], progress=progress.update))
            return outputs_bleu(outputs, sentences, dev.references)

        out, measured = [], False
        for e in log:
            if len(self.held_out_) and math.isnan(e.held_out_bleu):
                e, measured = replace(e, held_out_bleu=bleu(e.averaged, self.held_out_, "held-out sentences")), True
            if self.dev_bleu and math.isnan(e.dev_bleu):
                e, measured = replace(e, dev_bleu=bleu(e.averaged, tuning, "tuning sentences")), True
            out.append(e)
        return out, measured

    def params(self) -> dict:
        """The constructor's parameters as set (``Settings``' fields among them)."""
        return {**self.settings.__dict__, "epochs": self.epochs, "chains": self.chains, "workers": self.workers,
                "scheduler": self.scheduler, "out": self.out, "global_features": self.global_features,
                "held_out": self.held_out, "dev_bleu": self.dev_bleu}

    def global_specs(self, model: TranslationModel) -> list[FeatureSpec]:
        """The global features' specs: as given, or named from their requests against ``model``'s features."""
        if not isinstance(self.global_features, str):
            return list(self.global_features)
        return name_features(parse_requests(self.global_features), model.layout.names, nbest=False)

    def _fingerprint(self, model, specs, sources, chunk_of, held: np.ndarray) -> dict:
        """What a resumed run must share with the run it continues: settings, chains, global features, start
        weights, sparse features, tuning set, batching and held-out sentences (any number of epochs)."""
        start = hashlib.sha256(np.asarray(model.weights, np.float64).tobytes())
        if model.sparse is not None:
            start.update(b"sparse" + "\n".join(model.sparse.names()).encode() + sparse_weights(model.sparse).tobytes())
        tuning_set = hashlib.sha256()
        if chunk_of is not None:
            tuning_set.update(b"chunks" + np.asarray(chunk_of, np.int64).tobytes())
        for s in sources:
            tuning_set.update(np.asarray(s, np.int32).tobytes() + b"|")
        return {**self.settings.__dict__, "chains": self.chains,
                "global features": [list(f.__dict__.values()) for f in specs],
                "start weights": start.hexdigest(), "tuning set": tuning_set.hexdigest(), "held out": held.tolist()}


def log_row(model: TranslationModel, e: EpochLog) -> list[str]:
    """``e`` as a row of ``SAMPLERANK_LOG.columns`` (dense weights; BLEU in percent, or ``MISSING``)."""
    dense = model.layout.size
    return [str(e.epoch), weight_line(model.layout, e.averaged[:dense]), _percent(e.dev_bleu),
            _percent(e.held_out_bleu), str(e.updates), str(e.steps), f"{e.seconds:.2f}",
            weight_line(model.layout, e.weights[:dense])]


def _percent(bleu: float) -> str:
    return MISSING if math.isnan(bleu) else f"{100 * bleu:.4f}"


def _restored(saved: Checkpoint) -> tuple[int, np.ndarray, np.ndarray, int, list[EpochLog]]:
    """(seed, mixed weights, sum and count of the collected weights, log) of a checkpoint (BLEU NaN where the
    run did not measure it)."""
    state, arrays = saved.state, saved.arrays
    log = [EpochLog(int(row[0]), int(row[1]), int(row[2]), w, float(row[3]), a, float(d), float(h))
           for row, w, a, d, h in zip(state["log"], arrays["log_weights"], arrays["log_averaged"],
                                      arrays["log_dev_bleu"], arrays["log_held_out_bleu"])]
    return int(state["seed"]), arrays["weights"], arrays["weight_sum"], int(state["collected"]), log
