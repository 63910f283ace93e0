"""Relocate Java packages inside jars, as Maven's shade plugin does: one jar out.

The Iceberg Spark runtime jar that PyPI's ``snowpark-connect-deps-iceberg`` carries was
built without its shaded Jackson (``org.apache.iceberg.shaded.com.fasterxml.jackson``), so
Iceberg Java fails on its first JSON (``NoClassDefFoundError: .../JsonFactoryBuilder``).
This tool renames Jackson's packages in pyspark's own Jackson jars to that prefix: every
class's path, every ``CONSTANT_Utf8`` of every class file (class names, descriptors and
string constants, in both ``a/b`` and ``a.b`` spellings) and ``META-INF/services``.
Java 9 ``module-info`` classes and signatures are dropped: a relocated jar is no module.

Usage: ``python -m tools.relocate_jar OUT.jar FROM=TO IN.jar [IN.jar ...]``
(``FROM``/``TO`` dotted package prefixes, e.g.
``com.fasterxml.jackson=org.apache.iceberg.shaded.com.fasterxml.jackson``).
"""

from __future__ import annotations

import struct
import sys
import zipfile
from pathlib import Path

__all__ = ["relocate_class", "relocate_jars"]

_CLASS_MAGIC = b"\xca\xfe\xba\xbe"
# Constant-pool entry sizes after the tag, for every tag but Utf8 (1); Long and Double
# (5, 6) take two slots.
_FIXED = {3: 4, 4: 4, 5: 8, 6: 8, 7: 2, 8: 2, 9: 4, 10: 4, 11: 4, 12: 4, 15: 3, 16: 2,
          17: 4, 18: 4, 19: 2, 20: 2}


class RelocationError(ValueError):
    """A class file this tool cannot parse."""


def _rename(text: bytes, pairs: list[tuple[bytes, bytes]]) -> bytes:
    for old, new in pairs:
        if old in text:
            text = text.replace(old, new)
    return text


def _pairs(source: str, target: str) -> list[tuple[bytes, bytes]]:
    """Both spellings of the prefix: ``a/b/`` (internal names) and ``a.b.`` (strings)."""
    return [
        ((source.replace(".", "/") + "/").encode(), (target.replace(".", "/") + "/").encode()),
        ((source + ".").encode(), (target + ".").encode()),
    ]


def relocate_class(data: bytes, pairs: list[tuple[bytes, bytes]]) -> bytes:
    """A class file with every constant-pool string renamed; the rest copied as is.

    Modified UTF-8 keeps ASCII bytes as they are, so renaming ASCII prefixes in the raw
    bytes is exact; each renamed entry gets its new length.
    """
    if data[:4] != _CLASS_MAGIC:
        raise RelocationError("not a class file")
    (count,) = struct.unpack_from(">H", data, 8)
    out = [data[:10]]
    at, index = 10, 1
    while index < count:
        tag = data[at]
        if tag == 1:
            (length,) = struct.unpack_from(">H", data, at + 1)
            text = _rename(data[at + 3 : at + 3 + length], pairs)
            if len(text) > 0xFFFF:
                raise RelocationError("a renamed constant is longer than 65535 bytes")
            out.append(b"\x01" + struct.pack(">H", len(text)) + text)
            at += 3 + length
        elif tag in _FIXED:
            out.append(data[at : at + 1 + _FIXED[tag]])
            at += 1 + _FIXED[tag]
        else:
            raise RelocationError(f"unknown constant-pool tag {tag} at byte {at}")
        index += 2 if tag in (5, 6) else 1
    out.append(data[at:])
    return b"".join(out)


def _dropped(name: str) -> bool:
    upper = name.upper()
    return name.endswith("module-info.class") or (
        upper.startswith("META-INF/") and upper.endswith((".SF", ".RSA", ".DSA", ".EC"))
    )


def relocate_jars(output: Path, source: str, target: str, jars: list[Path]) -> int:
    """Write ``output`` with every entry of ``jars`` relocated; the number of classes."""
    pairs = _pairs(source, target)
    seen: set[str] = set()
    classes = 0
    tmp = output.with_name(output.name + ".tmp")
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as out:
        for jar in jars:
            with zipfile.ZipFile(jar) as src:
                for info in src.infolist():
                    if info.is_dir() or _dropped(info.filename):
                        continue
                    name = _rename(info.filename.encode(), pairs).decode()
                    if name in seen:  # META-INF/LICENSE and the like: the first one wins
                        continue
                    seen.add(name)
                    data = src.read(info)
                    if name.endswith(".class"):
                        data = relocate_class(data, pairs)
                        classes += 1
                    elif name.startswith("META-INF/services/"):
                        data = _rename(data, pairs)
                    out.writestr(name, data)
    tmp.replace(output)
    return classes


def main(argv: list[str]) -> int:
    if len(argv) < 3 or "=" not in argv[1]:
        print(__doc__, file=sys.stderr)
        return 2
    source, target = argv[1].split("=", 1)
    count = relocate_jars(Path(argv[0]), source, target, [Path(a) for a in argv[2:]])
    print(f"relocated {count} classes {source} -> {target} into {argv[0]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
