"""Table properties checked when they are set: Iceberg's reserved keys and known values.

Iceberg Java reads a table property only when a writer needs it, so a bad value set today
breaks a write next week (``write.delete.mode=bogus`` fails the first delete, not the
``ALTER``). :func:`check_property_changes` checks each change where it is made, as Java's
writers would later read the value:

* **Reserved keys** (``TableProperties.RESERVED_PROPERTIES``) are not properties at all.
  ``format-version`` may not go down (Java: "Cannot downgrade"); up is refused too, pointing
  at :func:`~puffin.iceberg.upgrade_to_v3` (Java upgrades in place, keeping position-delete
  files; ours converts them). The others (``uuid``, ``current-snapshot-id``, ...) Java drops
  without a word; a user who sets one means something that will not happen, so it is refused.
* **Known keys** get their values parsed as Java parses them: enumerations case-insensitively
  (``RowLevelOperationMode.fromName``, ``DeleteGranularity.fromString``), integers and longs
  as ``Integer.parseInt``/``Long.parseLong`` (digits only, in range), booleans as ``true`` or
  ``false`` only (Java's ``Boolean.parseBoolean`` reads any other word as false, pyiceberg's
  ``strtobool`` reads ``yes`` as true: the same value would mean two things), metrics modes
  as ``MetricsModes.fromString`` and metrics columns as ``MetricsConfig.validate`` (the column
  must exist). Unknown keys are the user's own and pass.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

from puffin.errors import UsageError
from puffin.iceberg.catalog.advice import table_command

if TYPE_CHECKING:
    from pyiceberg.table import Table
    from pyiceberg.table.metadata import TableMetadata

__all__ = ["FORMAT_VERSION", "RESERVED", "check_property_changes", "check_value"]

FORMAT_VERSION = "format-version"
#: Java's ``TableProperties.RESERVED_PROPERTIES``.
RESERVED = frozenset({
    FORMAT_VERSION, "uuid", "snapshot-count", "current-snapshot-id",
    "current-snapshot-summary", "current-snapshot-timestamp-ms", "current-schema",
    "default-partition-spec", "default-sort-order",
})  # fmt: skip

_INT = re.compile(r"[+-]?[0-9]+")
_INT_MAX, _LONG_MAX = 2**31 - 1, 2**63 - 1
_METRICS = re.compile(r"(?i)(none|counts|full|truncate\(([0-9]+)\))")
_METRICS_COLUMN = "write.metadata.metrics.column."

#: A value check: ``None`` when the value is acceptable, else what it should be.
Check = Callable[[str], "str | None"]


def _one_of(*names: str) -> Check:
    def check(value: str) -> str | None:
        return None if value.lower() in names else "one of " + ", ".join(names)

    return check


def _number(low: int, high: int, what: str) -> Check:
    def check(value: str) -> str | None:
        if _INT.fullmatch(value) and low <= int(value) <= high:
            return None
        return what

    return check


def _boolean(value: str) -> str | None:
    return None if value.lower() in ("true", "false") else "true or false"


def _metrics_mode(value: str) -> str | None:
    match = _METRICS.fullmatch(value)
    if match and (match.group(2) is None or int(match.group(2)) > 0):
        return None
    return "none, counts, full or truncate(N) with N > 0"


_MODE = _one_of("copy-on-write", "merge-on-read")
_DISTRIBUTION = _one_of("none", "hash", "range")
_FORMAT = _one_of("parquet", "avro", "orc")
_CODEC = _one_of("uncompressed", "snappy", "gzip", "lzo", "brotli", "lz4", "zstd", "lz4_raw")
_POSITIVE_LONG = _number(1, _LONG_MAX, "a whole number above 0")
_POSITIVE_INT = _number(1, _INT_MAX, "a whole number from 1 to 2147483647")
_COUNT = _number(0, _INT_MAX, "a whole number from 0 to 2147483647")
_MILLIS = _number(0, _LONG_MAX, "milliseconds, a whole number from 0")

#: The keys whose values Iceberg Java's writers and maintenance read, and what each takes.
RULES: Mapping[str, Check] = {
    "write.delete.mode": _MODE,
    "write.update.mode": _MODE,
    "write.merge.mode": _MODE,
    "write.delete.granularity": _one_of("file", "partition"),
    "write.wap.enabled": _boolean,
    "write.format.default": _FORMAT,
    "write.delete.format.default": _FORMAT,
    "write.distribution-mode": _DISTRIBUTION,
    "write.delete.distribution-mode": _DISTRIBUTION,
    "write.update.distribution-mode": _DISTRIBUTION,
    "write.merge.distribution-mode": _DISTRIBUTION,
    "write.target-file-size-bytes": _POSITIVE_LONG,
    "write.delete.target-file-size-bytes": _POSITIVE_LONG,
    "write.parquet.row-group-size-bytes": _POSITIVE_LONG,
    "write.parquet.page-size-bytes": _POSITIVE_INT,
    "write.parquet.page-row-limit": _POSITIVE_INT,
    "write.parquet.dict-size-bytes": _POSITIVE_INT,
    "write.parquet.compression-codec": _CODEC,
    "write.delete.parquet.compression-codec": _CODEC,
    "write.parquet.compression-level": _number(-(2**31), _INT_MAX, "a whole number"),
    "write.metadata.compression-codec": _one_of("none", "gzip"),
    "write.metadata.delete-after-commit.enabled": _boolean,
    "write.metadata.previous-versions-max": _POSITIVE_INT,
    "write.metadata.metrics.default": _metrics_mode,
    "write.metadata.metrics.max-inferred-column-defaults": _COUNT,
    "write.object-storage.enabled": _boolean,
    "write.object-storage.partitioned-paths": _boolean,
    "write.summary.partition-limit": _COUNT,
    "write.spark.fanout.enabled": _boolean,
    "commit.retry.num-retries": _COUNT,
    "commit.retry.min-wait-ms": _MILLIS,
    "commit.retry.max-wait-ms": _MILLIS,
    "commit.retry.total-timeout-ms": _MILLIS,
    "commit.manifest.target-size-bytes": _POSITIVE_LONG,
    "commit.manifest.min-count-to-merge": _COUNT,
    "commit.manifest-merge.enabled": _boolean,
    "history.expire.max-snapshot-age-ms": _MILLIS,
    "history.expire.min-snapshots-to-keep": _POSITIVE_INT,
    "history.expire.max-ref-age-ms": _MILLIS,
    "gc.enabled": _boolean,
    "read.split.target-size": _POSITIVE_LONG,
    "read.split.metadata-target-size": _POSITIVE_LONG,
    "read.split.planning-lookback": _POSITIVE_INT,
    "read.split.open-file-cost": _MILLIS,
}


def check_value(key: str, value: str) -> None:
    """:class:`UsageError` if ``value`` is not what a known ``key`` takes (see the module)."""
    rule = _metrics_mode if key.startswith(_METRICS_COLUMN) else RULES.get(key)
    if rule is None:
        return
    wanted = rule(value)
    if wanted is not None:
        raise UsageError(
            f"table property {key}={value!r} would not be read by Iceberg's writers: it takes "
            f"{wanted}; nothing was committed"
        )


def check_property_changes(
    metadata: TableMetadata,
    updates: Mapping[str, str],
    removals: Sequence[str] = (),
    *,
    table: Table | None = None,
) -> None:
    """Refuse, before anything is committed, a change of table properties Iceberg Java
    would refuse or misread (see the module): :class:`UsageError` naming the key (and the
    command that does what was meant, for ``table``)."""
    for key, value in updates.items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise UsageError(f"table properties are strings: got {key!r}: {value!r}")
        if key in RESERVED:
            raise UsageError(_reserved(metadata, key, value, table))
        check_value(key, value)
        if key.startswith(_METRICS_COLUMN):
            _require_column(metadata, key)
    for key in removals:
        if key in RESERVED:
            raise UsageError(f"{key} is reserved by Iceberg, not a property to unset")


def _reserved(metadata: TableMetadata, key: str, value: str, table: Table | None) -> str:
    if key != FORMAT_VERSION:
        return (
            f"{key} is reserved by Iceberg: it is read from the table's metadata, not stored "
            "as a property (Java drops it without a word); nothing was committed"
        )
    current = metadata.format_version
    if value.strip() == str(current):
        return f"the table is already format version {current}: nothing to change"
    if _INT.fullmatch(value.strip()) and int(value) > current:
        upgrade = "`puffin table upgrade`" if table is None else table_command(table, "upgrade")
        return (
            f"the format version is changed by an upgrade, not a property: {upgrade} "
            f"(puffin.iceberg.upgrade_to_v3) moves this v{current} table to v3, its position "
            "deletes turned into deletion vectors; nothing was committed"
        )
    return (
        f"cannot set format-version {value!r} on a v{current} table: a format version never "
        "goes down (Iceberg Java refuses to downgrade too); nothing was committed"
    )


def _require_column(metadata: TableMetadata, key: str) -> None:
    """Java's ``MetricsConfig.validate``: a column's metrics mode names a column that exists."""
    column = key[len(_METRICS_COLUMN) :]
    try:
        metadata.schema().find_field(column, case_sensitive=True)
    except ValueError:
        raise UsageError(
            f"{key}: the table has no column {column!r} (Iceberg Java refuses metrics for a "
            "column that does not exist); nothing was committed"
        ) from None
