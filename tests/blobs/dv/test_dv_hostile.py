"""Hostile deletion vectors never crash, hang or raise anything but ``PuffinError``.

Decoding runs in a child process with a timeout, so a crash inside the Roaring codec would
fail this test instead of killing the test run.  Inputs: CRoaring's crash-prone fuzz files
and every other Roaring golden file, each read as a bare 64-bit bitmap, as a DV payload, as
the 32-bit bitmap of key 0 inside a DV; then random mutations of valid payloads whose CRC
is recomputed, so the mutations reach the Roaring parsing.  Budget: about 10 s.
"""

from __future__ import annotations

import json
import subprocess
import sys

from pyroaring import BitMap

from _paths import TESTDATA

CHILD = r"""
import json, random, struct, sys, zlib
from pathlib import Path
import numpy as np
from puffin import DeletionVector, PuffinError

MAGIC = bytes.fromhex("d1d33964")

def frame(body):
    data = MAGIC + body
    return struct.pack(">I", len(data)) + data + struct.pack(">I", zlib.crc32(data))

def outcome(fn, data):
    try:
        return "ok %d" % fn(data).cardinality
    except PuffinError:
        return "rejected"
    except Exception as exc:  # anything else is a bug
        return "BUG %s: %s" % (type(exc).__name__, exc)

results = {}
for path in sorted(Path(sys.argv[1]).rglob("*.bin")):
    data = path.read_bytes()
    name = str(path.relative_to(sys.argv[1]))
    results[name] = {
        "bare64": outcome(DeletionVector.deserialize_portable, data),
        "payload": outcome(DeletionVector.deserialize, data),
        "framed64": outcome(DeletionVector.deserialize, frame(data)),
        "framed32": outcome(
            DeletionVector.deserialize, frame(struct.pack("<QI", 1, 0) + data)
        ),
    }

rng = random.Random(20240501)
seeds = [
    DeletionVector([1, 3, 5, 1 << 32]).serialize(),
    DeletionVector(np.arange(0, 300_000, 3)).serialize(),
    DeletionVector(range(1000, 200_000)).serialize(),
    DeletionVector(np.concatenate([np.arange(10), np.arange(65536, 65700),
                                   (2 << 32) + np.arange(0, 20000, 2)])).serialize(),
    Path(sys.argv[1], "iceberg-java/deletes/all-container-types-position-index.bin").read_bytes(),
]
mutations = {"ok": 0, "rejected": 0, "bugs": []}
for _ in range(int(sys.argv[2])):
    body = bytearray(rng.choice(seeds)[8:-4])
    for _ in range(rng.randint(1, 4)):
        r = rng.random() if body else 0.95
        if r < 0.5:
            body[rng.randrange(len(body))] = rng.randrange(256)
        elif r < 0.8:
            body[rng.randrange(len(body))] ^= 1 << rng.randrange(8)
        elif r < 0.9:
            del body[rng.randrange(len(body)):]
        else:
            body += bytes(rng.randrange(256) for _ in range(rng.randint(1, 16)))
    result = outcome(DeletionVector.deserialize, frame(bytes(body)))
    if result.startswith("BUG"):
        mutations["bugs"].append(result)
    else:
        mutations["ok" if result.startswith("ok") else "rejected"] += 1
print(json.dumps({"files": results, "mutations": mutations}))
"""


def test_hostile_inputs_in_a_child_process() -> None:
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, str(TESTDATA), "10000"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, f"child died with {proc.returncode}: {proc.stderr[-2000:]}"
    report = json.loads(proc.stdout)
    files = report["files"]
    bugs = {name: r for name, r in files.items() if any(v.startswith("BUG") for v in r.values())}
    assert not bugs
    assert not report["mutations"]["bugs"]
    # Mutations must exercise both outcomes, or the fuzz proves nothing.
    assert report["mutations"]["ok"] > 0 and report["mutations"]["rejected"] > 1000

    # The crash-prone inputs: rejected or decoded, whichever way they are read.
    crash_prone = [n for n in files if "crashprone" in n or "addoffset" in n]
    assert len(crash_prone) == 8
    for name in crash_prone:
        assert set(files[name].values()) <= {"rejected"} | {
            v for v in files[name].values() if v.startswith("ok ")
        }
    # What decodes agrees with pyroaring's own 32-bit reader.
    addoffset = BitMap.deserialize((TESTDATA / "croaring" / "addoffsetinput.bin").read_bytes())
    assert files["croaring/addoffsetinput.bin"]["framed32"] == f"ok {len(addoffset)}"
    # README expectations, read through the DV path.
    assert files["croaring/bitmapwithruns.bin"]["framed32"] == "ok 200100"
    assert files["croaring/bitmapwithoutruns.bin"]["framed32"] == "ok 200100"
    assert files["iceberg-java/deletes/64mapspreadvals.bin"]["framed64"] == "ok 100"
    assert files["roaring-format-spec/bitmap64.bin"]["bare64"] == "ok 1032769"
    for name in (
        "iceberg-java/deletes/64maphighvals.bin",
        "croaring/64maphighvals.bin",
        "croaring/64mapemptyinput.bin",
        "croaring/64mapsizetoosmall.bin",
        "croaring/64mapinvalidsize.bin",
        "croaring/64mapkeytoosmall.bin",
    ):
        assert files[name]["bare64"] == files[name]["framed64"] == "rejected"
    for name in (
        "iceberg-java/deletes/small-alternating-values-position-index.bin",
        "iceberg-java/deletes/all-container-types-position-index.bin",
    ):
        assert files[name]["payload"].startswith("ok ")
