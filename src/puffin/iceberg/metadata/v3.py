"""The smallest Iceberg v3 metadata writer, for as long as pyiceberg will not write v3.

Contract
--------
**What it writes.**  Three things pyiceberg 0.12 refuses to write, and nothing else:

* v3 manifests (the writers of :mod:`.manifest_writers` at format version 3), so the
  ``data_file`` struct keeps ``referenced_data_file``, ``content_offset`` and
  ``content_size_in_bytes`` (a deletion vector's location) and ``first_row_id``;
* v3 manifest lists (:class:`ManifestListWriterV3`): pyiceberg's v2 list writer with the v3
  schema, assigning ``first_row_id`` to every data manifest that has none, as Iceberg Java's
  ``ManifestListWriter.V3Writer`` does (existing plus added rows of each such manifest are
  reserved, in list order, from the table's ``next-row-id``);
* v3 table metadata, committed by :func:`commit` through the table's catalog.

**What it relies on from pyiceberg 0.12.**  The v3 schemas in ``pyiceberg.manifest``
(``MANIFEST_ENTRY_SCHEMAS[3]``, ``MANIFEST_LIST_FILE_SCHEMAS[3]``, ``DATA_FILE_TYPE[3]``),
``ManifestWriterV2``/``ManifestListWriterV2`` and ``AvroOutputFile`` (no Avro is written by
hand); ``TableMetadataV3`` and ``update_table_metadata``, which already apply a snapshot to
v3 metadata (``first-row-id`` check, ``next-row-id`` advance); ``Catalog.commit_table``.
pyiceberg refuses v3 in exactly two places, and only those are bypassed, only for the
catalog instance being committed to and only for the duration of the commit:
``UpgradeFormatVersionUpdate`` to 3 (``SUPPORTED_TABLE_FORMAT_VERSION = 2``) and
``TableMetadataV3.model_dump_json`` (raises ``NotImplementedError``).  The bypass
(:mod:`puffin.iceberg.metadata.sql_commit`) replaces the catalog's ``_update_and_stage_table``
and ``_write_metadata`` (both private) on a ``SqlCatalog`` (and so ``InMemoryCatalog``), and
its ``_convert_orm_to_iceberg`` so that unchanged metadata is not parsed again.

**Catalogs.**  SQL catalogs (embedded SQLite, in-memory): tested, including concurrent
committers (the catalog's compare-and-swap on the metadata location).  REST catalogs: the
updates (``upgrade-format-version`` 3, ``add-snapshot`` with ``first-row-id`` and
``added-rows``, ``set-snapshot-ref``) and requirements go to the server unchanged, which
writes the metadata; that works exactly when the server supports v3 (tested against Iceberg
Java's ``CatalogHandlers``, ``tests/iceberg/catalog/test_rest_catalog.py``).  Other catalogs
are refused with :class:`puffin.errors.UnsupportedTableError`.

**When to retire it.**  When the pinned pyiceberg writes v3 itself:
:func:`pyiceberg_writes_v3` turns true and ``tests/iceberg/metadata/test_v3_commit.py`` fails
on purpose.  Then use ``write_manifest``/``write_manifest_list`` with ``format_version=3``
and a plain ``Transaction`` instead, and delete this module and ``sql_commit``.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal

from pyiceberg.manifest import ManifestListWriterV2

from puffin.errors import UnsupportedTableError

if TYPE_CHECKING:
    from pyiceberg.io import OutputFile
    from pyiceberg.manifest import DataFile, ManifestEntry, ManifestFile
    from pyiceberg.table import Table
    from pyiceberg.table.update import TableRequirement, TableUpdate

__all__ = [
    "ManifestListWriterV3",
    "checks_requirements_here",
    "commit",
    "inherited_first_row_ids",
    "pyiceberg_writes_v3",
    "to_v3_data_file",
    "to_v3_manifest_file",
]

V3: Literal[3] = 3


def pyiceberg_writes_v3() -> bool:
    """Whether the installed pyiceberg writes v3 metadata itself (then retire this module)."""
    from pyiceberg.table.metadata import SUPPORTED_TABLE_FORMAT_VERSION

    return SUPPORTED_TABLE_FORMAT_VERSION >= V3


# --- records ----------------------------------------------------------------------------------


def to_v3_data_file(data_file: DataFile, spec_id: int) -> DataFile:
    """A data-file record of pyiceberg's (v1/v2 struct) as a v3 record of partition spec
    ``spec_id``, fields unchanged."""
    from pyiceberg.manifest import DATA_FILE_TYPE, DataFile

    names = [f.name for f in DATA_FILE_TYPE[V3].fields]
    values = {n: getattr(data_file, n, None) for n in names}
    record = DataFile.from_args(_table_format_version=V3, **values)
    record.spec_id = spec_id
    return record


def _v3_list_fields() -> list[str]:
    from pyiceberg.manifest import MANIFEST_LIST_FILE_SCHEMAS

    return [f.name for f in MANIFEST_LIST_FILE_SCHEMAS[V3].fields]


def to_v3_manifest_file(manifest: ManifestFile, first_row_id: int | None = None) -> ManifestFile:
    """``manifest`` as a v3 manifest-list record (pyiceberg builds v2 ones)."""
    from pyiceberg.manifest import ManifestFile

    names = _v3_list_fields()
    values = {n: getattr(manifest, n) for n in names if n != "first_row_id"}
    if first_row_id is None and len(manifest) == len(names):
        first_row_id = manifest[names.index("first_row_id")]
    return ManifestFile.from_args(_table_format_version=V3, **values, first_row_id=first_row_id)


def first_row_id_of(manifest: ManifestFile) -> int | None:
    """A manifest-list record's ``first_row_id`` (``None`` for v1/v2 records)."""
    names = _v3_list_fields()
    if len(manifest) != len(names):
        return None
    value = manifest[names.index("first_row_id")]
    return None if value is None else int(value)


