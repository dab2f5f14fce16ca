"""Record a run of docs/tutorial.md as written, for the numbers and output blocks the tutorial quotes.

Runs the tutorial's ```bash blocks in order in one shell (its sizes as they
stand, or as the environment sets them), timing each block and keeping its
standard output, with the load average sampled every 30 s; beside it, once
the test set is translated (the model trained, the decoder compiled), MERT's command again with each of --mert-seeds
(``--seed N``, the same dev verses and model), so the tutorial can say how
much MERT varies between seeds.
Everything the tutorial quotes goes to --json (default
``docs/runs/tutorial.json``, kept in the repository): each block's seconds
and output, ``pbmt train``'s step summaries, every tuning run's dev BLEU
per iteration (epoch) and the kept one, the sampler trace's first and last
record per verse beside the decoder's best score, the commit and the load.
``python docs/generated.py`` then rewrites the tutorial's generated blocks
from it, and ``tests/test_docs_generated.py`` fails while they differ.

A --work folder that already holds the trained model reuses it (``pbmt
train`` skips finished steps; the step times recorded are the ones it
stamped when it ran). Takes about half an hour on two shared cores.

    python benchmarks/record_tutorial.py --work tutorial-run [--mert-seeds 2,3] [--json docs/runs/tutorial.json]
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "docs"))
from generated import tutorial_blocks, tutorial_command  # noqa: E402  (docs/generated.py: the tutorial's blocks, its renderers)
from bench_tune import LoadSampler  # noqa: E402  (benchmarks/bench_tune.py: the load average sampled while it runs)

MARK = "@@pbmt-tutorial-block"
SEEDS_AFTER = 3  # the block after which the seeds start: the model trained, the decoder compiled into numba's cache
# (started at once, each seed's processes would compile the same kernels beside the tutorial's, on a cold cache)


def run_blocks(work: Path, env: dict) -> None:
    """Run the tutorial's blocks in order in one bash; their output, with a timed mark before each, goes to
    ``work/tutorial.stdout`` (``blocks_run`` reads it)."""
    blocks = tutorial_blocks()
    script = "\n".join(f'echo "{MARK} {k} $(date +%s.%N)"\n{block.code}\ntouch "$WORK/.after-block-{k}"'
                       for k, block in enumerate(blocks))
    script += f'\necho "{MARK} end $(date +%s.%N)"\n'
    with open(work / "tutorial.stderr", "w", encoding="utf-8") as stderr:
        done = subprocess.run(["bash", "-eu", "-c", script], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                              stderr=stderr, text=True)
    (work / "tutorial.stdout").write_text(done.stdout, encoding="utf-8")
    if done.returncode != 0:
        sys.exit(f"the tutorial failed (exit {done.returncode}); see {work}/tutorial.stderr")


def blocks_run(work: Path, started: float) -> list[dict]:
    """Each tutorial block's heading, seconds and standard output, from ``work/tutorial.stdout``; for a run
    that was stopped (no such file), each finished block's seconds from its end marker's time (the first
    block began at ``started``) and the BLEU lines of section 6 as its commands print them."""
    blocks = tutorial_blocks()
    if (work / "tutorial.stdout").exists():
        parts = re.split(rf"^{MARK} (\S+) (\S+)\n", (work / "tutorial.stdout").read_text(encoding="utf-8"),
                         flags=re.M)[1:]
        marks = [(parts[i], float(parts[i + 1]), parts[i + 2]) for i in range(0, len(parts), 3)]
        return [{"heading": blocks[int(key)].heading, "seconds": round(marks[k + 1][1] - start, 1), "stdout": out}
                for k, (key, start, out) in enumerate(marks[:-1])]
    done, ends = [], [started]
    for k, block in enumerate(blocks):
        marker = work / f".after-block-{k}"
        if not marker.exists():
            break
        ends.append(marker.stat().st_mtime)
        done.append({"heading": block.heading, "seconds": round(ends[-1] - ends[-2], 1),
                     "stdout": bleu_lines(work) if block.heading.startswith("6.") else ""})
    return done


def bleu_lines(work: Path) -> str:
    """What section 6's eval loop prints, for the runs whose test translations exist."""
    out = []
    for run in ("untuned", "mert", "pro", "samplerank"):
        if not (work / f"test.{run}.tok.en").exists():
            continue
        for name, ref, hyp, extra in ((run, "test.en", f"test.{run}.en", []),
                                      (f"{run} (tokenised, lowercased)", "test.tok.en", f"test.{run}.tok.en",
                                       ["--tokenizer", "none"])):
            done = subprocess.run([sys.executable, "-m", "pbmt", "eval", str(work / ref), "-i", str(work / hyp),
                                   *extra], capture_output=True, text=True, check=True)
            out.append(f"{name}: {done.stdout.splitlines()[0]}")
    return "".join(line + "\n" for line in out)


def tuning_seconds(work: Path, run: str) -> dict:
    """{"seconds": ...} of a tuning run timed on its own (its start and end stamps in ``work``), else {}."""
    start, end = work / f".stamp-{run}-start", work / f".stamp-{run}-end"
    if not (start.exists() and end.exists()):
        return {}
    return {"seconds": round(float(end.read_text()) - float(start.read_text()), 1)}


def finished(run: Path) -> bool:
    """Whether a tuning run's folder holds a finished run (``pbmt tune`` writes the tuned moses.ini last), so a run
    stopped midway is not recorded as if its iterations were all it would do."""
    return (run / "moses.ini").exists() and (run / "log.tsv").exists()


