"""Optimise feature weights on an n-best list, without decoding.

Reads a Moses-format n-best list (from pbmt or any other decoder: sentence
ids from 0, one line per entry, features as 'Name= v v ...') and the
references of its sentences (one tokenised line each, in the n-best list's
token form), runs the optimiser once on the pool of its entries and writes the
weights in moses.ini [weight] form. With --config, the starting weights are
that moses.ini's and the output is the moses.ini with the tuned weights;
features of the ini that the list does not print (Moses's
UnknownWordPenalty0) keep their weights. Without --config the search starts
from all-zero weights, where every sentence's 1-best is the list's own first
entry.

An entry with an empty hypothesis is a candidate of length 0. An entry whose
features differ from the first entry's, or hold a NaN or infinite value, or
whose sentence id has no reference, is an error; so is a sentence without
entries.

Sparse features in the list (``name= value`` after the dense ones, as Moses
writes them) are held sparsely; PRO, APRO and MIRA tune their weights beside
the dense ones (PRO and APRO with an L1 penalty, --sparse-l1; from the weights of the
--config model, else from 0), and the non-zero ones are written
after the dense weights (``name= value`` lines) or, with --config, to
--sparse-weights (``name value`` lines, the model's sparse-weights.txt
format, which the tuned moses.ini's [weight-file] names when its lines declare
the sparse families). The other optimisers tune the dense weights alone. Several --refs
files are several references of each sentence. --plugins FILE adds the
tuners of one's own that FILE defines whose fit reads the pool alone
(docs/writing-a-tuner.md) to the --algorithm choices.

Example:
  pbmt optimize --n-best dev.nbest.gz --refs dev.en -f model/moses.ini -o tuned.ini
  pbmt optimize --n-best dev.nbest.gz --refs dev.en dev.en2 --algorithm pro -f model/moses.ini -o tuned.ini \\
      --sparse-weights tuned.sparse-weights.txt
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

from pbmt.commands.plugins import add_plugins_argument
from pbmt.commands.tuners import TunerOptions
from pbmt.base.config import MosesConfig
from pbmt.base.errors import PbmtError, UsageError
from pbmt.base.parallel import available_cores
from pbmt.base.files import Outputs
from pbmt.base.run_state import model_files
from pbmt.model.features import FeatureLayout
from pbmt.model.sparse import SparseWeights, nbest_name, read_sparse, weight_name
from pbmt.tune.loop import LoopSettings, tuned_config
from pbmt.tune.pool import Pool, References, read_pool
from pbmt.tune.registry import POOL_TUNERS, pool_tuners
from pbmt.tune.runs import reference_lines
from pbmt.tune.tuner import TuningData, fitted_weights



def _own_and_dedup(option) -> bool:
    """The options a pool tuner reads here: its own (those setting its parameters) and the pool's --dedup."""
    return option.parameter is not None or option.destination == "dedup"


OPTIONS = TunerOptions(POOL_TUNERS.values(), include=_own_and_dedup)  # pbmt's own (tuner_options: and plugins')


def tuner_options() -> TunerOptions:
    """The options of the pool tuners, pbmt's own (``OPTIONS``) and those ``--plugins`` files added."""
    tuners = pool_tuners()
    return OPTIONS if tuners == POOL_TUNERS else TunerOptions(tuners.values(), include=_own_and_dedup)


def sparse_tuners() -> tuple[str, ...]:
    """The pool tuners that tune sparse features beside the dense ones."""
    return tuple(name for name, tuner in pool_tuners().items() if tuner.sparse)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--n-best", type=Path, required=True, metavar="FILE",
                        help="n-best list in Moses's format (plain or gzip)")
    parser.add_argument("--refs", type=Path, nargs="+", required=True, metavar="REFS", help="references, one "
                        "sentence a line (several line-parallel files: several references of each sentence): plain "
                        "text, made into the target token form of the --config model (its pbmt.toml), or in that "
                        "form already (--tokenized, or without --config)")
    parser.add_argument("-f", "--config", type=Path, help="moses.ini with the starting weights; the output is then "
                        "this moses.ini with the tuned weights")
    parser.add_argument("--tokenized", action="store_true", help="--refs are in the model's token form already")
    parser.add_argument("-o", "--output", default="-", help="where the weights (or, with --config, the tuned "
                        "moses.ini) go ('-': standard output; with --config a file is required)")
    parser.add_argument("--sparse-weights", type=Path, metavar="FILE", help="with --config, where the tuned "
                        "weights of the list's sparse features go (PRO, APRO and MIRA tune them)")
    parser.add_argument("--algorithm", choices=tuple(pool_tuners()), default="mert",
                        help="the tuner (its options are in its group)")
    add_plugins_argument(parser)
    parser.add_argument("--seed", type=int, default=LoopSettings.seed, help="seed of the random generator")
    tuner_options().add_to(parser)
    parser.add_argument("--threads", type=int, help="run MERT's line searches on this many threads (by default as "
                        "many as the cores this process may use); the weights are the same on any number; the other "
                        "optimisers run on one")
    parser.add_argument("-q", "--quiet", action="store_true", help="no summary on standard error")


