"""The JVM peers: datasketches-java and RoaringBitmap from pyspark's jars, and Iceberg Java.

``ConformanceAdapter.java`` (beside this module) is compiled with ``javac`` into a temporary
directory on first use, with pyspark's ``jars/`` folder as the classpath, and run as a
JSON-lines adapter.  It needs a JDK (``javac``) and pyspark installed.

``IcebergConformanceAdapter.java`` runs Iceberg Java 1.10.2 itself, from the side venv
``.venv-java`` that ``make peers`` builds (the Iceberg runtime jar, the relocated Jackson it
needs, pyspark 3.5.9's jars), named by ``PUFFIN_JAVA_PYTHON`` like the other side venvs.
"""

from __future__ import annotations

import atexit
import shutil
import subprocess
import tempfile
from pathlib import Path

from puffin.conformance.adapters._base import Adapter
from puffin.errors import MissingDependencyError, SetupError

__all__ = ["iceberg_java_adapter", "java_adapter"]

_HERE = Path(__file__).resolve().parent / "java"
_SOURCE = _HERE / "ConformanceAdapter.java"


def _jars() -> Path:
    try:
        import pyspark
    except ImportError as exc:
        raise MissingDependencyError(
            "the java adapter uses pyspark's jars: pip install 'iceberg-puffin[spark]'"
        ) from exc
    jars = Path(pyspark.__file__).resolve().parent / "jars"
    if not jars.is_dir():
        raise SetupError(f"pyspark has no jars folder at {jars}")
    return jars


def _compile(source: Path, classpath: str) -> Path:
    """``source`` compiled into a temporary folder removed at exit."""
    javac = shutil.which("javac")
    if javac is None or shutil.which("java") is None:
        raise SetupError("the java adapters need a JDK: javac and java on PATH")
    build = Path(tempfile.mkdtemp(prefix="puffin-conformance-java-"))
    atexit.register(shutil.rmtree, build, True)
    done = subprocess.run(
        [javac, "-nowarn", "-d", str(build), "-cp", classpath, str(source)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SetupError(f"javac failed: {done.stderr.strip()[:2000]}")
    return build


def java_adapter() -> Adapter:
    """Compile the datasketches-java/RoaringBitmap adapter in a temporary folder and start it."""
    from puffin.conformance.adapters._process import ProcessAdapter

    classpath = f"{_jars()}/*"
    build = _compile(_SOURCE, classpath)
    command = ["java", "-Xmx1g", "-cp", f"{build}:{classpath}", "ConformanceAdapter"]
    return ProcessAdapter(command, quiet=True)


def _iceberg_classpath() -> str:
    from puffin.conformance.adapters._side import side_python

    python = side_python(
        ".venv-java", "PUFFIN_JAVA_PYTHON",
        "pyspark 3.5.9, snowpark-connect-deps-iceberg 1.0.3 and the jars of "
        "tools/java_peer_setup.py in its jars/ folder",
    )
    venv = python.parent.parent  # not resolved: bin/python links to the base interpreter
    pyspark = sorted(venv.glob("lib/python3*/site-packages/pyspark/jars"))
    if not (venv / "jars" / ".stamp").is_file() or not pyspark:
        raise SetupError(f"{venv} has no Iceberg jars: run `make peers`")
    return f"{venv / 'jars'}/*:{pyspark[0]}/*"


def iceberg_java_adapter() -> Adapter:
    """Compile the Iceberg Java adapter against ``.venv-java``'s jars and start it."""
    from puffin.conformance.adapters._process import ProcessAdapter

    classpath = _iceberg_classpath()
    build = _compile(_HERE / "IcebergConformanceAdapter.java", classpath)
    command = ["java", "-Xmx1g", "-cp", f"{build}:{classpath}", "IcebergConformanceAdapter"]
    return ProcessAdapter(command, quiet=True)
