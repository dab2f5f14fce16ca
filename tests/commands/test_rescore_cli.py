"""pbmt rescore: train on one half of Moses's dev n-best lists, rescore the other."""

import gzip

import numpy as np
import pytest

from pbmt.commands.cli import main
from pbmt.metrics.bleu import corpus_bleu
from pbmt.tune.pool import References
from pbmt.tune.rescore import RescoringModel

HALF = 20


@pytest.fixture(scope="module")
def files(bible, tmp_path_factory):
    folder = tmp_path_factory.mktemp("rescore-cli")
    halves = {"train": [], "test": []}
    with gzip.open(bible / "model" / "dev.moses.nbest100.gz", "rt", encoding="utf-8") as handle:
        for line in handle:
            sid, rest = line.split(" ||| ", 1)
            if int(sid) >= 2 * HALF:
                break
            halves["train" if int(sid) < HALF else "test"].append(f"{int(sid) % HALF} ||| {rest}")
    src = (bible / "dev.tok.es").read_text(encoding="utf-8").splitlines()
    ref = (bible / "dev.tok.en").read_text(encoding="utf-8").splitlines()
    paths = {}
    for i, half in enumerate(("train", "test")):
        paths[half] = folder / f"{half}.nbest"
        paths[half].write_text("".join(halves[half]), encoding="utf-8")
        for kind, lines in (("es", src), ("en", ref)):
            paths[half, kind] = folder / f"{half}.{kind}"
            paths[half, kind].write_text("\n".join(lines[i * HALF:(i + 1) * HALF]) + "\n", encoding="utf-8")
    return paths


def test_train_then_rescore(files, bible, tmp_path, capsys):
    weights = tmp_path / "weights"
    assert main(["rescore", "--n-best", str(files["train"]), "--refs", str(files["train", "en"]),
                 "--src", str(files["train", "es"]), "--lm", str(bible / "lm5.arpa.gz"), "--feature", "consensus",
                 "--train", "--out", str(weights), "--epochs", "20"]) == 0
    summary = capsys.readouterr().err
    before, after = (float(x) for x in summary.split("dev BLEU of the 1-best ")[1].split(" after")[0].split(" -> "))
    assert after >= before
    model = RescoringModel.read(weights)
    assert model.layout.names[-3:] == ("LM1", "LengthRatio0", "Consensus0")
    assert model.algorithm == "listnet" and model.normalisation == "features"

    out = tmp_path / "test.out"
    assert main(["rescore", "--n-best", str(files["test"]), "--src", str(files["test", "es"]), "--weights",
                 str(weights), "--refs", str(files["test", "en"]), "-o", str(out)]) == 0
    lines = out.read_text(encoding="utf-8").splitlines()
    assert len(lines) == HALF
    references = References.read(files["test", "en"])
    reported = capsys.readouterr().err.split(" -> ")[1]
    assert float(reported) == pytest.approx(100 * corpus_bleu(references.stats(lines, np.arange(HALF))), abs=0.005)

    # the stored LM path is used unless --lm gives one; a wrong count of LMs is an error
    assert main(["rescore", "--n-best", str(files["test"]), "--src", str(files["test", "es"]), "--weights",
                 str(weights), "--lm", str(bible / "lm5.arpa.gz")]) == 0
    assert capsys.readouterr().out.splitlines() == lines
    assert main(["rescore", "--n-best", str(files["test"]), "--src", str(files["test", "es"]), "--weights",
                 str(weights), "--lm", str(bible / "lm5.arpa.gz"), "--lm", str(bible / "lm3.arpa.gz")]) == 1
    assert "has 1 LM feature(s) but --lm gives 2" in capsys.readouterr().err
    assert main(["rescore", "--n-best", str(files["test"]), "--weights", str(weights)]) == 1
    assert "needs the source sentences (--src)" in capsys.readouterr().err


