"""Every verb that writes a file refuses an output that names one of the files its run reads (the model's
moses.ini, pbmt.toml, truecasers and tables, --weights, the input): exit 2, one line, the file left byte for byte
as it was, and nothing else written; refused before the work, not after it."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from pbmt.commands.cli import main
from reliability import fuzz, optimize_args  # noqa: F401 - a fixture
from repo_data import EMBEDDED_MODEL

SOURCE = "a b c\nc a e b\n"
TOML = ('[preprocess]\ntokenize = true\nlowercase = false\ntruecase = true\nsource_language = "es"\n'
        'target_language = "en"\nsource_truecaser = "truecase-model.source.gz"\n'
        'target_truecaser = "truecase-model.target.gz"\n')
MODEL_FILES = ["moses.ini", "pbmt.toml", "truecase-model.source.gz", "truecase-model.target.gz", "phrase-table.gz"]


@pytest.fixture(scope="module")
def model(tiny_model_dir, tmp_path_factory) -> Path:
    """The tiny model with a pbmt.toml naming the embedded model's truecasers, beside them."""
    folder = tmp_path_factory.mktemp("guarded-model")
    shutil.copytree(tiny_model_dir, folder, dirs_exist_ok=True, ignore=shutil.ignore_patterns("*.pbmt-cache"))
    (folder / "pbmt.toml").write_text(TOML)
    for name in ("truecase-model.source.gz", "truecase-model.target.gz"):
        shutil.copy(EMBEDDED_MODEL.parent / name, folder / name)
    return folder


def _verbs(ini: Path, source: Path, weights: Path) -> dict[str, callable]:
    """verb -> argv writing its output (one of each file-writing option) to the path given."""
    sample = ["sample", "-q", "-f", ini, "-i", source, "--steps-per-sentence", "10", "--threads", "1"]
    analyze = ["analyze", "-q", "-f", ini, "-i", source, "--refs", source, "--threads", "1", "--bootstrap", "10"]
    return {
        "tokenize": lambda out: ["tokenize", "-q", "-f", ini, "-i", source, "-o", out],
        "detokenize": lambda out: ["detokenize", "-q", "-f", ini, "-i", source, "-o", out],
        "explain --html": lambda out: ["explain", "-f", ini, "a b", "--html", out],
        "explain --dot": lambda out: ["explain", "-f", ini, "a b", "--dot", out],
        "analyze": lambda out: [*analyze, "-o", out],
        "analyze --weights": lambda out: [*analyze, "--weights", weights, "-o", out],
        "sample": lambda out: [*sample, "-o", out],
        "sample --trace": lambda out: [*sample, "--trace", out],
    }


VERBS = list(_verbs(Path(), Path(), Path()))


@pytest.mark.parametrize("verb", VERBS)
def test_an_output_naming_a_file_the_run_reads_is_refused_and_the_file_stays(model, tmp_path, capsys, verb):
    source, weights = tmp_path / "in.txt", tmp_path / "weights.ini"
    source.write_text(SOURCE)
    weights.write_text("[weight]\nLM0= 0.4\n")
    argv = _verbs(model / "moses.ini", source, weights)[verb]
    targets = ([model / name for name in MODEL_FILES] + ([source] if "explain" not in verb else [])
               + ([weights] if "weights" in verb else []))
    listing = sorted(p.name for p in model.iterdir() if not p.name.endswith(".pbmt-cache"))
    for target in targets:
        before = target.read_bytes()
        assert main([str(a) for a in argv(target)]) == 2, target
        out, err = capsys.readouterr()
        assert err.startswith(f"pbmt {verb.split()[0]}: error: {target}: is an input of this run too"), err
        assert err.count("\n") == 1 and out == ""  # nothing explained nor reported: refused before the work
        assert target.read_bytes() == before
    assert sorted(p.name for p in model.iterdir() if not p.name.endswith(".pbmt-cache")) == listing
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["in.txt", "weights.ini"])
    assert main([str(a) for a in argv(tmp_path / "out")]) == 0 and (tmp_path / "out").stat().st_size > 0


def test_explain_refuses_one_file_for_both_html_and_dot_before_explaining(model, tmp_path, capsys):
    page = tmp_path / "page.html"
    assert main(["explain", "-f", str(model / "moses.ini"), "a b", "--html", str(page), "--dot", str(page)]) == 2
    captured = capsys.readouterr()
    assert captured.err == (f"pbmt explain: error: {page}: named twice as an output of this run; give each output "
                            "its own file\n") and captured.out == ""
    assert list(tmp_path.iterdir()) == []


def _refused_and_kept(argv: list, target: Path, verb: str, capsys) -> None:
    before = target.read_bytes()
    assert main([str(a) for a in argv]) == 2, target
    err = capsys.readouterr().err
    assert err.startswith(f"pbmt {verb}: error: {target}: is an input of this run too") and err.count("\n") == 1, err
    assert target.read_bytes() == before


