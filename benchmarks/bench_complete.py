"""Claim: prefix completion through ``pbmt serve``'s ``POST /complete`` answers a 30-word sentence within
100 ms at the 95th percentile with one worker, and predicts the reference's next word.

Setting: the shared Moses model (untuned, its own settings: cube pruning, stack 200, pop limit 1000,
distortion limit 6) served by ``pbmt serve --workers 1`` on 127.0.0.1 (started and waited for; the load is
not timed), the first ``--sentences`` dev sentences of 25 to 35 words (``dev.tok.es``, ``--tokenized``), and
for each the prefixes of its reference (``dev.tok.en``) of 0, 20, 40, 60 and 80% of its words, each ending
at a word boundary. One client sends one request at a time (latency: request sent to answer read).

Next-word accuracy: the completion's word right after the prefix equals the reference's (Wuebker et al.
2016's measure; their setting differs: a tuned system on their own data with fallbacks for prefixes the
phrase table cannot produce, where a prefix no derivation of the model produces counts here as a miss).

    python benchmarks/bench_complete.py [--sentences 40] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import httpx
import numpy as np

from bench_decoder import DATA
from bench_serve import _serve

SHARES = (0.0, 0.2, 0.4, 0.6, 0.8)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sentences", type=int, default=40)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    sources = (DATA / "dev.tok.es").read_text(encoding="utf-8").splitlines()
    references = (DATA / "dev.tok.en").read_text(encoding="utf-8").splitlines()
    chosen = [k for k, line in enumerate(sources) if 25 <= len(line.split()) <= 35][:args.sentences]
    process, url = _serve(DATA / "model" / "moses.ini", 1)
    load = os.getloadavg()
    rows = []
    try:
        with httpx.Client(timeout=600) as client:
            client.post(url + "/complete", json={"sentence": sources[chosen[0]], "prefix": "the", "tokenized": True})
            for k in chosen:
                ref = references[k].split()
                for share in SHARES:
                    cut = int(share * len(ref))
                    prefix = " ".join(ref[:cut]) + (" " if cut else "")
                    started = time.perf_counter()
                    answer = client.post(url + "/complete", json={"sentence": sources[k], "prefix": prefix,
                                                                 "tokenized": True, "n_best": 1}).json()
                    seconds = time.perf_counter() - started
                    words = answer["text"].split()
                    rows.append({"sentence": k, "share": share, "seconds": seconds,
                                 "completed": bool(answer["completions"]),
                                 "next_word": len(words) > cut and cut < len(ref) and words[cut] == ref[cut]})
    finally:
        process.terminate()
        process.wait()
    print(f"{len(chosen)} dev sentences of 25-35 words, {len(rows)} requests, one worker; load average before: "
          f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    print("| prefix share | completed | next-word accuracy | p50 ms | p95 ms |")
    print("|---|---|---|---|---|")
    for share in SHARES + (None,):
        part = [r for r in rows if share is None or r["share"] == share]
        ms = 1000 * np.array([r["seconds"] for r in part])
        name = "all" if share is None else f"{100 * share:.0f}%"
        print(f"| {name} | {sum(r['completed'] for r in part)} of {len(part)} | "
              f"{100 * np.mean([r['next_word'] for r in part]):.1f}% | {np.percentile(ms, 50):.0f} | "
              f"{np.percentile(ms, 95):.0f} |")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
