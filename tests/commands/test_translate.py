import re
import subprocess
import sys
import unicodedata
from pathlib import Path

import pytest

from pbmt.commands.cli import main
from pbmt.base.nbest import read_nbest

SOURCES = "a b c\nc a e b\nb x a d\n\ne d c b a\n"


def test_translate_file_with_nbest_and_alignment(tiny_model_dir, tmp_path, capsys):
    src = tmp_path / "in.txt"
    src.write_text(SOURCES)
    code = main(["translate", "-f", str(tiny_model_dir / "moses.ini"), "-i", str(src), "-o", str(tmp_path / "out"),
                 "--n-best", str(tmp_path / "nbest"), "--n-best-size", "5", "--distinct", "--alignment", str(tmp_path / "align")])
    assert code == 0
    out = (tmp_path / "out").read_text().splitlines()
    assert len(out) == 5 and out[3] == "" and "x" in out[2].split()
    entries = list(read_nbest(tmp_path / "nbest"))
    assert sorted({e.sentence for e in entries}) == [0, 1, 2, 3, 4]
    firsts = {}
    for e in entries:
        firsts.setdefault(e.sentence, e)
    assert [firsts[i].text for i in range(5)] == out
    assert len((tmp_path / "align").read_text().splitlines()) == 5
    assert "sentences/s" in capsys.readouterr().err


def test_workers_give_the_serial_output_in_order(tiny_model_dir, tmp_path):
    src = tmp_path / "in.txt"
    src.write_text(SOURCES * 4)
    for workers in (1, 2):
        assert main(["translate", "-q", "-f", str(tiny_model_dir / "moses.ini"), "-i", str(src),
                     "-o", str(tmp_path / f"out{workers}"), "--workers", str(workers)]) == 0
    assert (tmp_path / "out1").read_text() == (tmp_path / "out2").read_text()


def test_weights_override_changes_the_output(tiny_model_dir, tmp_path):
    src = tmp_path / "in.txt"
    src.write_text("a b c d e\n")
    main(["translate", "-q", "-f", str(tiny_model_dir / "moses.ini"), "-i", str(src), "-o", str(tmp_path / "base")])
    main(["translate", "-q", "-f", str(tiny_model_dir / "moses.ini"), "-i", str(src), "-o", str(tmp_path / "long"),
          "--weights", "WordPenalty0= -30"])
    assert len((tmp_path / "long").read_text().split()) > len((tmp_path / "base").read_text().split())
    weights = tmp_path / "weights.txt"
    weights.write_text("[weight]\nWordPenalty0= -30\n")  # a [weight] section alone, as Moses's tuning prints it
    main(["translate", "-q", "-f", str(tiny_model_dir / "moses.ini"), "-i", str(src), "-o", str(tmp_path / "file"),
          "--weights", str(weights)])
    assert (tmp_path / "file").read_text() == (tmp_path / "long").read_text()


@pytest.mark.parametrize("args, message, code", [
    (["-f", "/nonexistent/moses.ini"], "no such model configuration", 1),
    (["--weights", "LM0= x"], "--weights", 2),
    (["--weights", "Nope0= 1"], "Nope0", 2),  # a usage error naming --weights
    (["--n-best-size", "5"], "--n-best-size 5 shapes the n-best list of --n-best FILE, which is not asked for", 2),
    (["--distinct"], "--distinct shapes the n-best list of --n-best FILE", 2),  # both said nothing and did nothing
])
def test_errors_exit_1_or_2_with_a_message(tiny_model_dir, tmp_path, capsys, args, message, code):
    src = tmp_path / "in.txt"
    src.write_text("a\n")
    argv = ["translate", "-q", "-i", str(src)] + (args if "-f" in args else ["-f", str(tiny_model_dir / "moses.ini")] + args)
    assert main(argv) == code
    assert message in capsys.readouterr().err


