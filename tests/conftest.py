"""Shared test fixtures: the path to ``../shared/data`` beside the repository."""

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data" / "bible-es-en"


@pytest.fixture(scope="session")
def bible() -> Path:
    """Folder of the shared Spanish-English Bible data (skips if absent)."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"shared data not found at {SHARED_DATA}")
    return SHARED_DATA
