"""The decode-optimise loop of the pool tuners: decode, pool, optimise, repeat.

Each iteration (Och, 2003; Hopkins & May, 2011, Fig. 1):

1. decode the dev set to an n-best list with the current weights;
2. merge it into the accumulated pool (``pbmt.tune.pool``: duplicates by
   derivation or string dropped);
3. fit the optimiser on the whole pool, starting from the current weights;
   its weights are the next iteration's;
4. write ``run{k}.moses.ini``, the log, the plot and a checkpoint.

It stops when an n-best list adds nothing new to the pool (the optimiser is not
run again: the weights stay), when no weight moves by more than
``weight_tolerance``, or after ``max_iterations`` iterations. The tuned
weights in ``moses.ini`` are, by default, those whose decode had the highest
dev BLEU (mert-moses.pl's ``--return-best-dev``): MERT's weights can fit the
pool and still decode badly (the pool holds only what earlier weights found),
and the dev BLEU of each decode is the measured truth. ``output="last"``
keeps the last weights the optimiser returned (mert-moses.pl's default).

**Tuners.** Any tuner of ``pbmt.tune.tuner``'s contract whose ``loop`` is
"decode-optimise": each iteration calls ``tuner.fit(TuningData(pool=...),
weights, rng)`` with the whole pool (features float64[n_cand, n_features], BLEU
statistics int64[n_cand, 10], CSR by sentence), the weights the last n-best
list was decoded with, and the run's generator; a tuner that reads
``lattices`` (lattice MERT) also gets the last decode's search graphs and the
``references`` (the decoder then keeps them: ``DevDecoder(...,
lattices=True)``). Its parameters must not change between a run and its
resumption (they are part of the checkpoint's fingerprint).

**Sparse features.** With a model's sparse weights (``sparse``) and a tuner
that tunes them (``Tuner.sparse``: PRO, APRO, batch MIRA), the n-best lists'
sparse features (``name= value``, held by the pool as CSR columns) are tuned
beside the dense ones: the weight vector is the dense weights, then one per
sparse name the pool has seen (a name first seen starts at the model's
weight, else 0). Each iteration writes ``run{k}.sparse-weights.txt`` beside
``run{k}.moses.ini``, the model's sparse weights with the tuned ones put in
(``pbmt.model.sparse.SparseWeights``' file), and iteration k + 1's decode
reads it (``DevDecoder``); the kept ones are ``TuneResult.sparse``.

**Outputs** in the run's folder (``pbmt.base.run_state.RunFolder``): ``moses.ini``
(tuned; given the model, its ``pbmt.toml`` and sparse weights too), ``run{k}.moses.ini`` (the weights iteration k's optimiser proposed,
which iteration k + 1 decodes; with sparse features, also ``run{k}.sparse-weights.txt``), ``log.tsv`` (``LOOP_LOG.columns``, per
iteration: the weights decoded, the dev BLEU of their 1-best in percent, new
candidates, pool size, seconds decoding and optimising, the new weights and
the pool's BLEU under them), ``dev-bleu.png`` and ``checkpoint.npz`` (pool,
weights, random generator state, log; written atomically after every
iteration). ``resume=True`` continues from the checkpoint to exactly the
weights and log an uninterrupted run reaches (a folder without one starts
afresh); raising ``max_iterations`` continues a run that stopped at its limit.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Callable, Mapping, Sequence

import numpy as np
from tqdm import tqdm

from pbmt.base.config import MosesConfig
from pbmt.base.errors import PbmtError
from pbmt.metrics.bleu import corpus_bleu
from pbmt.model.features import FeatureLayout
from pbmt.model.model import TranslationModel
from pbmt.model.sparse import WEIGHTS_FILE, SparseWeights, nbest_name, weight_name
from pbmt.base.parallel import ParallelMap
from pbmt.base.run_state import LOG, RunFolder, generator_state, restored_generator
from pbmt.base.plots import LogFormat, read_tuning_log, save_png, tuning_figure
from pbmt.features.translation import Translator
from pbmt.base.nbest import NBestEntry
from pbmt.search.lattice import Lattice
from pbmt.tune.pool import Pool, References, pool_from_entries
from pbmt.tune.pool_lists import pool_from_lists
from pbmt.tune.tuner import Tuner, TuningData, fitted_weights

# log.tsv, one line per iteration: the weights decoded and their dev BLEU, then the weights the tuner proposed on
# the pool and the pool's BLEU under them (the next line decodes those weights)
LOOP_LOG = LogFormat("loop", ("iteration", "decoded_weights", "dev_bleu", "new_candidates", "pool_size", "decode_s",
                              "optimize_s", "new_weights", "new_weights_pool_bleu"),
                     pool="new_weights_pool_bleu", pool_label="pool BLEU under the new weights", starts_untuned=True)

OUTPUTS = ("best-dev", "last")


@dataclass(frozen=True)
class LoopSettings:
    """n_best: entries decoded per sentence; max_iterations; weight_tolerance: stop
    when no weight moves more than this; dedup: "derivation" or "string"; seed:
    of the optimiser's random generator; output: which weights ``moses.ini``
    gets, "best-dev" (those whose decode had the highest dev BLEU, as
    mert-moses.pl's --return-best-dev) or "last" (the optimiser's last)."""

    n_best: int = 100
    max_iterations: int = 25
    weight_tolerance: float = 1e-5
    dedup: str = "derivation"
    seed: int = 1
    output: str = "best-dev"

    def __post_init__(self):
        if self.output not in OUTPUTS:
            raise PbmtError(f"unknown output choice {self.output!r}; known: {', '.join(OUTPUTS)}")


@dataclass(frozen=True)
class Iteration:
    """One line of the log. ``dev_bleu`` is the corpus BLEU in [0, 1] of the 1-best decoded with
    ``decoded_weights``; ``new_weights`` those the optimiser then fitted on the pool (the next iteration's
    decoded weights), and ``pool_bleu`` the pool's corpus BLEU under them."""

    iteration: int
    decoded_weights: tuple[float, ...]
    dev_bleu: float
    new_candidates: int
    pool_size: int
    decode_seconds: float
    optimize_seconds: float
    new_weights: tuple[float, ...]
    pool_bleu: float


