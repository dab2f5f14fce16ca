"""Claim: prefix completion through ``pbmt serve``'s ``POST /complete`` answers a 30-word sentence within
100 ms at the 95th percentile with one worker, and predicts the reference's next word.

Setting: the shared Moses model (untuned, its own settings: cube pruning, stack 200, pop limit 1000,
distortion limit 6) served by ``pbmt serve --workers 1`` on 127.0.0.1 (started and waited for; the load is
not timed), the first ``--sentences`` dev sentences of 25 to 35 words (``dev.tok.es``, ``--tokenized``), and
for each the prefixes of its reference (``dev.tok.en``) of 0, 20, 40, 60 and 80% of its words, each ending
at a word boundary, sent in that order (as a translator's typing would). One client sends one request at a
time (latency: request sent to answer read).

``--in-process`` calls ``Translator.complete`` in this process instead (what the server's worker runs, with
no HTTP or process hop) and also reports the CPU seconds of each call (``time.thread_time``), a figure the
load of a shared machine does not inflate; ``--search stack`` completes with stack decoding past the prefix
instead of the model's cube pruning, for a side-by-side comparison.

Next-word accuracy: the completion's word right after the prefix equals the reference's (Wuebker et al.
2016's measure; their setting differs: a tuned system on their own data with fallbacks for prefixes the
phrase table cannot produce, where a prefix no derivation of the model produces counts here as a miss).

    python benchmarks/bench_complete.py [--sentences 40] [--in-process [--search stack]] [--json FILE]
        [--record complete-latency-quiet]

``--record NAME`` writes the table as the record ``docs/runs/NAME.json`` (docs/constrained-decoding.md's).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import time
from pathlib import Path

import httpx
import numpy as np

from bench_decoder import DATA
from bench_serve import _serve
from generated import write_table  # docs/generated.py, on the path bench_decoder sets

SHARES = (0.0, 0.2, 0.4, 0.6, 0.8)


def prefixes(references: list[str], chosen: list[int]) -> list[tuple[int, float, str]]:
    """(sentence, share, prefix) of every request, in the order they are sent."""
    out = []
    for k in chosen:
        ref = references[k].split()
        for share in SHARES:
            cut = int(share * len(ref))
            out.append((k, share, " ".join(ref[:cut]) + (" " if cut else "")))
    return out


def through_server(sources: list[str], asked: list[tuple[int, float, str]]) -> list[dict]:
    process, url = _serve(DATA / "model" / "moses.ini", 1)
    rows = []
    try:
        with httpx.Client(timeout=600) as client:
            client.post(url + "/complete", json={"sentence": sources[asked[0][0]], "prefix": "the",
                                                 "tokenized": True})
            for k, share, prefix in asked:
                started = time.perf_counter()
                answer = client.post(url + "/complete", json={"sentence": sources[k], "prefix": prefix,
                                                             "tokenized": True, "n_best": 1}).json()
                rows.append({"sentence": k, "share": share, "seconds": time.perf_counter() - started,
                             "text": answer["text"], "completed": bool(answer["completions"])})
    finally:
        process.terminate()
        process.wait()
    return rows


def in_process(sources: list[str], asked: list[tuple[int, float, str]], search: str | None) -> list[dict]:
    from pbmt.model.model import TranslationModel
    from pbmt.features.translation import Translator

    model = TranslationModel.load(DATA / "model" / "moses.ini")
    if search:
        model = dataclasses.replace(model, settings=dataclasses.replace(model.settings, search=search))
    translator = Translator(model, n_best=1, tokenized=True, nbest_output=True)
    translator.complete(0, sources[asked[0][0]], "the")
    rows = []
    for k, share, prefix in asked:
        started, cpu = time.perf_counter(), time.thread_time()
        found = translator.complete(0, sources[k], prefix)
        rows.append({"sentence": k, "share": share, "seconds": time.perf_counter() - started,
                     "cpu": time.thread_time() - cpu, "text": found.text, "completed": bool(found.nbest)})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sentences", type=int, default=40)
    parser.add_argument("--in-process", action="store_true", help="call Translator.complete, not the server")
    parser.add_argument("--search", choices=("cube", "stack"), help="with --in-process: the search past the "
                        "prefix (default: the model's)")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--record", metavar="NAME", help="write the table as the doc record docs/runs/NAME.json")
    args = parser.parse_args()
    sources = (DATA / "dev.tok.es").read_text(encoding="utf-8").splitlines()
    references = (DATA / "dev.tok.en").read_text(encoding="utf-8").splitlines()
    chosen = [k for k, line in enumerate(sources) if 25 <= len(line.split()) <= 35][:args.sentences]
    asked = prefixes(references, chosen)
    load = os.getloadavg()
    rows = in_process(sources, asked, args.search) if args.in_process else through_server(sources, asked)
    after = os.getloadavg()
    for row, (k, share, prefix) in zip(rows, asked):
        ref, words, cut = references[k].split(), row.pop("text").split(), len(prefix.split())
        row["next_word"] = len(words) > cut and cut < len(ref) and words[cut] == ref[cut]
    where = "in process" if args.in_process else "one worker"
    print(f"{len(chosen)} dev sentences of 25-35 words, {len(rows)} requests, {where}"
          f"{', ' + args.search + ' past the prefix' if args.search else ''}; load average before: "
          f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f}, after: {after[0]:.2f} {after[1]:.2f} {after[2]:.2f}")
    cpu = args.in_process
    wall = "wall" if cpu else "server"
    columns = ["prefix share", "completed", "next-word accuracy", f"{wall} p50 ms", f"{wall} p95 ms"]
    columns += ["CPU p50 ms", "CPU p95 ms"] if cpu else []
    table = []
    for share in SHARES + (None,):
        part = [r for r in rows if share is None or r["share"] == share]
        ms = 1000 * np.array([r["seconds"] for r in part])
        name = "all" if share is None else f"{100 * share:.0f}%" + (" (`translate`)" if share == 0 else "")
        table.append([name, f"{sum(r['completed'] for r in part)} of {len(part)}",
                      f"{100 * np.mean([r['next_word'] for r in part]):.1f}%", f"{np.percentile(ms, 50):.0f}",
                      f"{np.percentile(ms, 95):.0f}"])
        if cpu:
            cms = 1000 * np.array([r["cpu"] for r in part])
            table[-1] += [f"{np.percentile(cms, 50):.0f}", f"{np.percentile(cms, 95):.0f}"]
    print("| " + " | ".join(columns) + " |")
    print("|" + "---|" * len(columns))
    for cells in table:
        print("| " + " | ".join(cells) + " |")
    if args.record:
        print(f"wrote {write_table(args.record, columns, table, load=[load[0], after[0]])}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
