"""pbmt tune and pbmt optimize from the command line."""

import argparse
import gzip
import itertools
import shutil
from pathlib import Path

import numpy as np
import pytest

from pbmt.commands.cli import build_parser, main
from pbmt.commands.tune import DECODING, DECODING_OPTIONS
from pbmt.base.config import MosesConfig
from pbmt.model.model import TranslationModel
from pbmt.model.sparse import SparseModel, SparseWeights, WordClasses
from pbmt.base.run_state import CHECKPOINT
from resumption import assert_resumed_as_uninterrupted, untimed_log

def tune_args(model_dir, dev, out, *extra):
    return ["tune", "-q", "-f", str(model_dir / "moses.ini"), "--src", str(dev / "dev.src"),
            "--refs", str(dev / "dev.ref"), "--out", str(out), "--n-best-size", "10", "--restarts", "4", *extra]


def checkpoint_weights(folder):
    with np.load(folder / CHECKPOINT) as arrays:
        return arrays["weights"].copy()


def test_resumed_and_parallel_runs_end_with_the_same_weights(tiny_model_dir, tiny_dev, tmp_path):
    assert main(tune_args(tiny_model_dir, tiny_dev, tmp_path / "full", "--iterations", "3", "--workers", "2")) == 0
    assert main(tune_args(tiny_model_dir, tiny_dev, tmp_path / "parts", "--iterations", "1")) == 0
    assert main(tune_args(tiny_model_dir, tiny_dev, tmp_path / "parts", "--iterations", "3", "--resume")) == 0
    full, parts = checkpoint_weights(tmp_path / "full"), checkpoint_weights(tmp_path / "parts")
    assert full.tobytes() == parts.tobytes()
    assert_resumed_as_uninterrupted(tmp_path / "parts", tmp_path / "full")


@pytest.mark.parametrize("other", [["--algorithm", "samplerank", "--epochs", "1"],
                                   ["--algorithm", "costmargin", "--passes", "3"],
                                   ["--algorithm", "costmargin", "--features", "binary", "--passes", "2"]])
def test_resuming_a_mert_run_with_another_loop_names_both_tuners_as_the_options_do(tiny_model_dir, tiny_dev,
                                                                                  tmp_path, capsys, other):
    assert main(tune_args(tiny_model_dir, tiny_dev, tmp_path, "--iterations", "1")) == 0
    capsys.readouterr()
    argv = [a for a in tune_args(tiny_model_dir, tiny_dev, tmp_path, "--resume", *other) if a != "--n-best-size"]
    argv.remove("10"), argv.remove("--restarts"), argv.remove("4")  # options of MERT's loop alone
    argv.remove("-q")  # nothing said before the refusal: it comes before the model loads
    assert main(argv) == 1
    err = capsys.readouterr().err
    called = " ".join(other[:-2])
    assert err == (f"pbmt tune: error: {tmp_path / CHECKPOINT}: cannot resume: it holds a run of --algorithm mert, "
                   f"not of {called}; resume it with --algorithm mert, or start afresh in another folder\n")


def test_tuning_raises_dev_bleu_on_the_shared_model(bible, tmp_path, capsys):
    """20 dev sentences, 30-best, two iterations: iteration 2 decodes with MERT's weights.

    On so small a pool MERT's optimum often rewards what the pool never shows
    (reordering salad: Moses's own first MERT iteration on the whole dev set
    fell to 5.29 BLEU); the climb from the previous weights alone (no random
    restarts) is the steadier choice here. The pool comes from the stack search: on 20 sentences one MERT
    step's gain depends on which 30 derivations the pool holds (cube pruning's pool: 43.03 -> 43.20).
    """
    argv = ["tune", "-f", str(bible / "model" / "moses.ini"), "--src", str(bible / "dev.tok.es"),
            "--refs", str(bible / "dev.tok.en"), "--out", str(tmp_path), "--sentences", "20", "--n-best-size", "30",
            "--iterations", "2", "--restarts", "0", "--seed", "3", "--search", "stack",
            "--interpolation", "1"]  # the full step: a dev set this small takes half steps by default
    assert main(argv) == 0
    assert "stopped: reached the iteration limit (2)" in capsys.readouterr().err
    rows = [line.split("\t") for line in (tmp_path / "log.tsv").read_text().splitlines()[1:]]
    untuned, tuned = float(rows[0][2]), float(rows[1][2])
    assert tuned > untuned + 0.5  # 43.03 -> 44.16
    weights = MosesConfig.read(tmp_path / "moses.ini").weights
    assert weights["UnknownWordPenalty0"] == (1.0,)
    assert sum(abs(w) for name, ws in weights.items() if name != "UnknownWordPenalty0" for w in ws) == \
        pytest.approx(1.0, abs=1e-8)
    assert (tmp_path / "dev-bleu.png").exists() and (tmp_path / "run2.moses.ini").exists()