@dataclass(frozen=True)
class TuneResult:
    """The tuned weights (float64[n_features]), the log, why the loop stopped, and
    which weights were kept: ``decoded_in``, the iteration whose decode used the
    tuned weights (0: the optimiser's last weights, never decoded); ``sparse``: the tuned sparse weights
    (None: the loop tuned the dense ones alone)."""

    weights: np.ndarray
    iterations: tuple[Iteration, ...]
    stop_reason: str
    decoded_in: int
    sparse: SparseWeights | None = None

    @property
    def best(self) -> Iteration | None:
        """The iteration of the best dev BLEU (``best_iteration``)."""
        return best_iteration(self.iterations)


def best_iteration(iterations: Sequence[Iteration]) -> Iteration | None:
    """The iteration of the best dev BLEU, the latest of equal ones (the one ``--keep best-dev`` keeps and the
    closing line names); None before any."""
    return max(iterations, key=lambda r: (r.dev_bleu, r.iteration)) if iterations else None


# decoder(weights) or, tuning sparse features, decoder(weights, sparse weights file or None: the model's own)
Decoder = Callable[..., Sequence[Sequence[NBestEntry]]]


def tune(decoder: Decoder, references: References, config: MosesConfig, layout: FeatureLayout,
         tuner: Tuner, out: str | Path, settings: LoopSettings = LoopSettings(),
         resume: bool = False, quiet: bool = True, inputs: dict[str, str] | None = None,
         sparse: SparseWeights | None = None, model: TranslationModel | None = None,
         algorithm_names: Mapping[str, str] | None = None) -> TuneResult:
    """Run the loop (module docstring) and write its outputs to the folder ``out``.

    decoder(weights) gives the n-best entries of every dev sentence, best first
    (sentence ids 0..n-1 index ``references``); a decoder with a ``prepare`` method (``DevDecoder``) is given
    the next call's arguments as soon as the fit has made them; config: the moses.ini whose
    weights are the start and into which the tuned weights are written;
    layout: the decoder's feature columns. ``quiet``: no per-iteration
    summary on standard error. ``inputs``: digests of the files the run reads
    (``pbmt.base.run_state.tuning_inputs``), which a resumed run must match.
    ``sparse``: the model's sparse weights, to tune beside the dense ones (the tuner must tune them); the
    decoder is then called as ``decoder(weights, path)``, ``path`` the sparse weights file to decode with
    (None: the model's own). ``model``: the model tuned; the folder then also gets what its ``moses.ini``
    cannot say (``TranslationModel.write_settings``: ``pbmt.toml`` and the sparse families' files, their
    weights the kept ones), so that ``out / "moses.ini"`` loads as the tuned model. ``algorithm_names``: the
    ``--algorithm`` name of tuner classes by class name (``pbmt.tune.registry.algorithm_names``), which a
    refusal to resume a checkpoint of an older pbmt (its tuner named by class alone) says.
    """
    if tuner.loop != "decode-optimise":
        raise PbmtError(f"{tuner.name} is a tuner of the {tuner.loop} loop, not of the decode-optimise loop")
    if sparse is not None and not tuner.sparse:
        raise PbmtError(f"{tuner.name} tunes the dense weights alone, not sparse ones")
    start = {} if sparse is None else {nbest_name(n): float(v) for n, v in zip(sparse.names, sparse.values)}
    run = RunFolder(out, "loop", LOOP_LOG.columns,
                    _fingerprint(settings, layout, tuner, references.n_sentences, sparse is not None),
                    inputs, resume, quiet,
                    {"optimizer": ("--algorithm", {**(algorithm_names or {}), type(tuner).__name__: tuner.name})},
                    tuner.called)
    out = run.out
    if run.resumed is not None:
        saved = run.resumed
        pool, weights = Pool.from_arrays(saved.arrays), np.array(saved.arrays["weights"], dtype=np.float64)
        rng, finished = restored_generator(saved.state["rng"]), saved.state["finished"]
        records = [Iteration(**{**r, "decoded_weights": tuple(r["decoded_weights"]),
                                "new_weights": tuple(r["new_weights"])}) for r in saved.state["records"]]
    else:
        pool = Pool.empty(layout, references.n_sentences)
        weights = layout.weights(config)
        rng = np.random.default_rng(settings.seed)
        records, finished = [], None
    while finished is None and len(records) < settings.max_iterations:
        number = len(records) + 1
        started = time.perf_counter()
        nbest = decoder(*_decode_arguments(weights, layout, out, number, sparse))
        batch, dev_bleu = decoded_pool(nbest, layout, references, settings.dedup)
        pool, n_new = pool.merge(batch)
        if sparse is not None:  # the sparse names the pool has just seen join the weights
            weights = np.concatenate([weights, [start.get(name, 0.0) for name in
                                                pool.sparse_names[len(weights) - layout.size:]]])
        decoded = time.perf_counter()
        if n_new == 0:
            finished = "the n-best lists added no new hypothesis to the pool"
            new_weights = weights
        else:
            graphs = "lattices" in tuner.reads
            data = TuningData(pool=pool, lattices=decoder.lattices if graphs else None,
                              references=references if graphs else None)
            new_weights = fitted_weights(tuner, data, weights, rng)
            if np.max(np.abs(new_weights - weights)) < settings.weight_tolerance:
                finished = f"no weight moved by {settings.weight_tolerance:g} or more"
        optimized = time.perf_counter()
        records.append(Iteration(number, tuple(float(w) for w in weights[:layout.size]), dev_bleu, n_new,
                                 pool.n_candidates, decoded - started, optimized - decoded,
                                 tuple(float(w) for w in new_weights[:layout.size]), pool.bleu(new_weights)))
        weights = new_weights
        _write_config(config, layout, weights[:layout.size], out / f"run{number}.moses.ini",
                      _sparse_file(out, number) if sparse is not None else None)
        if sparse is not None:
            _decoder_weights(start, pool, weights).write(_sparse_file(out, number))
        if finished is None and len(records) < settings.max_iterations and hasattr(decoder, "prepare"):
            decoder.prepare(*_decode_arguments(weights, layout, out, number + 1, sparse))
        run.save({"weights": weights, **pool.arrays()},
                 {"rng": generator_state(rng), "finished": finished, "records": [asdict(r) for r in records]},
                 [_log_row(r, layout) for r in records])
        save_png(tuning_figure([read_tuning_log(out / LOG, [LOOP_LOG])], pool=True), out / "dev-bleu.png")
        if not quiet:
            r = records[-1]
            print(f"iteration {number}: dev BLEU {100 * r.dev_bleu:.2f}, pool BLEU {100 * r.pool_bleu:.2f} "
                  f"under the new weights, pool {r.pool_size} (+{n_new}), decode {r.decode_seconds:.1f} s, "
                  f"optimise {r.optimize_seconds:.1f} s", file=sys.stderr)
    stop_reason = finished or f"reached the iteration limit ({settings.max_iterations})"
    kept = _sparse_decoded(out, len(records) + 1, sparse)
    weights = weights[:layout.size]
    if settings.output == "best-dev" and records:
        best = best_iteration(records)
        weights = np.array(best.decoded_weights)
        kept = _sparse_decoded(out, best.iteration, sparse)
    decoded_in = next((r.iteration for r in reversed(records) if np.array_equal(r.decoded_weights, weights)
                       and _nonzero(_sparse_decoded(out, r.iteration, sparse)) == _nonzero(kept)), 0)
    _write_config(config, layout, weights, out / "moses.ini")
    if model is not None:
        (model if kept is None else replace(model, sparse=model.sparse.weights_from(kept))).write_settings(out)
    return TuneResult(weights, tuple(records), stop_reason, decoded_in, kept)


