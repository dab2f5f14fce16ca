"""Claim: pbmt builds the binary cache of a phrase table at least as fast as Moses2 loads the same table as text,
and the cache costs no more bytes per phrase pair than it needs.

Setting: one Moses phrase table (default: the shared model's, ``../shared/data/bible-es-en/model``; ``--table``
for another, e.g. a freshly trained model's), loaded by whole processes one after the other, ``--repeat`` times
each: pbmt parsing the text and writing the cache (an empty ``PBMT_CACHE_DIR``), pbmt mapping the cache it
wrote, and Moses2 (``../shared/tools/moses/bin/moses2``, skipped with a note where absent) loading a
``moses.ini`` that holds that table alone (PhraseDictionaryMemory, table limit 20, and the penalties) and
translating no sentence. The median of each, wall and CPU seconds; the machine's load average beside them.

Reported also: the cache's arrays, each with its bytes per phrase pair.

With ``--record``, the times and the bytes go to ``docs/runs/model-load.json`` and ``model-cache-bytes.json``
(``python docs/generated.py`` then renders them in docs/decoding.md).

    python benchmarks/bench_model_load.py [--table PATH] [--repeat 3] [--json FILE] [--record]
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
    parser.add_argument("--record", action="store_true", help="write docs/runs/model-load.json and model-cache-bytes.json")
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
    if args.record:
        record(results, args.repeat)


#: what each array of the cache holds, for the bytes table (arrays of one line of it are summed)
ARRAYS = [(("scores",), "the scores, float64 log probabilities"),
          (("tgt_local",), "the target words (int32)"),
          (("tgt_offsets",), "int64 CSR offsets of the target phrases"),
          (("align_offsets",), "int64 CSR offsets of the alignments"),
          (("align",), "alignment points, int16 pairs"),
          (("trie_keys", "trie_values"), "the source trie's hash table (int64, half full)"),
          (("src_local", "src_offsets", "cand_offsets", "node_phrase"), "source phrases, per source phrase"),
          (("src_vocab", "tgt_vocab"), "the words, UTF-8")]


def record(results: dict, repeat: int) -> None:
    """The records of docs/decoding.md's first-load tables."""
    sys.path.insert(0, str(ROOT / "docs"))
    from generated import write_table

    loads = [float(results[k].split()[0]) for k in ("load_before", "load_after")]
    table = f"{Path(results['table']).name} ({results['pairs']:,} phrase pairs; {results['table']})"
    rows = [["pbmt: parse and write the cache", results["pbmt build"]["wall"], results["pbmt build"]["cpu"]],
            ["pbmt: map the cache", results["pbmt cached"]["wall"], results["pbmt cached"]["cpu"]]]
    if "moses2 load" in results:
        rows.append(["Moses2: load the text table (`PhraseDictionaryMemory`, table limit 20)",
                     results["moses2 load"]["wall"], results["moses2 load"]["cpu"]])
    write_table("model-load", ["", "wall s", "CPU s"], rows, load=loads, formats={"wall s": ".2f", "CPU s": ".2f"},
                note=f"Medians of {repeat}, whole processes one after the other; the table: {table}.")
    sizes = results["bytes per pair"]
    named = {name for names, _ in ARRAYS for name in names}
    lines = [[", ".join(f"`{n}`" for n in names), sum(sizes.get(n, 0.0) for n in names), what]
             for names, what in ARRAYS] + [[f"`{n}`", sizes[n], ""] for n in sorted(set(sizes) - named)]
    write_table("model-cache-bytes", ["array", "bytes per phrase pair", "what"],
                sorted(lines, key=lambda row: -row[1]) + [["all", sum(sizes.values()), None]], load=loads,
                formats={"bytes per phrase pair": ".1f"}, note=f"The table: {table}.")


if __name__ == "__main__":
    main()
