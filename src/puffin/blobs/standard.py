"""The standard blob types and their properties: names, the ``long`` property rule, checks.

The Puffin spec's blob types and blob properties are written here and nowhere else, in the
spirit of Iceberg Java's ``StandardBlobTypes`` and ``StandardPuffinProperties``.  Every
other module (readers, writers, the CLI, Iceberg and Spark) imports the names, parses
numeric properties with :func:`parse_long_property` and checks a blob with
:func:`puffin.blobs.verify.check_blob`, so a rule changes in one place.

This module is light and imports no blob type (they import it).

Example::

    from puffin.blobs import standard
    if meta.type == standard.APACHE_DATASKETCHES_THETA_V1:
        ndv = standard.parse_long_property(meta.properties, standard.NDV, blob_index=i)
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from puffin.errors import DeletionVectorError, InvalidBlobError

if TYPE_CHECKING:  # pragma: no cover
    from puffin.metadata import BlobMetadata

__all__ = [
    "APACHE_DATASKETCHES_THETA_V1",
    "CARDINALITY",
    "DELETION_VECTOR_V1",
    "JAVA_LONG_MAX",
    "NDV",
    "REFERENCED_DATA_FILE",
    "STANDARD_BLOB_TYPES",
    "check_file_rules",
    "java_ndv",
    "ndv_agrees",
    "parse_long_property",
]

#: A serialized compact Theta sketch of one column's single-value serialized values.
APACHE_DATASKETCHES_THETA_V1 = "apache-datasketches-theta-v1"
#: A Roaring bitmap of deleted row positions of one data file (Iceberg format v3).
DELETION_VECTOR_V1 = "deletion-vector-v1"
STANDARD_BLOB_TYPES = frozenset({APACHE_DATASKETCHES_THETA_V1, DELETION_VECTOR_V1})

#: Theta blobs: the number of distinct values, a decimal Java long.
NDV = "ndv"
#: Deletion vectors: the location of the data file whose rows the vector deletes.
REFERENCED_DATA_FILE = "referenced-data-file"
#: Deletion vectors: how many positions the vector holds, a decimal Java long.
CARDINALITY = "cardinality"

JAVA_LONG_MAX = (1 << 63) - 1
_DIGITS = re.compile(r"[0-9]{1,19}", re.ASCII)  # fullmatch: "5\n" and "٣" are not longs


def parse_long_property(
    properties: Mapping[str, str],
    name: str,
    *,
    blob_index: int | None = None,
    error: type[InvalidBlobError] = InvalidBlobError,
    location: str | None = None,
) -> int | None:
    """The property ``name`` as a non-negative Java long, or None when it is absent.

    Java reads these with ``Long.parseLong``; we accept only plain ASCII decimal digits that
    fit in a long.  The length is checked before ``int()``, which is slow on long strings and
    refuses over 4,300 digits with a bare ``ValueError``.
    """
    text = properties.get(name)
    if text is None:
        return None
    if not _DIGITS.fullmatch(text) or int(text) > JAVA_LONG_MAX:
        raise error(
            f"{name} property {text[:40]!r}{'…' if len(text) > 40 else ''} is not a "
            "non-negative decimal integer within a Java long",
            blob_index=blob_index,
            field=name,
            location=location,
        )
    return int(text)


def java_ndv(num_retained: int, theta64: int) -> int:
    """The ``ndv`` Iceberg Java writes for a sketch: ``(long) getEstimate()``.

    datasketches-java computes the estimate in doubles as ``count * (2^63 / thetaLong)``;
    that can differ by one from ``floor`` of the C++ estimate at some boundaries.
    """
    if theta64 >= JAVA_LONG_MAX:
        return num_retained
    estimate = float(num_retained) * (float(1 << 63) / float(theta64))
    return min(int(estimate), JAVA_LONG_MAX)  # Java's (long) cast truncates and saturates


def ndv_agrees(ndv: int, num_retained: int, theta64: int, estimate: float) -> bool:
    """Whether ``ndv`` is what an Iceberg writer would record for this sketch.

    Java's formula (:func:`java_ndv`) and ``floor`` of the C++ estimate are both accepted.
    """
    return ndv in (java_ndv(num_retained, theta64), int(estimate // 1))


def check_file_rules(blobs: Sequence[BlobMetadata]) -> list[DeletionVectorError]:
    """Rules across blobs: at most one deletion vector per referenced data file."""
    seen: dict[str, int] = {}
    found = []
    for index, meta in enumerate(blobs):
        if meta.type != DELETION_VECTOR_V1:
            continue
        referenced = meta.properties.get(REFERENCED_DATA_FILE)
        if referenced is None:
            continue
        if referenced in seen:
            found.append(
                DeletionVectorError(
                    f"a second deletion vector for data file {referenced!r} (the first is "
                    f"blob {seen[referenced]})",
                    blob_index=index,
                    field=REFERENCED_DATA_FILE,
                    offset=meta.offset,
                )
            )
        else:
            seen[referenced] = index
    return found
