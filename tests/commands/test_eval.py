"""``pbmt eval`` end to end, against sacrebleu."""

import io
import json
import sys
from pathlib import Path

import pytest
import sacrebleu

from pbmt import __version__
from pbmt.commands.cli import main


def write(path, lines):
    path.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    return str(path)


def read(path):
    return path.read_text(encoding="utf-8").splitlines()


def test_moses_1best_tokenised(bible, capsys):
    hyp, ref = bible / "model" / "dev.moses.1best", bible / "dev.tok.en"
    assert main(["eval", str(ref), "-i", str(hyp), "--tokenizer", "none"]) == 0
    score, signature = capsys.readouterr().out.splitlines()
    sacre = sacrebleu.corpus_bleu(read(hyp), [read(ref)], tokenize="none", force=True)
    assert score.startswith("BLEU = 38.57 ")
    assert score == f"BLEU = {sacre.score:.2f} {sacre._verbose}"
    assert signature == f"nrefs:1|case:mixed|eff:no|tok:none|smooth:exp|version:pbmt-{__version__}"


def test_default_13a_detokenised_equals_sacrebleu(bible, capsys):
    hyp, ref = bible / "model" / "dev.moses.1best", bible / "dev.en"
    assert main(["eval", str(ref), "-i", str(hyp), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    sacre = sacrebleu.corpus_bleu(read(hyp), [read(ref)])
    assert result["score"] == pytest.approx(sacre.score, abs=1e-7)
    assert result["precisions"] == pytest.approx(sacre.precisions, abs=1e-7)
    assert (result["hyp_len"], result["ref_len"]) == (sacre.sys_len, sacre.ref_len)
    assert "tok:13a" in result["signature"]


HYPS = ["The cat sat on the mat.", "A dog, in the house!", "", "Hello   world"]
REFS1 = ["the cat sat on a mat .", "A dog was in the house!", "Nothing here", "hello world"]
REFS2 = ["The cat is on the mat.", "a dog in a house", "x", "Hello, world"]


@pytest.mark.parametrize("options", [[], ["--lowercase"], ["--tokenizer", "none"], ["--lowercase", "--tokenizer", "none"]])
def test_two_references_and_options_equal_sacrebleu(tmp_path, capsys, options):
    files = [write(tmp_path / name, lines) for name, lines in [("h", HYPS), ("r1", REFS1), ("r2", REFS2)]]
    assert main(["eval", *files[1:], "-i", files[0], "--json", *options]) == 0
    result = json.loads(capsys.readouterr().out)
    tokenize = "none" if "none" in options else "13a"
    sacre = sacrebleu.corpus_bleu(HYPS, [REFS1, REFS2], tokenize=tokenize, lowercase="--lowercase" in options, force=True)
    assert result["score"] == pytest.approx(sacre.score, abs=1e-7)
    assert "nrefs:2" in result["signature"]
    assert ("case:lc" in result["signature"]) == ("--lowercase" in options)


def test_sentence_level_bleu_plus1(tmp_path, capsys):
    files = [write(tmp_path / "h", HYPS), write(tmp_path / "r", REFS1)]
    assert main(["eval", files[1], "-i", files[0], "--sentence"]) == 0
    *lines, signature = capsys.readouterr().out.splitlines()
    assert len(lines) == len(HYPS) and "smooth:add-k[1.00]" in signature
    expected = [sacrebleu.sentence_bleu(h, [r], smooth_method="add-k", smooth_value=1) for h, r in zip(HYPS, REFS1)]
    for line, sacre in zip(lines, expected):
        assert line == f"BLEU = {sacre.score:.2f} {sacre._verbose}"

    assert main(["eval", files[1], "-i", files[0], "--sentence", "--json"]) == 0
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["score"] for r in records] == pytest.approx([s.score for s in expected], abs=1e-7)


def test_hypothesis_from_stdin(tmp_path, capsys, monkeypatch):
    ref = write(tmp_path / "r", REFS1)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO("\n".join(HYPS).encode() + b"\n")))
    assert main(["eval", ref, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["score"] == pytest.approx(sacrebleu.corpus_bleu(HYPS, [REFS1]).score)


def test_line_count_mismatch_names_files_and_line(tmp_path, capsys):
    hyp = write(tmp_path / "hyp.txt", HYPS)
    short = write(tmp_path / "short.txt", REFS1[:2])
    full = write(tmp_path / "full.txt", REFS2)
    assert main(["eval", full, short, "-i", hyp]) == 1
    err = capsys.readouterr().err
    assert "short.txt ended after 2 lines" in err
    assert "hyp.txt" in err and "full.txt" in err and "line 3" in err
    one = write(tmp_path / "one.txt", REFS1[:1])
    assert main(["eval", full, one, "-i", hyp]) == 1
    err = capsys.readouterr().err
    assert "one.txt ended after 1 line, but " in err and "full.txt have a line 2" in err


def test_invalid_utf8_names_file_and_line(tmp_path, capsys, monkeypatch):
    hyp = write(tmp_path / "hyp.txt", HYPS)
    bad = tmp_path / "bad.txt"
    # on line 1: read_lines numbers a bad line by the decoder's 8 KB chunk it falls in
    bad.write_bytes(b"not \xff fine\nx\ny\nz\n")
    assert main(["eval", str(bad), "-i", hyp]) == 1
    assert f"{bad}:1: not valid UTF-8" in capsys.readouterr().err

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"a\nb\n\xfe\n")))
    assert main(["eval", hyp, "-i", "-"]) == 1
    assert "<stdin>:3: not valid UTF-8" in capsys.readouterr().err