@pytest.mark.parametrize("source, refs, message", [
    ("a b\n\nc\n", "x\ny\nz\n", "dev.src:2: empty source sentence"),
    ("a b\nc\n", "x\ny\nz\n", "has 2 sentences but"),
])
def test_bad_dev_sets_exit_1(tiny_model_dir, tmp_path, capsys, source, refs, message):
    (tmp_path / "dev.src").write_text(source)
    (tmp_path / "dev.ref").write_text(refs)
    assert main(tune_args(tiny_model_dir, tmp_path, tmp_path / "out")) == 1
    assert message in capsys.readouterr().err


def test_an_existing_run_is_not_overwritten(tiny_model_dir, tiny_dev, tmp_path, capsys):
    assert main(tune_args(tiny_model_dir, tiny_dev, tmp_path, "--iterations", "1")) == 0
    assert main(tune_args(tiny_model_dir, tiny_dev, tmp_path, "--iterations", "1")) == 1
    assert "pass --resume" in capsys.readouterr().err
    assert main(tune_args(tiny_model_dir, tiny_dev, tmp_path, "--iterations", "2", "--resume", "--n-best-size", "5")) == 1
    assert "cannot resume" in capsys.readouterr().err


@pytest.fixture(scope="module")
def moses_nbest(bible, tmp_path_factory):
    """Moses's 100-best lists of the first 40 dev sentences, and their references."""
    folder = tmp_path_factory.mktemp("moses-nbest")
    with gzip.open(bible / "model" / "dev.moses.nbest100.gz", "rt", encoding="utf-8") as f:
        lines = list(itertools.takewhile(lambda line: int(line.split(" |||")[0]) < 40, f))
    (folder / "nbest").write_text("".join(lines))
    refs = (bible / "dev.tok.en").read_text(encoding="utf-8").splitlines()[:40]
    (folder / "refs").write_text("\n".join(refs) + "\n")
    return folder


def test_optimize_tunes_a_moses_nbest_list_into_an_ini(bible, moses_nbest, tmp_path, capsys):
    argv = ["optimize", "--n-best", str(moses_nbest / "nbest"), "--refs", str(moses_nbest / "refs"),
            "--config", str(bible / "model" / "moses.ini"), "-o", str(tmp_path / "tuned.ini"), "--restarts", "3"]
    assert main(argv) == 0
    before, after = capsys.readouterr().err.split("BLEU of its 1-best ")[1].split(" after")[0].split(" -> ")
    assert float(after) > float(before)
    tuned = MosesConfig.read(tmp_path / "tuned.ini")
    assert tuned.weights["UnknownWordPenalty0"] == (1.0,)
    assert sum(abs(w) for name, ws in tuned.weights.items() if name != "UnknownWordPenalty0" for w in ws) == \
        pytest.approx(1.0, abs=1e-8)
    original = MosesConfig.read(bible / "model" / "moses.ini")
    assert [(f.type, f.name) for f in tuned.features] == [(f.type, f.name) for f in original.features]
    for feature in tuned.features:  # paths made absolute, so the ini works from its new folder
        if "path" in feature.args:
            assert Path(feature.args["path"]).is_absolute()
            assert Path(feature.args["path"]).samefile(original.resolve(original.feature(feature.name).args["path"]))


def test_optimize_without_config_prints_the_weight_section(moses_nbest, capsys):
    argv = ["optimize", "-q", "--n-best", str(moses_nbest / "nbest"), "--refs", str(moses_nbest / "refs"),
            "--restarts", "1", "--random-directions", "2"]
    assert main(argv) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "[weight]"
    assert [line.split("=")[0] for line in lines[1:]] == ["LexicalReordering0", "Distortion0", "LM0",
                                                          "WordPenalty0", "PhrasePenalty0", "TranslationModel0"]
    assert sum(abs(float(v)) for line in lines[1:] for v in line.split("=")[1].split()) == pytest.approx(1.0)
    for threads in ("1", "2"):  # MERT's line searches on threads: the same weights
        assert main(argv + ["--threads", threads]) == 0
        assert capsys.readouterr().out.splitlines() == lines


