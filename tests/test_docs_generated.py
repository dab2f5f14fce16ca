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


def test_every_generated_block_names_a_renderer_and_the_tutorial_has_its_blocks():
    names = [m.group("name") for doc in generated.DOCS.glob("*.md")
             for m in generated.BLOCK.finditer(doc.read_text(encoding="utf-8"))]
    assert set(names) <= set(generated.RENDERERS)
    assert set(names) >= {name for name in generated.RENDERERS if name.startswith("tutorial-")}
    assert len(names) == len(set(names))


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
