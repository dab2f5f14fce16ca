"""Claim: MERT loses the gold weights as the dimension grows; PRO and APRO do not
(Hopkins & May, 2011, § 3 and § 4.2, Fig. 3).

Setting, as in the paper: a hidden gold weight vector w* (standard normal,
dimension d); a pool of --sentences "sentences" with --candidates
"translations" each, whose feature vectors are d numbers uniform in [0, 500];
the gold score of a candidate is ``w* . x``. In the "noisy" setting the
optimisers see the features plus Gaussian noise of standard deviation 500
while the gold stays that of the clean features. Each optimiser runs once on
the pool and its weights are compared with w* by cosine similarity (the
paper's y axis).

pbmt's optimisers learn from BLEU statistics, so each candidate gets
statistics whose BLEU rises with its gold score: per sentence the gold score
is scaled to q in [0, 1] and every n-gram order matches a share 0.1 + 0.8 q
of a 100-word hypothesis (reference of equal length). MERT maximises the
corpus BLEU of these statistics (the paper's MERT maximised the summed gold
score, a function with the same 1-best for every sentence); PRO and APRO rank
by their BLEU+1. Also printed: "gold", the mean of q over the 1-best chosen
by the learnt weights on the clean features (1 = every sentence's best
candidate), and the corpus BLEU of the pool's 1-best in percent.

MERT: pbmt's Mert with --restarts random starts besides a random initial
point (the paper: 20 starts in all) and 10 random directions per round. PRO:
the paper's Γ = 5000, Ξ = 50, α = 0.05 (on BLEU+1), logistic regression;
APRO: C = 1. Both start from zero weights with Ψ = 1 (the synthetic
experiment is a single optimisation, no tuning loop to interpolate over).
Seconds are wall clock of the optimiser alone, noisy on a shared machine.

Defaults are a reduced setting (a few minutes on one core). The paper's:

    python benchmarks/bench_pro_synthetic.py --sentences 500 --repeats 3 --restarts 19 \\
        --dims 10,100,200,300,400,500,600,700,800,900,1000

(MERT's cost grows with d squared: hours at d = 1000.)

    python benchmarks/bench_pro_synthetic.py [--dims 10,20,50,100] [--sentences 100] [--candidates 100]
        [--repeats 1] [--restarts 4] [--noise 0,500] [--algorithms mert,pro,apro] [--seed 1] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import numpy as np

from pbmt.base.files import atomic_write
from pbmt.model.features import FeatureLayout
from pbmt.tune.apro import Apro
from pbmt.tune.mert import Mert
from pbmt.tune.pool import Pool
from pbmt.tune.pro import Pro
from pbmt.tune.tuner import TuningData

LENGTH = 100


def synthetic_pool(rng: np.random.Generator, dim: int, n_sent: int, n_cand: int,
                   noise: float) -> tuple[Pool, np.ndarray, np.ndarray, Pool]:
    """The pool the optimisers see, w* (float64[dim]), q (float64[n_sent * n_cand], the gold score
    scaled to [0, 1] per sentence) and the pool of the clean features."""
    w_star = rng.normal(size=dim)
    clean = rng.uniform(0.0, 500.0, size=(n_sent * n_cand, dim))
    gold = (clean @ w_star).reshape(n_sent, n_cand)
    q = ((gold - gold.min(axis=1, keepdims=True)) / np.ptp(gold, axis=1, keepdims=True)).ravel()
    stats = np.zeros((n_sent * n_cand, 10), dtype=np.int64)
    stats[:, 0] = stats[:, 1] = LENGTH
    for n in range(4):
        stats[:, 6 + n] = LENGTH - n
        stats[:, 2 + n] = np.rint((LENGTH - n) * (0.1 + 0.8 * q))
    seen = clean + rng.normal(scale=noise, size=clean.shape) if noise > 0 else clean
    layout = FeatureLayout(tuple(f"F{i}" for i in range(dim)), ("",) * dim, (1,) * dim)
    offsets = np.arange(0, n_sent * n_cand + 1, n_cand, dtype=np.int64)
    pool = Pool(layout, seen, stats, offsets, np.arange(n_sent * n_cand, dtype=np.uint64), ("",) * (n_sent * n_cand))
    clean_pool = Pool(layout, clean, stats, offsets, pool.keys, pool.texts)
    return pool, w_star, q, clean_pool


def run_one(algorithm: str, pool: Pool, clean_pool: Pool, w_star: np.ndarray, q: np.ndarray, restarts: int,
            rng: np.random.Generator) -> dict:
    dim = len(w_star)
    if algorithm == "mert":
        optimizer, start = Mert(restarts=restarts, random_directions=10, fixed=()), rng.uniform(size=dim)
    elif algorithm == "pro":
        optimizer, start = Pro(interpolation=1.0, fixed=()), np.zeros(dim)
    else:
        optimizer, start = Apro(interpolation=1.0, fixed=()), np.zeros(dim)
    started = time.perf_counter()
    weights = optimizer.fit(TuningData(pool=pool), start, rng).weights_
    seconds = time.perf_counter() - started
    cosine = float(weights @ w_star / (np.linalg.norm(weights) * np.linalg.norm(w_star))) if weights.any() else 0.0
    return {"cosine": cosine, "gold": float(q[clean_pool.best(weights)].mean()),
            "bleu": 100 * clean_pool.bleu(weights), "seconds": seconds}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dims", default="10,20,50,100", help="comma-separated dimensions")
    parser.add_argument("--sentences", type=int, default=100)
    parser.add_argument("--candidates", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=1, help="pools per setting (different random data)")
    parser.add_argument("--restarts", type=int, default=4, help="MERT's random restarts besides its first start")
    parser.add_argument("--noise", default="0,500", help="comma-separated standard deviations of feature noise")
    parser.add_argument("--algorithms", default="mert,pro,apro")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    dims = [int(d) for d in args.dims.split(",")]
    noises = [float(n) for n in args.noise.split(",")]
    algorithms = args.algorithms.split(",")

    rows = []
    print(f"{args.sentences} sentences x {args.candidates} candidates, {args.repeats} pool(s) per setting; "
          "mean over pools (cosine to w*, gold = mean scaled gold score of the 1-best, BLEU %, seconds)")
    header = f"{'noise':>6} {'dim':>5} " + " ".join(f"{a + ' cos':>9} {'gold':>6} {'BLEU':>6} {'s':>6}"
                                                    for a in algorithms)
    print(header)
    for noise in noises:
        for dim in dims:
            results = {a: [] for a in algorithms}
            for repeat in range(args.repeats):
                data_rng = np.random.default_rng([args.seed, dim, repeat])
                pool, w_star, q, clean_pool = synthetic_pool(data_rng, dim, args.sentences, args.candidates, noise)
                for algorithm in algorithms:
                    rng = np.random.default_rng([args.seed, dim, repeat, 1])
                    results[algorithm].append(run_one(algorithm, pool, clean_pool, w_star, q, args.restarts, rng))
            row = {"noise": noise, "dim": dim}
            cells = []
            for algorithm in algorithms:
                means = {k: statistics.mean(r[k] for r in results[algorithm]) for k in results[algorithm][0]}
                row[algorithm] = {**means, "runs": results[algorithm]}
                cells.append(f"{means['cosine']:9.3f} {means['gold']:6.3f} {means['bleu']:6.2f} "
                             f"{means['seconds']:6.1f}")
            rows.append(row)
            print(f"{noise:6g} {dim:5d} " + " ".join(cells), flush=True)
    if args.json:
        with atomic_write(args.json) as handle:
            json.dump({"settings": vars(args) | {"json": str(args.json)}, "rows": rows}, handle, indent=1)


if __name__ == "__main__":
    main()
