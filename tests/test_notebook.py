"""docs/notebooks/tour.ipynb runs from top to bottom (nbclient, this interpreter's kernel) and shows what it
says: the search's stacks, the effect of a weight, an n-best list of distinct strings, a MERT run with its
plot, the views of Jupyter."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

NOTEBOOK = Path(__file__).resolve().parents[1] / "docs" / "notebooks" / "tour.ipynb"


def test_the_teaching_notebook_runs_as_written(monkeypatch):
    # ipykernel's installed kernel spec starts "python": this interpreter's, whichever is first on PATH
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    assert not any(cell.get("outputs") for cell in notebook.cells if cell.cell_type == "code"), \
        "commit the notebook without outputs"
    nbclient.NotebookClient(notebook, timeout=900, kernel_name="python3",
                            resources={"metadata": {"path": str(NOTEBOOK.parent)}}).execute()
    outputs = [output for cell in notebook.cells if cell.cell_type == "code" for output in cell.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    text = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    assert "stack 0:" in text and "translation: " in text and "WordPenalty0 = +3.0" in text
    assert "distinct strings: 5" in text
    assert "dev BLEU per iteration:" in text and "'moses.ini'" in text and "tuned:   BLEU = " in text
    html = [o for o in outputs if o.output_type == "execute_result" and "text/html" in o.data]
    assert sum(o.data["text/html"].startswith("<iframe srcdoc=") for o in html) == 2
    assert any("data:image/png;base64," in o.data["text/html"] for o in html)
