"""Claim: SampleRank (Haddow, Arun & Koehn 2011) tunes the shared model at least as well as untuned weights, with
dense features and with the sparse phrase-boundary features, and more chains reduce the variance across seeds.

Setting (kept small for a shared 2-core machine; every number printed says its subset):
- model: the shared Moses model (``bible-es-en/model/moses.ini``), pbmt's stack decoder with its settings;
- tuning: the first --tune dev sentences (default 100), --epochs epochs (default 2) of batches of 10, 100
  samples and 100 burn-in steps per sentence, C, the gain scale and the update rule (--update, --step,
  --temperature, --start: see ``pbmt.tune.samplerank.Settings``) as ``pbmt tune``'s defaults unless given;
- evaluation: corpus BLEU (percent, sacrebleu-equal statistics on ids) of the stack decoder's 1-best on the first
  --test test sentences (default 200) under the averaged tuned weights;
- configurations: dense features with 1 and 4 chains, dense + boundary features (50 word classes induced from
  the training target side by the exchange algorithm, as ``pbmt train`` does) with 4 chains; --seeds seeds each
  (default 3), mean ± sd. Chains run in turn in one process, so seconds are one core's;
- anchors: untuned weights, and Moses's own MERT weights (model/README.md: test BLEU 29.82 on all 1,006 test
  sentences with Moses) decoded by pbmt on the same test subset.
Prints a table; --json FILE writes the numbers.

    python benchmarks/bench_samplerank.py [--tune 100] [--test 200] [--epochs 2] [--seeds 3] [--json FILE]
    python benchmarks/bench_samplerank.py --tune 100 --epochs 1 --test 150 --seeds 3 --configs dense:1,dense:4 \
        --update expected-gain --temperature 0.1 --start decoder      # the variant that beats untuned weights
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

from pbmt.model.model import TranslationModel
from pbmt.model.sparse import SparseModel
from pbmt.train.word_classes import induce_classes
from pbmt.tune.sampler_chains import STARTS, UPDATES, Settings, decoded_bleu, encode_dev
from pbmt.tune.samplerank import SampleRank, SamplerTask
from pbmt.tune.tuner import TuningData

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "bible-es-en"
MOSES_MERT = {  # model/README.md: Moses's MERT, iteration 5 (test BLEU 29.82 with Moses on all 1,006 sentences)
    "LexicalReordering0": (0.0433835, 0.0685779, 0.0714115, 0.245002, 0.00517624, 0.0380251),
    "Distortion0": (0.085307,), "LM0": (0.074279,), "WordPenalty0": (-0.157649,), "PhrasePenalty0": (0.0398453,),
    "TranslationModel0": (0.0369973, 0.0582604, 0.0543552, 0.0217304), "UnknownWordPenalty0": (1.0,)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tune", type=int, default=100, help="first N dev sentences to tune on")
    parser.add_argument("--test", type=int, default=200, help="first N test sentences to evaluate on")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--samples-per-sentence", type=int, default=100)
    parser.add_argument("--classes", type=int, default=50, help="word classes for the boundary features")
    parser.add_argument("--c", type=float, default=Settings.c, help="the update's clip C")
    parser.add_argument("--gain-scale", type=float, default=Settings.gain_scale)
    parser.add_argument("--margin-updates", action=argparse.BooleanOptionalAction, default=Settings.margin_updates)
    parser.add_argument("--update", choices=UPDATES, default=Settings.update, help="the update rule (Settings)")
    parser.add_argument("--temperature", type=float, default=Settings.temperature, help="the sampling temperature")
    parser.add_argument("--step", type=float, default=Settings.step, help="expected-gain's step size")
    parser.add_argument("--start", choices=STARTS, default=Settings.start, help="where a batch's chains start")
    parser.add_argument("--configs", default="dense:1,dense:4,boundary:4", help="features:chains, comma-separated")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()

    model = TranslationModel.load(DATA / "model" / "moses.ini")
    src = (DATA / "dev.tok.es").read_text(encoding="utf-8").splitlines()[:args.tune]
    ref = (DATA / "dev.tok.en").read_text(encoding="utf-8").splitlines()[:args.tune]
    test_src = (DATA / "test.tok.es").read_text(encoding="utf-8").splitlines()[:args.test]
    test_ref = (DATA / "test.tok.en").read_text(encoding="utf-8").splitlines()[:args.test]
    test = encode_dev(model, test_src, test_ref)
    print(f"tuning on dev[:{args.tune}], {args.epochs} epochs, {args.samples_per_sentence} samples per sentence, "
          f"C {args.c}, gain scale {args.gain_scale}, margin updates {args.margin_updates}, "
          f"update {args.update}, temperature {args.temperature}, start {args.start}, step {args.step}; "
          f"test BLEU on test[:{args.test}]; load average {os.getloadavg()[0]:.1f}", flush=True)

    rows = {"untuned": {"bleu": [100 * decoded_bleu(model, model.weights, test)]}}
    mert = model.layout.weights(replace(model.config, weights=MOSES_MERT))
    rows["Moses MERT weights (decoded by pbmt)"] = {"bleu": [100 * decoded_bleu(model, mert, test)]}
    for name in rows:
        print(f"{name}: test BLEU {rows[name]['bleu'][0]:.2f}", flush=True)

    started = time.perf_counter()
    classes = induce_classes(DATA / "train.tok.en", args.classes).classes
    print(f"{args.classes} word classes induced in {time.perf_counter() - started:.0f} s", flush=True)
    for config in args.configs.split(","):
        features, chains = config.split(":")
        tuned_model = replace(model, sparse=SparseModel.new(classes) if features == "boundary" else None)
        row = rows.setdefault(f"SampleRank {features}, {chains} chain(s)",
                              {"bleu": [], "seconds": [], "steps_per_second": [], "updates": [], "active": []})
        for seed in range(1, args.seeds + 1):
            started = time.perf_counter()
            task = SamplerTask(tuned_model, src, ref)
            fitted = SampleRank(args.epochs, 10, args.samples_per_sentence, c=args.c, chains=int(chains),
                                gain_scale=args.gain_scale, margin_updates=args.margin_updates,
                                update=args.update, temperature=args.temperature, start=args.start,
                                step=args.step).fit(TuningData(sampler=task), task.start_weights,
                                                    np.random.default_rng(seed))
            seconds = time.perf_counter() - started
            steps = sum(e.steps for e in fitted.log_)
            row["bleu"].append(100 * decoded_bleu(tuned_model, fitted.weights_, test))
            row["seconds"].append(seconds)
            row["steps_per_second"].append(steps / seconds)
            row["updates"].append(sum(e.updates for e in fitted.log_))
            row["active"].append(int(np.count_nonzero(fitted.weights_[model.layout.size:])))
            print(f"{features} {chains} chain(s) seed {seed}: test BLEU {row['bleu'][-1]:.2f}, {seconds:.0f} s, "
                  f"{steps / seconds:.0f} samples/s, {row['updates'][-1]} updates, {row['active'][-1]} active "
                  f"sparse features", flush=True)

    print(f"\n{'weights':<40}{'test BLEU (mean ± sd)':<24}{'per seed':<24}{'samples/s':>10}{'wall s':>8}"
          f"{'sparse':>8}")
    for name, row in rows.items():
        bleu = row["bleu"]
        spread = f" ± {statistics.stdev(bleu):.2f}" if len(bleu) > 1 else ""
        rate = f"{statistics.mean(row['steps_per_second']):.0f}" if "seconds" in row else "-"
        wall = f"{statistics.mean(row['seconds']):.0f}" if "seconds" in row else "-"
        active = f"{statistics.mean(row['active']):.0f}" if "active" in row else "-"
        print(f"{name:<40}{statistics.mean(bleu):.2f}{spread:<18}{' '.join(f'{b:.2f}' for b in bleu):<24}"
              f"{rate:>10}{wall:>8}{active:>8}")
    print(f"(load average {os.getloadavg()[0]:.1f}; Moses's MERT: 29.82 test BLEU with Moses on all 1,006 test "
          "sentences, model/README.md)")
    if args.json:
        args.json.write_text(json.dumps({"settings": vars(args) | {"json": str(args.json)}, "rows": rows},
                                        indent=1))


if __name__ == "__main__":
    main()
