"""Claim: a short input never runs slower on more threads or workers than on one.

Whole ``pbmt translate`` processes (model loading and start-up included) on the first 1, 10 and 150 tokenised dev
sentences of the shared model, each of ``--threads 2`` and ``--workers 2`` beside ``--threads 1`` in turn (one
warm-up pair, then three pairs A B A B ...; medians, the ratio A/B taken pair by pair so that a drifting machine
slows both sides of a pair alike; CPU seconds from the kernel's accounting of each finished process and its
children). With ``--record``, the table goes to
``docs/runs/short-inputs.json`` (docs/scale-out.md, "Short inputs").

    python benchmarks/bench_short_inputs.py [--sizes 1 10 150] [--runs 3] [--record]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

from bench_decoder import run

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "bible-es-en"
PBMT = Path(sys.executable).with_name("pbmt")


def pair(inputs: Path, out: Path, others: str, runs: int) -> dict:
    """Medians of ``pbmt translate OTHERS`` (A) against ``--threads 1`` (B) on ``inputs``, run in turn after one
    warm-up pair: each side's wall and CPU seconds and the ratios A/B taken pair by pair."""
    base = [str(PBMT), "translate", "-f", str(DATA / "model" / "moses.ini"), "-i", str(inputs), "--no-resume", "-q"]
    a_command, b_command = base + others.split(), base + ["--threads", "1"]
    pairs = []
    for k in range(runs + 1):
        a, b = run(a_command, None, Path(f"{out}.a")), run(b_command, None, Path(f"{out}.b"))
        if k:
            pairs.append((a, b))
    result = {}
    for figure in ("wall", "cpu"):
        result[f"A {figure} s"] = statistics.median(a[figure] for a, _ in pairs)
        result[f"B {figure} s"] = statistics.median(b[figure] for _, b in pairs)
        result[f"A/B {figure}"] = statistics.median(a[figure] / b[figure] for a, b in pairs)
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1, 10, 150], help="sentences per input")
    parser.add_argument("--runs", type=int, default=3, help="pairs timed per cell")
    parser.add_argument("--record", action="store_true", help="write docs/runs/short-inputs.json")
    args = parser.parse_args()
    lines = (DATA / "dev.tok.es").read_text(encoding="utf-8").splitlines()
    rows, loads = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for n in args.sizes:
            inputs = Path(tmp) / f"in{n}.es"
            inputs.write_text("\n".join(lines[:n]) + "\n", encoding="utf-8")
            for others in ("--threads 2", "--workers 2"):
                loads.append(os.getloadavg()[0])
                m = pair(inputs, Path(tmp) / f"out{n}", others, args.runs)
                rows.append([n, f"`{others}`", m["B wall s"], m["A wall s"], m["A/B wall"], m["B cpu s"],
                             m["A cpu s"], m["A/B cpu"]])
                print(f"{n:>4} sentences {others}: wall {m['A/B wall']:.2f}x, CPU {m['A/B cpu']:.2f}x of one thread "
                      f"(load {loads[-1]:.1f})", flush=True)
    if args.record:
        sys.path.insert(0, str(ROOT / "docs"))
        from generated import write_table

        write_table("short-inputs", ["sentences", "against `--threads 1`", "one thread, wall s", "wall s",
                                     "wall ratio", "one thread, CPU s", "CPU s", "CPU ratio"], rows, load=loads,
                    formats={"one thread, wall s": ".1f", "wall s": ".1f", "wall ratio": ".2f",
                             "one thread, CPU s": ".2f", "CPU s": ".2f", "CPU ratio": ".2f"},
                    note="The first N tokenised dev sentences, the shared model, whole processes run in turn; "
                         "medians of the pairs; a ratio above 1 is slower than one thread.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
