"""Claim (Tillmann & Zhang, Table VII): the online relevant-set algorithms with a 1-best relevant set match MERT
with n-best lists.

Setting: the shared Moses model's dense features (``model/moses.ini``: 14
weights), decoded in the same search space for every row (default
``--reordering mon-swap``, the paper's MON/SWAP block orientation model).
Tuned on the first --dev-sentences of ``dev.tok.es`` and tested on the first
--test-sentences of ``test.tok.es``. Rows, as in the paper's Table VII:

- flat: every weight 0.1 (the paper's w1); also the model's untuned
  train-model.perl weights, for reference;
- MERT (``pbmt.tune.loop`` + ``pbmt.tune.mert``, from the untuned weights)
  with n-best 1, 10 and 100, --mert-iterations iterations (the paper: 20);
- Costmargin and the perceptron (``pbmt.tune.relevant_set``: seeds w1 and w2,
  weights retrained from zero on the relevant sets, R = 40 SGD passes, the
  paper's learning rates) with 1-best and 10-best relevant sets, --passes
  decodings (the paper: L = 30).

Columns: dev = averaged sentence BLEU+1 (percent) of the dev 1-best under the
output weights (the paper's "dev bleu" column; corpus BLEU beside it); test =
corpus BLEU (sacrebleu, ``tokenize='none'``) of the test 1-best; time per
online iteration = seconds of one online training step (R SGD passes over the
relevant sets) for the online rows, and of one MERT optimisation (on the
accumulated pool) for the MERT rows, the median over the run (the first
call may include numba's compilation). Output weights:
MERT's last iteration's, the online algorithms' best pass by dev sentence
BLEU+1 (which may be a seed pass).

--binary-sentences N adds one run of Costmargin on binary block features
(``pbmt.tune.block_training``) over the first N training pairs
(``train.tok.*``, or with --binary-data dev the dev pairs, which phrase
extraction did not see): the feature count, the training subset's sentence
BLEU+1 per pass, and test BLEU of every pass's weights with the untuned dense
weights (compare the "untuned" row).

To stay feasible on a shared 2-core machine the defaults use subsets and fewer
passes than the paper (the printed header says which); every decode runs on
one dask cluster of --workers processes (``pbmt.base.parallel``). Timings are wall
clock and noisy under load (the header prints the load average).

    python benchmarks/bench_relevant_set.py [--dev-sentences 30] [--test-sentences 100] [--passes 8]
        [--mert-iterations 4] [--reordering mon-swap] [--stack 50] [--workers 2] [--binary-sentences N]
        [--binary-passes 3] [--binary-nbest 1] [--binary-data train|dev]
        [--binary-learning-rate 1e-4] [--only-binary] [--resume-binary] [--out DIR] [--json FILE]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import os
import resource
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np
import sacrebleu
from distributed import LocalCluster

from pbmt.tune.runs import read_dev
from pbmt.base.config import MosesConfig
from pbmt.base.files import atomic_write
from pbmt.metrics.bleu import corpus_bleu, sentence_bleu_plus1
from pbmt.model.model import REORDERING_MODES, SearchSettings, TranslationModel
from pbmt.tune.block_training import BlockTraining, BlockTrainingSettings, block_training
from pbmt.tune.loop import DevDecoder, LoopSettings, tune
from pbmt.tune.mert import Mert
from pbmt.tune.pool import References
from pbmt.tune.registry import tuner_class
from pbmt.tune.relevant_set import RelevantSetSettings, relevant_set_tune

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "bible-es-en"
INI = DATA / "model" / "moses.ini"


class Decoding:
    """1-best decoding of a fixed set of sentences on the benchmark's cluster."""

    def __init__(self, sources, settings, scheduler, n_best=1, ini=INI):
        self.decoder = DevDecoder(TranslationModel.load(ini, settings), sources, n_best, scheduler=scheduler)

    def texts(self, weights):
        return [entries[0].text for entries in self.decoder(weights)]

    def close(self):
        self.decoder.close()


def dev_scores(texts, references: References) -> tuple[float, float]:
    """(averaged sentence BLEU+1, corpus BLEU) of dev translations, percent."""
    stats = references.stats(texts, np.arange(len(texts)))
    return 100 * float(sentence_bleu_plus1(stats).mean()), 100 * corpus_bleu(stats)


