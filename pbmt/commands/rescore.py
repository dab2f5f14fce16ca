"""Rescore n-best lists with features the decoder cannot afford (ListNet, MERT, PRO, APRO).

Training (--train) reads a dev n-best list in Moses's format (any decoder;
sentence ids from 0) and its references, adds rescoring features to every
entry (--lm FILE: a further LM, column LM<k>; --src: the target/source
length ratio; --feature KIND[:ARG]: any registered kind, e.g. consensus),
learns the weights of all columns and writes them to --out. Training starts
from the decoder's weights (recovered from the list's totals) with the new
columns at 0. ListNet (the default; Niehues et al., 2015) maps every
feature to [-1, 1] with the dev set's minimum and maximum, trains by SGD on
batches of 10 sentences for 100,000 batches towards the top-one
distribution of each list's BLEU+1 (with an unclipped brevity penalty; each
distinct translation once) and keeps the weights whose 1-best has the best
dev BLEU; --listnet-preset paper for the paper's gain, rate and lists.

Applying (--weights) reads an n-best list, computes the same rescoring
features (the LM paths stored in the weights file, unless --lm gives them
again, in the same order; --src is needed again for the length ratio), and
prints each sentence's new 1-best, one line per sentence id (an empty line
for a sentence without entries). With --refs it also reports BLEU before
(the list's first entries) and after.

--plugins FILE runs a Python file of one's own first: the kinds it
registers (pbmt.features.register, docs/global-features.md) are --feature
kinds, and its tuners whose fit reads the pool alone --algorithm choices
with their options (docs/writing-a-tuner.md). Applying a weights file of
such a feature or tuner takes the same --plugins.

Sparse features of the lists (``name= value``, as Moses writes them) are
read and left out: the rescoring columns are the dense features and the
rescoring features.

The weights file is text: a moses.ini-style [weight] section (every column,
raw feature space) and a [rescore] section holding JSON (algorithm,
normalisation and the dev feature ranges, the rescoring features); see
docs/rescoring.md.

Examples:
  pbmt rescore --n-best dev.nbest.gz --refs dev.tok.en --src dev.tok.es --lm lm5.arpa.gz --train --out weights
  pbmt rescore --n-best test.nbest.gz --src test.tok.es --weights weights > test.out
  pbmt rescore -f model/moses.ini --n-best dev.nbest.gz --refs dev.en --src dev.es --train --out weights
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

from pbmt.commands.options import default_of, preset_values
from pbmt.commands.plugins import add_plugins_argument
from pbmt.commands.tuners import TunerOptions, listed
from pbmt.base.errors import PbmtError, UsageError
from pbmt.base.config import MosesConfig
from pbmt.base.files import Outputs
from pbmt.base.run_state import model_files
from pbmt.metrics.bleu import corpus_bleu
from pbmt.tune.gains import names_of
from pbmt.tune.listnet import NORMALISATIONS, PRESETS, ListNet
from pbmt.tune.mert import Mert
from pbmt.tune.pool import References
from pbmt.tune.pro import Pro
from pbmt.tune.registry import POOL_TUNERS, pool_tuners
from pbmt.tune.runs import reference_lines, token_lines
from pbmt.tune.rescore import RescoringModel, read_lists, train, with_features
from pbmt.tune.rescoring_features import NBestLists
from pbmt.features import KINDS, FeatureSpec, name_features
from pbmt.features.translation import KEEPS_TOKENS_REMEDY, check_token_form
from pbmt.model.model import Preprocessing


# MERT's own options (its group), as in pbmt tune
MERT_OPTIONS = TunerOptions((Mert,), include=lambda option: option.group is not None and option.group.title == "MERT")


def plugin_options() -> TunerOptions:
    """The options setting the parameters of the pool tuners ``--plugins`` files added."""
    return TunerOptions([t for name, t in pool_tuners().items() if name not in POOL_TUNERS],
                        include=lambda option: option.parameter is not None)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--n-best", type=Path, required=True, metavar="FILE",
                        help="n-best list in Moses's format (plain or gzip)")
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--train", action="store_true", help="learn weights (needs --refs and --out)")
    mode.add_argument("--weights", type=Path, help="weights file of an earlier --train: rescore with it")
    parser.add_argument("--refs", type=Path, nargs="+", metavar="REFS", help="references, one sentence a line "
                        "(several line-parallel files: several references of each sentence; with --weights: report "
                        "BLEU before and after); plain text with -f, made into the model's target token form")
    parser.add_argument("--src", type=Path, help="source sentences, one a line (length ratio feature); plain text "
                        "with -f, made into the model's source token form")
    parser.add_argument("-f", "--config", type=Path, help="the model (moses.ini) of the n-best lists, whose "
                        "pbmt.toml makes plain --refs and --src into its token form; without it, or with "
                        "--tokenized, they are taken as they are (--refs checked to be in the lists' token form)")
    parser.add_argument("--tokenized", action="store_true", help="--refs and --src are in the model's token form "
                        "already")
    parser.add_argument("--lm", type=Path, action="append", default=[], help="an ARPA LM (plain or gzip) whose "
                        "natural-log score is a feature; repeatable")
    parser.add_argument("--feature", action="append", default=[], metavar="KIND[:ARG]",
                        help=f"a further rescoring feature; repeatable; kinds: {', '.join(sorted(KINDS))}")
    parser.add_argument("--out", type=Path, help="where --train writes the weights file")
    parser.add_argument("-o", "--output", default="-", help="where the rescored 1-best go ('-': standard output)")
    parser.add_argument("--algorithm", choices=sorted(pool_tuners()), default="listnet", help="the optimiser")
    add_plugins_argument(parser)
    parser.add_argument("--seed", type=int, default=1, help="seed of the optimiser's random generator")
    parser.add_argument("--gain", choices=names_of("sentence"), help="the sentence gain: ListNet's reference "
                        "scores (in percent), PRO's and APRO's ranking of candidates; BLEU+1 (the papers'), or BLEU+1 with the "
                        "unclipped brevity penalty, which does not favour short translations (default: ListNet "
                        f"{default_of(ListNet, 'gain')}, PRO and APRO {default_of(Pro, 'gain')})")
    listnet = parser.add_argument_group("ListNet", "Niehues et al. (2015); the defaults differ from the paper's "
                                        "settings in --gain, --learning-rate and --distinct (docs/rescoring.md)")
    listnet.add_argument("--listnet-preset", choices=sorted(PRESETS), metavar="NAME", help="set --gain, "
                         "--learning-rate and --distinct as NAME says, unless they are given: " + "; ".join(
                             f"{name}: " + " ".join(_preset_flag(p, v) for p, v in values.items())
                             for name, values in sorted(PRESETS.items())))
    listnet.add_argument("--normalisation", choices=NORMALISATIONS, default=default_of(ListNet, "normalisation"),
                         help="feature normalisation to [-1, 1], final-score normalisation to --score-range, or none")
    listnet.add_argument("--score-range", type=float, default=default_of(ListNet, "score_range"),
                         help="r of the final-score normalisation")
    listnet.add_argument("--distinct", action=argparse.BooleanOptionalAction, help="train on each distinct "
                         "translation of a list once (its best derivation); --no-distinct: on every entry, a "
                         "translation with k segmentations counting k times (default: --distinct)")
    listnet.add_argument("--learning-rate", type=float, help="SGD step at the first batch "
                         f"(default: {default_of(ListNet, 'learning_rate'):g})")
    listnet.add_argument("--decay", type=float, default=default_of(ListNet, "decay"),
                         help="step at batch t: rate / (1 + decay * t)")
    listnet.add_argument("--batch-size", type=int, default=default_of(ListNet, "batch_size"),
                         help="sentences per SGD batch")
    listnet.add_argument("--max-batches", type=int, default=default_of(ListNet, "max_batches"),
                         help="batches (the paper's 100,000)")
    listnet.add_argument("--epochs", type=int, help="passes over the dev sentences at most (default: no limit)")
    listnet.add_argument("--eval-every", type=int, help="batches between dev BLEU evaluations (default: an epoch)")
    MERT_OPTIONS.add_to(parser, {"MERT": "Och's exact line search on the n-best lists, as in pbmt tune"})
    plugin_options().add_to(parser)
    parser.add_argument("-q", "--quiet", action="store_true", help="no summary on standard error")


def _inputs(args: argparse.Namespace) -> list[Path | str | None]:
    """The files the run reads (the lists, references, sources, weights, LMs, plugins; -f's model, whose pbmt.toml
    and truecasers make text its token form): no output may replace one."""
    model = model_files(MosesConfig.read(args.config)) if args.config is not None else []
    return [args.n_best, args.src, args.weights, *(args.refs or []), *args.lm, *args.plugins, *model]


def run(args: argparse.Namespace) -> int:
    if args.train and (args.refs is None or args.out is None):
        raise UsageError("--train needs --refs and --out")
    _check_given(args)
    sources = token_lines(args.src, args.config, "source", args.tokenized) if args.src is not None else None
    started = time.perf_counter()
    lists = read_lists(args.n_best, sources)
    if args.train:
        with Outputs(_inputs(args)) as outputs:
            outputs.claim([args.out])  # refused before the training, if it must be, not after it
            specs = name_features(_requests(args), lists.layout.names)
            lists = with_features(lists, specs)
            references = _references(args, lists)
            model = train(lists, references, specs, args.algorithm, np.random.default_rng(args.seed),
                          **_params(args))
            model.write(args.out, outputs)
        stats = references.stats(lists.texts, lists.sentence)
        before, after = lists.offsets[:-1], model.best(lists)
        if not args.quiet:
            print(f"{lists.n_candidates} entries of {lists.n_sentences} sentences, features "
                  f"{' '.join(lists.layout.names)}; dev BLEU of the 1-best {100 * corpus_bleu(stats[before]):.2f} -> "
                  f"{100 * corpus_bleu(stats[after]):.2f} after {time.perf_counter() - started:.1f} s "
                  f"({args.algorithm})", file=sys.stderr)
        return 0
    with Outputs(_inputs(args)) as outputs:
        outputs.claim([args.output])  # refused before the features are computed, if it must be
        model = RescoringModel.read(args.weights)
        lists = with_features(lists, _stored_features(model, args))
        best = model.best(lists)
        lines = [lists.texts[i] if i >= 0 else "" for i in best]
        references = _references(args, lists) if args.refs is not None and not args.quiet else None
        outputs.open(args.output).write("".join(line + "\n" for line in lines))
    if references is not None:
        filled = best >= 0
        first = lists.offsets[:-1][filled]
        stats = references.stats([lists.texts[i] for i in first], np.flatnonzero(filled))
        stats_after = references.stats([lists.texts[i] for i in best[filled]], np.flatnonzero(filled))
        print(f"BLEU of the 1-best {100 * corpus_bleu(stats):.2f} -> {100 * corpus_bleu(stats_after):.2f}",
              file=sys.stderr)
    return 0


def _references(args: argparse.Namespace, lists: NBestLists) -> References:
    """--refs in the lists' token form: plain text made so by -f's model, or text taken as it is (without -f,
    with --tokenized, or for a model that neither tokenises nor cases) checked to be in the form of the lists'
    words (``check_token_form``): references in another form would give a BLEU that means nothing."""
    streams = reference_lines(args.refs, args.config, args.tokenized)
    preprocessing = Preprocessing.read(args.config.parent) if args.config is not None else Preprocessing()
    if args.config is None or args.tokenized or preprocessing.keeps_tokens:
        known = {word for text in lists.texts for word in text.split()}
        remedy = ("give the lists' model with -f to make plain references its token form, or make it with pbmt "
                  "tokenize" if args.config is None else
                  "give plain text without --tokenized, or make the token form with pbmt tokenize" if args.tokenized
                  else KEEPS_TOKENS_REMEDY)
        for path, stream in zip(args.refs, streams):
            check_token_form(path, [line.split() for line in stream], known, preprocessing.target_language,
                             whose="the n-best list", remedy=remedy)
    return References(*streams)


def _requests(args: argparse.Namespace) -> list[tuple[str, str | None]]:
    """(kind, argument) of every rescoring feature the options ask for."""
    requests = [("lm", str(path.resolve())) for path in args.lm]
    if args.src is not None:
        requests.append(("length-ratio", None))
    for text in args.feature:
        kind, _, argument = text.partition(":")
        requests.append((kind, argument or None))
    return requests


def _check_given(args: argparse.Namespace) -> None:
    """UsageError for an option given a value other than its default that the run would ignore: an option of
    training with --weights, one of another optimiser than --algorithm's (--restarts with ListNet, --max-batches
    with MERT, --gain with MIRA); the error names whose option it is."""
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    tuners = pool_tuners()
    gains = [name for name, tuner in tuners.items() if "gain" in tuner.parameters()]
    readers = {"gain": gains, "algorithm": list(tuners), "seed": list(tuners), "out": list(tuners),
               **plugin_options().scope}
    for group, name in (("ListNet", "listnet"), ("MERT", "mert")):
        action_group = next(g for g in parser._action_groups if g.title == group)
        readers.update({action.dest: [name] for action in action_group._group_actions})
    for action in parser._actions:
        if action.dest not in readers or getattr(args, action.dest) == action.default:
            continue
        flag = action.option_strings[0]
        if not args.train:
            raise UsageError(f"{flag} is an option of --train: with --weights it would be ignored")
        if args.algorithm not in readers[action.dest]:
            raise UsageError(f"{flag} is an option of {listed(readers[action.dest])}, not of {args.algorithm}: it "
                             "would be ignored")


def _preset_flag(parameter: str, value) -> str:
    """The option and value that set ListNet's ``parameter`` to ``value``."""
    if isinstance(value, bool):
        return f"--{'' if value else 'no-'}{parameter}"
    return f"--{parameter.replace('_', '-')} {value:g}" if isinstance(value, float) else f"--{parameter} {value}"


