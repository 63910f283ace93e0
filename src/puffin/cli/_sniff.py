"""What a file that is not a Puffin file probably is, for the error a user sees.

``puffin inspect data.parquet`` fails on the magic; the bytes ``PAR1`` say far more to the
user than ``found 50415231``.  Only local files are sniffed, and only their first bytes.
"""

from __future__ import annotations

import os
import shlex
import struct

__all__ = ["format_hint"]

# Leading bytes of the formats an Iceberg user has lying around, and what to do instead.
_FORMATS = (
    (b"PAR1", "a Parquet file (PAR1 magic)", "`puffin ndv {file}` estimates its columns' NDVs"),
    (b"ORC", "an ORC file (ORC magic)", None),
    (b"Obj\x01", "an Avro file (Obj magic)", "Iceberg manifests and manifest lists are Avro"),
)


def format_hint(path: str) -> str:
    """``"; this is a Parquet file ..."`` for a recognizable non-Puffin file, else ``""``."""
    from puffin.io.local import open_regular

    try:
        # Only a regular file: a FIFO would block the open, /dev/zero is no format.
        fd, size = open_regular(path)
    except (OSError, ValueError, TypeError):  # InvalidFileError is a ValueError
        return ""
    try:
        head = os.read(fd, 8)
    except OSError:
        return ""
    finally:
        os.close(fd)
    from puffin.blobs.dv.format import MAGIC as DV_MAGIC  # only on this error path

    quoted = shlex.quote(path)
    for magic, what, advice in _FORMATS:
        if head.startswith(magic):
            text = f"; this is {what}, not a Puffin file"
            return f"{text}: {advice.format(file=quoted)}" if advice else text
    if len(head) == 8 and head[4:8] == DV_MAGIC:
        (length,) = struct.unpack_from(">I", head)
        if length + 8 == size:
            return (
                "; this is a bare deletion-vector-v1 blob (its magic is at byte 4), not a Puffin "
                f"file: `puffin dv {quoted} --offset 0 --length {size}` reads it"
            )
    return ""
