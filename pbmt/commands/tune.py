"""Tune a model's feature weights on a dev set.

The dev source and references (--src, --refs) are plain text, made into the
model's token form as its pbmt.toml says; --tokenized takes them in that form
already (a dev set clearly not in the model's form is then an error naming
its first such line). --algorithm chooses the tuner (default mert; pbmt tune
--algorithm NAME --help lists that tuner's options, --help-all all of them):

  mert, pro, apro, listnet, decode the dev set to n-best lists, pool them and
  mira                      optimise on the pool, until the pool gains nothing
                            new, the weights stop moving or --iterations; pro,
                            apro and mira tune the sparse features of a model
                            with them (moses.ini's sparse lines, or pbmt.toml
                            [sparse]) too, which the n-best lists carry
  lattice-mert              the same loop, but MERT's line searches take each
                            sentence's envelope over every path of its search
                            graph, not over the pool (Macherey et al., 2008);
                            MERT's options apply, and --lattice-margin
  costmargin, perceptron    decode --passes times, adding each 1-best to the
                            sentence's relevant set; retrain on the sets from
                            zero between decodings (Tillmann & Zhang)
  samplerank                no decoding: online updates on the Gibbs sampler's
                            hypotheses (Haddow, Arun & Koehn, 2011), for
                            --epochs passes; --held-out N keeps the epoch
                            whose weights decode N held-out dev sentences best

A tuner of your own (a class of pbmt.tune.tuner.Tuner) runs in the first
loop: --plugins FILE runs the Python file that defines it, which makes its
name an --algorithm with its options (docs/writing-a-tuner.md).

Writes to --out: moses.ini (the tuned weights), pbmt.toml (the model's
preprocessing and --reordering, so the folder translates as tuned; with
sparse features, sparse-weights.txt, which moses.ini's [weight-file] or
pbmt.toml's [sparse] table names as the model did, and each iteration's
run{k}.sparse-weights.txt beside run{k}.moses.ini), log.tsv
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
from dataclasses import fields
from pathlib import Path

from pbmt.base.config import MosesConfig
from pbmt.base.errors import UsageError
from pbmt.base.parallel import CLUSTER_MIN_ITEMS
from pbmt.commands.options import add_threads_argument
from pbmt.commands.plugins import add_plugins_argument
from pbmt.commands.precompile import say_first_run
from pbmt.commands.translate import add_search_arguments, search_overrides
from pbmt.commands.tuners import TunerOptions
from pbmt.model.model import REORDERING_MODES, SearchSettings
from pbmt.tune.loop import LoopSettings
from pbmt.tune.registry import TUNERS, algorithms, tuner_class, tuners
from pbmt.tune.relevant_set import RelevantSetSettings
from pbmt.tune.runs import TuningJob, run as run_tuner

OPTIONS = TunerOptions(TUNERS)  # pbmt's own tuners' (tuner_options: with those of --plugins files)
DECODING = "decoding the dev set"  # the group every tuner's help shows
# the DECODING group's options, by destination: the dev set's decoding, which the sampler loop does not do (its
# chains and held-out decodes take the model's own search settings)
DECODING_OPTIONS = {"n_best_size": "--n-best-size", "reordering": "--reordering", "search": "--search",
                    "pop_limit": "--pop-limit"}


def tuner_options() -> TunerOptions:
    """The options of every tuner, pbmt's own (``OPTIONS``) and those ``--plugins`` files added."""
    return OPTIONS if tuners() == TUNERS else TunerOptions(tuners())


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``pbmt tune``: the common ones, then each tuner's (``pbmt.tune.tuner.Option``). ``-h`` shows
    the common options and the tuners (with ``--algorithm NAME``, that tuner's options), ``--help-all`` every
    option."""
    parser.usage = "%(prog)s -f CONFIG --src SRC --refs REFS --out OUT [--algorithm NAME] [options]"
    shown = parser._option_string_actions["--help"]
    shown.__class__ = _ShortHelp
    shown.help = "show the common options and the tuners (after --algorithm NAME: that tuner's options) and exit"
    parser.add_argument("--help-all", action=_ShortHelp, help="show every option of every tuner and exit")
    parser.add_argument("-f", "--config", type=Path, required=True, help="the model's moses.ini (start weights)")
    parser.add_argument("--src", type=Path, required=True, help="dev source, one sentence a line")
    parser.add_argument("--refs", type=Path, nargs="+", required=True, metavar="REFS", help="dev references, one "
                        "sentence a line; several line-parallel files are several references of each sentence "
                        "(as sacrebleu's and Moses's mert take them; not for samplerank or --features binary)")
    parser.add_argument("--tokenized", action="store_true", help="--src and --refs are in the model's token form "
                        "already (as pbmt tokenize writes them)")
    parser.add_argument("--out", type=Path, required=True, help="folder for the tuned moses.ini, log and checkpoint")
    parser.add_argument("--sentences", type=int, metavar="K", help="tune on the first K dev sentences only")
    parser.add_argument("--resume", action="store_true", help="continue the run whose checkpoint is in --out")
    add_threads_argument(parser, "decode the dev set (n-best lists, lattices), run MERT's and lattice MERT's "
                         "line searches and SampleRank's chains")
    parser.add_argument("--workers", type=int, default=1, help="decode on this many local processes (a dask "
                        f"cluster), for dev sets of at least {CLUSTER_MIN_ITEMS} sentences a worker "
                        "($PBMT_CLUSTER_MIN_ITEMS; a shorter one is decoded here on --threads); docs/scale-out.md "
                        "says when threads do better")
    parser.add_argument("--scheduler", metavar="ADDR", help="decode on an existing dask cluster, e.g. "
                        "tcp://host:8786 (see docs/scale-out.md)")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress bars or summaries")
    decoding = parser.add_argument_group(DECODING)
    decoding.add_argument("--n-best-size", type=int, metavar="N", help="entries decoded per sentence (default: "
                          f"{LoopSettings.n_best}; costmargin and perceptron: {RelevantSetSettings.n_best}, the "
                          "paper's relevant-set growth)")
    decoding.add_argument("--reordering", choices=REORDERING_MODES, help="search space (default: the model's "
                          "pbmt.toml [search] reordering, else distortion; mon-swap: Tillmann & Zhang's block "
                          "orientation model)")
    add_search_arguments(decoding)
    parser.add_argument("--algorithm", choices=algorithms(), default="mert", action=_RememberedChoice,
                        help="the tuner (its options are in its group)")
    add_plugins_argument(parser)
    parser.add_argument("--seed", type=int, default=LoopSettings.seed, help="seed of the random generator")
    tuner_options().add_to(parser)


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
    scope = tuner_options().scope
    common = [a for a in parser._optionals._group_actions if a.dest not in scope]
    if algorithm is None:
        formatter.add_text(parser.description.split("\nWrites to --out")[0])
        sections = [("common options", None, common)]
        footer = ("pbmt tune --algorithm NAME --help: the options of tuner NAME; pbmt tune --help-all: every "
                  "option. docs/tutorial.md tunes with MERT, PRO and SampleRank step by step.")
    else:
        formatter.add_text(f"The options of --algorithm {algorithm}, besides the common ones (pbmt tune --help).")
        own = [a for a in parser._optionals._group_actions if algorithm in scope.get(a.dest, ())]
        sections = [(f"{algorithm}: options outside the groups", None, own)] if own else []
        decodes = any(t.loop != "sampler" for t in tuners() if t.name == algorithm)  # samplerank refuses DECODING
        sections += [(group.title, group.description, group._group_actions) for group in parser._action_groups
                     if group.title == DECODING and decodes]
        sections += [(group.title, group.description,
                      [a for a in group._group_actions if algorithm in scope.get(a.dest, ())])
                     for group in parser._action_groups if algorithm in scope.get(group.title, ())]
        footer = "pbmt tune --help-all: every option of every tuner."
    for title, description, actions in sections:
        formatter.start_section(title)
        formatter.add_text(description)
        formatter.add_arguments(actions)
        formatter.end_section()
    formatter.add_text(footer)
    return formatter.format_help()


def run(args: argparse.Namespace) -> int:
    cls = tuner_class(args.algorithm, args.features)
    options = tuner_options()
    options.check_given(cls, args)
    given = [flag for dest, flag in DECODING_OPTIONS.items() if getattr(args, dest) is not None]
    if cls.loop == "sampler" and given:
        raise UsageError(f"{given[0]} sets how the other tuners decode the dev set; samplerank samples it, and its "
                         "held-out and chain-start decodes search as the model's moses.ini and pbmt.toml say: it "
                         "would be ignored")
    common = {f.name for f in fields(TuningJob)} - {"search", "settings"}
    others = {o.destination for o in options.options.values()} - {o.destination for o in cls.options}
    job = TuningJob(**{k: v for k, v in vars(args).items() if k in common}, search=search_overrides(args),
                    settings={k: v for k, v in vars(args).items() if k not in common and k not in others})
    if cls.loop == "decode-optimise":  # its decodes search as the job says; the first may compile for minutes
        say_first_run(job.search_settings() or SearchSettings.from_config(MosesConfig.read(job.config)), "tune",
                      args.quiet, lattices="lattices" in cls.reads)
    context = {"workers": args.workers, "scheduler": args.scheduler, "threads": args.threads, "out": args.out,
               "progress": not args.quiet}
    lines = run_tuner(lambda reordering, n_sentences=None: options.build(cls, args, reordering, n_sentences,
                                                                         **context), job)
    if not args.quiet:
        print("\n".join(lines), file=sys.stderr)
    return 0
