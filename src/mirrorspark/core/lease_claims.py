"""The lease topic's records: who took a flow's lease, and the epoch a claim grants (no I/O).

One active instance per flow (:class:`~mirrorspark.replication.worker.lease.FlowLease`): every time an
instance takes a flow's lease it writes a **claim** to the lease topic ``mm2-lease.<source>.internal``
on the target; the claim's offset + 1 is the **epoch** of that holding (strictly increasing across
take-overs). mirrorspark's own format, compact JSON.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Final

LEASE_PREFIX: Final = "mm2-lease"
"""Prefix of the lease topic (:attr:`~mirrorspark.config.internal_topics.InternalTopics.lease`)."""


@dataclass(frozen=True)
class LeaseClaim:
    """What a new holder writes to the lease topic when it takes the lease."""

    flow: str
    holder: str
    member_id: str
    timestamp_ms: int


def encode_claim(claim: LeaseClaim) -> tuple[bytes, bytes]:
    """Key and value bytes of a claim record (compact JSON, UTF-8)."""
    key = json.dumps({"flow": claim.flow}, separators=(",", ":"), ensure_ascii=False).encode()
    value = json.dumps(
        {"holder": claim.holder, "member_id": claim.member_id, "timestamp": claim.timestamp_ms},
        separators=(",", ":"),
        ensure_ascii=False,
    ).encode()
    return key, value


def decode_claim(key: bytes | None, value: bytes | None) -> LeaseClaim | None:
    """Decode a claim record: the claim it holds, or ``None`` if it is not one (or a tombstone)."""
    if key is None or value is None:
        return None
    try:
        k, v = json.loads(key), json.loads(value)
        if not isinstance(k, dict) or not isinstance(v, dict):
            return None
        flow, holder, member, ts = k["flow"], v["holder"], v["member_id"], v["timestamp"]
        if not all(isinstance(s, str) for s in (flow, holder, member)):
            return None
        if not isinstance(ts, int) or isinstance(ts, bool) or ts < 0:
            return None
        return LeaseClaim(flow, holder, member, ts)
    except (ValueError, KeyError, TypeError, RecursionError):
        return None


def claim_epoch(offset: int) -> int:
    """Epoch of the holding whose claim record was written at ``offset``: ``offset + 1`` (0 means "never held")."""
    return offset + 1


def permission_hint(kafka_code: str | None, *, group: str, topic: str, cluster: str) -> str:
    """Return what to grant when the lease consumer stopped on an authorization error (docs/security.md's ACL table)."""
    if kafka_code == "GROUP_AUTHORIZATION_FAILED":
        what = f"READ on group '{group}'"
    elif kafka_code == "TOPIC_AUTHORIZATION_FAILED":
        what = f"READ on topic '{topic}'"
    else:
        return ""
    return (
        f": grant the replication principal {what} on cluster '{cluster}' (the flow's lease: "
        "one active instance per flow; see docs/security.md, ACLs)"
    )


__all__ = [
    "LEASE_PREFIX",
    "LeaseClaim",
    "claim_epoch",
    "decode_claim",
    "encode_claim",
    "permission_hint",
]
