"""``puffin table alter``: schema, properties, partition fields, tags and branches, in one commit.

Every change given is staged on one :func:`puffin.iceberg.transaction` (pyiceberg's own
builders: ``update_schema``, ``update_spec``, ``set_properties``/``remove_properties``,
``manage_snapshots``) and committed once, v3 tables included, with the retries of every
other commit; a change pyiceberg refuses (an unknown column, a promotion Iceberg does not
allow) is a usage error and nothing is committed.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from puffin.cli.output import print_json
from puffin.errors import UsageError
from puffin.iceberg.cli._base import TableCommands
from puffin.iceberg.metadata.properties import check_property_changes, check_value

if TYPE_CHECKING:
    from pyiceberg.table import Table, Transaction

__all__ = ["add_alter_command", "parse_partition_field"]

_EPILOG = """\
examples:
  puffin table alter db.events --add-column note string --rename-column amount total
  puffin table alter db.events --promote-column category long --drop-column tag
  puffin table alter db.events --set-property owner data-eng --unset-property comment
  puffin table alter db.events --add-partition-field "bucket(16, id) as shard"
  puffin table alter db.events --add-partition-field "days(event_time)" --json
  puffin table alter db.events --create-tag v1 --create-branch audit@8646416735326549296

Types are Iceberg's: boolean, int, long, float, double, decimal(P, S), date, time,
timestamp, timestamptz, string, uuid, fixed[N], binary. A dotted column name (a.b) is a
field of a struct. Partition fields: COLUMN (identity), identity(C), years(C), months(C),
days(C), hours(C), void(C), bucket(N, C), truncate(W, C), optionally followed by "as NAME"
(Spark's spelling; year/month/day/hour and bucket[N](C) are read too). A tag or branch is
made at the current snapshot, or at NAME@SNAPSHOT_ID. Everything given is one commit.
"""

_TRANSFORMS = {
    "identity": "identity", "void": "void",
    "year": "year", "years": "year", "month": "month", "months": "month",
    "day": "day", "days": "day", "hour": "hour", "hours": "hour",
}  # fmt: skip
_FIELD = re.compile(
    r"^\s*(?:(?P<fn>[a-z_]+)\s*(?:\[\s*(?P<arg1>\d+)\s*\])?\s*\(\s*(?:(?P<arg2>\d+)\s*,\s*)?"
    r"(?P<col>[^()\s,]+)\s*\)|(?P<bare>[^()\s,]+))\s*(?:\s+as\s+(?P<name>\S+))?\s*$",
    re.IGNORECASE,
)


def add_alter_command(commands: TableCommands) -> None:
    """Add ``alter`` to the ``puffin table`` subparsers."""
    alter = commands.add(
        "alter",
        _run,
        help="change the schema, properties, partition fields, tags or branches (one commit)",
        epilog=_EPILOG,
    )
    opened = alter.get_default("func")

    def checked_then_opened(args: argparse.Namespace) -> int:
        _nothing_to_change(args)
        return int(opened(args))

    alter.set_defaults(func=checked_then_opened)
    group = alter.add_argument_group("changes (each repeatable)")
    pair: dict[str, Any] = {"action": "append", "default": [], "nargs": 2}
    one: dict[str, Any] = {"action": "append", "default": []}
    group.add_argument(
        "--add-column", metavar=("NAME", "TYPE"), help="add an optional column", **pair
    )
    group.add_argument("--rename-column", metavar=("NAME", "NEW"), help="rename a column", **pair)
    group.add_argument("--drop-column", metavar="NAME", help="drop a column", **one)
    group.add_argument(
        "--promote-column", metavar=("NAME", "TYPE"), help="widen a column's type", **pair
    )
    group.add_argument("--make-optional", metavar="NAME", help="let a column hold nulls", **one)
    group.add_argument("--set-property", metavar=("KEY", "VALUE"), help="set a property", **pair)
    group.add_argument("--unset-property", metavar="KEY", help="remove a property", **one)
    group.add_argument(
        "--add-partition-field", metavar="FIELD", help='e.g. "bucket(16, id) as shard"', **one
    )
    group.add_argument("--drop-partition-field", metavar="NAME", help="by its name", **one)
    for kind in ("tag", "branch"):
        group.add_argument(f"--create-{kind}", metavar="NAME[@ID]", help=f"make a {kind}", **one)
        group.add_argument(f"--drop-{kind}", metavar="NAME", help=f"remove a {kind}", **one)


def parse_partition_field(text: str) -> tuple[str, str, str | None]:
    """``(column, transform, name)`` of a partition field as ``--add-partition-field`` takes
    it; ``transform`` as pyiceberg's ``parse_transform`` reads it."""
    match = _FIELD.match(text)
    if match is None:
        raise UsageError(
            f"{text!r} is not a partition field: give COLUMN, days(COLUMN), "
            "bucket(16, COLUMN), truncate(4, COLUMN) and the like, optionally 'as NAME'"
        )
    name = match.group("name")
    if match.group("bare"):
        return match.group("bare"), "identity", name
    fn, column = match.group("fn").lower(), match.group("col")
    number = match.group("arg1") or match.group("arg2")
    if fn in ("bucket", "truncate"):
        if number is None:
            raise UsageError(f"{text!r}: {fn} takes a number, as {fn}(16, {column})")
        return column, f"{fn}[{number}]", name
    if fn not in _TRANSFORMS or number is not None:
        known = ", ".join(sorted({*_TRANSFORMS, "bucket", "truncate"}))
        raise UsageError(f"{text!r}: unknown partition transform {fn!r} (known: {known})")
    return column, _TRANSFORMS[fn], name


def _type(text: str) -> Any:
    from pydantic import TypeAdapter, ValidationError
    from pyiceberg.types import IcebergType, PrimitiveType

    try:
        found = TypeAdapter(IcebergType).validate_python(text.strip().lower())
    except ValidationError:
        found = None
    if not isinstance(found, PrimitiveType):
        raise UsageError(
            f"{text!r} is not an Iceberg type: boolean, int, long, float, double, "
            "decimal(P, S), date, time, timestamp, timestamptz, string, uuid, fixed[N], binary"
        )
    return found


def _path(name: str) -> tuple[str, ...]:
    return tuple(name.split("."))


def _schema_changes(args: argparse.Namespace, tx: Transaction, done: list[str]) -> None:
    wanted = (
        args.add_column, args.rename_column, args.drop_column, args.promote_column,
        args.make_optional,
    )  # fmt: skip
    if not any(wanted):
        return
    with tx.update_schema() as update:
        for name, kind in args.add_column:
            update.add_column(_path(name), _type(kind))
            done.append(f"added column {name} ({kind})")
        for name, new in args.rename_column:
            update.rename_column(_path(name), new)
            done.append(f"renamed column {name} to {new}")
        for name, kind in args.promote_column:
            update.update_column(_path(name), field_type=_type(kind))
            done.append(f"promoted column {name} to {kind}")
        for name in args.make_optional:
            update.make_column_optional(_path(name))
            done.append(f"made column {name} optional")
        for name in args.drop_column:
            update.delete_column(_path(name))
            done.append(f"dropped column {name}")


def _spec_changes(args: argparse.Namespace, tx: Transaction, done: list[str]) -> None:
    from pyiceberg.transforms import parse_transform

    if not args.add_partition_field and not args.drop_partition_field:
        return
    with tx.update_spec() as update:
        for name in args.drop_partition_field:
            update.remove_field(name)
            done.append(f"dropped partition field {name}")
        for text in args.add_partition_field:
            column, transform, name = parse_partition_field(text)
            update.add_field(column, parse_transform(transform), name)
            done.append(f"added partition field {text.strip()}")


def _property_changes(args: argparse.Namespace, tx: Transaction, done: list[str]) -> None:
    if args.set_property:
        tx.set_properties({key: value for key, value in args.set_property})
        done.extend(f"set property {key}={value}" for key, value in args.set_property)
    if args.unset_property:
        properties = tx.table_metadata.properties
        check_property_changes(tx.table_metadata, {}, args.unset_property)  # reserved first
        missing = [key for key in args.unset_property if key not in properties]
        if missing:  # Java ignores it; on the command line it is most likely a typo
            shown = ", ".join(sorted(properties)) or "none"
            raise UsageError(
                f"{args.table} has no property {missing[0]!r} to unset (its properties: "
                f"{shown}); nothing was committed"
            )
        tx.remove_properties(*args.unset_property)
        done.extend(f"unset property {key}" for key in args.unset_property)


def _ref_changes(
    args: argparse.Namespace, table: Table, tx: Transaction, done: list[str]
) -> None:
    refs = args.create_tag or args.create_branch or args.drop_tag or args.drop_branch
    if not refs:
        return
    manage: Any = tx.manage_snapshots()  # type: ignore[attr-defined]  # puffin's Transaction
    for kind in ("tag", "branch"):
        create = manage.create_tag if kind == "tag" else manage.create_branch
        remove = manage.remove_tag if kind == "tag" else manage.remove_branch
        for text in getattr(args, f"create_{kind}"):
            name, snapshot_id = _ref_target(table, text)
            create(snapshot_id, name)  # refused as Iceberg Java refuses (refs.CheckedRefs)
            done.append(f"created {kind} {name} at snapshot {snapshot_id}")
        for name in getattr(args, f"drop_{kind}"):
            remove(name)
            done.append(f"dropped {kind} {name}")
    manage.commit()  # stages them in the transaction


def _ref_target(table: Table, text: str) -> tuple[str, int]:
    name, at, given = text.partition("@")
    if at and not given.isdigit():
        raise UsageError(
            f"{text!r}: give a snapshot id (digits) after @, or NAME alone for the current one"
        )
    if given:
        return name, int(given)  # an unknown one is refused with the others' rules
    snapshot = table.current_snapshot()
    if snapshot is None:
        raise UsageError(
            f"{text!r}: the table has no snapshot yet to make it at; append data first"
        )
    return name, snapshot.snapshot_id


def _nothing_to_change(args: argparse.Namespace) -> None:
    """Checked before the table is opened: a usage error answers at once."""
    names = (
        "add_column", "rename_column", "drop_column", "promote_column", "make_optional",
        "set_property", "unset_property", "add_partition_field", "drop_partition_field",
        "create_tag", "drop_tag", "create_branch", "drop_branch",
    )  # fmt: skip
    if not any(getattr(args, name) for name in names):
        raise UsageError(
            "nothing to change: give --add-column, --rename-column, --drop-column, "
            "--promote-column, --set-property, --add-partition-field, --create-tag "
            "or another change (puffin table alter --help)"
        )
    for text in args.add_partition_field:
        parse_partition_field(text)
    for key, value in args.set_property:
        check_value(key, value)


_STEPS: tuple[Callable[..., None], ...] = (_schema_changes, _spec_changes, _property_changes)


def _run(args: argparse.Namespace, table: Table) -> int:
    from puffin.iceberg.writes.transaction import transaction

    done: list[str] = []
    try:
        with transaction(table) as tx:
            for step in _STEPS:
                step(args, tx, done)
            _ref_changes(args, table, tx, done)
    except Exception as exc:
        from pyiceberg.exceptions import ValidationError

        if isinstance(exc, UsageError) or not isinstance(exc, (ValueError, ValidationError)):
            raise  # ours already, or not a refused change (a lost race, a broken catalog)
        raise UsageError(f"cannot alter {args.table}: {exc}; nothing was committed") from None
    return _print(args, table, done)


def _print(args: argparse.Namespace, table: Table, done: list[str]) -> int:
    metadata = table.metadata
    refs = {
        name: {"type": str(ref.snapshot_ref_type.value), "snapshot_id": ref.snapshot_id}
        for name, ref in sorted(metadata.refs.items())
    }
    if args.json:
        print_json(
            "table alter",
            {
                "table": args.table,
                "changes": done,
                "schema_id": metadata.current_schema_id,
                "spec_id": metadata.default_spec_id,
                "refs": refs,
                "metadata_location": table.metadata_location,
            },
        )
        return 0
    print(f"altered {args.table} in one commit:")
    for change in done:
        print(f"  {change}")
    print(f"  schema {metadata.current_schema_id}, partition spec {metadata.default_spec_id}")
    return 0