def test_optimize_says_once_that_an_optimiser_other_than_mert_runs_on_one_thread(moses_nbest, capsys):
    argv = ["optimize", "--n-best", str(moses_nbest / "nbest"), "--refs", str(moses_nbest / "refs"),
            "--algorithm", "pro"]
    assert main(argv + ["--threads", "2"]) == 0
    out, err = capsys.readouterr()
    note = "note: pro runs on one thread (--threads is for MERT's line searches)\n"
    assert err.startswith(note) and err.count("note:") == 1
    for quiet in (["--threads", "1"], [], ["--threads", "2", "-q"]):  # not asked for, or asked for silence
        assert main(argv + quiet) == 0
        again = capsys.readouterr()
        assert again.out == out and "note:" not in again.err and ("pool:" in again.err) == ("-q" not in quiet)


def test_optimize_rejects_a_feature_count_that_differs_from_the_weights(bible, moses_nbest, tmp_path, capsys):
    ini = (bible / "model" / "moses.ini").read_text()
    ini = ini.replace("num-features=4", "num-features=5").replace("TranslationModel0= 0.2 0.2 0.2 0.2",
                                                                  "TranslationModel0= 0.2 0.2 0.2 0.2 0.2")
    (tmp_path / "moses.ini").write_text(ini)
    argv = ["optimize", "--n-best", str(moses_nbest / "nbest"), "--refs", str(moses_nbest / "refs"),
            "--config", str(tmp_path / "moses.ini"), "-o", str(tmp_path / "out.ini")]
    assert main(argv) == 1
    assert "feature TranslationModel0 has 4 values but" in capsys.readouterr().err
    assert not (tmp_path / "out.ini").exists()


def test_a_tuned_folder_keeps_the_models_sparse_features(tiny_model_dir, tiny_dev, tmp_path):
    """MERT tunes the dense weights; the sparse features the model decoded with go to --out unchanged."""
    model_dir = tmp_path / "model"
    shutil.copytree(tiny_model_dir, model_dir, ignore=shutil.ignore_patterns("*.pbmt-cache"))
    model = TranslationModel.load(model_dir / "moses.ini")
    sparse = SparseModel.new(WordClasses(("the", "lord", "said", "unto"), [0, 1, 1, 0], ("k0", "k1")))
    sparse = sparse.with_weights(np.linspace(-0.5, 0.5, sparse.size))
    sparse.write(model_dir, model.toml_tables(model_dir))
    out = tmp_path / "tuned"
    assert main(tune_args(model_dir, tiny_dev, out, "--iterations", "1")) == 0
    tuned = TranslationModel.load(out / "moses.ini")
    assert tuned.sparse is not None and tuned.sparse.names() == sparse.names()
    np.testing.assert_array_equal(tuned.sparse.weights, sparse.weights)


