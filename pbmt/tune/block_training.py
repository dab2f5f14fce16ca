"""Costmargin on binary block features over a training subset (Tillmann & Zhang, Table II, Section IV).

Training-data mode: the "dev set" is a subset of the parallel training data
(e.g. 5,000 sentence pairs). Up front, the BLEU oracle search
(``pbmt.search.oracle``, MON/SWAP) finds each sentence's five best block
sequences against its reference: the truth V5. Then the data is decoded
``passes`` times (L = 30); every decoding adds each sentence's 1-best (or
n-best) block sequence to its relevant set, and between decodings the binary
feature weights are trained from zero on (V5, V_rel) by Costmargin SGD
(R = 40 passes, eta = 1e-4; ``sparse_costmargin_epoch``).

Features (``pbmt.model.block_features``): the five binary kinds, by name,
numbered as first seen; a block sequence is stored as its feature index
array and counts, so relevant sets stay compact (``RelevantSets``, written to
the run's ``checkpoint.npz`` after every pass; ``pbmt.base.run_state.RunFolder``).
The model's dense features keep their moses.ini weights as one fixed score
(Table IX's "binary features on top of fixed real-valued ones"); they also
make the decoder's first pass (zero binary weights) the initial alternative
z0, where the paper used a random bag of blocks. Every pass rewrites
``log.tsv`` (``BLOCK_TRAINING_LOG.columns``: the weights file the pass
decoded with, the BLEU of that decoding, ...; ``pbmt plot tuning`` reads it)
and ``training-bleu.png``. Every pass's weights make a model folder
``pass{l}/``: ``moses.ini`` (the dense weights, absolute paths),
``sparse-weights.txt`` (``pbmt.model.sparse.SparseWeights``) and ``pbmt.toml``
(``[sparse]`` families = ["block"], ``[search]`` reordering, ``[preprocess]``
of the model), which ``pbmt translate -f OUT/pass{l}/moses.ini`` decodes as
trained; the best pass by averaged sentence BLEU+1 is copied to ``OUT``
itself.

Decoding and the oracle run through ``pbmt.base.parallel`` (workers read the
weight files by path: with ``scheduler`` the run folder must be on a file
system the workers share).
"""

from __future__ import annotations

import hashlib
import sys
import threading
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Sequence

import numpy as np
from tqdm import tqdm

from pbmt.base.config import MosesConfig
from pbmt.base.errors import PbmtError
from pbmt.metrics.bleu import corpus_bleu
from pbmt.model.block_features import Block, BlockWeights, FeatureIndex, sequence_names
from pbmt.model.model import SearchSettings, TranslationModel
from pbmt.model.sparse import WEIGHTS_FILE, SparseModel, SparseWeights
from pbmt.base.parallel import ParallelMap
from pbmt.base.plots import LogFormat, read_tuning_log, save_png, tuning_figure
from pbmt.search.decoder import decode
from pbmt.search.derivation import derivation_blocks, score_derivation
from pbmt.search.options import TranslationOptions
from pbmt.search.oracle import oracle_search
from pbmt.base.run_state import LOG, Checkpoint, RunFolder, generator_state, restored_generator
from pbmt.tune._relevant_set_kernels import sparse_costmargin_epoch
from pbmt.tune.gains import GAINS
from pbmt.tune.loop import tuned_config
from pbmt.tune.options import FEATURES, ORACLE_BEAM
from pbmt.tune.pool import References
from pbmt.tune.relevant_set import LEARNING_RATE, PASSES, SGD_PASSES
from pbmt.tune.tuner import Tuner, TuningData

# log.tsv, one line per decoding pass of the training subset: the weights file decoded, the averaged sentence
# BLEU+1 and corpus BLEU of the 1-best (percent), the feature count, relevant-set size and timings
BLOCK_TRAINING_LOG = LogFormat("block-training", ("pass", "decoded_weights_file", "sentence_bleu", "corpus_bleu",
                                                  "features", "nonzero_weights", "relevant_size", "decode_s",
                                                  "online_s", "updates"),
                               bleu="corpus_bleu", bleu_label="training-subset BLEU", weights=None)


