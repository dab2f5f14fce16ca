"""Claim: what each sparse family buys inside a tuned model with several, on test.

Setting: a folder ``pbmt tune`` wrote with sparse features (say a ``pro-all``
cell of ``benchmarks/bench_tune.py``: dense weights in ``moses.ini``, the sparse
ones in ``sparse-weights.txt`` beside its ``pbmt.toml``). The test set (all of
``test.tok.es`` unless --test-sentences) is translated (1-best, tokenised)
under the tuned weights, then under the same weights with one family's sparse
weights removed (weight 0: its features still fire, they just score nothing),
one family at a time, then with every sparse weight removed (the tuned dense
weights alone). The families are the bench's: ``boundary`` (target word-class
bigrams across phrase boundaries, ``pb_``), ``phrase-pairs`` (``blk:``),
``lexicon`` (source-word/target-word pairs, ``w:``), ``length`` (``len:``) and
``distortion`` (the bins of jumps, ``db_``).

Printed, a row each: the weights decoded, how many sparse weights are non-zero,
test BLEU (sacrebleu, ``tokenize='none'``), its difference from the full
weights' and the share of 1,000 paired bootstrap resamples of the test
sentences (Koehn 2004) in which the full weights win; the output's length
against the references' and BLEU before the brevity penalty (the geometric
mean of the n-gram precisions): which of the two a difference comes from. A family whose removal
costs BLEU bought it; a removal that costs nothing says the family's weights
change no 1-best on test, or change as many for the worse as for the better.

    python benchmarks/bench_sparse_ablation.py --tuned RUNS/pro-all-seed1 --out ablation
        [--families boundary,lexicon] [--test-sentences N] [--workers 1] [--record NAME]

--pool: decode nothing; instead, from the tuned folder's ``checkpoint.npz``
(the pool of all its decodes), per family: the sparse features the pool
holds, the median number of dev sentences one occurs in (in any candidate),
and the same for those with a non-zero tuned weight, the share of those seen
in at most two sentences and the sum of their weights' sizes: how much of
what the tuner kept it saw often enough to generalise.

Each decode is kept in --out (``without-FAMILY/test.out``) and not redone when
a run is repeated with the same --out (--no-decode: only those already there).
"""

from __future__ import annotations

import argparse
import importlib.util
import shutil
import statistics
import sys
from pathlib import Path

import numpy as np

from pbmt.base.files import atomic_write
from pbmt.metrics.bleu import HYP_LEN, REF_LEN, brevity_penalty, paired_bootstrap, segment_stats
from pbmt.model import distortion_bins
from pbmt.model.sparse import BOUNDARY_PREFIX, weight_name
from pbmt.tune.pool import Pool

HERE = Path(__file__).resolve().parent


