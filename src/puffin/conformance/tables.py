"""The table tier's recipes: what a ``scan-table`` vector describes, and building it.

Table files hold absolute locations, so the corpus holds a recipe per table instead: the
schema, the rows of each data file (an input JSON file beside the vector) and the steps
that change the table.  :func:`materialize` builds the table in a folder with this
library's own writers (pyiceberg for the v2 appends, :mod:`puffin.iceberg` for the v3
upgrade and the deletion vectors) and returns its metadata.json;
:func:`expected_rows` computes the rows it must return from the recipe alone.

Steps, in order (the table starts as an empty v2 table):

* ``{"action": "append", "file": i}``: data file ``i``, one append (one Parquet file);
* ``{"action": "position-deletes", "deletes": [[i, positions], ...]}``: one v2 Parquet
  position-delete file (table still v2);
* ``{"action": "upgrade-to-v3"}``: :func:`puffin.iceberg.upgrade_to_v3`, which turns
  position deletes into deletion vectors;
* ``{"action": "delete", "deletes": [[i, positions], ...]}``: one
  :func:`puffin.iceberg.commit_deletion_vectors` commit: one Puffin file whose vectors come
  in the order given, each merged with the file's live deletes.

``positions`` is a list of integers and ``[start, stop]`` / ``[start, stop, step]`` ranges.
The steps that commit a deletion vector a writer got wrong (``raw-vectors``, ``add-file``,
``partition-by``) are :mod:`puffin.conformance.table_mistakes`'.
"""

from __future__ import annotations

import hashlib
import json
import time
import uuid
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from puffin.conformance.recipe_values import TYPES, arrow_rows, positions_of

if TYPE_CHECKING:
    from pyiceberg.catalog import Catalog
    from pyiceberg.schema import Schema
    from pyiceberg.table import Table

__all__ = [
    "arrow_rows", "expected_rows", "materialize", "positions_of", "row_line", "rows_digest",
]  # fmt: skip


def row_line(row: Sequence[Any]) -> str:
    """A row's canonical text: compact JSON of its values in schema order (UTF-8, no escapes)."""
    return json.dumps(list(row), ensure_ascii=False, separators=(",", ":"))


def rows_digest(rows: Iterable[Sequence[Any]]) -> str:
    """SHA-256 of the rows' canonical lines, sorted by code point, each ending in a newline."""
    digest = hashlib.sha256()
    for line in sorted(row_line(r) for r in rows):
        digest.update(line.encode("utf-8") + b"\n")
    return digest.hexdigest()


def expected_rows(
    files: Sequence[Sequence[Sequence[Any]]], steps: Sequence[Mapping[str, Any]]
) -> list[list[Any]]:
    """The rows the table of a recipe holds after its steps (deleted positions removed; a
    vector's entry deletes from the data file it names, a position past the file's end
    deletes nothing, one naming a file never added deletes nothing)."""
    appended: list[int] = []
    deleted: dict[int | str, set[int]] = {}
    for step in steps:
        if step["action"] in ("append", "add-file"):
            appended.append(step["file"])
        elif step["action"] in ("delete", "position-deletes"):
            for index, spec in step["deletes"]:
                deleted.setdefault(index, set()).update(positions_of(spec))
        elif step["action"] == "raw-vectors":  # as the entries say, whatever the blobs say
            blobs = step["blobs"]
            for entry in step["entries"]:
                target, spec = blobs[entry.get("blob", 0)]
                named = entry.get("file", target)
                deleted.setdefault(named, set()).update(positions_of(spec))
    return [
        list(row)
        for index in appended
        for position, row in enumerate(files[index])
        if position not in deleted.get(index, ())
    ]


def _schema(columns: Sequence[Mapping[str, Any]]) -> Schema:
    import pyiceberg.types as types
    from pyiceberg.schema import Schema

    fields = [
        types.NestedField(c["id"], c["name"], getattr(types, TYPES[c["type"]][0])(), required=False)
        for c in columns
    ]
    return Schema(*fields)


def materialize(recipe: Mapping[str, Any], rows: Mapping[str, Any], folder: Path) -> str:
    """Build the recipe's table in ``folder`` (a fresh warehouse); its metadata location."""
    from puffin.support.deps import require

    require("pyiceberg", "iceberg")  # MissingDependencyError: the runner skips the vector
    from puffin.iceberg import commit_deletion_vectors, local_catalog, upgrade_to_v3

    catalog = local_catalog(folder / "wh")
    catalog.create_namespace("db")
    columns = recipe["schema"]
    name = "db.t"
    table = catalog.create_table(name, _schema(columns), properties={"format-version": "2"})
    paths: dict[int, str] = {}
    for step in recipe["steps"]:
        action = step["action"]
        if action == "append":
            known = {str(t.file.file_path) for t in table.scan().plan_files()}
            table.append(arrow_rows(columns, rows["files"][step["file"]]))
            (paths[step["file"]],) = {
                str(t.file.file_path) for t in table.scan().plan_files()
            } - known
        elif action == "position-deletes":
            deletes = {paths[i]: positions_of(spec) for i, spec in step["deletes"]}
            table = _commit_position_deletes(catalog, table, deletes)
        elif action == "upgrade-to-v3":
            table = upgrade_to_v3(table)
        elif action == "delete":
            deletes = {paths[i]: positions_of(spec) for i, spec in step["deletes"]}
            table = commit_deletion_vectors(table, deletes).table
        else:  # a deletion vector a writer got wrong, and the steps around it
            from puffin.conformance.table_mistakes import apply_step

            table = apply_step(table, step, paths, rows, columns)
    return str(table.metadata_location)


