"""Whole-array NumPy steps shared by the column converters (no Python call per value)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:  # pragma: no cover
    from numpy.typing import NDArray

#: NumPy's NaT as an int64: the smallest int64.
NAT = np.iinfo(np.int64).min

_UUID_HEX = np.full(256, 255, dtype=np.uint8)
for _i, _c in enumerate(b"0123456789abcdef"):
    _UUID_HEX[_c] = _i
for _i, _c in enumerate(b"ABCDEF"):
    _UUID_HEX[_c] = 10 + _i
_UUID_DIGITS = np.array([i for i in range(36) if i not in (8, 13, 18, 23)])
_UUID_DASHES = [8, 13, 18, 23]


def checked_int_cast(
    values: NDArray[Any], dtype: str, valid: NDArray[np.bool_] | None, what: str
) -> NDArray[Any]:
    """Cast integers to ``dtype``, refusing (non-null) values that do not fit."""
    values = np.asarray(values)
    if values.dtype.kind == "b":
        raise TypeError(f"{what} expects integers, not booleans")
    if values.dtype.kind not in "iu":
        raise TypeError(f"{what} expects integers, got dtype {values.dtype}")
    target = np.dtype(dtype)
    if np.can_cast(values.dtype, target, casting="safe"):
        return values.astype(target, copy=False)
    info = np.iinfo(target)
    check = values if valid is None else values[valid]
    if check.size and (check.min() < info.min or check.max() > info.max):
        raise ValueError(f"values out of range for {what}")
    return values.astype(target)


def time_units(
    values: NDArray[Any], unit: str, valid: NDArray[np.bool_] | None, what: str
) -> tuple[NDArray[np.int64], NDArray[np.bool_] | None]:
    """datetime64/timedelta64 values as int64 counts of ``unit``; NaT becomes null."""
    if values.size and int(values.view(np.int64).min()) == NAT:  # NaT is the smallest int64
        nat = np.isnat(values)
        valid = ~nat if valid is None else valid & ~nat
    src = values.dtype
    kind = "datetime64" if src.kind == "M" else "timedelta64"
    target = np.dtype(f"{kind}[{unit}]")
    src_unit, _ = np.datetime_data(src)
    if src_unit == unit:
        return values.view(np.int64), valid
    raw = values.view(np.int64)
    if valid is not None:
        raw = np.where(valid, raw, 0)
    safe = raw.view(src)
    if unit == "D":
        # The day an instant falls on (UTC), as NumPy floors datetimes to days.
        return safe.astype(target).view(np.int64), valid
    converted = safe.astype(target)
    back = converted.astype(src)  # a lost fraction or a wrapped value does not come back
    if np.any(back != safe):
        raise ValueError(
            f"{what} holds {unit} units: converting {src_unit} values would lose precision"
        )
    return converted.view(np.int64), valid


def canonical_nan(
    values: NDArray[Any], nan_bits: int, itype: type[np.unsignedinteger[Any]]
) -> NDArray[Any]:
    """Little-endian IEEE values with every NaN replaced by Java's canonical NaN."""
    bits = values.view(itype)
    if values.size and np.isnan(values.max()):  # max is NaN iff a NaN is present: one pass
        bits = np.where(np.isnan(values), itype(nan_bits), bits)
    return bits.astype(np.dtype(itype).newbyteorder("<"), copy=False)


def decimal_rows_le16(le: NDArray[np.uint8]) -> tuple[NDArray[np.uint8], NDArray[np.int64]]:
    """Minimal big-endian two's complement of 128-bit little-endian rows ``(n, 16)``."""
    n = le.shape[0]
    be = le[:, ::-1]
    sign = be[:, 0] >> 7
    sign_byte = (sign * np.uint8(0xFF)).astype(np.uint8)
    # A leading byte is redundant when it only repeats the sign and the next byte keeps it.
    redundant = (be[:, :15] == sign_byte[:, None]) & ((be[:, 1:] >> 7) == sign[:, None])
    lead = np.argmin(redundant, axis=1)
    lead[redundant.all(axis=1)] = 15
    keep = np.arange(16)[None, :] >= lead[:, None]
    data = np.ascontiguousarray(be)[keep]
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(16 - lead, out=offsets[1:])
    return data, offsets


def int64_to_le16(v: NDArray[np.int64]) -> NDArray[np.uint8]:
    """int64 values sign-extended to 128-bit little-endian rows ``(n, 16)``."""
    lanes = np.empty((v.shape[0], 2), dtype="<u8")
    lanes[:, 0] = v.view(np.uint64)
    lanes[:, 1] = (v >> 63).view(np.uint64)
    return lanes.view(np.uint8).reshape(-1, 16)


def gather_rows(data: NDArray[np.uint8], starts: NDArray[Any], width: int) -> NDArray[np.uint8]:
    """``width`` bytes from each start (clamped at the end: callers check lengths first)."""
    idx = starts.astype(np.int64)[:, None] + np.arange(width)[None, :]
    if data.shape[0] == 0:
        return np.zeros((starts.shape[0], width), np.uint8)
    rows: NDArray[np.uint8] = data[np.minimum(idx, data.shape[0] - 1)]
    return rows


def canonical_uuid_rows(
    data: NDArray[np.uint8], offsets: NDArray[Any], valid: NDArray[np.bool_] | None
) -> NDArray[np.uint8] | None:
    """16-byte rows of UUID strings all in the canonical 36-character form, else ``None``.

    Decoded with table lookups; the caller falls back to :class:`uuid.UUID` for the other
    spellings (braces, ``urn:uuid:``, no dashes).  Null rows are ignored.
    """
    n = offsets.shape[0] - 1
    lengths = np.diff(offsets.astype(np.int64))
    is_null = np.zeros(n, np.bool_) if valid is None else ~valid
    if not n or not np.all((lengths == 36) | is_null):
        return None
    chars = gather_rows(data, offsets[:-1], 36)
    nib = _UUID_HEX[chars[:, _UUID_DIGITS]]
    bad = (nib == 255).any(axis=1) | (chars[:, _UUID_DASHES] != ord("-")).any(axis=1)
    if (bad & ~is_null).any():
        return None
    rows: NDArray[np.uint8] = ((nib[:, 0::2] << 4) | nib[:, 1::2]).astype(np.uint8, copy=False)
    return rows
