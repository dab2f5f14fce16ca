"""Lattice MERT's first step on the dev set: graph sizes, line-search cost, memory, and the dev BLEU it reaches.

The first-step experiment of docs/tuning-results.md ("Cures measured on the
first step") for lattice MERT: decode the dev set under the untuned weights of
the shared model (100-best, keeping every search graph as a lattice), fit
``LatticeMert`` once on the lattices (seed, defaults: signs kept, bounded
steps), then decode the dev set (1-best) under the fitted weights and score
it. Also measured: the lattices' sizes, the seconds per line search over all
of them beside n-best MERT's over the decode's 100-best pool on the same
directions (the ratio is the claim; both in this process, one after the
other), and the peak resident memory of this process (it holds the
lattices; the decoding workers are separate processes). BLEU in percent,
sacrebleu's corpus BLEU on the tokenised text. Every time is printed with
the load average sampled just after it.

Usage: python benchmarks/bench_lattice_mert.py [-f MOSES_INI] [--sentences N] [--workers W] [--seed S] [--out DIR]
       [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
from pathlib import Path

import numpy as np

from pbmt.model.model import TranslationModel
from pbmt.search.lattice import Lattices
from pbmt.tune.lattice_mert import LatticeLines, LatticeMert
from pbmt.tune.loop import DevDecoder, decoded_pool, tuned_config, weight_line
from pbmt.tune.mert import PoolLines, _segment
from pbmt.tune.pool import Pool, References, tuned_columns
from pbmt.tune.tuner import TuningData

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "bible-es-en"


def load() -> float:
    return os.getloadavg()[0]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-f", "--config", type=Path, default=DATA / "model" / "moses.ini",
                        help="the moses.ini whose weights the step starts from (default: the shared model's, untuned)")
    parser.add_argument("--sentences", type=int, help="the first N dev sentences (default: all 1,031)")
    parser.add_argument("--workers", type=int, default=2, help="decoding processes")
    parser.add_argument("--seed", type=int, default=1, help="the optimiser's random generator")
    parser.add_argument("--directions", type=int, default=5, help="random directions timed side by side")
    parser.add_argument("--out", type=Path, default=Path("lattice-mert-first-step"),
                        help="folder for the fitted moses.ini")
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args()

    model = TranslationModel.load(args.config)
    sources = (DATA / "dev.tok.es").read_text(encoding="utf-8").splitlines()[:args.sentences]
    refs = (DATA / "dev.tok.en").read_text(encoding="utf-8").splitlines()[:args.sentences]
    references = References(refs)
    layout = model.layout
    weights = layout.weights(model.config)
    rows = []

    def row(what, value, seconds=None):
        rows.append({"what": what, "value": value, "seconds": seconds, "load": round(load(), 2)})
        timing = f"  {seconds:.1f} s (load {rows[-1]['load']})" if seconds is not None else ""
        print(f"{what:<52} {value}{timing}", file=sys.stderr, flush=True)

    started = time.perf_counter()
    with DevDecoder(model, sources, 100, args.workers, quiet=True, lattices=True) as decoder:
        nbest = decoder(weights)
        lattices = decoder.lattices
    batch, untuned = decoded_pool(nbest, layout, references)
    pool = Pool.empty(layout, references.n_sentences).merge(batch)[0]  # the batch keeps repeated keys
    row("decode, 100-best and lattices: dev BLEU at the start", f"{100 * untuned:.2f}", time.perf_counter() - started)
    edges = np.array([x.n_edges for x in lattices])
    nodes = np.array([x.n_nodes for x in lattices])
    row("sentences", len(lattices))
    row("lattice edges: total / mean / max per sentence", f"{edges.sum()} / {edges.mean():.0f} / {edges.max()}")
    row("lattice nodes: total / mean / max per sentence", f"{nodes.sum()} / {nodes.mean():.0f} / {nodes.max()}")
    row("pool candidates", pool.n_candidates)

    free = tuned_columns(layout, LatticeMert().fixed)
    lattice_lines, pool_lines = LatticeLines(Lattices.concatenate(lattices), references, free), PoolLines(pool, free)
    point = weights[free] / np.abs(weights[free]).sum()
    rng = np.random.default_rng(args.seed)
    reach = LatticeMert().max_step * np.abs(point).sum()
    signs = np.sign(point)
    timed = {"lattice": 0.0, "n-best": 0.0}
    for lines, name in ((lattice_lines, "lattice"), (pool_lines, "n-best")):
        lines.at(point)
        lines.search(np.eye(len(point))[0], 0, *_segment(point, np.eye(len(point))[0], signs, reach))  # compiled
    for _ in range(args.directions):
        direction = rng.standard_normal(len(point))
        direction /= np.abs(direction).sum()
        segment = _segment(point, direction, signs, reach)
        for lines, name in ((lattice_lines, "lattice"), (pool_lines, "n-best")):
            begin = time.perf_counter()
            lines.search(direction, None, *segment)
            timed[name] += time.perf_counter() - begin
    per_lattice, per_pool = timed["lattice"] / args.directions, timed["n-best"] / args.directions
    row("line search over the lattices, s", f"{per_lattice:.3f}")
    row("line search over the 100-best pool, s", f"{per_pool:.4f}")
    row("ratio lattice / pool", f"{per_lattice / per_pool:.0f}")

    del lattice_lines
    started = time.perf_counter()
    optimizer = LatticeMert().fit(TuningData(pool=pool, lattices=lattices, references=references), weights,
                                  np.random.default_rng(args.seed))
    fit_seconds = time.perf_counter() - started
    row("lattice MERT fit: line searches", optimizer.n_line_searches_, fit_seconds)
    row("lattice BLEU of the fitted weights (graphs' best paths)", f"{100 * optimizer.score_:.2f}")
    row("pool BLEU of the fitted weights", f"{100 * pool.bleu(optimizer.weights_):.2f}")
    row("peak resident memory of this process, MB",
        f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f}")
    args.out.mkdir(parents=True, exist_ok=True)
    tuned_config(model.config, layout, optimizer.weights_).write(args.out / "moses.ini")
    print(f"fitted weights: {weight_line(layout, optimizer.weights_)}", file=sys.stderr)

    del lattices
    started = time.perf_counter()
    with DevDecoder(model, sources, 1, args.workers, quiet=True) as decoder:
        _, fitted = decoded_pool(decoder(optimizer.weights_), layout, references)
    row("dev BLEU of the 1-best decode under the fitted weights", f"{100 * fitted:.2f}",
        time.perf_counter() - started)
    if args.json:
        args.json.write_text(json.dumps({"rows": rows, "weights": optimizer.weights_.tolist(),
                                         "seed": args.seed, "sentences": len(sources)}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
