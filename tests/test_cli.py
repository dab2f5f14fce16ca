"""The one error path of ``pbmt`` (``pbmt.commands.cli.main``), and every verb run with and without ``-q``.

Exit codes: 0 ok, 1 runtime error, 2 usage error, 130 interrupted, 141 broken pipe; a traceback only for
pbmt's own bugs, and then it says so. Bugs have hidden behind ``-q`` before (``tune --algorithm costmargin``
ended in an AttributeError only without it), so every verb runs both ways and must give the same files.
"""

from __future__ import annotations

import errno
import filecmp
import re
import shutil

import pytest

import pbmt.commands.eval
from pbmt.commands.cli import build_parser, main
from pbmt.base.errors import PbmtError, UsageError
from reliability import SHARED, fuzz, model_copy, run  # noqa: F401 - a fixture


def failing(error: BaseException):
    def run(args):
        raise error
    return run


@pytest.mark.parametrize("error, code, message", [
    (PbmtError("model.ini:3: wrong"), 1, "pbmt eval: error: model.ini:3: wrong"),
    (UsageError("--stack must be at least 1"), 2, "pbmt eval: error: --stack must be at least 1"),
    (OSError(errno.ENOSPC, "No space left on device", "out.txt"), 1,
     "pbmt eval: error: out.txt: no space left on the device"),
    (PermissionError(errno.EACCES, "Permission denied", "/root/x"), 1, "pbmt eval: error: /root/x: Permission denied"),
    (MemoryError(), 1, "pbmt eval: error: out of memory"),
    (KeyboardInterrupt(), 130, "pbmt eval: interrupted"),
])
def test_user_and_environment_errors_are_one_line(monkeypatch, capsys, error, code, message):
    monkeypatch.setattr(pbmt.commands.eval, "run", failing(error))
    assert main(["eval", "a", "b"]) == code
    assert capsys.readouterr().err.strip() == message


def test_ctrl_c_inside_a_numba_kernel_is_interrupted_not_a_chain_of_system_errors(monkeypatch, capsys):
    def kernel(args):
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt:
            try:
                raise SystemError("<numba.core.dispatcher> returned a result with an exception set")
            except SystemError as inner:
                raise SystemError("_decode returned a result with an exception set") from inner
    monkeypatch.setattr(pbmt.commands.eval, "run", kernel)
    assert main(["eval", "a", "b"]) == 130
    assert capsys.readouterr().err.strip() == "pbmt eval: interrupted"


def test_ctrl_c_after_resumable_records_says_the_same_command_goes_on(monkeypatch, capsys, tmp_path):
    from pbmt.base.journal import Journal

    def translating(args):
        with Journal([tmp_path / "out.txt"], lambda: "run", unit="sentence") as journal:
            journal.write(["one\n"])
            journal.write(["two\n"])
            raise KeyboardInterrupt
    monkeypatch.setattr(pbmt.commands.eval, "run", translating)
    assert main(["eval", "a", "b"]) == 130
    assert capsys.readouterr().err.strip() == ("pbmt eval: interrupted (2 sentences written and kept: the same "
                                               "command goes on after them)")
    with Journal([tmp_path / "out.txt"], lambda: "run") as journal:
        assert journal.done == 2


def test_a_broken_pipe_is_exit_141_and_quiet(monkeypatch, capsys):
    monkeypatch.setattr(pbmt.commands.eval, "run", failing(BrokenPipeError(errno.EPIPE, "Broken pipe")))
    assert main(["eval", "a", "b"]) == 141
    assert capsys.readouterr().err == ""


def test_a_bug_prints_its_traceback_and_says_it_is_a_bug(monkeypatch, capsys):
    monkeypatch.setattr(pbmt.commands.eval, "run", failing(ZeroDivisionError("division by zero")))
    assert main(["eval", "a", "b"]) == 1
    err = capsys.readouterr().err
    assert "Traceback" in err and "ZeroDivisionError" in err and "this is a bug in pbmt" in err


def test_bad_arguments_are_usage_errors(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["translate", "--stack", "many"])
    assert exit_.value.code == 2


@pytest.mark.parametrize("argv", [["translate", "--stack", "99999999999999999999"],
                                  ["translate", "--pop-limit", str(2 ** 31)],
                                  ["translate", "--distortion-limit", str(2 ** 63)],
                                  ["translate", "--ttable-limit", str(2 ** 64 + 1)],
                                  ["explain", "x", "--n-best-size", str(2 ** 63)]])
