"""Under ``make test`` a skip fails the run unless docs/testing.md allows its reason."""

from __future__ import annotations

import pytest

from tests.conftest import _allowed_skips, _forbid_silent_skip


def _skipped(reason: str) -> pytest.TestReport:
    return pytest.TestReport(
        nodeid="tests/x.py::test_x",
        location=("tests/x.py", 1, "test_x"),
        keywords={},
        outcome="skipped",
        longrepr=("tests/x.py", 1, f"Skipped: {reason}"),
        when="setup",
    )


def test_an_unlisted_skip_fails_under_make_test(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PUFFIN_REQUIRE_PEERS", "1")
    report = _skipped("no JDK")
    _forbid_silent_skip(report)
    assert report.outcome == "failed"
    assert "skipped under make test: Skipped: no JDK" in str(report.longrepr)


def test_a_listed_skip_stays_a_skip(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PUFFIN_REQUIRE_PEERS", "1")
    report = _skipped("needs O_TMPFILE (Linux)")
    _forbid_silent_skip(report)
    assert report.outcome == "skipped"


def test_outside_make_test_a_skip_is_a_skip(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PUFFIN_REQUIRE_PEERS", raising=False)
    report = _skipped("no JDK")
    _forbid_silent_skip(report)
    assert report.outcome == "skipped"


def test_the_docs_list_the_platform_skips() -> None:
    allowed = _allowed_skips()
    assert "needs FIFOs" in allowed and "O_TMPFILE" in allowed
    assert not any("java" in reason.lower() or "peers" in reason for reason in allowed)