def inherited_first_row_ids(
    manifest: ManifestFile, entries: Sequence[ManifestEntry]
) -> list[int | None]:
    """Each live data-file entry's ``first_row_id`` as Iceberg Java's
    ``ManifestReader.idAssigner`` gives it: the stored one, else the next id of the
    manifest's ``first_row_id`` in entry order (each file taking ``record_count`` ids); all
    ``None`` when the manifest has none (no lineage). ``entries`` are live, in order."""
    from puffin.iceberg.metadata.manifests import FIRST_ROW_ID

    next_id = first_row_id_of(manifest)
    out: list[int | None] = []
    for entry in entries:
        df = entry.data_file
        first = df[FIRST_ROW_ID] if len(df) > FIRST_ROW_ID else None
        if next_id is None:
            first = None  # Java: a committed manifest without first_row_id has no lineage
        elif first is None:
            first = next_id
            next_id += int(df.record_count)
        out.append(None if first is None else int(first))
    return out


class ManifestListWriterV3(ManifestListWriterV2):
    """pyiceberg's v2 list writer with the v3 schema and Java's ``first_row_id`` assignment."""

    def __init__(
        self,
        output_file: OutputFile,
        snapshot_id: int,
        parent_snapshot_id: int | None,
        sequence_number: int,
        first_row_id: int,
    ) -> None:
        super().__init__(output_file, snapshot_id, parent_snapshot_id, sequence_number, "deflate")
        self._format_version = V3
        self._meta = {**self._meta, "format-version": "3", "first-row-id": str(first_row_id)}
        self.next_row_id = first_row_id

    def __enter__(self) -> ManifestListWriterV3:
        from pyiceberg.avro.file import AvroOutputFile
        from pyiceberg.manifest import MANIFEST_LIST_FILE_SCHEMAS, ManifestFile

        schema = MANIFEST_LIST_FILE_SCHEMAS[V3]
        self._writer = AvroOutputFile[ManifestFile](
            output_file=self._output_file,
            file_schema=schema,
            schema_name="manifest_file",
            metadata=self._meta,
        )
        self._writer.__enter__()
        return self

    def prepare_manifest(self, manifest_file: ManifestFile) -> ManifestFile:
        from pyiceberg.manifest import ManifestContent

        prepared = super().prepare_manifest(manifest_file)
        assigned = first_row_id_of(manifest_file)
        if prepared.content == ManifestContent.DATA and assigned is None:
            # Room for existing rows too: files from pre-v3 snapshots have no first_row_id.
            assigned = self.next_row_id
            self.next_row_id += int(prepared.existing_rows_count or 0) + int(
                prepared.added_rows_count or 0
            )
        return to_v3_manifest_file(prepared, assigned)


# --- table metadata and the commit ------------------------------------------------------------


