"""SampleRank with held-out sentences: never tuned on, decoded after every epoch, the best epoch's weights kept
(checked against sacrebleu of pbmt translate's 1-best), resumable; the presets; the usage errors."""

import dataclasses
import inspect

import numpy as np
import pytest
import sacrebleu

from pbmt.commands.cli import build_parser, main
from pbmt.commands.tune import OPTIONS
from pbmt.base.documents import Documents
from pbmt.model.model import TranslationModel
from pbmt.base.plots import read_tuning_log
from pbmt.tune.samplerank import SAMPLERANK_LOG
from pbmt.features.translation import Translator
from pbmt.tune.held_out import held_out_sentences
from pbmt.tune.sampler_chains import PRESETS, Settings, encode_dev, mix, run_chain, shards
from pbmt.tune.samplerank import SampleRank
from sampler_task import fitted_on
from resumption import assert_resumed_as_uninterrupted

KW = dict(batch_size=3, samples_per_sentence=10, burn_in_per_sentence=1)


def lines(bible, name, n):
    return (bible / name).read_text(encoding="utf-8").splitlines()[:n]


@pytest.fixture(scope="module")
def dev(bible):
    model = TranslationModel.load(bible / "model" / "moses.ini")
    return model, lines(bible, "dev.tok.es", 12), lines(bible, "dev.tok.en", 12)


@pytest.mark.parametrize("documents", [None, Documents.from_keys([f"A 1:{v}" for v in range(1, 4)]
                                                                 + [f"B 1:{v}" for v in range(1, 6)]
                                                                 + [f"C 1:{v}" for v in range(1, 5)])])
def test_the_chains_tune_on_the_other_sentences_only(dev, documents):
    model, src, ref = dev
    fitted = fitted_on(SampleRank(epochs=2, chains=2, held_out=4, **KW), model, src, ref, np.random.default_rng(5),
                                                                   documents=documents)
    held = held_out_sentences(12, 4, documents)
    np.testing.assert_array_equal(fitted.held_out_, held)
    tuning = np.setdiff1d(np.arange(12), held)
    assert len(tuning) == (8 if documents is None else 7)  # with documents: B, the middle one, is held out
    chunk_of = None if documents is None else documents.chunks(KW["batch_size"])
    dev_set = encode_dev(model, src, ref)
    seed = int(np.random.default_rng(5).integers(2**63))
    weights = np.array(model.weights)
    for epoch in range(2):
        parts = shards(tuning, 2, seed, epoch, chunk_of)
        np.testing.assert_array_equal(np.sort(np.concatenate(parts)), tuning)
        weights = mix([run_chain(model, dev_set, part, weights, np.random.default_rng([seed, epoch, c]),
                                 Settings(**KW), chunk_of) for c, part in enumerate(parts)])[0]
        np.testing.assert_array_equal(fitted.log_[epoch].weights, weights)


def tune_args(bible, out, *extra):
    return ["tune", "-f", str(bible / "model" / "moses.ini"), "--src", str(bible / "dev.tok.es"), "--refs",
            str(bible / "dev.tok.en"), "--out", str(out), "--sentences", "12", "--algorithm", "samplerank",
            "--batch-size", "3", "--samples-per-sentence", "10", "--burn-in-per-sentence", "1", "--chains", "2",
            *extra]


def test_the_kept_weights_are_the_best_held_out_epochs_by_sacrebleu(bible, dev, tmp_path, capsys):
    model, src, ref = dev
    out = tmp_path / "sr"
    assert main(tune_args(bible, out, "--samplerank-preset", "paper", "--epochs", "3", "--held-out", "4",
                          "--seed", "0")) == 0
    summary = capsys.readouterr().err
    # the same run through the API, with the paper's settings the preset stands for
    expected = fitted_on(SampleRank(3, held_out=4, **{**PRESETS["paper"], **KW, "chains": 2}), model, src, ref,
                         np.random.default_rng(0))
    log = read_tuning_log(out / "log.tsv", [SAMPLERANK_LOG])
    assert not np.isnan(log.dev_bleu).any()  # the tuning sentences' BLEU beside it
    held = held_out_sentences(12, 4)
    from_scratch = []
    for epoch, e in enumerate(expected.log_):
        translator = Translator(model.with_weights(e.averaged), tokenized=True)
        firsts = [translator.translate(int(i), src[i]).text for i in held]
        from_scratch.append(sacrebleu.corpus_bleu(firsts, [[ref[i] for i in held]], tokenize="none").score)
        assert log.held_out_bleu[epoch] == pytest.approx(from_scratch[-1], abs=1e-3)
    best = max(range(3), key=lambda k: (from_scratch[k], -k))
    assert len(set(from_scratch)) > 1 and best != 2  # the choice is not the last epoch's
    np.testing.assert_allclose(TranslationModel.load(out / "moses.ini").weights, expected.log_[best].averaged,
                               atol=1e-8)
    assert f"kept the averaged weights of epoch {best + 1}: the best held-out BLEU, " \
           f"{from_scratch[best]:.2f} on 4 held-out sentences" in summary
    assert (out / "dev-bleu.png").read_bytes()[:4] == b"\x89PNG"


