"""Lattice MERT's line search over all of dev's search graphs: seconds per search, this checkout beside another.

Decodes the dev set once under the shared model's untuned weights (100-best,
keeping every search graph as a lattice) and saves the joined lattices in
``--graphs`` (an .npz; later runs load it and skip the decode), then times
``LatticeLines.search`` from the untuned weights along ``--directions``
random directions (seeded), each over the segment a MERT climb allows
(``max_step`` of ``LatticeMert``'s defaults) and once over the whole line,
along every coordinate over its bounded segment (what a climb's rounds
run most: each tuned weight, then ten random directions), and apart the
edge scores of each random and each coordinate direction that every
search computes before its envelopes (``Lattices.scores``).
With ``--baseline DIR`` (a checkout of another commit, e.g. ``git worktree
add --detach /tmp/base main``) the same searches run in a child process
importing pbmt from DIR, one after the other with this checkout's, and the
two must find the same steps and BLEU; the ratio of their times is the claim.
CPU and wall seconds are printed with the load average sampled after each.
With ``--climb`` it times a whole optimisation instead: ``LatticeMert``'s
climb from the untuned weights (``--seed``, one thread, the kernels compiled
first on two sentences' graphs), beside the baseline's when one is given,
with the number of line searches and the BLEU of the graphs' best paths
under the weights each reaches (``--margin``: this checkout's
``LatticeMert`` margin; ``--sentences N`` takes the first N sentences of the
saved graphs).

Usage: python benchmarks/bench_line_search.py [--graphs FILE] [--sentences N] [--directions K] [--baseline DIR]
       [--threads T] [--climb [--margin X]] [--json FILE]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "bible-es-en"


def save_graphs(path: Path, config: Path, sentences: int | None, threads: int) -> None:
    from pbmt.model.model import TranslationModel
    from pbmt.search.lattice import Lattices
    from pbmt.tune.loop import DevDecoder

    model = TranslationModel.load(config)
    sources = (DATA / "dev.tok.es").read_text(encoding="utf-8").splitlines()[:sentences]
    started = time.perf_counter()
    with DevDecoder(model, sources, 100, quiet=False, lattices=True, threads=threads) as decoder:
        decoder(model.layout.weights(model.config))
        lattices = decoder.lattices
    joined = Lattices.concatenate(lattices)
    x = joined.joined
    # by rows, as a per-sentence Lattice holds them: each checkout lays out its joined arrays as it needs
    np.savez(path, edge_offsets=joined.edge_offsets, node_offsets=joined.node_offsets,
             option_offsets=joined.option_offsets,
             **{f.name: getattr(x, f.name) for f in dataclasses.fields(x)} | {
                 "transition": np.ascontiguousarray(x.transition)})
    print(f"decoded {len(sources)} sentences with their graphs in {time.perf_counter() - started:.1f} s "
          f"(load {os.getloadavg()[0]:.2f}); {x.n_edges} edges, {x.n_nodes} nodes -> {path}", file=sys.stderr)


def load_graphs(graphs: Path, sentences: int | None):
    """The saved lattices of the first ``sentences`` dev sentences (None: all the file holds)."""
    from pbmt.search.lattice import Lattice, Lattices

    saved = np.load(graphs)
    arrays = {name: saved[name] for name in saved.files}
    offsets = {name: arrays.pop(name) for name in ("edge_offsets", "node_offsets", "option_offsets")}
    arrays["n_nodes"] = int(arrays["n_nodes"])
    n = len(offsets["edge_offsets"]) - 1
    if sentences is None or sentences == n:
        return Lattices(**offsets, joined=Lattice(**arrays))
    if sentences > n:
        raise SystemExit(f"{graphs} holds {n} sentences' graphs, not {sentences}")
    edges, options = offsets["edge_offsets"][sentences], offsets["option_offsets"][sentences]
    head = {name: arrays[name][:edges] for name in ("source", "target", "option", "transition")}
    head |= {name: arrays[name][:options] for name in ("local", "start", "end", "sentence_option")}
    head |= {"word_offsets": arrays["word_offsets"][:options + 1], "columns": arrays["columns"],
             "words": arrays["words"][:arrays["word_offsets"][options]],
             "n_nodes": int(offsets["node_offsets"][sentences])}
    return Lattices(*(offsets[name][:sentences + 1] for name in ("edge_offsets", "node_offsets", "option_offsets")),
                    joined=Lattice(**head))


def time_climb(graphs: Path, config: Path, sentences: int | None, seed: int, margin: str | None) -> dict:
    """Times one ``LatticeMert`` optimisation from the untuned weights (one thread) with the pbmt this process
    imports; margin: ``LatticeMert``'s (None: its default; 'none': every path)."""
    from pbmt.model.model import TranslationModel
    from pbmt.tune.lattice_mert import LatticeLines, LatticeMert
    from pbmt.tune.pool import References, tuned_columns

    model = TranslationModel.load(config)
    weights = model.layout.weights(model.config)
    params = {} if margin is None else {"margin": None if margin == "none" else float(margin)}
    mert = LatticeMert(threads=1, **params)
    free = tuned_columns(model.layout, mert.fixed)
    refs = (DATA / "dev.tok.en").read_text(encoding="utf-8").splitlines()

    def lines(n):
        joined = load_graphs(graphs, n)
        return LatticeLines(joined, References(refs[:joined.n_sentences]), free, threads=1)
    mert._optimise(lines(2), weights, free, np.random.default_rng(seed))  # compiles the kernels unless cached
    lines = lines(sentences)
    joined = lines.lattices
    wall, cpu = time.perf_counter(), time.process_time()
    mert._optimise(lines, weights, free, np.random.default_rng(seed))
    return {"edges": int(joined.joined.n_edges), "sentences": joined.n_sentences,
            "wall": time.perf_counter() - wall, "cpu": time.process_time() - cpu,
            "line searches": mert.n_line_searches_, "bleu": 100 * mert.score_, "weights": mert.weights_.tolist(),
            "load": os.getloadavg()[0]}


