"""pbmt translate --documents: whole documents by the sampler, in input order."""

import pytest

from pbmt.commands.cli import main

SOURCES = "a b c\nc a e b\nb x a d\n\ne d c b a\na b a c\nc d\n"
KEYS = "Acts 1:1\nActs 1:2\nActs 2:1\nActs 2:2\nActs 2:3\nActs 3:1\nRomans 3:1\n"


@pytest.fixture
def files(tmp_path):
    (tmp_path / "in.txt").write_text(SOURCES * 2)
    (tmp_path / "in.keys").write_text(KEYS + KEYS.replace("Acts", "Luke"))
    (tmp_path / "weights").write_text("# global weights\nLexicalConsistency0= 2\nRepetition0= 0.5 0.5\n")
    return tmp_path


def run(files, tiny_model_dir, out, *extra):
    return main(["translate", "-q", "-f", str(tiny_model_dir / "moses.ini"), "-i", str(files / "in.txt"),
                 "-o", str(files / out), "--documents", str(files / "in.keys"), *extra])


def test_no_steps_is_the_stack_decoder(files, tiny_model_dir):
    assert run(files, tiny_model_dir, "docs", "--steps-per-sentence", "0", "--global-features", "repetition") == 0
    assert main(["translate", "-q", "-f", str(tiny_model_dir / "moses.ini"), "-i", str(files / "in.txt"),
                 "-o", str(files / "plain")]) == 0
    assert (files / "docs").read_text() == (files / "plain").read_text()


def test_workers_keep_every_sentence_in_order(files, tiny_model_dir):
    features = ["--global-features", "lexical-consistency:1,repetition", "--global-weights", str(files / "weights"),
                "--steps-per-sentence", "100"]
    assert run(files, tiny_model_dir, "one", *features) == 0
    assert run(files, tiny_model_dir, "two", *features, "--workers", "2") == 0
    one = (files / "one").read_text().splitlines()
    assert len(one) == len((SOURCES * 2).splitlines()) and one[3] == "" and "x" in one[2].split()
    assert (files / "two").read_text() == (files / "one").read_text()


@pytest.mark.parametrize("extra, message", [
    (["--global-features", "nope"], "unknown global feature"),
    (["--global-features", "consensus"], "only 'pbmt rescore'"),
    (["--n-best", "x", "--n-best-size", "3"], "--n-best is not available"),
])
def test_errors(files, tiny_model_dir, capsys, extra, message):
    assert run(files, tiny_model_dir, "out", *extra) == 1
    assert message in capsys.readouterr().err


def test_keys_must_match_the_input(files, tiny_model_dir, capsys):
    (files / "in.keys").write_text(KEYS)
    assert run(files, tiny_model_dir, "out") == 1
    assert "has 7 keys but" in capsys.readouterr().err
    assert main(["translate", "-q", "-f", str(tiny_model_dir / "moses.ini"), "-i", str(files / "in.txt"),
                 "--global-features", "repetition"]) == 1
    assert "need --documents" in capsys.readouterr().err
