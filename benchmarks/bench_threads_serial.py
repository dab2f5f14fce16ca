"""Claim: the share of a decode that holds Python's lock (the serial fraction of Amdahl's law) is small enough
for two threads to reach 1.8x one thread; and what it allows at 4, 8 and 16 threads.

Setting: the shared model (``../shared/data/bible-es-en/model``, its own settings: cube pruning) and the first
``--sentences`` tokenised dev sentences, translated in this process on one thread, as ``pbmt translate``
does each sentence (the Translator, then the output lines), for each n-best size of ``--nbest`` (1: the
1-best alone, as translate without ``--n-best``; N: also N-best lines): once to warm up, then timed (CPU
seconds) with every call from Python of a kernel that releases the lock (a numba dispatcher compiled with
``nogil=True``, found in pbmt's modules, so a new kernel counts without a list to keep) timed too, in the
calling thread's CPU seconds. The serial share
is 1 minus the kernels' CPU over the whole run's: both come from the same run, so the machine's drift
between runs does not enter it (the split taken from a second, profiled run moved by 0.1 and more between
runs of the same code at load 8). CPU seconds of one thread hardly change with the machine's load, so this
can be measured on a busy machine; the speed-ups themselves need a quiet one (``bench_decoder.py
--threads 1,2``).

The per-sentence share leaves out what one run does once before its first sentence, on one thread whatever
``--threads`` says: start Python, import pbmt, map the model, prune its table. That start-up ``S`` is measured
as whole ``pbmt translate`` processes of an empty input (the median CPU seconds of ``--startups`` runs, the
checkouts in turn, pbmt's modules compiled to bytecode first, as an installed package has them). For a whole
run of all 1,031 dev sentences (D: the measured CPU seconds a sentence times 1,031) on N threads there are two
bounds: Amdahl's ``(S + D) / (S + D (s + (1 - s) / N))`` takes the share s as serial against everything,
while Python's lock only makes it serial against the other threads' Python, not against their kernels, so the
speed-up can reach ``(S + D) / (S + max(D / N, s D))`` (the lock as one more core's worth of work, busy s D
seconds). A run measures between the two; on two threads the start-up, not s, keeps it below 2x.

With ``--baseline DIR`` (a checkout of another commit) the same runs in a child process importing pbmt from
DIR, for a before/after in one run. ``--record`` writes the records ``threads-serial-share`` and
``threads-amdahl`` of docs/scale-out.md (``docs/generated.py``).

    python benchmarks/bench_threads_serial.py [--sentences 200] [--nbest 1 100] [--baseline DIR] [--record]
"""

from __future__ import annotations

import argparse
import compileall
import contextlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "bible-es-en"
THREADS = (2, 4, 8, 16)
DEV_SENTENCES = 1031  # the whole dev set, whose run the start-up is compared with


def measure(config: Path, sentences: int, n_best: int) -> dict:
    """CPU seconds of translating the sentences on one thread, and those inside kernels that release the lock
    (in all and by kernel)."""
    from pbmt.commands.translate import _chunks
    from pbmt.features.translation import Translator
    from pbmt.model.model import TranslationModel

    translator = Translator(TranslationModel.load(config), n_best=n_best if n_best > 1 else 0, tokenized=True)
    lines = (DATA / "dev.tok.es").read_text(encoding="utf-8").splitlines()[:sentences]

    def run():
        for i, line in enumerate(lines):
            _chunks([translator.translate(i, line)], n_best > 1, True)

    run()  # every specialisation the sentences need is compiled or loaded before the kernels are wrapped
    with lock_free_kernels_timed() as spent:
        started = time.process_time()
        run()
        total = time.process_time() - started
    kernels = sum(spent.values())
    return {"n_best": n_best, "cpu": total, "kernels": kernels, "serial": 1 - kernels / total,
            "sentences": len(lines), "load": os.getloadavg()[0],
            "by_kernel": dict(sorted(spent.items(), key=lambda item: -item[1]))}


@contextlib.contextmanager
def lock_free_kernels_timed():
    """For the block, every module-level name of pbmt's loaded modules bound to a kernel compiled with
    ``nogil=True`` calls it through a wrapper adding the calling thread's CPU seconds to the dict yielded
    (kernel name -> seconds). Kernels calling such a kernel keep the code they were compiled with."""
    from numba.core.dispatcher import Dispatcher

    spent: dict[str, float] = {}
    wrappers: dict[int, object] = {}

    def timed(kernel):
        name = kernel.py_func.__name__

        def call(*args):
            started = time.thread_time()
            try:
                return kernel(*args)
            finally:
                spent[name] = spent.get(name, 0.0) + time.thread_time() - started
        return call

    replaced = []
    for module in [m for name, m in list(sys.modules.items()) if name == "pbmt" or name.startswith("pbmt.")]:
        for name, value in list(vars(module).items()):
            if isinstance(value, Dispatcher) and value.targetoptions.get("nogil"):
                setattr(module, name, wrappers.setdefault(id(value), timed(value)))
                replaced.append((module, name, value))
    try:
        yield spent
    finally:
        for module, name, value in replaced:
            setattr(module, name, value)


