"""``puffin table ...``: the command group, and its statistics, verify and sample commands.

``puffin table stats compute|update|show TABLE``, ``puffin table verify TABLE`` and ``puffin
table sample TABLE`` are here; the other subcommands in one module per concern (deletes,
maintenance, rewrites, writes, scan, alter), each declared through
:class:`~puffin.iceberg.cli._base.TableCommands`.  The catalog is
``--catalog NAME`` from pyiceberg's configuration (``~/.pyiceberg.yaml``,
``PYICEBERG_CATALOG__NAME__*``), or ``--warehouse DIR`` for the embedded SQLite catalog in
``DIR``; with neither, pyiceberg's default catalog if configured, else the embedded catalog
in ``$PUFFIN_WAREHOUSE`` or ``./warehouse``.

This module imports nothing heavy at import time: the ``puffin`` command loads it to add the
subcommands, and pyiceberg is imported only when one runs.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from typing import TYPE_CHECKING, Any

from puffin.blobs.standard import NDV
from puffin.cli.output import print_json
from puffin.errors import CatalogNotFoundError, TableError, TableNotFoundError, UsageError
from puffin.iceberg.cli._base import TableCommands, show_help
from puffin.iceberg.cli.alter import add_alter_command
from puffin.iceberg.cli.changes import add_changes_command
from puffin.iceberg.cli.deletes import add_delete_commands
from puffin.iceberg.cli.maintenance import add_maintenance_commands
from puffin.iceberg.cli.rewrites import add_rewrite_commands
from puffin.iceberg.cli.scan import add_scan_command
from puffin.iceberg.cli.writes import add_write_commands

if TYPE_CHECKING:
    from pyiceberg.table import Table

__all__ = ["register_cli"]

_EPILOG_COMPUTE = """\
examples:
  puffin table stats compute db.events
  puffin table stats compute db.events --columns user_id,country --snapshot-id 123
  puffin table stats compute prod.db.events --catalog prod
