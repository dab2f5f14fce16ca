"""Claim: pbmt's tuners, each tuned on all of dev and scored on all of test, against Moses's own MERT.

Setting: the shared Moses model (``bible-es-en/model/moses.ini``, untuned
train-model.perl weights), tuned on the whole dev set (``dev.tok.es`` /
``dev.tok.en``, 1,031 verses) and scored on the whole test set (Acts,
``test.tok.es``, 1,006 verses): sacrebleu (``tokenize='none'``) of the 1-best
under the tuned weights against ``test.tok.en``. One cell per (tuner, seed);
each tuner runs with every seed of --seeds (a seed, 2; a range, 1-3; or both, comma-separated: 1-2,5).

Tuners (``--tuners``, comma-separated; default: all):

- ``mert``, ``pro``, ``apro``, ``mira`` (batch MIRA at kbmira's settings, but
  each answer taken three tenths of the way, pbmt's default Ψ):
  ``pbmt tune``'s loop, 100-best, --iterations
  iterations, the tuned weights those of the best dev decode (``--keep best-dev``,
  as mert-moses.pl's --return-best-dev); ``mira-psi0.1``, ``mira-psi0.3``,
  ``mira-psi1``: batch MIRA with each answer taken part of the way
  (``--interpolation`` 0.1, 0.3, by direction: ``pbmt.tune.mira``), or the
  whole way, as kbmira;
- ``pro-paper``, ``apro-paper``: PRO and APRO with the papers' gain, BLEU+1,
  and Hopkins & May's Ψ = 0.1 (the defaults rank by BLEU+1 with the unclipped
  brevity penalty, and APRO takes Ψ = 1);
  ``pro-unclipped``, ``apro-unclipped``: the unclipped gain at Ψ = 0.1
  (``--gain bleu+1-unclipped``);
  ``apro-unclipped-psi0.5``, ``apro-unclipped-psi1``: the same APRO with
  ``--interpolation`` 0.5 and 1 (Dreyer & Dong's Figure 1 runs APRO with
  0.1, 0.5 and 1);
- ``mert-interpolated``: pbmt's MERT with ``--interpolation 0.5`` (each
  step half the way from the decoded weights to the pool's optimum) in the
  distortion space, where it is undamped by default;
  ``mert-mon-swap-undamped``: MERT in the MON/SWAP space with
  ``--interpolation 1``, where 0.5 is the default;
- ``lattice-mert``: the same loop with MERT's line searches over every path
  of each iteration's search graphs (Macherey et al., 2008; no random
  restarts by default);
- ``mert-moses-defaults``: pbmt's MERT with the guards off (unbounded
  line search, no significance test, signs free): Moses's optimiser;
- ``samplerank``: the paper's rule and settings (``--samplerank-preset
  paper``: Haddow et al., 2011: gain scale 1, C = 0.01, 100 burn-in and 100
  sampled steps per sentence, 8 chains, run in turn on --workers);
  ``samplerank-expected-gain``: the variant that measured best on dev[:100]
  (``--samplerank-preset expected-gain``: expected-gain update, chains
  started at the decoder's 1-best, temperature 0.1, four chains) with the
  paper's batch gain (``--gain batch-bleu``);
  ``samplerank-scaled``: the paper's update with the batch gain scaled
  (S = 300) and a small clip (C = 1e-4), four chains;
  ``samplerank-boundary``: SampleRank's defaults with the boundary family
  (target word-class bigrams across phrase boundaries, ``--features
  boundary``) over --word-classes classes induced from the training target
  side; ``samplerank-distortion``: the same with the distortion bins
  (``--features distortion``: a weight per bin of a block's jump);
  ``samplerank-all``: the same with both (a model folder of the shared
  model with a ``[sparse]`` table of the two families, zero weights, as
  the loop's ``all`` below without the block family, whose option-local
  weights SampleRank does not update);
  ``ALGORITHM-FAMILY`` (ALGORITHM ``pro``, ``apro`` or ``mira``; FAMILY
  ``boundary``, ``phrase-pairs``, ``lexicon``, ``length``, ``distortion`` or
  ``all``):
  ``pbmt tune``'s loop at the tuner's defaults over the dense features and a
  sparse family's, which the n-best lists carry: the boundary family
  (target word-class bigrams across phrase boundaries, over --word-classes
  classes induced from the training target side), or the block family's
  phrase-pair indicators (``blk:``), source-word/target-word pairs (``w:``,
  a discriminative lexicon) or phrase lengths (``len:``) (``[sparse]
  block-kinds``), or the bins of jumps (``db_``, the distortion family), or
  all of them; the model folder of the cell (``model0``:
  the shared model with a ``pbmt.toml`` ``[sparse]`` table of the family,
  zero weights) is what it tunes; ``mira-FAMILY-psi0.3``,
  ``mira-FAMILY-psi1``: the same with ``--interpolation`` 0.3 or 1 (kbmira's
  whole step);
  ``pro-FAMILY-l1-N``, ``apro-FAMILY-l1-N`` (FAMILY ``lexicon`` or ``all``, N
  3 or 10): a stronger L1 penalty on the sparse weights (``--sparse-l1 N``;
  the default is 1), against the word pairs' fit to dev;
  ``CELL-min3``, ``CELL-min5`` (CELL one of the above of the families
  ``phrase-pairs``, ``lexicon``, ``length`` or ``all``: ``mira-all-psi0.3-min3``,
  ``pro-all-min3``): the same with a cut-off (``--sparse-min-sentences``
  3 or 5): only the sparse features present in the candidates of at least
  that many dev sentences of the pool are tuned, the others stay at 0;
  ``samplerank-expected-gain-unclipped``: the expected-gain variant with the
  batch gain's brevity penalty unclipped (``--gain batch-bleu-unclipped``),
  SampleRank's defaults; every SampleRank cell
  with --held-out sentences of dev, spread over it, never tuned on and
  decoded after every epoch, the weights of the epoch best on them kept (the
  paper's "maximum held-out"), and the rest of dev decoded after every epoch
  too (its dev BLEU; --epochs epochs);
- ``costmargin-1``, ``perceptron-1``, ``costmargin-10``, ``perceptron-10``:
  Tillmann & Zhang's relevant-set tuners with 1-best or 10-best relevant sets,
  in the MON/SWAP search space, beside ``mert-mon-swap`` (MERT in that space);
- ``rescore-mert``, ``rescore-pro``, ``rescore-apro``, ``rescore-listnet``:
  n-best rescoring (``pbmt rescore``) of the untuned weights' 100-best lists of
  dev and test, with the 5-gram LM, the length ratio and consensus features;
- ``moses-mert``: Moses's ``mert-moses.pl`` with Moses 1 as its decoder (cube
  pruning, 2 threads), 100-best, --iterations iterations, mert's random seed
  ``1000 * seed`` at every iteration; the weights of its best dev decode are
  decoded by pbmt on test, as pbmt's tuners' (``../shared/tools/moses`` must
  exist, else the cell is skipped).

Printed: per cell, the dev BLEU of every iteration's decode (epoch, pass;
SampleRank: of the tuning part of dev, then the held-out BLEU per epoch and
the epoch kept), the kept weights' test BLEU, the cell's wall time and, for a
tuned model with sparse features, how many have a non-zero weight; each cell
against ``mert`` of the same seed on test, and a sparse cell against its
tuner without sparse features (``mira-lexicon`` against ``mira``, ``mira-all-psi0.3`` against
``mira-psi0.3``, ``samplerank-distortion`` against ``samplerank-expected-gain-unclipped``, SampleRank's
defaults) when that cell was run
(the difference and the paired bootstrap, Koehn 2004, 1,000 resamples);
then per tuner the mean ±
sd over seeds of the best dev BLEU and of test BLEU, the mean wall time and the
load average (1 minute, sampled every 30 s while its cells ran). Untuned
weights' test BLEU is scored once beside them.

--json FILE keeps every finished cell; a run given the same FILE skips the
cells it holds and resumes a cell that was killed (each tuner's own
checkpoint in --out). --quick: a smoke run (20 dev and test sentences, 2
iterations, epochs and passes, 5 held-out sentences, one seed, 10-best).

    python benchmarks/bench_tune.py --json tune.json --out runs [--tuners mert,moses-mert,pro]
        [--seeds 1-3] [--iterations 5] [--epochs 5] [--held-out 100] [--workers 2] [--sentences N]
        [--test-sentences N] [--quick] [--record NAME]

--record NAME also writes the cells of --tuners and --seeds (and the untuned row) as the doc table record
docs/runs/NAME.json, which ``python docs/generated.py`` renders into the doc's block of that name
(--record-note TEXT: a sentence under the table); --no-run runs no cell, so that a record is written from
the cells --json already holds.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import sacrebleu

from pbmt.base.files import atomic_write
from pbmt.metrics.bleu import HYP_LEN, REF_LEN, corpus_bleu, paired_bootstrap, segment_stats

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "docs"))
from generated import write_table  # noqa: E402  (docs/generated.py: the docs' records of measured tables)
DATA = ROOT.parent / "shared" / "data" / "bible-es-en"
MOSES = ROOT.parent / "shared" / "tools" / "moses"
PBMT = [sys.executable, "-m", "pbmt"]

LOOP = {
    "mert": ["--algorithm", "mert"],
    "mira": ["--algorithm", "mira"],
    **{f"mira-psi{psi}": ["--algorithm", "mira", "--interpolation", psi] for psi in ("0.1", "0.3", "1")},
    "mert-moses-defaults": ["--algorithm", "mert", "--max-step", "none", "--significance", "0", "--no-keep-signs"],
    "pro": ["--algorithm", "pro"],
    "apro": ["--algorithm", "apro"],
    "pro-paper": ["--algorithm", "pro", "--gain", "bleu+1"],
    "apro-paper": ["--algorithm", "apro", "--gain", "bleu+1", "--interpolation", "0.1"],
    "pro-unclipped": ["--algorithm", "pro", "--gain", "bleu+1-unclipped"],
    "apro-unclipped": ["--algorithm", "apro", "--gain", "bleu+1-unclipped"],
    **{f"apro-unclipped-psi{psi}": ["--algorithm", "apro", "--gain", "bleu+1-unclipped", "--interpolation", psi]
       for psi in ("0.5", "1")},
    "mert-mon-swap": ["--algorithm", "mert", "--reordering", "mon-swap"],
    "mert-interpolated": ["--algorithm", "mert", "--interpolation", "0.5"],
    "mert-mon-swap-undamped": ["--algorithm", "mert", "--reordering", "mon-swap", "--interpolation", "1"],
    "lattice-mert": ["--algorithm", "lattice-mert"],
}
SAMPLERANK = {
    "samplerank": ["--algorithm", "samplerank", "--samplerank-preset", "paper"],
    "samplerank-expected-gain": ["--algorithm", "samplerank", "--samplerank-preset", "expected-gain", "--gain",
                                 "batch-bleu"],
    "samplerank-scaled": ["--algorithm", "samplerank", "--samplerank-update", "sample-oracle", "--gain-scale", "300",
                          "--samplerank-c", "0.0001", "--chains", "4"],
    "samplerank-expected-gain-unclipped": ["--algorithm", "samplerank", "--samplerank-preset", "expected-gain",
                                           "--gain", "batch-bleu-unclipped"],
    "samplerank-boundary": ["--algorithm", "samplerank", "--features", "boundary"],
    "samplerank-distortion": ["--algorithm", "samplerank", "--features", "distortion"],
    "samplerank-all": ["--algorithm", "samplerank", "--features", "boundary"],
}
# the sparse families of the loop's cells: (the families of [sparse], the block family's kinds)
FAMILIES = {"boundary": (("boundary",), ()), "phrase-pairs": (("block",), ("block",)),
            "lexicon": (("block",), ("word",)), "length": (("block",), ("length",)),
            "distortion": (("distortion",), ()),
            "all": (("boundary", "block", "distortion"), ("block", "word", "length"))}
# SampleRank's sparse cells: the model folder of each (a key of MODELS), or None for the shared model (the
# features then come from --features); SampleRank updates the boundary weights and the distortion bins in place,
# but not the block family's option-local weights, so its "all" is those two families
SAMPLERANK_FAMILY_MODEL = {"samplerank-boundary": None, "samplerank-distortion": None,
                           "samplerank-all": "boundary-distortion"}
# the model folders the sparse cells tune: the loop's families and SampleRank's every family
MODELS = {**FAMILIES, "boundary-distortion": (("boundary", "distortion"), ())}
# PRO, APRO and batch MIRA over a family's n-best features in pbmt tune's loop: (algorithm, family, the
# tuner's options, the dense cell to compare with): at the tuner's defaults; MIRA with each answer taken three
# tenths of the way (--interpolation 0.3); PRO and APRO with a stronger L1 penalty on the sparse weights; any
# of those cells with a cut-off (-minK: only the sparse features present in at least K dev sentences tuned)
SPARSE_LOOP = {
    **{f"{algorithm}-{family}": (algorithm, family, [], algorithm) for algorithm in ("pro", "apro", "mira")
       for family in FAMILIES},
    **{f"mira-{family}-psi{psi}": ("mira", family, ["--interpolation", psi], f"mira-psi{psi}")
       for family in FAMILIES for psi in ("0.3", "1")},
    **{f"{algorithm}-{family}-l1-{l1}": (algorithm, family, ["--sparse-l1", l1], algorithm)
       for algorithm in ("pro", "apro") for family in ("lexicon", "all") for l1 in ("3", "10")},
}
SPARSE_LOOP.update({f"{cell}-min{k}": (algorithm, family, [*options, "--sparse-min-sentences", k], dense)
                    for cell, (algorithm, family, options, dense) in list(SPARSE_LOOP.items())
                    if family in ("phrase-pairs", "lexicon", "length", "all") for k in ("3", "5")})
# cells that read the bench's word classes (induced once from the training target side, --word-classes N)
CLASSES = ("samplerank-boundary", *(cell for cell, (_, family, _, _) in SPARSE_LOOP.items()
                                    if "boundary" in FAMILIES[family][0]))
RELEVANT_SET = {f"{algorithm}-{n}": ["--algorithm", algorithm, "--reordering", "mon-swap", "--n-best-size", str(n)]
                for n in (1, 10) for algorithm in ("costmargin", "perceptron")}
RESCORE = {f"rescore-{algorithm}": algorithm for algorithm in ("mert", "pro", "apro", "listnet")}
TUNERS = [*LOOP, *SAMPLERANK, *SPARSE_LOOP, *RELEVANT_SET, *RESCORE, "moses-mert"]


class LoadSampler:
    """The 1-minute load average, sampled every ``period`` seconds in a thread while it runs."""

    def __init__(self, period: float = 30.0):
        self.samples = [os.getloadavg()[0]]
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(period,), daemon=True)

    def _run(self, period: float) -> None:
        while not self._stop.wait(period):
            self.samples.append(os.getloadavg()[0])

    def __enter__(self) -> "LoadSampler":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self.samples.append(os.getloadavg()[0])


def run(command: list, cwd: Path | None = None, log: Path | None = None) -> None:
    """Run ``command``; its output goes to ``log`` (appended); a failure stops the benchmark naming the log."""
    with open(log or os.devnull, "a", encoding="utf-8") as out:
        out.write(f"$ {' '.join(map(str, command))}\n")
        out.flush()
        done = subprocess.run([str(c) for c in command], cwd=cwd, stdout=out, stderr=subprocess.STDOUT)
    if done.returncode:
        sys.exit(f"failed ({done.returncode}): {' '.join(map(str, command))}; see {log}")


def lines(path: Path, limit: int | None) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()[:limit]


def bleu(hypotheses: list[str], references: list[str]) -> float:
    return sacrebleu.corpus_bleu(hypotheses, [references], tokenize="none", force=True).score


def read_log(path: Path, column: str) -> list[float]:
    """A column of a tuning log (log.tsv) as numbers, '-' (not measured) left out."""
    rows = [line.split("\t") for line in path.read_text(encoding="utf-8").splitlines()]
    index = rows[0].index(column)
    return [float(row[index]) for row in rows[1:] if row[index] != "-"]


class Bench:
    def __init__(self, args: argparse.Namespace):
        self.args = args
        self.ini = args.data / "model" / "moses.ini"
        self.out = args.out.resolve()
        self.out.mkdir(parents=True, exist_ok=True)
        n, m = args.sentences, args.test_sentences
        self.dev = self._subset("dev", n)
        self.test = self._subset("test", m)
        self.test_refs = lines(self.test[1], None)
        self.common = ["--workers", str(args.workers)]

    def _subset(self, name: str, limit: int | None) -> tuple[Path, Path]:
        """The first ``limit`` lines of the tokenised source and reference (the full files without a limit)."""
        src, ref = self.args.data / f"{name}.tok.es", self.args.data / f"{name}.tok.en"
        if limit is None:
            return src, ref
        pair = []
        for path in (src, ref):
            target = self.out / f"{name}.{limit}{path.suffix}"
            with atomic_write(target) as handle:
                handle.write("\n".join(lines(path, limit)) + "\n")
            pair.append(target)
        return pair[0], pair[1]

    def test_bleu(self, folder: Path, ini: Path, extra: list[str] = ()) -> float:
        """Test BLEU of the 1-best under ``ini`` (a moses.ini, or the weights of ``extra``'s --weights)."""
        output = folder / "test.out"
        run([*PBMT, "translate", "-f", ini, "--tokenized", "-i", self.test[0], "-o", output, "-q", *self.common,
             *extra], log=folder / "bench.log")
        return bleu(lines(output, None), self.test_refs)

    def tune_command(self, folder: Path, seed: int, options: list[str], ini: Path | None = None) -> list:
        resume = ["--resume"] if folder.exists() else []
        return [*PBMT, "tune", "-f", ini or self.ini, "--src", self.dev[0], "--refs", self.dev[1], "--tokenized", "--out",
                folder, "--seed", seed, "-q", *self.common, *resume, *options]

    def loop_cell(self, tuner: str, folder: Path, seed: int) -> dict:
        run(self.tune_command(folder, seed, [*LOOP[tuner], "--iterations", self.args.iterations,
                                             "--n-best-size", self.args.nbest]), log=self.out / f"{folder.name}.log")
        return {"dev_bleu": read_log(folder / "log.tsv", "dev_bleu")}

    def word_classes(self) -> Path:
        """The target side's word classes (``--word-classes`` of them, the exchange algorithm), induced once."""
        path = self.out / f"word-classes.{self.args.word_classes}.txt"
        if not path.exists():
            from pbmt.train.word_classes import induce_classes

            induce_classes(self.args.data / "train.tok.en", self.args.word_classes).classes.write(path)
        return path

    def samplerank_cell(self, tuner: str, folder: Path, seed: int) -> dict:
        classes = ["--word-classes", self.word_classes()] if tuner in CLASSES else []
        model = SAMPLERANK_FAMILY_MODEL.get(tuner)
        run(self.tune_command(folder, seed, [*SAMPLERANK[tuner], *classes, "--epochs", self.args.epochs, "--held-out",
                                             self.args.held_out, "--dev-bleu"], model and self.family_model(model)),
            log=self.out / f"{folder.name}.log")
        held_out = read_log(folder / "log.tsv", "held_out_bleu")
        return {"dev_bleu": read_log(folder / "log.tsv", "dev_bleu"), "held_out_bleu": held_out,
                "held_out": self.args.held_out,
                "kept_epoch": max(range(len(held_out)), key=lambda k: (held_out[k], -k)) + 1}

    def family_model(self, family: str) -> Path:
        """The moses.ini of a model folder (made once per family): the shared model with ``family``'s features,
        zero weights, in its ``pbmt.toml``."""
        from pbmt.model import distortion_bins
        from pbmt.model.block_features import BlockWeights
        from pbmt.model.sparse import SparseModel, WordClasses

        families, kinds = MODELS[family]
        model = self.out / f"model-{family}"
        if not (model / "moses.ini").exists():
            model.mkdir(parents=True, exist_ok=True)
            features = {"boundary": None, "weights": np.zeros(0)}
            if "boundary" in families:
                boundary = SparseModel.new(WordClasses.read(self.word_classes()))
                features = {"boundary": boundary.boundary, "weights": boundary.weights}
            if kinds:
                features.update(blocks=BlockWeights([], np.zeros(0)), block_kinds=kinds)
            if "distortion" in families:
                features.update(jumps=np.zeros(len(distortion_bins.NAMES)))
            SparseModel(**features).write(model)
            text = self.ini.read_text(encoding="utf-8")
            for name in ("phrase-table.gz", "reordering-table.gz", "../lm3.arpa.gz"):
                text = text.replace(f"path={name}", f"path={(self.ini.parent / name).resolve()}")
            with atomic_write(model / "moses.ini") as handle:
                handle.write(text)
        return model / "moses.ini"

    def sparse_loop_cell(self, tuner: str, folder: Path, seed: int) -> dict:
        """``pbmt tune``'s loop with the family's features in the n-best lists (``family_model``)."""
        algorithm, family, options, _ = SPARSE_LOOP[tuner]
        run(self.tune_command(folder, seed, ["--algorithm", algorithm, *options, "--iterations", self.args.iterations,
                                             "--n-best-size", self.args.nbest], self.family_model(family)),
            log=self.out / f"{folder.name}.log")
        return {"dev_bleu": read_log(folder / "log.tsv", "dev_bleu")}

    def relevant_set_cell(self, tuner: str, folder: Path, seed: int) -> dict:
        run(self.tune_command(folder, seed, [*RELEVANT_SET[tuner], "--passes", self.args.passes]),
            log=self.out / f"{folder.name}.log")
        return {"dev_bleu": read_log(folder / "log.tsv", "dev_bleu")}

    def nbest(self, name: str, source: Path) -> Path:
        """The untuned weights' 100-best list of ``source`` (decoded once, shared by every rescoring cell)."""
        path = self.out / f"{name}.nbest"
        if not path.exists():
            partial = self.out / f"{name}.nbest.partial"
            run([*PBMT, "translate", "-f", self.ini, "--tokenized", "-i", source, "-o", self.out / f"{name}.1best",
                 "--n-best", partial, "--n-best-size", self.args.nbest, "-q", *self.common],
                log=self.out / "nbest.log")
            partial.rename(path)
        return path

    def rescore_cell(self, tuner: str, folder: Path, seed: int) -> dict:
        folder.mkdir(parents=True, exist_ok=True)
        features = ["--lm", self.args.data / "lm5.arpa.gz", "--feature", "consensus"]
        dev, test = self.nbest("dev", self.dev[0]), self.nbest("test", self.test[0])
        log = folder / "bench.log"
        run([*PBMT, "rescore", "--n-best", dev, "--refs", self.dev[1], "--src", self.dev[0], *features, "--train",
             "--algorithm", RESCORE[tuner], "--seed", seed, "--out", folder / "weights", "-q"], log=log)
        run([*PBMT, "rescore", "--n-best", test, "--src", self.test[0], "--weights", folder / "weights",
             "-o", folder / "test.out", "-q"], log=log)
        run([*PBMT, "rescore", "--n-best", dev, "--src", self.dev[0], "--weights", folder / "weights",
             "-o", folder / "dev.out", "-q"], log=log)
        dev_refs = lines(self.dev[1], None)
        return {"dev_bleu": [bleu(lines(self.out / "dev.1best", None), dev_refs),
                             bleu(lines(folder / "dev.out", None), dev_refs)],
                "test_bleu": bleu(lines(folder / "test.out", None), self.test_refs)}

    def moses_cell(self, tuner: str, folder: Path, seed: int) -> dict:
        folder.mkdir(parents=True, exist_ok=True)
        absolute = folder / "moses-abs.ini"
        model = self.ini.parent.resolve()
        text = self.ini.read_text(encoding="utf-8")
        for name in ("phrase-table.gz", "reordering-table.gz", "../lm3.arpa.gz"):
            text = text.replace(f"path={name}", f"path={(model / name).resolve()}")
        absolute.write_text(text, encoding="utf-8")
        work = folder / "mert-work"
        resume = ["--continue"] if work.exists() else []
        run([MOSES / "scripts" / "training" / "mert-moses.pl", self.dev[0].resolve(), self.dev[1].resolve(),
             MOSES / "bin" / "moses", absolute, "--mertdir", MOSES / "bin", "--decoder-flags",
             f"-threads {self.args.workers} -search-algorithm 1", "--nbest", self.args.nbest,
             "--no-filter-phrase-table", "--maximum-iterations", self.args.iterations,
             "--mertmertargs", f"-r {1000 * seed} ", "--working-dir", work, *resume], cwd=folder,
            log=folder / "bench.log")
        dev_refs = lines(self.dev[1], None)
        dev = [bleu(lines(work / f"run{k}.out", None), dev_refs)
               for k in range(1, self.args.iterations + 1) if (work / f"run{k}.out").exists()]
        best = max(range(len(dev)), key=lambda k: (dev[k], k)) + 1  # run{k}.moses.ini decoded run{k}.out
        return {"dev_bleu": dev,
                "test_bleu": self.test_bleu(folder, self.ini, ["--weights", work / f"run{best}.moses.ini"])}

    def cell(self, tuner: str, seed: int) -> dict:
        folder = self.out / f"{tuner}-seed{seed}"
        started = time.perf_counter()
        with LoadSampler() as load:
            if tuner in LOOP:
                result = self.loop_cell(tuner, folder, seed)
            elif tuner in SAMPLERANK:
                result = self.samplerank_cell(tuner, folder, seed)
            elif tuner in RELEVANT_SET:
                result = self.relevant_set_cell(tuner, folder, seed)
            elif tuner in SPARSE_LOOP:
                result = self.sparse_loop_cell(tuner, folder, seed)
            elif tuner in RESCORE:
                result = self.rescore_cell(tuner, folder, seed)
            else:
                result = self.moses_cell(tuner, folder, seed)
            if "test_bleu" not in result:
                result["test_bleu"] = self.test_bleu(folder, folder / "moses.ini")
        weights = folder / "sparse-weights.txt"
        if weights.exists():  # the sparse features the tuned model decodes with (non-zero weights)
            result["active_features"] = sum(1 for line in lines(weights, None) if line and not line.startswith("#"))
        return {**result, "seconds": time.perf_counter() - started, "load": statistics.mean(load.samples)}

    def against(self, tuner: str, baseline: str | None, seed: int) -> tuple[float, float] | None:
        """Test BLEU of the cell minus that of the ``baseline`` cell (dense MERT, or the same tuner without
        sparse features) with the same seed, and the share of 1,000 paired bootstrap resamples of the test
        sentences in which the cell wins (None without both outputs)."""
        if baseline is None or tuner == baseline:
            return None
        mine, other = self.out / f"{tuner}-seed{seed}" / "test.out", self.out / f"{baseline}-seed{seed}" / "test.out"
        if not mine.exists() or not other.exists():
            return None
        refs = [[r] for r in self.test_refs]
        a, b = segment_stats(lines(other, None), refs), segment_stats(lines(mine, None), refs)
        return 100 * (corpus_bleu(b) - corpus_bleu(a)), paired_bootstrap(a, b, np.random.default_rng(seed))


    def length_ratio(self, folder: str) -> float | None:
        """The length of a cell's test output (``folder`` in --out: TUNER-seedN, or "untuned") over the
        references' (words; None without its output): BLEU's brevity penalty is below 1 under 1."""
        output = self.out / folder / "test.out"
        if not output.exists():
            return None
        total = segment_stats(lines(output, None), [[r] for r in self.test_refs]).sum(axis=0)
        return float(total[HYP_LEN] / total[REF_LEN])


def dense_of(tuner: str) -> str | None:
    """The cell of the same tuner without sparse features (``mira`` for ``mira-lexicon``, ``mira-psi0.3`` for
    ``mira-all-psi0.3``), or None."""
    if tuner in SPARSE_LOOP:
        return SPARSE_LOOP[tuner][3]
    # SampleRank's defaults are the expected-gain preset with the unclipped batch gain
    return "samplerank-expected-gain-unclipped" if tuner in SAMPLERANK_FAMILY_MODEL else None


def seed_list(text: str) -> list[int]:
    """``--seeds``: comma-separated seeds and ranges, in the order given: ``2`` is seed 2 alone, ``1-3`` seeds 1,
    2 and 3, ``1-2,5`` seeds 1, 2 and 5."""
    seeds = []
    for part in text.split(","):
        first, dash, last = part.strip().partition("-")
        if not (first.isdigit() and (not dash or last.isdigit())) or (dash and int(last) < int(first)):
            raise argparse.ArgumentTypeError(f"{part.strip()!r} is neither a seed (a whole number, 2) nor a range "
                                             "of seeds (1-3)")
        seeds += range(int(first), int(last or first) + 1)
    if len(set(seeds)) < len(seeds):
        raise argparse.ArgumentTypeError(f"{text!r} names a seed twice")
    return seeds


def summary(cells: dict, tuners: list[str], seeds: list[int]) -> list[str]:
    rows = [f"{'tuner':<26} {'seeds':>5}  {'best dev BLEU':>15}  {'test BLEU':>15}  {'min/run':>7}  {'load':>4}"]
    for tuner in tuners:
        runs = [cells[f"{tuner}/{seed}"] for seed in seeds if f"{tuner}/{seed}" in cells]
        if not runs:
            rows.append(f"{tuner:<26} {'not run':>5}")
            continue

        def spread(values):
            return (f"{statistics.mean(values):6.2f} ± {statistics.stdev(values):4.2f}" if len(values) > 1
                    else f"{values[0]:6.2f}       ")

        rows.append(f"{tuner:<26} {len(runs):>5}  {spread([max(r['dev_bleu']) for r in runs]):>15}  "
                    f"{spread([r['test_bleu'] for r in runs]):>15}  "
                    f"{statistics.mean(r['seconds'] for r in runs) / 60:7.1f}  "
                    f"{statistics.mean(r['load'] for r in runs):4.1f}")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tuners", default=",".join(TUNERS), help="comma-separated, of: " + ", ".join(TUNERS))
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--seeds", type=seed_list, default=seed_list("1-3"),
                        help="seeds and ranges of seeds, comma-separated: 2 (seed 2 alone), 1-3, 1-2,5 (default: 1-3)")
    parser.add_argument("--iterations", type=int, default=5, help="MERT, PRO, APRO and Moses's MERT")
    parser.add_argument("--epochs", type=int, default=5, help="SampleRank")
    parser.add_argument("--held-out", type=int, default=100, help="SampleRank: dev sentences held out to choose "
                        "the epoch on (not tuned on)")
    parser.add_argument("--passes", type=int, default=30, help="costmargin and perceptron (the paper's L)")
    parser.add_argument("--n-best-size", dest="nbest", type=int, default=100)
    parser.add_argument("--sentences", type=int, help="tune on the first N dev sentences (default: all)")
    parser.add_argument("--test-sentences", type=int, help="score the first N test sentences (default: all)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--word-classes", type=int, default=50, help="classes of the boundary family's cells")
    parser.add_argument("--out", type=Path, default=Path("bench_tune.runs"), help="the cells' run folders")
    parser.add_argument("--json", type=Path, help="results so far; cells it holds are not run again")
    parser.add_argument("--record", metavar="NAME", help="write the cells run as the doc table record "
                        "docs/runs/NAME.json (docs/generated.py)")
    parser.add_argument("--no-run", action="store_true", help="run no cell: print (and --record) the cells --json "
                        "holds")
    parser.add_argument("--record-note", metavar="TEXT", help="a sentence the record shows under its table (say, "
                        "where the mert cells' test outputs came from when --out holds them from another run)")
    parser.add_argument("--quick", action="store_true", help="smoke run: 20 dev and test sentences, 2 iterations "
                        "(epochs, passes), 5 held-out sentences, one seed, 10-best")
    args = parser.parse_args()
    if args.quick:
        args.sentences, args.test_sentences, args.iterations = 20, 20, 2
        args.epochs, args.passes, args.seeds, args.nbest, args.held_out = 2, 2, [1], 10, 5
    tuners = args.tuners.split(",")
    unknown = [t for t in tuners if t not in TUNERS]
    if unknown:
        parser.error(f"unknown tuner(s) {', '.join(unknown)}; known: {', '.join(TUNERS)}")
    if "moses-mert" in tuners and not MOSES.exists():
        print(f"{MOSES} does not exist: moses-mert skipped", file=sys.stderr)
        tuners.remove("moses-mert")
    state = json.loads(args.json.read_text(encoding="utf-8")) if args.json and args.json.exists() else {}
    # what the cells' numbers depend on, not which cells run nor where results go (each SampleRank cell records
    # its held-out count: a file of an older bench, without it, stays usable)
    settings = {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items() if k not in NOT_SETTINGS}
    if {k: v for k, v in state.get("settings", settings).items() if k not in NOT_SETTINGS} != settings:
        sys.exit(f"{args.json} holds cells of other settings ({state['settings']}): choose another --json")
    state["settings"] = settings
    cells = state.setdefault("cells", {})
    bench = Bench(args)

    def save() -> None:
        if args.json:
            with atomic_write(args.json) as handle:
                json.dump(state, handle, indent=1)

    if "untuned" not in state:
        folder = bench.out / "untuned"
        folder.mkdir(parents=True, exist_ok=True)
        state["untuned"] = {"test_bleu": bench.test_bleu(folder, bench.ini)}
        save()
    for tuner in tuners:
        for seed in args.seeds:
            key = f"{tuner}/{seed}"
            if key in cells or args.no_run:
                continue
            cells[key] = bench.cell(tuner, seed)
            save()
            c = cells[key]
            held_out = (f"; held-out ({c['held_out']} sentences) {' '.join(f'{b:.2f}' for b in c['held_out_bleu'])}, "
                        f"epoch {c['kept_epoch']} kept" if "held_out_bleu" in c else "")
            print(f"{key}: dev {' '.join(f'{b:.2f}' for b in c['dev_bleu'])}{held_out}; test {c['test_bleu']:.2f}; "
                  f"{c['seconds'] / 60:.1f} min under load {c['load']:.1f}"
                  + (f"; {c['active_features']} sparse features" if "active_features" in c else ""), flush=True)
    against = {"mert": {}, "dense": {}}
    for tuner in tuners:
        for seed in args.seeds:
            for kind, baseline in (("mert", "mert"), ("dense", dense_of(tuner))):
                paired = bench.against(tuner, baseline, seed)
                if paired is not None:
                    against[kind][f"{tuner}/{seed}"] = paired
                    print(f"{tuner}/{seed} against {baseline}/{seed} on test: {paired[0]:+.2f} BLEU, better in "
                          f"{100 * paired[1]:.1f}% of 1,000 paired bootstrap resamples")
    print(f"\ndev {args.sentences or 'all'} sentences, test {args.test_sentences or 'all'}; "
          f"untuned test BLEU {state['untuned']['test_bleu']:.2f}")
    print("\n".join(summary(cells, tuners, args.seeds)))
    if args.record:
        runs = [cells[f"{t}/{seed}"] for t in tuners for seed in args.seeds if f"{t}/{seed}" in cells]
        lengths = {f"{t}/{seed}": bench.length_ratio(f"{t}-seed{seed}") for t in tuners for seed in args.seeds}
        lengths["untuned"] = bench.length_ratio("untuned")
        print(f"wrote {write_table(args.record, *record_table(state, tuners, args.seeds, against, lengths), load=[r['load'] for r in runs], formats=RECORD_FORMATS, note=args.record_note, command=record_command())}")


