"""A ``scan-table`` adapter on Sail (run by the Python of a side venv, not imported).

The side venv (``.venv-sail``: pysail and pyspark-client, which cannot share a venv with
pyspark 4) holds no project code, so this file has no project imports.  It starts one Sail
Spark Connect server on 127.0.0.1 (a free port), connects a pyspark-client session to it,
answers JSON-lines requests on stdin and stops both when stdin closes.

Sail opens an Iceberg table by its folder and takes the highest ``metadata/vN.metadata.json``,
so each table is *staged*: its metadata.json is copied to ``v1.metadata.json`` of a fresh
folder (in a temporary folder removed at the end); the copy points at the same manifests
and data files.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
import warnings
from pathlib import Path
from typing import Any


def _stage(work: Path, number: int, metadata: str) -> Path:
    if metadata.startswith("file://"):
        metadata = metadata[len("file://") :]
    folder = work / f"table-{number}"
    (folder / "metadata").mkdir(parents=True)
    shutil.copyfile(metadata, folder / "metadata" / "v1.metadata.json")
    return folder


def _rows(spark: Any, folder: Path, columns: list[str]) -> dict[str, Any]:
    table = spark.read.format("iceberg").load(str(folder)).toArrow()
    values = [table.column(name).to_pylist() for name in columns]
    return {
        "rows": [
            [v.hex() if isinstance(v, bytes) else v for v in r] for r in zip(*values, strict=True)
        ]
    }


def _serve(spark: Any, work: Path, name: str) -> None:
    for number, line in enumerate(sys.stdin):
        request = json.loads(line)
        response: dict[str, Any]
        if request.get("op") == "hello":
            response = {"ok": True, "result": {"name": name, "ops": ["scan-table"]}}
        elif request.get("op") != "scan-table":
            response = {"ok": False, "unsupported": True, "error": "unknown op"}
        else:
            try:
                folder = _stage(work, number, request["metadata"])
                response = {"ok": True, "result": _rows(spark, folder, request["columns"])}
            except Exception as exc:  # Sail's error is the rejection
                response = {"ok": False, "error": f"{type(exc).__name__}: {exc}"[:500]}
        sys.stdout.write(json.dumps(response, default=str) + "\n")
        sys.stdout.flush()


def main() -> None:
    """Serve on a free loopback port until stdin closes; then stop the session and server."""
    warnings.simplefilter("ignore", FutureWarning)  # pyspark's note about pandas 3
    from importlib.metadata import version

    from pysail.spark import SparkConnectServer
    from pyspark.sql import SparkSession

    server = SparkConnectServer(ip="127.0.0.1", port=0)
    server.start(background=True)
    work = Path(tempfile.mkdtemp(prefix="puffin-sail-"))
    try:
        address = server.listening_address
        if address is None:
            raise SystemExit("Sail did not start listening")
        spark = SparkSession.builder.remote(f"sc://127.0.0.1:{address[1]}").getOrCreate()
        try:
            _serve(spark, work, f"sail {version('pysail')}")
        finally:
            spark.stop()
    finally:
        server.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
