"""n-best rescoring on Moses's dev 100-best: baseline vs ListNet (with and without extra
features) vs MERT, PRO and APRO.

Moses's 100-best lists of the bible dev set (``model/dev.moses.nbest100.gz``,
untuned weights, 3-gram LM) are split into the first half of the sentences
(training: weights are learned there, and ListNet selects its epoch there, as
the paper does on its dev set) and the second half (test). "extra" adds the
rescoring features: the 5-gram LM (LM1), the target/source length ratio and
the n-gram consensus (4 values). BLEU is corpus BLEU in percent of each
sentence's rescored 1-best (sacrebleu's, tokenize none). The baseline is the
list's first entry (Moses's 1-best).

Usage: python benchmarks/bench_rescore.py [--sentences N] [--epochs E] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

from pbmt.metrics.bleu import corpus_bleu
from pbmt.tune.pool import References
from pbmt.tune.rescore import read_lists, to_pool, train, with_features
from pbmt.features import name_features
from pbmt.tune.rescoring_features import NBestLists

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "bible-es-en"


def subset(lists: NBestLists, first: int, last: int) -> NBestLists:
    """Sentences first..last-1 of ``lists``, renumbered from 0."""
    lo, hi = lists.offsets[first], lists.offsets[last]
    return replace(lists, features=lists.features[lo:hi], offsets=lists.offsets[first:last + 1] - lo,
                   texts=lists.texts[lo:hi], totals=lists.totals[lo:hi],
                   sources=lists.sources[first:last] if lists.sources is not None else None)


def columns(lists: NBestLists, n_columns: int) -> NBestLists:
    """``lists`` with only its first ``n_columns`` feature columns (whole features)."""
    names, sizes, total = [], [], 0
    for name, size in zip(lists.layout.names, lists.layout.sizes):
        if total + size > n_columns:
            break
        names.append(name)
        sizes.append(size)
        total += size
    layout = replace(lists.layout, names=tuple(names), types=lists.layout.types[:len(names)], sizes=tuple(sizes))
    return replace(lists, layout=layout, features=lists.features[:, :total])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sentences", type=int, help="use the first N dev sentences (default: all)")
    parser.add_argument("--epochs", type=int, help="ListNet epochs (default: ListNet's own budget, the paper's "
                        "100,000 batches)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args()

    started = time.perf_counter()
    sources = (DATA / "dev.tok.es").read_text(encoding="utf-8").splitlines()
    references = (DATA / "dev.tok.en").read_text(encoding="utf-8").splitlines()
    n = args.sentences or len(sources)
    lists = read_lists(DATA / "model" / "dev.moses.nbest100.gz", sources[:n], n_sentences=n)
    read_seconds = time.perf_counter() - started
    specs = name_features([("lm", str(DATA / "lm5.arpa.gz")), ("length-ratio", None), ("consensus", None)],
                          lists.layout.names)
    started = time.perf_counter()
    extended = with_features(lists, specs)
    feature_seconds = time.perf_counter() - started
    half = n // 2
    halves = {"train": (0, half), "test": (half, n)}
    refs = {h: References(references[a:b]) for h, (a, b) in halves.items()}
    data = {"base": {h: subset(columns(extended, lists.layout.size), a, b) for h, (a, b) in halves.items()},
            "extra": {h: subset(extended, a, b) for h, (a, b) in halves.items()}}
    stats = {h: to_pool(data["base"][h], refs[h]).stats for h in halves}

    def bleu_of(model, features: str, h: str) -> float:
        return 100 * corpus_bleu(stats[h][model.best(data[features][h])])

    rows = [{"system": "baseline (Moses 1-best)", "features": "decoder",
             **{f"{h}_bleu": 100 * corpus_bleu(stats[h][data["base"][h].offsets[:-1]]) for h in halves},
             "seconds": 0.0, "seconds_per_epoch": None}]
    budget = {"epochs": args.epochs} if args.epochs else {}
    runs = [("listnet", "base", budget), ("listnet", "extra", budget),
            ("listnet", "extra", {**budget, "normalisation": "score", "score_range": 10.0}),
            ("mert", "base", {}), ("mert", "extra", {}), ("pro", "extra", {}), ("apro", "extra", {})]
    for algorithm, features, params in runs:
        train_lists = data[features]["train"]
        used = specs if features == "extra" else []
        began = time.perf_counter()
        model = train(train_lists, refs["train"], used, algorithm, np.random.default_rng(args.seed), **params)
        seconds = time.perf_counter() - began
        label = algorithm + (" (score norm. r=10)" if params.get("normalisation") == "score" else "")
        per_epoch = seconds / args.epochs if algorithm == "listnet" and args.epochs else None
        rows.append({"system": label, "features": "decoder" if features == "base" else "decoder + extra",
                     **{f"{h}_bleu": bleu_of(model, features, h) for h in halves}, "seconds": seconds,
                     "seconds_per_epoch": per_epoch})
        print(f"{label} / {features}: {rows[-1]['train_bleu']:.2f} / {rows[-1]['test_bleu']:.2f} "
              f"in {seconds:.1f} s", file=sys.stderr)

    print(f"Moses dev 100-best, {n} sentences: train = first {half}, test = last {n - half}; "
          f"{extended.n_candidates} entries; read {read_seconds:.1f} s, extra features {feature_seconds:.1f} s")
    print(f"{'system':28} {'features':16} {'train BLEU':>10} {'test BLEU':>10} {'fit s':>7} {'s/epoch':>8}")
    for r in rows:
        epoch = f"{r['seconds_per_epoch']:.3f}" if r["seconds_per_epoch"] is not None else "-"
        print(f"{r['system']:28} {r['features']:16} {r['train_bleu']:10.2f} {r['test_bleu']:10.2f} "
              f"{r['seconds']:7.1f} {epoch:>8}")
    if args.json:
        args.json.write_text(json.dumps({"sentences": n, "entries": extended.n_candidates, "epochs": args.epochs,
                                         "read_seconds": read_seconds, "feature_seconds": feature_seconds,
                                         "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
