"""The footer's metadata model: ``FileMetadata`` and ``BlobMetadata``.

The JSON both ways goes through :mod:`puffin.footer` (one parser, one blob ⇄ JSON mapping):
parsing is strict and names the blob and field at fault; serialization reproduces Iceberg
Java's bytes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from puffin import footer
from puffin.footer.rules import blob_attrs, blob_json, footer_from_json, footer_json
from puffin.limits import DEFAULT_LIMITS, Limits

__all__ = ["BlobMetadata", "FileMetadata", "parse_payload"]

CREATED_BY = "created-by"


def _frozen_properties(properties: Mapping[str, str] | None) -> Mapping[str, str]:
    return MappingProxyType(dict(properties or {}))


@dataclass(frozen=True)
class BlobMetadata:
    """One blob as the footer describes it.

    ``offset`` and ``length`` locate the stored (possibly compressed) bytes in the file.
    ``properties`` is read-only; its order is the order in the file.
    """

    type: str
    fields: tuple[int, ...]
    snapshot_id: int
    sequence_number: int
    offset: int
    length: int
    compression_codec: str | None = None
    properties: Mapping[str, str] = field(default_factory=dict, hash=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "fields", tuple(self.fields))
        object.__setattr__(self, "properties", _frozen_properties(self.properties))

    def __reduce__(self) -> tuple[Any, ...]:
        # MappingProxyType does not pickle; rebuild from a plain dict.
        return (
            BlobMetadata,
            (
                self.type,
                self.fields,
                self.snapshot_id,
                self.sequence_number,
                self.offset,
                self.length,
                self.compression_codec,
                dict(self.properties),
            ),
        )

    def to_json_dict(self) -> dict[str, Any]:
        """The JSON object for this blob, keys in Iceberg Java's order."""
        return blob_json(self.__dict__)

    @classmethod
    def from_json_dict(cls, obj: object, *, blob_index: int | None = None) -> BlobMetadata:
        """Parse one ``BlobMetadata`` JSON object, strictly."""
        return _blob(blob_attrs(obj, blob_index=blob_index))


@dataclass(frozen=True)
class FileMetadata:
    """The footer payload: the blobs and the file's properties (e.g. ``created-by``)."""

    blobs: tuple[BlobMetadata, ...]
    properties: Mapping[str, str] = field(default_factory=dict, hash=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "blobs", tuple(self.blobs))
        object.__setattr__(self, "properties", _frozen_properties(self.properties))

    def __reduce__(self) -> tuple[Any, ...]:
        return (FileMetadata, (self.blobs, dict(self.properties)))

    def to_json_dict(self) -> dict[str, Any]:
        return footer_json(self._footer())

    def to_json(self) -> str:
        """Compact JSON exactly as Iceberg Java's ``FileMetadataParser`` writes it."""
        return footer.dump(self._footer())

    def _footer(self) -> footer.Footer:
        return footer.Footer([b.__dict__ for b in self.blobs], dict(self.properties))

    def to_bytes(self) -> bytes:
        """UTF-8 of :meth:`to_json`: the uncompressed footer payload."""
        return self.to_json().encode("utf-8")

    @classmethod
    def from_json(
        cls, payload: str | bytes | bytearray | memoryview, *, limits: Limits | None = None
    ) -> FileMetadata:
        """Parse a footer payload (UTF-8 bytes or text), strictly, as :func:`puffin.open` does.

        Raises :class:`~puffin.InvalidFooterError` naming the blob and field at fault, and
        the byte of the payload where the JSON goes wrong; ``limits`` bounds the JSON's
        nesting and size (see :class:`~puffin.Limits`).
        """
        try:
            return parse_payload(payload, limits or DEFAULT_LIMITS)
        except footer.PayloadError as at:
            raise at.located("footer payload") from None

    @classmethod
    def from_json_dict(cls, doc: object, *, check_text: bool = True) -> FileMetadata:
        """Build from a parsed JSON document, strictly.

        ``check_text=False`` skips the per-string Unicode check when the caller knows the
        document came from text without surrogate escapes.
        """
        return _file(footer_from_json(doc, check_text=check_text))


def parse_payload(
    payload: str | bytes | bytearray | memoryview, limits: Limits
) -> FileMetadata:
    """The footer payload's metadata through :func:`puffin.footer.parse`; raises
    :class:`puffin.footer.PayloadError` for a fault at a known byte of the payload."""
    return _file(footer.parse(payload, limits))


def _file(parsed: footer.Footer) -> FileMetadata:
    return FileMetadata(blobs=tuple(map(_blob, parsed.blobs)), properties=parsed.properties)


def _blob(attrs: dict[str, Any]) -> BlobMetadata:
    # The attributes are checked and frozen already: skip the dataclass __init__ (its
    # frozen setattr calls cost more than the parse for footers of thousands of blobs).
    blob = _new(BlobMetadata)
    object.__setattr__(blob, "__dict__", attrs)
    return blob


_new = object.__new__
