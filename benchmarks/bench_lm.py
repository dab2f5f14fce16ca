"""Claim: pbmt's batch LM scoring is >= 3x the kenlm module's per-sentence throughput,
and a cached load of lm5 takes well under 1 s.

Data: ``lm5.arpa.gz`` (5-gram, 1.7 M n-grams) of the shared Bible corpus and
the sentences of ``dev.tok.en`` + ``test.tok.en`` (2,037 sentences, 62 k words;
tokens/s count </s> too). Each measurement runs in a fresh process so that its
peak resident memory (Linux VmHWM) is its own:

- pbmt cold load (an empty ``PBMT_CACHE_DIR``: parse the ARPA file, write the
  cache) and cached load (memory-map it), numba kernels already compiled;
- numba compile time: loading a tiny ARPA file and scoring through every
  kernel with an empty ``NUMBA_CACHE_DIR`` (cold), then again (cached);
- scoring: ``NgramLM.score_sentences`` over the corpus as id arrays (one
  kernel call), and the same including the words -> ids mapping; kenlm's
  ``Model.score`` and ``list(Model.full_scores)`` called per sentence from
  Python, on the same model loaded from the same ARPA file.

Times are the best of --repeats runs (wall clock).

    python benchmarks/bench_lm.py [--data DIR] [--lm lm5.arpa.gz] [--repeats 10] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pbmt.base.files import atomic_write

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "bible-es-en"
TINY_ARPA = """\\data\\
ngram 1=4
ngram 2=2

\\1-grams:
-1.0\t<unk>\t0
-99\t<s>\t-0.5
-1.2\t</s>\t0
-0.8\ta\t-0.3

\\2-grams:
-0.4\t<s> a
-0.3\ta </s>