def _decode_arguments(weights: np.ndarray, layout: FeatureLayout, out: Path, number: int,
                      sparse: SparseWeights | None) -> tuple:
    """What iteration ``number`` calls the decoder with: the weights, or, tuning sparse features, the dense
    weights and the sparse weights file the previous iteration wrote (None in the first: the model's)."""
    if sparse is None:
        return (weights,)
    return weights[:layout.size], _sparse_file(out, number - 1) if number > 1 else None


def _sparse_file(out: Path, number: int) -> Path:
    """The sparse weights iteration ``number``'s optimiser proposed (iteration ``number`` + 1 decodes them)."""
    return out / f"run{number}.sparse-weights.txt"


def _decoder_weights(start: dict[str, float], pool: Pool, weights: np.ndarray) -> SparseWeights:
    """The sparse weights to decode with: those of ``start`` (the model's, by n-best name) with the pool's
    sparse columns at ``weights[layout.size:]``; by weights-file name."""
    named = {**start, **dict(zip(pool.sparse_names, weights[pool.layout.size:].tolist()))}
    return SparseWeights(tuple(weight_name(name) for name in named), np.array(list(named.values()), np.float64))


def _sparse_decoded(out: Path, number: int, start: SparseWeights | None) -> SparseWeights | None:
    """The sparse weights iteration ``number`` decodes with: the model's (``start``) in iteration 1, else
    those of ``_sparse_file(out, number - 1)`` (None when the loop tunes no sparse weights)."""
    if start is None or number == 1:
        return start
    return SparseWeights.read(_sparse_file(out, number - 1))


