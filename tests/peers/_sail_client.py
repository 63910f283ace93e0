"""A Spark Connect client for Sail (inside ``.venv-sail``, pyspark-client 4.2.0).

Usage: python _sail_client.py PORT read TABLE_DIR OUT.arrow
       python _sail_client.py PORT delete TABLE_DIR WHERE OUT.arrow
``read`` saves every row of the Iceberg table at TABLE_DIR; ``delete`` runs
``DELETE FROM iceberg.`TABLE_DIR` WHERE ...`` and saves what the statement returns.
"""

from __future__ import annotations

import sys
import warnings

import pyarrow as pa
import pyarrow.ipc as ipc


def _save(table: pa.Table, out: str) -> None:
    with ipc.new_file(out, table.schema) as writer:
        writer.write_table(table)


def main(port: str, command: str, table_dir: str, *rest: str) -> None:
    """Connect to the server on 127.0.0.1:PORT and run one command."""
    warnings.simplefilter("ignore", FutureWarning)  # pyspark's note about pandas 3
    from pyspark.sql import SparkSession

    spark = SparkSession.builder.remote(f"sc://127.0.0.1:{port}").getOrCreate()
    try:
        if command == "read":
            (out,) = rest
            _save(spark.read.format("iceberg").load(table_dir).toArrow(), out)
        elif command == "delete":
            where, out = rest
            quoted = table_dir.replace("`", "``")
            _save(spark.sql(f"DELETE FROM iceberg.`{quoted}` WHERE {where}").toArrow(), out)
        else:
            raise SystemExit(f"unknown command {command!r}")
    finally:
        spark.stop()


if __name__ == "__main__":
    main(*sys.argv[1:])