def _bench_tune():
    spec = importlib.util.spec_from_file_location("bench_tune", HERE / "bench_tune.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


bench_tune = _bench_tune()
# a sparse feature's family, by the prefix of its name
PREFIXES = {"boundary": BOUNDARY_PREFIX, "phrase-pairs": "blk:", "lexicon": "w:", "length": "len:",
            "distortion": distortion_bins.PREFIX}


def family(name: str) -> str:
    found = [f for f, prefix in PREFIXES.items() if name.startswith(prefix)]
    if not found:
        sys.exit(f"a sparse weight named {name!r} is of no family this bench knows ({', '.join(PREFIXES)})")
    return found[0]


def read_weights(path: Path) -> list[tuple[str, str]]:
    """The (name, line) of every weight of a sparse-weights file, comments left out."""
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            rows.append((line.split()[0], line))
    return rows


def ablated_folder(tuned: Path, folder: Path, weights: list[tuple[str, str]], without: set[str]) -> Path:
    """A copy of the tuned folder's model files in ``folder``, its sparse weights those not of ``without``."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in ("moses.ini", "pbmt.toml", "word-classes.txt"):
        if (tuned / name).is_file():
            shutil.copyfile(tuned / name, folder / name)
    with atomic_write(folder / "sparse-weights.txt") as handle:
        handle.write("# sparse feature weights (pbmt): name value\n")
        handle.writelines(line + "\n" for name, line in weights if family(name) not in without)
    return folder / "moses.ini"


def dev_sentence_counts(tuned: Path, weights: list[tuple[str, str]]) -> list[list]:
    """A row per family (``--pool``): features in the pool, the median dev sentences they occur in, the kept
    ones (non-zero weight), their median, the share of them in at most two sentences, their sum of |w|."""
    with np.load(tuned / "checkpoint.npz") as arrays:
        pool = Pool.from_arrays(arrays)
    if pool.sparse is None:
        sys.exit(f"{tuned / 'checkpoint.npz'}: its pool holds no sparse feature")
    sentences = pool.sparse_sentence_counts()
    names = [weight_name(n) for n in pool.sparse_names]
    column = {n: k for k, n in enumerate(names)}
    kept = {name: abs(float(line.split()[1])) for name, line in weights}
    rows = []
    for family_name in PREFIXES:
        seen = np.array([sentences[k] for k, n in enumerate(names) if family(n) == family_name], dtype=np.int64)
        mine = [n for n in kept if family(n) == family_name and n in column]
        counts = np.array([sentences[column[n]] for n in mine], dtype=np.int64)
        if not len(seen):
            continue
        rows.append([family_name, len(seen), float(np.median(seen)), len(mine),
                     float(np.median(counts)) if len(mine) else None,
                     f"{100 * np.mean(counts <= 2):.1f}%" if len(mine) else None,
                     round(sum(kept[n] for n in mine), 1)])
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tuned", type=Path, required=True, help="a folder pbmt tune wrote, with sparse weights")
    parser.add_argument("--out", type=Path, help="the decodes' folders (needed but with --pool)")
    parser.add_argument("--families", help="comma-separated, of: " + ", ".join(PREFIXES) + " (default: those "
                        "with a non-zero weight in --tuned)")
    parser.add_argument("--data", type=Path, default=bench_tune.DATA)
    parser.add_argument("--test-sentences", type=int, help="the first N test sentences (default: all)")
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--pool", action="store_true", help="decode nothing: how often the tuned folder's pool "
                        "(checkpoint.npz) sees each family's features, and those kept")
    parser.add_argument("--no-decode", action="store_true", help="decode nothing: report (and --record) the "
                        "rows --out already holds")
    parser.add_argument("--record", metavar="NAME", help="write the table as docs/runs/NAME.json")
    parser.add_argument("--record-note", metavar="TEXT", help="a sentence under the recorded table")
    args = parser.parse_args()
    weights_file = args.tuned / "sparse-weights.txt"
    for needed in (args.tuned / "moses.ini", weights_file, args.data / "test.tok.es", args.data / "test.tok.en"):
        if not needed.is_file():
            parser.error(f"{needed} does not exist")
    weights = read_weights(weights_file)
    present = sorted({family(name) for name, _ in weights}, key=list(PREFIXES).index)
    families = args.families.split(",") if args.families else present
    unknown = [f for f in families if f not in PREFIXES]
    if unknown:
        parser.error(f"unknown famil{'y' if len(unknown) == 1 else 'ies'} {', '.join(unknown)}; known: "
                     f"{', '.join(PREFIXES)}")
    if args.pool:
        rows = dev_sentence_counts(args.tuned, weights)
        columns = ["family", "features in the pool", "median dev sentences (all)", "kept",
                   "median dev sentences (kept)", "kept, seen in at most 2 sentences", "kept weights' L1 norm"]
        for row in rows:
            print("  ".join("" if v is None else str(v) for v in row))
        if args.record:
            sys.path.insert(0, str(HERE.parent / "docs"))
            from generated import write_table

            formats = {columns[-1]: ".1f"}
            print(f"wrote {write_table(args.record, columns, rows, load=None, formats=formats, note=args.record_note, command=bench_tune.record_command())}")
        return
    if args.out is None:
        parser.error("--out is needed (the decodes' folders)")
    if args.no_decode and not (args.out / "all" / "test.out").is_file():
        parser.error(f"--no-decode: {args.out / 'all' / 'test.out'}, the full weights' decode, does not exist")
    # the bench's decode of test, its sentences and references (bench_tune.Bench, without its cells)
    bench = bench_tune.Bench(argparse.Namespace(data=args.data, out=args.out, sentences=None,
                                                test_sentences=args.test_sentences, workers=args.workers))
    runs = [("all", set()), *((f"without {f}", {f}) for f in families), ("dense alone", set(PREFIXES))]
    refs = [[r] for r in bench.test_refs]
    rows, loads, full = [], [], None
    for label, without in runs:
        folder = args.out / label.replace(" ", "-")
        if not (folder / "test.out").exists():
            if args.no_decode:
                continue
            with bench_tune.LoadSampler() as load:
                bench.test_bleu(folder, ablated_folder(args.tuned, folder, weights, without))
            loads += load.samples
        output = bench_tune.lines(folder / "test.out", None)
        stats, score = segment_stats(output, refs), bench_tune.bleu(output, bench.test_refs)
        total = stats.sum(axis=0)
        ratio, precision = total[HYP_LEN] / total[REF_LEN], score / float(brevity_penalty(total))
        kept = sum(1 for name, _ in weights if family(name) not in without)
        if full is None:
            full, full_stats, against = score, stats, None
        else:
            won = paired_bootstrap(stats, full_stats, np.random.default_rng(1))
            against = f"{score - full:+.2f}, all better in {100 * won:.1f}%"
        rows.append([label, kept, round(score, 2), against, round(ratio, 3), round(precision, 2)])
        print(f"{label:<24} {kept:>6} sparse weights  test {score:6.2f}  length {ratio:.3f}  before the brevity "
              f"penalty {precision:6.2f}" + (f"  {against}" if against else ""), flush=True)
    if loads:
        print(f"load average {statistics.mean(loads):.1f} (1 minute, sampled every 30 s while decoding)")
    if args.record:
        sys.path.insert(0, str(HERE.parent / "docs"))
        from generated import write_table

        columns = ["weights", "sparse weights", "test BLEU", "against all (paired bootstrap)",
                   "output / reference length", "BLEU before the brevity penalty"]
        formats = {"test BLEU": ".2f", "output / reference length": ".3f", "BLEU before the brevity penalty": ".2f"}
        print(f"wrote {write_table(args.record, columns, rows, load=loads, formats=formats, note=args.record_note, command=bench_tune.record_command())}")


if __name__ == "__main__":
    main()
