"""A flow's verify history on its target: append a run, read the runs back (the records: core/verify/history.py)."""

from __future__ import annotations

import logging

from mirrorspark.client.context import FlowContext
from mirrorspark.client.history_topic import append_history_record
from mirrorspark.core.verify.history import VerifyRun, decode_verify_key, decode_verify_run, encode_verify_run
from mirrorspark.errors import CorruptRecordError
from mirrorspark.kafka.reader import read_topic

log = logging.getLogger(__name__)


def record_verify_run(ctx: FlowContext, run: VerifyRun, *, timeout_s: float = 30.0) -> str:
    """Append ``run`` to the flow's verify history on the target (created compacted if missing); return the topic.

    Raises ClusterError (or a subclass) if the topic cannot be created or the record is not acknowledged.
    """
    topic = ctx.internal_topics.verifications
    append_history_record(
        ctx,
        ctx.cluster_admin("target", "verify-admin"),
        topic,
        encode_verify_run(run),
        what=f"flow {ctx.flow_config.name}: verify history record",
        purpose="verify-producer",
        timeout_s=timeout_s,
    )
    return topic


def read_verify_history(ctx: FlowContext, *, timeout_s: float = 30.0) -> list[VerifyRun]:
    """Return the flow's verify runs on its target, oldest first; corrupt records are skipped with a WARNING.

    Raises ClusterError if the topic cannot be read to its end within ``timeout_s``.
    """
    target = ctx.cluster("target")
    runs: dict[int, VerifyRun] = {}

    def on_record(key: bytes | None, value: bytes | None) -> None:
        try:
            if value is None:
                flow, at = decode_verify_key(key)
                if flow == ctx.flow_config.name:
                    runs.pop(at, None)
                return
            run = decode_verify_run(key, value)
        except CorruptRecordError as e:
            log.warning("skipped a corrupt verify history record (key %r): %s", (key or b"")[:200], e)
            return
        if run.flow == ctx.flow_config.name:
            runs[run.at] = run

    read_topic(
        target.consumer,
        target.admin,
        ctx.flow_config.target,
        ctx.internal_topics.verifications,
        on_record,
        client_id=ctx.client_id("verify-history-consumer"),
        timeout_s=timeout_s,
        clients=ctx.clients,
    )
    return [runs[at] for at in sorted(runs)]


__all__ = ["read_verify_history", "record_verify_run"]
