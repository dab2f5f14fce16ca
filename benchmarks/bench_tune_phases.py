"""Claim: on ``pbmt tune --threads 2`` the main thread does little of an iteration's work: each phase of an
iteration (decode, pool, the tuner's fit, the rest: merging, the run files, checkpoint and plot) in CPU
seconds of the whole process and of the main thread alone, for each tuner on one and on two threads, and the
two runs' tuned weights (the last fit's, not the best decode's: ``--keep last``) the same, byte for byte (their
digest printed, to compare with a baseline's); and the CPU seconds of re-pruning the table for each iteration's
weights, with the share of it at a decode's start, where the decode's other threads wait.

Setting: the shared model (``../shared/data/bible-es-en/model``, its own settings: cube pruning) and the first
``--sentences`` tokenised dev sentences with their references; for each tuner of ``--tuners`` and each thread
count of ``--threads``, ``pbmt tune``'s loop (``pbmt.tune.loop.tune``) for ``--iterations`` iterations with the
tuner ``pbmt tune`` makes for that dev set (``Tuner.for_search``: MERT on fewer than 500 sentences takes half
steps and no random restarts, on more 20 restarts) and ``--nbest``-best lists, on one ``DevDecoder`` per thread
count whose kernels are loaded and table pruned by a decode before the runs (each tuner's kernels by a fit on
that decode's pool). CPU seconds are ``time.process_time`` (every thread) and
``time.thread_time`` (the main thread), which hardly move with the machine's load; wall seconds are not
printed (at load 10 they say nothing of threads). The serial share is the main thread's CPU over the whole's
on the most threads, with Amdahl's bound for that many threads from it (the main thread's work taken as serial,
the rest as spread evenly); the load average is printed beside. With ``--baseline DIR`` (a checkout of the commit
to compare with), the same measurement of DIR's pbmt runs first, in a child process, its lines marked.

    python benchmarks/bench_tune_phases.py [--data DIR] [--sentences 200] [--nbest 100] [--iterations 3]
        [--tuners mert,pro,mira] [--threads 1,2] [--baseline DIR]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import threading
import time
from hashlib import sha256
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "bible-es-en"
PHASES = ("decode", "pool", "fit", "rest")


class Clock:
    """CPU seconds of the process and of the calling thread spent in each phase, summed over calls."""

    def __init__(self):
        self.spent = {name: [0.0, 0.0] for name in PHASES}

    def timed(self, name: str, work):
        def run(*args, **kwargs):
            process, thread = time.process_time(), time.thread_time()
            try:
                return work(*args, **kwargs)
            finally:
                self.spent[name][0] += time.process_time() - process
                self.spent[name][1] += time.thread_time() - thread
        return run


class _Pruning:
    """CPU seconds of ``TranslationModel.with_weights`` (the table pruned for new weights) by where it ran: on the
    thread ``DevDecoder.prepare`` starts (``ahead``: beside the loop's own work) or in a decode (``held``: the
    decode's other threads wait for it). ``with_weights``: the method it replaced, to put back."""

    def __init__(self, model_class):
        self.with_weights = model_class.with_weights
        self.spent = {"ahead": 0.0, "held": 0.0}

    def __call__(self, model, weights):
        started = time.thread_time()
        try:
            return self.with_weights(model, weights)
        finally:
            where = "ahead" if threading.current_thread().name == "pbmt-prune" else "held"
            self.spent[where] += time.thread_time() - started


def _timed_pruning(model_class) -> _Pruning:
    """Time ``model_class.with_weights`` from now on (``_Pruning``)."""
    pruning = _Pruning(model_class)
    model_class.with_weights = lambda model, weights: pruning(model, weights)
    return pruning


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DATA, help="the model and dev set's folder")
    parser.add_argument("--sentences", type=int, default=200)
    parser.add_argument("--nbest", type=int, default=100)
    parser.add_argument("--iterations", type=int, default=3)
    parser.add_argument("--tuners", default="mert,pro,mira", help="comma-separated --algorithm names of "
                        "the loop's tuners whose fit reads the pool alone")
    parser.add_argument("--threads", default="1,2", help="comma-separated thread counts")
    parser.add_argument("--baseline", type=Path, metavar="DIR", help="a checkout to measure first, the same way")
    args = parser.parse_args()
    from pbmt.base.errors import UsageError
    from pbmt.tune.registry import tuner_class

    for name in args.tuners.split(","):
        try:
            reads = tuner_class(name).reads
        except UsageError as err:
            parser.error(f"--tuners: {err}")
        if set(reads) != {"pool"}:
            hint = " (its optimisation: benchmarks/bench_line_search.py --climb)" if "lattices" in reads else ""
            parser.error(f"--tuners: {name}'s fit reads {', '.join(reads)}, not the pool alone{hint}")
    if args.baseline is not None:
        own = [a for a in sys.argv[1:] if a != "--baseline" and a != str(args.baseline)
               and not a.startswith("--baseline=")]
        child = subprocess.run([sys.executable, __file__, *own], cwd=args.baseline, text=True, capture_output=True,
                               env={**os.environ, "PYTHONPATH": str(args.baseline.resolve())})
        print("".join(f"baseline {args.baseline}: {line}\n" for line in child.stdout.splitlines()), end="")
        if child.returncode != 0:
            print(child.stderr, file=sys.stderr)
            return child.returncode

    from pbmt.model.model import TranslationModel
    from pbmt.tune import loop
    from pbmt.tune.pool import References
    from pbmt.tune.tuner import TuningData

    model = TranslationModel.load(args.data / "model" / "moses.ini")
    sources = (args.data / "dev.tok.es").read_text(encoding="utf-8").splitlines()[:args.sentences]
    references = References((args.data / "dev.tok.en").read_text(encoding="utf-8").splitlines()[:args.sentences])
    counts = [int(n) for n in args.threads.split(",")]
    weights = {}
    ok = True
    for threads in counts:
        with loop.DevDecoder(model, sources, args.nbest, threads=threads) as decoder:
            start = model.layout.weights(model.config)
            warm, _ = loop.decoded_pool(decoder(start), model.layout, references)  # loads the decode's kernels
            for name in args.tuners.split(","):
                cls = tuner_class(name)
                params = {"threads": threads} if "threads" in cls.parameters() else {}
                tuner = cls(**cls.for_search(params, model.settings.reordering, len(sources)))
                tuner.fit(TuningData(pool=warm), start, np.random.default_rng(0))  # loads the tuner's kernels
                clock = Clock()
                tuner.fit = clock.timed("fit", tuner.fit)
                pooled, loop.decoded_pool = loop.decoded_pool, clock.timed("pool", loop.decoded_pool)
                decode = clock.timed("decode", decoder)
                if hasattr(decoder, "prepare"):  # the next decode's table pruned while the loop writes its files
                    decode.prepare = decoder.prepare
                pruning = _timed_pruning(TranslationModel)
                process, thread = time.process_time(), time.thread_time()
                try:
                    with tempfile.TemporaryDirectory() as out:
                        result = loop.tune(decode, references, model.config, model.layout, tuner, out,
                                           loop.LoopSettings(n_best=args.nbest, max_iterations=args.iterations,
                                                             output="last"))
                finally:
                    loop.decoded_pool = pooled
                    TranslationModel.with_weights = pruning.with_weights
                whole = [time.process_time() - process, time.thread_time() - thread]
                clock.spent["rest"] = [w - sum(s[i] for s in clock.spent.values()) for i, w in enumerate(whole)]
                weights.setdefault(name, {})[threads] = result.weights.tobytes()
                phases = ", ".join(f"{p} {c:.2f} ({m:.2f})" for p, (c, m) in clock.spent.items())
                print(f"{name}, {threads} thread(s), {len(result.iterations)} iterations: CPU s (main thread's): "
                      f"{phases}; whole {whole[0]:.2f} ({whole[1]:.2f}); re-pruning {sum(pruning.spent.values()):.2f}, "
                      f"{pruning.spent['held']:.2f} of it at a decode's start; load {os.getloadavg()[0]:.1f}; tuned "
                      f"weights {sha256(weights[name][threads]).hexdigest()[:12]}")
                if threads == max(counts) and threads > 1:
                    serial = whole[1] / whole[0]
                    print(f"  main thread's share {serial:.3f}; {threads} threads at most "
                          f"{1 / (serial + (1 - serial) / threads):.2f}x one (Amdahl)")
    for name, found in weights.items():
        same = len(set(found.values())) == 1
        ok &= same
        print(f"{name}: tuned weights the same on {', '.join(map(str, found))} thread(s): {same}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
