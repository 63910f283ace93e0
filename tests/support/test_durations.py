"""``support/durations.py``: an age in a message is spelled as the command line reads it."""

from __future__ import annotations

import datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from puffin.iceberg.metadata.retention import parse_age
from puffin.support.durations import as_written, spell_age

_TD = datetime.timedelta


@pytest.mark.parametrize(
    ("age", "spelled"),
    [
        (_TD(hours=1), "1h"),
        (_TD(minutes=90), "90m"),
        (_TD(days=3), "3d"),
        (_TD(weeks=2), "2w"),
        (_TD(days=14), "2w"),
        (_TD(seconds=45), "45s"),
        (_TD(seconds=0), "0s"),
        (_TD(milliseconds=500), "0.5s"),
        (_TD(hours=1, microseconds=13), "3600.000013s"),  # never "1:00:00.000013"
        (_TD(hours=-2), "-2h"),
    ],
)
def test_an_age_is_spelled_in_its_largest_exact_unit(age: _TD, spelled: str) -> None:
    assert spell_age(age) == spelled


@given(st.integers(min_value=0, max_value=10**12))
def test_the_command_line_reads_a_spelled_age_back(micros: int) -> None:
    age = _TD(microseconds=micros)
    assert abs(parse_age(spell_age(age)) - age) <= _TD(microseconds=1)


def test_an_age_the_user_wrote_is_kept_as_written() -> None:
    measured = _TD(hours=1, microseconds=13)  # what a clock makes of "1h"
    assert as_written(" 1.5h ", measured) == "1.5h"
    assert as_written(_TD(hours=1), measured) == "1h"
    since = datetime.datetime.now(datetime.timezone.utc) - _TD(hours=2)
    assert as_written(since, _TD(hours=2, microseconds=400)) == "2h"
