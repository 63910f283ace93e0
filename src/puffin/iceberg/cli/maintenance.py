"""``puffin table remove-orphans`` and ``puffin table expire``: files
in a table's folders that nothing references, and snapshots past their age.

A dry run by default: it lists what it would remove.  ``--delete`` removes them; files
younger than ``--older-than`` (3 days) are kept, because a commit still in flight may be
about to reference the file it has just written.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from puffin.cli.output import print_json
from puffin.iceberg.cli._base import TableCommands, at_least_one

__all__ = ["add_maintenance_commands"]

_EPILOG = """\
examples:
  puffin table remove-orphans db.events                  list what would be removed
  puffin table remove-orphans db.events --older-than 1h --delete

An orphan is a file under the table's location that nothing in its metadata references:
no snapshot reaches it (data and delete files, manifests, manifest lists), it is no
statistics file and no current or logged metadata file.  A write killed before its commit,
an uncommitted `puffin spark dv --output` into the table, or a commit whose outcome was
unknown can leave one.  Hidden files (.crc and the like) are never listed.  `puffin table
verify` warns about them.
"""


_EPILOG_EXPIRE = """\
examples:
  puffin table expire db.events                           snapshots older than 5 days
  puffin table expire db.events --older-than 1d --retain-last 10 --json

