"""The provenance header (``provenance.header.enable``): where a copied record came from, and whether to copy it on.

Layout of the header ``__mirrorspark.provenance`` (version 1, big-endian, 38 to 46 bytes; ``docs/flows.md``)::

    0      version (1)                 1      hop count (uint8: 1 after the first copy)
    2-17   origin cluster id (16 bytes) 18-21 origin alias fingerprint
    22-25  origin topic fingerprint    26-29  origin partition (int32)
    30-37  origin offset (int64)       38-    0 to 2 path entries: fingerprints of the clusters passed through

A fingerprint of a name is the first 4 bytes of its UTF-8's SHA-256; a cluster's fingerprint is the first 4 bytes
of its 16-byte id (:func:`cluster_id_bytes`). Invariants (named by ``tests/unit/test_provenance_codec.py``):

- P1 an encoded value is version 1 and ``38 + 4 * len(path)`` bytes, at most :data:`MAX_SIZE` (46 <= 48).
- P2 :func:`decode` inverts :func:`encode`; any other length or version raises :class:`ProvenanceError`.
- P3 a record without the header gets a fresh one: origin the flow's source, the source topic, partition and
  offset, hop 1, no path (:func:`fresh_prefix` + the offset's 8 bytes).
- P4 a record is skipped (``None``) iff the flow's target is its origin or on its path.
- P5 otherwise its copy has hop + 1, and the source's fingerprint appended to the path iff the source is not the
  origin; a copy that needs a 3rd path entry raises :class:`ProvenanceError` (never copied silently).
- P6 :func:`restamped` keeps the user's headers in order, the very same values, and appends exactly one header
  of ours after them (wherever the record carried it); two of ours raise :class:`ProvenanceError`.
- P7 :func:`cluster_id_bytes` of a Kafka cluster id (22 characters of base64url, 16 bytes) is those 16 bytes;
  of any other text, the first 16 bytes of its UTF-8's SHA-256.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import itertools
import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final

from mirrorspark.errors import ConfigError, ProvenanceError

HEADER_NAME: Final = "__mirrorspark.provenance"
"""The header's name (mirrorspark's own, as MSK Replicator's ``__mskmr``)."""
VERSION: Final = 1
FIXED_SIZE: Final = 38
"""Bytes before the path."""
MAX_PATH: Final = 2
"""Most path entries: a record travels at most ``MAX_PATH + 1`` hops."""
MAX_SIZE: Final = FIXED_SIZE + 4 * MAX_PATH
"""Largest value (46 bytes)."""
MAX_HOPS: Final = MAX_PATH + 1

_FIXED = struct.Struct(">BB16s4s4siq")
FRESH: Final = struct.Struct(">30sq")
"""A fresh header's value: ``FRESH.pack(fresh_prefix(...), offset)`` (the hot path's one call per record)."""

Header = tuple[str, bytes | None]
"""One record header as confluent-kafka lists it."""


def fingerprint(name: str) -> bytes:
    """First 4 bytes of the SHA-256 of ``name``'s UTF-8 (an alias or topic name)."""
    return hashlib.sha256(name.encode()).digest()[:4]


def cluster_id_bytes(cluster_id: str) -> bytes:
    """Return a Kafka cluster id's 16 bytes (base64url of 16 bytes), else the first 16 of its SHA-256 (P7)."""
    if len(cluster_id) == 22:
        try:
            raw = base64.urlsafe_b64decode(cluster_id + "==")
        except (binascii.Error, ValueError):
            raw = b""
        if len(raw) == 16 and base64.urlsafe_b64encode(raw).decode().rstrip("=") == cluster_id:
            return raw
    return hashlib.sha256(cluster_id.encode()).digest()[:16]


@dataclass(frozen=True, slots=True)
class Provenance:
    """A decoded header: ``origin`` 16-byte cluster id, 4-byte fingerprints, ``path`` of 4-byte fingerprints."""

    hops: int
    origin: bytes
    alias: bytes
    topic: bytes
    partition: int
    offset: int
    path: tuple[bytes, ...] = ()


def encode(p: Provenance) -> bytes:
    """Return the header's value of ``p`` (P1); raises ProvenanceError for more than :data:`MAX_PATH` path entries."""
    if len(p.path) > MAX_PATH:
        raise ProvenanceError(f"a provenance header holds at most {MAX_PATH} path entries, not {len(p.path)}")
    fixed = _FIXED.pack(VERSION, p.hops, p.origin, p.alias, p.topic, p.partition, p.offset)
    return fixed + b"".join(p.path)


def decode(value: bytes | None) -> Provenance:
    """Decode a header's value (P2); raises ProvenanceError when its length or version is not version 1's."""
    size = len(value) if value is not None else -1
    if value is None or size < FIXED_SIZE or size > MAX_SIZE or (size - FIXED_SIZE) % 4 or value[0] != VERSION:
        shown = "no value" if value is None else f"{size} bytes starting {value[:2].hex() or '(empty)'}"
        raise ProvenanceError(
            f"header {HEADER_NAME} is corrupt ({shown}; version {VERSION} is {FIXED_SIZE} to {MAX_SIZE} bytes "
            f"starting 0{VERSION})"
        )
    _, hops, origin, alias, topic, partition, offset = _FIXED.unpack_from(value)
    path = tuple(value[i : i + 4] for i in range(FIXED_SIZE, size, 4))
    return Provenance(hops, origin, alias, topic, partition, offset, path)


