"""Claim: decoding on a local dask cluster of N workers gives the serial output, about N times faster.

Setting: the shared model (``model/moses.ini``, its own settings), 1-best, on
the first --sentences tokenised dev sentences, through ``pbmt.base.parallel``
exactly as ``pbmt translate`` uses it. Measured per worker count:

- start: the time to start the cluster (none for 1 worker);
- load: each worker's model load time: the model arrives pickled as its
  path and loads from the memory-mapped cache (numba's cache is warm after
  the serial run, so nothing compiles); for 1 worker, this process's load;
- sent/s: a second map over the same sentences (the steady state), its
  speed-up over 1 worker, and whether the output equals the serial one;
- sent/s at --repeat x: the sentences repeated --repeat times (a larger run:
  throughput should stay flat as work grows);
- ms/shard: dask's round trip per shard, from a map of a no-op over
  --shards one-item shards.

The speed-up is bounded by the machine's cores (``os.cpu_count()`` is
printed) and by whatever else runs on them: measure on a quiet machine.

    PBMT_CACHE_DIR=/tmp/pbmtcache python benchmarks/bench_parallel.py [--sentences 200] [--workers 1 2]
        [--repeat 5] [--shards 2000] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import time
from pathlib import Path

from pbmt.commands.cli import build_parser
from pbmt.commands.translate import _make_translator, _translate
from pbmt.base.parallel import ParallelMap

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "bible-es-en"


class _Timed:
    """A translator that, arriving in a worker, records that process and the seconds it took to unpickle (load
    its model by path)."""

    def __init__(self, translator, load_s: float = 0.0):
        self.translator, self.pid, self.load_s = translator, os.getpid(), load_s

    def __reduce__(self):
        return _arrive, (pickle.dumps(self.translator),)


def _arrive(blob: bytes) -> _Timed:
    started = time.perf_counter()
    translator = pickle.loads(blob)
    return _Timed(translator, time.perf_counter() - started)


def _timed_translate(state: _Timed, item: tuple[int, str]) -> tuple:
    return _translate(state.translator, item).text, state.pid, state.load_s


def _echo(state: None, item: int) -> int:
    return item


def _rate(pool: ParallelMap, lines: list[str]) -> tuple[float, list[str]]:
    started = time.perf_counter()
    texts = [text for text, _, _ in pool.map(enumerate(lines), chunksize=4)]
    return len(lines) / (time.perf_counter() - started), texts


def measure(workers: int, lines: list[str], args: argparse.Namespace, scheduler: str | None,
            repeat: int, shards: int) -> dict:
    loaded = time.perf_counter()
    state = _Timed(_make_translator(args))
    state.load_s = time.perf_counter() - loaded  # here: what one worker alone does
    started = time.perf_counter()
    with ParallelMap(_timed_translate, state, workers, scheduler) as pool:
        ready = time.perf_counter()
        first = list(pool.map(enumerate(lines), chunksize=4))
        loads = {pid: load_s for _, pid, load_s in first}
        rate, texts = _rate(pool, lines)
        repeated_rate = _rate(pool, lines * repeat)[0] if repeat > 1 else None
    with ParallelMap(_echo, None, workers, scheduler) as pool:
        list(pool.map(range(4 * workers), chunksize=1))
        mapped = time.perf_counter()
        assert list(pool.map(range(shards), chunksize=1)) == list(range(shards))
        shard_ms = 1000 * (time.perf_counter() - mapped) / shards
    assert texts == [text for text, _, _ in first]
    return {"workers": workers, "start_s": ready - started, "load_s": sorted(loads.values()),
            "sentences_per_s": rate, "repeated_sentences_per_s": repeated_rate, "shard_ms": shard_ms,
            "output": texts}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sentences", type=int, default=200)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--repeat", type=int, default=5, help="the larger run: sentences repeated this often")
    parser.add_argument("--shards", type=int, default=2000, help="one-item no-op shards to time a round trip")
    parser.add_argument("--scheduler", help="measure an existing cluster too (its workers as they are)")
    parser.add_argument("--json", type=Path)
    options = parser.parse_args()
    lines = (DATA / "dev.tok.es").read_text().splitlines()[:options.sentences]
    args = build_parser().parse_args(["translate", "-q", "--tokenized", "-f", str(DATA / "model" / "moses.ini")])
    load_before = os.getloadavg()[0]
    runs = [measure(w, lines, args, None, options.repeat, options.shards) for w in options.workers]
    if options.scheduler:
        runs.append(measure(1, lines, args, options.scheduler, options.repeat, options.shards)
                    | {"workers": options.scheduler})
    serial = next((r for r in runs if r["workers"] == 1), runs[0])
    print(f"{len(lines)} dev sentences, {os.cpu_count()} cores, load average before: "
          f"{load_before:.2f} (shared with other work: timings are noisy)")
    print(f"{'workers':>22} {'start s':>8} {'load s':>12} {'sent/s':>8} {'speed-up':>9} {'same output':>12} "
          f"{f'sent/s {options.repeat}x':>12} {'ms/shard':>9}")
    for r in runs:
        loads = "/".join(f"{s:.1f}" for s in r["load_s"])
        repeated = f"{r['repeated_sentences_per_s']:.2f}" if r["repeated_sentences_per_s"] else "-"
        print(f"{r['workers']!s:>22} {r['start_s']:8.1f} {loads:>12} {r['sentences_per_s']:8.2f} "
              f"{r['sentences_per_s'] / serial['sentences_per_s']:9.2f} {str(r['output'] == serial['output']):>12} "
              f"{repeated:>12} {r['shard_ms']:9.2f}")
    if options.json:
        options.json.write_text(json.dumps([{k: v for k, v in r.items() if k != "output"}
                                            | {"same_output": r["output"] == serial["output"]} for r in runs],
                                           indent=2))


if __name__ == "__main__":
    main()
