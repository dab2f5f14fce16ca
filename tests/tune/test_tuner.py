"""The tuner contract: every registered tuner declares a known loop and the data it reads, its options set
constructor parameters it has, its parameters rebuild it, and a loop refuses data that lacks what it reads;
the gains are metric objects of one interface, each checked against sacrebleu."""

from __future__ import annotations

import argparse
import dataclasses

import numpy as np
import pytest
import sacrebleu

from pbmt.commands.tuners import TunerOptions
from pbmt.base.errors import PbmtError, UsageError
from pbmt.metrics.bleu import segment_stats
from pbmt.tune.gains import GAINS, LEVELS, gain_of
from pbmt.tune.registry import ALGORITHMS, POOL_TUNERS, TUNERS, tuner_class
from pbmt.tune.tuner import LOOPS, TuningData

FIELDS = {f.name for f in dataclasses.fields(TuningData)}


@pytest.mark.parametrize("tuner", TUNERS, ids=lambda t: f"{t.name}-{t.loop}")
def test_a_tuner_declares_its_loop_its_data_and_options_of_its_own_parameters(tuner):
    assert tuner.loop in LOOPS, f"{tuner.__name__}.loop {tuner.loop!r} is no loop of pbmt.tune.tuner.LOOPS"
    assert set(tuner.reads) <= FIELDS, f"{tuner.__name__} reads {set(tuner.reads) - FIELDS}, not TuningData's"
    parameters = tuner.parameters()
    for option in tuner.options:  # an option it lists and ignored would pass check_given and do nothing
        assert option.parameter is None or option.parameter in parameters, (
            f"{option.flags[-1]} sets {option.parameter!r}, which {tuner.__name__}'s constructor does not take")
    assert tuner.gain_level is None or ("gain" in parameters and tuner.gain_level in LEVELS)
    built = tuner()
    assert type(built)(**built.params()).params() == built.params(), "params() must rebuild the tuner"


def test_the_registry_names_each_algorithm_and_refuses_what_it_does_not_tune():
    assert ALGORITHMS == tuple(dict.fromkeys(t.name for t in TUNERS))
    assert {"mert", "lattice-mert", "pro", "apro", "listnet", "costmargin", "perceptron", "samplerank"} <= set(
        ALGORITHMS)
    assert tuner_class("costmargin", "binary").loop == "block" and tuner_class("costmargin").loop == "relevant-set"
    assert set(POOL_TUNERS) >= {"mert", "pro", "apro", "listnet"}
    with pytest.raises(UsageError, match="--features boundary is tuned by --algorithm samplerank"):
        tuner_class("mert", "boundary")
    with pytest.raises(UsageError, match="unknown tuning algorithm"):
        tuner_class("mret")


@pytest.mark.parametrize("name", [n for n, t in POOL_TUNERS.items()])
def test_a_pool_tuner_refuses_data_without_a_pool(name):
    with pytest.raises(PbmtError, match="reads pool"):
        POOL_TUNERS[name]().fit(TuningData(), np.zeros(3), np.random.default_rng(0))


def test_options_take_their_defaults_from_the_constructors():
    options = TunerOptions(TUNERS)
    parser = argparse.ArgumentParser()
    options.add_to(parser)
    args = parser.parse_args([])
    assert args.pro_samples == POOL_TUNERS["pro"].default("samples")
    assert args.sgd_passes == tuner_class("costmargin").default("sgd_passes")
    assert args.restarts is None and args.interpolation is None  # each tuner's own default
    assert options.build(POOL_TUNERS["mert"], args, "mon-swap").interpolation == 0.5
    assert options.build(tuner_class("lattice-mert"), args).restarts == 0
    assert options.build(tuner_class("lattice-mert"), args).margin == tuner_class("lattice-mert").default("margin")
    for given, margin in (("none", None), ("0.5", 0.5)):
        chosen = parser.parse_args(["--lattice-margin", given, "--max-step", given])
        assert options.build(tuner_class("lattice-mert"), chosen).margin == margin
        assert options.build(tuner_class("mert"), chosen).max_step == margin  # 'none': Och's unbounded search