@pytest.mark.parametrize("lines", [3, 3000])
def test_a_reader_that_stops_early_ends_the_run_quietly(tiny_model_dir, tmp_path, lines):
    """`pbmt translate | head -1`: no traceback, and the exit code of a process ended by SIGPIPE (141)."""
    src = tmp_path / "in.txt"
    src.write_text("a b c\n" * lines)
    process = subprocess.Popen([sys.executable, "-m", "pbmt", "translate", "-q", "-f", str(tiny_model_dir / "moses.ini"),
                                "-i", str(src)], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    process.stdout.close()  # before the first line: whatever pbmt writes meets a closed pipe
    assert process.wait(timeout=120) == 141
    assert process.stderr.read() == b""


def test_plain_text_through_the_embedded_model_comes_out_cased(tmp_path, capsys):
    lines = ['"Yo tengo 12 ovejas," dijo Pablo en Jerusalén.', "«No tengo miedo», dijo Juan el 3 de mayo de 1999.",
             "EN el principio crió Dios los cielos y la tierra.", "", "¿Quién eres, Señor?",
             "El nivel de compresión es alto.", unicodedata.normalize("NFD", "El nivel de compresión es alto."),
             "a partir de ahora, %1 de %2 en <b>Jerusalén</b>", "Ya existe un archivo llamado «%s»."]
    (tmp_path / "in.es").write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert main(["translate", "-q", "-i", str(tmp_path / "in.es"), "-o", str(tmp_path / "out")]) == 0
    out = (tmp_path / "out").read_text(encoding="utf-8").split("\n")
    assert len(out) == len(lines) + 1 and out[-1] == "" and out[3] == ""
    assert lines[6] != lines[5] and out[6].encode() == out[5].encode()  # NFD and NFC alike, byte for byte
    assert out[7][:1].islower() and re.search(r"%1 .*%2 .*<b>Jerusalén</b>", out[7])  # lowercase as its source
    assert "«%s»" in out[8]
    assert out[0].count('"') == 2 and re.search(r"\b12\b", out[0]) and "Paul" in out[0] and "Jerusalén" in out[0]
    assert re.search(r"\b1999\b", out[1]) and re.search(r"\b3\b", out[1]) and "«" in out[1] and "»" in out[1]
    assert out[2].startswith("In the beginning God created the heaven")
    assert out[4].startswith("Who") and "Lord" in out[4] and out[4].endswith("?")
    assert all(line[:1].isupper() or line[:1] in '"«' for line in out[:7] if line)


def test_a_line_of_few_words_but_more_tokens_than_max_words_is_refused_before_anything_is_written(tmp_path, capsys):
    """'<b>' 30 times is one word and 30 tokens: the search's length is the tokens'."""
    source = tmp_path / "in.es"
    source.write_text("El señor es mi pastor.\n" + "<b>" * 30 + "\n", encoding="utf-8")
    argv = ["translate", "-q", "-i", str(source), "-o", str(tmp_path / "out"), "--max-words", "20"]
    assert main(argv) == 1
    assert capsys.readouterr().err == (f"pbmt translate: error: {source}:2: 30 tokens, more than --max-words 20: split "
                                       "the line, or raise --max-words (search time and memory grow with the length)\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.es"]
    assert main(argv[:-1] + ["30"]) == 0 and len((tmp_path / "out").read_text().splitlines()) == 2


@pytest.mark.parametrize("verb", ["translate", "tokenize"])
def test_an_output_naming_the_input_or_a_model_file_is_a_usage_error_and_the_input_stays(tiny_model_dir, tmp_path,
                                                                                         capsys, verb):
    source = tmp_path / "in.txt"
    source.write_text(SOURCES)
    (tmp_path / "link").symlink_to("in.txt")
    ini = tiny_model_dir / "moses.ini"
    for output in ("in.txt", "link") if verb == "tokenize" else ("in.txt", "link", ini):
        target = output if isinstance(output, Path) else tmp_path / output
        before = target.read_bytes()
        quiet = ["-q"] if verb == "translate" else []
        assert main([verb, *quiet, "-f", str(ini), "-i", str(source), "-o", str(target)]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"pbmt {verb}: error: {target}: is an input of this run too") and err.count("\n") == 1
        assert target.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.txt", "link"]


def test_a_run_reads_the_models_ini_once(tiny_model_dir, tmp_path, monkeypatch):
    """The search settings, the model, the compiling child and the journal's model files share one reading."""
    from pbmt.base.config import MosesConfig

    read = MosesConfig.read.__func__
    paths = []

    def counted(cls, path):
        paths.append(Path(path))
        return read(cls, path)

    monkeypatch.setattr(MosesConfig, "read", classmethod(counted))
    src = tmp_path / "in.txt"
    src.write_text(SOURCES)
    ini = tiny_model_dir / "moses.ini"
    assert main(["translate", "-q", "-f", str(ini), "-i", str(src), "-o", str(tmp_path / "out"),
                 "--n-best", str(tmp_path / "nbest")]) == 0
    assert paths == [ini] and len((tmp_path / "out").read_text().splitlines()) == 5


def _killed_after(records: int, argv: list[str], monkeypatch) -> None:
    """Run ``pbmt`` with ``argv`` interrupted (Ctrl-C) once its journal has ``records`` records."""
    from pbmt.commands import translate

    journal_write = translate.Journal.write

    def killed(journal, chunks):
        if journal.done == records:
            raise KeyboardInterrupt
        journal_write(journal, chunks)

    monkeypatch.setattr(translate.Journal, "write", killed)
    assert main(argv) == 130
    monkeypatch.setattr(translate.Journal, "write", journal_write)


def test_the_closing_line_counts_the_words_this_run_translated(tmp_path, capsys, monkeypatch):
    """Its words are the tokens `pbmt tokenize` makes of the lines; a resumed run counts only the lines it
    translates itself (its rates are over its own time)."""
    lines = ["«No tengo miedo», dijo Juan el 3 de mayo de 1999.", "", "a las 10:30 del 31/12/2024",
             "El nivel de compresión es alto.", "a partir de ahora, %1 de %2 en <b>Jerusalén</b>"]
    source = tmp_path / "in.es"
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert main(["tokenize", "-i", str(source), "-o", str(tmp_path / "tok")]) == 0
    counts = [len(line.split()) for line in (tmp_path / "tok").read_text(encoding="utf-8").splitlines()]
    assert len(counts) == 5 and counts[1] == 0 and min(counts[2:]) > 0
    argv = ["translate", "--threads", "1", "-i", str(source), "-o"]
    capsys.readouterr()
    assert main(argv + [str(tmp_path / "out")]) == 0
    assert f"translated 5 sentences ({sum(counts)} words) in " in capsys.readouterr().err
    _killed_after(3, argv + [str(tmp_path / "again")], monkeypatch)
    capsys.readouterr()
    assert main(argv + [str(tmp_path / "again")]) == 0
    err = capsys.readouterr().err
    assert "resuming a killed run: 3 of 5 sentences already translated" in err
    assert f"translated 2 sentences ({sum(counts[3:])} words) in " in err
    assert (tmp_path / "again").read_bytes() == (tmp_path / "out").read_bytes()


def test_a_killed_run_of_another_input_is_not_resumed_and_the_run_says_so(tmp_path, capsys, monkeypatch):
    """The journal of a killed run whose input changed since is started over, not silently."""
    source = tmp_path / "in.es"
    source.write_text("la casa\nel libro\nla mesa\nel perro\n", encoding="utf-8")
    argv = ["translate", "--threads", "1", "-i", str(source), "-o", str(tmp_path / "out")]
    _killed_after(2, argv, monkeypatch)
    source.write_text("la casa\nel libro\nla mesa\nel gato\n", encoding="utf-8")
    capsys.readouterr()
    assert main(argv) == 0
    err = capsys.readouterr().err
    assert f"starting afresh: the killed run's 2 sentences in {tmp_path / 'out'} were of another input" in err
    assert "resuming" not in err
    assert main(argv[:-2] + ["-q", "-o", str(tmp_path / "whole")]) == 0
    assert capsys.readouterr().err == ""
    assert (tmp_path / "out").read_bytes() == (tmp_path / "whole").read_bytes()


def test_plain_text_given_as_tokenized_is_translated_with_a_warning_naming_its_first_line(tmp_path, capsys):
    """The reference form is `pbmt tokenize`'s: that passes quietly, the plain text it came from does not (its
    'word,' tokens passed through as unknown words without a word); the output is made either way."""
    lines = ["Y dijo Dios: Sea la luz.", "Josué habló al pueblo, y dijo:", "El señor es mi pastor; nada me faltará."]
    plain = tmp_path / "in.es"
    plain.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert main(["tokenize", "-i", str(plain), "-o", str(tmp_path / "in.tok.es")]) == 0
    capsys.readouterr()
    for source, warned in [(tmp_path / "in.tok.es", False), (plain, True)]:
        assert main(["translate", "-q", "--tokenized", "-i", str(source), "-o", str(tmp_path / "out")]) == 0
        err = capsys.readouterr().err
        assert len((tmp_path / "out").read_text(encoding="utf-8").splitlines()) == 3
        if not warned:
            assert err == ""
            continue
        assert err.count("\n") == 1 and err.startswith(f"pbmt translate: warning: {plain}:1: 'Dios:' is 'Dios :' "
                                                       "in the model's tokens; 3 of 3 lines are not in the model's "
                                                       "token form (give plain text without --tokenized"), err


def test_standard_output_named_by_two_outputs_is_a_usage_error_before_anything_is_written(tiny_model_dir, tmp_path,
                                                                                          capsys):
    """'--n-best -' beside the translations' default '-' interleaved the 1-best lines into the n-best list (Moses
    drops the 1-best there); one output on standard output is as the same output written to a file."""
    src = tmp_path / "in.txt"
    src.write_text(SOURCES)
    common = ["translate", "-q", "-f", str(tiny_model_dir / "moses.ini"), "-i", str(src), "--n-best-size", "3"]
    assert main(common + ["-o", str(tmp_path / "out"), "--n-best", str(tmp_path / "nbest")]) == 0
    capsys.readouterr()
    for extra in (["--n-best", "-"], ["-o", "-", "--alignment", "-", "--n-best", str(tmp_path / "nbest2")]):
        assert main(common + extra) == 2
        captured = capsys.readouterr()
        assert captured.out == "" and captured.err == ("pbmt translate: error: -: standard output named twice as an "
                                                       "output of this run; give each output but one its own file\n")
    assert not (tmp_path / "nbest2").exists()
    assert main(common + ["-o", str(tmp_path / "out2"), "--n-best", "-"]) == 0
    assert capsys.readouterr().out == (tmp_path / "nbest").read_text()
    assert (tmp_path / "out2").read_text() == (tmp_path / "out").read_text()


def test_a_terminal_on_standard_input_is_told_that_the_sentences_are_read_until_end_of_input(tiny_model_dir, capsys,
                                                                                              monkeypatch):
    """Typed sentences are read whole before any is translated: a user typing one saw nothing happen."""
    import io

    class Terminal(io.TextIOWrapper):
        def isatty(self):
            return True

    for quiet, told in ((["-q"], False), ([], True)):
        monkeypatch.setattr("sys.stdin", Terminal(io.BytesIO(b"a b c\n")))
        assert main(["translate", "-f", str(tiny_model_dir / "moses.ini"), "--tokenized", *quiet]) == 0
        captured = capsys.readouterr()
        assert len(captured.out.splitlines()) == 1
        assert ("until end of input (Ctrl-D)" in captured.err) == told
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b"a b c\n")))  # a pipe: nothing to tell
    assert main(["translate", "-f", str(tiny_model_dir / "moses.ini"), "--tokenized"]) == 0
    assert "Ctrl-D" not in capsys.readouterr().err
