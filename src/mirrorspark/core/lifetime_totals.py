"""A flow's lifetime totals and published state: the records of ``mm2-progress.<source>.internal`` (no I/O).

Kafka itself cannot say how many bytes a replicator copied, so every running flow publishes, per
replicated topic, its cumulative records and bytes copied to a compacted internal topic on its
target, the **lifetime totals** topic ``mm2-progress.<source>.internal`` (an MM2-internal name:
never replicated; named by :func:`~mirrorspark.mm2.internal_topics.mirrorspark_topic`, with the flow
policy's internal separator, like the control topic). Totals continue across restarts: at start a
flow reads its last published totals and adds to them. (The *progress channel*,
``mm2-task-progress.<source>.internal``, is another topic: :mod:`mirrorspark.core.progress_records`.)

Record layout (compact JSON, UTF-8):

* key ``{"flow":"A->B","topic":"t1"}``
* value ``{"records":<n>,"value_bytes":<n>,"key_bytes":<n>,"timestamp":<epoch ms>,"dropped":<n>}``
  (``dropped``: records read and dropped by a transform, written only when not 0; absent = 0), and for a flow
  that replicates schemas ``"schema_hits"``, ``"schema_misses"``, ``"schema_unknown"``: records whose schema id
  was translated from a task's id cache, translated after asking the registries, or unknown to the source
  registry and copied unchanged (each written only when not 0; absent = 0)

and one flow-state record per flow, written by the driver when a flow starts running and when it
gives up on it (``status`` shows ``failed`` and the error until the flow runs again):

* key ``{"flow":"A->B"}``
* value ``{"state":"running"|"failed","error":<text or null>,"timestamp":<epoch ms>}``
"""

from __future__ import annotations

import json
from dataclasses import dataclass


@dataclass(frozen=True)
class TopicTotals:
    """Cumulative copy totals of one topic of a flow (counts in records, bytes, ``timestamp_ms`` in epoch ms)."""

    records: int
    value_bytes: int
    key_bytes: int
    timestamp_ms: int
    dropped: int = 0
    schema_hits: int = 0
    schema_misses: int = 0
    schema_unknown: int = 0


_OPTIONAL = ("dropped", "schema_hits", "schema_misses", "schema_unknown")
"""Totals written only when not 0 (absent = 0): the layout of older versions for flows without them."""


def encode_totals(flow: str, topic: str, p: TopicTotals) -> tuple[bytes, bytes]:
    """Key and value bytes of a topic's totals record."""
    key = json.dumps({"flow": flow, "topic": topic}, separators=(",", ":"), ensure_ascii=False).encode()
    fields: dict[str, int] = {
        "records": p.records,
        "value_bytes": p.value_bytes,
        "key_bytes": p.key_bytes,
        "timestamp": p.timestamp_ms,
    }
    for f in _OPTIONAL:  # only flows whose transforms dropped records, or that translate schema ids
        if n := getattr(p, f):
            fields[f] = n
    value = json.dumps(fields, separators=(",", ":")).encode()
    return key, value


def decode_totals(key: bytes | None, value: bytes | None) -> tuple[str, str, TopicTotals] | None:
    """``(flow, topic, totals)`` of a topic's totals record, or ``None`` if it is not one (or a tombstone).

    A record whose totals are not non-negative integers (e.g. ``Infinity``, ``-5``, ``1.5``) is not one.
    """
    if key is None or value is None:
        return None
    try:
        k, v = json.loads(key), json.loads(value)
        if not isinstance(k, dict) or not isinstance(v, dict):
            return None
        totals = [v["records"], v["value_bytes"], v["key_bytes"], v["timestamp"], *(v.get(f, 0) for f in _OPTIONAL)]
        if not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in totals):
            return None
        return str(k["flow"]), str(k["topic"]), TopicTotals(*totals)
    except (ValueError, KeyError, TypeError, RecursionError):  # RecursionError: absurdly deep nesting
        return None


FLOW_STATES = ("running", "failed", "caught up", "stopped")
"""The states a flow-state record holds (:class:`FlowState`)."""


@dataclass(frozen=True)
class FlowState:
    """The last state a mirrorspark run published for a flow."""

    state: str
    error: str | None
    timestamp_ms: int


def encode_flow_state(flow: str, state: FlowState) -> tuple[bytes, bytes]:
    """Key and value bytes of a flow-state record."""
    key = json.dumps({"flow": flow}, separators=(",", ":"), ensure_ascii=False).encode()
    value = json.dumps(
        {"state": state.state, "error": state.error, "timestamp": state.timestamp_ms}, separators=(",", ":")
    ).encode()
    return key, value


def decode_flow_state(key: bytes | None, value: bytes | None) -> tuple[str, FlowState] | None:
    """``(flow, state)`` of a flow-state record, or ``None`` if it is not one (a topic's totals, a tombstone, junk)."""
    if key is None or value is None:
        return None
    try:
        k, v = json.loads(key), json.loads(value)
        if not isinstance(k, dict) or set(k) != {"flow"} or not isinstance(v, dict):
            return None
        state, error, ts = v["state"], v.get("error"), v["timestamp"]
        if state not in FLOW_STATES or not (error is None or isinstance(error, str)):
            return None
        if not isinstance(ts, int) or isinstance(ts, bool) or ts < 0:
            return None
        return str(k["flow"]), FlowState(state, error, ts)
    except (ValueError, KeyError, TypeError, RecursionError):
        return None


__all__ = [
    "FLOW_STATES",
    "FlowState",
    "TopicTotals",
    "decode_flow_state",
    "decode_totals",
    "encode_flow_state",
    "encode_totals",
]
