"""``puffin table rewrite-deletes``, ``convert-equality-deletes``, ``compact`` and
``rewrite-manifests``: a table's position deletes gathered into few files, its equality
deletes turned into position deletes, data files written again without their deleted rows,
data manifests regrouped.

Each commits one ``replace`` snapshot and changes no row; the files they replace stay until
``puffin table expire`` removes the snapshots that still reach them.
"""

from __future__ import annotations

import argparse
from typing import Any

from puffin.cli.output import print_json
from puffin.errors import UsageError
from puffin.iceberg.cli._base import TableCommands, at_least_one, check_where_syntax

__all__ = ["add_rewrite_commands"]

_EPILOG_DELETES = """\
examples:
  puffin table rewrite-deletes db.events
  puffin table rewrite-deletes db.events --target-size 8MB --json

Iceberg Java's rewrite_position_delete_files. On a v3 table every data file with deleted rows
gets one deletion vector holding all of them, and the vectors are written into as few Puffin
files as the size target allows (default the table's write.delete.target-file-size-bytes,
else 64 MiB); Parquet position-delete files become vectors. On a v2 table the positions are
written again as Parquet position-delete files, one per data file or per partition
(write.delete.granularity). Deletes of data files no longer in the table are dropped. A
table whose deletes already sit in that few files is left as it is (exit 0, no snapshot).
"""

_EPILOG_COMPACT = """\
examples:
  puffin table compact db.events                         files 30 % deleted or more
  puffin table compact db.events --min-deleted 0.1 --where "day >= '2026-01-01'" --json

Data files with at least --min-deleted of their rows deleted, and small files (under 75 %
of the target size) when a partition has --min-input-files of them or is rewritten anyway,
are written again without the deleted rows; their deletion vectors go. Each row keeps its
_row_id and _last_updated_sequence_number. The table's statistics follow the new snapshot
(upper bounds are computed again, exactly) unless --no-statistics.
"""


_EPILOG_MANIFESTS = """\
examples:
  puffin table rewrite-manifests db.events
  puffin table rewrite-manifests db.events --target-size 8MB --json

Every live data-file entry is written again, clustered by partition, into manifests of the
target size (the table's commit.manifest.target-size-bytes, else 8 MiB): one replace
snapshot, no row and no _row_id changed. Commits merge manifests as they go (Java's
commit.manifest-merge.* properties); this regroups a table whose manifests grew anyway.
"""

_EPILOG_CONVERT = """\
examples:
  puffin table convert-equality-deletes db.cdc
  puffin table convert-equality-deletes db.cdc --json --progress

The rows each equality delete file removes (written by Flink, Kafka Connect, Debezium or
iceberg-rust) are found once, merged into each data file's deletion vector, and every
equality delete file is removed: one replace snapshot, the same rows for every reader,
engines that refuse equality deletes can then read the table. A table without equality
deletes is left as it is (exit 0, no snapshot). v3 only: upgrade a v2 table first.
"""


def add_rewrite_commands(commands: TableCommands) -> None:
    """Add ``rewrite-deletes``, ``convert-equality-deletes``, ``compact`` and
    ``rewrite-manifests`` to ``puffin table``."""
    from puffin.cli import add_progress_option

    deletes = commands.add(
        "rewrite-deletes",
        _run_rewrite_deletes,
        help="gather a table's position deletes into as few files as fit",
        epilog=_EPILOG_DELETES,
        check=rewrite_deletes_size,
    )
    add_rewrite_deletes_options(deletes)
    convert = commands.add(
        "convert-equality-deletes",
        _run_convert,
        help="turn a table's equality deletes into deletion vectors (v2: position deletes)",
        epilog=_EPILOG_CONVERT,
    )
    add_progress_option(convert, "for every data file whose keys are read")
    compact = commands.add(
        "compact",
        _run_compact,
        help="rewrite data files with deleted rows (and small files) without those rows",
        epilog=_EPILOG_COMPACT,
        check=compact_options,
    )
    add_compact_options(compact)
    add_progress_option(compact, "for every data file rewritten")
    manifests = commands.add(
        "rewrite-manifests",
        _run_rewrite_manifests,
        help="regroup a table's data manifests by partition and size (row ids kept)",
        epilog=_EPILOG_MANIFESTS,
        check=lambda args: _size(args.target_size),
    )
    manifests.add_argument("--target-size", metavar="SIZE", help="e.g. 8MB (the table's)")


def add_compact_options(parser: argparse.ArgumentParser) -> None:
    """What ``puffin table compact`` and ``puffin spark compact`` both take."""
    parser.add_argument("--where", metavar="COND", help="only files that may hold such rows")
    parser.add_argument(
        "--min-deleted",
        type=float,
        default=0.3,
        metavar="FRACTION",
        help="rewrite files with at least this fraction of rows deleted (0.3)",
    )
    parser.add_argument(
        "--min-input-files",
        type=int,
        default=5,
        metavar="N",
        help="small files of a partition rewritten once there are N (5)",
    )
    parser.add_argument("--target-size", metavar="SIZE", help="e.g. 512MB (the table's)")
    parser.add_argument(
        "--no-statistics", action="store_true", help="leave the table's statistics as they are"
    )
    parser.add_argument(
        "--partial-progress",
        type=int,
        metavar="N",
        help="commit the file groups in up to N snapshots, each once written (Java's "
        "partial-progress.max-commits); a failed batch leaves its files and the others go on",
    )