def commit(
    table: Table,
    requirements: Sequence[TableRequirement],
    updates: Sequence[TableUpdate],
) -> Table:
    """Commit updates (of a v3 table or any other) through the table's catalog; returns the
    table as committed.

    Raises pyiceberg's ``CommitFailedException`` when a requirement fails or a concurrent
    commit won (the caller refreshes and retries), SQLAlchemy's ``OperationalError`` when
    another process kept the embedded catalog locked (also retried, see
    :mod:`puffin.iceberg.metadata.commits`), and :class:`UnsupportedTableError` for a
    catalog this module cannot write v3 through.  On a SQL catalog, a commit that fails
    removes the metadata file it wrote, unless its outcome is unknown.  Ctrl-C and SIGTERM
    wait for the outcome (:func:`~puffin.iceberg.metadata.commits.committed_or_interrupted`).
    """
    from puffin.iceberg.metadata.commits import committed_or_interrupted

    def commit_and_tidy() -> Table:
        committed = _commit(table, requirements, updates)
        _delete_dropped_metadata(table, committed)
        return committed

    return committed_or_interrupted(commit_and_tidy)


def checks_requirements_here(table: Table) -> bool:
    """Whether a commit's requirements are checked in this process, against the catalog's
    current metadata at the moment of the swap (SQL catalogs): then a requirement may be
    any object with pyiceberg's ``validate(metadata)``, not only the types a REST catalog's
    server knows."""
    from pyiceberg.catalog.sql import SqlCatalog

    return isinstance(table.catalog, SqlCatalog)


def _delete_dropped_metadata(base: Table, committed: Table) -> None:
    """With ``write.metadata.delete-after-commit.enabled``, the metadata files the commit
    dropped from the log (beyond ``write.metadata.previous-versions-max``) are deleted, as
    Iceberg Java's and pyiceberg's commits do; only files under the table's locations."""
    import warnings

    from pyiceberg.table import TableProperties
    from pyiceberg.utils.properties import property_as_bool

    from puffin.iceberg.metadata.table_locations import TableLocations

    properties = committed.metadata.properties
    if not property_as_bool(
        properties,
        TableProperties.METADATA_DELETE_AFTER_COMMIT_ENABLED,
        TableProperties.METADATA_DELETE_AFTER_COMMIT_ENABLED_DEFAULT,
    ):
        return
    kept = {log.metadata_file for log in committed.metadata.metadata_log}
    dropped = {log.metadata_file for log in base.metadata.metadata_log} - kept
    owned = TableLocations.of(committed)
    for location in sorted(dropped):
        if not owned.owns(location):
            continue  # never delete outside the table, whatever its log says
        try:
            committed.io.delete(location)
        except FileNotFoundError:
            pass  # the catalog's server deleted it already (Java's REST catalog does)
        except OSError as exc:  # the commit stands; an old metadata file stays behind
            warnings.warn(f"could not delete old metadata file {location}: {exc}", stacklevel=3)


def _commit(
    table: Table,
    requirements: Sequence[TableRequirement],
    updates: Sequence[TableUpdate],
) -> Table:
    from pyiceberg.catalog.sql import SqlCatalog
    from pyiceberg.exceptions import CommitFailedException, CommitStateUnknownException
    from pyiceberg.table import Table as PyTable

    from puffin.iceberg.metadata.manifests import remove_files
    from puffin.iceberg.metadata.sql_commit import staged_for

    catalog = table.catalog
    # A REST catalog's module is loaded if the table came from one: importing it only to
    # ask would cost a first commit about 0.1 s (requests and its kin).
    rest = sys.modules.get("pyiceberg.catalog.rest")
    if pyiceberg_writes_v3() or (rest is not None and isinstance(catalog, rest.RestCatalog)):
        response = catalog.commit_table(table, tuple(requirements), tuple(updates))
    elif isinstance(catalog, SqlCatalog):
        written: list[str] = []
        try:
            with staged_for(table, written):
                response = catalog.commit_table(table, tuple(requirements), tuple(updates))
        except BaseException as exc:
            if not isinstance(exc, CommitStateUnknownException):
                remove_files(table, written)
            # A commit to another branch moved next-row-id past our snapshot's first-row-id
            # while main stayed put: a lost race like any other, so the caller retries.
            if isinstance(exc, ValueError) and "next-row-id" in str(exc):
                raise CommitFailedException(f"row lineage moved on: {exc}") from exc
            raise
    else:
        raise UnsupportedTableError(
            f"cannot commit Iceberg v3 metadata through a {type(catalog).__name__}: pyiceberg "
            "0.12 does not write v3, and puffin writes it only for SQL (SQLite, in-memory) "
            "and REST catalogs"
        )
    return PyTable(
        table.name(),
        response.metadata,
        response.metadata_location,
        table.io,
        catalog,
    )
