"""docs/notebooks/tour.ipynb runs from top to bottom (nbclient, this interpreter's kernel) and shows what it
says: the search's stacks, the effect of a weight, a MERT run with its plot, the views of Jupyter."""

from __future__ import annotations

from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

NOTEBOOK = Path(__file__).resolve().parents[1] / "docs" / "notebooks" / "tour.ipynb"


def test_the_teaching_notebook_runs_as_written():
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    assert not any(cell.get("outputs") for cell in notebook.cells if cell.cell_type == "code"), \
        "commit the notebook without outputs"
    nbclient.NotebookClient(notebook, timeout=900, kernel_name="python3",
                            resources={"metadata": {"path": str(NOTEBOOK.parent)}}).execute()
    outputs = [output for cell in notebook.cells if cell.cell_type == "code" for output in cell.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    text = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    assert "stack 0:" in text and "translation: " in text and "WordPenalty0 = +3.0" in text
    assert "exit code 0" in text and "dev_bleu" in text and "tuned:   BLEU = " in text
    html = [o for o in outputs if o.output_type == "execute_result" and "text/html" in o.data]
    assert len(html) >= 2 and all(o.data["text/html"].startswith("<iframe srcdoc=") for o in html)
    assert any("image/png" in o.get("data", {}) for o in outputs)
