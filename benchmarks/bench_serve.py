"""Claim: pbmt serve answers single-sentence requests at the speed of pbmt translate on the same sentences,
and a second thread (or worker process) raises its throughput.

Setting: the model (default: the embedded one, data/model/moses.ini, its own
settings) and the first --sentences lines of --input (default
data/sample.es, plain text), on 127.0.0.1 only. Per count N of --threads (or,
with --by workers, of worker processes, one thread each):

- pbmt serve --threads N (--workers N) on a free port, started and waited for (its model
  load is not timed); --clients threads (default 2 per worker) each send one
  sentence per POST /translate, over keep-alive connections, until every
  sentence was sent once or --seconds ran out; reported: requests/s and the
  latency percentiles p50, p95 (milliseconds, request sent to answer read);
- pbmt translate --threads N (--workers N) -i the same sentences: sentences/s as it reports
  them (decoding only, after its model load), and its wall time;
- whether the served translations equal pbmt translate's.

Timings are noisy on a shared machine: the load average before each run is
printed.

    python benchmarks/bench_serve.py [--sentences 50] [--counts 1 2] [--by threads|workers] [--clients C]
        [--seconds 120] [--json FILE] [--record serve-speed]

``--record NAME`` writes the table as the record ``docs/runs/NAME.json`` (docs/serve.md's).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx
import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "docs"))
from generated import write_table  # noqa: E402  (docs/generated.py: the docs' records of measured tables)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _parallel(by: str, n: int) -> list[str]:
    """The options that decode on ``n`` threads of one process, or on ``n`` processes of one thread each."""
    return ["--threads", str(n), "--workers", "1"] if by == "threads" else ["--threads", "1", "--workers", str(n)]


def _serve(config: Path, parallel: list[str]) -> tuple[subprocess.Popen, str]:
    port = _free_port()
    process = subprocess.Popen([sys.executable, "-m", "pbmt", "serve", "-q", "-f", str(config), "--host",
                                "127.0.0.1", "--port", str(port), *parallel, "--max-queue", "10000"],
                               stderr=subprocess.PIPE, text=True)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"pbmt serve exited: {process.stderr.read()}")
        try:
            if httpx.get(url + "/health", timeout=5).status_code == 200:
                return process, url
        except httpx.TransportError:
            time.sleep(0.5)
    process.kill()
    raise SystemExit("pbmt serve did not start within 600 s")


def measure_serve(config: Path, parallel: list[str], lines: list[str], clients: int, seconds: float) -> dict:
    process, url = _serve(config, parallel)
    try:
        with httpx.Client(timeout=600) as warm:  # every worker decodes once before the clock starts
            for _ in range(2 * max(int(parallel[1]), int(parallel[3]))):
                warm.post(url + "/translate", json={"sentences": [lines[0]]}).raise_for_status()
        texts: dict[int, str] = {}
        latencies: list[float] = []
        next_index = iter(range(len(lines)))
        lock = threading.Lock()
        deadline = time.monotonic() + seconds

        def client() -> None:
            with httpx.Client(timeout=600) as http:
                while time.monotonic() < deadline:
                    with lock:
                        i = next(next_index, None)
                    if i is None:
                        return
                    sent = time.perf_counter()
                    answer = http.post(url + "/translate", json={"sentences": [lines[i]]})
                    answer.raise_for_status()
                    with lock:
                        latencies.append(time.perf_counter() - sent)
                        texts[i] = answer.json()["translations"][0]["text"]

        started = time.perf_counter()
        threads = [threading.Thread(target=client) for _ in range(clients)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        elapsed = time.perf_counter() - started
    finally:
        process.terminate()
        process.wait(timeout=120)
    ms = 1000 * np.array(latencies)
    return {"requests": len(latencies), "requests_per_s": len(latencies) / elapsed,
            "p50_ms": float(np.percentile(ms, 50)), "p95_ms": float(np.percentile(ms, 95)), "texts": texts}


def measure_translate(config: Path, parallel: list[str], lines: list[str]) -> dict:
    with tempfile.TemporaryDirectory() as folder:
        source = Path(folder) / "in.txt"
        source.write_text("\n".join(lines) + "\n")
        started = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "pbmt", "translate", "-f", str(config), "-i", str(source),
                               *parallel], capture_output=True, text=True, check=True)
        wall = time.perf_counter() - started
    rate = re.search(r"([0-9.]+) sentences/s", done.stderr)
    return {"sentences_per_s": float(rate.group(1)) if rate else float("nan"), "wall_s": wall,
            "texts": done.stdout.splitlines()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-f", "--config", type=Path, default=REPO / "data" / "model" / "moses.ini")
    parser.add_argument("-i", "--input", type=Path, default=REPO / "data" / "sample.es")
    parser.add_argument("--sentences", type=int, default=50)
    parser.add_argument("--counts", type=int, nargs="+", default=[1, 2], help="threads (or workers) of each row")
    parser.add_argument("--by", choices=("threads", "workers"), default="threads",
                        help="decode on threads of one process, or on worker processes of one thread each")
    parser.add_argument("--clients", type=int, help="concurrent clients (default: 2 per thread or worker)")
    parser.add_argument("--seconds", type=float, default=120, help="time limit of each serve measurement")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--record", metavar="NAME", help="write the table as the doc record docs/runs/NAME.json")
    options = parser.parse_args()
    lines = [line for line in options.input.read_text().splitlines() if line.strip()][:options.sentences]
    rows = []
    for count in options.counts:
        load = os.getloadavg()[0]
        parallel = _parallel(options.by, count)
        served = measure_serve(options.config, parallel, lines, options.clients or 2 * count, options.seconds)
        translated = measure_translate(options.config, parallel, lines)
        same = all(translated["texts"][i] == text for i, text in served["texts"].items())
        rows.append({options.by: count, "load_average": load, "clients": options.clients or 2 * count,
                     **{k: v for k, v in served.items() if k != "texts"},
                     "translate_sentences_per_s": translated["sentences_per_s"],
                     "translate_wall_s": translated["wall_s"], "same_output": same})
    print(f"{len(lines)} sentences of {options.input.name}, model {options.config}, {os.cpu_count()} cores; "
          "127.0.0.1; timings under whatever load the machine has (load average before each row)")
    print(f"{options.by:>7} {'load':>5} {'clients':>7} {'requests':>8} {'req/s':>7} {'p50 ms':>8} {'p95 ms':>8} "
          f"{'translate sent/s':>16} {'translate wall s':>16} {'serve/translate':>15} {'same output':>11}")
    for r in rows:
        print(f"{r[options.by]:>7} {r['load_average']:5.2f} {r['clients']:>7} {r['requests']:>8} "
              f"{r['requests_per_s']:7.2f} {r['p50_ms']:8.0f} {r['p95_ms']:8.0f} "
              f"{r['translate_sentences_per_s']:16.2f} {r['translate_wall_s']:16.1f} "
              f"{r['requests_per_s'] / r['translate_sentences_per_s']:15.2f} {str(r['same_output']):>11}")
    if options.json:
        options.json.write_text(json.dumps(rows, indent=2))
    if options.record:
        columns = [options.by, "clients", "req/s", "p50 ms", "p95 ms", "`pbmt translate` sent/s", "same output"]
        table = [[r[options.by], r["clients"], r["requests_per_s"], r["p50_ms"], r["p95_ms"],
                  r["translate_sentences_per_s"], "yes" if r["same_output"] else "no"] for r in rows]
        formats = {"req/s": ".2f", "p50 ms": ".0f", "p95 ms": ".0f", "`pbmt translate` sent/s": ".2f"}
        path = write_table(options.record, columns, table, load=[r["load_average"] for r in rows], formats=formats)
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
