"""Shared fixtures of the test suite."""
from __future__ import annotations

from pathlib import Path

import pytest

#: ../shared/reference next to the repository (absent in a user's clone).
REFERENCE_DIR = Path(__file__).resolve().parents[1].parent / "shared" / "reference"


@pytest.fixture(scope="session")
def reference_dir() -> Path:
    """The real reference data; skips the test when ``../shared/reference`` is absent."""
    if not REFERENCE_DIR.is_dir():
        pytest.skip("../shared/reference not present (a user's clone has no ../shared)")
    return REFERENCE_DIR
