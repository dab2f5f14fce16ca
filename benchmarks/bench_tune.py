"""Claim: pbmt's MERT tunes the shared model as well as Moses's MERT does.

Setting: the shared Moses model (``model/moses.ini``, untuned train-model.perl
weights), tuned on the dev set (``dev.tok.es`` / ``dev.tok.en``) with
``pbmt tune``'s loop: n-best 100, accumulated pools, MERT with 20 random
restarts plus the previous weights, for --iterations iterations, once per seed.
Then the test set (``test.tok.es``, Acts) is decoded (1-best) with each run's
final weights, with the untuned weights and with the weights of Moses's own
MERT run (``model/README.md``: dev 39.60 after 5 iterations, test 29.82; the
untuned model scores test 28.92 with Moses), and scored with sacrebleu
(``tokenize='none'``) against ``test.tok.en``.

Printed: per seed, dev BLEU of every iteration's decode (iteration 1 decodes
with the untuned weights), the final weights' test BLEU, and seconds per
iteration split into decoding and optimising; then the mean and standard
deviation over seeds. Everything runs on --workers local processes; timings
are wall clock and noisy when other jobs share the machine.

    python benchmarks/bench_tune.py --algorithm mert [--sentences 1031] [--iterations 5] [--seeds 3]
        [--nbest 100] [--restarts 20] [--random-directions 10] [--test-sentences 1006] [--workers 2]
        [--out DIR] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import sacrebleu

from pbmt.commands.tune import read_dev
from pbmt.files import atomic_write
from pbmt.model.model import TranslationModel
from pbmt.tune.loop import DevDecoder, LoopSettings, make_optimizer, tune

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "bible-es-en"
MOSES = {"untuned test": 28.92, "MERT dev (5 iterations)": 39.60, "MERT test": 29.82}


def moses_mert_weights(model: TranslationModel) -> np.ndarray:
    """Moses's MERT weights from the model README's code block, in the model's layout."""
    readme = (DATA / "model" / "README.md").read_text(encoding="utf-8")
    block = readme.split("test BLEU 29.82")[1].split("```")[1]
    weights = {}
    for line in block.strip().splitlines():
        name, values = line.split("=")
        weights[name.strip()] = tuple(float(v) for v in values.split())
    return model.layout.weights(model.config.with_weights(weights))


def score_test(model: TranslationModel, ini: Path, weights: np.ndarray, sources, references, workers) -> float:
    """sacrebleu BLEU (percent) of the 1-best test translations under ``weights``."""
    with DevDecoder(ini, sources, 1, workers, model=model if workers == 1 else None, quiet=False) as decoder:
        hypotheses = [entries[0].text for entries in decoder(weights)]
    return sacrebleu.corpus_bleu(hypotheses, [references], tokenize="none", force=True).score


