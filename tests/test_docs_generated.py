"""The docs' generated blocks are what ``docs/generated.py`` renders from the recorded runs in ``docs/runs/``, and
the recorded runs are runs of the commands the docs give (no decoding here: text and JSON only)."""

import json
import re
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "docs"))
import generated  # noqa: E402  (docs/generated.py)


def test_every_generated_block_is_what_its_recorded_run_gives():
    stale = generated.stale_docs()
    assert not stale, ("docs differ from their recorded runs; run `python docs/generated.py` (or record the run "
                       "again: docs/generated.py says how):\n" + "\n".join(stale.values()))


def test_every_generated_block_has_its_record_and_every_table_record_its_block():
    names = [m.group("name") for doc in generated.DOCS.glob("*.md")
             for m in generated.BLOCK.finditer(doc.read_text(encoding="utf-8"))]
    tables = {name for name, record in generated.records().items() if "columns" in record}
    assert set(names) <= set(generated.RENDERERS) | tables
    assert set(names) >= {name for name in generated.RENDERERS if name.startswith("tutorial-")} | tables
    assert len(names) == len(set(names))


def test_every_table_record_says_which_command_measured_it_when_and_at_which_commit():
    for name, record in generated.records().items():
        if "columns" in record:
            assert {"command", "commit", "date", "load", "rows"} <= set(record), name
            assert record["command"].startswith("python ") and record["commit"] and record["rows"], name


def test_the_recorded_tutorial_run_ran_the_tutorial_as_it_stands():
    record = json.loads((generated.RUNS / "tutorial.json").read_text(encoding="utf-8"))
    headings = [b.heading for b in generated.tutorial_blocks()]
    assert [b["heading"] for b in record["blocks"]] == headings[:len(record["blocks"])]  # a prefix if stopped
    assert not record["sizes"], "recorded with the tutorial's sizes overridden"
    iterations = int(re.search(r"^ITERATIONS=\$\{ITERATIONS:-(\d+)\}", generated.tutorial_blocks()[0].code,
                               re.M).group(1))
    for run in [record["tuning"]["mert"], *record["mert_seeds"].values()]:
        assert 1 < len(run["dev_bleu"]) <= iterations
    assert [s["name"] for s in record["train_steps"]][:3] == ["corpus", "align", "tables"]


def test_a_changed_record_changes_the_doc(tmp_path):
    text = "a\n<!-- generated: tutorial-untuned -->\nold\n<!-- end generated -->\nb\n"
    record = {"blocks": [{"heading": "6. Compare BLEU", "seconds": 1.0,
                          "stdout": "untuned: BLEU = 12.34 1/2/3/4 (BP = 1)\n"}]}
    assert generated.regenerated(text, {"tutorial": record}) == text.replace(
        "old\n", "Our run scored **12.34** on the first 200 verses of Acts with the default weights (cased, "
        "detokenised; section 6 puts the tokenised lowercased figure beside it).\n")
    with pytest.raises(ValueError, match="unknown generated block 'nope'"):
        generated.regenerated(text.replace("tutorial-untuned", "nope"), {"tutorial": record})


def test_a_written_table_record_renders_and_a_changed_number_changes_the_doc(tmp_path, monkeypatch):
    monkeypatch.setattr(generated, "RUNS", tmp_path)
    path = generated.write_table("speed", ["decoder", "wall s", "words"], [["pbmt", 12.25, 29443], ["Moses2", 23.1, None]],
                                 load=[1.27, 0.94, 1.5], command="python benchmarks/bench_x.py --y",
                                 formats={"wall s": ".1f"})
    record = json.loads(path.read_text(encoding="utf-8"))
    assert record["load"] == [0.9, 1.5] and record["date"] and record["commit"]
    text = "a\n<!-- generated: speed -->\n<!-- end generated -->\nb\n"
    doc = generated.regenerated(text, {"speed": record})
    assert "| decoder | wall s | words |\n|---|---|---|\n| pbmt | 12.2 | 29,443 |\n| Moses2 | 23.1 | |\n" in doc
    assert "Measured by `python benchmarks/bench_x.py --y` (pbmt at commit " in doc and "load average 0.9–1.5" in doc
    assert generated.regenerated(doc, {"speed": record}) == doc
    record["rows"][0][1] = 13.0
    assert "| pbmt | 13.0 | 29,443 |" in generated.regenerated(doc, {"speed": record})
    record["align"] = "lrr"
    assert "| decoder | wall s | words |\n|---|---:|---:|\n" in generated.regenerated(doc, {"speed": record})
    with pytest.raises(ValueError, match="align 'lx' is not"):
        generated.table({**record, "align": "lx"}, "speed")
    with pytest.raises(ValueError, match="row 1 has 2 cells for 3 columns"):
        generated.write_table("bad", ["a", "b", "c"], [[1, 2]], load=None, command="python x")
    assert not (tmp_path / "bad.json").exists()


