"""Claim: BLEU statistics of ~100,000 n-best hypotheses take well under a second.

Data: Moses's 100-best list for the 1,031 dev sentences (``model/dev.moses.nbest100.gz``,
103,100 entries, the hypothesis is the second ``|||`` field) against ``dev.tok.en``.
Measures pbmt's statistics on ids (references compiled once per sentence), the
string path (including whitespace splitting and mapping words to ids), scoring
10,000 summed statistic vectors at once, and the same work in sacrebleu:
``sentence_bleu`` per hypothesis on a random subset (extrapolated to the full
list, as marked), ``corpus_bleu`` over the whole list, and ``BLEU.compute_bleu``
per summed vector. Times are the best of --repeats runs (seconds, wall clock).

    python benchmarks/bench_bleu.py [--data DIR] [--subset 10000] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import sacrebleu
from sacrebleu.metrics.bleu import BLEU

from pbmt.base.files import atomic_write, read_lines
from pbmt.metrics.bleu import (
    MATCHES,
    TOTALS,
    batch_bleu,
    bleu,
    corpus_bleu,
    encode_segments,
    reference_sets,
    segment_stats,
    segment_stats_ids,
    sentence_bleu_plus1,
)
from pbmt.base.vocab import Vocab

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "bible-es-en"


def best_time(function, repeats):
    """(best wall-clock seconds over ``repeats`` calls, last result)."""
    best, result = float("inf"), None
    for _ in range(repeats):
        start = time.perf_counter()
        result = function()
        best = min(best, time.perf_counter() - start)
    return best, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DATA, help="folder of the bible-es-en data")
    parser.add_argument("--subset", type=int, default=10_000, help="hypotheses scored one by one with sacrebleu")
    parser.add_argument("--vectors", type=int, default=10_000, help="summed statistic vectors to score")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args()

    references = [line for _, line in read_lines(args.data / "dev.tok.en")]
    sentence, hypotheses = [], []
    for _, line in read_lines(args.data / "model" / "dev.moses.nbest100.gz"):
        fields = line.split(" ||| ")
        sentence.append(int(fields[0]))
        hypotheses.append(fields[1])
    sentence = np.array(sentence)
    n = len(hypotheses)
    rng = np.random.default_rng(0)
    rows = []

    def row(what, items, seconds, note=""):
        rows.append({"what": what, "items": items, "seconds": seconds, "us_per_item": 1e6 * seconds / items, "note": note})

    vocab = Vocab()
    ref_offsets, ref_words = encode_segments(references, vocab)
    hyp_offsets, hyp_words = encode_segments(hypotheses, vocab)
    start = time.perf_counter()
    compiled = reference_sets(ref_offsets, ref_words)
    segment_stats_ids(hyp_offsets[:2], hyp_words[: hyp_offsets[1]], sentence[:1], compiled)
    row("pbmt first call (numba compile or cache load)", 1, time.perf_counter() - start)

    seconds, compiled = best_time(lambda: reference_sets(ref_offsets, ref_words), args.repeats)
    row("pbmt compile reference sets (ids)", len(references), seconds)
    seconds, stats = best_time(lambda: segment_stats_ids(hyp_offsets, hyp_words, sentence, compiled), args.repeats)
    row("pbmt stats, ids path", n, seconds, "references compiled beforehand")
    ref_sets = [[r] for r in references]
    seconds, by_strings = best_time(lambda: segment_stats(hypotheses, ref_sets, sentence), args.repeats)
    row("pbmt stats, string path", n, seconds, "split + Vocab ids + compile + count")
    assert np.array_equal(stats, by_strings)

    seconds, _ = best_time(lambda: sentence_bleu_plus1(stats), args.repeats)
    row("pbmt BLEU+1 of every hypothesis", n, seconds)
    # k corpora of one random n-best entry per sentence: what MERT and SampleRank score
    first = np.searchsorted(sentence, np.arange(len(references)))
    counts = np.bincount(sentence, minlength=len(references))
    sums = np.zeros((args.vectors, stats.shape[1]), dtype=np.int64)
    for s in range(len(references)):
        sums += stats[first[s] + rng.integers(0, counts[s], size=args.vectors)]
    seconds, scores = best_time(lambda: bleu(sums, "exp"), args.repeats)
    row(f"pbmt corpus BLEU of {args.vectors} summed vectors", args.vectors, seconds, "one vectorised call")
    seconds, _ = best_time(lambda: batch_bleu(sums, 0.01), args.repeats)
    row(f"pbmt batch BLEU (0.01) of {args.vectors} summed vectors", args.vectors, seconds, "one vectorised call")

    subset = rng.choice(n, size=min(args.subset, n), replace=False)

    def sacre_sentences():
        return np.array(
            [
                sacrebleu.sentence_bleu(
                    hypotheses[i], [references[sentence[i]]], smooth_method="add-k", smooth_value=1, tokenize="none"
                ).score
                for i in subset
            ]
        )

    seconds, sacre_plus1 = best_time(sacre_sentences, 1)
    row("sacrebleu sentence_bleu (add-k) per hypothesis", len(subset), seconds, f"subset of {len(subset)}")
    row(
        "sacrebleu sentence_bleu, extrapolated to all",
        n,
        seconds * n / len(subset),
        f"{len(subset)}-subset time x {n / len(subset):.2f}",
    )
    plus1_error = float(np.max(np.abs(100 * sentence_bleu_plus1(stats[subset]) - sacre_plus1)))

    expanded = [references[s] for s in sentence]
    seconds, sacre_corpus = best_time(lambda: sacrebleu.corpus_bleu(hypotheses, [expanded], tokenize="none", force=True), 1)
    row("sacrebleu corpus_bleu over the whole list", n, seconds, "stats + score")
    corpus_error = abs(100 * corpus_bleu(stats) - sacre_corpus.score)

    def sacre_vectors():
        return np.array(
            [
                BLEU.compute_bleu(list(v[MATCHES]), list(v[TOTALS]), int(v[0]), int(v[1]), smooth_method="exp").score
                for v in sums
            ]
        )

    seconds, sacre_scores = best_time(sacre_vectors, 1)
    row("sacrebleu compute_bleu per summed vector", args.vectors, seconds, "Python loop")
    vector_error = float(np.max(np.abs(100 * scores - sacre_scores)))

    print(f"{n} hypotheses of {len(references)} sentences, {int(stats[:, 0].sum())} words\n")
    print(f"{'what':<52} {'items':>8} {'seconds':>9} {'us/item':>9}  note")
    for r in rows:
        print(f"{r['what']:<52} {r['items']:>8} {r['seconds']:>9.4f} {r['us_per_item']:>9.3f}  {r['note']}")
    print(
        f"\nlargest |pbmt - sacrebleu| in percent: BLEU+1 {plus1_error:.2e}, corpus {corpus_error:.2e}, "
        f"summed vectors {vector_error:.2e}"
    )
    if args.json:
        with atomic_write(args.json) as handle:
            json.dump(
                {
                    "hypotheses": n,
                    "rows": rows,
                    "max_abs_error_percent": {"bleu_plus1": plus1_error, "corpus": corpus_error, "vectors": vector_error},
                },
                handle,
                indent=1,
            )


if __name__ == "__main__":
    main()
