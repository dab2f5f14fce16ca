"""Claim: pbmt reads a Moses n-best list into a tuning pool (dense and sparse features, BLEU statistics, dedup
keys) in less CPU than Moses's ``extractor`` needs to turn the same list into its feature and score files.

Setting: one n-best list and its references (default: the shared dev 100-best list of Moses,
``../shared/data/bible-es-en/model/dev.moses.nbest100.gz``, 103,100 entries, and ``dev.tok.en``), read by whole
processes in turn, ``--repeat`` times each, after one warm-up run of each (numba's kernels compiled and cached,
the files in memory; pbmt's bytecode written, as an install has it):

- pbmt: ``python -c`` importing pbmt and calling ``pbmt.tune.pool.read_pool`` (the numba kernels of
  ``pbmt.base.nbest.scan_nbest``), as ``pbmt optimize`` reads ``--n-best``;
- Moses: ``extractor -r REFS -n NBEST -S scores -F features`` (``../shared/tools/moses/bin``; skipped with a note
  where absent), as ``mert-moses.pl`` runs it. It also writes its two text files (for the shared list about
  11 MB) and keeps only one of the entries of a sentence with the same feature values and BLEU statistics; pbmt
  writes nothing (the pool stays in memory) and keeps one per derivation.

Also, once, pbmt's whole process with numba's cache empty (``NUMBA_CACHE_DIR`` a new folder: every kernel it
runs compiled first), and inside one process (no start-up): ``read_pool``'s CPU seconds (the second of two
calls) and the line-by-line reader it falls back on (``parse_line`` per line: what ``read_pool`` was before the
kernels). The median of each, CPU (user + system) and wall seconds; the machine's load average beside them.

With ``--record``, the table goes to ``docs/runs/nbest-read.json`` (``python docs/generated.py`` renders it in
docs/tuning-results.md).

    python benchmarks/bench_nbest_read.py [--nbest PATH --refs PATH] [--repeat 3] [--record]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from bench_decoder import compile_bytecode, run

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
DATA = SHARED / "data" / "bible-es-en"
EXTRACTOR = SHARED / "tools" / "moses" / "bin" / "extractor"
READ = ("import sys; from pbmt.tune.pool import References, read_pool; "
        "read_pool(sys.argv[1], References.read(sys.argv[2]))")
IN_PROCESS = """
import sys, time
from pbmt.tune.pool import References, _read_pool_lines, read_pool
nbest, refs = sys.argv[1], sys.argv[2]
read_pool(nbest, References.read(refs))
start = time.process_time()
pool = read_pool(nbest, References.read(refs))
kernels = time.process_time() - start
start = time.process_time()
_read_pool_lines(nbest, References.read(refs), None, "derivation")
print(kernels, time.process_time() - start, pool.n_candidates)
"""


def median(runs: list[dict]) -> dict:
    return {key: statistics.median(r[key] for r in runs) for key in ("wall", "cpu")}


def load() -> float:
    return os.getloadavg()[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nbest", type=Path, default=DATA / "model" / "dev.moses.nbest100.gz",
                        help="a Moses-format n-best list (plain or .gz)")
    parser.add_argument("--refs", type=Path, default=DATA / "dev.tok.en", help="its references, one line a sentence")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each whole process, the median reported")
    parser.add_argument("--record", action="store_true", help="write docs/runs/nbest-read.json")
    args = parser.parse_args()
    for path in (args.nbest, args.refs):
        if not path.is_file():
            parser.error(f"{path}: no such file (give --nbest and --refs, or put ../shared beside the repository)")
    nbest, refs = args.nbest.resolve(), args.refs.resolve()
    compile_bytecode()  # as an installed pbmt has it, whatever PYTHONDONTWRITEBYTECODE says
    loads = [load()]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        pbmt = [sys.executable, "-c", READ, str(nbest), str(refs)]
        extractor = [str(EXTRACTOR), "-r", str(refs), "-n", str(nbest), "-S", "scores.dat", "-F", "features.dat"]
        have_extractor = EXTRACTOR.exists()
        if not have_extractor:
            print(f"note: {EXTRACTOR} is absent: Moses's extractor is skipped")
        run(pbmt, None, Path(os.devnull))  # warm-up: numba's cache filled, the files in memory
        if have_extractor:
            run(extractor, None, Path(os.devnull), work)
        ours, theirs = [], []
        for _ in range(args.repeat):  # in turn, so that both see the same load
            ours.append(run(pbmt, None, Path(os.devnull)))
            if have_extractor:
                theirs.append(run(extractor, None, Path(os.devnull), work))
        rows.append(["pbmt: `read_pool`, whole process (`python -c`, import included)", *median(ours).values()])
        if have_extractor:
            rows.append(["Moses: `extractor -S scores -F features`, whole process", *median(theirs).values()])
        cold = run(pbmt, None, Path(os.devnull), env={"NUMBA_CACHE_DIR": str(work / "numba-cache")})
        rows.append(["pbmt: the same, numba's cache empty (its kernels compiled first; one run)", cold["wall"],
                     cold["cpu"]])
        kernels, lines, entries = map(float, subprocess.run(
            [sys.executable, "-c", IN_PROCESS, str(nbest), str(refs)], check=True, capture_output=True,
            text=True).stdout.split())
    rows += [["pbmt: `read_pool` in a process that has read it once (CPU only)", None, kernels],
             ["pbmt: the same list line by line through `parse_line` (CPU only)", None, lines]]
    loads.append(load())
    print(f"{nbest} ({int(entries):,} entries); load average {loads[0]:.2f} before, {loads[1]:.2f} after")
    for name, wall, cpu in rows:
        print(f"  {name:75s} wall {'' if wall is None else f'{wall:6.2f} s':8s}  cpu {cpu:6.2f} s")
    if have_extractor:
        print(f"  pbmt / extractor, whole processes, CPU: {rows[0][2] / rows[1][2]:.2f}")
    print(f"  kernels / line by line, in process, CPU: {kernels / lines:.3f}")
    if args.record:
        sys.path.insert(0, str(ROOT / "docs"))
        from generated import write_table

        write_table("nbest-read", ["", "wall s", "CPU s"], rows, load=loads,
                    formats={"wall s": ".2f", "CPU s": ".2f"},
                    note=f"Medians of {args.repeat} whole processes each, in turn; the list: {nbest.name} "
                         f"({int(entries):,} entries).")


if __name__ == "__main__":
    main()
