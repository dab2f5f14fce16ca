"""Claim: a short input never runs slower on more threads or workers than on one.

Whole ``pbmt translate`` processes (model loading and start-up included) on the first 1, 10 and 150 tokenised dev
sentences of the shared model, each of ``--threads 2`` and ``--workers 2`` beside ``--threads 1`` in turn by
``farm-bench`` (three pairs, medians; the ratio A/B taken pair by pair). With ``--record``, the table goes to
``docs/runs/short-inputs.json`` (docs/scale-out.md, "Short inputs").

    python benchmarks/bench_short_inputs.py [--sizes 1 10 150] [--runs 3] [--record]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "bible-es-en"
PBMT = Path(sys.executable).with_name("pbmt")


def pair(inputs: Path, out: Path, others: str, runs: int) -> dict:
    """farm-bench's medians of ``pbmt translate OTHERS`` (A) against ``--threads 1`` (B) on ``inputs``."""
    base = f"{PBMT} translate -f {DATA / 'model' / 'moses.ini'} -i {inputs} --no-resume -q"
    report = subprocess.run(["farm-bench", "-n", str(runs), "--warmup", "1", "--timeout", "1800",
                             "--vs", f"{base} -o {out}.b --threads 1", "--", *f"{base} -o {out}.a {others}".split()],
                            capture_output=True, text=True, check=True).stdout
    def median(name: str) -> float:
        return float(re.search(rf"^{re.escape(name)}\s+\S+\s+(\S+)", report, re.M).group(1))
    return {k: median(k) for k in ("A wall s", "B wall s", "A/B wall", "A cpu s", "B cpu s", "A/B cpu")}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1, 10, 150], help="sentences per input")
    parser.add_argument("--runs", type=int, default=3, help="pairs timed per cell")
    parser.add_argument("--record", action="store_true", help="write docs/runs/short-inputs.json")
    args = parser.parse_args()
    if shutil.which("farm-bench") is None:
        raise SystemExit("farm-bench is not on PATH")
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
                    note="The first N tokenised dev sentences, the shared model, whole processes; farm-bench's "
                         "medians of the pairs; a ratio above 1 is slower than one thread.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