@dataclass(frozen=True)
class BlockTrainingSettings:
    """The loop's settings: passes: decodings (L, the first with zero binary weights); n_best: sequences added
    per sentence and decoding; seed: of the sentence orders."""

    passes: int = 30
    n_best: int = 1
    seed: int = 1

    def __post_init__(self):
        if min(self.passes, self.n_best) < 1:
            raise PbmtError("passes and n-best must be at least 1")


@dataclass(frozen=True)
class FoundSequence:
    """A block sequence found by a worker: its blocks, target text and fixed dense score (natural log)."""

    blocks: tuple[Block, ...]
    text: str
    base: float


class RelevantSets:
    """Block sequences per sentence as feature index arrays: ids int64 and counts float64 per sequence (CSR),
    with sentence BLEU+1 in [0, 1] and the fixed dense score; duplicates (same blocks) dropped."""

    def __init__(self, n_sentences: int):
        self.n_sentences = n_sentences
        self.sentence: list[int] = []
        self.bleu: list[float] = []
        self.base: list[float] = []
        self.ids: list[np.ndarray] = []
        self.counts: list[np.ndarray] = []
        self.keys: set[tuple[int, int]] = set()

    def __len__(self) -> int:
        return len(self.sentence)

    def add(self, sentence: int, key: int, ids: np.ndarray, counts: np.ndarray, bleu: float, base: float) -> bool:
        if (sentence, key) in self.keys:
            return False
        self.keys.add((sentence, key))
        self.sentence.append(sentence)
        self.bleu.append(bleu)
        self.base.append(base)
        self.ids.append(ids)
        self.counts.append(counts)
        return True

    def grouped(self) -> tuple[np.ndarray, ...]:
        """(offsets int64[n_sent+1], ptr int64[n+1], ids, counts, base, bleu), sequences grouped by sentence."""
        order = np.argsort(np.array(self.sentence, np.int64), kind="stable")
        offsets = np.zeros(self.n_sentences + 1, np.int64)
        np.cumsum(np.bincount(np.array(self.sentence, np.int64), minlength=self.n_sentences), out=offsets[1:])
        lengths = np.array([len(self.ids[c]) for c in order], np.int64)
        ptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        ids = np.concatenate([self.ids[c] for c in order]) if len(order) else np.zeros(0, np.int64)
        counts = np.concatenate([self.counts[c] for c in order]) if len(order) else np.zeros(0)
        return (offsets, ptr, ids, counts, np.array(self.base)[order], np.array(self.bleu)[order])

    def arrays(self, prefix: str) -> dict[str, np.ndarray]:
        lengths = np.array([len(i) for i in self.ids], np.int64)
        return {f"{prefix}_sentence": np.array(self.sentence, np.int64), f"{prefix}_lengths": lengths,
                f"{prefix}_ids": np.concatenate(self.ids) if self.ids else np.zeros(0, np.int64),
                f"{prefix}_counts": np.concatenate(self.counts) if self.counts else np.zeros(0),
                f"{prefix}_bleu": np.array(self.bleu), f"{prefix}_base": np.array(self.base),
                f"{prefix}_keys": np.array(sorted(self.keys), np.int64).reshape(-1, 2)}

    @classmethod
    def from_arrays(cls, arrays, prefix: str, n_sentences: int) -> "RelevantSets":
        sets = cls(n_sentences)
        splits = np.cumsum(arrays[f"{prefix}_lengths"])[:-1]
        sets.sentence = arrays[f"{prefix}_sentence"].tolist()
        sets.bleu = arrays[f"{prefix}_bleu"].tolist()
        sets.base = arrays[f"{prefix}_base"].tolist()
        sets.ids = list(np.split(arrays[f"{prefix}_ids"], splits)) if len(sets.sentence) else []
        sets.counts = list(np.split(arrays[f"{prefix}_counts"], splits)) if len(sets.sentence) else []
        sets.keys = {(int(a), int(b)) for a, b in arrays[f"{prefix}_keys"]}
        return sets


