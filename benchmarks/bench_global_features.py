"""Claim under test: global features (document-level lexical consistency, length ratio, n-gram repetition),
tuned by SampleRank and decoded by annealing whole documents, change BLEU and lexical consistency.

Setting: the shared Moses model. Test set: the first --chapters chapters of Acts (test.keys documents); tuning
set: the first --dev-chapters chapters of dev (dev.keys). Systems:

1. ``stack``: the stack decoder with the model's (Moses-tuned) dense weights;
2. ``sampler, dense (SampleRank)``: document annealing from the stack 1-best, dense weights tuned by
   SampleRank on the tuning chapters (batches = whole documents), no global features;
3. ``sampler, dense + global (SampleRank)``: the same with --features, their weights learnt with the dense ones.

System 2 separates the effect of SampleRank's retuning from that of the global features. Measures: BLEU
(percent, sacrebleu on the tokenised lowercased text), the *consistency share* (over every chapter and
every source word type of at least 4 characters with a letter that occurs at least twice in the chapter:
the share whose tokens are all translated alike, a token's translation being the target words linked to it;
the system's links come from its phrase pairs, the reference's from eflomal + grow-diag-final-and run on
train + the test chapters, cached in --cache), and seconds per document (decoding only, measured inside the
worker; the load average is printed next to it).

    python benchmarks/bench_global_features.py [--chapters 6] [--dev-chapters 8] [--epochs 2] [--workers 2]
        [--steps-per-sentence 200] [--c 1e-4] [--gain-scale 300] [--json FILE]

The first run aligns the training corpus with eflomal (about 7 minutes on a loaded 2-core machine) and caches
the test lines' links in --cache.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import time
from pathlib import Path

import numpy as np
import sacrebleu

from pbmt.base.documents import Documents
from pbmt.features import Hypothesis, build, name_features, parse_requests
from pbmt.features.consistency import LexicalConsistency
from pbmt.model.model import TranslationModel
from pbmt.base.parallel import ParallelMap
from pbmt.search.document_decoder import decode_document
from pbmt.search.options import TranslationOptions
from pbmt.tune.sampler_chains import CLIP, GAIN_SCALE
from pbmt.tune.samplerank import SampleRank, SamplerTask
from pbmt.base.vocab import Vocab
from pbmt.tune.tuner import TuningData

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "bible-es-en"
FEATURES = f"lexical-consistency,repetition,length-ratio:{DATA / 'train.tok.es'}+{DATA / 'train.tok.en'}"


def read(name: str) -> list[str]:
    return (DATA / name).read_text(encoding="utf-8").splitlines()


def reference_alignments(lines: range, cache: Path) -> list[np.ndarray]:
    """gdfa links (int32[a, 2]) of test lines ``lines`` (from 0) against their references: eflomal on train +
    those lines (or on more test lines, when such a run is cached)."""
    cached = sorted(cache.glob("reference-links-0-*.npz"), key=lambda p: int(p.stem.rsplit("-", 1)[1]))
    cached = [p for p in cached if int(p.stem.rsplit("-", 1)[1]) >= lines.stop]
    path = cached[0] if cached else cache / f"reference-links-0-{lines.stop}.npz"
    if not path.exists():
        from pbmt.train.align import eflomal_align
        from pbmt.train.corpus import corpus_from_lines, tokens
        from pbmt.train.symmetrize import symmetrize

        src = corpus_from_lines([tokens(x) for x in read("train.tok.es") + read("test.tok.es")[lines.start:lines.stop]])
        tgt = corpus_from_lines([tokens(x) for x in read("train.tok.en") + read("test.tok.en")[lines.start:lines.stop]])
        fwd, rev = eflomal_align(src, tgt)
        links = symmetrize(fwd, rev, src.lengths, tgt.lengths)
        first = len(src) - len(lines)
        offsets = links.offsets[first:] - links.offsets[first]
        lo = links.offsets[first]
        cache.mkdir(parents=True, exist_ok=True)
        np.savez(path, src=links.src[lo:], tgt=links.tgt[lo:], offsets=offsets)
    saved = np.load(path)
    return [np.stack([saved["src"][a:b], saved["tgt"][a:b]], axis=1)
            for a, b in zip(saved["offsets"][:-1], saved["offsets"][1:])][:lines.stop]


def consistency_share(documents: list[list[Hypothesis]], vocab: Vocab) -> tuple[float, int]:
    """(share of repeated counted source word types translated alike within their document, their number)."""
    counter = LexicalConsistency(None, vocab)
    consistent = repeated = 0
    for document in documents:
        seen: dict[int, set] = {}
        count: dict[int, int] = {}
        for h in document:
            for w, t in counter.tokens(h):
                seen.setdefault(w, set()).add(t)
                count[w] = count.get(w, 0) + 1
        for w, n in count.items():
            if n >= 2:
                repeated += 1
                consistent += len(seen[w]) == 1
    return consistent / max(repeated, 1), repeated


class _State:
    """The model and its global features, built again from their names where the state arrives."""

    def __init__(self, model: TranslationModel, features: str | None):
        self.model, self.names = model, features
        self.features = build(name_features(parse_requests(features), model.layout.names, nbest=False),
                              model.vocab) if features else []

    def __reduce__(self):
        return _State, (self.model, self.names)


def _decode(steps: int, seed: int, state, item):
    """One document: ((source words, target words, links) per sentence, seconds). ``item``: (index, source
    lines, dense weights, global weights)."""
    model, features = state.model, state.features
    index, lines, dense, global_weights = item
    started = time.perf_counter()
    tuned = model.with_weights(dense)
    overlay = tuned.overlay(w for line in lines for w in line.split())
    options = [TranslationOptions.build(tuned, overlay.ids(line.split()), overlay) for line in lines]
    result = decode_document(tuned, options, np.random.default_rng([seed, index]), features, global_weights,
                             steps_per_sentence=steps)
    seconds = time.perf_counter() - started
    # as words: unknown words have ids of this document's overlay
    hypotheses = [Hypothesis.of(d, o, tuned) for d, o in zip(result.derivations, options)]
    return [(line.split(), overlay.words(h.target), h.alignment) for line, h in zip(lines, hypotheses)], seconds


def evaluate(name, config, features, steps, seed, workers, chapters, sources, dense, global_weights, references):
    """Decode every chapter and measure: a result row."""
    items = [(d, sources[lo:hi], dense, global_weights) for d, (lo, hi) in enumerate(chapters.spans())]
    with ParallelMap(functools.partial(_decode, steps, seed), _State(TranslationModel.load(config), features),
                     workers) as pool:
        decoded = list(pool.map(items, chunksize=1))
    vocab = Vocab()
    texts = [" ".join(target) for document, _ in decoded for _, target, _ in document]
    bleu = sacrebleu.corpus_bleu(texts, [references], tokenize="none").score
    share, repeated = consistency_share([[Hypothesis(vocab.ids(source), vocab.ids(target), links)
                                          for source, target, links in document] for document, _ in decoded], vocab)
    seconds = [s for _, s in decoded]
    return {"system": name, "bleu": bleu, "consistency": share, "repeated_types": repeated,
            "seconds_per_document": float(np.mean(seconds)), "load": os.getloadavg()[0]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--chapters", type=int, default=6, help="test chapters (from Acts 1)")
    parser.add_argument("--dev-chapters", type=int, default=8, help="tuning chapters (from the start of dev)")
    parser.add_argument("--features", default=FEATURES)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--samples-per-sentence", type=int, default=50)
    parser.add_argument("--burn-in-per-sentence", type=int, default=10)
    parser.add_argument("--steps-per-sentence", type=int, default=200, help="annealing steps per test sentence")
    parser.add_argument("--c", type=float, default=CLIP, help="SampleRank's clip C")
    parser.add_argument("--gain-scale", type=float, default=GAIN_SCALE, help="SampleRank's gain scale")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--cache", type=Path, default=Path("/tmp/pbmt-bench-global-features"))
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()

    config = DATA / "model" / "moses.ini"
    model = TranslationModel.load(config)
    test_chapters = Documents.read(DATA / "test.keys")
    test_chapters = Documents(test_chapters.offsets[:args.chapters + 1], test_chapters.names[:args.chapters])
    lines = range(0, test_chapters.n_lines)
    sources, references = read("test.tok.es")[:lines.stop], read("test.tok.en")[:lines.stop]
    dev_chapters = Documents.read(DATA / "dev.keys")
    dev_chapters = Documents(dev_chapters.offsets[:args.dev_chapters + 1], dev_chapters.names[:args.dev_chapters])
    dev_src, dev_ref = read("dev.tok.es")[:dev_chapters.n_lines], read("dev.tok.en")[:dev_chapters.n_lines]

    rows = []
    reference_links = reference_alignments(lines, args.cache)
    vocab = Vocab()
    reference_docs = [[Hypothesis(vocab.ids(sources[i].split()), vocab.ids(references[i].split()), reference_links[i])
                       for i in range(lo, hi)] for lo, hi in test_chapters.spans()]
    share, repeated = consistency_share(reference_docs, vocab)
    rows.append({"system": "reference", "bleu": 100.0, "consistency": share, "repeated_types": repeated,
                 "seconds_per_document": float("nan"), "load": os.getloadavg()[0]})
    common = dict(config=config, seed=args.seed, workers=args.workers, chapters=test_chapters, sources=sources,
                  references=references)
    rows.append(evaluate("stack (Moses weights)", features=None, steps=0, dense=model.weights,
                         global_weights=None, **common))
    print(rows[-1], flush=True)
    for name, features in (("sampler, dense (SampleRank)", None),
                           ("sampler, dense + global (SampleRank)", args.features)):
        started = time.perf_counter()
        specs = name_features(parse_requests(features), model.layout.names, nbest=False) if features else []
        # batches of whole chapters for both systems
        tuner = SampleRank(args.epochs, int(np.diff(dev_chapters.offsets).max()), args.samples_per_sentence,
                           args.burn_in_per_sentence, args.c, workers=args.workers, gain_scale=args.gain_scale,
                           global_features=specs)
        task = SamplerTask(model, dev_src, dev_ref, documents=dev_chapters)
        tuner.fit(TuningData(sampler=task), task.start_weights, np.random.default_rng(args.seed))
        tuning = time.perf_counter() - started
        dense, global_weights = tuner.weights_[:model.layout.size], tuner.weights_[model.layout.size:]
        row = evaluate(name, features=features, steps=args.steps_per_sentence, dense=dense,
                       global_weights=global_weights, **common)
        row.update(tuning_seconds=tuning, dense_weights=[float(v) for v in dense],
                   global_weights={n: float(v) for n, v in zip(tuner.feature_names_, global_weights)})
        rows.append(row)
        print(rows[-1], flush=True)

    print(f"\nTest: {args.chapters} chapters of Acts ({test_chapters.n_lines} sentences); tuning: "
          f"{args.dev_chapters} dev chapters ({dev_chapters.n_lines} sentences), {args.epochs} epochs, "
          f"C {args.c:g}, gain scale {args.gain_scale:g}; "
          f"features {args.features}\n")
    print(f"| system | BLEU | consistency share | repeated types | s/document | load |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['system']} | {r['bleu']:.2f} | {100 * r['consistency']:.1f}% | {r['repeated_types']} | "
              f"{r['seconds_per_document']:.1f} | {r['load']:.1f} |")
    if args.json:
        args.json.write_text(json.dumps({"args": {k: str(v) for k, v in vars(args).items()}, "rows": rows},
                                        indent=1))


if __name__ == "__main__":
    main()