def startups(config: Path, checkouts: dict[str, Path], runs: int) -> dict[str, float]:
    """The median CPU seconds of whole ``pbmt translate`` processes (importing pbmt from each checkout, in turn)
    that translate an empty input: everything a run does before its first sentence, and its exit. Each runs in
    its checkout's folder: ``python -m`` puts the working folder on the path before PYTHONPATH, and a run from
    another checkout's folder would import that checkout's pbmt."""
    command = [sys.executable, "-m", "pbmt", "translate", "-q", "--tokenized", "-f", str(config.resolve()), "-i",
               os.devnull, "-o", os.devnull]
    seconds: dict[str, list[float]] = {label: [] for label in checkouts}
    for label, checkout in checkouts.items():
        compileall.compile_dir(checkout / "pbmt", quiet=1)
    for _ in range(runs + 1):  # the first fills the file system's cache
        for label, checkout in checkouts.items():
            process = subprocess.Popen(command, env=dict(os.environ, PYTHONPATH=str(checkout.resolve())),
                                       cwd=checkout, stdout=subprocess.DEVNULL)
            _, status, usage = os.wait4(process.pid, 0)
            if os.waitstatus_to_exitcode(status) != 0:
                raise SystemExit(f"{' '.join(command)} failed (pbmt from {checkout})")
            seconds[label].append(usage.ru_utime + usage.ru_stime)
    return {label: sorted(found[1:])[runs // 2] for label, found in seconds.items()}


def amdahl(serial: float, threads: int, start: float = 0.0, decode: float = 1.0) -> float:
    """The speed-up of ``threads`` threads when a share ``serial`` of one thread's ``decode`` seconds is
    serial against everything, and so are the ``start`` seconds before it."""
    return (start + decode) / (start + decode * (serial + (1 - serial) / threads))


def lock_bound(serial: float, threads: int, start: float = 0.0, decode: float = 1.0) -> float:
    """The speed-up of ``threads`` threads when a share ``serial`` of the ``decode`` seconds holds Python's lock
    (serial against the other threads' share only) and the ``start`` seconds before it are serial."""
    return (start + decode) / (start + max(decode / threads, serial * decode))


def whole_run(bound, r: dict, threads: int) -> float:
    """``bound`` for a whole run of the dev set from one measurement's start-up and CPU a sentence."""
    return bound(r["serial"], threads, r["startup"], r["cpu"] / r["sentences"] * DEV_SENTENCES)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-f", "--config", type=Path, default=DATA / "model" / "moses.ini")
    parser.add_argument("--sentences", type=int, default=200)
    parser.add_argument("--nbest", type=int, nargs="+", default=[1, 100])
    parser.add_argument("--startups", type=int, default=5, help="whole start-up runs a checkout (the median)")
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
    start = startups(args.config, {"before": args.baseline, "after": ROOT} if args.baseline else {"after": ROOT},
                     args.startups)
    for label, rows in results.items():
        print(f"{label:<6} start-up (an empty input, whole process): {start[label]:.2f} CPU s")
        for r in rows:
            r["startup"] = start[label]
            print(f"{label:<6} n-best {r['n_best']:>3}: CPU {r['cpu']:.2f} s, in lock-free kernels {r['kernels']:.2f} s, "
                  f"serial share {r['serial']:.3f}; a whole dev run between Amdahl's " +
                  ", ".join(f"{t}: {whole_run(amdahl, r, t):.2f}x" for t in THREADS) + " and the lock's " +
                  ", ".join(f"{t}: {whole_run(lock_bound, r, t):.2f}x" for t in THREADS)
                  + f" (load {r['load']:.1f})")
            print(f"{'':<6} in kernels: " + ", ".join(f"{k} {v:.2f}" for k, v in r["by_kernel"].items()))
    if args.record:
        sys.path.insert(0, str(ROOT / "docs"))
        from generated import write_table

        loads = [r["load"] for rows in results.values() for r in rows]
        what = {1: "1-best", **{n: f"{n}-best" for n in args.nbest if n > 1}}
        write_table("threads-serial-share", ["decode", "checkout", "start-up, CPU s", "CPU s", "in kernels, CPU s",
                                             "serial share"],
                    sorted(([what[r["n_best"]], label, r["startup"], r["cpu"], r["kernels"], r["serial"]]
                            for label, rows in results.items() for r in rows), key=lambda row: int(row[0].split("-")[0])),
                    load=loads, formats={"start-up, CPU s": ".2f", "CPU s": ".2f", "in kernels, CPU s": ".2f",
                                         "serial share": ".3f"},
                    note=f"The first {args.sentences} dev sentences on one thread; 'before' is the baseline "
                         "checkout, 'after' this one.")
        write_table("threads-amdahl", ["decode", "bound", "serial share", "start-up, CPU s",
                                       *(f"{t} threads" for t in THREADS)],
                    [[what[r["n_best"]], name, r["serial"], r["startup"], *(whole_run(bound, r, t) for t in THREADS)]
                     for r in results["after"] for name, bound in (("Amdahl's", amdahl), ("the lock's", lock_bound))],
                    load=loads, formats={"serial share": ".3f", "start-up, CPU s": ".2f",
                                         **{f"{t} threads": ".2f" for t in THREADS}},
                    note=f"A whole run of all {DEV_SENTENCES:,} dev sentences from the serial share s and start-up S "
                         "above (this checkout), D the CPU seconds a sentence measured times "
                         f"{DEV_SENTENCES:,}: Amdahl's (S + D) / (S + D (s + (1 - s) / N)), the lock's "
                         "(S + D) / (S + max(D / N, s D)).")
    return 0


if __name__ == "__main__":
    sys.exit(main())
