"""Claim: pbmt's forced decoding reaches every reference Moses 1's ``ConstrainedDecoding`` reaches, with a
best model score at least Moses's, and more references than Moses's beam search finds.

Setting: the shared Moses model (``model/moses.ini``: table limit 20, distortion limit 6) on the first
``--sentences`` dev sentences with their references (``dev.tok.es``, ``dev.tok.en``). Moses 1 runs with the
feature line ``ConstrainedDecoding path=REFS max-unknowns=0`` (weight 1) added to the ini, stack ``--stack``
(default 1000) and a 1-best n-best list; it reaches a reference when its 1-best is the reference. pbmt runs
``pbmt translate --constraint REFS --n-best`` (an exact search: no stack setting applies), in the distortion
space and, for the record, in the MON/SWAP space. Both run as whole processes, one after the other, in this
one run (wall seconds include loading the model). Moses is skipped with a note where
``../shared/tools/moses/bin`` is absent.

Reported: references reached by each, those Moses reaches that pbmt does not (must be none), and over the
references both reach the smallest difference pbmt's best score minus Moses's (must be >= 0 to Moses's
printed precision).

    python benchmarks/bench_forced.py [--sentences 100] [--stack 1000] [--json FILE] [--record forced-moses]

``--record NAME`` writes the table as the record ``docs/runs/NAME.json`` (docs/constrained-decoding.md's).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

from bench_decoder import DATA, MOSES_BIN, PBMT, best_totals, run
from generated import write_table  # docs/generated.py, on the path bench_decoder sets

DOC_NAMES = {"pbmt distortion": "pbmt, distortion limit 6", "pbmt mon-swap": "pbmt, MON/SWAP"}


def moses_ini(refs: Path, out: Path) -> None:
    """The shared model's ini with absolute paths and the ConstrainedDecoding feature on ``refs``."""
    lines = []
    folder = DATA / "model"
    for line in (folder / "moses.ini").read_text().splitlines():
        words = [f"path={(folder / w[5:]).resolve()}" if w.startswith("path=") else w for w in line.split(" ")]
        lines.append(" ".join(words))
        if line == "Distortion":
            lines.append(f"ConstrainedDecoding path={refs} max-unknowns=0")
        if line.startswith("LM0="):
            lines.append("ConstrainedDecoding0= 1")
    out.write_text("\n".join(lines) + "\n")


def reached_moses(nbest: Path, refs: list[str]) -> dict[int, float]:
    """Moses's best score of every sentence whose 1-best is its reference."""
    reached = {}
    with open(nbest, encoding="utf-8") as handle:
        for line in handle:
            fields = line.split(" ||| ")
            k = int(fields[0])
            if k not in reached and fields[1].split() == refs[k].split():
                reached[k] = float(fields[3])
    return reached


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sentences", type=int, default=100)
    parser.add_argument("--stack", type=int, default=1000)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--record", metavar="NAME", help="write the table as the doc record docs/runs/NAME.json")
    args = parser.parse_args()
    load = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        src = (DATA / "dev.tok.es").read_text(encoding="utf-8").splitlines()[:args.sentences]
        refs = (DATA / "dev.tok.en").read_text(encoding="utf-8").splitlines()[:args.sentences]
        (tmp / "src").write_text("\n".join(src) + "\n", encoding="utf-8")
        (tmp / "refs").write_text("\n".join(refs) + "\n", encoding="utf-8")
        rows = {}
        for space in ("distortion", "mon-swap"):
            command = [*PBMT, "translate", "-q", "--tokenized", "-f", str(DATA / "model" / "moses.ini"),
                       "--reordering", space, "--constraint", str(tmp / "refs"), "--n-best", str(tmp / space),
                       "--n-best-size", "1", "-o", str(tmp / f"{space}.out"), "-i", str(tmp / "src"), "--no-resume"]
            timing = run(command, None, tmp / "stdout")
            rows[f"pbmt {space}"] = {**timing, "reached": best_totals(tmp / space)}
        if (MOSES_BIN / "moses").exists():
            moses_ini(tmp / "refs", tmp / "moses.ini")
            command = [str(MOSES_BIN / "moses"), "-f", str(tmp / "moses.ini"), "-s", str(args.stack),
                       "-n-best-list", str(tmp / "moses.nbest"), "1"]
            timing = run(command, tmp / "src", tmp / "moses.out")
            rows[f"moses stack {args.stack}"] = {**timing, "reached": reached_moses(tmp / "moses.nbest", refs)}
        else:
            print(f"note: {MOSES_BIN} not found: Moses skipped", file=sys.stderr)
    print(f"first {args.sentences} dev sentences; load average before: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    print(f"{'decoder':<22} {'reached':>8} {'wall s':>8} {'peak MB':>8}")
    for name, row in rows.items():
        print(f"{name:<22} {len(row['reached']):>8} {row['wall']:>8.1f} {row['peak_mb']:>8.0f}")
    summary = {name: {"reached": sorted(row["reached"]), "wall": row["wall"], "peak_mb": row["peak_mb"]}
               for name, row in rows.items()}
    moses = next((row["reached"] for name, row in rows.items() if name.startswith("moses")), None)
    if moses is not None:
        ours = rows["pbmt distortion"]["reached"]
        missed = sorted(set(moses) - set(ours))
        gaps = [ours[k] - moses[k] for k in moses if k in ours]
        print(f"reached by Moses but not pbmt: {missed or 'none'}")
        if gaps:
            print(f"pbmt's best score minus Moses's over the {len(gaps)} both reach: min {min(gaps):+.6f}, "
                  f"max {max(gaps):+.6f}")
        summary["moses_only"] = missed
        summary["score_gaps"] = gaps
    if args.json:
        args.json.write_text(json.dumps(summary, indent=1))
    if args.record:
        table = [[DOC_NAMES.get(name, name.replace("moses stack", "Moses 1, stack")), len(row["reached"]), row["wall"],
                  row["peak_mb"]] for name, row in rows.items()]
        path = write_table(args.record, ["decoder", "references reached", "wall s", "peak MB"], table,
                           load=[load[0], os.getloadavg()[0]], formats={"wall s": ".1f", "peak MB": ".0f"})
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
