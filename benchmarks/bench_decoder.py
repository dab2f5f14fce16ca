"""Claim: pbmt decodes at least 2x as fast as Moses2 with cube pruning, and its stack search at least 1.5x
Moses2's, at the same BLEU and model score.

Setting: the shared Moses model (``model/moses.ini``: 3-gram LM, msd-bidirectional-fe reordering, stack 200,
beam threshold 1e-5, table limit 20, distortion limit 6, pop limit 1000) on the dev set (1,031 sentences,
29,443 source words). Every decoder runs as a whole process on the same input, one after the other in this
one run, so the ratios hold on a machine whose speed drifts: pbmt (``pbmt translate --threads``; as
``pbmt-workers``, one thread in each of ``--workers`` processes), Moses2 (``--threads``) and Moses 1
(``-threads``) from ``../shared/tools/moses/bin`` (skipped with a note where that folder is absent). Each row is one configuration: search algorithm (stack or cube
pruning), n-best size (1 or 100) and threads (1 or 2).

pbmt's modules are compiled to bytecode first, as an installed package has them.

Reported per decoder: wall seconds (model loading included), source words/s, peak RSS of the process
(the largest of its processes), BLEU (sacrebleu, ``tokenize='none'``, on ``dev.tok.en``), and, where both
wrote n-best lists, the share of sentences where pbmt's best model score is at least Moses2's (to the 6
significant digits Moses prints). Also pbmt's start-up: numba compilation with an empty cache (cold) and the
whole ``pbmt translate`` of one sentence with a warm one (cached).

    python benchmarks/bench_decoder.py [--sentences 1031] [--searches cube,stack] [--nbest 1,100]
        [--threads 1,2] [--decoders pbmt,pbmt-workers,moses2,moses] [--repeat N] [--json FILE]
        [--record decoder-speed]

``--repeat N`` runs every configuration of a row group N times in turn (A B C A B C ...) and reports medians,
with each ratio (Moses2 against pbmt, pbmt's threads against its fewest) taken run by run: on a drifting
machine this is the figure to quote.

``--record NAME`` writes the pbmt-beside-Moses2 table as the record ``docs/runs/NAME.json``, which
``python docs/generated.py`` renders into the doc's block of that name (``docs/decoding.md``: ``decoder-speed``).
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import sacrebleu

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "docs"))
from generated import write_table  # noqa: E402  (docs/generated.py: the docs' records of measured tables)

SHARED = ROOT.parent / "shared"
PBMT = [sys.executable, "-m", "pbmt"]


def run(command: list[str], stdin: Path | None, stdout: Path, cwd: Path | None = None, env=None) -> dict:
    """Run ``command`` to completion: wall seconds, and CPU seconds and peak RSS (MB) from the kernel's
    accounting of the finished process and its children."""
    with open(stdin or os.devnull, "rb") as source, open(stdout, "wb") as sink, tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        process = subprocess.Popen(command, stdin=source, stdout=sink, stderr=err, cwd=cwd,
                                   env={**os.environ, **(env or {})})
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - started
        process.returncode = os.waitstatus_to_exitcode(status)
        if process.returncode != 0:
            err.seek(0)
            raise RuntimeError(f"{' '.join(map(str, command))} failed ({process.returncode}):\n"
                               f"{err.read().decode(errors='replace')[-2000:]}")
    return {"wall": wall, "cpu": usage.ru_utime + usage.ru_stime, "peak_mb": usage.ru_maxrss / 1024}


def median_run(measured: list[dict]) -> dict:
    """The median of each figure over repeated runs of one configuration (BLEU is the same in every run)."""
    return {key: statistics.median(m[key] for m in measured) for key in ("wall", "cpu", "peak_mb", "bleu")}


def paired_ratio(slower: list[dict], faster: list[dict]) -> tuple[float, float, float]:
    """Median, lowest and highest of ``slower``'s wall time over ``faster``'s, run by run (the two ran in turn)."""
    ratios = [a["wall"] / b["wall"] for a, b in zip(slower, faster)]
    return statistics.median(ratios), min(ratios), max(ratios)


def best_totals(nbest: Path) -> dict[int, float]:
    """The first (best) entry's total model score of every sentence of a Moses-format n-best list."""
    best = {}
    with open(nbest, encoding="utf-8") as handle:
        for line in handle:
            fields = line.split(" ||| ")
            best.setdefault(int(fields[0]), float(fields[3]))
    return best


