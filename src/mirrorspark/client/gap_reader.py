"""Reading the gap ledger (``FlowContext.internal_topics.gaps``): a flow's gap events and known topic ids.

The running flow writes it (:class:`~mirrorspark.replication.connector.gap_ledger.GapLedger`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from mirrorspark.client.context import FlowContext
from mirrorspark.core.gaps import GapEvent, KnownTopicId, decode_ledger_record
from mirrorspark.errors import CorruptRecordError
from mirrorspark.kafka.reader import read_topic

log = logging.getLogger(__name__)


@dataclass
class LedgerContents:
    """What the gap ledger holds for one flow: gaps oldest first, ``{source topic: topic id}``, corrupt count."""

    gaps: list[GapEvent] = field(default_factory=list)
    topic_ids: dict[str, str] = field(default_factory=dict)
    corrupt: int = 0


def read_gap_ledger(ctx: FlowContext, *, client_id: str, timeout_s: float = 30.0) -> LedgerContents:
    """Read one flow's gap events (sorted by time) and topic ids; empty if the topic does not exist.

    Raises ClusterError when the ledger cannot be read to its end within ``timeout_s`` seconds.
    """
    cfg = ctx.flow_config
    flow = cfg.name
    out = LedgerContents()
    topic = ctx.internal_topics.gaps
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
        cfg.target_consumer,
        cfg.target_admin,
        cfg.target,
        topic,
        on_record,
        client_id=client_id,
        timeout_s=timeout_s,
        clients=ctx.clients,
    )
    out.gaps = sorted(seen.values(), key=lambda g: (g.at, g.topic, g.partition))
    return out


__all__ = ["LedgerContents", "read_gap_ledger"]
