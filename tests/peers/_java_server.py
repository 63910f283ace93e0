"""Iceberg Java 1.10.2 on Spark 3.5 local[2] (inside ``.venv-java``), serving one test module.

Usage: python _java_server.py JARS_DIR. Starts one Spark session with every jar in
JARS_DIR and Iceberg's SQL extensions, prints ``ready``, then answers JSON-line requests
on stdin until end of file, one JSON line each on stdout:

``{"op": "sql", "sql": ..., "warehouse": DIR|null, "out": PATH|null}``
    run a statement; with ``warehouse``, in a session whose catalog ``default`` is Java's
    ``JdbcCatalog`` on ``DIR/catalog.db`` (the catalog pyiceberg's ``SqlCatalog`` calls
    ``default``); with ``out``, the result's rows go to PATH as an Arrow IPC file.
``{"op": "read", "metadata": PATH, "columns": [...]|null, "out": PATH}``
    every row of the table at a metadata.json (``columns`` may name ``_row_id`` and
    ``_last_updated_sequence_number``).
``{"op": "call", "class": ..., "method": ..., "args": [...]}``
    a static Java method on string arguments, its ``toString()`` returned.
``{"op": "plan", "metadata": PATH, "runs": n, "detail": bool}``
    ``newScan().planFiles()`` timed; with ``detail``, each data file's delete files too.
``{"op": "equality_delete", "warehouse": DIR, "table": NAME, "column": C, "keys": [...]}``
    one Parquet equality delete file of ``keys`` on the ``int`` column ``C`` (Iceberg's
    ``GenericAppenderFactory.newEqDeleteWriter``, unpartitioned tables), committed with
    ``newRowDelta().addDeletes``; its path returned.

The answer is ``{"ok": true, "rows": n}`` or ``{"ok": false, "error": ...}``. Spark's own
output goes to stderr: file descriptor 1 is redirected before the JVM starts.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

_PROTOCOL = os.fdopen(os.dup(1), "w", buffering=1)
os.dup2(2, 1)
sys.stdout = sys.stderr


def _session(jars: Path) -> Any:
    from pyspark.sql import SparkSession

    listed = ",".join(str(p) for p in sorted(jars.glob("*.jar")))
    spark = (
        SparkSession.builder.master("local[2]")
        .appName("puffin-java-peer")
        .config("spark.jars", listed)
        .config("spark.sql.extensions",
                "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    return spark


class Server:
    """One Spark session, and a fresh child session per catalog request (see :meth:`session`)."""

    def __init__(self, jars: Path) -> None:
        self.spark = _session(jars)
        self.current: Any = None

    def session(self, warehouse: str | None) -> Any:
        """The root session, or a new one whose catalog ``default`` is a new ``JdbcCatalog``.

        Never one reused: Iceberg 1.10.2's ``JdbcCatalog`` leaves a ``getTables`` result set
        open on a pooled connection, which holds an SQLite read transaction for good, so
        that catalog never sees a commit made after it started (docs/interop.md). The
        previous catalog is closed first, with its connections.
        """
        if warehouse is None:
            return self.spark
        if self.current is not None:
            manager = self.current._jsparkSession.sessionState().catalogManager()
            if manager.isCatalogRegistered("default"):
                manager.catalog("default").icebergCatalog().close()
        session = self.spark.newSession()
        prefix = "spark.sql.catalog.default"
        for key, value in {
            "": "org.apache.iceberg.spark.SparkCatalog",
            ".catalog-impl": "org.apache.iceberg.jdbc.JdbcCatalog",
            ".uri": f"jdbc:sqlite:{warehouse}/catalog.db",
            ".jdbc.schema-version": "V1",
            ".warehouse": f"file://{warehouse}",
            ".cache-enabled": "false",
        }.items():
            session.conf.set(prefix + key, value)
        self.current = session
        return session

    def handle(self, request: dict[str, Any]) -> dict[str, Any]:
        op = request["op"]
        if op == "sql":
            frame = self.session(request.get("warehouse")).sql(request["sql"])
            return _save(frame, request.get("out"))
        if op == "read":
            frame = self.spark.read.format("iceberg").load(request["metadata"])
            if request.get("columns"):
                frame = frame.select(*request["columns"])
            return _save(frame, request["out"])
        if op == "plan":  # Iceberg's own planning of a table by its metadata file, timed
            return self.plan(
                request["metadata"], int(request.get("runs", 3)), bool(request.get("detail"))
            )
        if op == "equality_delete":
            return self.equality_delete(request)
        if op == "changelog":  # the view and the query of it in one session
            session = self.session(request["warehouse"])
            session.sql(f"CALL default.system.create_changelog_view({request['args']})")
            return _save(session.sql("SELECT * FROM puffin_changes"), request.get("out"))
        if op == "call":
            target: Any = self.spark._jvm
            for part in request["class"].split("."):
                target = getattr(target, part)
            return {"ok": True, "value": str(getattr(target, request["method"])(*request["args"]))}
        raise ValueError(f"unknown op {op!r}")


    def plan(self, metadata: str, runs: int, detail: bool = False) -> dict[str, Any]:
        """``table.newScan().planFiles()`` in Java, ``runs`` times on a table loaded once
        (a warm session): each run's seconds, the tasks and the delete files they carry,
        counted in the JVM (a py4j call per task would cost more than the plan); with
        ``detail``, ``{data file: [delete files]}`` of one more plan."""
        import time

        jvm = self.spark._jvm
        io = jvm.org.apache.iceberg.hadoop.HadoopFileIO(self.spark._jsc.hadoopConfiguration())
        ops = jvm.org.apache.iceberg.StaticTableOperations(metadata, io)
        table = jvm.org.apache.iceberg.BaseTable(ops, "planned")
        counter = jvm.org.apache.iceberg.relocated.com.google.common.collect.Iterables
        seconds, tasks = [], 0
        for _ in range(runs):
            start = time.perf_counter()
            tasks = counter.size(table.newScan().planFiles())
            seconds.append(time.perf_counter() - start)
        answer: dict[str, Any] = {"ok": True, "seconds": seconds, "tasks": tasks}
        if detail:
            files = {}
            iterator = table.newScan().planFiles().iterator()
            while iterator.hasNext():
                task = iterator.next()
                files[str(task.file().location())] = sorted(
                    str(d.location()) for d in task.deletes()
                )
            answer["files"] = files
        return answer

    def equality_delete(self, request: dict[str, Any]) -> dict[str, Any]:
        """An equality delete file of ``keys`` on one ``int`` column, committed by Java
        through its own ``JdbcCatalog`` on the warehouse (closed after)."""
        jvm = self.spark._jvm
        warehouse = request["warehouse"]
        catalog = jvm.org.apache.iceberg.jdbc.JdbcCatalog()
        properties = jvm.java.util.HashMap()
        for key, value in {
            "uri": f"jdbc:sqlite:{warehouse}/catalog.db",
            "jdbc.schema-version": "V1",
            "warehouse": f"file://{warehouse}",
        }.items():
            properties.put(key, value)
        catalog.setConf(self.spark._jsc.hadoopConfiguration())
        catalog.initialize("default", properties)
        try:
            return self._equality_delete(catalog, request)
        finally:
            catalog.close()

    def _equality_delete(self, catalog: Any, request: dict[str, Any]) -> dict[str, Any]:
        import uuid

        jvm = self.spark._jvm
        gateway = self.spark.sparkContext._gateway
        table = catalog.loadTable(
            jvm.org.apache.iceberg.catalog.TableIdentifier.parse(request["table"])
        )
        schema, column = table.schema(), request["column"]
        ids = gateway.new_array(gateway.jvm.int, 1)
        ids[0] = schema.findField(column).fieldId()
        names = jvm.java.util.ArrayList()
        names.add(column)
        delete_schema = schema.select(names)
        factory = jvm.org.apache.iceberg.data.GenericAppenderFactory(
            schema, table.spec(), ids, delete_schema, None
        )
        location = table.locationProvider().newDataLocation(f"eq-{uuid.uuid4()}.parquet")
        output = jvm.org.apache.iceberg.encryption.EncryptedFiles.plainAsEncryptedOutput(
            table.io().newOutputFile(location)
        )
        writer = factory.newEqDeleteWriter(output, jvm.org.apache.iceberg.FileFormat.PARQUET, None)
        for key in request["keys"]:  # a Python int reaches Java as an Integer: an int column
            record = jvm.org.apache.iceberg.data.GenericRecord.create(delete_schema)
            record.setField(column, key)
            writer.write(record)
        writer.close()
        table.newRowDelta().addDeletes(writer.toDeleteFile()).commit()
        return {"ok": True, "path": str(location)}


def _save(frame: Any, out: str | None) -> dict[str, Any]:
    if out is None:
        return {"ok": True, "rows": len(frame.collect())}
    import pyarrow as pa
    import pyarrow.ipc as ipc

    batches = frame._collect_as_arrow()
    table = pa.Table.from_batches(batches) if batches else _empty(frame)
    with ipc.new_file(out, table.schema) as writer:
        writer.write_table(table)
    return {"ok": True, "rows": table.num_rows}


def _empty(frame: Any) -> Any:
    import pyarrow as pa
    from pyspark.sql.pandas.types import to_arrow_schema

    return pa.Table.from_pylist([], schema=to_arrow_schema(frame.schema))


def main(jars: str) -> None:
    server = Server(Path(jars))
    print("ready", file=_PROTOCOL, flush=True)
    for line in sys.stdin:
        try:
            answer = server.handle(json.loads(line))
        except Exception as exc:  # the peer's own complaint goes back to the test
            answer = {"ok": False, "error": f"{type(exc).__name__}: {exc}"[:3000]}
        print(json.dumps(answer), file=_PROTOCOL, flush=True)
    server.spark.stop()


if __name__ == "__main__":
    main(*sys.argv[1:])
