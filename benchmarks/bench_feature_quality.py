"""Claim: what a second LM and the operation sequence model buy the shared model, tuned and scored alike.

Setting: the shared Moses model (``bible-es-en/model/moses.ini``, untuned
train-model.perl weights) in up to four configurations, each a ``moses.ini``
written under --out with absolute paths:

- ``base``: the shared model as it is;
- ``lm5``: + ``lm5.arpa.gz`` as a second KENLM line (``LM1``), the two LMs
  starting at 0.25 each (the base model's LM weight, halved: an untuned second
  LM at the full 0.5 doubles the LMs' share and loses 5 BLEU);
- ``osm``: + an operation sequence model (``OpSequenceModel0``, order 5, made
  here from the training corpus and its alignment as ``docs/osm.md`` says,
  ``train-model.perl``'s default weights 0.08 -0.02 0.02 -0.001 0.03);
- ``osm0``: the same OSM from ``pbmt train --osm``'s weights, the gap count
  (third) at 0, so that MERT may give it either sign;
- ``both``: + both.

Each (configuration, seed) cell tunes on all of dev with ``pbmt tune
--algorithm mert`` (100-best, --iterations iterations, --threads threads, the
weights of the best dev decode kept) and decodes all of test with them;
BLEU against ``test.tok.en`` (``pbmt.metrics.bleu``: sacrebleu's with
``tokenize='none'``). Printed, and with --record NAME written as the doc
table record ``docs/runs/NAME.json``: per configuration the dev BLEU of each iteration's decode, test BLEU per seed, mean
± sd over seeds, the difference from ``base`` of the same seed and the share of
1,000 paired bootstrap resamples of the test sentences (Koehn 2004, seeded by
the seed) in which the cell beats it; the wall minutes per cell and the load
average (1 minute, sampled every minute while it ran).

A cell's folder (``OUT/runs/CONFIG-seedS``) is resumed from its checkpoint if
it exists, and skipped once it holds ``test.out``; --report tabulates the
finished cells without running any.

    python benchmarks/bench_feature_quality.py --out quality-runs [--configs base,lm5,osm,osm0,both]
        [--seeds 1,2,3] [--iterations 5] [--threads 2] [--report] [--record NAME]
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "docs"))
from generated import write_table  # noqa: E402  (docs/generated.py: the docs' records of measured tables)

from bench_tune import LoadSampler  # noqa: E402
from pbmt.metrics.bleu import corpus_bleu, paired_bootstrap, segment_stats  # noqa: E402
from pbmt.train.pipeline import DEFAULT_WEIGHTS  # noqa: E402

DATA = ROOT.parent / "shared" / "data" / "bible-es-en"
PBMT = [sys.executable, "-m", "pbmt"]
CONFIGS = ("base", "lm5", "osm", "osm0", "both")
OSM_WEIGHTS = {"osm": "0.08 -0.02 0.02 -0.001 0.03",  # train-model.perl's
               "osm0": " ".join(format(w, "g") for w in DEFAULT_WEIGHTS["OpSequenceModel0"])}  # pbmt train's
FORMATS = {"test BLEU": ".2f", "against base: difference": "+.2f", "better in (of 1,000 resamples)": ".3f"}


def lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()


def osm_model(out: Path, data: Path) -> Path:
    """The 5-gram OSM of the training corpus's operation sequences (``docs/osm.md``), made once."""
    from pbmt.train.osm import write_operation_corpus

    path = out / "osm5.arpa.gz"
    if not path.exists():
        operations = out / "operations.txt"
        write_operation_corpus(data / "train.tok.es", data / "train.tok.en", data / "train.align.gdfa", operations)
        subprocess.run([*PBMT, "lm", "--order", "5", operations, path.with_suffix(".partial.gz")], check=True)
        path.with_suffix(".partial.gz").rename(path)
    return path


def write_config(name: str, out: Path, data: Path) -> Path:
    """``OUT/cfg-NAME/model/moses.ini``: the shared ini with absolute paths and the configuration's lines."""
    shared = data / "model"
    text = (shared / "moses.ini").read_text(encoding="utf-8")
    text = re.sub(r"path=(\S+)", lambda m: f"path={(shared / m.group(1)).resolve()}", text)
    extra_lines, extra_weights = [], []
    if name in ("lm5", "both"):
        extra_lines.append(f"KENLM name=LM1 factor=0 path={(data / 'lm5.arpa.gz').resolve()} order=5")
        text = re.sub(r"^LM0= .*$", "LM0= 0.25", text, flags=re.M)
        extra_weights.append("LM1= 0.25")
    if name in ("osm", "osm0", "both"):
        extra_lines.append(f"OpSequenceModel name=OpSequenceModel0 num-features=5 path={osm_model(out, data)}")
        extra_weights.append(f"OpSequenceModel0= {OSM_WEIGHTS.get(name, OSM_WEIGHTS['osm'])}")
    text = re.sub(r"^(KENLM name=LM0 .*)$", lambda m: "\n".join([m.group(1), *extra_lines]), text, flags=re.M)
    text = re.sub(r"^(LM0= .*)$", lambda m: "\n".join([m.group(1), *extra_weights]), text, flags=re.M)
    ini = out / f"cfg-{name}" / "model" / "moses.ini"
    ini.parent.mkdir(parents=True, exist_ok=True)
    if not ini.exists() or ini.read_text(encoding="utf-8") != text:
        ini.write_text(text, encoding="utf-8")
    return ini


