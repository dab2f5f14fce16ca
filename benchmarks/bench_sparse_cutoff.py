"""Claim: a cut-off on the dev sentences a sparse feature is seen in (``--sparse-min-sentences K``) keeps what
batch MIRA's sparse weights buy on sentences it did not fit, with a fraction of the features.

Setting: the pool of a ``pbmt tune`` run over sparse families (``--tuned``: its folder's ``checkpoint.npz``;
after a first iteration, the untuned weights' 100-best lists of all of dev with every feature that fired). Its
sentences are split in two halves, even and odd; batch MIRA at pbmt's defaults (Ψ = 0.3, seed 1) is fitted on
one half from the weights of the run's first decode (``log.tsv``), dense alone, then dense and sparse with
each cut-off K (the cut-off counts the sentences of the fitted half), and its weights rerank the other half's
candidates: the corpus BLEU of those 1-bests, held out from the fit. Then the halves swap. No decoding: the
held-out sentences are scored only on the candidates the first decode gave them, so a row measures reranking
(the sparse weights' generalisation to other sentences), not what a new decode under them would find.

    python benchmarks/bench_sparse_cutoff.py --tuned RUNS/mira-all-psi0.3-seed1 [--cutoffs 1,3,5] [--record NAME]

Printed, and with ``--record NAME`` written as ``docs/runs/NAME.json`` (``python docs/generated.py``): per
row, the sparse features tuned (of the pool's), those with a non-zero weight, the fitted half's BLEU and the
held-out half's, each direction and their mean, and the mean against dense MIRA's.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

from pbmt.base.nbest import parse_features
from pbmt.tune.mira import Mira
from pbmt.tune.pool import Pool
from pbmt.tune.tuner import TuningData

HERE = Path(__file__).resolve().parent


def first_weights(log: Path, pool: Pool) -> np.ndarray:
    """The dense weights of the run's first decode (``log.tsv``'s first ``decoded_weights``: ``Name= v ...``), in
    the pool's column order."""
    rows = [line.split("\t") for line in log.read_text(encoding="utf-8").splitlines()]
    values = parse_features(rows[1][rows[0].index("decoded_weights")], log, 2)
    return np.concatenate([values[n] for n in pool.layout.names])


def half(pool: Pool, sentences: np.ndarray) -> Pool:
    """The pool of ``sentences`` (int64, ascending) alone, over the same sparse columns."""
    rows = np.concatenate([np.arange(pool.offsets[s], pool.offsets[s + 1]) for s in sentences])
    offsets = np.concatenate([[0], np.cumsum(np.diff(pool.offsets)[sentences])]).astype(np.int64)
    return Pool(pool.layout, pool.features[rows], pool.stats[rows], offsets, pool.keys[rows], ("",) * len(rows),
                pool.sparse[rows], pool.sparse_names)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tuned", type=Path, required=True, help="a pbmt tune folder over sparse families")
    parser.add_argument("--cutoffs", default="1,2,3,5,10,20", help="the values of K, comma-separated")
    parser.add_argument("--record", metavar="NAME", help="write the table as docs/runs/NAME.json")
    parser.add_argument("--record-note", metavar="TEXT", help="a sentence under the recorded table")
    args = parser.parse_args()
    for needed in (args.tuned / "checkpoint.npz", args.tuned / "log.tsv"):
        if not needed.is_file():
            parser.error(f"{needed} does not exist")
    cutoffs = [int(k) for k in args.cutoffs.split(",")]
    with np.load(args.tuned / "checkpoint.npz") as arrays:
        pool = Pool.from_arrays(arrays)
    if pool.sparse is None:
        parser.error(f"{args.tuned / 'checkpoint.npz'}: its pool holds no sparse feature")
    start = first_weights(args.tuned / "log.tsv", pool)
    sentences = np.arange(pool.n_sentences)
    splits = [(half(pool, sentences[0::2]), half(pool, sentences[1::2]))]
    splits.append(splits[0][::-1])
    loads, started = [os.getloadavg()[0]], time.process_time()
    runs = [("untuned", None), ("dense MIRA", None), *((f"MIRA, K = {k}", k) for k in cutoffs)]
    rows = []
    for label, k in runs:
        fitted, held_out, tuned, nonzero = [], [], 0, 0
        for train, test in splits:
            if label == "untuned":
                weights = start
            elif k is None:
                weights = Mira().fit(TuningData(pool=train), start, np.random.default_rng(1)).weights_
            else:
                initial = np.concatenate([start, np.zeros(len(pool.sparse_names))])
                weights = Mira(min_sentences=k).fit(TuningData(pool=train), initial,
                                                    np.random.default_rng(1)).weights_
                tuned += int(np.count_nonzero(train.sparse_sentence_counts() >= k))
                nonzero += int(np.count_nonzero(weights[pool.layout.size:]))
            fitted.append(100 * train.bleu(weights))
            held_out.append(100 * test.bleu(weights))
        rows.append([label, round(tuned / 2) if k else None, round(nonzero / 2) if k else None,
                     round(float(np.mean(fitted)), 2), round(held_out[0], 2), round(held_out[1], 2),
                     round(float(np.mean(held_out)), 2)])
        loads.append(os.getloadavg()[0])
        print("  ".join("" if v is None else str(v) for v in rows[-1]), flush=True)
    dense = rows[1][-1]
    for row in rows:
        row.append(round(row[-1] - dense, 2))
    print(f"{len(pool.sparse_names)} sparse features in the pool of {pool.n_sentences} sentences "
          f"({pool.n_candidates} candidates); {time.process_time() - started:.1f} CPU s")
    if args.record:
        sys.path.insert(0, str(HERE.parent / "docs"))
        from generated import write_table

        columns = ["weights", "sparse features tuned (mean of the halves)", "non-zero sparse weights",
                   "fitted half's BLEU (mean)", "held-out BLEU, even fitted", "held-out BLEU, odd fitted",
                   "held-out BLEU (mean)", "against dense MIRA"]
        formats = {column: (".2f" if column.startswith(("fitted", "held-out")) else "+.2f") for column in columns[3:]}
        command = " ".join(["python", "benchmarks/bench_sparse_cutoff.py", "--tuned", str(args.tuned), "--cutoffs",
                            args.cutoffs, "--record", args.record])
        path = write_table(args.record, columns, rows, load=loads, formats=formats, note=args.record_note,
                           command=command)
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
