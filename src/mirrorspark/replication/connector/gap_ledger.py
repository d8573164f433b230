"""The gap ledger's writer: a running flow records its gap events and known topic ids on the target.

The topic is :attr:`~mirrorspark.config.internal_topics.InternalTopics.gaps` (MM2-internal, never
replicated); the topic ids find a topic re-created while no flow ran. ``mirrorspark status`` reads the
events back (:func:`~mirrorspark.client.gap_reader.read_gap_ledger`).
"""

from __future__ import annotations

from typing import Any

from mirrorspark.client.context import FlowContext
from mirrorspark.client.gap_reader import LedgerContents, read_gap_ledger
from mirrorspark.core.gaps import GapEvent, encode_gap, encode_topic_id
from mirrorspark.errors import ClusterError
from mirrorspark.kafka.admin import ClusterAdmin
from mirrorspark.replication.connector.internal_topic_specs import internal_topic


class GapLedger:
    """A running flow's handle on the gap ledger: creates the topic, reads it back, appends to it."""

    def __init__(self, context: FlowContext, admin: ClusterAdmin) -> None:
        self.context = context
        self._admin = admin
        self.topic = context.internal_topics.gaps
        self._producer: Any = None

    def start(self) -> LedgerContents:
        """Create the ledger topic if needed and return what it holds for the flow; raises ``ClusterError``."""
        cfg = self.context.flow_config
        timeout_s = cfg.admin_timeout_s
        internal_topic(self.context, "gaps").ensure(self._admin)
        contents = read_gap_ledger(self.context, client_id=self.context.client_id("gaps-consumer"), timeout_s=timeout_s)
        self._producer = self.context.producer(
            "target", "gaps-producer", overrides={"enable.idempotence": True, "linger.ms": 0}
        )
        return contents

    def write(self, records: list[tuple[bytes, bytes]]) -> None:
        """Append records and wait for every acknowledgement; raises ``ClusterError`` after 30 s."""
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
            cfg = self.context.flow_config
            raise ClusterError(
                f"{cfg.name}: writing to the gap ledger '{self.topic}' on cluster '{cfg.target}' failed "
                f"({errors[0] if errors else f'{left} records not acknowledged'}); check the target cluster"
            )

    def record_gap(self, event: GapEvent) -> None:
        """Append a gap event (acknowledged on return)."""
        self.write([encode_gap(event)])

    def record_topic_ids(self, ids: dict[str, str]) -> None:
        """Append the current ids of source topics (acknowledged on return)."""
        flow = self.context.flow_config.name
        self.write([encode_topic_id(flow, t, i) for t, i in sorted(ids.items())])

    def close(self) -> None:
        """Release the producer."""
        if self._producer is not None:
            self._producer.flush(10)
        self._producer = None


__all__ = ["GapLedger"]