@dataclass(frozen=True)
class BlockPass:
    """One decoding pass: the weights file decoded (relative to the run's folder), averaged sentence BLEU+1
    and corpus BLEU of the 1-best (in [0, 1]), binary features known and with non-zero weight, relevant-set
    size, seconds, updates."""

    number: int
    weights_file: str
    sentence_bleu: float
    corpus_bleu: float
    features: int
    nonzero: int
    relevant_size: int
    decode_seconds: float
    online_seconds: float
    updates: int


@dataclass(frozen=True)
class BlockSets:
    """What block training fits on: each sentence's truth (V5) and relevant set, and the binary features known
    (``n_features``)."""

    truth: RelevantSets
    relevant: RelevantSets
    n_features: int


class BlockTraining(Tuner):
    """Costmargin SGD on binary block features (module docstring), a tuner of the block loop: ``fit`` trains
    binary weights float64[data.blocks.n_features] from zero on (truth, relevant sets), ``sgd_passes`` (R)
    passes in orders ``rng`` draws, step ``learning_rate`` (eta); ``initial_weights`` are not used (the dense
    weights stay fixed). oracle_n_best, oracle_beam: the search of the truth V5, which the loop makes with
    them. After ``fit``: ``weights_``, ``updates_``."""

    name, title, loop, reads, features = "costmargin", "Costmargin on binary features", "block", ("blocks",), \
        ("binary",)
    options = (PASSES, SGD_PASSES, LEARNING_RATE, FEATURES, ORACLE_BEAM)

    def __init__(self, sgd_passes: int = 40, learning_rate: float = 1e-4, oracle_n_best: int = 5,
                 oracle_beam: int = 100):
        if min(sgd_passes, oracle_n_best, oracle_beam) < 1:
            raise PbmtError("sgd passes, oracle n-best and oracle beam must be at least 1")
        if not learning_rate > 0:
            raise PbmtError("the learning rate must be positive")
        self.sgd_passes = sgd_passes
        self.learning_rate = learning_rate
        self.oracle_n_best = oracle_n_best
        self.oracle_beam = oracle_beam

    def fit(self, data: TuningData, initial_weights: np.ndarray, rng: np.random.Generator) -> "BlockTraining":
        data.check(self)
        t, r = data.blocks.truth.grouped(), data.blocks.relevant.grouped()
        v = np.zeros(data.blocks.n_features)
        updates = 0
        for _ in range(self.sgd_passes):
            updates += sparse_costmargin_epoch(rng.permutation(data.blocks.truth.n_sentences), t[0], t[1], t[2],
                                               t[3], t[4], t[5], r[0], r[1], r[2], r[3], r[4], r[5], v,
                                               self.learning_rate)
        self.weights_, self.updates_ = v, updates
        return self


class _Worker:
    """A loaded model (fixed dense weights, no sparse features) and, for decoding, the same model with the
    block weights of the last weight file read (by the first of the threads that share it)."""

    def __init__(self, model: TranslationModel, n_best: int, oracle_n_best: int, oracle_beam: int):
        self.model = model
        self.n_best, self.oracle_n_best, self.oracle_beam = n_best, oracle_n_best, oracle_beam
        self.path: str | None = None
        self.decoding = model
        self.lock = threading.Lock()

    def __reduce__(self):
        return type(self), (self.model, self.n_best, self.oracle_n_best, self.oracle_beam)

    def sequences(self, item: tuple[str, str | None, str, str]) -> list[FoundSequence]:
        kind, path, source, reference = item
        words = source.split()
        if kind == "oracle":
            model = self.model
            overlay = model.overlay(words + reference.split())  # one id per word in both sides
            options = TranslationOptions.build(model, overlay.ids(words), overlay)
            found = [o.derivation for o in oracle_search(options, overlay.ids(reference.split()),
                                                         self.oracle_n_best, self.oracle_beam)]
        else:
            with self.lock:
                if path != self.path:
                    blocks = SparseModel.of_blocks(BlockWeights([], np.zeros(0)))
                    self.decoding = replace(self.model, sparse=blocks.weights_from(SparseWeights.read(path), path))
                    self.path = path
                model = self.decoding
            options = TranslationOptions.of_words(model, words)
            found = [s.derivation for s in decode(model, options, self.n_best)]
        return [FoundSequence(tuple(derivation_blocks(d, options, options.vocab)),
                              " ".join(options.vocab.words(d.target_words(options))),
                              float(score_derivation(d, options, model) @ model.weights)) for d in found]


