"""A flow's copied segments, read back from its progress channel on the target (what ``mirrorspark verify`` aligns).

Each progress report carries its partition's newest copied segments (``core/progress_records``); read in channel
order into a :class:`~mirrorspark.mm2.translation.CopiedRanges` (its rules: newer copies win, a superseded lease
epoch's reports are ignored), they give what the flow restores at start (``ProgressChannelReader.load``).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from mirrorspark.client.context import FlowContext
from mirrorspark.core.progress_records import decode_report, record_kind
from mirrorspark.errors import CorruptRecordError
from mirrorspark.kafka.reader import read_topic
from mirrorspark.mm2.translation import CopiedRanges

log = logging.getLogger(__name__)


def read_copied_segments(
    ctx: FlowContext, *, topic_ids: Mapping[str, str] | None = None, timeout_s: float = 30.0
) -> CopiedRanges:
    """Return the flow's copied segments per source partition from its progress channel (empty without one).

    ``topic_ids`` are the source topics' ids now (KIP-516): a report naming another id is of an earlier
    incarnation of its topic and is left out. Corrupt records are skipped with a WARNING. Raises ClusterError
    when the channel cannot be read to its end within ``timeout_s``.
    """
    cfg = ctx.flow_config
    ids = topic_ids or {}
    copied = CopiedRanges()

    def on_record(key: bytes | None, value: bytes | None) -> None:
        if record_kind(key) != "report":
            return
        try:
            report = decode_report(key, value)
        except CorruptRecordError as e:
            log.warning("%s: skipped a progress record: %s", cfg.name, e)
            return
        if report.flow != cfg.name or not report.segments:
            return
        known = ids.get(report.topic)
        if report.topic_id is not None and known is not None and report.topic_id != known:
            return
        copied.add(report.topic, report.partition, report.segments, epoch=report.epoch)

    read_topic(
        cfg.target_consumer,
        cfg.target_admin,
        cfg.target,
        ctx.internal_topics.progress_channel,
        on_record,
        client_id=ctx.client_id("verify-progress-consumer"),
        timeout_s=timeout_s,
        clients=ctx.clients,
    )
    return copied


__all__ = ["read_copied_segments"]
