"""Reading a flow's lifetime totals and published state back (format: :mod:`mirrorspark.core.lifetime_totals`).

Written by :class:`~mirrorspark.replication.connector.totals_publisher.TotalsPublisher`.
"""

from __future__ import annotations

from mirrorspark.client.context import FlowContext
from mirrorspark.core.lifetime_totals import FlowState, TopicTotals, decode_flow_state, decode_totals
from mirrorspark.kafka.reader import read_topic


def read_totals(
    ctx: FlowContext,
    *,
    client_id: str,
    timeout_s: float = 30.0,
    states: dict[str, FlowState] | None = None,
) -> dict[str, TopicTotals]:
    """Read the last published lifetime totals per topic of a flow (empty when none were published).

    ``states`` is filled with the flow's last published :class:`~mirrorspark.core.lifetime_totals.FlowState`,
    if any. Raises ClusterError when the topic cannot be read to its end within ``timeout_s`` seconds.
    """
    cfg = ctx.flow_config
    flow = cfg.name
    out: dict[str, TopicTotals] = {}

    def on_record(key: bytes | None, value: bytes | None) -> None:
        decoded = decode_totals(key, value)
        if decoded is not None and decoded[0] == flow:
            out[decoded[1]] = decoded[2]
        elif states is not None:
            st = decode_flow_state(key, value)
            if st is not None and st[0] == flow:
                states[flow] = st[1]

    read_topic(
        cfg.target_consumer,
        cfg.target_admin,
        cfg.target,
        ctx.internal_topics.totals,
        on_record,
        client_id=client_id,
        timeout_s=timeout_s,
        clients=ctx.clients,
    )
    return out


__all__ = ["read_totals"]