def compact_options(args: argparse.Namespace) -> dict[str, Any]:
    """The options of :func:`add_compact_options`, as ``rewrite_data_files`` takes them
    (checked before the table opens: the counts, the size, the condition's syntax)."""
    if not 0.0 <= args.min_deleted <= 1.0:
        raise UsageError(f"--min-deleted must lie in [0, 1], got {args.min_deleted}")
    at_least_one(args, "min_input_files", "partial_progress")
    check_where_syntax(args)
    return {
        "where": args.where,
        "min_deleted_fraction": args.min_deleted,
        "min_input_files": args.min_input_files,
        "target_file_size_bytes": _size(args.target_size),
        "statistics": "none" if args.no_statistics else "update",
        "progress": args.progress,
        "partial_progress_commits": args.partial_progress,
    }


def _size(text: str | None) -> int | None:
    from puffin.cli._common import parse_size

    return None if text is None else parse_size(text)


def _report(
    args: argparse.Namespace, command: str, result: Any, nothing: str, done: list[str]
) -> int:
    """``--json``: the result's fields (its table and attempts left out); else one line
    saying nothing was to do, or the lines saying what was done."""
    import dataclasses

    if args.json:
        fields = dataclasses.fields(result)
        doc = {f.name: getattr(result, f.name) for f in fields if f.name not in _NOT_PRINTED}
        print_json(command, {"table": args.table, **doc})
    else:
        print(nothing if result.snapshot_id is None else "\n".join(done))
    return 0


_NOT_PRINTED = ("table", "attempts")


def _run_rewrite_deletes(args: argparse.Namespace, table: Any) -> int:
    from puffin.iceberg.maintenance.rewrite_deletes import rewrite_position_delete_files

    r = rewrite_position_delete_files(table, target_file_size_bytes=rewrite_deletes_size(args))
    return report_rewrite_deletes(args, "table rewrite-deletes", r)


def add_rewrite_deletes_options(parser: argparse.ArgumentParser) -> None:
    """What ``puffin table rewrite-deletes`` and ``puffin spark rewrite-deletes`` both take."""
    parser.add_argument("--target-size", metavar="SIZE", help="e.g. 64MB (the table's)")


def rewrite_deletes_size(args: argparse.Namespace) -> int | None:
    """``--target-size`` of ``puffin table|spark rewrite-deletes``, in bytes."""
    return _size(args.target_size)


def report_rewrite_deletes(args: argparse.Namespace, command: str, r: Any) -> int:
    """What ``puffin table|spark rewrite-deletes`` did (a ``RewriteDeletesResult``), in lines
    or as the JSON document ``command`` (docs/cli.md)."""
    what = "vector(s)" if r.table.metadata.format_version >= 3 else "data file(s)' positions"
    done = [
        f"rewrote {r.files_before} delete file(s) into {r.files_after}: {r.vectors} "
        f"{what}, {r.deleted_rows} deleted rows; snapshot {r.snapshot_id}"
    ]
    if r.dropped_dangling:
        done.append(f"  dropped {r.dropped_dangling} of data files no longer in the table")
    nothing = f"nothing to rewrite: {r.files_before} delete file(s) already"
    return _report(args, command, r, nothing, done)


def _run_convert(args: argparse.Namespace, table: Any) -> int:
    from puffin.iceberg.maintenance.convert_equality import convert_equality_deletes

    r = convert_equality_deletes(table, progress=args.progress)
    return report_conversion(args, "table convert-equality-deletes", r)


def report_conversion(args: argparse.Namespace, command: str, r: Any) -> int:
    """What ``puffin table|spark convert-equality-deletes`` did (a ``ConvertResult``), in
    lines or as the JSON document ``command`` (docs/cli.md)."""
    done = [
        f"converted {r.equality_files} equality delete file(s): {r.converted_rows} rows "
        f"into the vectors of {r.data_files} data file(s); snapshot {r.snapshot_id}"
    ]
    nothing = "nothing to convert: no equality delete file is live"
    return _report(args, command, r, nothing, done)


def _run_compact(args: argparse.Namespace, table: Any) -> int:
    from puffin.iceberg.maintenance.compact import rewrite_data_files

    result = rewrite_data_files(table, **compact_options(args))
    return report_compaction(args, "table compact", result)


def report_compaction(args: argparse.Namespace, command: str, r: Any) -> int:
    """What ``puffin table|spark compact`` did (a ``CompactResult``), in lines or as the JSON
    document ``command`` (docs/cli.md)."""
    done = [
        f"rewrote {r.rewritten_files} data file(s) into {r.added_files}: {r.rows} rows kept, "
        f"{r.dropped_deleted_rows} deleted rows dropped, {r.bytes_before} -> {r.bytes_after} "
        f"bytes; snapshot {r.snapshot_id}"
    ]
    if r.statistics != "none":
        done.append(f"  statistics: {r.statistics}")
    if r.commits > 1 or r.failed_groups:
        done.append(f"  in {r.commits} commits; {r.failed_groups} file group(s) failed")
    if r.failed_groups:
        done.append(f"  first failure: {r.first_failure}")
    nothing = "nothing to compact (see --min-deleted and --min-input-files)"
    _report(args, command, r, nothing, done)
    return 1 if r.failed_groups else 0  # the rest is committed: the table is whole


def _run_rewrite_manifests(args: argparse.Namespace, table: Any) -> int:
    from puffin.iceberg.maintenance.rewrite_manifests import rewrite_manifests

    r = rewrite_manifests(table, target_size_bytes=_size(args.target_size))
    done = [
        f"rewrote {r.manifests_before} data manifest(s) into {r.manifests_after} "
        f"({r.entries} entries); snapshot {r.snapshot_id}"
    ]
    nothing = f"nothing to rewrite: {r.manifests_before} data manifest(s)"
    return _report(args, "table rewrite-manifests", r, nothing, done)