def run_cell(ini: Path, folder: Path, seed: int, args: argparse.Namespace) -> None:
    """Tune on all of dev (resuming the folder's checkpoint) and decode test with the kept weights."""
    log = folder.with_suffix(".log")
    resume = ["--resume"] if folder.exists() else []
    started = time.time()
    with LoadSampler(60) as load, open(log, "a", encoding="utf-8") as out:
        for command in ([*PBMT, "tune", "-f", ini, "--src", args.data / "dev.tok.es", "--refs", args.data / "dev.tok.en",
                         "--tokenized", "--out", folder, "--algorithm", "mert", "--iterations", args.iterations,
                         "--n-best-size", 100, "--seed", seed, "--threads", args.threads, "-q", *resume],
                        [*PBMT, "translate", "-f", folder / "moses.ini", "--tokenized", "-i", args.data / "test.tok.es",
                         "-o", folder / "test.out.partial", "-q", "--threads", args.threads]):
            out.write(f"$ {' '.join(map(str, command))}\n")
            out.flush()
            if subprocess.run([str(c) for c in command], stdout=out, stderr=subprocess.STDOUT).returncode:
                sys.exit(f"failed: {' '.join(map(str, command))}; see {log}")
    (folder / "test.out.partial").rename(folder / "test.out")
    (folder / "bench.txt").write_text(f"{(time.time() - started) / 60:.1f} min, load {min(load.samples):.1f}–"
                                      f"{max(load.samples):.1f}\n", encoding="utf-8")


def dev_bleu(folder: Path) -> list[float]:
    """The dev BLEU of each iteration's decode (the run's log.tsv)."""
    rows = [line.split("\t") for line in lines(folder / "log.tsv")]
    return [float(row[rows[0].index("dev_bleu")]) for row in rows[1:]]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True, help="configurations, the OSM and the cells' folders")
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--configs", default="base,lm5,osm", help=f"comma-separated, of {', '.join(CONFIGS)}")
    parser.add_argument("--seeds", default="1,2,3", help="comma-separated")
    parser.add_argument("--iterations", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--report", action="store_true", help="tabulate the finished cells, run none")
    parser.add_argument("--record", metavar="NAME", help="write the table as docs/runs/NAME.json")
    args = parser.parse_args()
    configs, seeds = args.configs.split(","), [int(s) for s in args.seeds.split(",")]
    if set(configs) - set(CONFIGS):
        parser.error(f"unknown configuration(s) {', '.join(set(configs) - set(CONFIGS))}; known: {', '.join(CONFIGS)}")
    args.out.mkdir(parents=True, exist_ok=True)
    if not args.report:
        for seed in seeds:  # seed by seed, so that a stopped run has every configuration of its first seeds
            for name in configs:
                folder = args.out / "runs" / f"{name}-seed{seed}"
                if not (folder / "test.out").exists():
                    folder.parent.mkdir(exist_ok=True)
                    run_cell(write_config(name, args.out, args.data), folder, seed, args)
    refs = [[r] for r in lines(args.data / "test.tok.en")]
    stats, cells = {}, {}
    for name in configs:
        for seed in seeds:
            folder = args.out / "runs" / f"{name}-seed{seed}"
            if (folder / "test.out").exists():
                stats[name, seed] = segment_stats(lines(folder / "test.out"), refs)
                timing = folder / "bench.txt"
                cells[name, seed] = {"dev": dev_bleu(folder), "test": 100 * corpus_bleu(stats[name, seed]),
                                     "time": timing.read_text().strip() if timing.exists() else ""}
    columns = ["configuration", "seed", "dev BLEU of each iteration's decode", "test BLEU", "against base: difference",
               "better in (of 1,000 resamples)", "wall time, load"]
    rows = []
    for name in configs:
        done = [seed for seed in seeds if (name, seed) in cells]
        for seed in done:
            c = cells[name, seed]
            against = (name != "base" and ("base", seed) in stats)
            rows.append([name, seed, ", ".join(f"{b:.2f}" for b in c["dev"]), c["test"],
                         c["test"] - cells["base", seed]["test"] if against else None,
                         paired_bootstrap(stats["base", seed], stats[name, seed], np.random.default_rng(seed))
                         if against else None, c["time"]])
        if len(done) > 1:
            tests = [cells[name, s]["test"] for s in done]
            rows.append([f"**{name}**", "mean ± sd", f"best: {statistics.mean(max(cells[name, s]['dev']) for s in done):.2f}",
                         f"**{statistics.mean(tests):.2f} ± {statistics.stdev(tests):.2f}**", None, None, ""])
    for row in rows:
        print("  ".join("" if v is None else f"{v:.3f}" if isinstance(v, float) else str(v) for v in row))
    if args.record:
        load = [float(x) for c in cells.values() for x in re.findall(r"load ([\d.]+)–([\d.]+)", c["time"])[0]
                ] if all(c["time"] for c in cells.values()) else None
        missing = [f"{name} seed {seed}" for seed in seeds for name in configs if (name, seed) not in cells]
        note = ("Each cell's folder keeps its run (`log.tsv`: the weights of every iteration). " +
                (f"Not finished: {', '.join(missing)} (the command resumes them)." if missing else ""))
        command = " ".join(["python", "benchmarks/bench_feature_quality.py",
                            *(a for a in sys.argv[1:] if a != "--report")])
        print(f"wrote {write_table(args.record, columns, rows, load=load, command=command, formats=FORMATS, note=note)}")


if __name__ == "__main__":
    main()
