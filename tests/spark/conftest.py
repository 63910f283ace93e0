"""The local Spark session the tests of this folder share, one per module (``local[2]``:
the executors are Python workers of their own, as on a cluster)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    pytest.importorskip("pyspark")
    import puffin.spark as ps

    try:
        ps.check_java()
    except ps.JavaNotFoundError as exc:
        pytest.skip(str(exc))
    session = ps.local_session("local[2]", memory="1g", shuffle_partitions=4)
    yield session
    session.stop()