\\end\\
"""


def peak_rss_mb() -> float:
    """Peak resident memory of this process, in MB (VmHWM: unlike getrusage's
    ru_maxrss it does not carry over the parent's peak into a child)."""
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM in /proc/self/status")


def best_time(function, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        best = min(best, time.perf_counter() - start)
    return best


def corpus(data: Path) -> list[str]:
    lines = []
    for name in ("dev.tok.en", "test.tok.en"):
        lines += (data / name).read_text(encoding="utf-8").splitlines()
    return lines


def child_load(lm_path: Path) -> dict:
    from pbmt.model.lm import NgramLM
    from pbmt.base.vocab import Vocab

    start = time.perf_counter()
    lm = NgramLM.load(lm_path, Vocab())
    return {"seconds": time.perf_counter() - start, "from_cache": lm.from_cache}


def child_compile(folder: Path) -> dict:
    start = time.perf_counter()
    import numpy as np

    from pbmt.model.lm import NgramLM
    from pbmt.base.vocab import Vocab

    imported = time.perf_counter()
    path = Path(tempfile.mkdtemp(dir=folder)) / "tiny.arpa"  # a fresh file: no pbmt cache
    path.write_text(TINY_ARPA, encoding="utf-8")
    vocab = Vocab()
    lm = NgramLM.load(path, vocab)
    ids = vocab.ids(["a", "a"])
    lm.score(lm.begin_state, int(ids[0]))
    lm.score_tokens(ids)
    lm.score_sentences(np.array([0, 2]), ids)
    return {"import_seconds": imported - start, "seconds": time.perf_counter() - imported}


def child_pbmt(lm_path: Path, data: Path, repeats: int) -> dict:
    import numpy as np

    from pbmt.model.lm import NgramLM
    from pbmt.base.vocab import Vocab

    lines = corpus(data)
    vocab = Vocab()
    lm = NgramLM.load(lm_path, vocab)

    def to_ids():
        sentences = [vocab.ids(line.split()) for line in lines]
        offsets = np.zeros(len(sentences) + 1, dtype=np.int64)
        offsets[1:] = np.cumsum([len(s) for s in sentences])
        return offsets, np.concatenate(sentences)

    offsets, words = to_ids()
    lm.score_sentences(offsets, words)
    batch = best_time(lambda: lm.score_sentences(offsets, words), repeats)
    with_ids = best_time(lambda: lm.score_sentences(*to_ids()), repeats)
    per_sentence = best_time(
        lambda: [lm.score_tokens(words[a:b]) for a, b in zip(offsets[:-1], offsets[1:])],
        repeats,
    )
    return {
        "tokens": int(words.size + len(lines)),
        "batch_seconds": batch,
        "batch_with_ids_seconds": with_ids,
        "score_tokens_per_sentence_seconds": per_sentence,
        "from_cache": lm.from_cache,
    }


def child_kenlm(lm_path: Path, data: Path, repeats: int) -> dict:
    import kenlm

    lines = corpus(data)
    start = time.perf_counter()
    model = kenlm.Model(str(lm_path))
    load = time.perf_counter() - start
    score = best_time(lambda: [model.score(line) for line in lines], repeats)
    full = best_time(lambda: [list(model.full_scores(line)) for line in lines], repeats)
    return {"load_seconds": load, "score_seconds": score, "full_scores_seconds": full}


def run_child(mode: str, args: argparse.Namespace, env: dict | None = None) -> dict:
    command = [sys.executable, __file__, "--child", mode, "--data", str(args.data)]
    command += ["--lm", args.lm, "--repeats", str(args.repeats)]
    done = subprocess.run(
        command,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"child {mode} failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DATA, help="shared Bible data folder")
    parser.add_argument("--lm", default="lm5.arpa.gz", help="ARPA file in --data")
    parser.add_argument("--repeats", type=int, default=10, help="runs per timing; best kept")
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    lm_path = args.data / args.lm

    if args.child:
        if args.child == "load":
            result = child_load(lm_path)
        elif args.child == "compile":
            result = child_compile(Path(os.environ["BENCH_LM_TMP"]))
        elif args.child == "pbmt":
            result = child_pbmt(lm_path, args.data, args.repeats)
        else:
            result = child_kenlm(lm_path, args.data, args.repeats)
        result["peak_rss_mb"] = peak_rss_mb()
        print(json.dumps(result))
        return

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        compile_env = {"NUMBA_CACHE_DIR": str(tmp / "numba"), "BENCH_LM_TMP": str(tmp)}
        compile_cold = run_child("compile", args, compile_env)
        compile_cached = run_child("compile", args, compile_env)
        run_child("compile", args, {"BENCH_LM_TMP": str(tmp)})  # warm the default numba cache
        cache_env = {"PBMT_CACHE_DIR": str(tmp / "pbmt-cache")}
        cold = run_child("load", args, cache_env)
        cached = run_child("load", args, cache_env)
        pbmt = run_child("pbmt", args, cache_env)
    ken = run_child("kenlm", args)
    assert not cold["from_cache"] and cached["from_cache"] and pbmt["from_cache"]

    tokens = pbmt["tokens"]
    rate = {
        "pbmt score_sentences (ids)": tokens / pbmt["batch_seconds"],
        "pbmt score_sentences (words -> ids included)": tokens / pbmt["batch_with_ids_seconds"],
        "pbmt score_tokens per sentence": tokens / pbmt["score_tokens_per_sentence_seconds"],
        "kenlm Model.score per sentence": tokens / ken["score_seconds"],
        "kenlm full_scores per sentence": tokens / ken["full_scores_seconds"],
    }
    kenlm_rate = rate["kenlm Model.score per sentence"]
    results = {
        "lm": str(lm_path),
        "tokens": tokens,
        "tokens_per_second": rate,
        "speedup_vs_kenlm_score": {name: r / kenlm_rate for name, r in rate.items()},
        "load_seconds": {
            "pbmt cold (parse + write cache)": cold["seconds"],
            "pbmt cached (memory map)": cached["seconds"],
            "kenlm (ARPA)": ken["load_seconds"],
        },
        "numba_compile_seconds": {
            "cold (empty cache)": compile_cold["seconds"],
            "cached": compile_cached["seconds"],
            "import pbmt.model.lm (cached)": compile_cached["import_seconds"],
        },
        "peak_rss_mb": {
            "pbmt cold load": cold["peak_rss_mb"],
            "pbmt cached load": cached["peak_rss_mb"],
            "pbmt cached load + scoring": pbmt["peak_rss_mb"],
            "kenlm load + scoring": ken["peak_rss_mb"],
        },
    }

    print(f"{lm_path.name}: {tokens:,} tokens (dev + test, </s> included), best of {args.repeats}")
    print(f"{'scoring':<48} {'tokens/s':>12} {'x kenlm.score':>14}")
    for name, r in rate.items():
        print(f"{name:<48} {r:>12,.0f} {r / kenlm_rate:>14.2f}")
    for title, table, unit in (
        ("load", results["load_seconds"], "s"),
        ("numba compile", results["numba_compile_seconds"], "s"),
        ("peak memory", results["peak_rss_mb"], "MB"),
    ):
        print(f"\n{title:<48} {unit:>12}")
        for name, value in table.items():
            print(f"{name:<48} {value:>12.3f}" if unit == "s" else f"{name:<48} {value:>12.0f}")
    if args.json:
        with atomic_write(args.json) as handle:
            handle.write(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