def run(args: argparse.Namespace) -> int:
    if args.config is not None and args.output == "-":
        raise PbmtError("--config writes a tuned moses.ini: give its path with --output")
    options, cls = tuner_options(), pool_tuners()[args.algorithm]
    options.check_given(cls, args)
    tuner = options.build(cls, args, threads=available_cores() if args.threads is None else args.threads)
    if (args.threads or 1) > 1 and "threads" not in cls.parameters() and not args.quiet:
        print(f"note: {args.algorithm} runs on one thread (--threads is for MERT's line searches)", file=sys.stderr)
    config = MosesConfig.read(args.config) if args.config is not None else None
    started = time.perf_counter()
    references = References(*reference_lines(args.refs, args.config, args.tokenized))
    pool = read_pool(args.n_best, references, dedup=args.dedup)
    initial = np.zeros(pool.layout.size)
    if config is not None:
        pool = _with_config_layout(pool, config, args)
        initial = pool.layout.weights(config)
    sparse = bool(pool.sparse_names) and cls.sparse
    if sparse and config is not None and args.sparse_weights is None:
        raise UsageError(f"{args.n_best} has {len(pool.sparse_names)} sparse features, which {args.algorithm} tunes: "
                         "give --sparse-weights FILE for their weights")
    if sparse:
        initial = np.concatenate([initial, _sparse_start(pool, config)])
    elif pool.sparse_names and not args.quiet:
        print(f"{args.algorithm} tunes the dense features only; the list's {len(pool.sparse_names)} sparse features "
              f"are left out ({' and '.join(sparse_tuners())} tune them)", file=sys.stderr)
    loaded = time.perf_counter()
    # the tuned moses.ini (or the weights) and the sparse weights replace none of the files read nor the model's:
    # refused before the fit, if they must be, not after it
    with Outputs([args.n_best, *args.refs, *(model_files(config) if config is not None else [])]) as outputs:
        outputs.claim([args.output, *([args.sparse_weights] if sparse and config is not None else [])])
        weights = fitted_weights(tuner, TuningData(pool=pool), initial, np.random.default_rng(args.seed))
        dense, tuned_sparse = weights[:pool.layout.size], weights[pool.layout.size:]
        if config is not None:
            tuned = tuned_config(config, pool.layout, dense)
            if tuned.sparse_features:  # its [weight-file]: the sparse weights tuned here, else the model's own
                weight_file = args.sparse_weights if sparse else config.weight_file
                tuned = tuned.with_weight_file(None if weight_file is None else os.path.abspath(weight_file))
            tuned.write(args.output, outputs)
            if sparse:
                SparseWeights(tuple(weight_name(n) for n in pool.sparse_names),
                              tuned_sparse).write(args.sparse_weights, outputs)
        else:
            lines = ["[weight]"] + [f"{name}= " + " ".join(format(v, ".9g") for v in values)
                                    for name, values in pool.layout.as_dict(dense).items()]
            lines += [f"{name}= {value:.9g}" for name, value in zip(pool.sparse_names, tuned_sparse) if value != 0.0]
            outputs.open(args.output).write("\n".join(lines) + "\n")
    if sparse and not args.quiet:
        print(f"sparse features: {np.count_nonzero(tuned_sparse)} of {len(pool.sparse_names)} with a non-zero "
              "weight", file=sys.stderr)
    if not args.quiet:
        print(f"pool: {pool.n_candidates} candidates of {pool.n_sentences} sentences (read in "
              f"{loaded - started:.1f} s); BLEU of its 1-best {100 * pool.bleu(initial):.2f} -> "
              f"{100 * pool.bleu(weights):.2f} after {time.perf_counter() - loaded:.1f} s of {args.algorithm}",
              file=sys.stderr)
    return 0


def _sparse_start(pool: Pool, config: MosesConfig | None) -> np.ndarray:
    """float64[len(pool.sparse_names)]: the starting weights of the pool's sparse features, those the --config
    model gives them (its ``[weight-file]``, or its pbmt.toml's ``[sparse] weights``), 0 for the others and
    without a model."""
    model = read_sparse(config) if config is not None else None
    if model is None:
        return np.zeros(len(pool.sparse_names))
    named = model.named_weights()
    start = {nbest_name(name): value for name, value in zip(named.names, named.values.tolist())}
    return np.array([start.get(name, 0.0) for name in pool.sparse_names])


def _with_config_layout(pool: Pool, config: MosesConfig, args: argparse.Namespace) -> Pool:
    """The pool with the ini's feature types; its features must be features of the ini, of equal sizes."""
    expected = {f.name: f for f in config.features}
    for name, size in zip(pool.layout.names, pool.layout.sizes):
        if name not in expected:
            raise PbmtError(f"{args.n_best}: feature {name} is not in {args.config} "
                            f"(its features: {', '.join(expected)})")
        if expected[name].n_scores != size:
            raise PbmtError(f"{args.n_best}: feature {name} has {size} values but {args.config} gives it "
                            f"{expected[name].n_scores} weights")
    layout = FeatureLayout(pool.layout.names, tuple(expected[n].type for n in pool.layout.names), pool.layout.sizes)
    return replace(pool, layout=layout)

