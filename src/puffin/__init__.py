"""Apache Iceberg's Puffin file format: reader, writer, theta sketches and deletion vectors.

Reading::

    import puffin
    with puffin.open("stats.puffin") as reader:
        for blob in reader.blobs:
            print(blob.type, blob.fields, len(reader.read_blob(blob)))

Writing (atomic when the target is a path)::

    with puffin.create("stats.puffin", created_by="my-app 1.0") as writer:
        writer.add_blob(b"payload", type="my-blob", fields=[1], codec="zstd")

Blob types live in :mod:`puffin.blobs`; their main names are re-exported here and loaded on
first use, so ``import puffin`` pulls in neither NumPy nor pyarrow.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from puffin.codecs import Codec, available_codecs, get_codec, register_codec
from puffin.errors import (
    CodecError,
    DeletionVectorError,
    IntegrationError,
    InvalidBlobError,
    InvalidFileError,
    InvalidFooterError,
    LimitExceededError,
    PuffinError,
    ThetaSketchError,
    UnknownCodecError,
    UsageError,
)
from puffin.layout import MAGIC
from puffin.limits import Limits
from puffin.metadata import BlobMetadata, FileMetadata
from puffin.reader import PuffinReader, open
from puffin.support.facade import lazy_names
from puffin.version import __version__
from puffin.writer import PuffinWriter, create

# Public names of the blob-type modules, imported lazily (they may need NumPy).
_LAZY: dict[str, str] = {
    "DeletionVector": "puffin.blobs.dv.format",
    "DeletionVectorEntry": "puffin.blobs.dv.files",
    "write_deletion_vectors": "puffin.blobs.dv.files",
    "read_deletion_vector": "puffin.blobs.dv.files",
    "read_deletion_vectors": "puffin.blobs.dv.files",
    "DELETION_VECTOR_V1": "puffin.blobs.dv.files",
    "ThetaSketch": "puffin.blobs.theta.sketch",
    "ThetaSketchBuilder": "puffin.blobs.theta.sketch",
    "ThetaBlob": "puffin.blobs.theta.files",
    "add_theta_blob": "puffin.blobs.theta.files",
    "read_theta_blobs": "puffin.blobs.theta.files",
    "APACHE_DATASKETCHES_THETA_V1": "puffin.blobs.theta.files",
    "serialize_value": "puffin.blobs.single_value",
    "serialize_values": "puffin.blobs.single_value",
    "verify_file": "puffin.blobs.verify",
    "Problem": "puffin.blobs.verify",
}

if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from puffin.blobs.dv.files import (
        DELETION_VECTOR_V1,
        DeletionVectorEntry,
        read_deletion_vector,
        read_deletion_vectors,
        write_deletion_vectors,
    )
    from puffin.blobs.dv.format import DeletionVector
    from puffin.blobs.single_value import serialize_value, serialize_values
    from puffin.blobs.theta.files import (
        APACHE_DATASKETCHES_THETA_V1,
        ThetaBlob,
        add_theta_blob,
        read_theta_blobs,
    )
    from puffin.blobs.theta.sketch import ThetaSketch, ThetaSketchBuilder
    from puffin.blobs.verify import Problem, verify_file


__getattr__, __dir__ = lazy_names(__name__, _LAZY)


# Written out in full (not built from _LAZY) so that type checkers see every export.
__all__ = [
    "APACHE_DATASKETCHES_THETA_V1",
    "DELETION_VECTOR_V1",
    "MAGIC",
    "BlobMetadata",
    "Codec",
    "CodecError",
    "DeletionVector",
    "DeletionVectorEntry",
    "DeletionVectorError",
    "FileMetadata",
    "IntegrationError",
    "InvalidBlobError",
    "InvalidFileError",
    "InvalidFooterError",
    "LimitExceededError",
    "Limits",
    "Problem",
    "PuffinError",
    "PuffinReader",
    "PuffinWriter",
    "ThetaBlob",
    "ThetaSketch",
    "ThetaSketchBuilder",
    "ThetaSketchError",
    "UnknownCodecError",
    "UsageError",
    "__version__",
    "add_theta_blob",
    "available_codecs",
    "create",
    "get_codec",
    "open",
    "read_deletion_vector",
    "read_deletion_vectors",
    "read_theta_blobs",
    "register_codec",
    "serialize_value",
    "serialize_values",
    "verify_file",
    "write_deletion_vectors",
]
