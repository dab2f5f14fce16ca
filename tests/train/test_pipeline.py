"""The training pipeline's parts: the resumable step runner, the streamed
corpus step, alignment with (a stand-in for) eflomal, pruning both tables
alike, and ARPA headers."""

from pathlib import Path

import numpy as np
import pytest

from pbmt.commands.train import language
from pbmt.base.errors import FormatError, PbmtError
from pbmt.base.files import read_lines
from pbmt.train import pipeline
from pbmt.train.corpus import read_alignment, read_corpus
from pbmt.train.pipeline import align_corpus, arpa_order, train_tables
from pbmt.train.steps import Step, StepRunner

N = 200


def lines(path):
    return [line for _, line in read_lines(path)]


def write(path, text_lines):
    path.write_text("".join(line + "\n" for line in text_lines), encoding="utf-8")


class Upper:
    """A step that writes its input in capitals, counting its runs."""

    def __init__(self, folder: Path, options=None):
        self.src, self.out, self.runs = folder / "in.txt", folder / "out.txt", 0
        self.options = options or {}

    def step(self) -> Step:
        return Step("upper", (self.src,), (self.out,), self.options, self.action)

    def action(self) -> str:
        self.runs += 1
        self.out.write_text(self.src.read_text().upper())
        return "done"


def test_step_runs_again_only_when_inputs_options_or_outputs_change(tmp_path):
    runner = StepRunner(tmp_path / "steps")
    upper = Upper(tmp_path)
    upper.src.write_text("a\n")
    assert [r.ran for r in runner.run([upper.step()])] == [True]
    assert [r.ran for r in runner.run([upper.step()])] == [False] and upper.runs == 1
    upper.src.write_text("a\n")  # same content, new modification time
    assert not runner.run([upper.step()])[0].ran
    upper.src.write_text("b\n")
    assert runner.run([upper.step()])[0].ran and upper.out.read_text() == "B\n"
    upper.out.write_text("edited\n")
    assert runner.run([upper.step()])[0].ran and upper.out.read_text() == "B\n"
    upper.out.unlink()
    assert runner.run([upper.step()])[0].ran
    upper.options = {"k": 2}
    assert runner.run([upper.step()])[0].ran
    report = runner.run([upper.step()])[0]
    assert not report.ran and report.summary == "done" and upper.runs == 5


def test_a_step_that_does_not_write_its_outputs_fails_and_leaves_no_stamp(tmp_path):
    runner = StepRunner(tmp_path / "steps")
    step = Step("lazy", (), (tmp_path / "never",), {}, lambda: "nothing")
    with pytest.raises(PbmtError, match="did not write"):
        runner.run([step])
    assert not runner.stamp_path(step).exists()


def test_an_interrupted_step_says_which_steps_are_kept_and_where_the_same_command_goes_on(tmp_path):
    upper = Upper(tmp_path)
    upper.src.write_text("a\n")

    def interrupted():
        raise KeyboardInterrupt

    stopped = Step("align", (), (tmp_path / "never",), {}, interrupted)
    with pytest.raises(KeyboardInterrupt) as caught:
        StepRunner(tmp_path / "steps").run([upper.step(), stopped])
    assert caught.value.__notes__ == ["step 1 done and kept: the same command goes on from step 2, align"]
    with pytest.raises(KeyboardInterrupt) as caught:
        StepRunner(tmp_path / "steps").run([stopped])
    assert caught.value.__notes__ == ["no step finished: the same command starts again"]
    assert [r.ran for r in StepRunner(tmp_path / "steps").run([upper.step()])] == [False]


def test_eflomal_alignments_are_kept_and_symmetrised(bible, tmp_path, monkeypatch):
    for name in ("train.tok.es", "train.tok.en"):
        write(tmp_path / name, lines(bible / name)[:N])
    src, tgt = read_corpus(tmp_path / "train.tok.es"), read_corpus(tmp_path / "train.tok.en")
    directed = []
    for name in ("train.align.fwd", "train.align.rev"):
        write(tmp_path / name, lines(bible / name)[:N])
        directed.append(read_alignment(tmp_path / name, src, tgt))
    monkeypatch.setattr(pipeline, "eflomal_align", lambda *args, **kwargs: tuple(directed))
    fwd, rev, gdfa = tmp_path / "fwd", tmp_path / "rev", tmp_path / "gdfa"
    n_points = align_corpus(tmp_path / "train.tok.es", tmp_path / "train.tok.en", fwd, rev, gdfa, run_eflomal=True)
    assert lines(fwd) == lines(tmp_path / "train.align.fwd") and lines(rev) == lines(tmp_path / "train.align.rev")
    assert lines(gdfa) == lines(bible / "train.align.gdfa")[:N]  # Moses's symal
    assert n_points == sum(len(line.split()) for line in lines(gdfa))