def time_searches(graphs: Path, config: Path, sentences: int | None, directions: int, seed: int) -> dict:
    """Times line searches over the saved graphs with the pbmt this process imports."""
    from pbmt.model.model import TranslationModel
    from pbmt.tune.lattice_mert import LatticeLines, LatticeMert
    from pbmt.tune.mert import _segment
    from pbmt.tune.pool import References, tuned_columns

    model = TranslationModel.load(config)
    joined = load_graphs(graphs, sentences)
    refs = (DATA / "dev.tok.en").read_text(encoding="utf-8").splitlines()[:joined.n_sentences]
    layout = model.layout
    weights = layout.weights(model.config)
    free = tuned_columns(layout, LatticeMert().fixed)
    lines = LatticeLines(joined, References(refs), free)
    point = weights[free] / np.abs(weights[free]).sum()
    reach = LatticeMert().max_step * np.abs(point).sum()
    signs = np.sign(point)
    rng = np.random.default_rng(seed)
    lines.at(point)
    started = time.perf_counter()
    lines.search(np.eye(len(point))[0], 0, *_segment(point, np.eye(len(point))[0], signs, reach))
    first = time.perf_counter() - started  # compiles the kernels unless cached
    found, timed = [], {name: [0.0, 0.0] for name in ("bounded", "whole line", "edge scores", "coordinate",
                                                       "coordinate scores")}

    def clock(name, work):
        wall, cpu = time.perf_counter(), time.process_time()
        out = work()
        timed[name][0] += time.perf_counter() - wall
        timed[name][1] += time.process_time() - cpu
        return out
    for _ in range(directions):
        direction = rng.standard_normal(len(point))
        direction /= np.abs(direction).sum()
        clock("edge scores", lambda: lines.lattices.scores(lines._vector(direction)))  # not the envelopes
        for name, segment in (("bounded", _segment(point, direction, signs, reach)), ("whole line", (-np.inf, np.inf))):
            found.append([float(x) for x in clock(name, lambda: lines.search(direction, None, *segment))])
    for k, direction in enumerate(np.eye(len(point))):
        clock("coordinate scores", lambda: lines.lattices.scores(lines._vector(direction)))
        segment = _segment(point, direction, signs, reach)
        found.append([float(x) for x in clock("coordinate", lambda: lines.search(direction, k, *segment))])
    counts = {name: len(point) if name.startswith("coordinate") else directions for name in timed}
    return {"edges": int(joined.joined.n_edges), "sentences": joined.n_sentences, "first search": first,
            "per search": {name: {"wall": w / counts[name], "cpu": c / counts[name]} for name, (w, c) in timed.items()},
            "found": found, "load": os.getloadavg()[0]}