@pytest.mark.parametrize("algorithm", ["mert", "pro"])
def test_other_optimisers_rescore_the_same_lists(files, tmp_path, capsys, algorithm):
    weights = tmp_path / "weights"
    assert main(["rescore", "--n-best", str(files["train"]), "--refs", str(files["train", "en"]), "--train",
                 "--out", str(weights), "--algorithm", algorithm,
                 *(["--restarts", "2"] if algorithm == "mert" else [])]) == 0
    assert RescoringModel.read(weights).algorithm == algorithm
    assert main(["rescore", "--n-best", str(files["test"]), "--weights", str(weights)]) == 0
    assert len(capsys.readouterr().out.splitlines()) == HALF


def test_usage_errors(files, tmp_path, capsys):
    assert main(["rescore", "--n-best", str(files["train"]), "--train", "--out", str(tmp_path / "w")]) == 2
    assert "--train needs --refs and --out" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_:
        main(["rescore", "--n-best", str(files["train"])])
    assert exit_.value.code == 2
    train = ["rescore", "--n-best", str(files["train"]), "--refs", str(files["train", "en"]), "--train", "--out",
             str(tmp_path / "w")]
    for extra, message in ((["--algorithm", "mira", "--gain", "bleu+1"], "--gain is an option of pro, apro and "
                            "listnet, not of mira: it would be ignored"),  # was MIRA's TypeError
                           (["--algorithm", "mert", "--max-batches", "5"], "--max-batches is an option of listnet, "
                            "not of mert"),
                           (["--algorithm", "pro", "--no-distinct"], "--distinct is an option of listnet, not of pro"),
                           (["--restarts", "3"], "--restarts is an option of mert, not of listnet")):
        assert main([*train, *extra]) == 2
        assert message in capsys.readouterr().err
    for extra in (["--algorithm", "mert"], ["--max-batches", "3"], ["--out", str(tmp_path / "w")], ["--seed", "2"]):
        assert main(["rescore", "--n-best", str(files["test"]), "--weights", str(tmp_path / "w"), *extra]) == 2
        assert f"{extra[0]} is an option of --train: with --weights it would be ignored" in capsys.readouterr().err
    assert not (tmp_path / "w").exists()


def test_references_not_in_the_lists_token_form_are_an_error_naming_the_line(files, bible, tmp_path, capsys):
    """Plain (detokenised, cased) references against tokenised, lowercased lists: BLEU would mean nothing."""
    plain = tmp_path / "train.plain.en"
    plain.write_text("".join((bible / "dev.en").read_text(encoding="utf-8").splitlines(keepends=True)[:HALF]),
                     encoding="utf-8")
    first = plain.read_text(encoding="utf-8").split()[0]
    assert main(["rescore", "--n-best", str(files["train"]), "--refs", str(plain), "--train",
                 "--out", str(tmp_path / "w"), "--algorithm", "pro"]) == 1
    err = capsys.readouterr().err
    assert f"{plain}:1: {first!r} is known to the n-best list only as {first.lower()!r}" in err
    assert f"{HALF} of {HALF} lines are not in the n-best list's token form (give the lists' model with -f" in err
    assert not (tmp_path / "w").exists()

    weights = tmp_path / "weights"
    assert main(["rescore", "--n-best", str(files["train"]), "--refs", str(files["train", "en"]), "--train",
                 "--out", str(weights), "--algorithm", "pro"]) == 0
    out = tmp_path / "out"
    assert main(["rescore", "--n-best", str(files["test"]), "--weights", str(weights), "--refs", str(plain),
                 "-o", str(out)]) == 1
    assert "not in the n-best list's token form" in capsys.readouterr().err and not out.exists()
    # the model of the lists (the shared one neither tokenises nor cases) does not make them its form either
    assert main(["rescore", "-f", str(bible / "model" / "moses.ini"), "--n-best", str(files["test"]), "--weights",
                 str(weights), "--refs", str(plain), "-o", str(out)]) == 1
    assert "lines are not in the n-best list's token form (the model neither tokenises nor cases plain text: make " \
        "its token form with pbmt tokenize --language L" in capsys.readouterr().err
    assert main(["rescore", "--n-best", str(files["test"]), "--weights", str(weights), "--refs",
                 str(files["test", "en"]), "-o", str(out), "-q"]) == 0
    assert len(out.read_text(encoding="utf-8").splitlines()) == HALF