def tuning_log(path: Path) -> dict:
    """A log.tsv's dev BLEU (percent, two decimals) per iteration or epoch, and (n-best loops) the pool's BLEU
    under each iteration's new weights."""
    with open(path, encoding="utf-8") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    summary = {"dev_bleu": [round(float(r["dev_bleu"]), 2) for r in rows]}
    if "new_weights_pool_bleu" in rows[0]:
        summary["pool_bleu"] = [round(float(r["new_weights_pool_bleu"]), 2) for r in rows]
    return summary


def train_steps(model: Path) -> list[dict]:
    """``pbmt train``'s steps as it stamped them: name, summary line, seconds."""
    steps = []
    for stamp in sorted((model / "work" / "steps").glob("*.json"), key=lambda p: p.stat().st_mtime):
        saved = json.loads(stamp.read_text(encoding="utf-8"))
        steps.append({"name": stamp.stem, "summary": saved["summary"], "seconds": round(saved["seconds"], 1)})
    return steps


def trace_ends(work: Path) -> list[dict]:
    """Per traced verse: model score and BLEU+1 (percent) of the chain's first and last record, and the
    decoder's best model score for the verse (cube pruning, the untuned weights)."""
    import pbmt

    with open(work / "trace.tsv", encoding="utf-8") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    model = pbmt.load(str(work / "model" / "moses.ini"))
    sources = (work / "five.es").read_text(encoding="utf-8").splitlines()
    ends = []
    for k, source in enumerate(sources, 1):
        mine = [r for r in rows if int(r["sentence"]) == k]
        first, last = mine[0], mine[-1]
        ends.append({"verse": k, "score": [round(float(first["model_score"]), 1), round(float(last["model_score"]), 1)],
                     "bleu": [round(float(first["bleu"]), 1), round(float(last["bleu"]), 1)],
                     "decoder_score": round(model.translate(source).score, 1)})
    return ends


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", type=Path, required=True, help="the tutorial's $WORK folder")
    parser.add_argument("--mert-seeds", default="2,3", help="MERT's command again with these seeds (comma-separated; "
                        "'' for none)")
    parser.add_argument("--json", type=Path, default=ROOT / "docs" / "runs" / "tutorial.json")
    parser.add_argument("--record-only", action="store_true", help="run nothing: record what --work holds from "
                        "an earlier run (load and total time then unknown: taken from --load, --seconds)")
    parser.add_argument("--load", type=float, nargs=2, help="with --record-only: the load average range")
    parser.add_argument("--seconds", type=float, help="with --record-only: the whole run's wall seconds")
    parser.add_argument("--started", type=float, help="with --record-only: when the run began (Unix time)")
    args = parser.parse_args()
    work = args.work.resolve()
    work.mkdir(parents=True, exist_ok=True)
    bin_dir = Path(sys.executable).parent
    env = {**os.environ, "WORK": str(work), "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                            text=True).stdout.strip()
    dirty = bool(subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "pbmt"], cwd=ROOT,
                                capture_output=True, text=True).stdout.strip())
    started = time.time()
    if args.record_only:
        seeds = {seed: tuning_log(work / f"mert-seed{seed}" / "log.tsv") for seed in args.mert_seeds.split(",")
                 if seed and finished(work / f"mert-seed{seed}")}
        load_range, seconds = args.load, args.seconds
    else:
        with LoadSampler() as load:
            for marker in work.glob(".after-block-*"):
                marker.unlink()
            settings, mert = tutorial_blocks()[0].code, tutorial_command("--algorithm mert")
            runs = {}
            for seed in filter(None, args.mert_seeds.split(",")):  # beside the tutorial, after SEEDS_AFTER
                folder = f"mert-seed{seed}"
                shell = (f"{settings}\nwhile [ ! -f $WORK/.after-block-{SEEDS_AFTER} ]; do sleep 5; done\n"
                         f"{mert.replace('$WORK/mert', '$WORK/' + folder)} --seed {seed} -q")
                runs[seed] = (folder, time.time(), subprocess.Popen(["bash", "-eu", "-c", shell], cwd=ROOT, env=env))
            run_blocks(work, env)
            seeds = {}
            for seed, (folder, seed_started, process) in runs.items():
                if process.wait() != 0:
                    sys.exit(f"MERT with --seed {seed} failed")
                seeds[seed] = {**tuning_log(work / folder / "log.tsv"), "seconds": round(time.time() - seed_started, 1)}
        load_range, seconds = [round(min(load.samples), 1), round(max(load.samples), 1)], round(time.time() - started, 1)
    record = {
        "commit": commit + ("+" if dirty else ""),
        "date": time.strftime("%Y-%m-%d", time.gmtime(started)),
        "seconds": seconds,
        "load": load_range,
        "sizes": {name: os.environ.get(name) for name in ("TRAIN", "DEV", "TEST", "ITERATIONS", "EPOCHS", "STEPS")
                  if os.environ.get(name)},
        "blocks": blocks_run(work, started if args.started is None else args.started),
        "train_steps": train_steps(work / "model"),
        "untuned": subprocess.run([sys.executable, "-m", "pbmt", "eval", str(work / "test.en"), "-i",
                                   str(work / "test.untuned.en")], capture_output=True, text=True,
                                  check=True).stdout.splitlines()[0],
        "tuning": {run: {**tuning_log(work / run / "log.tsv"), **tuning_seconds(work, run)}
                   for run in ("mert", "pro", "samplerank") if finished(work / run)},
        "mert_seeds": seeds,
        "trace": trace_ends(work) if (work / "trace.tsv").exists() else [],
    }
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {args.json} ({record['seconds']} s, load {record['load']})")


if __name__ == "__main__":
    main()
