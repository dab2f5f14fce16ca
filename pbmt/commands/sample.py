"""Translate text by Gibbs sampling over derivations: annealed or greedy search, or sample decisions.

Runs one Markov chain per sentence over the derivations the stack decoder
could produce (the same translation options and distortion limit), moving
with MERGE-SPLIT, REORDER and RETRANS (Arun et al. 2009). --temperature T
samples from exp(score / T); 0 is greedy hill-climbing; --anneal T0 T1 lowers
the temperature geometrically from T0 to T1 over the --steps-per-sentence
steps. The output is the best derivation the chain visited (--decision best),
or the most frequent sample after --burn-in-per-sentence steps
(max-derivation), or the most frequent target string (max-translation).
Chains start from the gloss (each word's best option, monotone) or from the
stack decoder's 1-best (--chain-start decoder). Each sentence's
chain is seeded from --seed and its line number, so the output does not depend
on --threads or --workers. Input and output handling is translate's (--tokenized).

--trace FILE writes each chain's course: its model score (natural log, from
scratch) at step 0 and after every --trace-every steps, and with --refs its
sentence BLEU+1 (percent, on the model's tokens: the references are
tokenised like the input unless --tokenized) -- a table `pbmt plot trace`
draws. Tracing does not change the output.

Examples:
  pbmt sample -f model/moses.ini -i dev.tok.es --tokenized --steps-per-sentence 20000 --anneal 1 0.02
  pbmt sample -f model/moses.ini -i dev.tok.es --tokenized --decision max-derivation --burn-in-per-sentence 2000
  pbmt sample -i data/sample.es --refs data/sample.ref.en --trace trace.tsv --anneal 5 0.05
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
from tqdm import tqdm

from pbmt.commands.options import add_threads_argument
from pbmt.commands.translate import DEFAULT_MODEL, add_search_arguments, load_model, model_inputs
from pbmt.base.errors import PbmtError
from pbmt.base.files import Outputs, read_lines
from pbmt.metrics.bleu import segment_stats, sentence_bleu_plus1
from pbmt.base.parallel import CLUSTER_MIN_ITEMS, ParallelMap
from pbmt.base.plots import MISSING, TRACE_COLUMNS
from pbmt.search.output import target_text
from pbmt.search.sampler import DECISIONS, anneal, sample_decode
from pbmt.base.text import tokens
from pbmt.features.translation import Translator


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-f", "--config", type=Path, default=DEFAULT_MODEL, help="the model's moses.ini")
    parser.add_argument("-i", "--input", default="-", help="source text, one sentence a line ('-': standard input)")
    parser.add_argument("-o", "--output", default="-", help="where the translations go ('-': standard output)")
    parser.add_argument("--tokenized", action="store_true",
                        help="input is in the model's token form already (as pbmt tokenize writes it); output stays "
                        "in that form")
    parser.add_argument("--steps-per-sentence", type=int, default=10000, help="sampler steps per sentence")
    parser.add_argument("--burn-in-per-sentence", type=int, default=1000, help="steps before samples "
                        "are counted (max-derivation, max-translation)")
    schedule = parser.add_mutually_exclusive_group()
    schedule.add_argument("--temperature", type=float, default=1.0,
                          help="sample from exp(score / T); 0: greedy hill-climbing")
    schedule.add_argument("--anneal", type=float, nargs=2, metavar=("T0", "T1"),
                          help="lower the temperature geometrically from T0 to T1 over the steps")
    parser.add_argument("--decision", choices=DECISIONS, default="best",
                        help="best: the best derivation visited; max-derivation / max-translation: the most "
                             "frequent sample / target string after burn-in")
    parser.add_argument("--chain-start", choices=("gloss", "decoder"), default="gloss",
                        help="start from the gloss or from the stack decoder's 1-best")
    parser.add_argument("--seed", type=int, default=1, help="random seed")
    parser.add_argument("--weights", help="weights replacing the ini's: 'LM0= 0.5 WordPenalty0= -1', "
                        "or a file whose [weight] section to use (a moses.ini, or that section alone)")
    parser.add_argument("--distortion-limit", type=int, help="distortion limit, -1 for none (default: the ini's, else 6)")
    parser.add_argument("--ttable-limit", type=int, help="candidates per source phrase (default: the ini's, else 20)")
    parser.add_argument("--stack", type=int, help="stack size of --chain-start decoder (default: the ini's, else 200)")
    parser.add_argument("--beam-threshold", type=float, help="beam threshold of --chain-start decoder (default: the ini's, "
                        "else 1e-5)")
    add_search_arguments(parser)
    add_threads_argument(parser, "sample sentences")
    parser.add_argument("--workers", type=int, default=1, help="sample on this many local processes (a dask cluster), "
                        f"for inputs of at least {CLUSTER_MIN_ITEMS} sentences a worker ($PBMT_CLUSTER_MIN_ITEMS; a "
                        "shorter input is sampled here on --threads)")
    parser.add_argument("--scheduler", metavar="ADDR", help="sample on an existing dask cluster, e.g. "
                        "tcp://host:8786 (see docs/scale-out.md)")
    parser.add_argument("--trace", type=Path, metavar="FILE", help="write each chain's model score (and BLEU+1 "
                        "with --refs) over the steps to FILE (tab-separated; see pbmt plot trace)")
    parser.add_argument("--trace-every", type=int, default=10, metavar="K", help="--trace: record the chain "
                        "after every K steps")
    parser.add_argument("--refs", type=Path, metavar="FILE", help="--trace: reference translations, "
                        "one a line, for the sentence BLEU+1 of the traced steps")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress bar or summary")


class _SentenceSampler:
    """Samples lines of text with one model (in the main process or in each worker, where it arrives as its
    translator and options)."""

    def __init__(self, translator: Translator, args: argparse.Namespace):
        self.args = args
        self.translator = translator
        self.model = translator.model
        self.temperature = anneal(args.steps_per_sentence, *args.anneal) if args.anneal else args.temperature
        self.reference_tokens = tokens if args.tokenized else self.model.preprocessing.target_form.tokens

    def __reduce__(self):
        return type(self), (self.translator, self.args)

    def sample(self, item: tuple[int, str, str | None]) -> tuple[str, list[str]]:
        """The translation of line ``index`` and, with --trace, its trace lines (``TRACE_COLUMNS``)."""
        index, line, reference = item
        args, model = self.args, self.model
        words = self.translator.split(line)
        options = self.translator.options(words)
        trace = [] if args.trace else None
        found = sample_decode(model, options, np.random.default_rng([args.seed, index]),
                              args.steps_per_sentence, args.burn_in_per_sentence, self.temperature, args.chain_start,
                              args.decision, lm_cache=model.lm_cache,
                              trace=trace, trace_every=args.trace_every)
        text = self.translator.output(found.derivation, options, words)
        return text, self._trace_lines(index, options, reference, trace or [])

    def _trace_lines(self, index, options, reference, trace) -> list[str]:
        if not trace:
            return []
        bleu = [MISSING] * len(trace)
        if reference is not None:
            hypotheses = [target_text(d, options, self.model) for _, d, _ in trace]
            stats = segment_stats(hypotheses, [[" ".join(self.reference_tokens(reference))]],
                                  np.zeros(len(trace), np.int64))
            bleu = [f"{100 * b:.4f}" for b in sentence_bleu_plus1(stats)]
        schedule = np.broadcast_to(np.asarray(self.temperature, np.float64), (self.args.steps_per_sentence,))
        return [f"{index + 1}\t{step}\t{schedule[max(step - 1, 0)]:.6g}\t{score:.6f}\t{b}"
                for (step, _, score), b in zip(trace, bleu)]


def _work(sampler: _SentenceSampler, item: tuple[int, str, str | None]) -> tuple[str, list[str]]:
    return sampler.sample(item)


def run(args: argparse.Namespace) -> int:
    if args.decision != "best" and args.burn_in_per_sentence >= args.steps_per_sentence:
        raise PbmtError(f"--decision {args.decision} counts samples after --burn-in-per-sentence, "
                        f"which must be below --steps-per-sentence ({args.steps_per_sentence})")
    if args.refs and not args.trace:
        raise PbmtError("--refs is for --trace's BLEU: give --trace FILE too")
    started = time.perf_counter()
    sampler = _SentenceSampler(Translator(load_model(args), tokenized=args.tokenized), args)
    lines = [line for _, line in read_lines(args.input)]
    references = [None] * len(lines)
    if args.refs:
        references = [line for _, line in read_lines(args.refs)]
        if len(references) != len(lines):
            raise PbmtError(f"{args.refs} has {len(references)} lines but {args.input} has {len(lines)}")
    items = [(i, line, ref) for i, (line, ref) in enumerate(zip(lines, references))]
    loaded = time.perf_counter()
    with Outputs([args.input, args.refs, *model_inputs(args, sampler.model)]) as outputs:
        outputs.claim([args.output, *([args.trace] if args.trace else [])])  # refused now, if they must be
        progress = tqdm(total=len(lines), unit="sent", disable=args.quiet or None, file=sys.stderr, desc="sampling")
        with ParallelMap(_work, sampler, args.workers, args.scheduler, threads=args.threads,
                         size=len(lines)) as pool:
            if (note := pool.note("sampled")) and not args.quiet:
                tqdm.write(note, file=sys.stderr)
            results = list(pool.map(items, chunksize=4, progress=progress.update))
        progress.close()
        translations = outputs.open(args.output)
        handle = outputs.open(args.trace) if args.trace else None  # both opened before either is written
        translations.writelines(f"{text}\n" for text, _ in results)
        if handle is not None:
            handle.write("\t".join(TRACE_COLUMNS) + "\n")
            handle.writelines(f"{line}\n" for _, trace in results for line in trace)
    if not args.quiet:
        seconds = time.perf_counter() - loaded
        steps = len(lines) * args.steps_per_sentence
        print(f"sampled {len(lines)} sentences in {seconds:.1f} s: {steps / max(seconds, 1e-9):,.0f} steps/s "
              f"(model loaded in {loaded - started:.1f} s)", file=sys.stderr)
    return 0