def test_missing_file_and_bad_option(tmp_path, capsys):
    hyp = write(tmp_path / "hyp.txt", HYPS)
    assert main(["eval", str(tmp_path / "nope.txt"), "-i", hyp]) == 1
    assert "nope.txt: no such file" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_info:
        main(["eval", hyp, "-i", hyp, "--tokenizer", "intl"])
    assert exit_info.value.code == 2


def test_tokenize_model_scores_in_the_model_token_form(tmp_path, capsys):
    """--tokenizer model -f MODEL equals BLEU on what pbmt tokenize --side target makes of both files."""
    model = Path(__file__).resolve().parents[2] / "data" / "model" / "moses.ini"
    (tmp_path / "hyp").write_text('And the LORD said, "Go."\nHe went unto Jerusalem.\n', encoding="utf-8")
    (tmp_path / "ref").write_text('And the LORD spake, "Go!"\nAnd he went to Jerusalem.\n', encoding="utf-8")
    for name in ("hyp", "ref"):
        assert main(["tokenize", "-f", str(model), "--side", "target", "-i", str(tmp_path / name),
                     "-o", str(tmp_path / f"{name}.tok")]) == 0
    assert main(["eval", str(tmp_path / "ref.tok"), "-i", str(tmp_path / "hyp.tok"), "--tokenizer", "none"]) == 0
    expected = capsys.readouterr().out.splitlines()[0]
    assert main(["eval", str(tmp_path / "ref"), "-i", str(tmp_path / "hyp"), "--tokenizer", "model", "-f", str(model)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == expected and "tok:model" in out[1]
    assert main(["eval", str(tmp_path / "ref"), "-i", str(tmp_path / "hyp"), "--tokenizer", "model"]) == 2
    assert "--tokenizer model and -f go together" in capsys.readouterr().err


class _Terminal(io.StringIO):
    def isatty(self):
        return True


@pytest.mark.parametrize("stdin", ["terminal", "empty"])
def test_the_old_order_hyp_ref_is_a_usage_error_naming_sacrebleus(tmp_path, capsys, monkeypatch, stdin):
    """``pbmt eval HYP REF`` (the order before sacrebleu's) reads as two references and a translation on
    standard input: with none there (a terminal, or an empty input as in a script) it is rejected, not scored."""
    hyp, ref = write(tmp_path / "hyp.txt", HYPS), write(tmp_path / "ref.txt", REFS1)
    monkeypatch.setattr(sys, "stdin", _Terminal() if stdin == "terminal" else io.TextIOWrapper(io.BytesIO(b"")))
    assert main(["eval", hyp, ref]) == 2
    err = capsys.readouterr().err
    assert "pbmt eval REF [REF ...] -i HYP" in err and len(err.strip().splitlines()) == 1
    assert capsys.readouterr().out == ""


def test_the_old_stdin_form_dash_ref_is_a_usage_error(tmp_path, capsys, monkeypatch):
    ref = write(tmp_path / "ref.txt", REFS1)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO("\n".join(HYPS).encode() + b"\n")))
    assert main(["eval", "-", ref]) == 2
    assert "-i HYP" in capsys.readouterr().err


def test_sacrebleus_order_gives_sacrebleus_score(tmp_path, capsys):
    hyp, ref = write(tmp_path / "hyp.txt", HYPS), write(tmp_path / "ref.txt", REFS1)
    assert main(["eval", ref, "-i", hyp, "--tokenizer", "none", "--json"]) == 0
    out = capsys.readouterr()
    sacre = sacrebleu.corpus_bleu(HYPS, [REFS1], tokenize="none", force=True)
    assert json.loads(out.out)["score"] == pytest.approx(sacre.score, abs=1e-7)
    assert out.err == ""


def test_refs_option_gives_the_positional_references_score(tmp_path, capsys):
    files = [write(tmp_path / name, lines) for name, lines in [("h", HYPS), ("r1", REFS1), ("r2", REFS2)]]
    assert main(["eval", "-i", files[0], "--refs", *files[1:], "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["score"] == pytest.approx(sacrebleu.corpus_bleu(HYPS, [REFS1, REFS2], force=True).score, abs=1e-7)
    assert "nrefs:2" in result["signature"]
    assert main(["eval", files[1], "-i", files[0], "--refs", files[2]]) == 2
    assert "either before -i or with --refs" in capsys.readouterr().err