def test_an_integer_beyond_32_bits_is_a_usage_error_naming_the_option(capsys, argv):
    """Such values reached the kernels' int64 arguments (an OverflowError's traceback) or arrays that size."""
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and err.count("\n") == 1
    assert err.startswith(f"pbmt {argv[0]}: error: {argv[-2]} must be ") and "and at most 2,147,483,647, not" in err
    assert build_parser().parse_args([*argv[:-1], str(2 ** 31 - 1)])


@pytest.mark.parametrize("section", ["stack", "distortion-limit", "ttable-limit", "cube-pruning-pop-limit"])
def test_a_search_setting_of_the_ini_beyond_32_bits_is_an_error_naming_the_ini(fuzz, tmp_path, capsys, section):
    ini = re.sub(rf"\[{section}\]\n[^\n]*\n", "", (fuzz["model"] / "moses.ini").read_text())  # the model's own
    copy = model_copy(fuzz["model"], tmp_path / "model", {"moses.ini": f"{ini}\n[{section}]\n{2 ** 64}\n".encode()})
    code = main(["translate", "-q", "--tokenized", "-f", str(copy), "-i", str(fuzz["input"])])
    captured = capsys.readouterr()
    assert code == 1 and captured.out == "" and captured.err.count("\n") == 1, captured.err
    assert captured.err.startswith(f"pbmt translate: error: {copy}: ") and f"[{section}]) must be an integer of at least " \
        in captured.err and "2,147,483,647" in captured.err


def test_weights_written_without_the_space_after_the_name_say_how_to_write_them(fuzz, capsys):
    assert main(["translate", "-q", "-f", str(fuzz["model"] / "moses.ini"), "-i", str(fuzz["input"]), "--weights",
                 "LM0=0.5 WordPenalty0= -1"]) == 2
    assert capsys.readouterr().err == (
        "pbmt translate: error: --weights: feature value 'LM0=0.5' before any feature name (a name ends in '=' and "
        "its values follow it after a space: 'LM0= 0.5')\n")


@pytest.fixture(scope="module")
def verbs(fuzz, tmp_path_factory):
    """Argument lists of every verb on the fuzz model, with {out} for the output folder; train's corpus and word
    alignment are the shared data's, when it is there."""
    folder = tmp_path_factory.mktemp("verbs")
    ini, src, refs = fuzz["model"] / "moses.ini", fuzz["input"], fuzz["refs"]
    for name, shared in (("train.es", "train.tok.es"), ("train.en", "train.tok.en"),
                         ("train.gdfa", "train.align.gdfa")):
        if SHARED.is_dir():
            (folder / name).write_text("\n".join((SHARED / shared).read_text().splitlines()[:60]) + "\n")
    tune = ["tune", "-f", ini, "--src", src, "--refs", refs, "--out", "{out}/run", "--iterations", "2",
            "--restarts", "2", "--random-directions", "2"]
    assert run([s.replace("{out}", str(folder)) for s in map(str, tune)] + ["-q"]).code == 0
    return {
        "translate": ["translate", "--tokenized", "-f", ini, "-i", src, "-o", "{out}/out.txt", "--n-best",
                      "{out}/nbest.txt", "--n-best-size", "3"],
        "explain": ["explain", "--tokenized", "-f", ini, "--html", "{out}/e.html", "--dot", "{out}/e.dot",
                    fuzz["input"].read_text().splitlines()[0]],
        "sample": ["sample", "--tokenized", "-f", ini, "-i", src, "-o", "{out}/out.txt", "--steps-per-sentence", "50",
                   "--trace", "{out}/trace.tsv"],
        "eval": ["eval", refs, "-i", src],
        "lm": ["lm", "-n", "2", refs, "{out}/lm.arpa", "--discount-fallback"],
        "optimize": ["optimize", "--n-best", fuzz["nbest"], "--refs", refs, "-f", ini, "-o", "{out}/t.ini",
                     "--restarts", "2"],
        "rescore": ["rescore", "--train", "--n-best", fuzz["nbest"], "--refs", refs, "--out", "{out}/w.txt",
                    "--epochs", "3"],
        "filter": ["filter", "--tokenized", "-f", ini, "-i", src, "--out", "{out}/filtered"],
        "train": ["train", "--src", folder / "train.es", "--tgt", folder / "train.en", "--alignment",
                  folder / "train.gdfa", "--tokenized", "--discount-fallback", "--out", "{out}/model"],
        "plot": ["plot", "tuning", folder / "run" / "log.tsv", "--pool", "-o", "{out}/tuning.png"],
        "tune mert": tune,
        "tune pro --keep last": [*tune[:-4], "--algorithm", "pro", "--keep", "last"],  # without MERT's options
        "tune costmargin": [*tune[:-6], "--algorithm", "costmargin", "--passes", "3", "--sgd-passes", "2"],
        "tune perceptron": [*tune[:-6], "--algorithm", "perceptron", "--passes", "3", "--sgd-passes", "2"],
        "tune samplerank": [*tune[:-6], "--algorithm", "samplerank", "--epochs", "1", "--samples-per-sentence", "5",
                            "--burn-in-per-sentence", "5"],
    }