"""

_EPILOG_VERIFY = """\
Checks every statistics file the metadata references (exists, size, footer size, blob
metadata equal to the footer, every rule `puffin verify` checks) and the current snapshot's
deletion vectors (exists, size, CRC, cardinality = record_count, positions inside the data
file).
Exit status 1 when a problem is found.
"""


def register_cli(subparsers: Any) -> None:
    """Add the ``table`` command group to the ``puffin`` command's subparsers."""
    table = subparsers.add_parser(
        "table",
        help="Iceberg tables: statistics, row deletes, maintenance, scans and checks "
        "(needs the iceberg extra)",
        description="Work on Iceberg tables through pyiceberg: compute and show NDV "
        "statistics, delete rows with deletion vectors (v3), load and scan data, keep the "
        "table healthy (compact, expire, remove orphans), change its schema and properties, "
        "and verify the Puffin files the metadata references.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    table.set_defaults(func=show_help(table))
    groups = table.add_subparsers(dest="table_command", metavar="COMMAND")
    commands = TableCommands(groups, _open_table)
    _add_stats(commands)
    _add_verify(commands)
    _add_sample(commands)
    for add in (
        add_delete_commands,
        add_maintenance_commands,
        add_rewrite_commands,
        add_write_commands,
        add_scan_command,
        add_changes_command,
        add_alter_command,
    ):
        add(commands)


def _add_stats(commands: TableCommands) -> None:
    from puffin.cli import add_progress_option

    stats = commands.group("stats", help="compute or show table statistics (theta sketches)")
    compute = stats.add(
        "compute",
        _run_compute,
        help="compute NDV sketches of a snapshot and commit them as its statistics file",
        epilog=_EPILOG_COMPUTE,
    )
    compute.add_argument(
        "--columns", help="comma-separated column names (default: all primitive columns)"
    )
    compute.add_argument("--snapshot-id", type=int, help="snapshot (default: current)")
    compute.add_argument(
        "--no-commit",
        action="store_true",
        help="write the statistics file but do not register it in the table",
    )
    add_progress_option(compute, "for every data file read")

    update = stats.add(
        "update",
        _run_update,
        help="bring statistics to the current snapshot: sketch only what was added since",
    )
    update.add_argument("--full", action="store_true", help="sketch every live row again")
    add_progress_option(update, "for every data file read")

    show = stats.add(
        "show",
        _run_show,
        help="print each column's ndv and sketch bounds from the snapshot's statistics file",
    )
    show.add_argument("--snapshot-id", type=int, help="snapshot (default: current)")


def _add_verify(commands: TableCommands) -> None:
    verify = commands.add(
        "verify",
        _run_verify,
        help="check the statistics files and deletion vectors the table references",
        epilog=_EPILOG_VERIFY,
    )
    verify.add_argument(
        "--snapshot-id",
        type=int,
        help="snapshot whose deletion vectors to check (default: current)",
    )


def _add_sample(commands: TableCommands) -> None:
    sample = commands.add(
        "sample",
        _run_sample,
        help="create a sample table (9 column types) in the catalog",
        opens=False,
        table_help="table identifier to create, e.g. demo.events",
    )
    sample.add_argument("--rows", type=int, default=1_000_000, help="rows (default 1000000)")
    sample.add_argument("--files", type=int, default=4, help="data files (default 4)")
    sample.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    sample.add_argument("--replace", action="store_true", help="drop the table first if it exists")


# --- handlers -------------------------------------------------------------------------------


def _open_table(args: argparse.Namespace) -> Table:
    """The table the arguments name; every failure is a :mod:`puffin.errors` class."""
    from puffin.support.deps import require

    require("pyiceberg.catalog", "iceberg")
    from puffin.iceberg.catalog.catalogs import load_catalog, load_table

    # Every command but `sample` needs an existing table: never create an empty catalog.
    try:
        catalog = load_catalog(args.catalog, warehouse=args.warehouse, create=False)
    except CatalogNotFoundError as exc:
        if args.catalog is not None:
            raise
        raise TableNotFoundError(f"table {args.table!r} not found: {exc}") from None
    return load_table(catalog, args.table)


def _run_compute(args: argparse.Namespace, table: Table) -> int:
    from puffin.iceberg.statistics.compute import SkippedColumnWarning, compute_table_statistics

    columns = [c.strip() for c in args.columns.split(",") if c.strip()] if args.columns else None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", SkippedColumnWarning)
        stats = compute_table_statistics(
            table,
            columns=columns,
            snapshot_id=args.snapshot_id,
            commit=not args.no_commit,
            progress=args.progress,
        )
    for w in caught:
        if issubclass(w.category, SkippedColumnWarning):
            sys.stderr.write(f"puffin table stats compute: note: {w.message}\n")
    return _print_stats(args, table, stats, "table stats compute", not args.no_commit)


def _run_update(args: argparse.Namespace, table: Table) -> int:
    from puffin.iceberg.statistics.update import update_table_statistics

    stats = update_table_statistics(table, full=args.full, progress=args.progress)
    return _print_stats(args, table, stats, "table stats update", True)


def _print_stats(
    args: argparse.Namespace, table: Table, stats: Any, command: str, done: bool
) -> int:
    names = _names(table)
    if args.json:
        doc = stats.model_dump(by_alias=True, exclude_none=True)
        doc["committed"] = done
        print_json(command, doc)
        return 0
    verb = "committed" if done else "wrote"
    print(f"{verb} {stats.statistics_path}")
    print(
        f"  snapshot {stats.snapshot_id}, {stats.file_size_in_bytes} bytes, "
        f"footer {stats.file_footer_size_in_bytes} bytes"
    )
    width = max((len(names.get(b.fields[0], "")) for b in stats.blob_metadata), default=6)
    for b in stats.blob_metadata:
        name = names.get(b.fields[0], f"field {b.fields[0]}")
        ndv = (b.properties or {}).get(NDV, "?")
        print(f"  {name:<{width}}  ndv {ndv}")
    return 0


def _names(table: Table) -> dict[int, str]:
    from puffin.iceberg.scan.columns import column_names

    return column_names(table.schema())


def _run_show(args: argparse.Namespace, table: Table) -> int:
    from puffin.iceberg.statistics.files import read_table_statistics

    stats = read_table_statistics(table, snapshot_id=args.snapshot_id)
    rows = []
    for c in stats.columns:
        sketch = c.sketch
        rows.append(
            {
                "field_id": c.field_id,
                "name": c.name,
                "ndv": c.ndv,
                "estimate": c.estimate,
                "lower_bound": float(sketch.lower_bound(2)),
                "upper_bound": float(sketch.upper_bound(2)),
                "num_retained": int(sketch.num_retained),
                "exact": c.mode == "exact",
                "upper_bound_only": c.upper_bound_only,
                "mode": c.mode,
            }
        )
    if args.json:
        print_json(
            "table stats show",
            {
                "snapshot_id": stats.snapshot_id,
                "statistics_path": stats.statistics_file.statistics_path,
                "created_by": stats.created_by,
                "columns": rows,
            },
        )
        return 0
    print(f"{stats.statistics_file.statistics_path}")
    print(f"  snapshot {stats.snapshot_id}, created by {stats.created_by or 'unknown'}")
    width = max((len(str(r["name"] or "")) for r in rows), default=6)
    width = max(width, 6)
    print(f"  {'column':<{width}}  {NDV:>12}  {'95% bounds (2 sigma)':>27}  mode")
    for r in rows:
        bounds = f"[{r['lower_bound']:.0f}, {r['upper_bound']:.0f}]"
        mode = r["mode"]
        name = r["name"] if r["name"] is not None else f"<field {r['field_id']}>"
        ndv = r[NDV] if r[NDV] is not None else "?"
        print(f"  {name:<{width}}  {ndv:>12}  {bounds:>27}  {mode}")
    return 0


def _run_verify(args: argparse.Namespace, table: Table) -> int:
    from puffin.iceberg.verify.table import verify_table

    report = verify_table(table, snapshot_id=args.snapshot_id)
    if args.json:
        print_json("table verify", report.to_dict())
        return 0 if report.ok else 1
    name = args.table
    print(
        f"{name}: checked {report.statistics_files} statistics file(s), "
        f"{report.partition_statistics_files} partition statistics file(s), "
        f"{report.deletion_vectors} deletion vector(s)"
    )
    for p in report.problems:
        print(f"  problem: {p}")
    for w in report.warnings:
        print(f"  warning: {w}")
    print("OK" if report.ok else f"{len(report.problems)} problem(s) found")
    return 0 if report.ok else 1


def _run_sample(args: argparse.Namespace, _: None) -> int:
    from puffin.iceberg.catalog.catalogs import load_catalog
    from puffin.iceberg.catalog.sample import create_sample_table

    if args.rows < 0 or args.files < 1:
        raise UsageError("--rows must be >= 0 and --files >= 1")
    catalog = load_catalog(args.catalog, warehouse=args.warehouse)
    try:
        table = create_sample_table(
            catalog,
            args.table,
            rows=args.rows,
            files=args.files,
            seed=args.seed,
            replace=args.replace,
        )
    except Exception as exc:
        from pyiceberg.exceptions import TableAlreadyExistsError

        if isinstance(exc, TableAlreadyExistsError):
            raise TableError(f"table {args.table} already exists (use --replace)") from None
        raise
    snapshot = table.current_snapshot()
    doc = {
        "table": args.table,
        "location": table.metadata.location,
        "rows": args.rows,
        "files": args.files,
        "snapshot_id": snapshot.snapshot_id if snapshot else None,
        "format_version": table.metadata.format_version,
        "metadata_location": table.metadata_location,
    }
    if args.json:
        print_json("table sample", doc)
        return 0
    print(
        f"created {args.table} at {doc['location']}: {args.rows} rows in "
        f"{args.files} file(s), snapshot {doc['snapshot_id']}"
    )
    return 0
