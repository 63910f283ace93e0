"""Puffin files in Iceberg tables, through pyiceberg (install ``iceberg-puffin[iceberg]``).

* Table statistics: :func:`compute_table_statistics` sketches a snapshot's columns into a
  Puffin file and commits it as the snapshot's ``StatisticsFile``;
  :func:`read_table_statistics` reads each column's ``ndv`` and sketch back.
* Deletion vectors (Iceberg v3): :func:`write_table_deletion_vectors`,
  :func:`read_table_deletion_vectors`, :func:`apply_deletion_vector`.
* Row-level deletes (merge-on-read): :func:`upgrade_to_v3` moves a table to format version 3,
  :func:`delete_rows` commits the rows a filter matches as deletion vectors,
  :func:`commit_deletion_vectors` commits positions computed elsewhere (Spark).
* Appends (v3 tables too): :func:`append` writes data files as pyiceberg does and commits
  them with the spec's row lineage, where pyiceberg 0.12 cannot write a v3 manifest;
  :func:`create_table_from_parquet` makes a table from Parquet files (schema from the first).
* Changelog: :func:`changes` gives the rows that changed between two snapshots, through
  deletion vectors, position and equality deletes, with row lineage.
* :func:`verify_table` checks every Puffin file the metadata references against it.
* Catalogs: :func:`load_catalog` (pyiceberg's configuration, or an embedded SQLite catalog
  in ``./warehouse``), and :func:`create_sample_table` for a table to try things on.

Example::

    from puffin.iceberg import load_catalog, create_sample_table, compute_table_statistics
    catalog = load_catalog()                      # ./warehouse/catalog.db unless configured
    table = create_sample_table(catalog, "demo.events", rows=1_000_000, files=4)
    stats = compute_table_statistics(table)       # writes and commits the .stats file
    for column in read_table_statistics(catalog.load_table("demo.events")):
        print(column.name, column.ndv)

Importing this module is light; pyiceberg and pyarrow load when a function needs them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from puffin.errors import (
    CatalogNotFoundError,
    ColumnNotFoundError,
    SnapshotNotFoundError,
    SnapshotRangeError,
    StatisticsNotFoundError,
    TableMetadataError,
    TableNotFoundError,
    UnsupportedTableError,
)
from puffin.support.facade import lazy_names

# Every public name and its module, imported on first use: ``puffin --help`` loads the
# ``puffin table`` plugin, which must not load pyiceberg (the v3 writer subclasses its
# classes at import).
_LAZY: dict[str, str] = {
    "add_files": "puffin.iceberg.writes.add_files",
    "append": "puffin.iceberg.writes.append",
    "create_table_from_parquet": "puffin.iceberg.writes.create",
    "overwrite": "puffin.iceberg.writes.overwrite",
    "ColumnStatistics": "puffin.iceberg.statistics.files",
    "DEFAULT_WAREHOUSE": "puffin.iceberg.catalog.catalogs",
    "DeleteResult": "puffin.iceberg.deletes.rows",
    "DeletionVectorRef": "puffin.iceberg.metadata.delete_files",
    "ExpireResult": "puffin.iceberg.maintenance.expire",
    "TableProblem": "puffin.iceberg.verify.table",
    "SkippedColumnWarning": "puffin.iceberg.statistics.compute",
    "TableStatistics": "puffin.iceberg.statistics.files",
    "VerifyReport": "puffin.iceberg.verify.table",
    "WAREHOUSE_ENV": "puffin.iceberg.catalog.catalogs",
    "apply_deletion_vector": "puffin.iceberg.deletes.vectors",
    "changes": "puffin.iceberg.changelog.scan",
    "ChangelogScan": "puffin.iceberg.changelog.scan",
    "commit_deletion_vectors": "puffin.iceberg.deletes.rows",
    "compute_table_statistics": "puffin.iceberg.statistics.compute",
    "create_sample_table": "puffin.iceberg.catalog.sample",
    "delete_rows": "puffin.iceberg.deletes.rows",
    "expire_snapshots": "puffin.iceberg.maintenance.expire",
    "remove_orphan_files": "puffin.iceberg.maintenance.orphans",
    "rewrite_deletion_vectors": "puffin.iceberg.maintenance.rewrite_deletes",
    "rewrite_position_delete_files": "puffin.iceberg.maintenance.rewrite_deletes",
    "rewrite_data_files": "puffin.iceberg.maintenance.compact",
    "rewrite_manifests": "puffin.iceberg.maintenance.rewrite_manifests",
    "RewriteManifestsResult": "puffin.iceberg.maintenance.rewrite_manifests",
    "CompactResult": "puffin.iceberg.maintenance.compact",
    "ConvertResult": "puffin.iceberg.maintenance.convert_equality",
    "convert_equality_deletes": "puffin.iceberg.maintenance.convert_equality",
    "RewriteDeletesResult": "puffin.iceberg.maintenance.rewrite_deletes",
    "OrphanResult": "puffin.iceberg.maintenance.orphans",
    "deletion_vector_data_files": "puffin.iceberg.deletes.vectors",
    "deletion_vector_refs": "puffin.iceberg.metadata.delete_files",
    "load_catalog": "puffin.iceberg.catalog.catalogs",
    "load_table": "puffin.iceberg.catalog.catalogs",
    "local_catalog": "puffin.iceberg.catalog.catalogs",
    "read_table_deletion_vectors": "puffin.iceberg.deletes.vectors",
    "read_table_statistics": "puffin.iceberg.statistics.files",
    "sample_batch": "puffin.iceberg.catalog.sample",
    "scan_table": "puffin.iceberg.scan.table_scan",
    "TableScan": "puffin.iceberg.scan.table_scan",
    "sample_schema": "puffin.iceberg.catalog.sample",
    "update_table_statistics": "puffin.iceberg.statistics.update",
    "statistics_file_for": "puffin.iceberg.statistics.files",
    "transaction": "puffin.iceberg.writes.transaction",
    "upgrade_to_v3": "puffin.iceberg.deletes.upgrade",
    "verify_table": "puffin.iceberg.verify.table",
    "write_statistics_file": "puffin.iceberg.statistics.files",
    "write_table_deletion_vectors": "puffin.iceberg.deletes.vectors",
}

if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from puffin.iceberg.catalog.catalogs import (
        DEFAULT_WAREHOUSE,
        WAREHOUSE_ENV,
        load_catalog,
        load_table,
        local_catalog,
    )
    from puffin.iceberg.catalog.sample import (
        create_sample_table,
        sample_batch,
        sample_schema,
    )
    from puffin.iceberg.changelog.scan import ChangelogScan, changes
    from puffin.iceberg.deletes.rows import (
        DeleteResult,
        commit_deletion_vectors,
        delete_rows,
    )
    from puffin.iceberg.deletes.upgrade import (
        upgrade_to_v3,
    )
    from puffin.iceberg.deletes.vectors import (
        apply_deletion_vector,
        deletion_vector_data_files,
        read_table_deletion_vectors,
        write_table_deletion_vectors,
    )
    from puffin.iceberg.maintenance.compact import CompactResult, rewrite_data_files
    from puffin.iceberg.maintenance.convert_equality import (
        ConvertResult,
        convert_equality_deletes,
    )
    from puffin.iceberg.maintenance.expire import ExpireResult, expire_snapshots
    from puffin.iceberg.maintenance.orphans import OrphanResult, remove_orphan_files
    from puffin.iceberg.maintenance.rewrite_deletes import (
        RewriteDeletesResult,
        rewrite_deletion_vectors,
        rewrite_position_delete_files,
    )
    from puffin.iceberg.maintenance.rewrite_manifests import (
        RewriteManifestsResult,
        rewrite_manifests,
    )
    from puffin.iceberg.metadata.delete_files import DeletionVectorRef, deletion_vector_refs
    from puffin.iceberg.scan.table_scan import TableScan, scan_table
    from puffin.iceberg.statistics.compute import (
        SkippedColumnWarning,
        compute_table_statistics,
    )
    from puffin.iceberg.statistics.files import (
        ColumnStatistics,
        TableStatistics,
        read_table_statistics,
        statistics_file_for,
        write_statistics_file,
    )
    from puffin.iceberg.statistics.update import update_table_statistics
    from puffin.iceberg.verify.table import (
        TableProblem,
        VerifyReport,
        verify_table,
    )
    from puffin.iceberg.writes.add_files import add_files
    from puffin.iceberg.writes.append import append
    from puffin.iceberg.writes.create import create_table_from_parquet
    from puffin.iceberg.writes.overwrite import overwrite
    from puffin.iceberg.writes.transaction import transaction


__getattr__, __dir__ = lazy_names(__name__, _LAZY)

__all__ = [
    "DEFAULT_WAREHOUSE",
    "WAREHOUSE_ENV",
    "CatalogNotFoundError",
    "ChangelogScan",
    "ColumnNotFoundError",
    "ColumnStatistics",
    "CompactResult",
    "ConvertResult",
    "DeleteResult",
    "DeletionVectorRef",
    "ExpireResult",
    "OrphanResult",
    "RewriteDeletesResult",
    "RewriteManifestsResult",
    "SkippedColumnWarning",
    "SnapshotNotFoundError",
    "SnapshotRangeError",
    "StatisticsNotFoundError",
    "TableMetadataError",
    "TableNotFoundError",
    "TableProblem",
    "TableScan",
    "TableStatistics",
    "UnsupportedTableError",
    "VerifyReport",
    "add_files",
    "append",
    "apply_deletion_vector",
    "changes",
    "commit_deletion_vectors",
    "compute_table_statistics",
    "convert_equality_deletes",
    "create_sample_table",
    "create_table_from_parquet",
    "delete_rows",
    "deletion_vector_data_files",
    "deletion_vector_refs",
    "expire_snapshots",
    "load_catalog",
    "load_table",
    "local_catalog",
    "overwrite",
    "read_table_deletion_vectors",
    "read_table_statistics",
    "remove_orphan_files",
    "rewrite_data_files",
    "rewrite_deletion_vectors",
    "rewrite_manifests",
    "rewrite_position_delete_files",
    "sample_batch",
    "sample_schema",
    "scan_table",
    "statistics_file_for",
    "transaction",
    "update_table_statistics",
    "upgrade_to_v3",
    "verify_table",
    "write_statistics_file",
    "write_table_deletion_vectors",
]
