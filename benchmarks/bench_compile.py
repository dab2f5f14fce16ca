"""Claim: a fresh install's first ``pbmt translate -i data/sample.es`` (README.md's command) takes under 20 s,
the numba compilation of an empty cache and the model's binary cache included.

Setting: README.md's command run as a whole process three times, one after the other: cold (an empty
``NUMBA_CACHE_DIR`` and an empty ``PBMT_CACHE_DIR``, so every kernel compiles and the embedded model's text
files are parsed), compiled (the numba cache of the cold run, the model cache still empty) and warm (both
caches filled). Inside the cold run numba's compile events are recorded: each kernel specialisation's own
compile CPU seconds (its callees' compilation, which happens inside it, subtracted), which a busy machine
changes less than wall seconds.

Reported: wall and CPU seconds of each run, the kernels compiled, and the top kernels by compile seconds.
The machine may be shared: CPU seconds are the fairer figure when the load (printed) is above the cores.

    python benchmarks/bench_compile.py [--top 10] [--json FILE] [-- PBMT ARGS ...]

PBMT ARGS (default ``translate -i data/sample.es``) measure another verb's first run.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

from bench_decoder import run

ROOT = Path(__file__).resolve().parents[1]
README_COMMAND = ["translate", "-i", "data/sample.es"]


def record_compiles(pbmt_args: list[str], report: Path) -> int:
    """Run ``pbmt PBMT_ARGS`` in this process, writing every compiled kernel's own seconds to ``report``."""
    from numba.core import event

    compiled, stacks = [], threading.local()

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
            compiled.append({"kernel": f"{dispatcher.py_func.__module__}.{dispatcher.py_func.__qualname__}",
                             "signature": ", ".join(str(a) for a in ev.data["args"]), "seconds": seconds - inner})

    event.register("numba:compile", Compiles())
    from pbmt.commands.cli import main

    try:
        code = main(pbmt_args)
    finally:
        report.write_text(json.dumps(compiled))
    return code


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--top", type=int, default=10, help="kernels listed")
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("pbmt_args", nargs="*", help="the pbmt command measured (default: README.md's)")
    args = parser.parse_args()
    pbmt_args = args.pbmt_args or README_COMMAND
    if args.child:
        sys.exit(record_compiles(pbmt_args, args.child))

    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        env = {"NUMBA_CACHE_DIR": str(work / "numba"), "PBMT_CACHE_DIR": str(work / "models")}
        report = work / "compiles.json"
        results = {"command": ["pbmt", *pbmt_args], "load_before": load()}
        def timed(command):
            return run(command, None, Path(os.devnull), ROOT, env)

        results["cold"] = timed([sys.executable, __file__, "--child", str(report), "--", *pbmt_args])
        compiled = json.loads(report.read_text())
        (work / "models").rename(work / "models-cold")
        results["compiled"] = timed([sys.executable, "-m", "pbmt", *pbmt_args])
        results["warm"] = timed([sys.executable, "-m", "pbmt", *pbmt_args])
        results["load_after"] = load()
    compiled.sort(key=lambda c: -c["seconds"])
    results["kernels"] = compiled
    print(f"{' '.join(results['command'])}  (load average before {results['load_before']}, "
          f"after {results['load_after']})")
    for name, title in (("cold", "cold: empty numba and model caches"), ("compiled", "numba cache, no model cache"),
                        ("warm", "both caches")):
        print(f"  {title:38s} wall {results[name]['wall']:6.1f} s  cpu {results[name]['cpu']:6.1f} s")
    print(f"  {len(compiled)} kernel specialisations compiled, {sum(c['seconds'] for c in compiled):.1f} s in all")
    print(f"\n| kernel | argument types | compile s |\n|---|---|---|")
    for c in compiled[:args.top]:
        print(f"| `{c['kernel']}` | `{c['signature'][:80]}` | {c['seconds']:.2f} |")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
