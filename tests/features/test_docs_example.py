"""docs/global-features.md: its worked example runs and its asserted values hold."""

import re
from pathlib import Path

import numpy as np

from pbmt.features import KINDS
from pbmt.model.model import TranslationModel

DOC = Path(__file__).resolve().parents[2] / "docs" / "global-features.md"


def test_worked_example_runs(tiny_model_dir):
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.S)
    assert len(blocks) == 3
    model = TranslationModel.load(tiny_model_dir / "moses.ini")
    scope = {"model": model, "lines": ["a b c", "c a e b"], "print": lambda *a: None}
    try:
        for block in blocks:
            exec(compile(block, str(DOC), "exec"), scope)
    finally:
        KINDS.pop("dropped-words", None)
        KINDS.pop("vocabulary", None)
    result = scope["result"]
    assert len(result.derivations) == 2 and np.isfinite(result.score)
