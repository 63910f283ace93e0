"""Arrow arrays read from data files, made to hold exactly their Iceberg column's values.

Files differ from the table's current schema in ways Iceberg allows (promoted types,
timestamp units, extension types, dictionary encoding); :func:`to_iceberg_arrow` undoes
them against the one type map in :mod:`puffin.types`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from puffin.types import arrow_type_for

if TYPE_CHECKING:
    import pyarrow as pa
    from pyiceberg.types import IcebergType

__all__ = ["conform_batch", "nested_column", "to_iceberg_arrow"]


def to_iceberg_arrow(
    array: Any, iceberg_type: IcebergType, *, distinct_ok: bool = False
) -> pa.Array:
    """``array`` as an Arrow array holding the Iceberg type's values.

    Undoes what a file may differ in: extension types (``arrow.uuid``), dictionary
    encoding, chunking, promoted types (an ``int`` file in a ``long`` column, ``float`` to
    ``double``, wider decimals) and timestamp units.  String and binary keep their offset
    width; the sketch reads both.

    With ``distinct_ok`` a dictionary-encoded array stays one, its dictionary made to hold
    the Iceberg type's values: enough for a distinct-count sketch, whose engine hashes each
    entry the rows use once (:class:`puffin.ndv.engine.ColumnSketch`), far less than every row.
    """
    import pyarrow as pa

    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks() if array.num_chunks != 1 else array.chunk(0)
    if isinstance(array.type, pa.BaseExtensionType):
        array = array.storage
    if pa.types.is_dictionary(array.type):
        if distinct_ok:
            dictionary = array.dictionary
            values = to_iceberg_arrow(dictionary, iceberg_type)
            if values is dictionary:
                return array
            return pa.DictionaryArray.from_arrays(array.indices, values)
        array = array.dictionary_decode()
    target = arrow_type_for(iceberg_type)
    have = array.type
    if have == target:
        return array
    if pa.types.is_large_string(target) and pa.types.is_string(have):
        return array
    if pa.types.is_large_binary(target) and (pa.types.is_binary(have)):
        return array
    if pa.types.is_large_string(target) and pa.types.is_string_view(have):
        return array.cast(pa.large_string())
    if pa.types.is_large_binary(target) and pa.types.is_binary_view(have):
        return array.cast(pa.large_binary())
    if pa.types.is_timestamp(target) and pa.types.is_timestamp(have):
        # Older writers (INT96, millisecond files) store other units; truncate like Java.
        return array.cast(target, safe=False)
    return array.cast(target)


def nested_column(data: Any, names: tuple[str, ...]) -> Any:
    """The column of ``data`` (a record batch or table) at ``names``: a top-level column,
    then a field of each struct in turn (null where a parent struct is null)."""
    import pyarrow.compute as pc

    column = data.column(names[0])
    for name in names[1:]:
        column = pc.struct_field(column, name)
    return column


def conform_batch(batch: pa.RecordBatch, schema: pa.Schema) -> pa.RecordBatch:
    """``batch`` with exactly ``schema``'s types (files differ in string width, units): what
    a stream of batches read from several files hands on."""
    return batch if batch.schema.equals(schema) else batch.cast(schema)
