"""Claim: decoding on a local dask cluster of N workers gives the serial output, about N times faster.

Setting: the shared model (``model/moses.ini``, its own settings), 1-best, on
the first --sentences tokenised dev sentences, through ``pbmt.parallel``
exactly as ``pbmt translate`` uses it. Measured per worker count: the time to
start the cluster (none for 1 worker), the time for the first map (each
worker loads the model from its memory-mapped cache and compiles nothing:
numba's cache is warm after the serial run), sentences/s of a second map over
the same sentences (the steady state), and whether the output equals the
serial one. The speed-up is bounded by the machine's cores (``os.cpu_count()``
is printed) and by whatever else runs on them.

    PBMT_CACHE_DIR=/tmp/pbmtcache python benchmarks/bench_parallel.py [--sentences 200] [--workers 1 2] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import time
from functools import partial
from pathlib import Path

from pbmt.cli import build_parser
from pbmt.commands.translate import _for_workers, _make_translator, _translate
from pbmt.parallel import ParallelMap

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "bible-es-en"


def measure(workers: int, lines: list[str], args: argparse.Namespace, scheduler: str | None) -> dict:
    started = time.perf_counter()
    with ParallelMap(partial(_make_translator, _for_workers(args)), _translate, workers, scheduler) as pool:
        ready = time.perf_counter()
        first = [t.text for t in pool.map(enumerate(lines), chunksize=4)]
        mapped = time.perf_counter()
        second = [t.text for t in pool.map(enumerate(lines), chunksize=4)]
        steady = time.perf_counter() - mapped
    assert first == second
    return {"workers": workers, "start_s": ready - started, "first_map_s": mapped - ready,
            "sentences_per_s": len(lines) / steady, "output": first}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sentences", type=int, default=200)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--scheduler", help="measure an existing cluster too (its workers as they are)")
    parser.add_argument("--json", type=Path)
    options = parser.parse_args()
    lines = (DATA / "dev.tok.es").read_text().splitlines()[:options.sentences]
    args = build_parser().parse_args(["translate", "-q", "--tokenized", "-f", str(DATA / "model" / "moses.ini")])
    runs = [measure(w, lines, args, None) for w in options.workers]
    if options.scheduler:
        runs.append(measure(1, lines, args, options.scheduler) | {"workers": options.scheduler})
    serial = next((r for r in runs if r["workers"] == 1), runs[0])
    print(f"{len(lines)} dev sentences, {os.cpu_count()} cores (shared with other work: timings are noisy)")
    print(f"{'workers':>22} {'start s':>8} {'1st map s':>10} {'sent/s':>8} {'speed-up':>9} {'same output':>12}")
    for r in runs:
        print(f"{r['workers']!s:>22} {r['start_s']:8.1f} {r['first_map_s']:10.1f} {r['sentences_per_s']:8.2f} "
              f"{r['sentences_per_s'] / serial['sentences_per_s']:9.2f} {str(r['output'] == serial['output']):>12}")
    if options.json:
        options.json.write_text(json.dumps([{k: v for k, v in r.items() if k != "output"}
                                            | {"same_output": r["output"] == serial["output"]} for r in runs],
                                           indent=2))


if __name__ == "__main__":
    main()