Removes the snapshots older than --older-than (default: the table's
history.expire.max-snapshot-age-ms, else 5 days), keeping the last --retain-last ancestors of
every branch and the snapshots branches and tags point at, then deletes the files only they
reached. A file outside the table's locations is never deleted: it is listed as skipped
(--allow-prefix PREFIX allows one more location).
"""


def add_maintenance_commands(commands: TableCommands) -> None:
    """Add ``remove-orphans`` and ``expire`` to ``puffin table``."""
    from puffin.cli import add_progress_option

    expire = commands.add(
        "expire",
        _run_expire,
        help="remove old snapshots and delete the files only they reached",
        epilog=_EPILOG_EXPIRE,
        check=expire_options,
    )
    add_expire_options(expire)
    add_progress_option(expire, "for the files deleted")
    clean = commands.add(
        "remove-orphans",
        _run_clean,
        help="list (or --delete) files in the table's folders that nothing references",
        epilog=_EPILOG,
        check=orphan_options,
    )
    add_orphan_options(clean)
    add_progress_option(clean, "for the files deleted")


def add_orphan_options(parser: argparse.ArgumentParser) -> None:
    """What ``puffin table remove-orphans`` and ``puffin spark remove-orphans`` both take."""
    parser.add_argument(
        "--older-than", default="3d", metavar="AGE", help="only files older than AGE (3d)"
    )
    parser.add_argument("--delete", action="store_true", help="remove them (default: list)")
    parser.add_argument(
        "--allow-short-grace-period",
        action="store_true",
        help="let --delete use an --older-than under 24 hours (only when no writer runs)",
    )


def orphan_options(args: argparse.Namespace) -> dict[str, Any]:
    """The options of :func:`add_orphan_options`, as ``remove_orphan_files`` takes them,
    checked (the age, a short grace period without its option) before the table opens."""
    from puffin.iceberg.maintenance.orphans import check_grace_period

    check_grace_period(args.older_than, args.delete, args.allow_short_grace_period)
    return {
        "older_than": args.older_than,  # as written: a refusal names it so
        "dry_run": not args.delete,
        "allow_short_grace_period": args.allow_short_grace_period,
    }


def add_expire_options(parser: argparse.ArgumentParser) -> None:
    """What ``puffin table expire`` and ``puffin spark expire`` both take."""
    parser.add_argument("--older-than", metavar="AGE", help="e.g. 5d, 12h (default: 5d)")
    parser.add_argument("--retain-last", type=int, metavar="N", help="ancestors kept (1)")
    parser.add_argument(
        "--allow-prefix",
        action="append",
        default=[],
        metavar="PREFIX",
        help="a location outside the table whose files may be deleted too (repeatable)",
    )


def expire_options(args: argparse.Namespace) -> dict[str, Any]:
    """The options of :func:`add_expire_options`, as ``expire_snapshots`` takes them (the
    age and the count read before the table opens)."""
    from puffin.iceberg.metadata.retention import parse_age

    at_least_one(args, "retain_last")
    return {
        "older_than": parse_age(args.older_than) if args.older_than else None,
        "retain_last": args.retain_last,
        "allow_prefixes": args.allow_prefix,
    }


def _run_clean(args: argparse.Namespace, table: Any) -> int:
    from puffin.iceberg.maintenance.orphans import finish_here, remove_orphan_files

    def finisher(deletions: Any, files: Sequence[tuple[str, str]]) -> set[str]:
        gone: set[str] = set()
        with _file_progress(args, "remove-orphans ", len(files)) as bar:
            for one in files:  # finish_here a file at a time, counted
                gone |= finish_here(deletions, [one])
                bar.update(1)
        return gone

    result = remove_orphan_files(table, **orphan_options(args), finisher=finisher)
    return report_orphans(args, "table remove-orphans", result)


def _file_progress(args: argparse.Namespace, label: str, files: int) -> Any:
    """The progress line of a job that deletes ``files`` files, one at a time."""
    from puffin.support.progress import Progress

    return Progress(files, unit="files", label=label, enabled=args.progress, delay=1.0)


def report_orphans(args: argparse.Namespace, command: str, result: Any) -> int:
    """What ``puffin table|spark remove-orphans`` found or removed (an ``OrphanResult``), in
    lines or as the JSON document ``command`` (docs/cli.md)."""
    from puffin.iceberg.metadata.retention import parse_age

    age = parse_age(args.older_than)
    found = result.removed
    if args.json:
        doc = {
            "table": args.table,
            "deleted": bool(args.delete),
            "older_than_seconds": age.total_seconds(),
            "files": [
                {
                    "path": o.path,
                    "kind": o.kind,
                    "size": o.size,
                    "modified": o.modified.isoformat(),
                }
                for o in found
            ],
            "kept_referenced": result.kept_referenced,
            "restored": result.restored,
            "failed": [{"path": p, "reason": r} for p, r in result.failed],
            "requests": result.requests,
        }
        print_json(command, doc)
        return _refused(result)
    verb = "removed" if args.delete else "would remove"
    for o in found:
        print(f"  {o.kind:<13} {o.path}  {o.size} bytes  {o.modified:%Y-%m-%d %H:%M}")
    total = sum(o.size for o in found)
    print(f"{verb} {len(found)} orphan file(s), {total} bytes")
    for location in result.skipped_outside_table:
        print(f"  skipped (a link out of the table's locations): {location}")
    for location in result.kept_referenced:
        print(f"  kept (a commit took it while the cleanup ran): {location}")
    put_back = "put back" if args.delete else "would put back"
    for location in result.restored:
        print(f"  {put_back} (set aside by an interrupted cleanup): {location}")
    for location, reason in result.failed:
        print(f"  not deleted, the store refused ({reason}): {location}")
    if result.requests:
        asked = ", ".join(f"{n} {kind}" for kind, n in sorted(result.requests.items()))
        print(f"  requests to the object store: {asked}")
    if found and not args.delete:
        print("  (a dry run: add --delete to remove them)")
    return _refused(result)


def _refused(result: Any) -> int:
    """Exit 1 when the store refused deletes (its permissions, not this program), saying so."""
    if not result.failed:
        return 0
    print(
        f"puffin: error: the object store refused to delete {len(result.failed)} orphan(s) "
        "(listed above); check the credentials' delete permission on the table's prefix, "
        "then run the cleanup again",
        file=sys.stderr,
    )
    return 1


def _run_expire(args: argparse.Namespace, table: Any) -> int:
    from puffin.iceberg.maintenance.expire import delete_here, expire_snapshots

    def deleter(deletions: Any, files: Sequence[tuple[str, str]]) -> None:
        with _file_progress(args, "expire ", len(files)) as bar:
            for one in files:  # delete_here a file at a time, counted
                delete_here(deletions, [one])
                bar.update(1)

    result = expire_snapshots(table, **expire_options(args), deleter=deleter)
    return report_expiry(args, "table expire", result)


def report_expiry(args: argparse.Namespace, command: str, result: Any) -> int:
    """What ``puffin table|spark expire`` did (an ``ExpireResult``), in lines or as the JSON
    document ``command`` (docs/cli.md)."""
    if args.json:
        print_json(
            command,
            {
                "table": args.table,
                "expired_snapshot_ids": result.expired_snapshot_ids,
                "deleted": {k: {"files": n, "bytes": b} for k, (n, b) in result.deleted.items()},
                "skipped_outside_table": result.skipped_outside_table,
            },
        )
        return 0
    print(f"expired {len(result.expired_snapshot_ids)} snapshot(s)")
    for kind, (files, size) in result.deleted.items():
        print(f"  deleted {files} {kind} file(s), {size} bytes")
    for location in result.skipped_outside_table:
        print(f"  skipped (outside the table's locations): {location}")
    return 0