# files that hold seconds (and figures drawn from them)
TIMED = {"log.tsv", "dev-bleu.png", "tuning.png", "training-bleu.png", "checkpoint.npz", "classes.json",
         "config.json", "corpus.json", "lm.json", "tables.json", "alignment.json"}
UNQUIET = {"eval", "explain"}  # print their result, nothing else


@pytest.mark.parametrize("verb", ["translate", "explain", "sample", "eval", "lm", "optimize", "rescore", "filter",
                                  "train", "plot", "tune mert", "tune pro --keep last", "tune costmargin",
                                  "tune perceptron", "tune samplerank"])
def test_every_verb_gives_the_same_files_with_and_without_quiet(verbs, tmp_path, verb, request):
    if verb == "train":
        request.getfixturevalue("bible")  # skips without the shared training corpus
    results = {}
    for quiet in (True, False):
        out = tmp_path / ("quiet" if quiet else "loud")
        out.mkdir()
        argv = [str(a).replace("{out}", str(out)) for a in verbs[verb]]
        results[quiet] = run(argv + (["-q"] if quiet and argv[0] not in UNQUIET else []))
        assert results[quiet].code == 0, results[quiet].err
        assert "Traceback" not in results[quiet].err
    assert results[True].out == results[False].out
    comparison = filecmp.dircmp(tmp_path / "quiet", tmp_path / "loud")
    assert_same_files(comparison)


def assert_same_files(comparison: filecmp.dircmp) -> None:
    assert not comparison.left_only and not comparison.right_only
    differ = [name for name in comparison.diff_files if name not in TIMED and "cache" not in name]
    assert not differ, differ
    for sub in comparison.subdirs.values():
        if "cache" not in sub.left:
            assert_same_files(sub)


def test_keep_chooses_which_weights_moses_ini_gets(verbs, tmp_path):
    argv = [str(a).replace("{out}", str(tmp_path)) for a in verbs["tune mert"]]
    argv = [a.replace(str(tmp_path / "run"), str(tmp_path / "last")) for a in argv]
    assert run([argv[0], "-q", *argv[1:], "--keep", "last"]).code == 0
    last = tmp_path / "last"
    assert (last / "moses.ini").read_text() == (last / "run2.moses.ini").read_text()
    shutil.rmtree(last)


def test_explain_warns_of_plain_text_it_takes_as_tokens(bible, capsys):
    """A Moses model with no pbmt.toml (or --tokenized) takes the sentence as tokens: plain text is explained with a
    warning naming what is not in the model's token form, as translate warns; tokens say nothing."""
    ini = str(bible / "model" / "moses.ini")
    assert main(["explain", "-f", ini, "Josué habló al pueblo."]) == 0
    err = capsys.readouterr().err
    assert err.startswith("pbmt explain: warning: the sentence:1: 'Josué' is known to the model only as 'josué'")
    assert "pbmt tokenize --language L" in err and err.count("\n") == 1
    assert main(["explain", "-f", ini, "josué habló al pueblo ."]) == 0
    assert capsys.readouterr().err == ""
    assert main(["explain", "--tokenized", "Dios es amor."]) == 0
    assert "'amor.' is 'amor .' in the model's tokens" in capsys.readouterr().err
