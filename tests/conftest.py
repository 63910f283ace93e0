"""Shared test configuration: test data location and a deterministic hypothesis profile."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from _paths import TESTDATA

# The conformance adapters find side venvs only through these variables (an installed
# package knows no checkout); `make test` sets them, a bare pytest run gets the same here.
_SIDE_VENVS = (
    ("PUFFIN_DUCKDB15_PYTHON", ".venv-duckdb15"),
    ("PUFFIN_SAIL_PYTHON", ".venv-sail"),
    ("PUFFIN_JAVA_PYTHON", ".venv-java"),
)
for _variable, _venv in _SIDE_VENVS:
    _python = TESTDATA.parent / _venv / "bin" / "python"
    if _python.is_file():
        os.environ.setdefault(_variable, str(_python))

# CI runs are deterministic and bounded; PUFFIN_HYPOTHESIS_PROFILE=thorough explores more.
settings.register_profile(
    "ci",
    derandomize=True,
    deadline=None,
    max_examples=100,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    database=None,
)
settings.register_profile(
    "thorough",
    deadline=None,
    max_examples=2000,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.load_profile(os.environ.get("PUFFIN_HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture(scope="session")
def testdata() -> Path:
    """The project's own golden files (see testdata/README.md for provenance)."""
    return TESTDATA