@dataclass(frozen=True, slots=True)
class Hop:
    """One flow's copy step: its source's and target's 16-byte cluster ids (:func:`cluster_id_bytes`)."""

    source: bytes
    target: bytes


def fresh_prefix(origin: bytes, alias: str, topic: str, partition: int) -> bytes:
    """Return the first 30 bytes of a fresh header (P3): then the source offset, 8 big-endian bytes (:data:`FRESH`)."""
    return _FIXED.pack(VERSION, 1, origin, fingerprint(alias), fingerprint(topic), partition, 0)[:30]


def decide(value: bytes | None, hop: Hop) -> bytes | None:
    """Return the copy's header value for a record carrying ``value``, or ``None``: skip the record (P4, P5).

    Raises ProvenanceError when ``value`` is corrupt or the copy would need a 3rd path entry.
    """
    p = decode(value)
    target_fp = hop.target[:4]
    if p.origin == hop.target or target_fp in p.path:
        return None
    path = p.path if hop.source == p.origin else (*p.path, hop.source[:4])
    if len(path) > MAX_PATH:
        raise ProvenanceError(
            f"header {HEADER_NAME} shows {p.hops} hops already; a copy would be hop {p.hops + 1}, more than {MAX_HOPS}"
        )
    return _FIXED.pack(VERSION, p.hops + 1, p.origin, p.alias, p.topic, p.partition, p.offset) + b"".join(path)


def restamped(headers: Sequence[Header], fresh: bytes, hop: Hop) -> list[Header] | None:
    """Return the copy's headers (P6): the user's as they are, then ours (``fresh`` if none); ``None``: skip it.

    Raises ProvenanceError for a corrupt header of ours, two of them, or too many hops.
    """
    ours: list[Header] = []
    kept: list[Header] = []
    for h in headers:
        (ours if h[0] == HEADER_NAME else kept).append(h)
    if not ours:
        value: bytes | None = fresh
    elif len(ours) > 1:
        raise ProvenanceError(f"the record carries {len(ours)} headers {HEADER_NAME}, a copied record carries one")
    else:
        value = decide(ours[0][1], hop)
        if value is None:
            return None
    kept.append((HEADER_NAME, value))
    return kept


Edge = tuple[str, str]


def check_hop_bound(flows: Iterable[Edge], *, where: str = "the configuration") -> None:
    """Refuse header-on flows ``(source, target)`` along which a record could travel more than 3 hops.

    A record is never copied to a cluster it was on, so it travels simple paths; raises ConfigError naming one
    path of :data:`MAX_HOPS` + 1 flows.
    """
    adjacency: dict[str, list[str]] = {}
    for s, t in flows:
        adjacency.setdefault(s, []).append(t)

    def longer(path: list[str]) -> list[str] | None:
        if len(path) > MAX_HOPS + 1:
            return path
        for nxt in adjacency.get(path[-1], []):
            if nxt not in path and (found := longer([*path, nxt])):
                return found
        return None

    for start in sorted(adjacency):
        if path := longer([start]):
            names = ", ".join(f"{a}->{b}" for a, b in itertools.pairwise(path))
            raise ConfigError(
                f"{where}: with provenance.header.enable a record could travel the flows {names}: "
                f"{len(path) - 1} hops, and the provenance header records at most {MAX_HOPS}; turn the header "
                "off on one of these flows or shorten the chain (a record's own cluster ids are never on it twice)"
            )


def check_fingerprints(ids: dict[str, str]) -> None:
    """Refuse two clusters (alias -> Kafka cluster id) whose 4-byte fingerprints are equal; raises ConfigError."""
    seen: dict[bytes, tuple[str, str]] = {}
    for alias, cluster_id in sorted(ids.items()):
        fp = cluster_id_bytes(cluster_id)[:4]
        other = seen.setdefault(fp, (alias, cluster_id))
        if other[0] != alias:
            raise ConfigError(
                f"clusters '{other[0]}' (id {other[1]}) and '{alias}' (id {cluster_id}) have the same provenance "
                f"fingerprint {fp.hex()}: the provenance header could not tell them apart; turn "
                "provenance.header.enable off for their flows (or give one cluster a new cluster id)"
            )


__all__ = [
    "FIXED_SIZE",
    "FRESH",
    "HEADER_NAME",
    "MAX_HOPS",
    "MAX_PATH",
    "MAX_SIZE",
    "VERSION",
    "Hop",
    "Provenance",
    "check_fingerprints",
    "check_hop_bound",
    "cluster_id_bytes",
    "decide",
    "decode",
    "encode",
    "fingerprint",
    "fresh_prefix",
    "restamped",
]