# Quoted means ± sd of runs that no record holds: settings the defaults replaced, said as such where quoted.
EARLIER_SETTINGS = {
    "29.03 ± 0.06": "docs/rescoring.md, docs/tuning-results.md: ListNet rescoring before its defaults changed",
    "34.10 ± 0.41": "docs/samplerank.md: expected-gain from the gloss, one chain (not the default start)",
    "34.02 ± 0.22": "docs/samplerank.md: expected-gain from the gloss, four chains (not the default start)",
    "44.09 ± 0.70": "docs/tuning-results.md: the tutorial's MERT without half steps (before they were the default)",
}


def test_every_mean_and_sd_a_doc_quotes_is_in_a_record_or_a_generated_block():
    """A result quoted in prose as mean ± sd must be one a record holds, so a new record that changes it fails
    here until the prose says the new figure."""
    docs = [*sorted(generated.DOCS.glob("*.md")), REPO / "README.md"]
    texts = {doc: doc.read_text(encoding="utf-8") for doc in docs}
    recorded = " ".join([json.dumps(record, ensure_ascii=False) for record in generated.records().values()] +
                        [m.group("body") for text in texts.values() for m in generated.BLOCK.finditer(text)])
    unrecorded = [f"{doc.name}: {m.group(0)}" for doc, text in texts.items()
                  for m in re.finditer(r"\b\d+\.\d\d ± \d+\.\d\d\b", generated.BLOCK.sub("", text))
                  if m.group(0) not in recorded and m.group(0) not in EARLIER_SETTINGS]
    assert not unrecorded, f"quoted in prose, in no record of docs/runs: {unrecorded}"


def test_a_complete_tutorial_record_fills_every_section():
    """What a recording that ran to the end gives (the record in docs/runs may be one that stopped early)."""
    record = json.loads((generated.RUNS / "tutorial.json").read_text(encoding="utf-8"))
    headings = [b.heading for b in generated.tutorial_blocks()]
    bleu = "BLEU = {:.2f} 60.0/35.0/22.0/14.0 (BP = 0.950 ratio = 0.951 hyp_len = 5200 ref_len = 5467)"
    scores = {"untuned": 32.0, "mert": 33.0, "pro": 32.5, "samplerank": 32.8}
    section6 = "".join(f"{run}: {bleu.format(s)}\n{run} (tokenised, lowercased): {bleu.format(s + 0.6)}\n"
                       for run, s in scores.items())
    record["blocks"] = [{"heading": h, "seconds": 61.0, "stdout": section6 if h.startswith("6.") else ""}
                        for h in headings]
    record["tuning"]["pro"] = {"dev_bleu": [41.98, 42.1, 42.3], "pool_bleu": [42.9, 43.0, 43.1], "seconds": 100.0}
    record["tuning"]["samplerank"] = {"dev_bleu": [42.5, 42.7, 42.6], "seconds": 90.0}
    record["trace"] = [{"verse": 1, "score": [-60.2, -31.5], "bleu": [12.0, 30.5], "decoder_score": -30.9}]
    text = generated.regenerated(generated.TUTORIAL.read_text(encoding="utf-8"), {"tutorial": record})
    assert "not in the recorded run" not in text.lower() and "stopped for time" not in text
    assert "| PRO | 41.98, 42.10, 42.30 |" in text and "| SampleRank | 42.50, 42.70, 42.60 |" in text
    assert "mert: BLEU = 33.00" in text and "MERT +1.00, PRO +0.50, SampleRank +0.80" in text
    assert "| 1 | -60.2 → -31.5 | -30.9 | 12.0 → 30.5 |" in text
    assert f"**{generated._minutes(61.0 * (len(headings) - 1) + sum(s['seconds'] for s in record['train_steps']))}**" \
        in text
