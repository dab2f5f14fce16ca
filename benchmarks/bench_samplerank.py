"""Claim: SampleRank-tuned weights decode a held-out dev subset at least as well as the untuned ones.

Setting: the shared Moses model (``model/moses.ini``), SampleRank on the first
--tune dev sentences (one process, chains run in turn), then the stack decoder
(default settings) on the next --heldout dev sentences with the untuned
weights, the averaged tuned weights and the last mixed weights. Prints BLEU
(percent, sacrebleu-style exp smoothing on the id statistics), sampler steps
per second of tuning, and updates.

    python benchmarks/bench_samplerank.py [--tune 200] [--heldout 200] [--epochs 3] [--chains 2] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from pbmt.metrics.bleu import corpus_bleu, segment_stats_ids
from pbmt.model.model import TranslationModel
from pbmt.search.decoder import decode
from pbmt.search.options import TranslationOptions
from pbmt.tune.samplerank import SampleRank, encode_dev

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "bible-es-en"


def dev_bleu(model, weights, sources, references) -> float:
    """Corpus BLEU in [0, 1] of the stack decoder's 1-best under ``weights``."""
    tuned = model.with_weights(weights)
    outputs = []
    for ids in sources:
        options = TranslationOptions.build(tuned, ids)
        best = decode(tuned, options)
        outputs.append(best[0].derivation.target_words(options) if best else np.zeros(0, np.int32))
    offsets = np.concatenate([[0], np.cumsum([len(o) for o in outputs])]).astype(np.int64)
    stats = segment_stats_ids(offsets, np.concatenate(outputs).astype(np.int32), np.arange(len(sources)),
                              references)
    return corpus_bleu(stats)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tune", type=int, default=200)
    parser.add_argument("--heldout", type=int, default=200)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--chains", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=10)
    parser.add_argument("--samples-per-sentence", type=int, default=100)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()

    model = TranslationModel.load(DATA / "model" / "moses.ini")
    src = (DATA / "dev.tok.es").read_text(encoding="utf-8").splitlines()
    ref = (DATA / "dev.tok.en").read_text(encoding="utf-8").splitlines()
    n = args.tune + args.heldout
    tune_ids, tune_refs = encode_dev(model.vocab, src[:args.tune], ref[:args.tune])
    held_sources, held_refs = encode_dev(model.vocab, src[args.tune:n], ref[args.tune:n])

    started = time.perf_counter()
    fitted = SampleRank(args.epochs, args.batch_size, args.samples_per_sentence, chains=args.chains).fit(
        model, tune_ids, tune_refs, np.random.default_rng(args.seed))
    seconds = time.perf_counter() - started
    steps = sum(e.steps for e in fitted.log_)

    rows = {"untuned": dev_bleu(model, model.weights, held_sources, held_refs),
            "samplerank (averaged)": dev_bleu(model, fitted.weights_, held_sources, held_refs),
            "samplerank (last mixed)": dev_bleu(model, fitted.last_weights_, held_sources, held_refs)}
    print(f"tuning: {args.tune} sentences, {args.epochs} epochs, {args.chains} chains, {steps} steps in "
          f"{seconds:.1f} s ({steps / seconds:.0f} steps/s), {sum(e.updates for e in fitted.log_)} updates")
    print(f"{'weights':<26}held-out BLEU ({args.heldout} sentences)")
    for name, value in rows.items():
        print(f"{name:<26}{100 * value:.2f}")
    if args.json:
        args.json.write_text(json.dumps({"steps_per_second": steps / seconds, "bleu": rows,
                                         "weights": fitted.weights_.tolist()}, indent=1))


if __name__ == "__main__":
    main()
