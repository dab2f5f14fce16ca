"""How search errors and model errors move with the pruning: ``pbmt analyze`` over a grid of stack sizes and
pop limits.

Setting: the shared Moses model (untuned, or ``--weights``) on dev. Whether a reference is reachable does not
depend on the pruning (forced decoding is exact), so the whole dev set is analysed once with the model's
settings (``--rows``: the per-sentence table of an earlier ``pbmt analyze -o`` run instead), and the grid
(cube pruning with stack 100, 200, 1000 and pop limit 1000, 5000) re-analyses only the reachable
sentences, each setting as one ``pbmt analyze`` process (``--workers``), one after the other in this run.

Reported per setting: search errors and model errors among the reachable sentences that are not correct,
with 95% bootstrap intervals, and the wall seconds of the run.

    python benchmarks/bench_search_errors.py [--rows dev.analysis.tsv] [--weights W] [--workers 2] [--json FILE]
        [--record search-errors-pruning-untuned]

``--record NAME`` writes the grid's counts as the record ``docs/runs/NAME.json`` (docs/search-errors.md's).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

from bench_decoder import DATA, PBMT, run
from generated import write_table  # docs/generated.py, on the path bench_decoder sets

GRID = [(stack, pops) for stack in (100, 200, 1000) for pops in (1000, 5000)]


def analyze(src: Path, refs: Path, rows: Path, extra: list[str], workers: int, stdout: Path) -> dict:
    command = [*PBMT, "analyze", "-q", "--tokenized", "-f", str(DATA / "model" / "moses.ini"), "-i", str(src),
               "--refs", str(refs), "-o", str(rows), "--workers", str(workers), *extra]
    return run(command, None, stdout)


def shares(report: str) -> dict[str, str]:
    """The rows of ``pbmt analyze``'s summary table: name -> 'count of total | share | interval'."""
    out = {}
    for line in report.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) == 4 and " of " in cells[1]:
            out[cells[0]] = f"{cells[1]} ({cells[2]}; {cells[3]})"
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=Path, help="per-sentence table of a whole-dev pbmt analyze run")
    parser.add_argument("--weights", help="pbmt translate's --weights (default: the ini's, untuned)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--record", metavar="NAME", help="write the grid as the doc record docs/runs/NAME.json")
    args = parser.parse_args()
    extra = ["--weights", args.weights] if args.weights else []
    src_lines = (DATA / "dev.tok.es").read_text(encoding="utf-8").splitlines()
    ref_lines = (DATA / "dev.tok.en").read_text(encoding="utf-8").splitlines()
    load = os.getloadavg()
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        rows = args.rows
        if rows is None:
            (tmp / "src").write_text("\n".join(src_lines) + "\n", encoding="utf-8")
            (tmp / "refs").write_text("\n".join(ref_lines) + "\n", encoding="utf-8")
            rows = tmp / "rows"
            timing = analyze(tmp / "src", tmp / "refs", rows, extra, args.workers, tmp / "report")
            results["whole dev, model's settings"] = {"wall": timing["wall"],
                                                      "shares": shares((tmp / "report").read_text())}
        table = [line.split("\t") for line in rows.read_text(encoding="utf-8").splitlines()[1:]]
        reachable = [int(r[0]) - 1 for r in table if r[1] != "unreachable"]
        (tmp / "rsrc").write_text("".join(src_lines[k] + "\n" for k in reachable), encoding="utf-8")
        (tmp / "rrefs").write_text("".join(ref_lines[k] + "\n" for k in reachable), encoding="utf-8")
        for stack, pops in GRID:
            name = f"cube, stack {stack}, pop limit {pops}"
            timing = analyze(tmp / "rsrc", tmp / "rrefs", tmp / "grid-rows",
                             extra + ["--search", "cube", "--stack", str(stack), "--pop-limit", str(pops)],
                             args.workers, tmp / "grid-report")
            results[name] = {"wall": timing["wall"], "shares": shares((tmp / "grid-report").read_text())}
            print(f"{name}: {timing['wall']:.0f} s", file=sys.stderr)
    print(f"{len(reachable)} reachable dev sentences of {len(table)}; load average before: "
          f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    print("| setting | correct | search errors of reachable errors | model errors of reachable errors | wall s |")
    print("|---|---|---|---|---|")
    for name, r in results.items():
        s = r["shares"]
        print(f"| {name} | {s.get('correct', '')} | {s.get('search error, of reachable errors', '')} | "
              f"{s.get('model error, of reachable errors', '')} | {r['wall']:.0f} |")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    if args.record:
        def count(shares: dict[str, str], key: str) -> str:
            return shares.get(key, "").split(" (")[0]  # "7 of 99 (7.1%; ...)" -> "7 of 99"
        table = [[f"stack {stack}, pop limit {pops}" + (" (the default)" if (stack, pops) == (200, 1000) else ""),
                  *(count(results[f"cube, stack {stack}, pop limit {pops}"]["shares"], key) for key in
                    ("correct", "search error, of reachable errors", "model error, of reachable errors"))]
                 for stack, pops in GRID]
        columns = ["setting", "correct", "search errors, of reachable errors", "model errors, of reachable errors"]
        print(f"wrote {write_table(args.record, columns, table, load=[load[0], os.getloadavg()[0]])}")


if __name__ == "__main__":
    main()
