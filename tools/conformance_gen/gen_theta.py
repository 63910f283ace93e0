"""Theta tier: values of every Iceberg primitive type -> single-value bytes -> sketch, in
exact and estimation mode; serialized sketches to read (v3 and compressed v4); invalid
sketches; and ``ndv`` properties, including the Java-formula boundary."""

from __future__ import annotations

import decimal
import math
import random
import struct
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import puffin
from puffin.conformance.adapters._base import python_values, theta_result
from tools.conformance_gen.corpus import Vector

__all__ = ["TYPES", "sketch_result", "theta_vectors"]

_TIER = "theta"
_I32 = 1 << 31
_I64 = 1 << 63


def _float_json(v: float) -> float | str:
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "Infinity" if v > 0 else "-Infinity"
    return v


def _f32(rng: random.Random) -> float:
    return float(struct.unpack("<f", struct.pack("<f", rng.uniform(-1e6, 1e6)))[0])


def _decimal(scale: int, digits: int) -> Callable[[random.Random], str]:
    def make(rng: random.Random) -> str:
        unscaled = rng.randrange(-(10**digits) + 1, 10**digits)
        return str(decimal.Decimal(unscaled).scaleb(-scale))

    return make


_Gen = Callable[[random.Random], Any]
#: type -> (edge values, a random value)
TYPES: dict[str, tuple[list[Any], _Gen]] = {
    "boolean": ([True, False], lambda r: r.random() < 0.5),
    "int": ([-_I32, _I32 - 1, 0, -1, 1], lambda r: r.randrange(-_I32, _I32)),
    "long": ([-_I64, _I64 - 1, 0, -1, 34], lambda r: r.randrange(-_I64, _I64)),
    "float": ([0.0, -0.0, 1.0, "NaN", "Infinity", "-Infinity"], _f32),
    "double": (
        [0.0, -0.0, 1.0, "NaN", "Infinity", "-Infinity", 5e-324],
        lambda r: r.uniform(-1e12, 1e12),
    ),
    "decimal(9,2)": (["14.20", "-0.01", "0.00", "9999999.99"], _decimal(2, 9)),
    "decimal(38,10)": (
        ["-1.0000000000", "9999999999999999999999999999.9999999999"],
        _decimal(10, 38),
    ),
    "date": ([0, -1, 17486, -719162], lambda r: r.randrange(-719162, 2932896)),
    "time": ([0, 86_399_999_999, 81_068_000_000], lambda r: r.randrange(86_400_000_000)),
    "timestamp": ([0, -1, 1_510_871_468_000_000], lambda r: r.randrange(-(1 << 60), 1 << 60)),
    "timestamptz": ([0, 1_510_871_468_000_000], lambda r: r.randrange(-(1 << 60), 1 << 60)),
    "timestamp_ns": (
        [0, -1, 1_510_871_468_000_000_123],
        lambda r: r.randrange(-(1 << 62), 1 << 62),
    ),
    "timestamptz_ns": ([0, 1_510_871_468_000_000_123], lambda r: r.randrange(-(1 << 62), 1 << 62)),
    "string": (
        ["", "iceberg", "日本語", "🐧", "a\u0000b"],
        lambda r: "".join(
            r.choice("abcdefghijklmnopqrstuvwxyzé") for _ in range(r.randrange(1, 12))
        ),
    ),
    "uuid": (
        ["f79c3e09-677c-4bbd-a479-3f349cb785e7", "00000000-0000-0000-0000-000000000000"],
        lambda r: str(uuid.UUID(int=r.getrandbits(128))),
    ),
    "fixed[4]": (["00010203", "ffffffff"], lambda r: r.getrandbits(32).to_bytes(4, "big").hex()),
    "binary": (
        ["", "00010203", "ff"],
        lambda r: bytes(r.getrandbits(8) for _ in range(r.randrange(1, 9))).hex(),
    ),
}


