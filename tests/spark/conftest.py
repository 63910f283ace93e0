"""What the tests of this folder share, one per module: the local Spark session
(``local[2]``: the executors are Python workers of their own, as on a cluster) and Iceberg
Java's reader."""

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


@pytest.fixture(scope="module")
def java(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """Iceberg Java 1.10.2 (tests/peers), stopped at the end."""
    from peers.iceberg_java import JavaPeer

    with JavaPeer(tmp_path_factory.mktemp("java")) as peer:
        yield peer
