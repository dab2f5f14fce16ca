"""The API reference (docs/reference.md, mkdocs with mkdocstrings) builds from pbmt.api's docstrings with
--strict, so a broken docstring reference or a missing page fails the tests, and it documents every public
name of ``pbmt``."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

import pbmt

pytest.importorskip("mkdocs")
pytest.importorskip("mkdocstrings_handlers.python")

REPO = Path(__file__).resolve().parents[1]


def test_the_api_reference_builds_strictly_and_names_every_public_name(tmp_path):
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "-d", str(tmp_path)],
                          cwd=REPO, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    page = (tmp_path / "reference" / "index.html").read_text(encoding="utf-8")
    documented = set(re.findall(r'id="pbmt\.api\.([A-Za-z]\w*)"', page))
    assert set(pbmt.__all__) - {"__version__", "DEFAULT_MODEL"} <= documented
    assert {"translate", "explain", "evaluate", "tune"} <= set(re.findall(r'id="pbmt\.api\.Model\.(\w+)"', page))