def _values(kind: str, count: int, seed: int, *, edges: bool = True) -> list[Any]:
    base, make = TYPES[kind]
    rng = random.Random(f"{kind}/{seed}")
    out = list(base) if edges else []
    seen = {repr(v) for v in out}
    attempts = 0
    while len(out) < count and attempts < 50 * count:
        attempts += 1
        value = make(rng)
        value = _float_json(value) if isinstance(value, float) else value
        if repr(value) not in seen:
            seen.add(repr(value))
            out.append(value)
    return out[:count] if not edges else out


def sketch_result(sketch: puffin.ThetaSketch) -> dict[str, Any]:
    return theta_result(
        sketch.num_retained, sketch.theta64, sketch.estimate, [int(h) for h in sketch.hashes]
    )


def _build(kind: str, values: list[Any], lg_k: int) -> tuple[dict[str, Any], puffin.ThetaSketch]:
    py = python_values(kind, values)
    singles = [puffin.serialize_value(v, kind).hex() for v in py]
    sketch = puffin.ThetaSketch.from_values(py, kind, lg_k=lg_k, threads=1)
    return {"type": kind, "lg-k": lg_k, "values": values, "single-values": singles}, sketch


def _safe(kind: str) -> str:
    return (
        kind.replace("(", "-").replace(")", "").replace(",", "-").replace("[", "-").replace("]", "")
    )


def _type_vectors() -> Iterator[Vector]:
    for kind in TYPES:
        cases = [
            ("exact", _values(kind, 12, 1), 12),
            ("single", _values(kind, 1, 2, edges=False), 12),
            ("duplicates", _values(kind, 6, 3) * 3, 12),
        ]
        if kind != "boolean":
            cases.append(("estimation", _values(kind, 120, 4, edges=False), 5))
        for mode, values, lg_k in cases:
            name = f"{_safe(kind)}-{mode}"
            args, sketch = _build(kind, values, lg_k)
            expected = {"single-values": args["single-values"], "sketch": sketch_result(sketch)}
            yield Vector(
                _TIER,
                f"build-{name}",
                "build-theta",
                "theta",
                f"{kind}: {len(values)} values, lg_k {lg_k}, {mode}",
                {"result": expected},
                args=args,
            )
            yield from _read_vectors(name, sketch)
    for kind, count in (("long", 4500),):
        args, sketch = _build(kind, _values(kind, count, 5, edges=False), 12)
        expected = {"single-values": args["single-values"], "sketch": sketch_result(sketch)}
        yield Vector(
            _TIER,
            f"build-{kind}-lgk12-estimation",
            "build-theta",
            "theta",
            f"{kind}: {count} values with Iceberg's k = 4096: estimation mode",
            {"result": expected},
            args=args,
        )


def _read_vectors(name: str, sketch: puffin.ThetaSketch) -> Iterator[Vector]:
    v3 = sketch.serialize()
    result = {"result": sketch_result(sketch)}
    yield Vector(
        _TIER,
        f"read-{name}-v3",
        "read-theta",
        "theta-compact",
        "compact ordered sketch, serial version 3",
        result,
        inputs={f"{name}-v3.bin": v3},
    )
    v4 = sketch.serialize(compressed=True)
    if v4 != v3:
        yield Vector(
            _TIER,
            f"read-{name}-v4",
            "read-theta",
            "theta-compact",
            "compressed compact sketch, serial version 4",
            result,
            inputs={f"{name}-v4.bin": v4},
        )


def theta_vectors() -> Iterator[Vector]:
    """The value-to-sketch vectors (the rule vectors: :mod:`.gen_theta_bad`)."""
    yield from _type_vectors()
    empty = puffin.ThetaSketch.from_values([], "long")
    yield Vector(
        _TIER,
        "read-empty",
        "read-theta",
        "theta-compact",
        "the empty sketch as Java writes it (seed hash 0)",
        {"result": sketch_result(empty)},
        inputs={"empty.bin": empty.serialize()},
    )
