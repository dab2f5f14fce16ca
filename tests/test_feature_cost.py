"""docs/writing-a-feature.md's cost of a feature in code, checked for the operation sequence model: the files of
pbmt that import the OSM's modules or spell its Moses name are those the guide's table lists."""

from __future__ import annotations

import re
from pathlib import Path

from test_layers import PACKAGE, import_graph  # tests/ is on the path (pytest prepend mode)

GUIDE = PACKAGE.parent / "docs" / "writing-a-feature.md"
OSM_MODULES = {"pbmt.model.osm", "pbmt.model._osm_kernels", "pbmt.train.osm"}


def _listed(row_start: str) -> set[str]:
    """The ``pbmt/...py`` paths of the guide's cost table row that starts with ``row_start``."""
    (row,) = [line for line in GUIDE.read_text(encoding="utf-8").splitlines() if line.startswith(row_start)]
    return set(re.findall(r"`(pbmt/[\w/]+\.py)`", row))


def test_the_osm_touches_the_files_the_guide_lists():
    graph = import_graph("pbmt")
    modules = OSM_MODULES | {m for m, imported in graph.items() if imported & OSM_MODULES}
    files = {str(Path(*m.split(".")).with_suffix(".py")) for m in modules}
    files |= {str(p.relative_to(PACKAGE.parent)) for p in PACKAGE.rglob("*.py")
              if "OpSequenceModel" in p.read_text(encoding="utf-8")}
    assert files == _listed("| the operation sequence model")