def record_command() -> str:
    """This run's command line (a bench of benchmarks/) for its record, without --record-note's text (the record
    shows it as its note)."""
    words, shown = sys.argv[1:], []
    while words:
        word = words.pop(0)
        if word == "--record-note":
            words = words[1:]
        elif not word.startswith("--record-note="):
            shown.append(word)
    return " ".join(["python", f"benchmarks/{Path(sys.argv[0]).name}", *shown])


NOT_SETTINGS = ("tuners", "json", "seeds", "held_out", "record", "record_note", "no_run")
RECORD_FORMATS = {"test BLEU": ".2f", "test length / reference": ".3f", "wall min": ".1f", "load": ".1f"}


def record_table(state: dict, tuners: list[str], seeds: list[int], against: dict,
                 lengths: dict) -> tuple[list, list]:
    """The columns and rows of a doc table of the cells run: the untuned weights, then a row per (tuner, seed).
    ``against``: {"mert": ..., "dense": ...}, each (tuner/seed -> (difference, share of resamples won));
    ``lengths``: tuner/seed -> the test output's length over the references' (``Bench.length_ratio``)."""
    columns = ["tuner", "seed", "dev BLEU per iteration (epoch, pass)", "test BLEU", "test length / reference",
               "against MERT, same seed (paired bootstrap)", "against the tuner without sparse features",
               "sparse features", "wall min", "load"]
    untuned = lengths.get("untuned")
    rows = [["untuned", None, None, round(state["untuned"]["test_bleu"], 2), untuned and round(untuned, 3), None,
             None, None, None, None]]

    def paired(kind: str, key: str) -> str | None:
        found = against[kind].get(key)
        return f"{found[0]:+.2f}, better in {100 * found[1]:.1f}%" if found else None

    for tuner in tuners:
        for seed in seeds:
            key = f"{tuner}/{seed}"
            cell = state["cells"].get(key)
            if cell:
                length = lengths.get(key)
                rows.append([tuner, seed, ", ".join(f"{b:.2f}" for b in cell["dev_bleu"]),
                             round(cell["test_bleu"], 2), length and round(length, 3), paired("mert", key),
                             paired("dense", key),
                             cell.get("active_features"), round(cell["seconds"] / 60, 1), round(cell["load"], 1)])
    return columns, rows


if __name__ == "__main__":
    main()
