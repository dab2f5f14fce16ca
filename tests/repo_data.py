"""What the repository alone gives the tests, with no ``../shared`` beside it: the embedded model and the
Bible text of ``data/`` (``data/README.md``)."""

from __future__ import annotations

import gzip
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "data"
EMBEDDED_MODEL = DATA / "model" / "moses.ini"


def data_lines(name: str) -> list[str]:
    """The lines of ``data/bible/NAME.gz`` (``dev.tok.es``: the dev set in the shared corpus's token form)."""
    return gzip.decompress((DATA / "bible" / f"{name}.gz").read_bytes()).decode("utf-8").splitlines()