def test_plain_dev_text_tunes_as_its_token_form(tmp_path):
    """The embedded (truecased) model tuned on 4 plain dev verses and on what pbmt tokenize makes of them:
    the same pool, hence the same log and weights; likewise pbmt optimize and pbmt rescore on an n-best list."""
    model = Path(__file__).resolve().parents[2] / "data" / "model" / "moses.ini"
    with gzip.open(Path(__file__).resolve().parents[2] / "data" / "bible" / "dev.es.gz", "rt") as es, \
            gzip.open(Path(__file__).resolve().parents[2] / "data" / "bible" / "dev.en.gz", "rt") as en:
        (tmp_path / "dev.es").write_text("".join(itertools.islice(es, 4)), encoding="utf-8")
        (tmp_path / "dev.en").write_text("".join(itertools.islice(en, 4)), encoding="utf-8")
    for side, lang in (("source", "es"), ("target", "en")):
        assert main(["tokenize", "-f", str(model), "--side", side, "-i", str(tmp_path / f"dev.{lang}"),
                     "-o", str(tmp_path / f"dev.tok.{lang}")]) == 0
    assert (tmp_path / "dev.tok.en").read_text().startswith("now after the death of Moses the servant of the LORD")
    common = ["-q", "-f", str(model), "--n-best-size", "10", "--iterations", "2", "--restarts", "2"]
    assert main(["tune", *common, "--src", str(tmp_path / "dev.es"), "--refs", str(tmp_path / "dev.en"),
                 "--out", str(tmp_path / "plain")]) == 0
    assert main(["tune", *common, "--src", str(tmp_path / "dev.tok.es"), "--refs", str(tmp_path / "dev.tok.en"),
                 "--tokenized", "--out", str(tmp_path / "tok")]) == 0
    logs = [untimed_log(tmp_path / run) for run in ("plain", "tok")]
    assert logs[0] == logs[1] and len(logs[0]) == 3
    assert checkpoint_weights(tmp_path / "plain").tobytes() == checkpoint_weights(tmp_path / "tok").tobytes()
    # the tuned folder stands alone: its pbmt.toml names truecaser files copied beside it
    assert gzip.decompress((tmp_path / "plain" / "truecase-model.source.gz").read_bytes()) == gzip.decompress(
        (model.parent / "truecase-model.source.gz").read_bytes())
    assert main(["tokenize", "-f", str(tmp_path / "plain" / "moses.ini"), "-i", str(tmp_path / "dev.es"),
                 "-o", str(tmp_path / "again")]) == 0
    assert (tmp_path / "again").read_text() == (tmp_path / "dev.tok.es").read_text()
    # pbmt optimize and pbmt rescore take the plain references too
    assert main(["translate", "-q", "-f", str(model), "-i", str(tmp_path / "dev.es"), "-o", str(tmp_path / "out"),
                 "--n-best", str(tmp_path / "nbest"), "--n-best-size", "10"]) == 0
    for refs, extra in (("dev.en", []), ("dev.tok.en", ["--tokenized"])):
        assert main(["optimize", "-q", "--n-best", str(tmp_path / "nbest"), "--refs", str(tmp_path / refs),
                     "--config", str(model), "--restarts", "2", "-o", str(tmp_path / f"{refs}.ini"), *extra]) == 0
        assert main(["rescore", "-q", "-f", str(model), "--n-best", str(tmp_path / "nbest"), "--refs",
                     str(tmp_path / refs), "--src", str(tmp_path / refs.replace(".en", ".es")), "--train",
                     "--algorithm", "mert", "--out", str(tmp_path / f"{refs}.weights"), *extra]) == 0
    assert (tmp_path / "dev.en.ini").read_text() == (tmp_path / "dev.tok.en.ini").read_text()
    assert (tmp_path / "dev.en.weights").read_text() == (tmp_path / "dev.tok.en.weights").read_text()


def test_a_dev_set_not_in_the_model_form_is_an_error(bible, tmp_path, capsys):
    """The shared model is lowercased and tokenised with no pbmt.toml: plain dev text is not its form."""
    argv = ["tune", "-q", "-f", str(bible / "model" / "moses.ini"), "--src", str(bible / "dev.es"),
            "--refs", str(bible / "dev.tok.en"), "--out", str(tmp_path), "--sentences", "8"]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert f"{bible / 'dev.es'}:1: " in err and "is known to the model only as" in err
    assert "8 of 8 lines are not in the model's token form (the model neither tokenises nor cases plain text: " \
        "make its token form with pbmt tokenize --language L" in err


def test_tune_scores_dev_against_several_references(tiny_model_dir, tiny_dev, tmp_path):
    """The first iteration's dev BLEU is sacrebleu's of the untuned 1-best against both --refs files."""
    import csv

    import sacrebleu

    second = tmp_path / "dev.ref2"
    second.write_text("\n".join(["go the lord said", "israel house", "the lord", "said go", "lord", "the israel",
                                 "go go", "house"]) + "\n")
    assert main(["translate", "-q", "-f", str(tiny_model_dir / "moses.ini"), "--tokenized", "-i",
                 str(tiny_dev / "dev.src"), "-o", str(tmp_path / "untuned.out")]) == 0
    out = tmp_path / "tuned"
    argv = tune_args(tiny_model_dir, tiny_dev, out, "--iterations", "1")
    argv.insert(argv.index("--refs") + 2, str(second))
    assert main(argv) == 0
    with open(out / "log.tsv", newline="") as f:
        first = next(csv.DictReader(f, delimiter="\t"))
    hyps = (tmp_path / "untuned.out").read_text().splitlines()
    refs = [(tiny_dev / "dev.ref").read_text().splitlines(), second.read_text().splitlines()]
    assert float(first["dev_bleu"]) == pytest.approx(sacrebleu.corpus_bleu(hyps, refs, tokenize="none").score,
                                                     abs=1e-3)
    assert main(tune_args(tiny_model_dir, tiny_dev, tmp_path / "sr", "--algorithm", "samplerank", "--refs",
                          str(second), str(second))) == 2


