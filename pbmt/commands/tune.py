"""Tune a model's feature weights on a dev set.

The dev source and references (--src, --refs) are plain text, made into the
model's token form as its pbmt.toml says; --tokenized takes them in that form
already (a dev set clearly not in the model's form is then an error naming
its first such line). --algorithm chooses the tuner (default mert; pbmt tune
--algorithm NAME --help lists that tuner's options, --help-all all of them):

  mert, pro, apro, listnet  decode the dev set to n-best lists, pool them and
                            optimise on the pool, until the pool gains nothing
                            new, the weights stop moving or --iterations
  lattice-mert              the same loop, but MERT's line searches take each
                            sentence's envelope over every path of its search
                            graph, not over the pool (Macherey et al., 2008);
                            MERT's options apply
  costmargin, perceptron    decode --passes times, adding each 1-best to the
                            sentence's relevant set; retrain on the sets from
                            zero between decodings (Tillmann & Zhang)
  samplerank                no decoding: online updates on the Gibbs sampler's
                            hypotheses (Haddow, Arun & Koehn, 2011), for
                            --epochs passes; --held-out N keeps the epoch
                            whose weights decode N held-out dev sentences best

Writes to --out: moses.ini (the tuned weights), pbmt.toml (the model's
preprocessing and --reordering, so the folder translates as tuned), log.tsv
(a row per iteration, pass or epoch: the weights decoded, their dev BLEU
(SampleRank: and held-out BLEU), then what the step proposed; pbmt plot
draws it), dev-bleu.png and checkpoint.npz, from which --resume continues
to the weights and log an uninterrupted run gives when the model files,
--src and --refs have the content the run started with. docs/tutorial.md tunes with MERT, PRO and
SampleRank step by step.

Examples:
  pbmt tune -f model/moses.ini --src dev.es --refs dev.en --out tuned --workers 2
  pbmt tune -f model/moses.ini --src dev.tok.es --refs dev.tok.en --tokenized --out tuned
  pbmt tune -f model/moses.ini --src dev.es --refs dev.en --out cm --algorithm costmargin --reordering mon-swap
  pbmt tune -f model/moses.ini --src dev.es --refs dev.en --out sr --algorithm samplerank \\
      --samplerank-preset paper --held-out 100 --epochs 10 --workers 2
  pbmt tune -f model/moses.ini --src dev.es --refs dev.en --out sr --algorithm samplerank \\
      --documents dev.keys --global-features lexical-consistency,repetition
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

from pbmt.commands.options import add_threads_argument, default_of, deprecated, preset_values
from pbmt.commands.translate import add_search_arguments, search_overrides
from pbmt.base.config import MosesConfig
from pbmt.base.documents import LEVELS, Documents
from pbmt.features import KINDS, build, name_features, parse_requests, write_weights
from pbmt.base.errors import FormatError, PbmtError, UsageError
from pbmt.base.files import parse_finite, read_lines
from pbmt.model.model import REORDERING_MODES, Preprocessing, SearchSettings, TranslationModel
from pbmt.base.plots import read_tuning_log, save_png, tuning_figure
from pbmt.features.translation import check_not_swapped, check_token_form
from pbmt.tune.block_training import BlockTrainingSettings, block_training
from pbmt.base.run_state import tuning_inputs
from pbmt.tune.loop import (OPTIMIZERS, OUTPUTS, DevDecoder, LoopSettings, Optimizer, make_optimizer,
                             tune, tuned_config, weight_line)
from pbmt.tune.pool import DEDUP, References
from pbmt.tune.relevant_set import ALGORITHMS as RELEVANT_SET_ALGORITHMS
from pbmt.tune.relevant_set import KEEPS as RELEVANT_SET_KEEPS
from pbmt.tune.relevant_set import LEARNING_RATES, RelevantSetSettings, relevant_set_tune
from pbmt.metrics.bleu import SENTENCE_GAINS
from pbmt.model.sparse import CLASSES_FILE, SparseModel, WordClasses
from pbmt.tune.apro import Apro
from pbmt.tune.lattice_mert import LatticeMert
from pbmt.tune.mert import MON_SWAP_INTERPOLATION, Mert
from pbmt.tune.pro import Pro
from pbmt.tune.samplerank import GAINS as BATCH_GAINS, PRESETS, STARTS, UPDATES, SampleRank, Settings, n_weights


N_BEST_OPTIMIZERS = tuple(sorted(OPTIMIZERS))


def _max_step(text: str) -> float | None:
    return None if text == "none" else parse_finite(text)


_max_step.__name__ = "number or 'none'"


def add_optimizer_arguments(parser: argparse.ArgumentParser, extra_algorithms: tuple[str, ...] = ()) -> None:
    """--algorithm (an optimiser, or one of ``extra_algorithms``), --seed, and each optimiser's group of
    parameters, their defaults those of its class (shared with ``pbmt optimize``)."""
    parser.add_argument("--algorithm", choices=N_BEST_OPTIMIZERS + extra_algorithms, default="mert",
                        help="the tuner (its options are in its group)")
    parser.add_argument("--seed", type=int, default=LoopSettings.seed, help="seed of the random generator")
    parser.add_argument("--dedup", choices=DEDUP, default=LoopSettings.dedup,
                        help="pool candidates are distinct derivations (string + segmentation) or strings")
    add_mert_arguments(parser, "Och's exact line search on the pool; weights L1-normalised and "
                       "UnknownWordPenalty0 fixed, as in Moses. Against weights that fit the pool and decode word "
                       "salad: --keep-signs, --max-step, --significance and --keep")
    pro = parser.add_argument_group("PRO, APRO", "rank candidate pairs by a sentence gain (--gain): PRO (Hopkins & "
                                    "May, 2011) samples pairs for a logistic regression, APRO (Dreyer & Dong, 2015) "
                                    "takes all pairs in a ranking SVM; the new weights may interpolate with the "
                                    "previous ones (--interpolation). The papers' settings: --gain bleu+1 "
                                    "--interpolation 0.1")
    pro.add_argument("--pro-samples", type=int, default=default_of(Pro, "samples"),
                     help="PRO: candidate pairs drawn per sentence (Gamma)")
    pro.add_argument("--pro-keep", type=int, default=default_of(Pro, "keep"),
                     help="PRO: pairs kept per sentence, those of largest gain difference (Xi)")
    pro.add_argument("--pro-min-difference", type=float, default=default_of(Pro, "min_difference"),
                     help="PRO: least gain difference (BLEU+1 in [0, 1]) of an accepted pair (alpha's step)")
    pro.add_argument("--apro-c", type=float, default=default_of(Apro, "c"),
                     help="APRO: weight of the summed squared hinge losses against 1/2 ||w||^2")
    parser.add_argument("--gain", choices=SENTENCE_GAINS + BATCH_GAINS, help="what the tuner maximises: PRO and "
                        "APRO rank a sentence's candidates by BLEU+1 with the unclipped brevity penalty, which does "
                        "not favour short translations, or by BLEU+1, the papers' (default: PRO "
                        f"{default_of(Pro, 'gain')}, APRO {default_of(Apro, 'gain')}); SampleRank scores a batch by "
                        "its smoothed BLEU, the paper's, or the same with the unclipped brevity penalty (default: "
                        f"{default_of(SampleRank, 'gain')}); docs/tuning-results.md")
    parser.add_argument("--interpolation", type=float, metavar="PSI",
                        help="new weights = Psi * learned + (1 - Psi) * previous, Psi in [0, 1] (default: PRO "
                        f"{default_of(Pro, 'interpolation')}, as Hopkins & May; APRO "
                        f"{default_of(Apro, 'interpolation'):g}, none; MERT "
                        f"{default_of(Mert, 'interpolation'):g}, none, but {MON_SWAP_INTERPOLATION:g} in the MON/SWAP "
                        "space; MERT's weights L1-normalised first)")


def add_mert_arguments(parser: argparse.ArgumentParser, description: str) -> None:
    """The MERT group (``pbmt tune``, ``optimize`` and ``rescore``), its defaults those of ``Mert``."""
    mert = parser.add_argument_group("MERT", description)
    mert.add_argument("--restarts", type=int, help="random starting points besides the starting weights "
                      f"(default: {default_of(Mert, 'restarts')}; lattice-mert {default_of(LatticeMert, 'restarts')}, "
                      "as each of its climbs searches all the dev set's graphs)")
    mert.add_argument("--random-directions", type=int, default=default_of(Mert, "random_directions"),
                      help="random directions searched in each round besides the coordinate directions")
    mert.add_argument("--significance", type=float, default=default_of(Mert, "significance"),
                      help="the best random restart replaces the climb from the previous weights only if its pool "
                      "BLEU is better at this level under paired bootstrap resampling (0: whenever it is higher, "
                      "as Moses)")
    mert.add_argument("--max-step", type=_max_step, default=default_of(Mert, "max_step"), metavar="X",
                      help="a line search looks at most this many times the weights' L1 norm away from them "
                      "('none': Och's unbounded search, which can reach weights that fit the pool and decode "
                      "word salad)")
    mert.add_argument("--keep-signs", action=argparse.BooleanOptionalAction, default=default_of(Mert, "keep_signs"),
                      help="no weight changes sign (each line search stops where a weight would cross zero); a "
                      "weight flipped on the pool, e.g. one rewarding swaps, can decode word salad")


def mert_params(args: argparse.Namespace) -> dict:
    """``Mert``'s parameters from ``add_mert_arguments``'s options, checked."""
    restarts = (args.restarts if args.restarts is not None
                else default_of(LatticeMert if getattr(args, "algorithm", None) == "lattice-mert" else Mert, "restarts"))
    return {"restarts": restarts, "random_directions": args.random_directions, "significance": args.significance,
            "max_step": args.max_step, "keep_signs": args.keep_signs}


def optimizer_from_args(args: argparse.Namespace, reordering: str = "distortion") -> Optimizer:
    """The optimiser ``add_optimizer_arguments``'s options describe, for decoding in the ``reordering`` space
    (MERT's interpolation defaults to ``MON_SWAP_INTERPOLATION`` in MON/SWAP)."""
    if args.algorithm in ("pro", "apro"):
        ranker = Pro if args.algorithm == "pro" else Apro
        interpolation = default_of(ranker, "interpolation") if args.interpolation is None else args.interpolation
        gain = args.gain or default_of(ranker, "gain")
        if gain not in SENTENCE_GAINS:
            raise UsageError(f"--gain {gain} is a batch gain (SampleRank's); PRO and APRO take "
                             f"{' or '.join(SENTENCE_GAINS)}")
        if args.algorithm == "pro":
            return make_optimizer("pro", samples=args.pro_samples, keep=args.pro_keep,
                                  min_difference=args.pro_min_difference, interpolation=interpolation,
                                  gain=gain)
        return make_optimizer("apro", c=args.apro_c, interpolation=interpolation, gain=gain)
    params = mert_params(args)
    if args.algorithm == "listnet":
        return make_optimizer("listnet")  # ListNet's defaults; pbmt rescore exposes its settings
    if args.interpolation is not None:
        params["interpolation"] = args.interpolation
    elif args.algorithm in ("mert", "lattice-mert") and reordering == "mon-swap":
        params["interpolation"] = MON_SWAP_INTERPOLATION
    if args.algorithm == "lattice-mert":
        return LatticeMert(**params, progress=not getattr(args, "quiet", True))
    return make_optimizer(args.algorithm, **params)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``pbmt tune``: the common ones, then one group per tuner. ``-h`` shows the common options
    and the tuners (with ``--algorithm NAME``, that tuner's options), ``--help-all`` every option."""
    parser.usage = "%(prog)s -f CONFIG --src SRC --refs REFS --out OUT [--algorithm NAME] [options]"
    shown = parser._option_string_actions["--help"]
    shown.__class__ = _ShortHelp
    shown.help = "show the common options and the tuners (after --algorithm NAME: that tuner's options) and exit"
    parser.add_argument("--help-all", action=_ShortHelp, help="show every option of every tuner and exit")
    parser.add_argument("-f", "--config", type=Path, required=True, help="the model's moses.ini (start weights)")
    parser.add_argument("--src", type=Path, required=True, help="dev source, one sentence a line")
    parser.add_argument("--refs", type=Path, required=True, help="dev references, one sentence a line")
    parser.add_argument("--tokenized", action="store_true", help="--src and --refs are in the model's token form "
                        "already (as pbmt tokenize writes them)")
    parser.add_argument("--out", type=Path, required=True, help="folder for the tuned moses.ini, log and checkpoint")
    parser.add_argument("--sentences", type=int, metavar="K", help="tune on the first K dev sentences only")
    parser.add_argument("--resume", action="store_true", help="continue the run whose checkpoint is in --out")
    add_threads_argument(parser, "decode the dev set (n-best lists, lattices)")
    parser.add_argument("--workers", type=int, default=1, help="decode on this many local processes (a dask "
                        "cluster; docs/scale-out.md says when threads do better)")
    parser.add_argument("--scheduler", metavar="ADDR", help="decode on an existing dask cluster, e.g. "
                        "tcp://host:8786 (see docs/scale-out.md)")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress bars or summaries")
    decoding = parser.add_argument_group("decoding the dev set")
    size = decoding.add_argument("--n-best-size", type=int, metavar="N", help="entries decoded per sentence "
                                 f"(default: {LoopSettings.n_best}; costmargin and perceptron: "
                                 f"{RelevantSetSettings.n_best}, the paper's relevant-set growth)")
    deprecated(decoding, "--nbest", size)
    decoding.add_argument("--reordering", choices=REORDERING_MODES, help="search space (default: the model's "
                          "pbmt.toml [search] reordering, else distortion; mon-swap: Tillmann & Zhang's block "
                          "orientation model)")
    add_search_arguments(decoding)
    loop = parser.add_argument_group("mert, lattice-mert, pro, apro, listnet: the decode-optimise loop")
    loop.add_argument("--iterations", type=int, default=LoopSettings.max_iterations,
                      help="at most this many decode-optimise iterations")
    loop.add_argument("--keep", choices=sorted(set(OUTPUTS) | set(RELEVANT_SET_KEEPS)), help="which weights "
                      "moses.ini gets: those whose decode had the highest dev BLEU (default), the last (the "
                      "optimiser's, mert-moses.pl's), or, costmargin and perceptron only, the pass's whose decode "
                      "had the highest averaged sentence BLEU+1 (the other reading of Tillmann & Zhang)")
    add_optimizer_arguments(parser, extra_algorithms=("lattice-mert",) + RELEVANT_SET_ALGORITHMS + ("samplerank",))
    parser._option_string_actions["--algorithm"].__class__ = _RememberedChoice
    add_relevant_set_arguments(parser)
    add_samplerank_arguments(parser)


ALGORITHMS = ("mert", "lattice-mert", "pro", "apro", "listnet", "costmargin", "perceptron", "samplerank")
_LOOP = ("mert", "lattice-mert", "pro", "apro", "listnet")
# the tuners each option group (by title), or each option outside the groups (by destination), is for; the
# other options are common to all
_FOR_ALGORITHMS = {
    "decoding the dev set": ALGORITHMS,
    "mert, lattice-mert, pro, apro, listnet: the decode-optimise loop": _LOOP,
    "MERT": ("mert", "lattice-mert"),
    "PRO, APRO": ("pro", "apro"),
    "costmargin, perceptron": ("costmargin", "perceptron"),
    "sparse features": ("costmargin", "samplerank"),
    "samplerank": ("samplerank",),
    "samplerank: documents and global features": ("samplerank",),
    "dedup": _LOOP + ("costmargin", "perceptron"),
    "gain": ("pro", "apro", "samplerank"),
    "interpolation": ("mert", "lattice-mert", "pro", "apro"),
}


class _RememberedChoice(argparse._StoreAction):
    """``--algorithm``: stores its value, and remembers on the parser that it was given (for ``-h``)."""

    def __call__(self, parser, namespace, values, option_string=None):
        parser.chosen_algorithm = values
        super().__call__(parser, namespace, values, option_string)


class _ShortHelp(argparse.Action):
    """``-h``: the description, the tuners and the common options (``--algorithm NAME -h``: that tuner's
    options); ``--help-all``: every option. Then exits."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS, help=None):
        super().__init__(option_strings, dest, nargs=0, default=default, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        if option_string == "--help-all":
            parser.print_help()
        else:
            sys.stdout.write(short_help(parser, getattr(parser, "chosen_algorithm", None)))
        parser.exit()


def short_help(parser: argparse.ArgumentParser, algorithm: str | None) -> str:
    """``pbmt tune -h``: without ``algorithm``, the description up to the output files (the tuners listed),
    the common options and how to see the rest; with it, that tuner's groups and options."""
    formatter = parser._get_formatter()
    formatter.add_usage(parser.usage, parser._actions, parser._mutually_exclusive_groups)
    common = [a for a in parser._optionals._group_actions if a.dest not in _FOR_ALGORITHMS]
    if algorithm is None:
        formatter.add_text(parser.description.split("\nWrites to --out")[0])
        sections = [("common options", None, common)]
        footer = ("pbmt tune --algorithm NAME --help: the options of tuner NAME; pbmt tune --help-all: every "
                  "option. docs/tutorial.md tunes with MERT, PRO and SampleRank step by step.")
    else:
        formatter.add_text(f"The options of --algorithm {algorithm}, besides the common ones (pbmt tune --help).")
        own = [a for a in parser._optionals._group_actions if algorithm in _FOR_ALGORITHMS.get(a.dest, ())]
        sections = [(f"{algorithm}: options outside the groups", None, own)] if own else []
        sections += [(group.title, group.description, group._group_actions) for group in parser._action_groups
                     if algorithm in _FOR_ALGORITHMS.get(group.title, ())]
        footer = "pbmt tune --help-all: every option of every tuner."
    for title, description, actions in sections:
        formatter.start_section(title)
        formatter.add_text(description)
        formatter.add_arguments(actions)
        formatter.end_section()
    formatter.add_text(footer)
    return formatter.format_help()


def add_relevant_set_arguments(parser: argparse.ArgumentParser) -> None:
    """The group of --algorithm costmargin and perceptron (Tillmann & Zhang, Tables II and III), with
    --features binary (block features on a training subset)."""
    group = parser.add_argument_group(
        "costmargin, perceptron", "decode the dev set --passes times, each adding the 1-best to every sentence's "
        "relevant set, and retrain from zero on the sets between decodings; the first two decodings use the seed "
        "weights w1 and w2; moses.ini gets the weights of the pass with the best dev BLEU (--keep)")
    group.add_argument("--passes", type=int, default=RelevantSetSettings.passes,
                       help="decodings of the dev set, the two seed decodings included (the paper's L)")
    group.add_argument("--sgd-passes", type=int, default=RelevantSetSettings.sgd_passes,
                       help="passes over the relevant sets in each training step, from zero weights (R)")
    group.add_argument("--learning-rate", type=float, help="eta (default: " + ", ".join(
        f"{k} {v:g}" for k, v in LEARNING_RATES.items()) + ", as in the paper)")
    group.add_argument("--flat-weight", type=float, default=RelevantSetSettings.flat,
                       help="every weight of the first seed decoding (w1)")
    group.add_argument("--perturbation", type=float, default=RelevantSetSettings.perturbation,
                       help="the second seed decoding uses w2 = w1 + U[-p, p] per weight")
    features = parser.add_argument_group("sparse features")
    features.add_argument("--features", choices=("dense", "binary", "boundary"), default="dense", help="dense: "
                          "the model's dense weights. binary (costmargin): binary block features trained on a "
                          "training subset given as --src/--refs, the dense weights fixed; --out is then a model "
                          "folder. boundary (samplerank): the dense weights and target word-class bigrams across "
                          "phrase boundaries. See docs/sparse-features.md")
    features.add_argument("--oracle-beam", type=int, default=BlockTrainingSettings.oracle_beam,
                          help="binary: hypotheses per stack of the BLEU oracle search")
    features.add_argument("--word-classes", type=Path, metavar="FILE", help="boundary: the class file, "
                          "'word<TAB>class' per line (default: the model's own sparse features, else "
                          "word-classes.txt beside moses.ini, which pbmt train writes)")


def add_samplerank_arguments(parser: argparse.ArgumentParser) -> None:
    """The group of --algorithm samplerank, defaults from ``SampleRank`` and its ``Settings``; the options a
    preset sets (``PRESETS``) parse to None when not given, and say their default in their help."""
    group = parser.add_argument_group(
        "samplerank", "sample hypotheses with the Gibbs sampler and update the weights online; moses.ini gets the "
        "averaged weights of the last epoch, or with --held-out those of the epoch that decodes the held-out "
        "sentences best (Haddow et al.'s 'maximum held-out' weights)")

    def preset(*flags, help: str, **kwargs) -> argparse.Action:
        action = group.add_argument(*flags, help=help, **kwargs)
        action.help += f" (default: {_shown(default_of(SampleRank, _PRESET_OPTIONS[action.dest]))})"
        return action

    described = {"paper": "Haddow et al.'s settings", "expected-gain": "the variant of docs/samplerank.md"}
    group.add_argument("--samplerank-preset", choices=sorted(PRESETS), metavar="NAME", help="set the options "
                       "below as NAME says, unless they are given: " + "; ".join(
                           f"{name} ({described[name]}): " + " ".join(f"{_flag(p)} {_shown(v)}"
                                                                      for p, v in values.items())
                           for name, values in sorted(PRESETS.items(), key=lambda item: item[0] != "paper")))
    group.add_argument("--epochs", type=int, default=default_of(SampleRank, "epochs"),
                       help="passes over the tuning sentences, each of --burn-in-per-sentence and "
                       "--samples-per-sentence sampler steps per sentence")
    group.add_argument("--held-out", type=int, metavar="N", help="hold out N dev sentences, spread evenly over "
                       "it (with --documents whole documents, about N sentences), never tuned on: after every "
                       "epoch they are decoded (1-best) with its averaged weights, the held-out BLEU is logged and "
                       "moses.ini gets the best epoch's weights (the earliest of equals). Costs a 1-best decode "
                       "of N sentences per epoch")
    group.add_argument("--batch-size", type=int, default=Settings.batch_size,
                       help="sentences per batch (the gain is the batch's BLEU)")
    preset("--samples-per-sentence", type=int, help="sampler steps per batch sentence, each a possible update")
    preset("--burn-in-per-sentence", type=int, help="sampler steps per batch sentence before updates start")
    preset("--samplerank-update", choices=UPDATES, help="the update rule: "
           "the paper's MIRA-like step on a misranked (sample, oracle) pair; the same step on the oracle "
           "(hope) and the neighbour violating its margin most (fear); or a gradient step on the "
           "neighbourhood's expected batch BLEU after every sample (docs/samplerank.md compares them)")
    preset("--samplerank-c", type=float, help="the clip C of a MIRA-like update (the paper's 0.01)")
    preset("--samplerank-step", type=float, help="expected-gain: the step size, in weight units per nat-scaled "
           "covariance of batch BLEU and a feature")
    preset("--gain-scale", type=float, help="nats of model score per unit of batch BLEU (in [0, 1]) in the "
           "oracle's choice and the update's margin (the paper's 1)")
    temperature = preset("--temperature", type=float, help="samples are drawn with probability proportional to "
                         "exp(model score / T) (the paper's 1; below 1 the chains stay near the model's best)")
    deprecated(group, "--samplerank-temperature", temperature)
    start = preset("--chain-start", choices=STARTS, help="where each batch's chains start: the gloss (the "
                   "paper's) or the stack decoder's 1-best under the current weights")
    deprecated(group, "--samplerank-start", start)
    preset("--chains", type=int, help="chains on shards of the dev set, mixed after each epoch (run on --workers "
           "processes, several in turn on each)")
    group.add_argument("--dev-bleu", action=argparse.BooleanOptionalAction, default=True, help="after every "
                       "epoch, decode the tuning sentences (1-best) with its averaged weights and log their BLEU "
                       "(for the log only); it adds about a sixth to an epoch at 100 + 100 steps per sentence "
                       "(docs/samplerank.md)")
    documents = parser.add_argument_group(
        "samplerank: documents and global features", "sentence- and document-level features learnt with the "
        "others and written to global-weights.txt for pbmt translate --documents (docs/global-features.md)")
    documents.add_argument("--documents", type=Path, metavar="KEYS", help="a keys file (one 'BOOK CHAPTER:VERSE' "
                           "per dev line); batches then never cross a document boundary, "
                           "and --held-out holds out whole documents")
    documents.add_argument("--document-level", choices=LEVELS, default=default_of(Documents.read, "level"),
                           help="what a document is in --documents")
    documents.add_argument("--global-features", metavar="NAME[:ARG][,...]", help="global features to learn (with "
                           "--documents every batch is one whole document); registered: "
                           f"{', '.join(sorted(k for k, v in KINDS.items() if not v.nbest_only))}")


def run_block_training(args: argparse.Namespace, settings: SearchSettings | None) -> int:
    """``pbmt tune --algorithm costmargin --features binary``: binary block feature weights on a training subset."""
    if args.algorithm != "costmargin":
        raise UsageError("--features binary trains with --algorithm costmargin (Table II)")
    options = BlockTrainingSettings(args.passes, args.sgd_passes, args.learning_rate or LEARNING_RATES["costmargin"],
                                    args.n_best_size or 1, oracle_beam=args.oracle_beam, seed=args.seed)
    sources, references = read_dev(args.src, args.refs, args.sentences, _preprocessing(args))
    started = time.perf_counter()
    weights, passes = block_training(args.config, sources, references, options, args.out, settings, args.workers,
                                     args.scheduler, args.resume, args.quiet,
                                     tuning_inputs(args.config, args.src, args.refs))
    if not args.quiet:
        best = max(passes, key=lambda p: p.sentence_bleu)
        print(f"{len(passes)} passes in {time.perf_counter() - started:.0f} s; best averaged sentence BLEU+1 "
              f"{100 * best.sentence_bleu:.2f} at pass {best.number}; {best.features} features, {len(weights)} "
              f"non-zero weights", file=sys.stderr)
        print(f"wrote {args.out / 'sparse-weights.txt'}", file=sys.stderr)
    return 0


def run_relevant_set(args: argparse.Namespace, settings: SearchSettings | None) -> int:
    """``pbmt tune --algorithm costmargin|perceptron``: tune, then write moses.ini, log.tsv and the plot to --out."""
    options = RelevantSetSettings(args.algorithm, args.passes, args.sgd_passes, args.learning_rate,
                                  args.n_best_size or 1, args.flat_weight, args.perturbation, args.seed, args.dedup,
                                  args.keep or RelevantSetSettings.keep)
    started = time.perf_counter()
    model = TranslationModel.load(args.config, settings)
    sources, references = dev_set(args, model)
    with DevDecoder(model, sources, options.n_best, args.workers, quiet=args.quiet,
                    scheduler=args.scheduler, threads=args.threads) as decoder:
        result = relevant_set_tune(decoder, References(references), model.config, model.layout, options, args.out,
                                   resume=args.resume, quiet=args.quiet,
                                   inputs=tuning_inputs(args.config, args.src, args.refs))
    model.write_settings(args.out)
    if not args.quiet:
        print(f"{len(result.passes)} passes in {time.perf_counter() - started:.0f} s; kept pass "
              f"{result.best.number} ({options.keep}): dev BLEU {100 * result.best.corpus_bleu:.2f}, averaged "
              f"sentence BLEU+1 {100 * result.best.sentence_bleu:.2f}", file=sys.stderr)
        print(f"tuned weights (those decoded in pass {result.best.number}): "
              f"{weight_line(model.layout, result.weights)}", file=sys.stderr)
        print(f"wrote {args.out / 'moses.ini'}", file=sys.stderr)
    return 0


# the options --samplerank-preset sets: their destination and the SampleRank parameter each sets
_PRESET_OPTIONS = {"samples_per_sentence": "samples_per_sentence", "burn_in_per_sentence": "burn_in_per_sentence",
                   "samplerank_update": "update", "samplerank_c": "c", "samplerank_step": "step",
                   "gain_scale": "gain_scale", "temperature": "temperature", "chain_start": "start",
                   "chains": "chains", "gain": "gain"}


def _flag(parameter: str) -> str:
    """The option that sets SampleRank's ``parameter``."""
    dest = next(d for d, p in _PRESET_OPTIONS.items() if p == parameter)
    return "--" + dest.replace("_", "-")


def _shown(value) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def samplerank_parameters(args: argparse.Namespace) -> dict:
    """``SampleRank``'s parameters that a preset can set: each option given, else its value in
    --samplerank-preset, else SampleRank's default; checked."""
    values = preset_values(args, PRESETS.get(args.samplerank_preset, {}), SampleRank, _PRESET_OPTIONS)
    if values["gain"] not in BATCH_GAINS:
        raise UsageError(f"--gain {values['gain']} is a sentence gain (PRO's and APRO's); SampleRank takes "
                         f"{' or '.join(BATCH_GAINS)}")
    return values


def run_samplerank(args: argparse.Namespace) -> int:
    """``pbmt tune --algorithm samplerank``: tune, then write moses.ini and log.tsv to --out."""
    parameters = samplerank_parameters(args)
    model = with_sparse_features(TranslationModel.load(args.config), args.features, args.word_classes)
    sources, refs = dev_set(args, model)
    if args.held_out is not None and args.held_out >= len(sources):
        raise UsageError(f"--held-out {args.held_out} leaves nothing to tune on: the dev set has {len(sources)} "
                         "sentences")
    documents = None
    if args.documents is not None:
        documents = Documents.read(args.documents, args.document_level, args.sentences)
        if documents.n_lines != len(sources):
            raise PbmtError(f"{args.documents} has {documents.n_lines} keys but {args.src} has {len(sources)} "
                            "sentences" + (f" (within the first {args.sentences})" if args.sentences else ""))
        if args.held_out is not None and len(documents) < 2:
            raise UsageError(f"--held-out with --documents holds out whole documents, and {args.documents} has "
                             f"one {args.document_level} only")
    started = time.perf_counter()
    specs = name_features(parse_requests(args.global_features or ""), model.layout.names, nbest=False)
    tuner = SampleRank(args.epochs, args.batch_size, workers=args.workers, scheduler=args.scheduler, out=args.out,
                       global_features=specs, held_out=args.held_out or 0, dev_bleu=args.dev_bleu, **parameters)
    tuner.fit(model, sources, refs, np.random.default_rng(args.seed), resume=args.resume, documents=documents,
              inputs=tuning_inputs(args.config, args.src, args.refs, documents=args.documents,
                                   word_classes=args.word_classes), quiet=args.quiet)
    dense, tuned = model.layout.size, n_weights(model)
    tuned_config(model.config, model.layout, tuner.weights_[:dense]).write(args.out / "moses.ini")
    if model.sparse is not None:
        model = replace(model, sparse=model.sparse.with_weights(tuner.weights_[dense:tuned]))
    model.write_settings(args.out)
    if specs:
        write_weights(args.out / "global-weights.txt", build(specs, model.vocab), tuner.weights_[tuned:])
    if args.dev_bleu or args.held_out:
        save_png(tuning_figure([read_tuning_log(args.out / "log.tsv")]), args.out / "dev-bleu.png")
    if not args.quiet:
        print(f"{len(tuner.log_)} epochs in {time.perf_counter() - started:.0f} s; {_kept(tuner)}", file=sys.stderr)
        print(f"tuned weights: {weight_line(model.layout, tuner.weights_[:dense])}", file=sys.stderr)
        if model.sparse is not None:
            print(f"sparse features with a non-zero weight: {np.count_nonzero(tuner.weights_[dense:tuned])} of "
                  f"{model.sparse.size} ({args.out / 'sparse-weights.txt'})", file=sys.stderr)
        if specs:
            print("global weights: " + " ".join(f"{n}= {v:.6g}" for n, v in zip(tuner.feature_names_,
                                                                                 tuner.weights_[tuned:])),
                  file=sys.stderr)
        print(f"wrote {args.out / 'moses.ini'}", file=sys.stderr)
    return 0


def _kept(tuner: SampleRank) -> str:
    """Which epoch's averaged weights a fitted SampleRank kept, and why."""
    log, kept = tuner.log_, tuner.kept_epoch_
    if not len(tuner.held_out_):
        return f"kept the averaged weights of epoch {kept}, the last (--held-out N keeps the best on held-out " \
               "sentences)"
    bleu = {e.epoch: 100 * e.held_out_bleu for e in log}
    return (f"kept the averaged weights of epoch {kept}: the best held-out BLEU, {bleu[kept]:.2f} on "
            f"{len(tuner.held_out_)} held-out sentences (per epoch: "
            + ", ".join(f"{b:.2f}" for b in bleu.values()) + ")")


def with_sparse_features(model: TranslationModel, features: str, classes: Path | None) -> TranslationModel:
    """``model`` with the sparse features SampleRank is to tune: none (``dense``) or the boundary family.

    The boundary family takes the classes of ``classes``, else the model's own
    sparse features, else ``word-classes.txt`` beside its moses.ini.
    """
    if features == "binary":
        raise UsageError("--features binary is trained by --algorithm costmargin; SampleRank tunes dense or boundary")
    if features == "dense":
        return replace(model, sparse=None)
    if classes is None and model.sparse is not None:
        return model
    path = classes if classes is not None else model.config.path.parent / CLASSES_FILE
    if not path.exists():
        raise PbmtError(f"--features boundary needs word classes: {path} does not exist (pbmt train writes it; "
                        "or give --word-classes FILE)")
    return replace(model, sparse=SparseModel.new(WordClasses.read(path)))


def read_dev(src: Path, refs: Path, limit: int | None,
             preprocessing: Preprocessing | None = None) -> tuple[list[str], list[str]]:
    """The dev source lines (the first ``limit``) and their references, in the model's token form (tokens
    joined by spaces): plain text is tokenised and cased as ``preprocessing`` (the model's) says, source and
    target side; None: the files are in the token form already.

    An empty source line raises FormatError; so does a line count that differs
    between the two files.
    """
    sources = []
    for number, line in read_lines(src):
        if limit is not None and number > limit:
            break
        if not line.strip():
            raise FormatError(src, number, "empty source sentence (its translation is empty whatever the "
                              "weights): remove it, with its reference, from the dev set")
        sources.append(line)
    references = [line for number, line in read_lines(refs) if limit is None or number <= limit]
    if len(references) != len(sources):
        raise PbmtError(f"{src} has {len(sources)} sentences but {refs} has {len(references)}"
                        + (f" (within the first {limit})" if limit is not None else ""))
    if not sources:
        raise PbmtError(f"{src}: no dev sentences")
    if preprocessing is not None:
        source, target = preprocessing.source_form, preprocessing.target_form
        sources = [" ".join(source.tokens(line)) for line in sources]
        references = [" ".join(target.tokens(line)) for line in references]
    return sources, references


def token_lines(path: Path, config: Path | None, side: str, tokenized: bool) -> list[str]:
    """The lines of ``path`` in the token form of the model ``config`` names (a moses.ini; its ``pbmt.toml``
    says how, ``side`` "source" or "target"), tokens joined by spaces; as they are when ``tokenized`` or
    without a model."""
    lines = [line for _, line in read_lines(path)]
    if config is None or tokenized:
        return lines
    preprocessing = Preprocessing.read(config.parent)
    form = preprocessing.source_form if side == "source" else preprocessing.target_form
    return [" ".join(form.tokens(line)) for line in lines]


def _preprocessing(args: argparse.Namespace) -> Preprocessing | None:
    return None if args.tokenized else Preprocessing.read(args.config.parent)


def dev_set(args: argparse.Namespace, model: TranslationModel) -> tuple[list[str], list[str]]:
    """``read_dev`` of ``--src``/``--refs`` (plain text made into ``model``'s token form unless
    ``--tokenized``). Text that did not go through the model's own preprocessing (``--tokenized``, or a model
    without one) is checked to be in the model's token form (``pbmt.features.translation.check_token_form``)."""
    sources, references = read_dev(args.src, args.refs, args.sentences, _preprocessing(args))
    prep = model.preprocessing
    if args.tokenized or (not prep.tokenize and prep.casing == "none"):
        check_token_form(args.src, [line.split() for line in sources], model, prep.source_language)
        check_token_form(args.refs, [line.split() for line in references], model, prep.target_language)
    check_not_swapped(args.src, [line.split() for line in sources], args.refs, [line.split() for line in references],
                      model)
    return sources, references


def run(args: argparse.Namespace) -> int:
    if not args.config.exists():
        raise PbmtError(f"{args.config}: no such model configuration")
    if args.algorithm == "samplerank":
        return run_samplerank(args)
    if args.features == "boundary":
        raise PbmtError("--features boundary is tuned by --algorithm samplerank")
    overrides = search_overrides(args)
    search = replace(SearchSettings.from_config(MosesConfig.read(args.config)), **overrides) if overrides else None
    if args.features == "binary":
        return run_block_training(args, search)
    if args.algorithm in RELEVANT_SET_ALGORITHMS:
        return run_relevant_set(args, search)
    optimizer_from_args(args)  # usage errors before the model loads
    if args.keep not in (None, *OUTPUTS):
        raise UsageError(f"--keep {args.keep} is for costmargin and perceptron; {args.algorithm} keeps "
                         f"{' or '.join(OUTPUTS)}")
    started = time.perf_counter()
    model = TranslationModel.load(args.config, search)
    optimizer = optimizer_from_args(args, model.settings.reordering)
    if args.algorithm == "lattice-mert" and model.sparse is not None:
        raise PbmtError(f"{args.config}: lattice-mert tunes dense features only, and this model has sparse ones")
    sources, references = dev_set(args, model)
    n_best = args.n_best_size or LoopSettings.n_best
    settings = LoopSettings(n_best=n_best, max_iterations=args.iterations, dedup=args.dedup, seed=args.seed,
                            output=args.keep or LoopSettings.output)
    with DevDecoder(model, sources, n_best, args.workers, quiet=args.quiet, scheduler=args.scheduler,
                    lattices=args.algorithm == "lattice-mert", threads=args.threads) as decoder:
        result = tune(decoder, References(references), model.config, model.layout, optimizer, args.out, settings,
                      resume=args.resume, quiet=args.quiet, inputs=tuning_inputs(args.config, args.src, args.refs))
    model.write_settings(args.out)
    if not args.quiet:
        best = max(result.iterations, key=lambda r: r.dev_bleu) if result.iterations else None
        count = len(result.iterations)
        print(f"stopped: {result.stop_reason}; {count} iteration{'' if count == 1 else 's'} in "
              f"{time.perf_counter() - started:.0f} s"
              + (f"; best dev BLEU {100 * best.dev_bleu:.2f} at iteration {best.iteration}" if best else ""),
              file=sys.stderr)
        kept = (f"those decoded in iteration {result.decoded_in}" if result.decoded_in
                else "the optimiser's last, not decoded yet")
        print(f"tuned weights ({kept}): {weight_line(model.layout, result.weights)}", file=sys.stderr)
        print(f"wrote {args.out / 'moses.ini'}", file=sys.stderr)
    return 0
