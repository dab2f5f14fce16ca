"""Claim: pbmt's batch MIRA reaches the pool BLEU of Moses's kbmira on the same n-best pool, and how their
times compare, in one run on one machine.

Both start from the same weights (the model's moses.ini, untuned) at kbmira's
defaults (C = 0.01, 60 passes, decay 0.999, hope background, the answer as it
is: ``interpolation=1``, where pbmt's default is 0.3), on the shared dev
100-best list (``../shared/data/bible-es-en/model/dev.moses.nbest100.gz``,
1,031 sentences). kbmira reads the feature and score files Moses's
``extractor`` writes from that list; pbmt reads the list itself
(``pbmt.tune.pool.read_pool``). Each weight vector is scored on pbmt's pool
(corpus BLEU of the 1-best, as sacrebleu with ``tokenize='none'``), and
kbmira's own report (Moses's BLEU over the hypotheses it kept) is printed
beside it. Times: wall and CPU seconds of kbmira's process, and of pbmt's
``Mira.fit`` (the n-best list already pooled; the first fit of a fresh
checkout also compiles the kernels, reported apart), for each seed; the load
average before and after.

``--decode N``: what the first seed's answers decode to, the step the tuning
loop takes after its first decode (the list is of the untuned weights): the
first N dev sentences translated by pbmt (one thread) under the untuned
weights, kbmira's and pbmt's answers, and each answer taken part of the way
(``--interpolations``: Psi l1(answer) + (1 - Psi) l1(untuned), as
``Mira(interpolation=Psi)`` returns it), BLEU as sacrebleu with
``tokenize='none'`` and the output's length against the references'.

    python benchmarks/bench_mira.py [--seeds 1,2,3] [--sentences N] [--json FILE]
        [--decode N] [--interpolations 0.1,0.3,0.5]
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import resource
import subprocess
import tempfile
import time
from pathlib import Path

import sys

import numpy as np
import sacrebleu

from pbmt.base.config import MosesConfig
from pbmt.base.files import atomic_write
from pbmt.tune.loop import tuned_config, weight_line
from pbmt.tune.mira import Mira
from pbmt.tune.pool import References, read_pool
from pbmt.tune.tuner import TuningData, toward

SHARED = Path(__file__).resolve().parent.parent.parent / "shared"
DATA = SHARED / "data" / "bible-es-en"
MOSES = SHARED / "tools" / "moses" / "bin"


def first_sentences(nbest: Path, sentences: int | None, folder: Path) -> Path:
    """The n-best list cut to its first ``sentences`` sentences (all: the list itself)."""
    if sentences is None:
        return nbest
    cut = folder / "nbest"
    with gzip.open(nbest, "rt", encoding="utf-8") as source, open(cut, "w", encoding="utf-8") as out:
        for line in source:
            if int(line.split(" ||| ", 1)[0]) >= sentences:
                break
            out.write(line)
    return cut


def decoded(weights: dict[str, np.ndarray], pool, n: int, folder: Path) -> list[dict]:
    """Each named weight vector (the pool's column order) decoding the first ``n`` dev sentences: BLEU and the
    output's length over the references'."""
    config = MosesConfig.read(DATA / "model" / "moses.ini")
    source = folder / "dev.src"
    source.write_text("\n".join((DATA / "dev.tok.es").read_text(encoding="utf-8").splitlines()[:n]) + "\n")
    references = (DATA / "dev.tok.en").read_text(encoding="utf-8").splitlines()[:n]
    rows = []
    for name, vector in weights.items():
        ini, out = folder / f"{name}.ini", folder / f"{name}.out"
        tuned_config(config, pool.layout, vector).write(ini)
        subprocess.run([sys.executable, "-m", "pbmt", "translate", "-q", "-f", ini, "--tokenized", "-i", source,
                        "-o", out, "--threads", "1"], check=True)
        score = sacrebleu.corpus_bleu(out.read_text(encoding="utf-8").splitlines(), [references], tokenize="none",
                                      force=True)
        rows.append({"weights": name, "bleu": score.score, "length_ratio": score.sys_len / score.ref_len,
                     "pool_bleu": 100 * pool.bleu(vector)})
        print(f"  {name:<16} dev[:{n}] BLEU {score.score:5.2f}, length {score.sys_len / score.ref_len:.3f} of the "
              f"references'; pool BLEU {100 * pool.bleu(vector):.2f}; {weight_line(pool.layout, vector)}", flush=True)
    return rows


def child_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", default="1,2,3", help="seeds of both tuners' generators, comma-separated")
    parser.add_argument("--sentences", type=int, help="the first N sentences of the list only (default: all)")
    parser.add_argument("--json", type=Path, help="also write the rows to this file")
    parser.add_argument("--decode", type=int, metavar="N",
                        help="also translate the first N dev sentences under the first seed's answers")
    parser.add_argument("--interpolations", default="0.1,0.3,0.5",
                        help="with --decode: each answer also taken these parts of the way (Psi, comma-separated)")
    args = parser.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")]
    decodes = []
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="bench-mira-") as work:
        folder = Path(work)
        nbest = first_sentences(DATA / "model" / "dev.moses.nbest100.gz", args.sentences, folder)
        lines = (DATA / "dev.tok.en").read_text(encoding="utf-8").splitlines()[:args.sentences]
        (folder / "refs").write_text("\n".join(lines) + "\n", encoding="utf-8")
        started = time.perf_counter()
        subprocess.run([MOSES / "extractor", "--sctype", "BLEU", "-r", folder / "refs", "-n", nbest, "-S",
                        folder / "scores.dat", "-F", folder / "features.dat"], check=True, capture_output=True)
        extract_seconds = time.perf_counter() - started
        started = time.perf_counter()
        pool = read_pool(nbest, References(lines))
        pool_seconds = time.perf_counter() - started
        start = pool.layout.weights(MosesConfig.read(DATA / "model" / "moses.ini"))
        (folder / "init.opt").write_text(" ".join(format(w, ".9g") for w in start) + "\n")
        print(f"{pool.n_sentences} sentences, {pool.n_candidates} candidates; extractor {extract_seconds:.1f} s, "
              f"pbmt read_pool {pool_seconds:.1f} s; untuned pool BLEU {100 * pool.bleu(start):.2f}; "
              f"load before {load_before[0]:.2f}")
        started = time.perf_counter()
        Mira(epochs=1).fit(TuningData(pool=pool), start, np.random.default_rng(0))
        print(f"pbmt MIRA first fit of one pass (kernel compile or cache load): {time.perf_counter() - started:.1f} s")
        rows = []
        for seed in seeds:
            cpu, started = child_cpu(), time.perf_counter()
            run = subprocess.run([MOSES / "kbmira", "-d", folder / "init.opt", "-S", folder / "scores.dat", "-F",
                                  folder / "features.dat", "-r", str(seed), "-o", folder / "kbmira.out"],
                                 check=True, capture_output=True, text=True)
            kb_wall, kb_cpu = time.perf_counter() - started, child_cpu() - cpu
            kbmira = np.array([float(line.split()[1]) for line in (folder / "kbmira.out").read_text().splitlines()])
            reported = float(run.stderr.strip().splitlines()[-1].split("=")[-1])
            cpu, started = time.process_time(), time.perf_counter()
            mira = Mira(interpolation=1.0).fit(TuningData(pool=pool), start, np.random.default_rng(seed))
            wall, used = time.perf_counter() - started, time.process_time() - cpu
            row = {"seed": seed, "kbmira_pool_bleu": 100 * pool.bleu(kbmira), "kbmira_reported_bleu": 100 * reported,
                   "kbmira_wall_s": kb_wall, "kbmira_cpu_s": kb_cpu, "mira_pool_bleu": 100 * mira.score_,
                   "mira_kept_pass": mira.kept_epoch_, "mira_wall_s": wall, "mira_cpu_s": used}
            rows.append(row)
            print(f"seed {seed}: pool BLEU kbmira {row['kbmira_pool_bleu']:.2f} (its own report "
                  f"{row['kbmira_reported_bleu']:.2f}), pbmt {row['mira_pool_bleu']:.2f} (pass {mira.kept_epoch_}); "
                  f"wall s kbmira {kb_wall:.1f}, pbmt {wall:.1f}; CPU s kbmira {kb_cpu:.1f}, pbmt {used:.1f}; "
                  f"CPU ratio pbmt / kbmira {used / kb_cpu:.2f}")
            if args.decode and seed == seeds[0]:
                answers = {"untuned": start, "kbmira": kbmira, "pbmt": mira.weights_}
                norm = np.abs(start).sum()
                for psi in (float(p) for p in args.interpolations.split(",")):
                    for name in ("kbmira", "pbmt"):
                        answers[f"{name}-psi{psi:g}"] = norm * toward(answers[name], start, psi)
                print(f"seed {seed}: the answers decoding dev[:{args.decode}]")
                decodes = decoded(answers, pool, args.decode, folder)
    load_after = os.getloadavg()
    print(f"load after {load_after[0]:.2f}")
    if args.json:
        with atomic_write(args.json) as handle:
            json.dump({"rows": rows, "decodes": decodes, "load_before": load_before, "load_after": load_after,
                       "sentences": pool.n_sentences, "candidates": pool.n_candidates}, handle, indent=1)


if __name__ == "__main__":
    main()