def _nonzero(weights: SparseWeights | None) -> dict[str, float]:
    """The non-zero weights by name (empty for None)."""
    if weights is None:
        return {}
    return {name: value for name, value in zip(weights.names, weights.values.tolist()) if value != 0.0}


def decoded_pool(nbest: Sequence[Sequence[NBestEntry]], layout: FeatureLayout, references: References,
                 dedup: str = "derivation") -> tuple[Pool, float]:
    """Decoded n-best lists (each sentence's best first) as a pool, and the corpus BLEU in [0, 1] of their 1-bests.

    Lists the decoder keeps as arrays (``NBestList``) are pooled from them (``pool_from_lists``), others (and
    lists ``pool_from_lists`` leaves) entry by entry: the same pool. A sentence's repeated keys stay in it:
    merging it into the pool (``Pool.merge``), as its callers do, counts each once."""
    empty = [s for s, entries in enumerate(nbest) if not entries]
    if empty:
        raise PbmtError(f"the decoder found no translation of dev sentence(s) {', '.join(map(str, empty[:5]))} "
                        "(0-based)")
    batch = pool_from_lists(nbest, layout, references, dedup, unique=False)
    if batch is None:
        batch = pool_from_entries([e for entries in nbest for e in entries], layout, references, dedup, unique=False)
    return batch, corpus_bleu(batch.stats[batch.offsets[:-1]])