def test_pruning_keeps_the_same_pairs_in_both_tables(bible, tmp_path):
    for name in ("train.tok.es", "train.tok.en", "train.align.gdfa"):
        write(tmp_path / name, lines(bible / name)[:N])
    paths = [tmp_path / n for n in ("pt.gz", "rt.gz", "lex.e2f", "lex.f2e")]
    inputs = [tmp_path / n for n in ("train.tok.es", "train.tok.en", "train.align.gdfa")]
    full = train_tables(*inputs, *paths)
    assert full.extracted == full.written
    all_rows = [line.split(" ||| ") for line in lines(paths[0])]
    counts = train_tables(*inputs, *paths, min_count=2, prune_limit=3)
    assert counts.extracted == full.extracted and counts.written < full.extracted / 5
    rows = [line.split(" ||| ") for line in lines(paths[0])]
    assert [r[:2] for r in rows] == [line.split(" ||| ")[:2] for line in lines(paths[1])]
    assert all(int(r[4].split()[2]) >= 2 or " " not in r[0] for r in rows)  # count(f, e), or a single word
    assert any(int(r[4].split()[2]) == 1 for r in rows)
    sources, per_source = np.unique([r[0] for r in rows], return_counts=True)
    assert per_source.max() == 3
    # the kept rows are the top 3 by p(e|f) among the single-word pairs and the longer ones seen
    # twice or more, with their scores unchanged
    best = {}
    for r in all_rows:
        if int(r[4].split()[2]) >= 2 or " " not in r[0]:
            best.setdefault(r[0], []).append((-float(r[2].split()[2]), len(best.get(r[0], [])), r))
    expected = sorted(row for s in best for *_, row in sorted(best[s])[:3])
    assert sorted(rows) == expected


def test_arpa_order_from_the_header(bible, tmp_path):
    assert arpa_order(bible / "lm5.arpa.gz") == 5
    (tmp_path / "not.arpa").write_text("hello\nworld\n")
    with pytest.raises(FormatError, match="ARPA"):
        arpa_order(tmp_path / "not.arpa")


@pytest.mark.parametrize("name, given, expected", [
    ("train.es", None, "es"), ("corpus.de.gz", None, "de"), ("corpus.txt", None, "en"),
    ("corpus", None, "en"), ("train.es", "fr", "fr"),
])
def test_language_from_the_file_suffix(name, given, expected):
    assert language(Path(name), given, "en") == expected


def test_prepared_corpus_streams_and_names_unmatched_lines(tmp_path):
    from pbmt.base.text import tokens
    from pbmt.train.pipeline import prepare_corpus

    write(tmp_path / "f", ["a b", "", "c"])
    write(tmp_path / "e", ["x", "y", "z w"])
    write(tmp_path / "al", ["0-0 1-0", "", "0-1"])
    outs = [tmp_path / n for n in ("f.out", "e.out", "al.out")]
    prepared = prepare_corpus(tmp_path / "f", tmp_path / "e", *outs[:2], tokens, tokens, {tmp_path / "al": outs[2]})
    assert (prepared.n_pairs, prepared.dropped) == (2, (2,))  # the pair with an empty side, 1-based
    assert [lines(p) for p in outs] == [["a b", "c"], ["x", "z w"], ["0-0 1-0", "0-1"]]
    write(tmp_path / "short", ["x", "y"])
    with pytest.raises(PbmtError, match=r"f has 3 lines but .*short has 2: line 3 of .*f has no counterpart"):
        prepare_corpus(tmp_path / "f", tmp_path / "short", *outs[:2], tokens, tokens)
    write(tmp_path / "long", ["0-0", "", "0-0", "0-0"])
    with pytest.raises(FormatError, match=r"long: 4 lines, but the texts have 3"):
        prepare_corpus(tmp_path / "f", tmp_path / "e", *outs[:2], tokens, tokens, {tmp_path / "long": outs[2]})
    write(tmp_path / "cut", ["0-0"])
    with pytest.raises(FormatError, match=r"cut: 1 lines, but the texts have 3"):
        prepare_corpus(tmp_path / "f", tmp_path / "e", *outs[:2], tokens, tokens, {tmp_path / "cut": outs[2]})
    write(tmp_path / "bad", ["0-0", "", "0-2"])
    with pytest.raises(FormatError, match=r"bad:3: point 0-2 outside the sentence pair"):
        prepare_corpus(tmp_path / "f", tmp_path / "e", *outs[:2], tokens, tokens, {tmp_path / "bad": outs[2]})
    assert lines(outs[2]) == ["0-0 1-0", "0-1"]  # a failed run leaves the outputs as they were
