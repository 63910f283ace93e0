"""What Spark jobs of this library take from a plan: Parquet data files, and file locations
compared however a reader spells them.

Spark reports ``file:/a/b%20c`` where Iceberg wrote ``file:///a/b c``, and position-delete
files written by other engines name their data files as those engines spell them: vectors
are matched to planned files by :func:`path_key`, a form every spelling shares.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from puffin.errors import UnsupportedTableError

if TYPE_CHECKING:
    from puffin.iceberg.scan.plan import PlannedFile

__all__ = ["check_parquet", "path_key"]


def path_key(path: str) -> str:
    """A comparable form of a file location, as Spark and Iceberg spell it.

    Spark reports ``file:/a/b%20c`` for the Iceberg location ``file:///a/b c`` or ``/a/b c``;
    both become ``file:/a/b c``.  ``s3a://`` and ``s3n://`` compare equal to ``s3://``.
    """
    from urllib.parse import unquote

    text = unquote(path)
    if text.startswith("/"):
        text = "file:" + text
    text = re.sub(r"^file:/+", "file:/", text)
    return re.sub(r"^s3[an]://", "s3://", text)


def check_parquet(planned: Sequence[PlannedFile]) -> None:
    """Refuse data files the Spark tasks cannot read (anything but Parquet)."""
    from pyiceberg.manifest import FileFormat

    for p in planned:
        if p.data_file.file_format != FileFormat.PARQUET:
            raise UnsupportedTableError(
                f"data file {p.path} is {p.data_file.file_format}; the Spark jobs read "
                "Parquet data files only"
            )