def at_least(ours: dict[int, float], theirs: dict[int, float]) -> float:
    """Share of sentences where ``ours`` >= ``theirs`` to Moses's printed precision (6 significant digits)."""
    wins = sum(ours[k] >= theirs[k] - 5e-6 * max(1.0, abs(theirs[k])) for k in theirs if k in ours)
    return wins / len(theirs)


def commands(decoder: str, search: str, n_best: int, threads: int, out: Path, nbest: Path, ini: Path,
             moses_bin: Path):
    """(command, working folder) of one decoder run."""
    if decoder in ("pbmt", "pbmt-workers"):
        command = [*PBMT, "translate", "-q", "--tokenized", "-f", str(ini), "--search", search, "-o", str(out)]
        if n_best > 1:
            command += ["--n-best", str(nbest), "--n-best-size", str(n_best)]
        if decoder == "pbmt":
            command += ["--threads", str(threads)]
        else:
            command += ["--threads", "1", "--workers", str(threads)]
        return command, None
    algorithm = "1" if search == "cube" else "0"
    if decoder == "moses2":
        command = [str(moses_bin / "moses2"), "-f", "moses.ini", "--threads", str(threads),
                   "--search-algorithm", algorithm]
        if n_best > 1:
            command += ["--n-best-list", str(nbest), str(n_best)]
    else:
        command = [str(moses_bin / "moses"), "-f", "moses.ini", "-threads", str(threads), "-search-algorithm",
                   algorithm, "-v", "0"]
        if n_best > 1:
            command += ["-n-best-list", str(nbest), str(n_best)]
    return command, ini.parent


def compile_bytecode() -> None:
    """Write the bytecode of pbmt's modules (``__pycache__``), as Python does at a package's first import and pip
    at a wheel's install: where PYTHONDONTWRITEBYTECODE is set, every timed run would otherwise compile pbmt's
    ~150 modules from source (about 0.25 CPU s of serial start-up per run, which an installed pbmt never pays
    and which caps the speed-up of threads)."""
    compileall.compile_dir(ROOT / "pbmt", quiet=1)


