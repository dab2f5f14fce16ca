"""Claim: pbmt's stack decoder is at least as fast as single-threaded Moses, with no more search errors.

Setting: the shared Moses model (``model/moses.ini``: 3-gram LM, msd-bidirectional-fe
reordering) at stack 200, beam threshold 1e-5, table limit 20, distortion
limit 6, one process, 1-best, on the dev set (1,031 sentences, 29,443 words).
Moses's figures on the same machine type (``model/README.md``): ≈ 52 source
words/s, 1.55 sentences/s on the first 300 sentences; peak RSS 336 MB.

Measured, each in a fresh process: numba compile time with an empty cache
(cold) and with a warm one (cached) — the time to load the model and decode
one short sentence; words/s and sentences/s over --sentences sentences; peak
RSS; and search errors: the fraction of the first --search-sentences
sentences where a much wider beam (stack 2000, no threshold) finds a
derivation with a better model score than the default beam. Moses's own search
errors are measured the same way with its 1-best: the fraction of sentences
where pbmt's wide beam beats Moses's 1-best score (rescored by pbmt).

    python benchmarks/bench_decoder.py [--sentences 1031] [--search-sentences 100] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "bible-es-en"


def child(mode: str, data: Path, sentences: int, search_sentences: int) -> dict:
    started = time.perf_counter()
    import dataclasses

    from pbmt.model.model import SearchSettings, TranslationModel
    from pbmt.search.decoder import decode
    from pbmt.search.derivation import score_derivation
    from pbmt.search.options import TranslationOptions

    model = TranslationModel.load(data / "model" / "moses.ini")
    lines = (data / "dev.tok.es").read_text(encoding="utf-8").splitlines()

    def translate(m, line):
        options = TranslationOptions.build(m, m.vocab.ids(line.split()))
        return options, decode(m, options)[0]

    if mode == "compile":
        translate(model, "y dios dijo")
        return {"seconds": time.perf_counter() - started}
    if mode == "speed":
        translate(model, "y dios dijo")
        start = time.perf_counter()
        words = 0
        for line in lines[:sentences]:
            translate(model, line)
            words += len(line.split())
        seconds = time.perf_counter() - start
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        return {"sentences": sentences, "words": words, "seconds": seconds, "peak_mb": peak}
    if mode == "search":
        from pbmt.search.output import derivation_from_entry
        from pbmt.tune.nbest import read_nbest

        moses_best = {}
        for entry in read_nbest(data / "model" / "dev.moses.nbest100.gz"):
            if entry.sentence >= search_sentences:
                break
            moses_best.setdefault(entry.sentence, entry)
        wide = dataclasses.replace(model, settings=dataclasses.replace(
            model.settings, stack_size=2000, beam_threshold=0.0))
        ours_worse = moses_worse = 0
        for k, line in enumerate(lines[:search_sentences]):
            options, normal = translate(model, line)
            best = decode(wide, options)[0]
            moses = score_derivation(derivation_from_entry(moses_best[k], options, model), options, model) @ model.weights
            ours_worse += int(best.score > normal.score + 1e-6)
            moses_worse += int(best.score > moses + 1e-6)
        return {"sentences": search_sentences, "pbmt_errors": ours_worse, "moses_errors": moses_worse}
    raise ValueError(mode)


def run_child(mode: str, args, env=None) -> dict:
    out = subprocess.run(
        [sys.executable, __file__, "--child", mode, "--data", str(args.data), "--sentences", str(args.sentences),
         "--search-sentences", str(args.search_sentences)],
        check=True, capture_output=True, text=True, env={**os.environ, **(env or {})})
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--sentences", type=int, default=1031, help="dev sentences timed")
    parser.add_argument("--search-sentences", type=int, default=100, help="dev sentences checked for search errors")
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.data, args.sentences, args.search_sentences)))
        return

    with tempfile.TemporaryDirectory() as numba_cache:
        cold = run_child("compile", args, {"NUMBA_CACHE_DIR": numba_cache})
        cached = run_child("compile", args, {"NUMBA_CACHE_DIR": numba_cache})
    speed = run_child("speed", args)
    search = run_child("search", args)
    rows = [
        ("load + first sentence, empty numba cache (s)", f"{cold['seconds']:.1f}", "—"),
        ("load + first sentence, warm numba cache (s)", f"{cached['seconds']:.1f}", "—"),
        (f"sentences/s ({speed['sentences']} dev sentences)", f"{speed['sentences'] / speed['seconds']:.2f}", "1.55"),
        ("source words/s", f"{speed['words'] / speed['seconds']:.1f}", "52"),
        ("peak RSS (MB)", f"{speed['peak_mb']:.0f}", "336"),
        (f"search errors vs stack 2000 ({search['sentences']} sentences)",
         f"{search['pbmt_errors']}", f"{search['moses_errors']}"),
    ]
    width = max(len(r[0]) for r in rows)
    print(f"{'measure':<{width}}  {'pbmt':>8}  {'Moses':>8}")
    for name, ours, moses in rows:
        print(f"{name:<{width}}  {ours:>8}  {moses:>8}")
    if args.json:
        args.json.write_text(json.dumps({"cold_compile": cold, "cached_compile": cached, "speed": speed,
                                         "search": search}, indent=2))


if __name__ == "__main__":
    main()
