"""The JVM peer: datasketches-java and RoaringBitmap from the jars pyspark ships.

``ConformanceAdapter.java`` (beside this module) is compiled with ``javac`` into a temporary
directory on first use, with pyspark's ``jars/`` folder as the classpath, and run as a
JSON-lines adapter.  It needs a JDK (``javac``) and pyspark installed.
"""

from __future__ import annotations

import atexit
import shutil
import subprocess
import tempfile
from pathlib import Path

from puffin.conformance.adapters._base import Adapter
from puffin.errors import MissingDependencyError, SetupError

__all__ = ["java_adapter"]

_SOURCE = Path(__file__).resolve().parent / "java" / "ConformanceAdapter.java"


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


def java_adapter() -> Adapter:
    """Compile the Java adapter in a temporary directory and start it."""
    from puffin.conformance.adapters._process import ProcessAdapter

    javac, java = shutil.which("javac"), shutil.which("java")
    if javac is None or java is None:
        raise SetupError("the java adapter needs a JDK: javac and java on PATH")
    classpath = f"{_jars()}/*"
    build = Path(tempfile.mkdtemp(prefix="puffin-conformance-java-"))
    atexit.register(shutil.rmtree, build, True)
    done = subprocess.run(
        [javac, "-nowarn", "-d", str(build), "-cp", classpath, str(_SOURCE)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SetupError(f"javac failed: {done.stderr.strip()[:2000]}")
    command = [java, "-Xmx1g", "-cp", f"{build}:{classpath}", "ConformanceAdapter"]
    return ProcessAdapter(command, quiet=True)
