"""Claim: a fresh install's first ``pbmt translate -i data/sample.es`` (README.md's command) takes under 20 s,
the numba compilation of an empty cache and the model's binary cache included.

Setting: README.md's command run as a whole process three times, one after the other: cold (an empty
``NUMBA_CACHE_DIR`` and an empty ``PBMT_CACHE_DIR``, so every kernel compiles and the embedded model's text
files are parsed), compiled (the numba cache of the cold run, the model cache still empty) and warm (both
caches filled). Inside the cold run numba's compile events are recorded: each kernel specialisation's own
compile CPU seconds (its callees' compilation, which happens inside it, subtracted), which a busy machine
changes less than wall seconds. A cold ``translate`` compiles its search kernels in a forked child while it
loads the model (``pbmt/commands/precompile.py``): its compile events are recorded too, marked as the child's,
and its CPU seconds are in the run's (the run reaps it). ``--serial`` also measures this checkout with the
child turned off (``PBMT_PRECOMPILE=0``), right after it: one process, as before the child.

Reported: wall and CPU seconds of each run, the kernels compiled, and the top kernels by compile seconds.
The machine may be shared: CPU seconds are the fairer figure when the load (printed) is above the cores.
``--baseline DIR`` measures another checkout of pbmt (e.g. ``git worktree add --detach DIR main``) the same
way, right before this one, so that both see the same machine. ``--record`` writes the doc tables
``compile-first-run`` (both checkouts with ``--baseline``) and ``compile-kernels`` (this checkout's top
kernels) as records in docs/runs/ (``python docs/generated.py`` then puts them in docs/decoding.md).

    python benchmarks/bench_compile.py [--top 10] [--baseline DIR] [--serial] [--record] [--json FILE]
        [--warmed-by 'PBMT ARGS'] [-- PBMT ARGS ...]

PBMT ARGS (default ``translate -i data/sample.es``) measure another verb's first run; ``--warmed-by`` runs a
command first (untimed) whose caches the cold run starts from: the first ``--n-best`` run after a 1-best one.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from bench_decoder import run

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "docs"))
from generated import write_table  # noqa: E402  (docs/generated.py: the docs' records of measured tables)

README_COMMAND = ["translate", "-i", "data/sample.es"]
RUNS = (("cold", "cold: empty numba and model caches"), ("compiled", "numba cache, no model cache"),
        ("warm", "both caches"))


def record_compiles(pbmt_args: list[str], report: Path) -> int:
    """Run ``pbmt PBMT_ARGS`` in this process, appending every compiled kernel's own seconds to ``report`` (a
    JSON object a line, with the process that compiled it: ``run``, or ``child`` when a first ``translate``
    compiles its search kernels in a forked child, ``pbmt.commands.precompile``, which inherits this listener)."""
    from numba.core import event

    stacks, run = threading.local(), os.getpid()

    class Compiles(event.Listener):
        def on_start(self, ev):
            if not hasattr(stacks, "open"):
                stacks.open = []
            stacks.open.append([time.process_time(), 0.0])

        def on_end(self, ev):
            started, inner = stacks.open.pop()
            seconds = time.process_time() - started
            if stacks.open:
                stacks.open[-1][1] += seconds
            dispatcher = ev.data["dispatcher"]
            line = json.dumps({"kernel": f"{dispatcher.py_func.__module__}.{dispatcher.py_func.__qualname__}",
                               "signature": ", ".join(str(a) for a in ev.data["args"]), "seconds": seconds - inner,
                               "process": "run" if os.getpid() == run else "child"})
            with open(report, "a", encoding="utf-8") as out:  # one short write: the two processes' lines stay whole
                out.write(line + "\n")

    event.register("numba:compile", Compiles())
    from pbmt.commands.cli import main

    return main(pbmt_args)


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def first_runs(checkout: Path, pbmt_args: list[str], more_env: dict | None = None,
               warmed_by: list[str] | None = None) -> dict:
    """The three runs of ``pbmt PBMT_ARGS`` from ``checkout`` (its own ``pbmt`` package, its folder as the
    working directory) with empty caches in a temporary folder (and the environment variables ``more_env``),
    and the cold run's compiled kernels (most seconds first). ``warmed_by``: a pbmt command run first, untimed,
    whose caches the "cold" run starts from (a half-warm cache: the next verb a user runs)."""
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        env = {"NUMBA_CACHE_DIR": str(work / "numba"), "PBMT_CACHE_DIR": str(work / "models"),
               "PYTHONPATH": os.pathsep.join([str(checkout), os.environ.get("PYTHONPATH", "")]), **(more_env or {})}
        report = work / "compiles.json"
        results = {"command": ["pbmt", *pbmt_args], "checkout": str(checkout), "commit": commit_of(checkout),
                   "load_before": os.getloadavg()[0]}

        def timed(command):
            return run(command, None, Path(os.devnull), checkout, env)

        if warmed_by:
            results["warmed_by"] = ["pbmt", *warmed_by]
            timed([sys.executable, "-m", "pbmt", *warmed_by])

        results["cold"] = timed([sys.executable, __file__, "--child", str(report), "--", *pbmt_args])
        compiled = [json.loads(line) for line in report.read_text().splitlines()] if report.exists() else []
        (work / "models").rename(work / "models-cold")
        results["compiled"] = timed([sys.executable, "-m", "pbmt", *pbmt_args])
        results["warm"] = timed([sys.executable, "-m", "pbmt", *pbmt_args])
        results["load_after"] = os.getloadavg()[0]
    results["kernels"] = sorted(compiled, key=lambda c: -c["seconds"])
    return results


def _by_process(compiled: list[dict]) -> str:
    """How many specialisations (and their CPU s) the run and its compiling child each compiled, and how many
    both did (work done twice), or nothing without a child."""
    child = [c for c in compiled if c["process"] == "child"]
    if not child:
        return ""
    run = [c for c in compiled if c["process"] == "run"]
    twice = {(c["kernel"], c["signature"]) for c in run} & {(c["kernel"], c["signature"]) for c in child}
    return (f": the run {len(run)} ({sum(c['seconds'] for c in run):.1f} s), its child {len(child)} "
            f"({sum(c['seconds'] for c in child):.1f} s), both {len(twice)}")


def commit_of(checkout: Path) -> str:
    done = subprocess.run(["git", "-C", str(checkout), "rev-parse", "--short", "HEAD"], capture_output=True,
                          text=True)
    return done.stdout.strip() or "?"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--top", type=int, default=10, help="kernels listed")
    parser.add_argument("--baseline", type=Path, metavar="DIR", help="also measure the pbmt checkout in DIR, "
                        "first")
    parser.add_argument("--serial", action="store_true", help="also measure this checkout with "
                        "PBMT_PRECOMPILE=0 (no compiling child), after it")
    parser.add_argument("--record", action="store_true", help="write the doc table records compile-first-run "
                        "and compile-kernels (docs/runs/)")
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument("--warmed-by", metavar="ARGS", type=str.split, help="a pbmt command (one string) run "
                        "first, untimed, in each checkout: the cold run starts from its caches (e.g. "
                        "'translate -i data/sample.es' before the PBMT ARGS' --n-best run)")
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("pbmt_args", nargs="*", help="the pbmt command measured (default: README.md's)")
    args = parser.parse_args()
    pbmt_args = args.pbmt_args or README_COMMAND
    if args.record and args.warmed_by:
        parser.error("--record writes the cold first run's tables: not with --warmed-by")
    if args.child:
        sys.exit(record_compiles(pbmt_args, args.child))

    checkouts = (([("before", args.baseline.resolve(), {})] if args.baseline else []) + [("after", ROOT, {})]
                 + ([("after, one process", ROOT, {"PBMT_PRECOMPILE": "0"})] if args.serial else []))
    measured = [(label, first_runs(checkout, pbmt_args, env, args.warmed_by)) for label, checkout, env in checkouts]
    for label, results in measured:
        compiled = results["kernels"]
        print(f"{' '.join(results['command'])}  {label}: {results['checkout']} at {results['commit']}  (load "
              f"average before {results['load_before']:.2f}, after {results['load_after']:.2f})"
              + (f"; caches of {' '.join(results['warmed_by'])} first" if args.warmed_by else ""))
        for name, title in RUNS:
            print(f"  {title:38s} wall {results[name]['wall']:6.1f} s  cpu {results[name]['cpu']:6.1f} s")
        print(f"  {len(compiled)} kernel specialisations compiled, {sum(c['seconds'] for c in compiled):.1f} s "
              "in all" + _by_process(compiled))
    compiled = dict(measured)["after"]["kernels"]
    print(f"\n| kernel | argument types | compile s |\n|---|---|---|")
    for c in compiled[:args.top]:
        print(f"| `{c['kernel']}` | `{c['signature'][:80]}` | {c['seconds']:.2f} |")
    if args.json:
        args.json.write_text(json.dumps(dict(measured), indent=1))
    if args.record:
        record(measured, args.top)


def record(measured: list[tuple[str, dict]], top: int) -> None:
    """The doc tables compile-first-run (a row per measurement) and compile-kernels (this checkout's top
    kernels), as records in docs/runs/."""
    loads = [x for _, results in measured for x in (results["load_before"], results["load_after"])]
    rows = []
    for label, results in measured:
        cells = [f"{results[name]['wall']:.1f} / {results[name]['cpu']:.1f}" for name, _ in RUNS]
        seconds = sum(c["seconds"] for c in results["kernels"])
        loads_seen = sorted((results["load_before"], results["load_after"]))
        rows.append([f"{label} ({results['commit']})" if len(measured) > 1 else results["commit"],
                     "–".join(dict.fromkeys(f"{x:.1f}" for x in loads_seen)), *cells,
                     f"{len(results['kernels'])}, {seconds:.1f}"])
    columns = ["measured (commit)", "load average", "cold: wall / CPU s", "numba cache only: wall / CPU s",
               "both caches: wall / CPU s", "compiled: specialisations, CPU s"]
    print(f"wrote {write_table('compile-first-run', columns, rows, load=loads)}")
    own, counts = {}, {}
    for c in dict(measured)["after"]["kernels"]:
        own[c["kernel"]] = own.get(c["kernel"], 0.0) + c["seconds"]
        counts[c["kernel"]] = counts.get(c["kernel"], 0) + 1
    ranked = sorted(own, key=lambda k: -own[k])[:top]
    path = write_table("compile-kernels", ["kernel", "specialisations", "compile CPU s"],
                       [[f"`{k}`", counts[k], own[k]] for k in ranked], load=loads,
                       formats={"compile CPU s": ".2f"},
                       note="The cold run of this checkout (its compiling child's kernels included); a kernel's "
                       "specialisations summed.")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
