"""``puffin table upgrade|delete|dv``: row-level deletes from the command line.

Kept apart from :mod:`.commands` (statistics, verify, sample) so each module stays one concept;
that module adds these parsers.  Every handler loads pyiceberg only when it
runs, and lets the :mod:`puffin.errors` tree set the exit status (a v1 table given to
``delete`` is an ``UnsupportedTableError`` naming ``puffin table upgrade``).
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from puffin.cli.output import print_json
from puffin.iceberg.cli._base import TableCommands, check_where_syntax

if TYPE_CHECKING:
    from pyiceberg.table import Table

    from puffin.iceberg.deletes.rows import DeleteResult
    from puffin.iceberg.metadata.delete_files import DeletionVectorRef

__all__ = ["add_delete_commands", "written_files", "written_line"]


_EPILOG_DELETE = """\
examples:
  puffin table delete db.events --where "id < 100"
  puffin table delete db.events --where "country = 'XX' and day < 20000" --json

COND is pyiceberg's row-filter syntax, the same for every command that takes --where; it is
bound to the table's schema before anything runs (an unknown column, or a literal that is
not a value of its column's type, is an error).  A condition that matches every live row
needs --all-rows.  Nothing matched: nothing is committed.

On a v3 table the matching rows of each data file are merged with the file's live deletion
vector and position deletes, written as one Puffin file and committed as one `delete`
snapshot; no data file is rewritten.  On a v2 table the table's write.delete.mode decides:
merge-on-read writes Parquet position-delete files (one per data file, or per partition
with write.delete.granularity=partition); copy-on-write (the default) writes each data file
with matching rows again without them, in one `overwrite` snapshot.
"""

_EPILOG_UPGRADE = """\
Sets format-version 3 and the row-lineage state (next-row-id).  Position-delete files of
the current snapshot are turned into deletion vectors in the same commit.  A v3 table is
left as it is.
"""


def add_delete_commands(commands: TableCommands) -> None:
    """Add ``upgrade``, ``delete`` and ``dv`` to the ``puffin table`` subparsers."""
    from puffin.cli import add_progress_option

    commands.add(
        "upgrade",
        _run_upgrade,
        help="move a table to Iceberg format version 3 (position deletes become DVs)",
        epilog=_EPILOG_UPGRADE,
    )
    delete = commands.add(
        "delete",
        _run_delete,
        help="delete the rows matching a condition (v3: DVs; v2: as write.delete.mode says)",
        epilog=_EPILOG_DELETE,
        check=check_where_syntax,
    )
    delete.add_argument("--where", required=True, metavar="COND", help="row filter")
    delete.add_argument(
        "--all-rows", action="store_true", help="allow a condition that matches every row"
    )
    add_progress_option(delete, "for the rows read")
    dv = commands.add("dv", _run_dv, help="list the live deletion vectors of a snapshot")
    dv.add_argument("--snapshot-id", type=int, help="snapshot (default: current)")


def _run_upgrade(args: argparse.Namespace, table: Table) -> int:
    from puffin.iceberg.deletes.upgrade import upgrade_to_v3

    before = table.metadata.format_version
    upgraded = upgrade_to_v3(table)
    snapshot = upgraded.current_snapshot()
    merged = before < 3 and snapshot is not None and snapshot != table.current_snapshot()
    doc = {
        "table": args.table,
        "previous_format_version": before,
        "format_version": upgraded.metadata.format_version,
        "next_row_id": getattr(upgraded.metadata, "next_row_id", None),
        "position_deletes_merged": merged,
        "snapshot_id": None if snapshot is None else snapshot.snapshot_id,
        "metadata_location": upgraded.metadata_location,
    }
    if args.json:
        print_json("table upgrade", doc)
        return 0
    if before >= 3:
        print(f"{args.table} is already format version {before}; nothing to do")
        return 0
    print(f"upgraded {args.table} from format version {before} to 3")
    if merged:
        print(f"  position deletes merged into deletion vectors in snapshot {doc['snapshot_id']}")
    print(f"  next-row-id {doc['next_row_id']}")
    return 0


def _run_delete(args: argparse.Namespace, table: Table) -> int:
    from puffin.iceberg.deletes.rows import delete_rows

    result = delete_rows(
        table, args.where, allow_all_rows=args.all_rows, progress=args.progress
    )
    vectors = [
        {
            "referenced_data_file": v.referenced_data_file,
            "cardinality": v.record_count,
            "content_offset": v.content_offset,
            "content_size_in_bytes": v.content_size_in_bytes,
        }
        for v in result.vectors
    ]
    if args.json:
        doc = {
            "table": args.table,
            "where": args.where,
            "deleted_rows": result.deleted_rows,
            "snapshot_id": result.snapshot_id,
            "puffin_path": result.puffin_path,
            "attempts": result.attempts,
            "vectors": vectors,
            **written_files(result),
        }
        print_json("table delete", doc)
        return 0
    if result.snapshot_id is None:
        print(f"no live row of {args.table} matches {args.where!r}; nothing committed")
        return 0
    print(f"deleted {result.deleted_rows} row(s) from {args.table}, snapshot {result.snapshot_id}")
    print(f"  {written_line(result)}")
    return 0


def written_line(result: DeleteResult) -> str:
    """What a committed delete wrote, in one line (``puffin table delete``, ``puffin spark
    dv --commit``)."""
    if result.vectors:
        n = len(result.vectors)
        return f"{n} deletion vector{'' if n == 1 else 's'} in {result.puffin_path}"
    if result.position_delete_files:
        return f"{len(result.position_delete_files)} position-delete file(s) written"
    return (
        f"{len(result.rewritten_files)} data file(s) written again as "
        f"{len(result.added_files)} without the rows (copy-on-write)"
    )


def written_files(result: DeleteResult) -> dict[str, list[str]]:
    """The files a delete wrote on a v2 table, as its ``--json`` documents list them."""
    return {
        "position_delete_files": list(result.position_delete_files),
        "rewritten_files": list(result.rewritten_files),
        "added_files": list(result.added_files),
    }


def _ref_doc(r: DeletionVectorRef, rows: dict[str, int]) -> dict[str, Any]:
    return {
        "referenced_data_file": r.referenced_data_file,
        "data_file_rows": rows.get(r.referenced_data_file),
        "cardinality": r.record_count,
        "path": r.path,
        "content_offset": r.content_offset,
        "content_size_in_bytes": r.content_size_in_bytes,
        "sequence_number": r.sequence_number,
    }


def _run_dv(args: argparse.Namespace, table: Table) -> int:
    from puffin.iceberg.catalog.catalogs import resolve_snapshot
    from puffin.iceberg.metadata.delete_files import deletion_vector_refs
    from puffin.iceberg.scan.plan import plan_files

    snapshot = resolve_snapshot(table, args.snapshot_id)
    refs = sorted(deletion_vector_refs(table, snapshot), key=lambda r: r.referenced_data_file)
    rows = {p.path: p.record_count for p in plan_files(table, snapshot, equality=True)}
    deleted = sum(r.record_count for r in refs)
    total = sum(rows.values())
    if args.json:
        doc = {
            "table": args.table,
            "snapshot_id": snapshot.snapshot_id,
            "format_version": table.metadata.format_version,
            "data_files": len(rows),
            "rows": total,
            "deleted_rows": deleted,
            "vectors": [_ref_doc(r, rows) for r in refs],
        }
        print_json("table dv", doc)
        return 0
    print(
        f"{args.table} snapshot {snapshot.snapshot_id}: {len(refs)} live deletion vector(s) "
        f"over {len(rows)} data file(s), {deleted} of {total} row(s) deleted"
    )
    for r in refs:
        of = rows.get(r.referenced_data_file)
        print(f"  {r.referenced_data_file}: {r.record_count} of {of} row(s) deleted")
        print(f"    in {r.path} at [{r.content_offset}, +{r.content_size_in_bytes})")
    return 0
