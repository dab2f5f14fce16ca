"""``pbmt analyze``: the verdict of every sentence and the summary tables."""

from pbmt.commands.cli import main


def test_analyze_writes_a_row_per_sentence_and_the_shares(tiny_model_dir, tiny_dev, tmp_path, capsys):
    refs = (tiny_dev / "dev.ref").read_text().splitlines()
    (tmp_path / "refs").write_text("\n".join(refs[:-1] + ["zebra"]) + "\n")
    assert main(["analyze", "-q", "--tokenized", "-f", str(tiny_model_dir / "moses.ini"), "-i",
                 str(tiny_dev / "dev.src"), "--refs", str(tmp_path / "refs"), "-o", str(tmp_path / "rows"),
                 "--stack", "1", "--search", "stack"]) == 0
    rows = [line.split("\t") for line in (tmp_path / "rows").read_text().splitlines()]
    assert rows[0] == ["line", "verdict", "reference_score", "best_score", "cause", "detail", "best"]
    assert [r[0] for r in rows[1:]] == [str(k) for k in range(1, len(refs) + 1)]
    verdicts = [r[1] for r in rows[1:]]
    assert set(verdicts) <= {"correct", "search error", "model error", "unreachable"}
    assert verdicts[-1] == "unreachable" and rows[-1][4] == "reference word" and "'zebra'" in rows[-1][5]
    for r in rows[1:]:
        if r[1] == "search error":
            assert float(r[2]) > float(r[3]) and r[4]
        if r[1] == "model error":
            assert float(r[2]) <= float(r[3]) + 1e-6
    out = capsys.readouterr().out
    assert f"| unreachable | 1 of {len(refs)} |" in out and "| reference word | 1 |" in out
    assert f"| search error | {verdicts.count('search error')} of {len(refs)} |" in out


def test_refs_of_another_length_are_an_error(tiny_model_dir, tiny_dev, tmp_path, capsys):
    (tmp_path / "refs").write_text("the\n")
    assert main(["analyze", "-q", "--tokenized", "-f", str(tiny_model_dir / "moses.ini"), "-i",
                 str(tiny_dev / "dev.src"), "--refs", str(tmp_path / "refs")]) == 1
    assert "has 1 line but the input" in capsys.readouterr().err
