"""Table-tier steps that commit what a writer can get wrong around a deletion vector.

Engines have shipped deletion vectors in the wrong partition, below their data file's
sequence number, twice for one data file, or with a manifest range, ``record_count`` or
``referenced_data_file`` that does not match the blob. No correct writer makes such a table,
so these steps write the Puffin file with this library's writer and commit delete entries
exactly as the recipe gives them, through the one snapshot writer
(:func:`puffin.iceberg.metadata.snapshots.commit_snapshot`), which takes entries as they are.

* ``{"action": "raw-vectors", "blobs": [[target, positions], ...], "entries": [...]}``: one
  Puffin file, a DV blob per item (its ``referenced-data-file`` the target's location), and
  one delete entry per item of ``entries``, all in one commit. An entry is
  ``{"blob": k}`` (blob ``k``'s range and cardinality, for the blob's own data file) with
  any of ``"file": target`` (the data file the entry names instead), ``"record-count": n``,
  ``"offset": "missing" | delta``, ``"size": "missing" | delta`` and
  ``"partition": [values]`` (in the table's current spec).
* ``{"action": "add-file", "file": i, "name": NAME}``: data file ``i`` written to
  ``data/NAME`` and registered with :func:`puffin.iceberg.add_files` (a later data sequence
  number than an entry committed before it for that location).
* ``{"action": "partition-by", "column": NAME}``: the table's spec gets an identity field.

A ``target`` is a data file's index in the recipe, or ``"@NAME"`` for ``data/NAME`` (a file
added later, or never).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from puffin.conformance.recipe_values import arrow_rows, positions_of

if TYPE_CHECKING:
    from pyiceberg.manifest import DataFile
    from pyiceberg.table import Table

    from puffin.blobs.dv.files import DeletionVectorEntry

__all__ = ["STEPS", "apply_step"]

#: The actions this module adds to the table recipes.
STEPS = frozenset({"raw-vectors", "add-file", "partition-by"})


def apply_step(
    table: Table,
    step: Mapping[str, Any],
    paths: Mapping[int, str],
    rows: Mapping[str, Any],
    columns: Sequence[Mapping[str, Any]],
) -> Table:
    """``table`` after one of :data:`STEPS`; ``paths``: each appended data file's location,
    by recipe index; ``rows``: the recipe's input (its ``files``)."""
    action = step["action"]
    if action == "raw-vectors":
        return _raw_vectors(table, step, paths)
    if action == "add-file":
        return _add_file(table, step, rows, columns)
    if action == "partition-by":
        with table.update_spec() as update:
            update.add_identity(step["column"])
        return table.refresh()
    raise ValueError(f"unknown table step {action!r}")


def _location(table: Table, target: int | str, paths: Mapping[int, str]) -> str:
    if isinstance(target, str):
        if not target.startswith("@"):
            raise ValueError(f"a target is a data file's index or '@NAME', not {target!r}")
        return f"{table.location().rstrip('/')}/data/{target[1:]}"
    return paths[target]


def _raw_vectors(table: Table, step: Mapping[str, Any], paths: Mapping[int, str]) -> Table:
    import uuid

    from puffin.blobs.dv.files import write_deletion_vectors
    from puffin.iceberg.metadata.snapshots import commit_snapshot
    from puffin.io.locations import local_path

    blobs = {_location(table, t, paths): positions_of(p) for t, p in step["blobs"]}
    if len(blobs) != len(step["blobs"]):
        raise ValueError("raw-vectors: one blob per data file")
    location = table.location_provider().new_data_location(f"{uuid.uuid4()}-deletes.puffin")
    target = local_path(location)
    if target is None:
        raise ValueError(f"not a local location: {location}")
    written = write_deletion_vectors(target, blobs)
    entries = [_entry(table, written, e, paths, location) for e in step["entries"]]
    committed, _ = commit_snapshot(table, [], deletes=entries, operation="delete")
    return committed


def _entry(
    table: Table,
    written: Sequence[DeletionVectorEntry],
    entry: Mapping[str, Any],
    paths: Mapping[int, str],
    location: str,
) -> DataFile:
    """One delete entry for blob ``entry["blob"]`` of the file just written, as told."""
    from pyiceberg.manifest import DataFile, DataFileContent, FileFormat
    from pyiceberg.typedef import Record

    blob = written[entry.get("blob", 0)]
    referenced = blob.referenced_data_file
    if "file" in entry:
        referenced = _location(table, entry["file"], paths)
    record = DataFile.from_args(
        _table_format_version=3,
        content=DataFileContent.POSITION_DELETES,
        file_path=location,
        file_format=FileFormat.PUFFIN,
        partition=Record(*entry.get("partition", ())),
        record_count=int(entry.get("record-count", blob.record_count)),
        file_size_in_bytes=blob.file_size_in_bytes,
        referenced_data_file=referenced,
        content_offset=_moved(entry.get("offset"), blob.content_offset),
        content_size_in_bytes=_moved(entry.get("size"), blob.content_size_in_bytes),
    )
    record.spec_id = table.spec().spec_id
    return record


def _moved(change: Any, value: int) -> int | None:
    """``value`` moved by ``change`` (an int), left out (``"missing"``) or kept (None)."""
    if change is None:
        return value
    if change == "missing":
        return None
    return value + int(change)


def _add_file(
    table: Table,
    step: Mapping[str, Any],
    rows: Mapping[str, Any],
    columns: Sequence[Mapping[str, Any]],
) -> Table:
    import pyarrow.parquet as pq

    from puffin.iceberg import add_files
    from puffin.io.locations import local_path

    location = _location(table, f"@{step['name']}", {})
    path = local_path(location)
    if path is None:
        raise ValueError(f"not a local location: {location}")
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(arrow_rows(columns, rows["files"][step["file"]]), path)
    return add_files(table, [location])