def _fingerprint(settings: LoopSettings, layout: FeatureLayout, tuner: Tuner, n_sentences: int,
                 sparse: bool = False) -> dict:
    """What a resumed run must share with the run it continues (any iteration limit, tolerance and output);
    ``sparse``: the run tunes sparse weights too. A sparse cut-off of 1 (none) is left out, so that a run
    fingerprinted before tuners had one resumes."""
    params = {k: v for k, v in tuner.params().items() if (k, v) != ("min_sentences", 1)}
    return {**{k: v for k, v in asdict(settings).items() if k not in ("max_iterations", "weight_tolerance", "output")},
            "features": list(layout.names), "sizes": list(layout.sizes), "sentences": n_sentences,
            "optimizer": type(tuner).__name__, **{f"optimizer {k}": v for k, v in params.items()},
            **({"sparse features": True} if sparse else {})}


def weight_line(layout: FeatureLayout, weights: np.ndarray) -> str:
    """Weights in moses.ini ``[weight]`` form on one line: ``LM0= 0.5 WordPenalty0= -1``."""
    return " ".join(f"{name}= " + " ".join(format(v, ".9g") for v in values)
                    for name, values in layout.as_dict(weights).items())


def tuned_config(config: MosesConfig, layout: FeatureLayout, weights: np.ndarray) -> MosesConfig:
    """``config`` with ``weights`` (float64[layout.size]; features not in ``layout`` keep
    theirs) and absolute feature paths, so that it can be written to any folder; when its lines declare
    sparse families, its ``[weight-file]`` is ``sparse-weights.txt`` beside it, which
    ``TranslationModel.write_settings`` writes."""
    features = tuple(replace(f, args={**f.args, "path": os.path.abspath(config.resolve(f.args["path"]))})
                     if "path" in f.args else f for f in config.features)
    tuned = replace(config.with_weights(layout.as_dict(weights)), features=features)
    return tuned.with_weight_file(WEIGHTS_FILE) if tuned.sparse_features else tuned


def _write_config(config: MosesConfig, layout: FeatureLayout, weights: np.ndarray, path: Path,
                  sparse_file: Path | None = None) -> None:
    """Write ``tuned_config`` to ``path``, its sparse families' weights (if any) those of ``sparse_file``."""
    tuned = tuned_config(config, layout, weights)
    if sparse_file is not None and tuned.sparse_features:
        tuned = tuned.with_weight_file(sparse_file.name)
    tuned.write(path)


def _log_row(r: Iteration, layout: FeatureLayout) -> list[str]:
    """``r`` as a row of ``LOOP_LOG.columns`` (BLEU in percent)."""
    return [str(r.iteration), weight_line(layout, np.array(r.decoded_weights)), f"{100 * r.dev_bleu:.4f}",
            str(r.new_candidates), str(r.pool_size), f"{r.decode_seconds:.2f}", f"{r.optimize_seconds:.2f}",
            weight_line(layout, np.array(r.new_weights)), f"{100 * r.pool_bleu:.4f}"]


