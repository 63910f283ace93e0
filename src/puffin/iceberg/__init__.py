"""Puffin files in Iceberg tables, through pyiceberg (install ``iceberg-puffin[iceberg]``).

* Table statistics: :func:`compute_table_statistics` sketches a snapshot's columns into a
  Puffin file and commits it as the snapshot's ``StatisticsFile``;
  :func:`read_table_statistics` reads each column's ``ndv`` and sketch back.
* Deletion vectors (Iceberg v3): :func:`write_table_deletion_vectors`,
  :func:`read_table_deletion_vectors`, :func:`apply_deletion_vector`.
* Row-level deletes (merge-on-read): :func:`upgrade_to_v3` moves a table to format version 3,
  :func:`delete_rows` commits the rows a filter matches as deletion vectors,
  :func:`commit_deletion_vectors` commits positions computed elsewhere (Spark).
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

from puffin.errors import (
    CatalogNotFoundError,
    ColumnNotFoundError,
    SnapshotNotFoundError,
    StatisticsNotFoundError,
    TableNotFoundError,
    UnsupportedTableError,
)
from puffin.iceberg._catalog import (
    DEFAULT_WAREHOUSE,
    WAREHOUSE_ENV,
    load_catalog,
    load_table,
    local_catalog,
)
from puffin.iceberg.deletes import (
    DeletionVectorRef,
    TableMetadataError,
    apply_deletion_vector,
    deletion_vector_data_files,
    deletion_vector_refs,
    read_table_deletion_vectors,
    write_table_deletion_vectors,
)
from puffin.iceberg.row_deletes import (
    DeleteResult,
    commit_deletion_vectors,
    delete_rows,
    upgrade_to_v3,
)
from puffin.iceberg.sample import create_sample_table, sample_batch, sample_schema
from puffin.iceberg.statistics import (
    ColumnStatistics,
    SkippedColumnWarning,
    TableStatistics,
    compute_table_statistics,
    read_table_statistics,
    statistics_file_for,
    write_statistics_file,
)
from puffin.iceberg.verify import Problem, VerifyReport, verify_table

__all__ = [
    "DEFAULT_WAREHOUSE",
    "WAREHOUSE_ENV",
    "CatalogNotFoundError",
    "ColumnNotFoundError",
    "ColumnStatistics",
    "DeleteResult",
    "DeletionVectorRef",
    "Problem",
    "SkippedColumnWarning",
    "SnapshotNotFoundError",
    "StatisticsNotFoundError",
    "TableMetadataError",
    "TableNotFoundError",
    "TableStatistics",
    "UnsupportedTableError",
    "VerifyReport",
    "apply_deletion_vector",
    "commit_deletion_vectors",
    "compute_table_statistics",
    "create_sample_table",
    "delete_rows",
    "deletion_vector_data_files",
    "deletion_vector_refs",
    "load_catalog",
    "load_table",
    "local_catalog",
    "read_table_deletion_vectors",
    "read_table_statistics",
    "sample_batch",
    "sample_schema",
    "statistics_file_for",
    "upgrade_to_v3",
    "verify_table",
    "write_statistics_file",
    "write_table_deletion_vectors",
]