def test_a_resumed_run_keeps_what_an_uninterrupted_one_keeps(bible, tmp_path, capsys):
    whole, parts = tmp_path / "whole", tmp_path / "parts"
    common = ("--epochs", "3", "--held-out", "4", "--samplerank-c", "0.01", "--seed", "0", "-q")
    assert main(tune_args(bible, whole, *common, "--dev-bleu")) == 0
    # the first part measures no tuning-set BLEU; the resumed run measures it for the epochs before it too
    assert main(tune_args(bible, parts, *common[:1], "1", *common[2:], "--no-dev-bleu")) == 0
    assert main(tune_args(bible, parts, *common, "--dev-bleu", "--resume")) == 0
    assert_resumed_as_uninterrupted(parts, whole, ("moses.ini",))
    assert not np.isnan(read_tuning_log(parts / "log.tsv", [SAMPLERANK_LOG]).dev_bleu).any()
    capsys.readouterr()
    assert main(tune_args(bible, parts, *common[:3], "5", *common[4:], "--resume")) == 1
    err = capsys.readouterr().err
    assert "cannot resume: the run was started with other settings: held out [1, 4, 7, 10] there" in err


@pytest.mark.parametrize("extra, message", [
    (["--held-out", "0"], "--held-out must be at least 1"),
    (["--held-out", "12"], "--held-out 12 leaves nothing to tune on: the dev set has 12 sentences"),
    (["--held-out", "2", "--sentences", "6", "--documents", "KEYS"], "holds out whole documents, and "),
    (["--samplerank-preset", "paper", "--chains", "0"], "--chains must be at least 1"),
    (["--gain", "bleu+1"], "--gain bleu+1 is a sentence gain (PRO's and APRO's); SampleRank takes batch-bleu or "),
])
def test_usage_errors_exit_2_in_one_line(bible, tmp_path, capsys, extra, message):
    extra = [str(bible / "dev.keys") if e == "KEYS" else e for e in extra]
    try:
        code = main(tune_args(bible, tmp_path / "sr", "--epochs", "1", *extra))
    except SystemExit as exit_:  # a range error is argparse's
        code = exit_.code
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0]
    assert not (tmp_path / "sr").exists()


def parameters(*argv):
    """The parameters a preset can set of the SampleRank ``pbmt tune`` builds from ``argv``."""
    args = build_parser().parse_args(["tune", "-f", "m", "--src", "s", "--refs", "r", "--out", "o", *argv])
    tuner = OPTIONS.build(SampleRank, args)
    return {**dataclasses.asdict(tuner.settings), "chains": tuner.chains}


def test_a_preset_sets_what_is_not_given_and_the_defaults_stay_the_others():
    plain = parameters()
    assert plain == {name: inspect.signature(SampleRank).parameters[name].default for name in plain}
    assert set(plain) >= {name for preset in PRESETS.values() for name in preset}
    paper = parameters("--samplerank-preset", "paper", "--chains", "3")
    assert paper == {**plain, **PRESETS["paper"], "chains": 3}
    assert (paper["gain_scale"], paper["c"], paper["update"], paper["start"]) == (1.0, 0.01, "sample-oracle", "gloss")
    assert parameters("--samplerank-preset", "paper", "--gain", "batch-bleu-unclipped")["gain"] == "batch-bleu-unclipped"
    variant = parameters("--samplerank-preset", "expected-gain", "--temperature", "0.5")
    assert variant == {**plain, **PRESETS["expected-gain"], "temperature": 0.5}