def optimizer_params(args: argparse.Namespace) -> dict:
    """Constructor parameters of the benchmarked optimiser."""
    if args.algorithm == "mert":
        return {"restarts": args.restarts, "random_directions": args.random_directions,
                "significance": args.significance, "max_step": args.max_step}
    return {}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--algorithm", default="mert")
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--sentences", type=int, help="tune on the first N dev sentences (default: all)")
    parser.add_argument("--iterations", type=int, default=5)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--nbest", type=int, default=100)
    parser.add_argument("--restarts", type=int, default=20, help="MERT's random restarts")
    parser.add_argument("--random-directions", type=int, default=10, help="MERT's random directions per round")
    parser.add_argument("--significance", type=float, default=0.05,
                        help="MERT: a random restart must beat the previous weights' climb at this level")
    parser.add_argument("--max-step", type=lambda v: None if v == "none" else float(v), default=2.0,
                        help="MERT: reach of a line search in units of the weights' L1 norm ('none': unbounded)")
    parser.add_argument("--test-sentences", type=int, help="score the first N test sentences (default: all)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", type=Path, help="keep the runs' folders here (default: a temporary folder)")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()

    ini = args.data / "model" / "moses.ini"
    model = TranslationModel.load(ini)
    sources, references = read_dev(args.data / "dev.tok.es", args.data / "dev.tok.en", args.sentences)
    test_sources = (args.data / "test.tok.es").read_text(encoding="utf-8").splitlines()[:args.test_sentences]
    test_refs = (args.data / "test.tok.en").read_text(encoding="utf-8").splitlines()[:args.test_sentences]
    work = args.out or Path(tempfile.mkdtemp(prefix="bench_tune."))
    runs = []
    with DevDecoder(ini, sources, args.nbest, args.workers, model=model if args.workers == 1 else None,
                    quiet=False) as decoder:
        for seed in range(1, args.seeds + 1):
            folder = work / f"{args.algorithm}-seed{seed}"
            shutil.rmtree(folder, ignore_errors=True)
            started = time.perf_counter()
            optimizer = make_optimizer(args.algorithm, **optimizer_params(args))
            result = tune(decoder, references, model.config, model.layout, optimizer, folder,
                          LoopSettings(n_best=args.nbest, max_iterations=args.iterations, seed=seed), quiet=False)
            runs.append({"seed": seed, "seconds": time.perf_counter() - started, "stop": result.stop_reason,
                         "dev_bleu": [100 * r.dev_bleu for r in result.iterations],
                         "pool_bleu": [100 * r.pool_bleu for r in result.iterations],
                         "decode_seconds": [r.decode_seconds for r in result.iterations],
                         "optimize_seconds": [r.optimize_seconds for r in result.iterations],
                         "pool_size": [r.pool_size for r in result.iterations],
                         "weights": result.weights.tolist()})
    for run in runs:
        run["test_bleu"] = score_test(model, ini, np.array(run["weights"]), test_sources, test_refs, args.workers)
    untuned = score_test(model, ini, model.weights, test_sources, test_refs, args.workers)
    moses_weights = score_test(model, ini, moses_mert_weights(model), test_sources, test_refs, args.workers)

    print(f"\n{args.algorithm} {optimizer_params(args)}: dev {len(sources)} sentences, {args.nbest}-best, "
          f"up to {args.iterations} iterations; "
          f"test {len(test_sources)} sentences; {args.workers} workers")
    print(f"{'seed':>4}  {'dev BLEU per iteration':<40} {'test':>6}  {'decode s/it':>11}  {'optimise s/it':>13}  stop")
    for run in runs:
        dev = " ".join(f"{b:.2f}" for b in run["dev_bleu"])
        print(f"{run['seed']:>4}  {dev:<40} {run['test_bleu']:6.2f}  {statistics.mean(run['decode_seconds']):11.1f}"
              f"  {statistics.mean(run['optimize_seconds']):13.1f}  {run['stop']}")
    tests = [run["test_bleu"] for run in runs]
    finals = [run["dev_bleu"][-1] for run in runs]
    spread = statistics.stdev(tests) if len(tests) > 1 else 0.0
    print(f"mean  last dev {statistics.mean(finals):.2f}, test {statistics.mean(tests):.2f} ± {spread:.2f} (sd)")
    print(f"test BLEU, pbmt decoding: untuned {untuned:.2f} (Moses {MOSES['untuned test']}), "
          f"Moses's MERT weights {moses_weights:.2f} (Moses {MOSES['MERT test']}); "
          f"Moses's MERT dev BLEU after 5 iterations {MOSES['MERT dev (5 iterations)']}")
    if args.json:
        with atomic_write(args.json) as handle:
            json.dump({"runs": runs, "untuned_test": untuned, "moses_weights_test": moses_weights, "moses": MOSES,
                       "settings": vars(args) | {"data": str(args.data), "out": str(work), "json": str(args.json)}},
                      handle, indent=1)


if __name__ == "__main__":
    main()
