import numpy as np
import pytest
import sacrebleu

from pbmt.commands.cli import main
from pbmt.base.plots import read_trace
from pbmt.base.nbest import read_nbest

SOURCES = "a b c\nc a e b\nb x a d\n\ne d c b a\n"


def sample(tiny_model_dir, tmp_path, name, *extra):
    src = tmp_path / "in.txt"
    src.write_text(SOURCES)
    out = tmp_path / name
    code = main(["sample", "-q", "-f", str(tiny_model_dir / "moses.ini"), "-i", str(src), "-o", str(out), *extra])
    return code, out.read_text().splitlines() if out.exists() else None


def test_annealed_sampling_finds_the_decoders_translations(tiny_model_dir, tmp_path):
    src = tmp_path / "in.txt"
    src.write_text(SOURCES)
    assert main(["translate", "-q", "-f", str(tiny_model_dir / "moses.ini"), "-i", str(src),
                 "-o", str(tmp_path / "decoded")]) == 0
    code, out = sample(tiny_model_dir, tmp_path, "sampled", "--steps-per-sentence", "3000", "--anneal", "1", "0.02")
    assert code == 0 and out == (tmp_path / "decoded").read_text().splitlines()
    assert out[3] == "" and "x" in out[2].split()
    code, greedy = sample(tiny_model_dir, tmp_path, "greedy", "--chain-start", "decoder", "--temperature", "0",
                          "--steps-per-sentence", "50")
    assert code == 0 and greedy == out


def test_output_depends_on_the_seed_only(tiny_model_dir, tmp_path):
    args = ["--steps-per-sentence", "400", "--temperature", "3", "--decision", "max-translation", "--burn-in-per-sentence", "100"]
    runs = [sample(tiny_model_dir, tmp_path, f"out{i}", *args, "--workers", str(workers))
            for i, workers in enumerate((1, 2, 1))]
    assert all(code == 0 for code, _ in runs)
    assert runs[0][1] == runs[1][1] == runs[2][1] and len(runs[0][1]) == 5


@pytest.mark.parametrize("args,message", [
    (["--decision", "max-derivation", "--steps-per-sentence", "100", "--burn-in-per-sentence", "100"], "burn-in"),
    (["--anneal", "1", "0"], "positive"),
    (["--steps-per-sentence", "0"], "1 to 10,000,000"),
    (["--steps-per-sentence", "20000000"], "must be 1 to 10,000,000, not 20,000,000"),  # as the bound is written
])
def test_bad_arguments(tiny_model_dir, tmp_path, capsys, args, message):
    try:
        code, _ = sample(tiny_model_dir, tmp_path, "out", *args)
    except SystemExit as exit_:  # an option out of its range is argparse's usage error
        code = exit_.code
    assert code == (1 if message == "burn-in" else 2) and message in capsys.readouterr().err


def test_temperature_and_anneal_exclude_each_other(tiny_model_dir, tmp_path):
    with pytest.raises(SystemExit) as exit_:
        sample(tiny_model_dir, tmp_path, "out", "--temperature", "1", "--anneal", "1", "0.1")
    assert exit_.value.code == 2