def test_gains_are_one_interface_checked_against_sacrebleu():
    hyps = ["the cat sat on the mat", "a dog", "the the the", "he went to the house today"]
    refs = ["the cat sat on a mat", "a big dog barked", "the cat", "he went home"]
    stats = segment_stats(hyps, [[r] for r in refs])
    corpus = sacrebleu.corpus_bleu(hyps, [refs], tokenize="none", force=True).score / 100
    assert GAINS["bleu"].corpus_score(stats) == pytest.approx(corpus, abs=1e-12)
    for i, (h, r) in enumerate(zip(hyps, refs)):
        plus1 = sacrebleu.sentence_bleu(h, [r], smooth_method="add-k", smooth_value=1, tokenize="none").score / 100
        assert GAINS["bleu+1"].score(stats[i]) == pytest.approx(plus1, abs=1e-12)
    assert np.all(GAINS["bleu+1-unclipped"].score(stats) >= GAINS["bleu+1"].score(stats))
    assert {g.level for g in GAINS.values()} == set(LEVELS)
    with pytest.raises(ValueError, match="gain must be one of"):
        gain_of("batch-bleu", "sentence")


def test_an_option_the_chosen_tuner_does_not_take_is_refused_not_ignored():
    options = TunerOptions(TUNERS)
    parser = argparse.ArgumentParser()
    options.add_to(parser)
    given = parser.parse_args(["--sparse-l1", "3", "--mira-c", "0.5"])
    options.check_given(POOL_TUNERS["pro"], parser.parse_args(["--sparse-l1", "3"]))
    with pytest.raises(UsageError, match="--mira-c is an option of mira, not of pro: it would be ignored"):
        options.check_given(POOL_TUNERS["pro"], given)
    with pytest.raises(UsageError, match="--sparse-l1 is an option of pro and apro, not of mert"):
        options.check_given(POOL_TUNERS["mert"], given)
    defaults = parser.parse_args([])
    for tuner in TUNERS:  # nothing given: every tuner builds
        options.check_given(tuner, defaults)
    same_as_default = parser.parse_args(["--sparse-l1", str(POOL_TUNERS["pro"].default("l1"))])
    options.check_given(POOL_TUNERS["mert"], same_as_default)  # nothing changes: not refused


@pytest.mark.parametrize("algorithm, features, argv, message", [
    ("costmargin", "dense", ["--iterations", "5"], "--iterations is an option of mert, lattice-mert, pro, apro, "
     "listnet and mira, not of costmargin: it would be ignored"),
    ("samplerank", "dense", ["--passes", "3"], "--passes is an option of costmargin and perceptron, not of samplerank"),
    ("mert", "dense", ["--passes", "3"], "--passes is an option of costmargin and perceptron, not of mert"),
    ("mert", "dense", ["--epochs", "3"], "--epochs is an option of samplerank, not of mert"),
    ("costmargin", "dense", ["--oracle-beam", "5"], "--oracle-beam is an option of costmargin --features binary, "
     "not of costmargin"),
    ("samplerank", "boundary", ["--oracle-beam", "5"], "--oracle-beam is an option of costmargin --features binary, "
     "not of samplerank"),
    ("costmargin", "binary", ["--flat-weight", "0.2"], "--flat-weight is an option of costmargin and perceptron, "
     "not of costmargin --features binary"),
    ("perceptron", "dense", ["--word-classes", "classes.txt"], "--word-classes is an option of samplerank, not of "
     "perceptron"),
])
def test_a_loop_setting_the_chosen_tuner_s_loop_does_not_read_is_refused(algorithm, features, argv, message):
    options = TunerOptions(TUNERS)
    parser = argparse.ArgumentParser()
    options.add_to(parser)
    with pytest.raises(UsageError, match=message):
        options.check_given(tuner_class(algorithm, features), parser.parse_args(argv))


@pytest.mark.parametrize("tuner", TUNERS, ids=lambda t: f"{t.name}-{t.loop}")
def test_every_option_a_tuner_lists_is_taken_given_any_value(tuner):
    options = TunerOptions(TUNERS)
    parser = argparse.ArgumentParser()
    options.add_to(parser)
    given = parser.parse_args([])
    for option in tuner.options:
        setattr(given, option.destination, object())  # a value no default equals
    options.check_given(tuner, given)
