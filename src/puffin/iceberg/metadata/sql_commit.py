"""Commits through a SQL catalog (SQLite, in-memory): v3 metadata, at a cost that stays flat.

pyiceberg's ``SqlCatalog.commit_table`` (0.12), for every commit: loads the table (parses its
whole metadata JSON), checks the requirements, applies the updates with
``update_table_metadata`` (which ends by deep-copying the whole metadata), compares the new
metadata with the old, writes it and swaps the catalog's pointer if it still names the old
file.  With a thousand snapshots the parse and the deep copy were most of a commit (issue 34:
commits 1-20 against 981-1,000). For the duration of one commit, :func:`staged_for` replaces
three private methods on the catalog instance (one commit at a time, under a lock):

* ``_convert_orm_to_iceberg``, the file read of ``load_table``: when the catalog's pointer
  still names the file the committed table was read from, that table is the current one.
  Metadata files are written once and never changed (Iceberg Java's
  ``BaseMetastoreTableOperations.refresh`` skips the reload on the same grounds); any other
  location is read as before, so a lost race is still seen and retried.
* ``_update_and_stage_table``: applies an upgrade to v3 itself (pyiceberg refuses it), then
  pyiceberg's own update functions, without the final deep copy. Its models are frozen and
  its update functions already share unchanged snapshots, schemas and specs between the old
  metadata and the new; only the copy at the end is skipped. ``test_sql_commit`` checks the
  result equals ``update_table_metadata``'s.
* ``_write_metadata``: writes with :mod:`.metadata_file` (v3 too, which ``TableMetadataV3``
  refuses to serialize, and each snapshot's JSON made once), noting the file first so a
  failed commit removes it, then checks that every file the commit adds still exists
  (:mod:`.presence`: an orphan cleanup beside the writer may have deleted one).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyiceberg.io import FileIO
    from pyiceberg.table import Table
    from pyiceberg.table.metadata import TableMetadata
    from pyiceberg.table.update import TableRequirement, TableUpdate

__all__ = ["apply_updates", "staged_for", "upgraded_to_v3"]

V3 = 3
# One commit at a time may replace a catalog's private methods.
_OVERRIDE_LOCK = threading.RLock()


def upgraded_to_v3(metadata: TableMetadata) -> TableMetadata:
    """``metadata`` at format version 3 with ``next-row-id`` 0, as Java's upgrade does."""
    from pyiceberg.table.metadata import TableMetadataV3

    if metadata.format_version >= V3:
        return metadata
    return TableMetadataV3.model_construct(
        **{**dict(metadata), "format_version": V3, "next_row_id": 0}
    )


def apply_updates(
    base: TableMetadata, updates: tuple[TableUpdate, ...], metadata_location: str
) -> TableMetadata:
    """pyiceberg's ``update_table_metadata`` for an existing table (``base`` read from
    ``metadata_location``), without its final deep copy of the whole metadata."""
    from pyiceberg.table.update import (
        _apply_table_update,
        _TableMetadataUpdateContext,
        _update_table_metadata_log,
    )

    context = _TableMetadataUpdateContext()
    metadata = base
    for update in updates:
        metadata = _apply_table_update(update, metadata, context)
    if context.has_changes():
        metadata = _update_table_metadata_log(metadata, metadata_location, base.last_updated_ms)
        if metadata.last_updated_ms == base.last_updated_ms:
            metadata = metadata.model_copy(update={"last_updated_ms": int(time.time() * 1000)})
    metadata.spec().check_compatible(metadata.schema())
    metadata.sort_order().check_compatible(metadata.schema())
    return metadata


def _staged(
    catalog: Any,
    current: Table,
    identifier: Any,
    requirements: tuple[TableRequirement, ...],
    updates: tuple[TableUpdate, ...],
) -> Any:
    """What ``_update_and_stage_table`` returns for an existing table, v3 upgrade included."""
    from pyiceberg.table import StagedTable
    from pyiceberg.table.locations import load_location_provider
    from pyiceberg.table.update import UpgradeFormatVersionUpdate, _update_table_metadata_log

    for requirement in requirements:
        requirement.validate(current.metadata)
    base = current.metadata
    upgrade = [u for u in updates if isinstance(u, UpgradeFormatVersionUpdate)]
    if upgrade and upgrade[-1].format_version == V3:
        updates = tuple(u for u in updates if not isinstance(u, UpgradeFormatVersionUpdate))
        base = upgraded_to_v3(base)
        if not updates and base is not current.metadata:  # nothing else logs the old file
            base = _update_table_metadata_log(
                base, current.metadata_location, current.metadata.last_updated_ms
            ).model_copy(update={"last_updated_ms": int(time.time() * 1000)})
    metadata = apply_updates(base, updates, current.metadata_location)
    version = catalog._parse_metadata_version(current.metadata_location) + 1
    provider = load_location_provider(metadata.location, metadata.properties)
    location = provider.new_table_metadata_file_location(version)
    io = catalog._load_file_io(properties=metadata.properties, location=location)
    return StagedTable(identifier, metadata, location, io, catalog)


@contextmanager
def staged_for(table: Table, written: list[str]) -> Iterator[None]:
    """For one commit of ``table`` through its SQL catalog: read the current metadata only
    when it moved, stage without deep copies, write v3 (see the module's docstring); the
    metadata file written before the compare-and-swap is noted in ``written``."""
    from pyiceberg.catalog import Catalog as PyCatalog
    from pyiceberg.table import Table as PyTable

    from puffin.iceberg.metadata.metadata_file import write_table_metadata
    from puffin.iceberg.metadata.presence import require_added_files

    catalog: Any = table.catalog  # private pyiceberg methods, replaced on this instance only
    bases: list[TableMetadata] = []  # the metadata each staging started from
    read, stage = catalog._convert_orm_to_iceberg, catalog._update_and_stage_table

    def convert(row: Any) -> Table:
        name = (*PyCatalog.identifier_to_tuple(row.table_namespace), row.table_name)
        if row.metadata_location == table.metadata_location and name == table.name():
            return PyTable(name, table.metadata, table.metadata_location, table.io, catalog)
        return read(row)  # type: ignore[no-any-return]

    def staged(current: Table | None, identifier: Any, *args: Any) -> Any:
        if current is None:  # a new table: pyiceberg's own path
            return stage(current, identifier, *args)
        bases.append(current.metadata)
        return _staged(catalog, current, identifier, *args)

    def write(metadata: TableMetadata, io: FileIO, metadata_path: str) -> None:
        written.append(metadata_path)  # first: a partly written file is removed too
        write_table_metadata(metadata, io, metadata_path)
        if bases:  # written before the check: a cleanup now sees the commit in flight
            require_added_files(bases[-1], metadata, io, metadata_path)

    with _OVERRIDE_LOCK:
        catalog._convert_orm_to_iceberg = convert
        catalog._update_and_stage_table = staged
        catalog._write_metadata = write
        try:
            yield
        finally:
            del catalog._convert_orm_to_iceberg
            del catalog._update_and_stage_table
            del catalog._write_metadata