def test_optimize_tunes_the_sparse_features_of_an_nbest_list(sparse_model_dir, tiny_dev, tmp_path, capsys):
    """PRO on a list with the boundary family's features writes their weights (--sparse-weights with
    --config); MERT tunes the dense ones and says so."""
    nbest = tmp_path / "nbest"
    assert main(["translate", "-q", "-f", str(sparse_model_dir / "moses.ini"), "--tokenized", "-i",
                 str(tiny_dev / "dev.src"), "-o", str(tmp_path / "out"), "--n-best", str(nbest),
                 "--n-best-size", "20"]) == 0
    common = ["optimize", "--n-best", str(nbest), "--refs", str(tiny_dev / "dev.ref")]
    assert main([*common, "--algorithm", "pro", "--sparse-l1", "0.01", "-o", str(tmp_path / "w")]) == 0
    assert "sparse features: " in capsys.readouterr().err
    lines = (tmp_path / "w").read_text().splitlines()
    sparse = [line for line in lines if line.startswith("pb_")]
    assert sparse and all(len(line.split()) == 2 and line.split()[0].endswith("=") for line in sparse)
    ini = ["-f", str(sparse_model_dir / "moses.ini"), "-o", str(tmp_path / "tuned.ini")]
    assert main([*common, "--algorithm", "apro", *ini]) == 2
    assert "give --sparse-weights FILE" in capsys.readouterr().err
    assert main([*common, "--algorithm", "apro", *ini, "--sparse-weights", str(tmp_path / "sw")]) == 0
    weights = SparseWeights.read(tmp_path / "sw")
    assert weights.names and set(weights.names) <= set(TranslationModel.load(sparse_model_dir / "moses.ini")
                                                        .sparse.names())
    assert main([*common, "--algorithm", "mira", "--mira-epochs", "3", *ini, "--sparse-weights",
                 str(tmp_path / "mira")]) == 0
    assert SparseWeights.read(tmp_path / "mira").names
    assert main([*common, "--algorithm", "mert", "--restarts", "1", *ini]) == 0
    assert "tunes the dense features only" in capsys.readouterr().err


def test_optimize_starts_the_sparse_weights_from_the_models(sparse_model_dir, tiny_dev, tmp_path):
    """With --config, the sparse features start from the weights of the model's pbmt.toml: PRO with Psi = 0
    keeps them."""
    nbest = tmp_path / "nbest"
    assert main(["translate", "-q", "-f", str(sparse_model_dir / "moses.ini"), "--tokenized", "-i",
                 str(tiny_dev / "dev.src"), "-o", str(tmp_path / "out"), "--n-best", str(nbest)]) == 0
    common = ["optimize", "-q", "--n-best", str(nbest), "--refs", str(tiny_dev / "dev.ref"), "-f",
              str(sparse_model_dir / "moses.ini"), "-o", str(tmp_path / "tuned.ini"), "--sparse-weights",
              str(tmp_path / "sw")]
    assert main([*common, "--algorithm", "pro", "--interpolation", "0"]) == 0
    kept = SparseWeights.read(tmp_path / "sw")
    model = TranslationModel.load(sparse_model_dir / "moses.ini").sparse
    by_name = dict(zip(model.names(), model.weights))
    assert kept.names and all(by_name[n] == pytest.approx(v) for n, v in zip(kept.names, kept.values))