def _params(args: argparse.Namespace) -> dict:
    if args.algorithm == "listnet":
        chosen = preset_values(args, PRESETS.get(args.listnet_preset, {}), ListNet,
                               {name: name for name in ("gain", "distinct", "learning_rate")})
        return {"normalisation": args.normalisation, "score_range": args.score_range, **chosen,
                "decay": args.decay, "batch_size": args.batch_size, "epochs": args.epochs,
                "max_batches": args.max_batches, "eval_every": args.eval_every, "progress": not args.quiet}
    if args.algorithm == "mert":
        return MERT_OPTIONS.build(Mert, args).params()
    if args.algorithm not in POOL_TUNERS:  # a plugin's
        return plugin_options().build(pool_tuners()[args.algorithm], args).params()
    return {"gain": args.gain} if args.gain else {}  # PRO and APRO: their own default otherwise


def _stored_features(model: RescoringModel, args: argparse.Namespace) -> list[FeatureSpec]:
    """The weights file's rescoring features, with --lm's paths when given."""
    specs = list(model.features)
    lms = [i for i, s in enumerate(specs) if s.kind == "lm"]
    if args.lm:
        if len(args.lm) != len(lms):
            raise PbmtError(f"{args.weights} has {len(lms)} LM feature(s) but --lm gives {len(args.lm)}")
        for i, path in zip(lms, args.lm):
            specs[i] = FeatureSpec("lm", specs[i].name, str(path))
    unknown = [s.kind for s in specs if s.kind not in KINDS]
    if unknown:
        raise PbmtError(f"{args.weights} uses rescoring feature kind(s) {', '.join(unknown)} that are not "
                        f"registered here (known: {', '.join(sorted(KINDS))}; a plugin's: give its file with "
                        "--plugins)")
    return specs

