"""Arrow arrays read from data files, made to hold exactly their Iceberg column's values.

Files differ from the table's current schema in ways Iceberg allows (promoted types,
timestamp units, extension types, dictionary encoding); :func:`to_iceberg_arrow` undoes
them against the one type map in :mod:`puffin.blobs.types`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from puffin.blobs.types import arrow_type_for

if TYPE_CHECKING:
    import pyarrow as pa
    from pyiceberg.types import IcebergType

__all__ = ["to_iceberg_arrow"]



def to_iceberg_arrow(
    array: Any, iceberg_type: IcebergType, *, distinct_ok: bool = False
) -> pa.Array:
    """``array`` as an Arrow array holding the Iceberg type's values.

    Undoes what a file may differ in: extension types (``arrow.uuid``), dictionary
    encoding, chunking, promoted types (an ``int`` file in a ``long`` column, ``float`` to
    ``double``, wider decimals) and timestamp units.  String and binary keep their offset
    width; the sketch reads both.

    With ``distinct_ok`` a dictionary-encoded array becomes just the dictionary values its
    rows use (each once): enough for a distinct-count sketch, and far less to hash.
    """
    import pyarrow as pa

    if isinstance(array, pa.ChunkedArray):
        if distinct_ok and pa.types.is_dictionary(array.type) and array.num_chunks > 1:
            parts = [to_iceberg_arrow(c, iceberg_type, distinct_ok=True) for c in array.chunks]
            return pa.concat_arrays(parts)
        array = array.combine_chunks() if array.num_chunks != 1 else array.chunk(0)
    if isinstance(array.type, pa.BaseExtensionType):
        array = array.storage
    if pa.types.is_dictionary(array.type):
        array = _used_dictionary_values(array) if distinct_ok else array.dictionary_decode()
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


def _used_dictionary_values(array: pa.DictionaryArray) -> pa.Array:
    """The dictionary entries that the array's non-null rows point at, each once."""
    import numpy as np
    import pyarrow.compute as pc

    indices = array.indices
    if array.null_count:
        indices = pc.drop_null(indices)
    if len(indices) == 0:
        return array.dictionary.slice(0, 0)
    counts = np.bincount(indices.to_numpy(zero_copy_only=False), minlength=len(array.dictionary))
    return array.dictionary.take(np.flatnonzero(counts))
