"""Claim: pbmt builds the binary cache of a phrase table at least as fast as Moses2 loads the same table as text,
and the cache costs no more bytes per phrase pair than it needs.

Setting: one Moses phrase table (default: the shared model's, ``../shared/data/bible-es-en/model``; ``--table``
for another, e.g. a freshly trained model's), loaded by whole processes one after the other, ``--repeat`` times
each: pbmt parsing the text and writing the cache (an empty ``PBMT_CACHE_DIR``), pbmt mapping the cache it
wrote, and Moses2 (``../shared/tools/moses/bin/moses2``, skipped with a note where absent) loading a
``moses.ini`` that holds that table alone (PhraseDictionaryMemory, table limit 20, and the penalties) and
translating no sentence. The median of each, wall and CPU seconds; the machine's load average beside them.

Reported also: the cache's arrays, each with its bytes per phrase pair.

    python benchmarks/bench_model_load.py [--table PATH] [--repeat 3] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

import numpy as np

from bench_decoder import run

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
TABLE = SHARED / "data" / "bible-es-en" / "model" / "phrase-table.gz"
MOSES2 = SHARED / "tools" / "moses" / "bin" / "moses2"
LOAD = "import sys; from pbmt.model.phrase_table import PhraseTable; from pbmt.base.vocab import Vocab; " \
       "PhraseTable.load(sys.argv[1], Vocab())"
INI = """[input-factors]
0

[mapping]
0 T 0

[feature]
UnknownWordPenalty
WordPenalty
PhrasePenalty
PhraseDictionaryMemory name=TranslationModel0 num-features={n} path={path} input-factor=0 output-factor=0 \
table-limit=20

[weight]
UnknownWordPenalty0= 1
WordPenalty0= -1
PhrasePenalty0= 0.2
TranslationModel0= {weights}
"""


def median(runs: list[dict]) -> dict:
    return {key: statistics.median(r[key] for r in runs) for key in ("wall", "cpu")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--table", type=Path, default=TABLE, help="a Moses phrase table (plain or .gz)")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each, the median reported")
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args()
    table = args.table.resolve()
    from pbmt.base.files import read_lines

    first = next(line for _, line in read_lines(table) if line.strip())
    n_scores = len(first.split("|||")[2].split())
    results = {"table": str(table), "load_before": " ".join(f"{x:.2f}" for x in os.getloadavg())}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        pbmt = [sys.executable, "-c", LOAD, str(table)]

        def timed(command, env=None, cwd=None):
            return run(command, None, Path(os.devnull), cwd, env)

        timed(pbmt, {"PBMT_CACHE_DIR": str(work / "warm-up")})  # numba's kernels compiled, the file in memory
        builds, maps = [], []
        for k in range(args.repeat):
            cache = {"PBMT_CACHE_DIR": str(work / f"cache{k}")}
            builds.append(timed(pbmt, cache))
            maps.append(timed(pbmt, cache))
        results["pbmt build"], results["pbmt cached"] = median(builds), median(maps)
        folder = next((work / "cache0").glob("*/phrase-table"))
        arrays = {f.stem: np.load(f, mmap_mode="r") for f in sorted(folder.glob("*.npy"))}
        pairs = len(arrays["tgt_offsets"]) - 1
        results["pairs"] = pairs
        results["bytes per pair"] = {name: a.nbytes / pairs for name, a in arrays.items()}
        if MOSES2.exists():
            (work / "moses.ini").write_text(INI.format(n=n_scores, path=table,
                                                        weights=" ".join(["0.2"] * n_scores)))
            results["moses2 load"] = median([timed([str(MOSES2), "-f", "moses.ini", "--threads", "1"], cwd=work)
                                             for _ in range(args.repeat)])
        else:
            print(f"note: {MOSES2} is absent: Moses2 is skipped")
    results["load_after"] = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"{table} ({results['pairs']:,} phrase pairs); load average before {results['load_before']}, "
          f"after {results['load_after']}")
    for name in ("pbmt build", "pbmt cached", "moses2 load"):
        if name in results:
            print(f"  {name:12s} wall {results[name]['wall']:6.2f} s  cpu {results[name]['cpu']:6.2f} s")
    if "moses2 load" in results:
        print(f"  build / Moses2's load, CPU: {results['pbmt build']['cpu'] / results['moses2 load']['cpu']:.2f}")
    print("\n| array | bytes per phrase pair |\n|---|---|")
    for name, size in sorted(results["bytes per pair"].items(), key=lambda item: -item[1]):
        print(f"| `{name}` | {size:.1f} |")
    print(f"| all | {sum(results['bytes per pair'].values()):.1f} |")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