def test_trace_records_score_and_bleu_without_changing_the_output(tiny_model_dir, tmp_path):
    src = tmp_path / "in.txt"
    src.write_text(SOURCES)
    assert main(["translate", "-q", "-f", str(tiny_model_dir / "moses.ini"), "-i", str(src), "--n-best",
                 str(tmp_path / "nbest"), "--n-best-size", "1", "-o", str(tmp_path / "decoded")]) == 0
    totals = {e.sentence: e.total for e in read_nbest(tmp_path / "nbest")}
    # greedy from the decoder's 1-best never moves: the score stays the decoder's, BLEU+1 against it stays 100
    refs = tmp_path / "refs"
    refs.write_text((tmp_path / "decoded").read_text())
    code, out = sample(tiny_model_dir, tmp_path, "greedy", "--chain-start", "decoder", "--temperature", "0",
                       "--steps-per-sentence", "25", "--trace", str(tmp_path / "greedy.tsv"), "--trace-every", "10",
                       "--refs", str(refs))
    assert code == 0 and out == (tmp_path / "decoded").read_text().splitlines()
    trace = read_trace(tmp_path / "greedy.tsv")
    assert trace.sentence.tolist() == [s for s in range(1, 6) for _ in range(4)]
    assert trace.step.tolist() == [0, 10, 20, 25] * 5
    empty = trace.sentence == 4  # the empty line: an empty derivation (the LM's </s> only), never moving
    assert len(set(trace.model_score[empty])) == 1
    for s, score, bleu in zip(trace.sentence[~empty], trace.model_score[~empty], trace.bleu[~empty]):
        assert score == pytest.approx(totals[s - 1], rel=1e-5) and bleu == 100.0  # n-best totals: 6 digits
    assert np.all(trace.temperature == 0.0)
    # annealed: the output is the untraced run's, BLEU is sacrebleu's BLEU+1, the schedule is logged
    args = ["--steps-per-sentence", "300", "--anneal", "2", "0.1"]
    code, plain = sample(tiny_model_dir, tmp_path, "plain", *args)
    code, traced = sample(tiny_model_dir, tmp_path, "traced", *args, "--trace", str(tmp_path / "t.tsv"),
                          "--refs", str(refs), "--trace-every", "100")
    assert code == 0 and traced == plain
    trace = read_trace(tmp_path / "t.tsv")
    assert trace.temperature[:4].tolist() == pytest.approx([2.0, *np.geomspace(2, 0.1, 300)[[99, 199, 299]]],
                                                           rel=1e-5)
    assert np.all((trace.bleu >= 0) & (trace.bleu <= 100))
    assert main(["plot", "trace", str(tmp_path / "t.tsv"), "-o", str(tmp_path / "t.png"), "-q"]) == 0
    assert (tmp_path / "t.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_trace_bleu_is_sacrebleus_sentence_bleu_plus1(tiny_model_dir, tmp_path):
    src = tmp_path / "one.txt"
    src.write_text("a b c d e\n")
    refs = tmp_path / "refs"
    refs.write_text("the lord said unto moses and the house of israel\n")
    code = main(["sample", "-q", "-f", str(tiny_model_dir / "moses.ini"), "-i", str(src), "-o", str(tmp_path / "out"),
                 "--steps-per-sentence", "1", "--trace", str(tmp_path / "t.tsv"), "--refs", str(refs), "--chain-start",
                 "decoder", "--temperature", "0"])
    out = (tmp_path / "out").read_text().splitlines()
    final = read_trace(tmp_path / "t.tsv").bleu[-1]
    expected = sacrebleu.sentence_bleu(out[0], [refs.read_text().strip()], smooth_method="add-k", smooth_value=1,
                                       tokenize="none").score
    assert code == 0 and final == pytest.approx(expected, abs=1e-3)


def test_trace_arguments_are_checked(tiny_model_dir, tmp_path, capsys):
    refs = tmp_path / "refs"
    refs.write_text("one line\n")
    code, _ = sample(tiny_model_dir, tmp_path, "out", "--trace", str(tmp_path / "t.tsv"), "--refs", str(refs))
    assert code == 1 and "has 1 lines but" in capsys.readouterr().err
    code, _ = sample(tiny_model_dir, tmp_path, "out", "--refs", str(refs))
    assert code == 1 and "give --trace FILE too" in capsys.readouterr().err


def test_the_translations_and_the_trace_both_on_standard_output_are_refused_before_either_is_written(
        tiny_model_dir, tmp_path, capsys):
    src = tmp_path / "in.txt"
    src.write_text(SOURCES)
    argv = ["sample", "-q", "-f", str(tiny_model_dir / "moses.ini"), "-i", str(src), "--refs", str(src),
            "--steps-per-sentence", "20", "--trace", "-"]
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and "-: standard output named twice as an output of this run" in captured.err
    code, out = sample(tiny_model_dir, tmp_path, "out", *argv[6:-1], str(tmp_path / "trace.tsv"))
    assert code == 0 and len(out) == 5 and (tmp_path / "trace.tsv").read_text().startswith("sentence\tstep")