def test_an_interrupted_run_says_what_it_kept_and_how_to_go_on(tiny_model_dir, tiny_dev, tmp_path, capsys,
                                                               monkeypatch):
    """Ctrl-C during the second iteration: one iteration kept, and --resume ends where an uninterrupted run does."""
    from pbmt.base.run_state import RunFolder

    save, saves = RunFolder.save, []

    def interrupted_at_the_second(self, *args):
        saves.append(1)
        if len(saves) == 2:
            raise KeyboardInterrupt
        return save(self, *args)

    monkeypatch.setattr(RunFolder, "save", interrupted_at_the_second)
    out = tmp_path / "stopped"
    assert main(tune_args(tiny_model_dir, tiny_dev, out, "--iterations", "3")) == 130
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"pbmt tune: interrupted (1 iteration kept in {out / CHECKPOINT}: the same command with --resume goes on "
        "after it)")
    monkeypatch.setattr(RunFolder, "save", save)
    assert main(tune_args(tiny_model_dir, tiny_dev, out, "--iterations", "3", "--resume")) == 0
    assert main(tune_args(tiny_model_dir, tiny_dev, tmp_path / "whole", "--iterations", "3")) == 0
    assert_resumed_as_uninterrupted(out, tmp_path / "whole")

    saves.clear()
    monkeypatch.setattr(RunFolder, "save", lambda self, *args: (_ for _ in ()).throw(KeyboardInterrupt))
    assert main(tune_args(tiny_model_dir, tiny_dev, tmp_path / "first", "--iterations", "3")) == 130
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"pbmt tune: interrupted (no step finished, nothing kept in {tmp_path / 'first'}: the same command starts "
        "the run again)")


def test_samplerank_refuses_the_options_of_decoding_the_dev_set(tiny_model_dir, tiny_dev, tmp_path, capsys):
    """The sampler loop decodes with the model's own search settings: an option of the dev set's decoding (the
    other loops') would be ignored."""
    parser = build_parser()
    tune = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices["tune"]
    group = next(g for g in tune._action_groups if g.title == DECODING)
    assert DECODING_OPTIONS == {a.dest: a.option_strings[-1] for a in group._group_actions}
    for flag, value in (("--n-best-size", "5"), ("--reordering", "mon-swap"), ("--search", "stack"),
                        ("--pop-limit", "10")):
        assert main(["tune", "-f", str(tiny_model_dir / "moses.ini"), "--src", str(tiny_dev / "dev.src"), "--refs",
                     str(tiny_dev / "dev.ref"), "--out", str(tmp_path / "run"), "--algorithm", "samplerank", flag,
                     value]) == 2
        assert (f"{flag} sets how the other tuners decode the dev set; samplerank samples it"
                in capsys.readouterr().err)
        assert not (tmp_path / "run").exists()
    (tmp_path / "classes.txt").write_text("a\t0\n")
    for features in ("dense", "distortion"):
        assert main(["tune", "-f", str(tiny_model_dir / "moses.ini"), "--src", str(tiny_dev / "dev.src"), "--refs",
                     str(tiny_dev / "dev.ref"), "--out", str(tmp_path / "run"), "--algorithm", "samplerank",
                     "--features", features, "--word-classes", str(tmp_path / "classes.txt")]) == 2
        assert (f"--word-classes is for --features boundary: with --features {features} it would be ignored"
                in capsys.readouterr().err)


@pytest.mark.parametrize("extra, length", [
    (["--iterations", "1"], "at most 1 iteration of 10-best decoding"),
    (["--algorithm", "costmargin", "--passes", "2", "--sgd-passes", "2"], "2 passes of 1-best decoding"),
    (["--algorithm", "samplerank", "--epochs", "1", "--samples-per-sentence", "5", "--burn-in-per-sentence", "1",
      "--no-dev-bleu"], "1 epoch of sampling"),
])
def test_a_run_says_what_it_does_and_where_before_its_first_decode(tiny_model_dir, tiny_dev, tmp_path, capsys, extra,
                                                                    length):
    """Standard error in a log file (not a terminal: no progress bars) starts with the run's start line."""
    out = tmp_path / "run"
    n_best = ["--n-best-size", "10"] if "--iterations" in extra else []
    assert main(["tune", "-f", str(tiny_model_dir / "moses.ini"), "--src", str(tiny_dev / "dev.src"), "--refs",
                 str(tiny_dev / "dev.ref"), "--out", str(out), *n_best, *extra]) == 0
    size = len((tiny_dev / "dev.src").read_text().splitlines())
    first = capsys.readouterr().err.splitlines()[0]
    assert first == (f"tuning with {extra[1] if extra[0] == '--algorithm' else 'mert'} on {size} sentences of "
                     f"{tiny_dev / 'dev.src'}: {length}; moses.ini, log.tsv and the checkpoint "
                     f"({out / CHECKPOINT}) go to {out}")
