"""Shared test configuration: test data location, hypothesis profiles, markers, and no
silent skip under ``make test``."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

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

# Every run draws new examples (a fixed set would replay the same 100 for ever); a failing
# one is kept in .hypothesis/ and replayed first next time, and printed as a
# @reproduce_failure blob. PUFFIN_HYPOTHESIS_PROFILE=deep (nightly-sized) tries 50 times as
# many; PUFFIN_HYPOTHESIS_PROFILE=replay is the old fixed set, for bisecting.
_QUIET = [HealthCheck.too_slow, HealthCheck.data_too_large]
settings.register_profile(
    "ci", deadline=None, max_examples=100, suppress_health_check=_QUIET, print_blob=True
)
settings.register_profile(
    "deep", deadline=None, max_examples=5000, suppress_health_check=_QUIET, print_blob=True
)
settings.register_profile("thorough", parent=settings.get_profile("deep"))
settings.register_profile(
    "replay", deadline=None, max_examples=100, suppress_health_check=_QUIET,
    derandomize=True, database=None,
)
settings.load_profile(os.environ.get("PUFFIN_HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture(scope="session")
def testdata() -> Path:
    """The project's own golden files (see testdata/README.md for provenance)."""
    return TESTDATA


@pytest.fixture(scope="module")
def java(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """Iceberg Java 1.10.2 on Spark 3.5 (tests/peers), one server a module that asks for it,
    stopped when the module ends."""
    from peers.iceberg_java import JavaPeer

    with JavaPeer(tmp_path_factory.mktemp("java")) as peer:
        yield peer


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


# Under `make test` (PUFFIN_REQUIRE_PEERS=1) nothing is skipped silently: a skip whose reason
# docs/testing.md does not list under "Skips" fails the run, as does a skipped module.
_DOCS = TESTDATA.parent / "docs" / "testing.md"


def _allowed_skips() -> list[str]:
    """The reasons docs/testing.md's "Skips" table allows (its first column, in backticks)."""
    text = _DOCS.read_text(encoding="utf-8") if _DOCS.is_file() else ""
    if "\n## Skips\n" not in text:
        return []
    section = text.split("\n## Skips\n", 1)[1].split("\n## ", 1)[0]
    return [
        line.split("`")[1]
        for line in section.splitlines()
        if line.startswith("| `") and line.count("`") >= 2
    ]


def _skip_reason(report: pytest.CollectReport | pytest.TestReport) -> str:
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2])
    return str(longrepr)


def _forbid_silent_skip(report: pytest.CollectReport | pytest.TestReport) -> None:
    if os.environ.get("PUFFIN_REQUIRE_PEERS") != "1" or not report.skipped:
        return
    if hasattr(report, "wasxfail"):
        return  # an xfail: strict by configuration (xfail_strict), listed in docs/testing.md
    reason = _skip_reason(report)
    if any(allowed in reason for allowed in _allowed_skips()):
        return
    report.outcome = "failed"
    report.longrepr = (
        f"skipped under make test: {reason}\n"
        "make test runs everything: make the skip impossible here, or list its reason in "
        "docs/testing.md ('Skips') with why it may happen"
    )


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    outcome = yield
    _forbid_silent_skip(outcome.get_result())


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector: pytest.Collector) -> Any:
    outcome = yield
    _forbid_silent_skip(outcome.get_result())
