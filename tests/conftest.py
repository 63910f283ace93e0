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


# The quick loop (`make test-fast`, docs/testing.md) leaves out two kinds of test by marker:
# `peer` needs a side venv of `make peers` (.venv-sail, .venv-duckdb15, .venv-java), `java`
# starts a JVM (Spark, Iceberg Java, javac). Both are set here from the fixtures and the
# parameters that start one; a test that calls a peer directly carries its marker itself.
_NEEDS_BY_FIXTURE = {
    "sail": ("peer",),  # a Sail server from .venv-sail
    "java": ("peer", "java"),  # Iceberg Java 1.10.2 on Spark 3.5 from .venv-java
    "spark": ("java",),  # a local Spark session (tests/spark)
    "spark_session": ("java",),
}
_NEEDS_BY_PARAMETER = {
    "sail": ("peer",),
    "duckdb-1.5.5": ("peer",),
    "iceberg-java": ("peer", "java"),
    "java": ("java",),  # the conformance kit's Java adapter (javac, pyspark's jars)
}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        needs: set[str] = set()
        for name in getattr(item, "fixturenames", ()):
            needs.update(_NEEDS_BY_FIXTURE.get(name, ()))
        callspec = getattr(item, "callspec", None)
        for value in callspec.params.values() if callspec is not None else ():
            if isinstance(value, str):
                needs.update(_NEEDS_BY_PARAMETER.get(value, ()))
        if item.get_closest_marker("spark") is not None:
            needs.add("java")
        for name in sorted(needs):
            if item.get_closest_marker(name) is None:
                item.add_marker(name)
