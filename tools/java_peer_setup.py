"""Assemble the Iceberg Java peer's jars in ``.venv-java/jars`` (run by ``make peers``).

Three jars beside pyspark 3.5.9's own (docs/interop.md, "Iceberg Java"):

* ``iceberg-spark-runtime-3.5_2.12-1.10.2.jar`` from PyPI's ``snowpark-connect-deps-iceberg``
  (the only offline source of Iceberg Java 1.10 here), with its extensions;
* ``iceberg-jackson-relocated.jar``: that runtime jar lacks its shaded Jackson, so pyspark's
  Jackson 2.15.2 is relocated to ``org.apache.iceberg.shaded.com.fasterxml.jackson``
  (:mod:`tools.relocate_jar`);
* ``sqlite-jdbc.jar``, for Java's ``JdbcCatalog`` on the ``catalog.db`` that pyiceberg and
  puffin share: Debian's ``libxerial-sqlite-jdbc-java``, installed with ``apt-get`` when it is
  missing and this runs as root. Without it the peer still reads tables by metadata file;
  tests that need the shared catalog say what to install.

Usage: ``python tools/java_peer_setup.py VENV``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tools.relocate_jar import relocate_jars

RUNTIME = "iceberg-spark-runtime-3.5_2.12-1.10.2.jar"
JACKSON = ("jackson-core-2.15.2.jar", "jackson-databind-2.15.2.jar",
           "jackson-annotations-2.15.2.jar")
SHADED = "org.apache.iceberg.shaded.com.fasterxml.jackson"
SQLITE_JDBC = Path("/usr/share/java/sqlite-jdbc.jar")
SQLITE_PACKAGE = "libxerial-sqlite-jdbc-java"


def _site_packages(venv: Path) -> Path:
    found = sorted(venv.glob("lib/python3*/site-packages"))
    if not found:
        raise SystemExit(f"{venv} has no site-packages: build the venv first")
    return found[0]


def _sqlite_jdbc() -> Path | None:
    """Debian's SQLite JDBC driver, installed here if it can be; None with a message if not."""
    if SQLITE_JDBC.is_file():
        return SQLITE_JDBC
    if shutil.which("apt-get") is None or os.geteuid() != 0:
        print(f"java peer: {SQLITE_JDBC} is missing and cannot be installed here (needs root "
              f"and apt-get): `apt-get install {SQLITE_PACKAGE}`; Java's JdbcCatalog tests "
              "will skip", file=sys.stderr)
        return None
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    done = subprocess.run(["apt-get", "install", "-y", "-q", SQLITE_PACKAGE], env=env,
                          capture_output=True, text=True, check=False)
    if done.returncode != 0 or not SQLITE_JDBC.is_file():
        print(f"java peer: apt-get install {SQLITE_PACKAGE} failed: "
              f"{done.stderr.strip()[-500:]}", file=sys.stderr)
        return None
    return SQLITE_JDBC


def main(venv: Path) -> int:
    site = _site_packages(venv)
    out = venv / "jars"
    out.mkdir(exist_ok=True)
    runtime = site / "snowpark_connect_deps_iceberg" / "jars" / RUNTIME
    if not runtime.is_file():
        raise SystemExit(f"{runtime} is missing: is snowpark-connect-deps-iceberg installed?")
    shutil.copyfile(runtime, out / RUNTIME)
    jackson = [site / "pyspark" / "jars" / name for name in JACKSON]
    count = relocate_jars(out / "iceberg-jackson-relocated.jar", "com.fasterxml.jackson",
                          SHADED, jackson)
    print(f"java peer: relocated {count} Jackson classes to {SHADED}")
    sqlite = _sqlite_jdbc()
    if sqlite is not None:
        shutil.copyfile(sqlite, out / "sqlite-jdbc.jar")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    sys.exit(main(Path(sys.argv[1])))
