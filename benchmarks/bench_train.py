"""Claim: pbmt trains Moses's translation model (grow-diag-final-and, phrase
extraction, scoring, msd-bidirectional-fe reordering) on the full Bible
training split in well under the 10 minutes allowed (2x Moses's ~5 min on
2 cores), with peak memory under 4 GB.

Data: ``train.tok.es``/``train.tok.en`` (28,169 verse pairs, 0.7 M / 0.83 M
tokens) and ``train.align.fwd``/``.rev`` of the shared Bible corpus. Stages,
each timed (wall clock) in this one process after a warm-up on a tiny corpus
(so numba kernels are loaded from their cache, not compiled):

- read: the two corpora and the two directed alignments;
- symmetrize: grow-diag-final-and;
- extract: phrase pairs up to 7 words with counts, alignment choice and
  orientation counts (3,183,114 distinct pairs);
- lexicon: the word translation tables (lex.e2f, lex.f2e);
- score: φ(f|e), lex(f|e), φ(e|f), lex(e|f) and the reordering probabilities;
- reordering: the reordering probabilities alone (part of score; the
  orientation counting is part of extract);
- write: phrase-table.gz, reordering-table.gz, lex.e2f, lex.f2e;
- align (only with --align): eflomal in both directions on the same corpus,
  with the share of the shared fwd/rev links it reproduces (eflomal has no
  seed, so this varies a little); the stages above use the shared files.

Peak memory is the process's peak resident set (Linux VmHWM), reset before
each stage through /proc/self/clear_refs where the kernel allows it (else it
is the peak so far).

    python benchmarks/bench_train.py [--data DIR] [--out DIR] [--align] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import numpy as np

from pbmt.files import atomic_write
from pbmt.train.corpus import alignment_from_points, corpus_from_lines, read_alignment, read_corpus
from pbmt.train.extract import extract_phrase_pairs
from pbmt.train.score import (
    reordering_probabilities,
    score_phrase_pairs,
    word_translation,
    write_phrase_table,
    write_reordering_table,
    write_word_translation,
)
from pbmt.train.symmetrize import symmetrize

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "bible-es-en"


def _peak_rss_mb() -> float:
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def _reset_peak() -> bool:
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as handle:
            handle.write("5")
        return True
    except OSError:
        return False


def _links(alignment) -> set[tuple[int, int, int]]:
    sentence = np.repeat(np.arange(len(alignment)), np.diff(alignment.offsets))
    return set(zip(sentence.tolist(), alignment.src.tolist(), alignment.tgt.tolist()))


def _warm_up(out: Path) -> None:
    src = corpus_from_lines([["a", "b", "c"], ["b", "a"]])
    tgt = corpus_from_lines([["x", "y"], ["y", "x", "z"]])
    fwd = alignment_from_points([[(0, 0), (1, 1)], [(1, 0), (0, 1)]])
    rev = alignment_from_points([[(0, 0), (2, 1)], [(1, 0), (0, 2)]])
    gdfa = symmetrize(fwd, rev, src.lengths, tgt.lengths)
    table = score_phrase_pairs(extract_phrase_pairs(src, tgt, gdfa), word_translation(src, tgt, gdfa))
    write_phrase_table(out / "warm-up.gz", table)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DATA, help="folder of the shared Bible data")
    parser.add_argument("--out", type=Path, help="folder for the written tables (default: a temporary one)")
    parser.add_argument("--align", action="store_true", help="also time eflomal word alignment")
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        out = args.out or Path(tmp)
        out.mkdir(parents=True, exist_ok=True)
        _warm_up(out)
        rows = []
        resettable = True

        def stage(name, fn):
            nonlocal resettable
            resettable = _reset_peak() and resettable
            start = time.perf_counter()
            result = fn()
            rows.append({"stage": name, "seconds": time.perf_counter() - start, "peak_rss_mb": _peak_rss_mb()})
            print(f"{name:<12} {rows[-1]['seconds']:8.1f} s {rows[-1]['peak_rss_mb']:9.0f} MB", flush=True)
            return result

        def read():
            src = read_corpus(args.data / "train.tok.es")
            tgt = read_corpus(args.data / "train.tok.en")
            fwd = read_alignment(args.data / "train.align.fwd", src, tgt)
            rev = read_alignment(args.data / "train.align.rev", src, tgt)
            return src, tgt, fwd, rev

        print(f"{'stage':<12} {'time':>10} {'peak RSS':>12}")
        src, tgt, fwd, rev = stage("read", read)
        gdfa = stage("symmetrize", lambda: symmetrize(fwd, rev, src.lengths, tgt.lengths))
        pairs = stage("extract", lambda: extract_phrase_pairs(src, tgt, gdfa, max_length=7))
        lexicon = stage("lexicon", lambda: word_translation(src, tgt, gdfa))
        table = stage("score", lambda: score_phrase_pairs(pairs, lexicon))
        stage("reordering", lambda: reordering_probabilities(pairs.orientation))

        def write():
            write_phrase_table(out / "phrase-table.gz", table)
            write_reordering_table(out / "reordering-table.gz", table)
            write_word_translation(out / "lex.e2f", out / "lex.f2e", lexicon)

        stage("write", write)
        agreement = {}
        if args.align:
            from pbmt.train.align import eflomal_align

            ours = stage("align", lambda: eflomal_align(src, tgt))
            for name, mine, shared in zip(("fwd", "rev"), ours, (fwd, rev)):
                agreement[name] = len(_links(mine) & _links(shared)) / len(_links(shared))
                print(f"eflomal {name}: {agreement[name]:.1%} of the shared file's links")
        training = sum(r["seconds"] for r in rows if r["stage"] not in ("read", "reordering", "align"))
        print(f"{'total':<12} {training:8.1f} s {max(r['peak_rss_mb'] for r in rows):9.0f} MB"
              f"  (symmetrize to written tables; {len(pairs):,} phrase pairs)")
        if not resettable:
            print("note: peak RSS could not be reset between stages; each figure is the peak so far")
        result = {
            "stages": rows,
            "total_seconds": training,
            "phrase_pairs": len(pairs),
            "peak_rss_mb": max(r["peak_rss_mb"] for r in rows),
            "peak_reset_per_stage": resettable,
            "eflomal_link_agreement": agreement,
        }
        if args.json:
            with atomic_write(args.json) as handle:
                json.dump(result, handle, indent=2)
                handle.write("\n")


if __name__ == "__main__":
    main()