def test_optimize_refuses_an_output_naming_its_list_references_or_a_file_of_its_model(fuzz, tmp_path, capsys,
                                                                                      monkeypatch):
    """With -f, the tuned moses.ini replaced the n-best list, the references, the ini itself or the model's LM;
    refused before the fit (which here never runs)."""
    from pbmt.tune.mert import Mert

    fit = Mert.fit
    monkeypatch.setattr(Mert, "fit", lambda *args, **kwargs: pytest.fail("fitted before the output was refused"))
    model = tmp_path / "model"
    shutil.copytree(fuzz["model"], model, ignore=shutil.ignore_patterns("*.pbmt-cache"))
    nbest, refs = tmp_path / "nbest.txt", tmp_path / "refs.txt"
    shutil.copy(fuzz["nbest"], nbest)
    shutil.copy(fuzz["refs"], refs)
    ini = model / "moses.ini"
    for target in (nbest, refs, ini, model / "lm.arpa", model / "pbmt.toml"):
        _refused_and_kept(optimize_args(nbest, refs, ini, target), target, "optimize", capsys)
    without_ini = optimize_args(nbest, refs, ini, refs)
    _refused_and_kept(without_ini[:without_ini.index("-f")] + without_ini[without_ini.index("-f") + 2:], refs,
                      "optimize", capsys)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model", "nbest.txt", "refs.txt"]
    monkeypatch.setattr(Mert, "fit", fit)
    assert main([str(a) for a in optimize_args(nbest, refs, ini, tmp_path / "tuned.ini")]) == 0
    weights = (tmp_path / "tuned.ini").read_text()
    assert weights[weights.index("[weight]"):] == fuzz["tuned"][fuzz["tuned"].index("[weight]"):]


def test_rescore_refuses_weights_or_1_best_naming_its_lists_references_or_lm(fuzz, tmp_path, capsys, monkeypatch):
    """--train --out replaced the n-best list or the references (refused before the training, which here never
    runs); -o the LM of --lm (refused before the features are computed)."""
    import pbmt.commands.rescore as rescore

    train_rescoring = rescore.train
    monkeypatch.setattr(rescore, "train", lambda *args, **kwargs: pytest.fail("trained before --out was refused"))
    nbest, refs, lm = tmp_path / "nbest.txt", tmp_path / "refs.txt", tmp_path / "lm.arpa"
    shutil.copy(fuzz["nbest"], nbest)
    shutil.copy(fuzz["refs"], refs)
    shutil.copy(fuzz["model"] / "lm.arpa", lm)
    train = ["rescore", "-q", "--n-best", nbest, "--refs", refs, "--tokenized", "--lm", lm, "--train",
             "--algorithm", "mert", "--restarts", "1", "--random-directions", "1"]
    for target in (nbest, refs, lm):
        _refused_and_kept([*train, "--out", target], target, "rescore", capsys)
    monkeypatch.setattr(rescore, "train", train_rescoring)
    assert main([str(a) for a in [*train, "--out", tmp_path / "weights"]]) == 0
    apply = ["rescore", "-q", "--n-best", nbest, "--lm", lm, "--weights", tmp_path / "weights"]
    with_features = rescore.with_features
    monkeypatch.setattr(rescore, "with_features", lambda *args: pytest.fail("features computed before -o was refused"))
    for target in (nbest, lm, tmp_path / "weights"):
        _refused_and_kept([*apply, "-o", target], target, "rescore", capsys)
    monkeypatch.setattr(rescore, "with_features", with_features)
    assert main([str(a) for a in [*apply, "-o", tmp_path / "best.txt"]]) == 0
    assert len((tmp_path / "best.txt").read_text().splitlines()) == len(refs.read_text().splitlines())


def test_tune_refuses_the_models_own_folder_as_its_run_folder(model, tmp_path, capsys):
    """The run writes moses.ini, pbmt.toml, log.tsv and its checkpoint into --out: there, the model's pbmt.toml was
    rewritten and its moses.ini replaced by the tuned one."""
    (tmp_path / "dev.txt").write_text(SOURCE)
    listing = {p.name: p.read_bytes() for p in model.iterdir() if p.is_file()}
    for out in (model, model / ".." / model.name):
        assert main(["tune", "-q", "-f", str(model / "moses.ini"), "--src", str(tmp_path / "dev.txt"), "--refs",
                     str(tmp_path / "dev.txt"), "--out", str(out), "--iterations", "1"]) == 2
        assert capsys.readouterr().err == (f"pbmt tune: error: --out {out}: is the model's own folder, where the "
                                           "run's moses.ini and pbmt.toml would replace the model's; give the run a "
                                           "folder of its own\n")
    assert {p.name: p.read_bytes() for p in model.iterdir() if p.is_file()} == listing
