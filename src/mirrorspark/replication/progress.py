"""Lifetime progress of a flow, kept in Kafka so that ``mirrorspark status`` can report it.

Kafka itself cannot say how many bytes a replicator copied, so every running
flow publishes, per replicated topic, its cumulative records and bytes copied
to a compacted internal topic on its target: ``mm2-progress.<source>.internal``
(an MM2-internal name: never replicated; named by
:func:`mirrorspark.mm2.internal_topics.mirrorspark_topic`, with the flow policy's internal
separator, like the control topic). Totals continue across restarts: at
start a flow reads its last published totals and adds to them.

Record layout (compact JSON, UTF-8):

* key ``{"flow":"A->B","topic":"t1"}``
* value ``{"records":<n>,"value_bytes":<n>,"key_bytes":<n>,"timestamp":<epoch ms>,"dropped":<n>}``
  (``dropped``: records read and dropped by a transform, written only when not 0; absent = 0)

and one flow-state record per flow, written by the continuous engine when a flow starts running
and when it gives up on it (``status`` shows ``failed`` and the error until the flow runs again):

* key ``{"flow":"A->B"}``
* value ``{"state":"running"|"failed","error":<text or null>,"timestamp":<epoch ms>}``
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mirrorspark.config.model import ClientSettings
from mirrorspark.errors import ClusterError
from mirrorspark.kafka.delivery import Outgoing, deliver
from mirrorspark.kafka.factory import ClientFactory
from mirrorspark.kafka.reader import read_topic
from mirrorspark.mm2.internal_topics import PROGRESS_PREFIX, mirrorspark_topic
from mirrorspark.mm2.policy import ReplicationPolicy

if TYPE_CHECKING:
    from mirrorspark.replication.flow import Flow

log = logging.getLogger(__name__)

PUBLISH_TIMEOUT_S = 10.0
"""Seconds one :meth:`ProgressPublisher.publish` waits for its writes to be acknowledged (retries included)."""


@dataclass(frozen=True)
class TopicProgress:
    """Cumulative copy totals of one topic of a flow.

    Attributes
    ----------
    records:
        Records copied (all processes, all runs).
    value_bytes, key_bytes:
        Bytes of values and keys copied.
    timestamp_ms:
        When the totals were published (epoch ms).
    dropped:
        Records read and dropped by a transform (``transforms``), never copied.
    """

    records: int
    value_bytes: int
    key_bytes: int
    timestamp_ms: int
    dropped: int = 0


def progress_topic(source_alias: str, policy: ReplicationPolicy | None = None) -> str:
    """Name of the progress topic of flows from ``source_alias`` (on their target).

    Parameters
    ----------
    source_alias:
        The flows' source cluster alias.
    policy:
        The flow's replication policy: the name uses its internal separator, as the control
        topic's does; ``None`` = the default policy's naming.

    Returns
    -------
    str
        ``mm2-progress<isep><source_alias><isep>internal``, e.g. ``mm2-progress.A.internal``.
    """
    return mirrorspark_topic(PROGRESS_PREFIX, policy, source_alias)


def encode_progress(flow: str, topic: str, p: TopicProgress) -> tuple[bytes, bytes]:
    """Key and value bytes of a progress record."""
    key = json.dumps({"flow": flow, "topic": topic}, separators=(",", ":"), ensure_ascii=False).encode()
    fields: dict[str, int] = {
        "records": p.records,
        "value_bytes": p.value_bytes,
        "key_bytes": p.key_bytes,
        "timestamp": p.timestamp_ms,
    }
    if p.dropped:  # only flows whose transforms dropped records: the layout of older versions otherwise
        fields["dropped"] = p.dropped
    value = json.dumps(fields, separators=(",", ":")).encode()
    return key, value


def decode_progress(key: bytes | None, value: bytes | None) -> tuple[str, str, TopicProgress] | None:
    """``(flow, topic, progress)`` of a progress record, or ``None`` if it is not one (or a tombstone).

    A record whose totals are not non-negative integers (e.g. ``Infinity``, ``-5``, ``1.5``) is not one.
    """
    if key is None or value is None:
        return None
    try:
        k, v = json.loads(key), json.loads(value)
        if not isinstance(k, dict) or not isinstance(v, dict):
            return None
        totals = [v["records"], v["value_bytes"], v["key_bytes"], v["timestamp"], v.get("dropped", 0)]
        if not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in totals):
            return None
        return str(k["flow"]), str(k["topic"]), TopicProgress(*totals)
    except (ValueError, KeyError, TypeError, RecursionError):  # RecursionError: absurdly deep nesting
        return None


@dataclass(frozen=True)
class FlowState:
    """The last state a running mirrorspark published for a flow.

    Attributes
    ----------
    state:
        ``"running"`` or ``"failed"``.
    error:
        Why the flow failed (the error's message), ``None`` when running.
    timestamp_ms:
        When it was published (epoch ms).
    """

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
        if state not in ("running", "failed") or not (error is None or isinstance(error, str)):
            return None
        if not isinstance(ts, int) or isinstance(ts, bool) or ts < 0:
            return None
        return str(k["flow"]), FlowState(state, error, ts)
    except (ValueError, KeyError, TypeError, RecursionError):
        return None


def read_progress(
    settings: ClientSettings,
    admin_settings: ClientSettings,
    alias: str,
    source_alias: str,
    flow: str,
    *,
    client_id: str,
    policy: ReplicationPolicy | None = None,
    timeout_s: float = 30.0,
    clients: ClientFactory | None = None,
    states: dict[str, FlowState] | None = None,
) -> dict[str, TopicProgress]:
    """Read the last published totals per topic of ``flow`` (empty when none were published).

    Parameters
    ----------
    settings, admin_settings:
        Consumer and admin settings of the flow's target cluster.
    alias, source_alias:
        The target and source cluster aliases.
    flow:
        The flow's name, ``"S->T"``.
    client_id:
        The consumer's ``client.id``.
    policy:
        The flow's replication policy, which names the topic (:func:`progress_topic`).
    timeout_s:
        Seconds to read the topic to its end (default 30).
    clients:
        Where clients come from (default: real confluent-kafka clients).
    states:
        Filled with the flow's last published :class:`FlowState` (under its name), if any.

    Raises
    ------
    ClusterError
        If the progress topic cannot be read to its end.
    """
    out: dict[str, TopicProgress] = {}

    def on_record(key: bytes | None, value: bytes | None) -> None:
        decoded = decode_progress(key, value)
        if decoded is not None and decoded[0] == flow:
            out[decoded[1]] = decoded[2]
        elif states is not None:
            st = decode_flow_state(key, value)
            if st is not None and st[0] == flow:
                states[flow] = st[1]

    topic = progress_topic(source_alias, policy)
    read_topic(
        settings, admin_settings, alias, topic, on_record, client_id=client_id, timeout_s=timeout_s, clients=clients
    )
    return out


class ProgressPublisher:
    """Publishes a flow's cumulative totals (base from earlier runs + this process's copies).

    Parameters
    ----------
    flow:
        The running :class:`~mirrorspark.replication.flow.Flow`.
    """

    def __init__(self, flow: Flow) -> None:
        self.flow = flow
        self._base: dict[str, TopicProgress] = {}
        self._producer: Any = None
        self._last: dict[str, tuple[int, int, int, int]] = {}
        self._topic = ""

    def start(self) -> None:
        """Create the progress topic and read earlier totals."""
        cfg = self.flow.config
        ctx = self.flow.context
        admin_timeout_s = cfg.admin_timeout_ms / 1000
        self._topic = progress_topic(cfg.source, self.flow.policy)
        self.flow.target_admin.ensure_topic(
            self._topic,
            partitions=1,
            replication_factor=cfg.checkpoints_topic_replication_factor,
            config={"cleanup.policy": "compact"},
        )
        self._base = read_progress(
            cfg.target_consumer,
            cfg.target_admin,
            cfg.target,
            cfg.source,
            cfg.name,
            client_id=ctx.client_id("progress-consumer"),
            policy=self.flow.policy,
            timeout_s=admin_timeout_s,
            clients=ctx.clients,
        )
        self._producer = ctx.producer("target", "progress-producer", overrides={"linger.ms": 0})

    def totals(self) -> Mapping[str, TopicProgress]:
        """Return the current cumulative totals per replicated topic.

        Returns
        -------
        Mapping[str, TopicProgress]
            ``{source topic: totals}``: what earlier runs published plus what this process
            copied, stamped now (epoch ms).
        """
        now = int(time.time() * 1000)
        out: dict[str, TopicProgress] = {}
        for topic, n in self.flow.topic_partitions.items():
            ps = [self.flow.partitions[(topic, i)] for i in range(n) if (topic, i) in self.flow.partitions]
            base = self._base.get(topic, TopicProgress(0, 0, 0, now))
            out[topic] = TopicProgress(
                base.records + sum(p.records for p in ps),
                base.value_bytes + sum(p.value_bytes for p in ps),
                base.key_bytes + sum(p.key_bytes for p in ps),
                now,
                base.dropped + sum(p.dropped for p in ps),
            )
        return out

    def publish(self) -> int:
        """Write totals that changed since the last acknowledged write; return how many records were written.

        Delivery is checked (:func:`~mirrorspark.kafka.delivery.deliver`, retried within
        :data:`PUBLISH_TIMEOUT_S`); totals count as published only once acknowledged, so
        totals that could not be written are logged at WARNING and written at the next call
        (the driver publishes every few seconds), never dropped silently.

        Returns
        -------
        int
            Records written and acknowledged (0 when the write failed).
        """
        if self._producer is None:
            return 0
        changed: dict[str, tuple[int, int, int, int]] = {}
        records: list[Outgoing] = []
        for topic, p in self.totals().items():
            sig = (p.records, p.value_bytes, p.key_bytes, p.dropped)
            if self._last.get(topic) == sig:
                continue
            key, value = encode_progress(self.flow.name, topic, p)
            records.append(Outgoing(self._topic, key, value, partition=0))
            changed[topic] = sig
        try:
            deliver(
                self._producer,
                records,
                what=f"flow {self.flow.name}: progress totals",
                alias=self.flow.config.target,
                timeout_s=PUBLISH_TIMEOUT_S,
            )
        except ClusterError as e:
            log.warning("%s; they are written again at the next publication", e)
            return 0
        self._last.update(changed)
        return len(records)

    def publish_state(self, state: str, error: str | None = None) -> None:
        """Publish the flow's state (``"running"``, or ``"failed"`` and its error) for ``status``; logs failures."""
        if self._producer is None:
            return
        key, value = encode_flow_state(self.flow.name, FlowState(state, error, int(time.time() * 1000)))
        try:
            deliver(
                self._producer,
                [Outgoing(self._topic, key, value, partition=0)],
                what=f"flow {self.flow.name}: its state",
                alias=self.flow.config.target,
                timeout_s=PUBLISH_TIMEOUT_S,
            )
        except ClusterError as e:
            log.warning("%s", e)

    def close(self) -> None:
        """Publish the final totals and release the producer."""
        try:
            self.publish()
        finally:
            self._producer = None


__all__ = [
    "FlowState",
    "ProgressPublisher",
    "TopicProgress",
    "decode_flow_state",
    "decode_progress",
    "encode_flow_state",
    "encode_progress",
    "progress_topic",
    "read_progress",
]
