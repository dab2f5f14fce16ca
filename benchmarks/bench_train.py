"""Claims: training grows linearly with the corpus and its memory does not.
``pbmt train``'s steps on 28k (the Bible), 250k and 1M sentence pairs
(synthetic beyond the Bible, ``benchmarks/synthetic_corpus.py``): a million
pairs trains on a 24 GB machine with peak memory under 6 GB, the time from
250k to 1M pairs is within 1.3x of linear, and extraction and scoring on 2
local workers are at least 1.7x as fast as serial.

Each step runs in its own process (``--step``), timed by the wall clock and
by the CPU seconds it used (serial steps: the time it would take alone on a
core, whatever else the machine runs), its peak memory its peak resident set (``VmHWM``, or that of its
largest child process, eflomal's aligner, if larger): the
pipeline's functions as ``pbmt train`` calls them, on the corpus with its
word alignment given (28k: the shared grow-diag-final-and file; synthetic:
the generator's):

- corpus: reading the texts and the alignment, writing the prepared corpus;
- tables: phrase extraction in shards, merge, scoring, both tables and the
  word translation tables written (``--shard-size``, serial);
- lm: the 3-gram Kneser-Ney LM of the target side (``--memory``, 1G);
- classes: 50 target word classes (exchange algorithm);
- align (``--align``): eflomal in both directions with grow-diag-final-and.

The speed-up (``--only-speedup`` runs just this part, a few minutes):
extraction and scoring (``pbmt.train.shards.build_tables``) of the Bible
corpus in shards of ``--speedup-shard-size``, serial and on 2 local workers
in turn (A, B, A, B: ``--speedup-rounds`` of each, so that a change of the
machine's load weighs on both), in one process; the outputs are compared
byte for byte. Each run also reports the CPU seconds it used (the workers'
included): the load average counts runnable threads of every session, but
Linux's autogroup scheduling shares the cores out by session, so a busy
machine gives one benchmark session about the same CPU whether it runs one
process or three; CPU seconds against wall seconds show the share it got.
Timings are wall clock; on a shared machine give the load average with them
(printed).

    python benchmarks/bench_train.py --pairs 28k,250k,1M [--corpora DIR] [--align] [--json FILE]
    python benchmarks/bench_train.py --only-speedup [--json FILE] [--record training-speedup-quiet]

``--record NAME`` writes the speed-up's runs as the record ``docs/runs/NAME.json``
(docs/training-at-scale.md's).
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

sys.path.insert(0, str(Path(__file__).resolve().parent))

from synthetic_corpus import DATA, generate, parse_count  # noqa: E402

from pbmt.base.files import atomic_write  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "docs"))
from generated import write_table  # noqa: E402  (docs/generated.py: the docs' records of measured tables)

STEPS = ("corpus", "tables", "lm", "classes")
BIBLE_PAIRS = 28_169


def _peak_rss_mb() -> float:
    """This process's peak resident set (VmHWM), MB. Not ``getrusage``'s
    ``ru_maxrss``, which a child started by a big parent inherits across exec."""
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def _cpu_seconds() -> float:
    """CPU seconds used by this process and its finished child processes (the
    cluster's workers count once the cluster has closed)."""
    times = os.times()
    return times.user + times.system + times.children_user + times.children_system


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def corpus_files(pairs: int, corpora: Path, seed: int) -> tuple[Path, Path, Path]:
    """(source, target, alignment) of a corpus of ``pairs`` pairs: the Bible
    at its size, else synthetic (made once into ``corpora``)."""
    if pairs == BIBLE_PAIRS:
        return DATA / "train.tok.es", DATA / "train.tok.en", DATA / "train.align.gdfa"
    folder = corpora / f"synthetic-{pairs}-seed{seed}"
    files = folder / "corpus.es", folder / "corpus.en", folder / "corpus.gdfa"
    if not all(f.exists() for f in files):
        print(f"generating {pairs:,} synthetic pairs into {folder}", flush=True)
        generate(pairs, folder, seed)
    return files


def run_step(step: str, src: Path, tgt: Path, gdfa: Path, work: Path, shard_size: int, memory: int) -> str:
    """Run one step in this process (``--step``); returns its summary."""
    from pbmt.base.text import tokens
    from pbmt.train.pipeline import Scale, align_corpus, prepare_corpus, train_lm, train_tables
    from pbmt.train.word_classes import induce_classes

    c_src, c_tgt, c_gdfa = work / "corpus.src", work / "corpus.tgt", work / "alignment.gdfa"
    if step == "corpus":
        return f"{prepare_corpus(src, tgt, c_src, c_tgt, tokens, tokens, {gdfa: c_gdfa}).n_pairs:,} pairs"
    if step == "tables":
        counts = train_tables(c_src, c_tgt, c_gdfa, work / "phrase-table.gz", work / "reordering-table.gz",
                              work / "lex.e2f.gz", work / "lex.f2e.gz", scale=Scale(shard_size),
                              scratch=work / "shards")
        return f"{counts.extracted} phrase pairs"
    if step == "lm":
        return "n-grams " + " ".join(map(str, train_lm(c_tgt, work / "lm.arpa.gz", 3, memory=memory)))
    if step == "classes":
        induced = induce_classes(c_tgt, 50)
        return f"{len(induced.classes.words)} words in 50 classes"
    if step == "align":
        return f"{align_corpus(c_src, c_tgt, work / 'fwd', work / 'rev', work / 'gdfa', True)} points"
    raise ValueError(step)


def measure_step(step: str, files: tuple[Path, Path, Path], work: Path, shard_size: int, memory: str) -> dict:
    """Run ``--step`` in a child process; its time, peak memory and summary."""
    command = [sys.executable, __file__, "--step", step, "--files", *map(str, files), "--work", str(work),
               "--shard-size", str(shard_size), "--memory", memory]
    load = _load()
    cpu = _cpu_seconds()
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"step {step} failed:\n{done.stderr}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    return {"step": step, "seconds": seconds, "cpu_seconds": _cpu_seconds() - cpu, "peak_rss_mb": result["peak_rss_mb"],
            "summary": result["summary"], "load_before": load}