def _sequences(worker: _Worker, item) -> list[FoundSequence]:
    return worker.sequences(item)


def block_training(ini: str | Path, sources: Sequence[str], references: Sequence[str], tuner: BlockTraining,
                   settings: BlockTrainingSettings, out: str | Path, search: SearchSettings | None = None,
                   workers: int = 1, scheduler: str | None = None, resume: bool = False,
                   quiet: bool = True,
                   inputs: dict[str, str] | None = None,
                   threads: int = 1) -> tuple[BlockWeights, tuple[BlockPass, ...]]:
    """Train binary block feature weights (module docstring); returns the best pass's weights and every pass,
    and writes the model folder ``out`` (module docstring).

    sources, references: the training subset in the model's token form;
    search: search settings replacing the ini's (default: MON/SWAP, as the
    paper); writes to ``out`` (see the module docstring); ``inputs``: digests
    of the files the run reads (``pbmt.base.run_state.tuning_inputs``), which a
    resumed run must match; threads: decoding and oracle threads here (with one worker).
    """
    ini = Path(ini).resolve()
    if search is None:
        search = replace(SearchSettings.from_config(MosesConfig.read(ini)), reordering="mon-swap")
    folder_of_run = RunFolder(out, "block-training", BLOCK_TRAINING_LOG.columns,
                              {**tuner.params(), **{k: v for k, v in asdict(settings).items() if k != "passes"},
                               "sentences": len(sources), **{f"search {k}": v for k, v in asdict(search).items()}},
                              inputs, resume, quiet, called=tuner.called)
    out = folder_of_run.out
    model = replace(TranslationModel.load(ini, search), sparse=None)
    refs = References(list(references))
    state = _Worker(model, settings.n_best, tuner.oracle_n_best, tuner.oracle_beam)
    with ParallelMap(_sequences, state, workers, scheduler, threads=threads, size=len(sources)) as pmap:
        if (note := pmap.note("decoded")) and not quiet:
            tqdm.write(note, file=sys.stderr)

        def run(kind: str, path: str | None, desc: str) -> list[list[FoundSequence]]:
            progress = tqdm(total=len(sources), unit="sent", desc=desc, disable=quiet or None, file=sys.stderr,
                            leave=False)
            items = [(kind, path, s, r) for s, r in zip(sources, references)]
            found = list(pmap.map(items, progress=progress.update))
            progress.close()
            return found

        def add(sets: RelevantSets, found: list[list[FoundSequence]], index: FeatureIndex) -> tuple[int, np.ndarray]:
            texts = [s.text for seqs in found for s in seqs]
            sentence_of = np.array([i for i, seqs in enumerate(found) for _ in seqs], np.int64)
            stats = refs.stats(texts, sentence_of)
            bleu = GAINS["bleu+1"].score(stats)
            new = 0
            for k, (i, seq) in enumerate(zip(sentence_of, (s for seqs in found for s in seqs))):
                ids, counts = index.vector(sequence_names(seq.blocks))
                key = _key(seq.blocks)
                new += sets.add(int(i), key, ids, counts, float(bleu[k]), seq.base)
            firsts = np.searchsorted(sentence_of, np.arange(len(found)))
            return new, stats[firsts]

        if folder_of_run.resumed is not None:
            truth, relevant, index, rng, records = _restored(folder_of_run.resumed, len(sources))
        else:
            index = FeatureIndex()
            truth, relevant = RelevantSets(len(sources)), RelevantSets(len(sources))
            found = run("oracle", None, "oracle V5")
            empty = [s for s, seqs in enumerate(found) if not seqs]
            if empty:
                raise PbmtError(f"the oracle search found no block sequence for sentence(s) {empty[:5]} (0-based)")
            add(truth, found, index)
            rng = np.random.default_rng(settings.seed)
            records = []
        while len(records) < settings.passes:
            number = len(records) + 1
            started = time.perf_counter()
            updates = 0
            weights = np.zeros(len(index))
            if number > 1:
                fitted = tuner.fit(TuningData(blocks=BlockSets(truth, relevant, len(index))), weights, rng)
                weights, updates = fitted.weights_, fitted.updates_
            trained = time.perf_counter()
            folder = out / f"pass{number}"
            _write_model(model, SparseWeights(tuple(index.names[:len(weights)]), weights), folder)
            found = run("decode", str(folder / WEIGHTS_FILE), f"pass {number}")
            new, first = add(relevant, found, index)
            decoded = time.perf_counter()
            records.append(BlockPass(number, f"{folder.name}/{WEIGHTS_FILE}",
                                     float(GAINS["bleu+1"].score(first).mean()), corpus_bleu(first), len(index), int(np.count_nonzero(weights)), len(relevant),
                                     decoded - trained, trained - started, updates))
            folder_of_run.save({"names": np.frombuffer("\n".join(index.names).encode("utf-8"), np.uint8),
                                **truth.arrays("truth"), **relevant.arrays("relevant")},
                               {"rng": generator_state(rng), "records": [asdict(r) for r in records]},
                               [_log_row(r) for r in records])
            save_png(tuning_figure([read_tuning_log(out / LOG, [BLOCK_TRAINING_LOG])]), out / "training-bleu.png")
            if not quiet:
                r = records[-1]
                print(f"pass {number}: sentence BLEU+1 {100 * r.sentence_bleu:.2f}, corpus BLEU "
                      f"{100 * r.corpus_bleu:.2f}, {r.features} features ({r.nonzero} non-zero), relevant sets "
                      f"{r.relevant_size} (+{new}), online step {r.online_seconds:.1f} s, decode "
                      f"{r.decode_seconds:.0f} s", file=sys.stderr)
    best = max(records, key=lambda r: r.sentence_bleu)
    path = out / f"pass{best.number}" / WEIGHTS_FILE
    return _write_model(model, SparseWeights.read(path), out).blocks, tuple(records)