def _commit_position_deletes(
    catalog: Catalog, table: Table, positions: Mapping[str, Sequence[int]]
) -> Table:
    """One Parquet position-delete file (as Spark writes it) in a new v2 ``delete`` snapshot."""
    return _commit_v2_deletes(catalog, table, write_position_delete_file(table, positions))


def write_position_delete_file(table: Table, positions: Mapping[str, Sequence[int]]) -> Any:
    """Write ``positions`` as one Parquet position-delete file of ``table`` (the spec's
    ``file_path``/``pos`` schema with its reserved field ids, sorted, as Spark writes it) and
    return its pyiceberg ``DataFile``, not yet committed."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from pyiceberg.manifest import DataFile, DataFileContent, FileFormat
    from pyiceberg.typedef import Record

    from puffin.io.locations import local_path

    rows = sorted((path, int(p)) for path, ps in positions.items() for p in ps)
    field_id = b"PARQUET:field_id"
    schema = pa.schema(
        [
            pa.field("file_path", pa.string(), False, {field_id: b"2147483546"}),
            pa.field("pos", pa.int64(), False, {field_id: b"2147483545"}),
        ]
    )
    data = pa.table({"file_path": [r[0] for r in rows], "pos": [r[1] for r in rows]}, schema)
    location = table.location_provider().new_data_location(f"{uuid.uuid4()}-deletes.parquet")
    path = local_path(location)
    if path is None:
        raise ValueError(f"not a local location: {location}")
    pq.write_table(data, path)
    delete_file = DataFile.from_args(
        content=DataFileContent.POSITION_DELETES,
        file_path=location,
        file_format=FileFormat.PARQUET,
        partition=Record(),
        record_count=len(rows),
        file_size_in_bytes=Path(path).stat().st_size,
    )
    delete_file.spec_id = table.spec().spec_id
    return delete_file


def _commit_v2_deletes(catalog: Catalog, table: Table, delete_file: Any) -> Table:
    """A v2 ``delete`` snapshot adding one delete manifest of ``delete_file``."""
    from pyiceberg.manifest import (
        ManifestContent,
        ManifestEntry,
        ManifestEntryStatus,
        ManifestListWriterV2,
        ManifestWriterV2,
    )
    from pyiceberg.table.snapshots import Operation, Snapshot, Summary

    from puffin.iceberg.metadata.commits import snapshot_updates

    class DeleteManifestWriterV2(ManifestWriterV2):
        def content(self) -> ManifestContent:
            return ManifestContent.DELETES

        @property
        def _meta(self) -> dict[str, str]:
            return {**super()._meta, "content": "deletes"}

    parent = table.current_snapshot()
    assert parent is not None
    folder = f"{table.metadata.location.rstrip('/')}/metadata"
    snapshot_id = int(uuid.uuid4().int & ((1 << 62) - 1))
    sequence = int(getattr(table.metadata, "last_sequence_number", 0)) + 1
    out = table.io.new_output(f"{folder}/{uuid.uuid4()}-m0.avro")
    with DeleteManifestWriterV2(table.spec(), table.schema(), out, snapshot_id, "deflate") as w:
        w.add_entry(
            ManifestEntry.from_args(
                status=ManifestEntryStatus.ADDED, snapshot_id=snapshot_id, data_file=delete_file
            )
        )
    manifests = [*parent.manifests(table.io), w.to_manifest_file()]
    list_path = f"{folder}/snap-{snapshot_id}-1-{uuid.uuid4()}.avro"
    lw = ManifestListWriterV2(
        table.io.new_output(list_path), snapshot_id, parent.snapshot_id, sequence, "deflate"
    )
    with lw as writer:
        writer.add_manifests(manifests)
    summary = Summary(
        Operation.DELETE,
        **{"added-delete-files": "1", "added-position-deletes": str(delete_file.record_count)},
    )
    snapshot = Snapshot.model_validate(
        {
            "snapshot-id": snapshot_id,
            "parent-snapshot-id": parent.snapshot_id,
            "sequence-number": sequence,
            "timestamp-ms": int(time.time() * 1000),
            "manifest-list": list_path,
            "summary": summary,
            "schema-id": table.schema().schema_id,
        }
    )
    requirements, updates = snapshot_updates(table, snapshot)
    response = catalog.commit_table(table, tuple(requirements), tuple(updates))
    return catalog.load_table(table.name()) if response else table