def speedup(shard_size: int, work: Path, rounds: int) -> dict:
    """Extraction and scoring of the Bible serial and on 2 local workers,
    interleaved (serial, 2 workers, serial, 2 workers, ...: ``rounds`` of
    each) so that the machine's load weighs on both alike."""
    from pbmt.train.corpus import Alignment, Corpus, read_alignment, read_corpus
    from pbmt.train.shards import build_tables

    src, tgt = read_corpus(DATA / "train.tok.es"), read_corpus(DATA / "train.tok.en")
    alignment = read_alignment(DATA / "train.align.gdfa", src, tgt)
    # warm-up on 50 pairs: numba kernels loaded from their cache before timing
    n = 50
    build_tables(Corpus(src.ids[: src.offsets[n]], src.offsets[: n + 1], src.vocab),
                 Corpus(tgt.ids[: tgt.offsets[n]], tgt.offsets[: n + 1], tgt.vocab),
                 Alignment(alignment.src[: alignment.offsets[n]], alignment.tgt[: alignment.offsets[n]],
                           alignment.offsets[: n + 1]),
                 work / "warm-pt.gz", work / "warm-rt.gz", work / "warm")
    runs = []
    for index, workers in enumerate([1, 2] * rounds):
        load = _load()
        cpu = _cpu_seconds()
        start = time.perf_counter()
        counts, _ = build_tables(src, tgt, alignment, work / f"pt{index}.gz", work / f"rt{index}.gz",
                                 work / f"scratch{index}", shard_sentences=shard_size, workers=workers)
        runs.append({"workers": workers, "seconds": time.perf_counter() - start, "cpu_seconds": _cpu_seconds() - cpu,
                     "load_before": load, "load_after": _load(), "shards": counts.shards,
                     "partitions": counts.partitions})
        print(f"{workers} worker(s): {runs[-1]['seconds']:7.1f} s, {runs[-1]['cpu_seconds']:6.1f} s of CPU "
              f"({counts.shards} shards, {counts.partitions} partitions; load average {load} before, "
              f"{runs[-1]['load_after']} after)", flush=True)
    same = all((work / f"{t}{i}.gz").read_bytes() == (work / f"{t}0.gz").read_bytes()
               for t in ("pt", "rt") for i in range(1, len(runs)))
    serial = sum(r["seconds"] for r in runs if r["workers"] == 1)
    two = sum(r["seconds"] for r in runs if r["workers"] == 2)
    print(f"speed-up with 2 workers: {serial / two:.2f}x (goal >= 1.7x; {serial:.1f} s serial, {two:.1f} s on 2 "
          f"workers in all, interleaved); outputs identical: {same}")
    return {"runs": runs, "speedup": serial / two, "identical": same, "shard_size": shard_size}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", default="28k,250k,1M", help="corpus sizes (28k: the Bible itself)")
    parser.add_argument("--corpora", type=Path, default=Path(tempfile.gettempdir()) / "pbmt-bench-corpora",
                        help="folder for the synthetic corpora (made once, kept)")
    parser.add_argument("--seed", type=int, default=1, help="seed of the synthetic corpora")
    parser.add_argument("--shard-size", type=int, default=20_000, help="sentence pairs per extraction shard")
    parser.add_argument("--memory", default="1G", help="the LM step's -S/--memory")
    parser.add_argument("--steps", default=",".join(STEPS), help="steps to measure, of " + ",".join(STEPS + ("align",)))
    parser.add_argument("--align", action="store_true", help="also measure eflomal alignment")
    parser.add_argument("--no-speedup", action="store_true", help="skip the 2-worker speed-up part")
    parser.add_argument("--only-speedup", action="store_true", help="only the 2-worker speed-up part")
    parser.add_argument("--speedup-shard-size", type=int, default=4000, help="shard size of the speed-up part")
    parser.add_argument("--speedup-rounds", type=int, default=2,
                        help="serial and 2-worker runs of the speed-up part, interleaved (A, B, A, B, ...)")
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument("--record", metavar="NAME", help="write the speed-up's runs as the doc record "
                        "docs/runs/NAME.json")
    # one step in a child process
    parser.add_argument("--step", help=argparse.SUPPRESS)
    parser.add_argument("--files", nargs=3, type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--work", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.record and args.no_speedup:
        parser.error("--record writes the speed-up's runs: not with --no-speedup")

    if args.step:
        from pbmt.train.lm_estimate import parse_memory

        summary = run_step(args.step, *args.files, args.work, args.shard_size, parse_memory(args.memory))
        # eflomal aligns in a child process of its own
        children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        print(json.dumps({"peak_rss_mb": max(_peak_rss_mb(), children), "summary": summary}))
        return

    result: dict = {"load_average_start": _load()}
    print(f"load average at the start: {result['load_average_start']}")
    with tempfile.TemporaryDirectory() as tmp:
        if not args.only_speedup:
            steps = args.steps.split(",") + (["align"] if args.align else [])
            sizes = []
            print(f"{'pairs':>9} {'step':<8} {'time':>9} {'CPU':>9} {'peak RSS':>10}  summary")
            for text in args.pairs.split(","):
                pairs = parse_count(text)
                pairs = BIBLE_PAIRS if text.lower() == "28k" else pairs
                files = corpus_files(pairs, args.corpora, args.seed)
                work = Path(tmp) / f"work-{pairs}"
                work.mkdir()
                rows = []
                for step in steps:
                    row = measure_step(step, files, work, args.shard_size, args.memory)
                    rows.append(row)
                    print(f"{pairs:>9,} {step:<8} {row['seconds']:8.1f}s {row['cpu_seconds']:8.1f}s "
                          f"{row['peak_rss_mb']:8.0f}MB  "
                          f"{row['summary']} (load {row['load_before']})", flush=True)
                table = work / "phrase-table.gz"
                size = {"pairs": pairs, "steps": rows, "seconds": sum(r["seconds"] for r in rows),
                        "peak_rss_mb": max(r["peak_rss_mb"] for r in rows),
                        "phrase_table_bytes": table.stat().st_size if table.exists() else None}
                print(f"{pairs:>9,} {'all':<8} {size['seconds']:8.1f}s {size['peak_rss_mb']:8.0f}MB  "
                      f"phrase-table.gz {size['phrase_table_bytes'] or 0:,} bytes", flush=True)
                sizes.append(size)
                for path in sorted(work.iterdir()):
                    if path.is_file():
                        path.unlink()
            for small, large in zip(sizes[:-1], sizes[1:]):
                scale = large["pairs"] / small["pairs"]
                for index, step in enumerate(steps):
                    a, b = small["steps"][index], large["steps"][index]
                    print(f"{small['pairs']:,} -> {large['pairs']:,} pairs, {step}: wall time grew "
                          f"{b['seconds'] / a['seconds'] / scale:.2f}x of linear, CPU time "
                          f"{b['cpu_seconds'] / a['cpu_seconds'] / scale:.2f}x")
                growth = (large["seconds"] / small["seconds"]) / scale
                print(f"{small['pairs']:,} -> {large['pairs']:,} pairs: time grew {growth:.2f}x of linear")
            result["sizes"] = sizes
        if not args.no_speedup:
            work = Path(tmp) / "speedup"
            work.mkdir()
            result["speedup"] = speedup(args.speedup_shard_size, work, args.speedup_rounds)
            if args.record:
                runs = result["speedup"]["runs"]
                loads = [float(r[key].split()[0]) for r in runs for key in ("load_before", "load_after")]
                table = [[k, r["workers"], f"{r['seconds']:.1f} s", f"{r['cpu_seconds']:.1f} s"]
                         for k, r in enumerate(runs, 1)]
                path = write_table(args.record, ["run", "workers", "time", "CPU"], table, load=loads, align="rrrr")
                print(f"wrote {path}")
    if args.json:
        with atomic_write(args.json) as handle:
            json.dump(result, handle, indent=2)
            handle.write("\n")


if __name__ == "__main__":
    main()
