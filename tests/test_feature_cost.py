"""docs/writing-a-feature.md's cost of a feature in code, checked for the operation sequence model and the
distortion-bin family: the files of pbmt that import the feature's modules or spell its names are those the
guide's table lists."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from test_layers import PACKAGE, import_graph  # tests/ is on the path (pytest prepend mode)

GUIDE = PACKAGE.parent / "docs" / "writing-a-feature.md"


def _listed(row_start: str) -> set[str]:
    """The ``pbmt/...py`` paths of the guide's cost table row that starts with ``row_start``."""
    (row,) = [line for line in GUIDE.read_text(encoding="utf-8").splitlines() if line.startswith(row_start)]
    return set(re.findall(r"`(pbmt/[\w/]+\.py)`", row))


@pytest.mark.parametrize("row_start, modules, names", [
    ("| the operation sequence model", {"pbmt.model.osm", "pbmt.model._osm_kernels", "pbmt.train.osm"},
     ("OpSequenceModel",)),
    ("| a sparse family", {"pbmt.model.distortion_bins"}, ("DistortionBinFeature", "JumpBinData")),
])
def test_a_feature_touches_the_files_the_guide_lists(row_start, modules, names):
    graph = import_graph("pbmt")
    modules = modules | {m for m, imported in graph.items() if imported & modules}
    files = {str(Path(*m.split(".")).with_suffix(".py")) for m in modules}
    files |= {str(p.relative_to(PACKAGE.parent)) for p in PACKAGE.rglob("*.py")
              if any(name in p.read_text(encoding="utf-8") for name in names)}
    assert files == _listed(row_start)