def report_climb(label: str, result: dict) -> None:
    print(f"{label:<10} climb: {result['cpu']:.1f} s CPU, {result['wall']:.1f} s wall, {result['line searches']} line "
          f"searches, BLEU of the graphs' best paths {result['bleu']:.2f} (load {result['load']:.2f})", file=sys.stderr)


def report(label: str, result: dict) -> None:
    for name, t in result["per search"].items():
        kind = "" if name.endswith("scores") else "line search"
        print(f"{label:<10} {name:<17} {kind:<11}: {t['wall']:.3f} s wall, {t['cpu']:.3f} s CPU "
              f"(load {result['load']:.2f})", file=sys.stderr)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-f", "--config", type=Path, default=DATA / "model" / "moses.ini",
                        help="the model whose untuned weights the searches start from (default: the shared model)")
    parser.add_argument("--graphs", type=Path, default=Path("dev-graphs.npz"),
                        help="the saved lattices (decoded and saved there if absent)")
    parser.add_argument("--sentences", type=int, help="the first N dev sentences (default: all 1,031)")
    parser.add_argument("--directions", type=int, default=5, help="random directions timed (each bounded and whole)")
    parser.add_argument("--seed", type=int, default=1, help="the directions' random generator")
    parser.add_argument("--threads", type=int, default=2, help="decoding threads when the graphs are decoded")
    parser.add_argument("--baseline", type=Path, help="a checkout of another commit to time beside this one")
    parser.add_argument("--climb", action="store_true",
                        help="time a whole optimisation (LatticeMert's climb from the untuned weights, seed --seed, "
                             "one thread) instead of single line searches")
    parser.add_argument("--margin", help="with --climb, this checkout's LatticeMert margin ('none': every path; "
                                         "default: its default)")
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if not args.graphs.exists():
        save_graphs(args.graphs, args.config, args.sentences, args.threads)
    if args.climb:
        def timed(margin):
            return time_climb(args.graphs, args.config, args.sentences, args.seed, margin)
        show = report_climb
    else:
        def timed(margin):
            return time_searches(args.graphs, args.config, args.sentences, args.directions, args.seed)
        show = report
    if args.child:
        print(json.dumps(timed(None)))
        return 0
    results = {}
    if args.baseline:
        env = dict(os.environ, PYTHONPATH=str(args.baseline.resolve()))
        command = [sys.executable, __file__, "--child", "--graphs", str(args.graphs), "-f", str(args.config),
                   "--directions", str(args.directions), "--seed", str(args.seed)] + ["--climb"] * args.climb
        if args.sentences is not None:
            command += ["--sentences", str(args.sentences)]
        results["baseline"] = json.loads(subprocess.run(command, env=env, check=True, capture_output=True,
                                                        text=True).stdout)
        show("baseline", results["baseline"])
    results["this"] = timed(args.margin)
    show("this", results["this"])
    if args.climb:
        if args.baseline:
            base, this = results["baseline"], results["this"]
            print(f"speed-up of the climb: {base['cpu'] / this['cpu']:.1f}x CPU, {base['wall'] / this['wall']:.1f}x "
                  f"wall; BLEU {this['bleu'] - base['bleu']:+.2f}", file=sys.stderr)
        if args.json:
            args.json.write_text(json.dumps(results, indent=1) + "\n")
        return 0
    print(f"{results['this']['edges']} edges in {results['this']['sentences']} sentences' graphs", file=sys.stderr)
    if args.baseline:
        base, this = results["baseline"], results["this"]
        same = np.allclose(base["found"], this["found"], rtol=0, atol=1e-9)
        print(f"same steps and BLEU as the baseline: {'yes' if same else 'NO'}", file=sys.stderr)
        for name in this["per search"]:
            b, t = base["per search"][name], this["per search"][name]
            print(f"speed-up {name:<17}: {b['wall'] / t['wall']:.1f}x wall, {b['cpu'] / t['cpu']:.1f}x CPU",
                  file=sys.stderr)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