def _write_model(model: TranslationModel, weights: SparseWeights, folder: Path) -> SparseModel:
    """Write a model folder: ``model``'s dense part and settings, and the block family with ``weights``."""
    folder.mkdir(exist_ok=True)
    sparse = SparseModel.of_blocks(BlockWeights(weights.names, weights.values))
    tuned_config(model.config.without_sparse(), model.layout, model.weights).write(folder / "moses.ini")
    sparse.write(folder, model.toml_tables(folder))
    return sparse


def _key(blocks: Sequence[Block]) -> int:
    """A stable 62-bit key of a block sequence (spans and target phrases)."""
    text = repr([(b.src_start, b.src_end, b.target) for b in blocks]).encode("utf-8")
    return int.from_bytes(hashlib.blake2b(text, digest_size=8).digest(), "little") >> 2


def _restored(saved: Checkpoint, n_sentences: int):
    """(truth, relevant sets, feature index, random generator, passes) of a checkpoint."""
    text = bytes(saved.arrays["names"]).decode("utf-8")
    index = FeatureIndex(text.split("\n") if text else ())
    truth = RelevantSets.from_arrays(saved.arrays, "truth", n_sentences)
    relevant = RelevantSets.from_arrays(saved.arrays, "relevant", n_sentences)
    return (truth, relevant, index, restored_generator(saved.state["rng"]),
            [BlockPass(**r) for r in saved.state["records"]])


def _log_row(r: BlockPass) -> list[str]:
    """``r`` as a row of ``BLOCK_TRAINING_LOG.columns`` (BLEU in percent)."""
    return [str(r.number), r.weights_file, f"{100 * r.sentence_bleu:.4f}", f"{100 * r.corpus_bleu:.4f}",
            str(r.features), str(r.nonzero), str(r.relevant_size), f"{r.decode_seconds:.2f}",
            f"{r.online_seconds:.3f}", str(r.updates)]
