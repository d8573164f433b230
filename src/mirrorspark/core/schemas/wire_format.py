"""Confluent's wire format: a zero magic byte, the schema's 4-byte big-endian id, then the payload.

The id is the schema's id in the registry the producer used (unsigned here, as ``confluent_kafka`` reads it;
Confluent's registries assign ids from 1). What follows the id is kept byte for byte and never parsed: for
Protobuf it starts with the message indexes, which therefore stay untouched.

Not in wire format, and passed on unchanged: ``None`` (a tombstone or no key), fewer than 5 bytes, or a first
byte other than 0. A payload of another format that happens to start with a zero byte and has 5 bytes or more
(a big-endian integer key, say) cannot be told apart; like Confluent's deserializers, it is read as wire format.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Final, NamedTuple

MAGIC_BYTE: Final = 0
"""First byte of a payload in Confluent's wire format."""

HEADER_SIZE: Final = 5
"""Bytes before the payload: the magic byte and the 4-byte schema id."""

MAX_SCHEMA_ID: Final = 2**32 - 1
"""Largest id the 4 bytes hold (read unsigned)."""

SchemaIdLookup = Callable[[int], int | None]
"""Gives the target's id for a source schema id, or ``None`` to keep the id as it is."""

_ID: Final = struct.Struct(">I")
_MAGIC: Final = bytes([MAGIC_BYTE])


class WireFormat(NamedTuple):
    """A payload in wire format split at the id: ``schema_id`` and ``rest``, every byte after the id."""

    schema_id: int
    rest: bytes


def schema_id(data: bytes | None) -> int | None:
    """Return the schema id of ``data`` in wire format, or ``None`` when it is not in wire format."""
    if data is None or len(data) < HEADER_SIZE or data[0] != MAGIC_BYTE:
        return None
    found: int = _ID.unpack_from(data, 1)[0]
    return found


def parse(data: bytes | None) -> WireFormat | None:
    """Split ``data`` into its schema id and the bytes after it, or return ``None`` when it is not in wire format."""
    found = schema_id(data)
    if found is None or data is None:
        return None
    return WireFormat(found, bytes(data[HEADER_SIZE:]))


def with_schema_id(data: bytes, new_id: int) -> bytes:
    """Return ``data`` with its schema id replaced by ``new_id``: every other byte identical.

    Raises
    ------
    ValueError
        ``data`` is not in wire format, or ``new_id`` is outside 0..:data:`MAX_SCHEMA_ID`.
    """
    if schema_id(data) is None:
        raise ValueError(f"not in Confluent's wire format (magic byte 0, then a 4-byte id): {bytes(data[:5])!r}")
    if not 0 <= new_id <= MAX_SCHEMA_ID:
        raise ValueError(f"schema id {new_id} does not fit in 4 bytes (0..{MAX_SCHEMA_ID})")
    return b"".join((_MAGIC, _ID.pack(new_id), memoryview(data)[HEADER_SIZE:]))


def replace_schema_id(data: bytes | None, target_id: SchemaIdLookup) -> bytes | None:
    """Return ``data`` with its id replaced by ``target_id(id)``; ``data`` itself when not in wire format.

    ``target_id`` is called only for data in wire format; whatever it raises (an unknown id) propagates, and a
    returned ``None`` keeps ``data`` unchanged (the id is copied as it is).
    """
    found = schema_id(data)
    if found is None or data is None:
        return data
    new_id = target_id(found)
    if new_id is None or new_id == found:
        return data
    return with_schema_id(data, new_id)


__all__ = [
    "HEADER_SIZE",
    "MAGIC_BYTE",
    "MAX_SCHEMA_ID",
    "SchemaIdLookup",
    "WireFormat",
    "parse",
    "replace_schema_id",
    "schema_id",
    "with_schema_id",
]