def startup(data: Path, work: Path) -> dict:
    """Seconds of ``pbmt translate`` on one sentence with an empty numba cache, then with the warm one."""
    sentence = work / "one.es"
    sentence.write_text("y dios dijo\n", encoding="utf-8")
    command = [*PBMT, "translate", "-q", "--tokenized", "-f", str(data / "model" / "moses.ini"), "-i", str(sentence)]
    cache = work / "numba-cache"
    cold = run(command, None, work / "one.out", env={"NUMBA_CACHE_DIR": str(cache)})
    cached = run(command, None, work / "one.out", env={"NUMBA_CACHE_DIR": str(cache)})
    return {"cold": cold["wall"], "cached": cached["wall"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shared", type=Path, default=SHARED,
                        help="the shared folder: its Bible data and Moses binaries (default: ../shared beside the repo)")
    parser.add_argument("--data", type=Path, help="the data folder (default: SHARED/data/bible-es-en)")
    parser.add_argument("--sentences", type=int, default=1031, help="first K dev sentences (default: all)")
    parser.add_argument("--searches", default="cube,stack", help="search algorithms to run")
    parser.add_argument("--nbest", default="1,100", help="n-best sizes to run")
    parser.add_argument("--threads", default="1,2", help="threads to run (pbmt-workers: worker processes of one thread each)")
    parser.add_argument("--decoders", default="pbmt,moses2,moses", help="decoders to run")
    parser.add_argument("--repeat", type=int, default=1, metavar="N",
                        help="time every configuration N times, in turn: medians, and ratios taken run by run "
                             "(default 1)")
    parser.add_argument("--no-startup", action="store_true", help="skip the compile and start-up measurement")
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument("--record", metavar="NAME", help="write pbmt's rows beside Moses2's as the doc table "
                        "record docs/runs/NAME.json (docs/generated.py)")
    args = parser.parse_args()
    if args.repeat < 1:
        parser.error(f"--repeat {args.repeat}: give 1 or more")

    data = args.data or args.shared / "data" / "bible-es-en"
    for needed in (data / "model" / "moses.ini", data / "dev.tok.es", data / "dev.tok.en"):
        if not needed.is_file():
            parser.error(f"{needed}: no such file (give --shared or --data)")
    moses_bin = args.shared / "tools" / "moses" / "bin"
    decoders = args.decoders.split(",")
    if not moses_bin.is_dir():
        print(f"note: {moses_bin} is absent: Moses and Moses2 are skipped, pbmt runs alone")
        decoders = [d for d in decoders if d.startswith("pbmt")]
    ini = data / "model" / "moses.ini"
    lines = (data / "dev.tok.es").read_text(encoding="utf-8").splitlines()[:args.sentences]
    refs = (data / "dev.tok.en").read_text(encoding="utf-8").splitlines()[:args.sentences]
    words = sum(len(line.split()) for line in lines)
    results = {"sentences": len(lines), "words": words, "rows": []}
    load = [os.getloadavg()[0]]
    compile_bytecode()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        source = work / "dev.es"
        source.write_text("\n".join(lines) + "\n", encoding="utf-8")
        if not args.no_startup:
            results["startup"] = startup(data, work)
            print(f"pbmt start-up: cold numba compile + one sentence {results['startup']['cold']:.1f} s, "
                  f"cached {results['startup']['cached']:.1f} s")
        one = work / "one.es"
        one.write_text(lines[0] + "\n", encoding="utf-8")
        print(f"{len(lines)} dev sentences, {words} source words; load average before: {os.getloadavg()[0]:.2f}")
        header = f"{'search':<6} {'n-best':>6} {'thr':>3}  {'decoder':<7} {'wall s':>7} {'words/s':>8} " \
                 f"{'peak MB':>8} {'BLEU':>6}  {'ratio':>6}  score >= Moses2"
        print(header)
        thread_counts = [int(t) for t in args.threads.split(",")]
        for search in args.searches.split(","):
            for n_best in (int(k) for k in args.nbest.split(",")):
                runs = {}  # (threads, decoder) -> one measurement per repetition
                for threads in thread_counts:  # untimed: fills the file system's and numba's caches
                    for decoder in decoders:
                        command, cwd = commands(decoder, search, n_best, threads, work / "warm.out",
                                                work / "warm.nbest", ini, moses_bin)
                        run(command, one, work / "warm.out", cwd=cwd)
                for _ in range(args.repeat):  # in turn, so that a drifting machine slows every configuration alike
                    for threads in thread_counts:
                        for decoder in decoders:
                            out, nbest = work / f"{decoder}.out", work / f"{decoder}.nbest"
                            command, cwd = commands(decoder, search, n_best, threads, out, nbest, ini, moses_bin)
                            measured = run(command, source, out, cwd=cwd)
                            hyps = out.read_text(encoding="utf-8").splitlines()
                            measured["bleu"] = sacrebleu.corpus_bleu(hyps, [refs], tokenize="none", force=True).score
                            if n_best > 1:
                                measured["best"] = best_totals(nbest)
                            runs.setdefault((threads, decoder), []).append(measured)
                for threads in thread_counts:
                    row = {"search": search, "n_best": n_best, "threads": threads, "decoders": {}}
                    for decoder in decoders:
                        row["decoders"][decoder] = median_run(runs[threads, decoder])
                        row["decoders"][decoder]["words_per_s"] = words / row["decoders"][decoder]["wall"]
                    if "moses2" in decoders:
                        row["ratios"] = {d: paired_ratio(runs[threads, "moses2"], runs[threads, d]) for d in decoders}
                    if "pbmt" in decoders and threads != thread_counts[0]:
                        row["pbmt_against_fewer_threads"] = paired_ratio(runs[thread_counts[0], "pbmt"],
                                                                         runs[threads, "pbmt"])
                    for decoder, measured in row["decoders"].items():
                        ratio = row["ratios"][decoder][0] if "ratios" in row else float("nan")
                        share = ""
                        if decoder == "pbmt" and "moses2" in decoders and n_best > 1:
                            row["pbmt_score_at_least_moses2"] = at_least(runs[threads, "pbmt"][0]["best"],
                                                                         runs[threads, "moses2"][0]["best"])
                            share = f"{100 * row['pbmt_score_at_least_moses2']:.1f}%"
                        print(f"{search:<6} {n_best:>6} {threads:>3}  {decoder:<7} {measured['wall']:>7.1f} "
                              f"{measured['words_per_s']:>8.0f} {measured['peak_mb']:>8.0f} "
                              f"{measured['bleu']:>6.2f}  {ratio:>6.2f}  {share}", flush=True)
                    if "pbmt_against_fewer_threads" in row:
                        middle, low, high = row["pbmt_against_fewer_threads"]
                        print(f"{'':<22}pbmt on {threads} threads against {thread_counts[0]}: {middle:.2f}x "
                              f"({low:.2f}-{high:.2f} over {args.repeat} pairs)", flush=True)
                    results["rows"].append(row)
    load.append(os.getloadavg()[0])
    print(f"load average after: {load[-1]:.2f}; ratio = Moses2's wall time / the decoder's")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    if args.record:
        notes = [startup_note(results)] + ([f"Medians of {args.repeat} runs of each configuration in turn; the "
                                            f"ratio is taken run by run."] if args.repeat > 1 else [])
        note = " ".join(n for n in notes if n) or None
        print(f"wrote {write_table(args.record, *speed_table(results), load=load, formats=SPEED_FORMATS, note=note)}")


SPEED_FORMATS = {"pbmt wall s": ".1f", "Moses2 wall s": ".1f", "ratio": ".2f"}


def startup_note(results: dict) -> str | None:
    if "startup" not in results:
        return None
    return (f"pbmt's start-up in the same run: numba compilation with an empty cache and one sentence "
            f"{results['startup']['cold']:.1f} s, with the cache {results['startup']['cached']:.1f} s.")


def speed_table(results: dict) -> tuple[list[str], list[list]]:
    """The columns and rows of docs/decoding.md's table: pbmt beside Moses2 in each configuration run."""
    columns = ["search", "n-best", "threads", "pbmt wall s", "Moses2 wall s", "ratio", "BLEU pbmt / Moses2",
               "score ≥ Moses2", "peak MB pbmt / Moses2"]
    rows = []
    for row in results["rows"]:
        pbmt, moses2 = row["decoders"]["pbmt"], row["decoders"].get("moses2")
        share = row.get("pbmt_score_at_least_moses2")
        rows.append([row["search"], row["n_best"], row["threads"], round(pbmt["wall"], 1),
                     round(moses2["wall"], 1) if moses2 else None,
                     round(row["ratios"]["pbmt"][0], 2) if moses2 else None,
                     f"{pbmt['bleu']:.2f} / {moses2['bleu']:.2f}" if moses2 else f"{pbmt['bleu']:.2f}",
                     f"{100 * share:.1f}%" if share is not None else None,
                     f"{pbmt['peak_mb']:.0f} / {moses2['peak_mb']:.0f}" if moses2 else f"{pbmt['peak_mb']:.0f}"])
    return columns, rows


if __name__ == "__main__":
    main()