class DevDecoder:
    """Decodes dev sentences to n-best lists under given weights, on ``workers`` local processes or ``scheduler``.

    model: the loaded model, with the search settings to decode with (e.g.
    MON/SWAP reordering); it travels to workers by its moses.ini's path
    (``pbmt.model.model``); sources: dev sentences in the model's token form;
    scheduler: the address of a dask cluster to decode on (``pbmt.base.parallel``).
    Call with weights float64[n_features] (the model's layout) to get each
    sentence's n-best entries, best first, with features from
    ``score_derivation``. A progress bar unless ``quiet``. With
    ``lattices``, each call also sets ``lattices`` to the lattices of the
    search graphs decoded (``pbmt.search.lattice.Lattice``, one per
    sentence; None where no translation was found), for lattice MERT. A
    second argument, a sparse weights file (``pbmt.model.sparse.SparseWeights``),
    gives the model's sparse features those weights (every process reads it).
    """

    def __init__(self, model: TranslationModel, sources: Sequence[str], n_best: int, workers: int = 1,
                 quiet: bool = True, scheduler: str | None = None, lattices: bool = False, threads: int = 1):
        self.sources = list(sources)
        self.quiet = quiet
        self.keep_lattices = lattices
        self.lattices: list[Lattice | None] = []
        self._map = ParallelMap(_decode, _NBestWorker(model, n_best, lattices), workers, scheduler, threads=threads,
                                size=len(self.sources))
        self._preparing: threading.Thread | None = None
        if (note := self._map.note("decoded")) and not quiet:
            tqdm.write(note, file=sys.stderr)

    def __call__(self, weights: np.ndarray, sparse: Path | None = None) -> list[tuple[NBestEntry, ...]]:
        key = _key(weights, sparse)
        items = [(key, i, line) for i, line in enumerate(self.sources)]
        progress = tqdm(total=len(items), unit="sent", desc="decoding", disable=self.quiet or None, file=sys.stderr,
                        leave=False)
        self.lattices = []  # the last decode's are freed before the next decode's arrive
        results = list(self._map.map(items, progress=progress.update))
        progress.close()
        if self.keep_lattices:
            self.lattices = [lattice for _, lattice in results]
            return [entries for entries, _ in results]
        return results

    def prepare(self, weights: np.ndarray, sparse: Path | None = None) -> None:
        """Start pruning the model's table for the next call's ``weights`` (and ``sparse`` file) on a thread of its
        own, so that it overlaps what the caller does before that call (the loop's run files, checkpoint and
        plot) instead of holding the decode threads at the call's start; the call then finds it done (or waits
        for it). Workers in other processes prune their own copy at the call, as before."""
        if not self._map.distributed:
            self._join()
            self._preparing = threading.Thread(target=self._map.state.prepare, args=(_key(weights, sparse),),
                                               name="pbmt-prune", daemon=True)
            self._preparing.start()

    def _join(self) -> None:
        if self._preparing is not None:
            self._preparing.join()
            self._preparing = None

    def close(self) -> None:
        self._join()
        self._map.close()

    def __enter__(self) -> "DevDecoder":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class _NBestWorker:
    """A loaded model, re-pruned whenever the weights change (once, by the first of the threads that share
    it); with ``lattices``, it returns each sentence's n-best entries with its search graph's lattice. The
    weights are a key (dense weights, sparse weights file or None)."""

    def __init__(self, model: TranslationModel, n_best: int, lattices: bool = False):
        self.base = model
        self.n_best = n_best
        self.lattices = lattices
        self.pruned: tuple[tuple | None, Translator | None] = (None, None)
        self.lock = threading.Lock()

    def __reduce__(self):
        return type(self), (self.base, self.n_best, self.lattices)

    def translator(self, weights: tuple[tuple[float, ...], str | None]) -> Translator:
        """The translator of the model under ``weights``, pruned for them unless it was for the last weights."""
        with self.lock:
            if weights != self.pruned[0]:
                dense, sparse = weights
                model = self.base.with_weights(np.array(dense))
                if sparse is not None:
                    model = replace(model, sparse=model.sparse.weights_from(SparseWeights.read(sparse), sparse))
                self.pruned = (weights, Translator(model, n_best=self.n_best, tokenized=True))
            return self.pruned[1]

    def prepare(self, weights: tuple[tuple[float, ...], str | None]) -> None:
        """``translator(weights)`` ahead of the decode (``DevDecoder.prepare``); an error is left to the decode's
        own call, which meets it again and raises it where the loop handles it."""
        try:
            self.translator(weights)
        except Exception:  # noqa: BLE001 - raised again by the decode's call, on the loop's thread
            pass

    def nbest(self, weights: tuple[tuple[float, ...], str | None], sentence: int, line: str):
        translator = self.translator(weights)
        if self.lattices:
            translation, lattice = translator.translate_with_lattice(sentence, line)
            return translation.nbest, lattice
        return translator.translate(sentence, line).nbest


def _key(weights: np.ndarray, sparse: Path | None) -> tuple[tuple[float, ...], str | None]:
    """The key a decode's weights travel under: the dense weights and the sparse weights file (None: the model's)."""
    return tuple(float(w) for w in weights), None if sparse is None else str(sparse)


def _decode(worker: _NBestWorker, item: tuple[tuple, int, str]):
    return worker.nbest(*item)