def binary_run(args, settings, dense_weights, scheduler, test_src, test_refs, out, rows) -> None:
    """Costmargin on binary block features over the first --binary-sentences pairs of --binary-data; test BLEU of
    every pass's model folder (the untuned dense weights plus the pass's binary weights)."""
    src = (DATA / f"{args.binary_data}.tok.es").read_text(encoding="utf-8").splitlines()[:args.binary_sentences]
    ref = (DATA / f"{args.binary_data}.tok.en").read_text(encoding="utf-8").splitlines()[:args.binary_sentences]
    started = time.perf_counter()
    weights, passes = block_training(INI, src, ref, BlockTraining(learning_rate=args.binary_learning_rate),
                                     BlockTrainingSettings(passes=args.binary_passes, n_best=args.binary_nbest),
                                     out / "binary", settings, scheduler=scheduler, resume=args.resume_binary,
                                     quiet=False)
    trained = time.perf_counter() - started
    test_bleus = []
    for p in passes:
        test = Decoding(test_src, settings, scheduler, ini=out / "binary" / f"pass{p.number}" / "moses.ini")
        test_bleus.append(sacrebleu.corpus_bleu(test.texts(dense_weights), [test_refs], tokenize="none",
                                                force=True).score)
        test.close()
    best = max(passes, key=lambda p: p.sentence_bleu)
    test_bleu = test_bleus[best.number - 1]
    print(f"# binary block features on {len(src)} {args.binary_data} pairs, eta {args.binary_learning_rate:g}, "
          f"{len(passes)} passes ({trained:.0f} s): test BLEU per pass " + " ".join(f"{b:.2f}" for b in test_bleus))
    print(f"# binary block features on {len(src)} {args.binary_data} pairs, {len(passes)} passes ({trained:.0f} s): "
          f"features {passes[-1].features}, non-zero weights of the best pass {len(weights)}; training sentence "
          f"BLEU+1 per pass " + " ".join(f"{100 * p.sentence_bleu:.2f}" for p in passes)
          + f"; online step {np.median([p.online_seconds for p in passes[1:]]) if len(passes) > 1 else 0:.2f} s; "
          f"peak memory of this process {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20:.2f} GiB")
    print(f"{'binary+dense':<12} {args.binary_nbest:>6} {100 * best.sentence_bleu:9.2f} {100 * best.corpus_bleu:9.2f} "
          f"{test_bleu:9.2f} {'':>12} {len(passes):>7}   (dev columns: the training subset)", flush=True)
    rows.append({"method": "binary+dense", "n_best": args.binary_nbest, "training_sentence_bleu": 100 * best.sentence_bleu,
                 "training_bleu": 100 * best.corpus_bleu, "test_bleu": test_bleu, "features": passes[-1].features,
                 "nonzero_weights": len(weights), "passes": [dataclasses.asdict(p) for p in passes],
                 "test_bleu_per_pass": test_bleus, "data": args.binary_data, "learning_rate": args.binary_learning_rate})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dev-sentences", type=int, default=30)
    parser.add_argument("--test-sentences", type=int, default=100)
    parser.add_argument("--passes", type=int, default=8, help="online decodings (the paper's L = 30)")
    parser.add_argument("--mert-iterations", type=int, default=4, help="MERT iterations (the paper: 20)")
    parser.add_argument("--mert-nbest", type=int, nargs="*", default=[1, 10, 100], help="MERT rows (none: skip)")
    parser.add_argument("--online-nbest", type=int, nargs="*", default=[1, 10],
                        help="Costmargin and perceptron rows (none: skip)")
    parser.add_argument("--reordering", choices=REORDERING_MODES, default="mon-swap")
    parser.add_argument("--stack", type=int, default=50, help="stack size of every decoding (Moses: 200)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--binary-sentences", type=int, default=0, help="also train binary block features on "
                        "this many training sentence pairs (train.tok.*; 0: skip)")
    parser.add_argument("--binary-passes", type=int, default=3, help="decoding passes of the binary run")
    parser.add_argument("--binary-data", choices=("train", "dev"), default="train", help="the binary run's pairs: "
                        "train.tok (the phrase table's own training data, as the paper) or dev.tok (held out from "
                        "phrase extraction)")
    parser.add_argument("--binary-learning-rate", type=float, default=BlockTraining.default("learning_rate"),
                        help="eta of the binary run's Costmargin SGD")
    parser.add_argument("--binary-nbest", type=int, default=1, help="sequences the binary run adds to each "
                        "relevant set per decoding (the paper: 1)")
    parser.add_argument("--only-binary", action="store_true", help="skip the Table VII rows")
    parser.add_argument("--resume-binary", action="store_true", help="continue the binary run kept in --out "
                        "(e.g. to more --binary-passes; the same weights as an uninterrupted run)")
    parser.add_argument("--out", type=Path, help="keep the runs' folders here (default: a temporary folder)")
    parser.add_argument("--json", type=Path, help="also write the table as JSON")
    args = parser.parse_args()

    started = time.perf_counter()
    load = os.getloadavg()
    settings = dataclasses.replace(SearchSettings.from_config(MosesConfig.read(INI)), reordering=args.reordering,
                                   stack_size=args.stack)
    model = TranslationModel.load(INI, settings)
    dev_src, dev_refs = read_dev(DATA / "dev.tok.es", DATA / "dev.tok.en", args.dev_sentences)
    test_src = (DATA / "test.tok.es").read_text(encoding="utf-8").splitlines()[:args.test_sentences]
    test_refs = (DATA / "test.tok.en").read_text(encoding="utf-8").splitlines()[:args.test_sentences]
    out = args.out or Path(tempfile.mkdtemp(prefix="bench-relset-"))
    print(f"# dev: first {len(dev_src)} sentences of dev.tok.es; test: first {len(test_src)} of test.tok.es; "
          f"reordering {args.reordering}, stack {args.stack}; online passes L = {args.passes} (paper 30), R = 40; MERT iterations "
          f"{args.mert_iterations} (paper 20); {args.workers} workers; load average at start "
          f"{load[0]:.1f} {load[1]:.1f} {load[2]:.1f}")
    cluster = LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True, dashboard_address=None,
                           memory_limit=0, silence_logs=logging.ERROR)
    rows = []
    dev = Decoding(dev_src, settings, cluster.scheduler_address)
    test = Decoding(test_src, settings, cluster.scheduler_address)
    try:

        def add_row(method, n_best, weights, seconds, runs, dev_pair=None):
            sent, corpus = dev_pair if dev_pair is not None else dev_scores(dev.texts(weights), dev_refs)
            test_bleu = sacrebleu.corpus_bleu(test.texts(weights), [test_refs], tokenize="none", force=True).score
            rows.append({"method": method, "n_best": n_best, "dev_sentence_bleu": sent, "dev_bleu": corpus,
                         "test_bleu": test_bleu, "seconds_per_online_iteration": seconds, "decodes": runs,
                         "weights": [float(w) for w in weights]})
            print(f"{method:<12} {str(n_best or '-'):>6} {sent:9.2f} {corpus:9.2f} {test_bleu:9.2f} "
                  + (f"{seconds:12.3f}" if seconds is not None else f"{'-':>12}") + f" {runs:>7}", flush=True)

        print(f"{'method':<12} {'n-best':>6} {'dev sBLEU':>9} {'dev BLEU':>9} {'test BLEU':>9} "
              f"{'s/online it':>12} {'decodes':>7}")
        add_row("flat", None, np.full(model.layout.size, 0.1), None, 0)
        add_row("untuned", None, model.weights, None, 0)
        for n in [] if args.only_binary else args.mert_nbest:
            with DevDecoder(model, dev_src, n, scheduler=cluster.scheduler_address) as decoder:
                result = tune(decoder, dev_refs, model.config, model.layout, Mert(), out / f"mert-{n}",
                              LoopSettings(n_best=n, max_iterations=args.mert_iterations))
            seconds = float(np.median([r.optimize_seconds for r in result.iterations]))
            add_row("mert", n, result.weights, seconds, len(result.iterations))
        for algorithm in () if args.only_binary else ("costmargin", "perceptron"):
            for n in args.online_nbest:
                with DevDecoder(model, dev_src, n, scheduler=cluster.scheduler_address) as decoder:
                    result = relevant_set_tune(decoder, dev_refs, model.config, model.layout,
                                               tuner_class(algorithm)(),
                                               RelevantSetSettings(passes=args.passes, n_best=n),
                                               out / f"{algorithm}-{n}")
                seconds = float(np.median([p.online_seconds for p in result.passes[2:]])) \
                    if len(result.passes) > 2 else None
                best = result.best
                add_row(algorithm, n, result.weights, seconds, len(result.passes),
                        (100 * best.sentence_bleu, 100 * best.corpus_bleu))
        if args.binary_sentences:
            binary_run(args, settings, model.weights, cluster.scheduler_address, test_src, test_refs, out, rows)
    finally:
        dev.close()
        test.close()
        cluster.close()
        if args.out is None:
            shutil.rmtree(out, ignore_errors=True)
    print(f"# total {time.perf_counter() - started:.0f} s; load average at the end "
          + " ".join(f"{x:.1f}" for x in os.getloadavg()))
    if args.json:
        with atomic_write(args.json) as handle:
            json.dump({"settings": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
                       "rows": rows}, handle, indent=1)


if __name__ == "__main__":
    main()
