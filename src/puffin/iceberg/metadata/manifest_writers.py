"""The manifest writers of every commit here, v2 and v3: pyiceberg's, with two things mended.

pyiceberg 0.12 writes data manifests only, at v1/v2 (a v3 table's, and any delete manifest,
are refused or missing). :class:`DeleteManifestWriter` and :class:`DataManifestWriter` are
pyiceberg's ``ManifestWriterV2`` at the table's format version (2 or 3), with:

* the entries gathered into Avro blocks of :data:`BLOCK_RECORDS` (pyiceberg writes a block
  per entry), and
* ``equality_ids`` declared ``list<int>`` as the spec and Iceberg Java have it.

v3 records keep their deletion-vector and row-lineage fields; the v2 struct is a prefix of
the v3 one, so a record of either version is written by the file schema's own fields.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar

from pyiceberg.avro.file import AvroOutputFile
from pyiceberg.manifest import ManifestWriterV2
from pyiceberg.typedef import StructProtocol

if TYPE_CHECKING:
    from pyiceberg.avro.codecs import AvroCompressionCodec
    from pyiceberg.io import OutputFile
    from pyiceberg.manifest import ManifestContent
    from pyiceberg.partitioning import PartitionSpec
    from pyiceberg.schema import Schema

__all__ = ["BLOCK_RECORDS", "DataManifestWriter", "DeleteManifestWriter"]

#: Manifest entries an Avro block holds (the last block of a manifest holds the rest).
BLOCK_RECORDS = 100

D = TypeVar("D", bound=StructProtocol)


class DeleteManifestWriter(ManifestWriterV2):
    """A delete manifest at ``format_version`` 2 or 3 (v3 entries keep the DV fields)."""

    def __init__(
        self,
        spec: PartitionSpec,
        schema: Schema,
        output_file: OutputFile,
        snapshot_id: int,
        avro_compression: AvroCompressionCodec = "deflate",
        *,
        format_version: int = 3,
    ) -> None:
        if format_version not in (2, 3):
            raise ValueError(f"manifests are written at format version 2 or 3: {format_version}")
        self._format_version = format_version
        super().__init__(spec, schema, output_file, snapshot_id, avro_compression)

    def content(self) -> ManifestContent:
        from pyiceberg.manifest import ManifestContent

        return ManifestContent.DELETES

    @property
    def version(self) -> Any:
        return self._format_version

    @property
    def _meta(self) -> dict[str, str]:
        return {**super()._meta, "content": "deletes"}

    def new_writer(self) -> Any:
        from pyiceberg.manifest import ManifestEntry

        schema = _equality_ids_as_int(self._with_partition(self.version))
        # pyiceberg's writer maps records with the v2 struct; v3 records keep the DV fields
        # (with no record schema, the records are written by the file schema's own fields).
        return _Blocks[ManifestEntry](
            output_file=self._output_file,
            file_schema=schema,
            schema_name="manifest_entry",
            metadata=self._meta,
        )


class DataManifestWriter(DeleteManifestWriter):
    """A data manifest at ``format_version`` 2 or 3; at v3 added data files get their row
    ids from the manifest's ``first_row_id``, which the manifest list assigns."""

    def content(self) -> ManifestContent:
        from pyiceberg.manifest import ManifestContent

        return ManifestContent.DATA

    @property
    def _meta(self) -> dict[str, str]:
        return {**super()._meta, "content": "data"}


def _equality_ids_as_int(schema: Schema) -> Schema:
    """The manifest entry schema with ``equality_ids`` a list of ``int`` (field 136), as the
    spec and Iceberg Java have it: pyiceberg 0.12 declares ``long``, and Java 1.10.2 then
    fails to read the entry (``Long cannot be cast to Integer``). Avro encodes both alike,
    so only the schema changes."""
    from pyiceberg.schema import Schema
    from pyiceberg.types import IntegerType, ListType, NestedField, StructType

    def data_file(field: NestedField) -> NestedField:
        assert isinstance(field.field_type, StructType)
        fields = [
            f.model_copy(update={"field_type": ListType(136, IntegerType(), element_required=True)})
            if f.field_id == 135
            else f
            for f in field.field_type.fields
        ]
        return field.model_copy(update={"field_type": StructType(*fields)})

    fields = [data_file(f) if f.name == "data_file" else f for f in schema.fields]
    return Schema(*fields, schema_id=schema.schema_id)


class _Blocks(AvroOutputFile[D]):
    """pyiceberg's Avro writer with records gathered into blocks of :data:`BLOCK_RECORDS`.

    pyiceberg's manifest writer hands over one entry at a time, and ``AvroOutputFile``
    writes each as a block of its own: a count, a length, a deflate stream and a 16-byte
    sync marker per entry. In blocks of 100, a manifest of 1,000 data files took 18 KB
    instead of 149 KB and 0.03 s to write instead of 0.13 s, and decoded 25 % faster; one of
    5,000 deletion vectors 48 KB instead of 858 KB. Iceberg Java's blocks hold about 64 KB."""

    def __enter__(self) -> _Blocks[D]:
        self._pending: list[D] = []
        super().__enter__()
        return self

    def write_block(self, objects: list[D]) -> None:
        self._pending.extend(objects)
        if len(self._pending) >= BLOCK_RECORDS:
            self._flush()

    def _flush(self) -> None:
        if self._pending:
            super().write_block(self._pending)
            self._pending = []

    def __exit__(self, exctype: Any, excinst: Any, exctb: Any) -> None:
        try:
            if exctype is None:  # a failed write is abandoned (its file removed by the caller)
                self._flush()
        finally:
            super().__exit__(exctype, excinst, exctb)
