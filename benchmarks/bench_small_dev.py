"""Claim: MERT on a small dev set (the tutorial's 100 verses) decodes no iteration more than 1.0 BLEU below the
untuned weights, over three seeds, and its kept weights are at least the untuned ones on the test verses (#35).

Setting: the tutorial's trained model and files (``docs/tutorial.md``: ``pbmt train --lm-order 3 --lm-order 5``,
two LMs; ``$WORK/dev.es``/``dev.en``, 100 plain-text verses; ``$WORK/test.es``/``test.en``, 200 verses of Acts),
and the tutorial's MERT command (100-best, ``--iterations 5``) run once per seed of --seeds, each with
``--seed N``; --mert-args adds MERT options to every run (e.g. ``--restarts 20`` for how MERT ran before random
restarts were turned off on small dev sets), so a default can be measured against what it replaced. The kept
weights (the best dev decode) translate the test verses, scored as the tutorial scores them (``pbmt eval``: cased,
sacrebleu's 13a tokeniser), beside the untuned weights' translation.

Printed: per seed, the dev BLEU of every iteration's decode (iteration 1 decodes the untuned weights), the lowest
against the untuned weights, the best, and the kept weights' test BLEU; the load average (1 minute, sampled every
30 s) and wall time (a record's load is that of the run that wrote it: say in --record-note what it was while
the runs it resumed were tuned). Each seed's run folder (``--out``/seedN) is resumed if it exists (``pbmt tune --resume``), so a
killed benchmark continues and a finished one is recorded again without tuning.

    python benchmarks/bench_small_dev.py --work tutorial-run --out small-dev [--seeds 1,2,3] [--workers 2]
        [--mert-args '--restarts 20'] [--record NAME [--record-note TEXT]]

--work is the tutorial's $WORK after sections 1-4 (``python benchmarks/record_tutorial.py --work DIR`` makes one).
--record NAME writes the table as ``docs/runs/NAME.json``, which ``python docs/generated.py`` renders into the
doc's block of that name.
"""

from __future__ import annotations

import argparse
import csv
import re
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "docs"))
from generated import write_table  # noqa: E402  (docs/generated.py: the doc table records)
from bench_tune import LoadSampler, run  # noqa: E402  (benchmarks/bench_tune.py)

PBMT = [sys.executable, "-m", "pbmt"]
GOAL = 1.0  # BLEU: no iteration more than this below the untuned weights (#35 item 6)


def dev_bleu(log: Path) -> list[float]:
    """The dev BLEU (percent) of every iteration's decode in a ``pbmt tune`` log.tsv."""
    with open(log, encoding="utf-8") as f:
        return [float(row["dev_bleu"]) for row in csv.DictReader(f, delimiter="\t")]


def test_bleu(work: Path, weights: Path | None, out: Path, workers: int, log: Path) -> float:
    """Cased 13a BLEU (percent) of the test verses translated with ``weights``' [weight] section (None: the
    model's own), as the tutorial scores them."""
    translation = out / "test.out.en"
    if not translation.exists():
        partial = out / "test.out.en.partial"
        run([*PBMT, "translate", "-f", work / "model" / "moses.ini",
             *(["--weights", weights] if weights else []), "-i", work / "test.es", "-o", partial,
             "--workers", workers, "-q"], log=log)
        partial.rename(translation)
    scored = subprocess.run([*PBMT, "eval", str(work / "test.en"), "-i", str(translation)], capture_output=True,
                            text=True, check=True).stdout
    return float(re.search(r"BLEU = ([\d.]+)", scored).group(1))


def tune(work: Path, out: Path, seed: int, workers: int, extra: list[str], log: Path) -> Path:
    """The tutorial's MERT command with ``--seed seed`` and ``extra``, into ``out``/seedN (resumed if there)."""
    folder = out / f"seed{seed}"
    run([*PBMT, "tune", "-f", work / "model" / "moses.ini", "--src", work / "dev.es", "--refs", work / "dev.en",
         "--algorithm", "mert", "--iterations", 5, "--workers", workers, "--seed", seed, *extra, "--out", folder,
         "-q", *(["--resume"] if (folder / "checkpoint.npz").exists() else [])], log=log)
    return folder


def below(values: list[float], untuned: float) -> str:
    lowest = min(values[1:], default=untuned)
    return f"{lowest - untuned:.2f}" if lowest < untuned else "never below"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", type=Path, required=True, help="the tutorial's $WORK (its model trained)")
    parser.add_argument("--out", type=Path, required=True, help="folder of the runs (one per seed)")
    parser.add_argument("--seeds", default="1,2,3", help="comma-separated MERT seeds")
    parser.add_argument("--workers", type=int, default=2, help="decoding processes of each run")
    parser.add_argument("--mert-args", default="", help="more pbmt tune options for every run, one string")
    parser.add_argument("--record", metavar="NAME", help="write the table as docs/runs/NAME.json")
    parser.add_argument("--record-note", metavar="TEXT", help="a sentence under the recorded table")
    args = parser.parse_args()
    for needed in ("model/moses.ini", "dev.es", "dev.en", "test.es", "test.en"):
        if not (args.work / needed).exists():
            sys.exit(f"{args.work / needed}: no such file (run the tutorial's sections 1-4 into --work first)")
    seeds = [int(s) for s in args.seeds.split(",")]
    args.out.mkdir(parents=True, exist_ok=True)
    log = args.out / "bench.log"
    started = time.time()
    rows, lowest, best, tested = [], [], [], []
    with LoadSampler() as load:
        untuned_test = test_bleu(args.work, None, args.out, args.workers, log)
        for seed in seeds:
            folder = tune(args.work, args.out, seed, args.workers, shlex.split(args.mert_args), log)
            dev = dev_bleu(folder / "log.tsv")
            test = test_bleu(args.work, folder / "moses.ini", folder, args.workers, log)
            rows.append([seed, ", ".join(f"{v:.2f}" for v in dev), below(dev, dev[0]), f"{max(dev):.2f}", f"{test:.2f}"])
            lowest.append(min(dev) - dev[0])
            best.append(max(dev))
            tested.append(test)
            print(f"seed {seed}: dev {rows[-1][1]}; lowest against untuned {rows[-1][2]}; test {test:.2f} "
                  f"(untuned {untuned_test:.2f})", flush=True)
    rows.append(["untuned", f"{dev[0]:.2f}", "", f"{dev[0]:.2f}", f"{untuned_test:.2f}"])
    spread = f" ± {statistics.stdev(best):.2f}" if len(best) > 1 else ""
    summary = (f"Over the seeds: best dev BLEU {statistics.mean(best):.2f}{spread}, the kept weights' test BLEU "
               f"{statistics.mean(tested):.2f} (untuned {untuned_test:.2f}).")
    print(f"{'met' if min(lowest) >= -GOAL else 'NOT met'}: lowest iteration {min(lowest):+.2f} against the untuned "
          f"weights (goal: no lower than -{GOAL:g}). {summary} Load {min(load.samples):.1f}-{max(load.samples):.1f}, "
          f"{time.time() - started:.0f} s", flush=True)
    if args.record:
        columns = ["seed", "dev BLEU per iteration", "lowest against the untuned", "best dev BLEU",
                   "test BLEU of the kept weights"]
        shown = [a for a in sys.argv[1:] if a not in ("--record-note", args.record_note)]
        command = shlex.join(["python", "benchmarks/bench_small_dev.py", *shown])
        print(write_table(args.record, columns, rows, load=load.samples, command=command,
                          note=" ".join(filter(None, [args.record_note, summary]))))


if __name__ == "__main__":
    main()
