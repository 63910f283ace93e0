"""A new table made from Parquet files: :func:`create_table_from_parquet` (``puffin table
create``).

The first file gives the schema (its Arrow types as Iceberg types, fresh field ids); every
other file must have the same columns with the same types, so that no file's values are
converted silently.  The rows are appended (written again into the table's own data
folder, with field ids, metrics, the table's partitioning and target file size, through
:func:`~puffin.iceberg.writes.append.append`) rather than registered where they are
(:func:`~puffin.iceberg.writes.add_files.add_files`): a registered file keeps no field ids,
is not partitioned by the new spec, and lies outside the table's locations, where
maintenance never deletes it.  Everything is checked before the table is created (the
files' footers, the partition columns, that the table does not exist yet), and a load
that fails after the creation drops the table again: the identifier is free to try again.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from puffin.errors import UsageError
from puffin.iceberg.catalog.advice import table_command
from puffin.iceberg.writes.parquet_files import ParquetFiles, require_present

if TYPE_CHECKING:
    from pyiceberg.catalog import Catalog
    from pyiceberg.table import Table

__all__ = ["FORMAT_VERSIONS", "PartitionBy", "checked_files", "create_table_from_parquet"]

#: The format versions a table is made at (2 is Iceberg Java's default).
FORMAT_VERSIONS = (1, 2, 3)
#: A partition field: ``(column, transform)`` or ``(column, transform, name)``, the
#: transform as pyiceberg spells it: ``identity``, ``day``, ``bucket[16]``, ``truncate[4]``.
PartitionBy = tuple[str, str] | tuple[str, str, str | None]


def create_table_from_parquet(
    catalog: Catalog,
    identifier: str,
    files: Sequence[str] | ParquetFiles,
    *,
    partition_by: Sequence[PartitionBy] = (),
    format_version: int = 2,
    properties: dict[str, str] | None = None,
    progress: bool | None = False,
) -> Table:
    """Create ``identifier`` with the schema of the first of ``files`` and append the rows
    of all of them in one snapshot; returns the table (no snapshot when the files hold no
    row).  ``files`` may be what :func:`checked_files` gave (read before the catalog was
    opened: the command line checks the files first).

    ``partition_by`` gives the partition spec, ``format_version`` 1, 2 or 3 (3: the table
    takes deletion vectors and row lineage).  A table that exists already, a missing file,
    files whose columns or types differ (the file and the column named), or a partition
    column the schema does not have is a :class:`~puffin.errors.UsageError` (a missing
    file a ``FileNotFoundError``), with nothing created.  ``progress``: a progress line on
    stderr for the rows read (None: on a terminal).

    Example::

        from puffin.iceberg import create_table_from_parquet, local_catalog
        table = create_table_from_parquet(
            local_catalog("warehouse"), "db.events", ["day1.parquet", "day2.parquet"],
            partition_by=[("event_time", "day"), ("id", "bucket[16]", "shard")],
        )
        print(table.current_snapshot().summary["added-records"])
    """
    if format_version not in FORMAT_VERSIONS:
        raise UsageError(f"format_version must be 1, 2 or 3, got {format_version!r}")
    if len(catalog.identifier_to_tuple(identifier)) < 2:
        raise UsageError(f"table identifiers are NAMESPACE.TABLE (like db.events): {identifier!r}")
    if isinstance(files, ParquetFiles):
        loaded = files
    else:
        loaded = checked_files([str(f) for f in files], partition_by)
    _refuse_existing(catalog, identifier, [f.path for f in loaded.files])
    table = _create(catalog, identifier, loaded, partition_by, format_version, properties)
    try:
        return _load(table, loaded, format_version, progress)
    except BaseException:
        _drop(catalog, identifier)  # the identifier is free to try again
        raise


def _refuse_existing(catalog: Catalog, identifier: str, paths: list[str]) -> None:
    if catalog.table_exists(identifier):
        existing = catalog.load_table(identifier)
        raise UsageError(
            f"table {identifier} already exists: nothing was created; to add these files' "
            f"rows to it: {table_command(existing, 'append', *paths)}"
        )


def checked_files(paths: Sequence[str], partition_by: Sequence[PartitionBy]) -> ParquetFiles:
    """The files a table is made from, their footers read: all there, the first file's
    columns and types in each, each partition column among them (what needs no catalog)."""
    require_present(paths)
    loaded = ParquetFiles(paths)
    loaded.require_same_types()
    names = set(loaded.schema.names)
    for field in partition_by:
        if field[0] not in names:
            raise UsageError(
                f"cannot partition by {field[0]!r}: {loaded.files[0].path}, which gives the "
                f"table its schema, has no such column (columns: {', '.join(sorted(names))})"
            )
    return loaded


def _create(
    catalog: Catalog,
    identifier: str,
    loaded: ParquetFiles,
    partition_by: Sequence[PartitionBy],
    format_version: int,
    properties: dict[str, str] | None,
) -> Table:
    """The table, with its schema and partition spec, in one commit (at version 2 for a v3
    table: pyiceberg 0.12 cannot make one; :func:`_load` upgrades it)."""
    from pyiceberg.exceptions import NamespaceAlreadyExistsError
    from pyiceberg.io.pyarrow import UnsupportedPyArrowTypeException
    from pyiceberg.transforms import parse_transform

    namespace = catalog.namespace_from(identifier)
    if namespace and not catalog.namespace_exists(namespace):
        try:
            catalog.create_namespace(namespace)
        except NamespaceAlreadyExistsError:  # another process made it meanwhile
            pass
    version = str(min(format_version, 2))
    try:
        tx = catalog.create_table_transaction(
            identifier, schema=loaded.schema,
            properties={**(properties or {}), "format-version": version},
        )  # fmt: skip
        with tx.update_spec() as spec:
            for column, transform, *name in partition_by:
                spec.add_field(column, parse_transform(transform), name[0] if name else None)
        return tx.commit_transaction()
    except (UnsupportedPyArrowTypeException, ValueError) as exc:
        why, first = " ".join(str(exc).split()), loaded.files[0].path
        raise UsageError(f"cannot make table {identifier} from {first}: {why}") from None


def _load(table: Table, loaded: ParquetFiles, format_version: int, progress: bool | None) -> Table:
    """The files' rows appended (after the upgrade a v3 table needs)."""
    from puffin.iceberg.deletes.upgrade import upgrade_to_v3
    from puffin.iceberg.writes.append import append
    from puffin.support.progress import Progress

    if format_version >= 3:
        table = upgrade_to_v3(table)
    if not loaded.rows:
        return table
    with Progress(loaded.rows, label="create ", enabled=progress, delay=1.0) as bar:
        rows: Any = loaded.reader(bar) if table.spec().is_unpartitioned() else loaded.table(bar)
        return append(table, rows, statistics="none")


def _drop(catalog: Catalog, identifier: str) -> None:
    """The table just created, dropped with the files it wrote (its metadata files)."""
    try:
        catalog.purge_table(identifier)
    except Exception:  # the load's own error is the one to report
        pass
