"""Table metadata files as pyiceberg writes them, with each snapshot's JSON made once.

Every commit writes a metadata file that holds every snapshot of the table (the format
requires it; Iceberg Java does the same). pyiceberg serializes the whole document each time,
so with 1,000 snapshots the snapshots were most of an append's cost (issue 34). A committed
snapshot never changes: pyiceberg's models are frozen and its updates share unchanged
snapshots between the old metadata and the new. So the JSON of each snapshot object is kept
while the object lives (keyed by identity, dropped with it) and spliced into the document
serialized without its snapshots. The bytes are pyiceberg's own: ``tests/iceberg/metadata/
test_metadata_file.py`` compares them with ``model_dump_json`` for v1, v2 and v3 tables.

Format version 1 writes snapshots without their sequence numbers (pyiceberg's
``serialize_snapshots``); it is serialized whole, as pyiceberg does.
"""

from __future__ import annotations

import weakref
from functools import partial
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyiceberg.io import FileIO
    from pyiceberg.table.metadata import TableMetadata
    from pyiceberg.table.snapshots import Snapshot

__all__ = ["metadata_json", "snapshot_json", "write_table_metadata"]

# id(snapshot) -> (a weak reference to it, exclude_none, its JSON). The weak reference's
# callback drops the entry, so a reused id() never finds another object's JSON.
_SNAPSHOT_JSON: dict[int, tuple[weakref.ref[Snapshot], bool, str]] = {}
_EMPTY = '"snapshots":[]'


def _forget(key: int, ref: weakref.ref[Snapshot]) -> None:
    entry = _SNAPSHOT_JSON.get(key)
    if entry is not None and entry[0] is ref:  # not a newer object's entry under the same id
        _SNAPSHOT_JSON.pop(key, None)


def snapshot_json(snapshot: Snapshot, exclude_none: bool) -> str:
    """``snapshot``'s JSON as it appears in a metadata file, made once per snapshot object."""
    key = id(snapshot)
    entry = _SNAPSHOT_JSON.get(key)
    if entry is not None and entry[0]() is snapshot and entry[1] == exclude_none:
        return entry[2]
    text = snapshot.model_dump_json(exclude_none=exclude_none)
    ref = weakref.ref(snapshot, partial(_forget, key))
    _SNAPSHOT_JSON[key] = (ref, exclude_none, text)
    return text


def metadata_json(metadata: TableMetadata) -> str:
    """The JSON document pyiceberg's ``ToOutputFile.table_metadata`` writes for ``metadata``
    (any format version, including 3, which pyiceberg 0.12 refuses to serialize)."""
    from pyiceberg.typedef import IcebergBaseModel
    from pyiceberg.utils.config import Config

    exclude_none = not Config().get_bool("legacy-current-snapshot-id")
    if metadata.format_version < 2 or not metadata.snapshots:  # v1: see above
        return IcebergBaseModel.model_dump_json(metadata, exclude_none=exclude_none)
    bare = metadata.model_copy(update={"snapshots": []})
    text = IcebergBaseModel.model_dump_json(bare, exclude_none=exclude_none)
    # A JSON string cannot hold an unescaped quote, so the key occurs once, at the top level.
    if text.count(_EMPTY) != 1:  # pragma: no cover - a future field named "snapshots"
        return IcebergBaseModel.model_dump_json(metadata, exclude_none=exclude_none)
    snapshots = ",".join(snapshot_json(s, exclude_none) for s in metadata.snapshots)
    return text.replace(_EMPTY, f'"snapshots":[{snapshots}]', 1)


def write_table_metadata(metadata: TableMetadata, io: FileIO, metadata_path: str) -> None:
    """Write ``metadata`` to a new file at ``metadata_path``, compressed as its name says
    (pyiceberg's writer, for v3 too and with the snapshots' JSON made once)."""
    from pyiceberg.serializers import Compressor

    data = metadata_json(metadata).encode()
    data = Compressor.get_compressor(metadata_path).bytes_compressor()(data)
    with io.new_output(metadata_path).create(overwrite=False) as out:
        out.write(data)
