"""Claim: the Gibbs sampler applies ≥ 50,000 operators per second per core, and annealing reaches the stack decoder's scores.

Setting: the shared Moses model (``model/moses.ini``: 3-gram LM, msd-bidirectional-fe
reordering, table limit 20, distortion limit 6), dev sentences, one process.

Measured, each in a fresh process:
- speed: operator applications (sampler steps) per second at temperature 1 from
  the gloss, over --steps steps on each of the first --sentences dev sentences
  (after 500 warm-up steps), with the three operators mixed evenly and each
  alone, and the mean neighbourhood size of each operator. Per second of the
  process's CPU time, which is the rate per core when other processes share
  the machine, and per second of wall time;
- annealing: on the first --anneal-sentences dev sentences, a chain from the
  gloss annealed from T=1 to T=0.02 over --anneal-steps steps: the fraction of
  sentences where it reaches the stack decoder's score (default beam), the
  median time and steps to get there, and the mean final gap (natural log);
- compile time: loading the model and sampling one short sentence with an
  empty numba cache (NUMBA_CACHE_DIR=a new folder) and with the warm one.

    python benchmarks/bench_sampler.py [--sentences 50] [--steps 20000] [--anneal-sentences 20] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "bible-es-en"
MIXES = {"mixed": (1.0, 1.0, 1.0), "MERGE-SPLIT": (1.0, 0.0, 0.0), "REORDER": (0.0, 1.0, 0.0),
         "RETRANS": (0.0, 0.0, 1.0)}


def child(mode: str, args) -> dict:
    started = time.perf_counter()
    import numpy as np

    from pbmt.model.model import TranslationModel
    from pbmt.search.options import TranslationOptions
    from pbmt.search.sampler import LMCache, Sampler, anneal, gloss

    model = TranslationModel.load(args.data / "model" / "moses.ini")
    lines = (args.data / "dev.tok.es").read_text(encoding="utf-8").splitlines()
    cache = LMCache.new()

    def options_of(line):
        return TranslationOptions.build(model, model.vocab.ids(line.split()))

    if mode == "compile":
        options = options_of("y dios dijo")
        sampler = Sampler(model, options, lm_cache=cache)
        sampler.run(sampler.start(gloss(options)), np.random.default_rng(0), 100)
        return {"seconds": time.perf_counter() - started}
    rng = np.random.default_rng(0)
    if mode == "speed":
        out = {}
        sentences = [options_of(line) for line in lines[:args.sentences]]
        for name, weights in MIXES.items():
            seconds, cpu_seconds, sizes = 0.0, 0.0, []
            for options in sentences:
                sampler = Sampler(model, options, operator_weights=weights, lm_cache=cache)
                chain = sampler.start(gloss(options))
                sampler.run(chain, rng, 500)
                start, cpu_start = time.perf_counter(), time.process_time()
                sampler.run(chain, rng, args.steps, burn_in=args.steps)
                seconds += time.perf_counter() - start
                cpu_seconds += time.process_time() - cpu_start
                sizes += [len(sampler.propose(chain, rng)) for _ in range(20)]
            out[name] = {"steps": args.steps * len(sentences), "seconds": seconds, "cpu_seconds": cpu_seconds,
                         "mean_neighbourhood": float(np.mean(sizes))}
        return out
    if mode == "anneal":
        from pbmt.search.decoder import decode

        reached_seconds, reached_steps, gaps = [], [], []
        chunk = 500
        for line in lines[:args.anneal_sentences]:
            options = options_of(line)
            target = decode(model, options)[0].score
            sampler = Sampler(model, options, lm_cache=cache)
            chain = sampler.start(gloss(options))
            schedule = anneal(args.anneal_steps, 1.0, 0.02)
            best, spent, reached = -np.inf, 0.0, False
            for lo in range(0, args.anneal_steps, chunk):
                start = time.perf_counter()
                run = sampler.run(chain, rng, min(chunk, args.anneal_steps - lo), schedule[lo:lo + chunk],
                                  burn_in=chunk)
                spent += time.perf_counter() - start
                best = max(best, run.best_score)
                if best >= target - 1e-6 and not reached:
                    reached = True
                    reached_seconds.append(spent)
                    reached_steps.append(lo + chunk)
            gaps.append(target - best)
        return {"sentences": args.anneal_sentences, "reached": len(reached_steps),
                "median_seconds": float(np.median(reached_seconds)) if reached_seconds else None,
                "median_steps": float(np.median(reached_steps)) if reached_steps else None,
                "mean_gap": float(np.mean(gaps)), "max_gap": float(np.max(gaps)),
                "above_decoder": int(sum(g < -1e-6 for g in gaps))}
    raise ValueError(mode)


def run_child(mode: str, args, env=None) -> dict:
    command = [sys.executable, __file__, "--child", mode, "--data", str(args.data), "--sentences",
               str(args.sentences), "--steps", str(args.steps), "--anneal-sentences", str(args.anneal_sentences),
               "--anneal-steps", str(args.anneal_steps)]
    out = subprocess.run(command, check=True, capture_output=True, text=True, env={**os.environ, **(env or {})})
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--sentences", type=int, default=50, help="dev sentences timed")
    parser.add_argument("--steps", type=int, default=20000, help="timed steps per sentence")
    parser.add_argument("--anneal-sentences", type=int, default=20, help="dev sentences annealed")
    parser.add_argument("--anneal-steps", type=int, default=50000, help="steps of the annealing schedule")
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args)))
        return

    with tempfile.TemporaryDirectory() as numba_cache:
        cold = run_child("compile", args, {"NUMBA_CACHE_DIR": numba_cache})
        cached = run_child("compile", args, {"NUMBA_CACHE_DIR": numba_cache})
    speed = run_child("speed", args)
    annealing = run_child("anneal", args)
    rows = [("load + sample one sentence, empty numba cache (s)", f"{cold['seconds']:.1f}"),
            ("load + sample one sentence, warm numba cache (s)", f"{cached['seconds']:.1f}")]
    for name, s in speed.items():
        rows.append((f"steps/s, {name} ({args.sentences} sentences, mean neighbourhood {s['mean_neighbourhood']:.1f})",
                     f"{s['steps'] / s['cpu_seconds']:,.0f} ({s['steps'] / s['seconds']:,.0f})"))
    a = annealing
    rows += [(f"annealing reaches the decoder's score ({a['sentences']} sentences)", f"{a['reached']}"),
             ("  median seconds / steps to reach it",
              f"{a['median_seconds']:.2f} / {a['median_steps']:.0f}" if a["reached"] else "—"),
             ("  mean / max gap below the decoder (nats)", f"{a['mean_gap']:.3f} / {a['max_gap']:.3f}"),
             ("  sentences where annealing beats the decoder's beam", f"{a['above_decoder']}")]
    width = max(len(r[0]) for r in rows)
    print(f"{'measure':<{width}}  {'value':>18}")
    for name, value in rows:
        print(f"{name:<{width}}  {value:>18}")
    print("steps/s: per second of the process's CPU time (per second of wall time)")
    if args.json:
        args.json.write_text(json.dumps({"cold_compile": cold, "cached_compile": cached, "speed": speed,
                                         "anneal": annealing}, indent=2))


if __name__ == "__main__":
    main()
