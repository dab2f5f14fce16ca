"""Claim: the share of a decode that holds Python's lock (the serial fraction of Amdahl's law) is small enough
for two threads to reach 1.8x one thread; and what it allows at 4, 8 and 16 threads.

Setting: the shared model (``../shared/data/bible-es-en/model``, its own settings: cube pruning) and the first
``--sentences`` tokenised dev sentences, translated in this process on one thread, as ``pbmt translate``
does each sentence (the Translator, then the output lines), for each n-best size of ``--nbest`` (1: the
1-best; N: also N-best lines): once to warm up, once timed (CPU seconds), and once under ``cProfile`` with a
CPU clock, from which the CPU spent inside the kernels that release the lock (``KERNELS``) is read. The
serial share is 1 minus that over the timed CPU (the profiler slows Python calls, not a kernel's own time,
so the kernels' time is taken as it is). CPU seconds of one thread hardly change with the machine's load,
so this can be measured on a busy machine; the speed-ups themselves need a quiet one (``bench_decoder.py
--threads 1,2``).

With ``--baseline DIR`` (a checkout of another commit) the same runs in a child process importing pbmt from
DIR, for a before/after in one run. ``--record`` writes the records ``threads-serial-share`` and
``threads-amdahl`` of docs/scale-out.md (``docs/generated.py``).

    python benchmarks/bench_threads_serial.py [--sentences 200] [--nbest 1 100] [--baseline DIR] [--record]
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "bible-es-en"
#: the kernels a decode calls that release Python's lock (tests/test_threads.py checks they do)
KERNELS = {"cube_kernel", "stack_kernel", "best_path", "k_best_paths", "lookup_spans", "future_table", "score_dense",
           "score_dense_paths", "score_batch"}
THREADS = (2, 4, 8, 16)


def measure(config: Path, sentences: int, n_best: int) -> dict:
    """CPU seconds of translating the sentences on one thread, and those inside ``KERNELS``."""
    from pbmt.commands.translate import _chunks
    from pbmt.features.translation import Translator
    from pbmt.model.model import TranslationModel

    translator = Translator(TranslationModel.load(config), n_best=n_best, tokenized=True)
    lines = (DATA / "dev.tok.es").read_text(encoding="utf-8").splitlines()[:sentences]

    def run():
        for i, line in enumerate(lines):
            _chunks([translator.translate(i, line)], n_best > 1, True)

    run()
    started = time.process_time()
    run()
    total = time.process_time() - started
    profile = cProfile.Profile(time.process_time)
    profile.enable()
    run()
    profile.disable()
    kernels = sum(row[2] for key, row in pstats.Stats(profile).stats.items() if key[2] in KERNELS)
    return {"n_best": n_best, "cpu": total, "kernels": kernels, "serial": 1 - kernels / total,
            "load": os.getloadavg()[0]}


def amdahl(serial: float, threads: int) -> float:
    """The speed-up of ``threads`` threads when a share ``serial`` of one thread's work is serial."""
    return 1 / (serial + (1 - serial) / threads)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-f", "--config", type=Path, default=DATA / "model" / "moses.ini")
    parser.add_argument("--sentences", type=int, default=200)
    parser.add_argument("--nbest", type=int, nargs="+", default=[1, 100])
    parser.add_argument("--baseline", type=Path, help="a checkout of another commit, measured first")
    parser.add_argument("--record", action="store_true", help="write docs/runs/threads-*.json")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps([measure(args.config, args.sentences, n) for n in args.nbest]))
        return 0
    results = {}
    if args.baseline:
        command = [sys.executable, __file__, "--child", "-f", str(args.config), "--sentences", str(args.sentences),
                   "--nbest", *map(str, args.nbest)]
        env = dict(os.environ, PYTHONPATH=str(args.baseline.resolve()))
        results["before"] = json.loads(subprocess.run(command, env=env, check=True, capture_output=True,
                                                      text=True).stdout)
    results["after"] = [measure(args.config, args.sentences, n) for n in args.nbest]
    for label, rows in results.items():
        for r in rows:
            print(f"{label:<6} n-best {r['n_best']:>3}: CPU {r['cpu']:.2f} s, in lock-free kernels {r['kernels']:.2f} s, "
                  f"serial share {r['serial']:.3f}; Amdahl " + ", ".join(f"{t} threads {amdahl(r['serial'], t):.2f}x"
                                                                        for t in THREADS)
                  + f" (load {r['load']:.1f})")
    if args.record:
        sys.path.insert(0, str(ROOT / "docs"))
        from generated import write_table

        loads = [r["load"] for rows in results.values() for r in rows]
        what = {1: "1-best", **{n: f"{n}-best" for n in args.nbest if n > 1}}
        write_table("threads-serial-share", ["decode", "checkout", "CPU s", "in kernels, CPU s", "serial share"],
                    sorted(([what[r["n_best"]], label, r["cpu"], r["kernels"], r["serial"]]
                            for label, rows in results.items() for r in rows), key=lambda row: int(row[0].split("-")[0])),
                    load=loads, formats={"CPU s": ".2f", "in kernels, CPU s": ".2f", "serial share": ".3f"},
                    note=f"The first {args.sentences} dev sentences on one thread; 'before' is the baseline "
                         "checkout, 'after' this one.")
        write_table("threads-amdahl", ["decode", "serial share", *(f"{t} threads" for t in THREADS)],
                    [[what[r["n_best"]], r["serial"], *(amdahl(r["serial"], t) for t in THREADS)]
                     for r in results["after"]],
                    load=loads, formats={"serial share": ".3f", **{f"{t} threads": ".2f" for t in THREADS}},
                    note="Amdahl's bound 1 / (s + (1 - s) / N) from the serial share above (this checkout).")
    return 0


if __name__ == "__main__":
    sys.exit(main())
