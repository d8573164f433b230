"""The gap ledger: gap events and known topic ids of flows, kept in a compacted topic on the target.

A flow records every :class:`~mirrorspark.mm2.gaps.GapEvent` it finds in
``mm2-gaps<isep><source><isep>internal`` on its target (an MM2-internal name, so never replicated;
:func:`~mirrorspark.mm2.gaps.gaps_topic`), together with the id of every source topic it
replicates, so that a topic deleted and re-created while no flow ran is found at the next start.
``mirrorspark status`` reads the events back (:func:`read_gap_ledger`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from mirrorspark.client.context import FlowContext
from mirrorspark.config.model import ClientSettings
from mirrorspark.errors import ClusterError, CorruptRecordError
from mirrorspark.kafka.admin import ensure_topic
from mirrorspark.kafka.factory import ClientFactory
from mirrorspark.kafka.reader import read_topic
from mirrorspark.mm2.gaps import GapEvent, KnownTopicId, decode_ledger_record, encode_gap, encode_topic_id, gaps_topic
from mirrorspark.mm2.policy import ReplicationPolicy

log = logging.getLogger(__name__)


@dataclass
class LedgerContents:
    """What the gap ledger holds for one flow.

    Attributes
    ----------
    gaps:
        The flow's gap events, oldest first.
    topic_ids:
        ``{source topic: topic id}`` last recorded.
    corrupt:
        Records that did not decode (skipped with a WARNING).
    """

    gaps: list[GapEvent] = field(default_factory=list)
    topic_ids: dict[str, str] = field(default_factory=dict)
    corrupt: int = 0


def read_gap_ledger(
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
) -> LedgerContents:
    """Read one flow's gap events and known topic ids from the gap ledger (empty if the topic does not exist).

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
        The flow's replication policy (names the topic).
    timeout_s:
        Seconds to read the topic to its end.
    clients:
        Where clients come from (default: real confluent-kafka clients).

    Returns
    -------
    LedgerContents
        The flow's events (sorted by time) and topic ids; corrupt records are skipped with a WARNING.

    Raises
    ------
    ClusterError
        The ledger cannot be read to its end.
    """
    out = LedgerContents()
    topic = gaps_topic(source_alias, policy)
    seen: dict[tuple[str, int, str, int], GapEvent] = {}

    def on_record(key: bytes | None, value: bytes | None) -> None:
        try:
            rec = decode_ledger_record(key, value)
        except CorruptRecordError as e:
            out.corrupt += 1
            log.warning("skipping a record of %s: %s", topic, e)
            return
        if isinstance(rec, GapEvent) and rec.flow == flow:
            seen[(rec.topic, rec.partition, rec.reason, rec.at)] = rec
        elif isinstance(rec, KnownTopicId) and rec.flow == flow:
            out.topic_ids[rec.topic] = rec.topic_id

    read_topic(
        settings, admin_settings, alias, topic, on_record, client_id=client_id, timeout_s=timeout_s, clients=clients
    )
    out.gaps = sorted(seen.values(), key=lambda g: (g.at, g.topic, g.partition))
    return out


class GapLedger:
    """A running flow's handle on the gap ledger: creates the topic, reads it back, appends to it.

    Parameters
    ----------
    context:
        The flow's context (target clients, policy, client ids).
    admin:
        The flow's target admin client (shared, not closed here).
    """

    def __init__(self, context: FlowContext, admin: Any) -> None:
        self.context = context
        self._admin = admin
        self.topic = gaps_topic(context.flow.source, context.policy)
        self._producer: Any = None

    def start(self) -> LedgerContents:
        """Create the ledger topic if needed and return what it holds for the flow.

        Raises
        ------
        ClusterError
            The topic cannot be created or read.
        """
        cfg = self.context.flow
        timeout_s = cfg.admin_timeout_ms / 1000
        ensure_topic(
            self._admin,
            cfg.target,
            self.topic,
            partitions=1,
            replication_factor=cfg.checkpoints_topic_replication_factor,
            config={"cleanup.policy": "compact"},
            timeout_s=timeout_s,
        )
        contents = read_gap_ledger(
            cfg.target_consumer,
            cfg.target_admin,
            cfg.target,
            cfg.source,
            cfg.name,
            client_id=self.context.client_id("gaps-consumer"),
            policy=self.context.policy,
            timeout_s=timeout_s,
            clients=self.context.clients,
        )
        self._producer = self.context.producer(
            "target", "gaps-producer", overrides={"enable.idempotence": True, "linger.ms": 0}
        )
        return contents

    def write(self, records: list[tuple[bytes, bytes]]) -> None:
        """Append records and wait for the target to acknowledge every one.

        Raises
        ------
        ClusterError
            A record was not acknowledged within 30 s (the caller's state has not advanced).
        """
        if not records or self._producer is None:
            return
        errors: list[str] = []

        def on_delivery(err: Any, _msg: Any) -> None:
            if err is not None:
                errors.append(err.str())

        for key, value in records:
            self._producer.produce(self.topic, value, key, partition=0, on_delivery=on_delivery)
        left = self._producer.flush(30)
        if left or errors:
            cfg = self.context.flow
            raise ClusterError(
                f"{cfg.name}: writing to the gap ledger '{self.topic}' on cluster '{cfg.target}' failed "
                f"({errors[0] if errors else f'{left} records not acknowledged'}); check the target cluster"
            )

    def record_gap(self, event: GapEvent) -> None:
        """Append a gap event (acknowledged on return)."""
        self.write([encode_gap(event)])

    def record_topic_ids(self, ids: dict[str, str]) -> None:
        """Append the current ids of source topics (acknowledged on return)."""
        flow = self.context.flow.name
        self.write([encode_topic_id(flow, t, i) for t, i in sorted(ids.items())])

    def close(self) -> None:
        """Release the producer."""
        if self._producer is not None:
            self._producer.flush(10)
        self._producer = None


__all__ = ["GapLedger", "LedgerContents", "read_gap_ledger"]
