"""What the docs say the code prints or defaults to, checked against the code (the embedded model, the
defaults' one definition), so a doc whose claim goes stale fails here rather than misleading a reader."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import pbmt
from pbmt.model.model import SearchSettings
from repo_data import data_lines

DOCS = Path(__file__).resolve().parents[1] / "docs"


@pytest.fixture(scope="module")
def model() -> pbmt.Model:
    return pbmt.load()


def test_serve_md_example_answer_is_what_the_embedded_model_gives(model):
    text = (DOCS / "serve.md").read_text(encoding="utf-8")
    section = text[text.index("### `POST /translate`"):]
    request = json.loads(re.search(r"-d '(\{.*?\})'", section, re.S).group(1))
    answer = json.loads(re.search(r"```json\n(.*?)```", section, re.S).group(1))
    got = model.translate(request["sentences"])
    assert [t["text"] for t in answer["translations"]] == [t.text for t in got]
    assert [t["alignment"] for t in answer["translations"]] == [[list(a) for a in t.alignment] for t in got]


def test_tutorial_states_the_decoders_defaults():
    text = " ".join((DOCS / "tutorial.md").read_text(encoding="utf-8").split())
    d = SearchSettings()
    assert d.search == "cube" and "The search is cube pruning" in text
    assert (f"a pop limit of {d.pop_limit} hypotheses per stack, stacks of {d.stack_size} hypotheses, distortion "
            f"limit {d.distortion_limit}, {d.table_limit} options per phrase") in text


def test_tutorial_quotes_the_embedded_models_first_test_translation(model):
    text = " ".join((DOCS / "tutorial.md").read_text(encoding="utf-8").split())
    quoted = re.search(r'"En el primer tratado, oh Teófilo" comes out as "([^"]+)"', text).group(1)
    assert model.translate(data_lines("test.es")[0]).text.startswith(quoted)
