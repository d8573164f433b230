"""The driver's reader of a flow's progress channel: the copy tasks' progress reports.

The progress channel is the compacted topic ``mm2-task-progress.<source>.internal`` on the target;
its records are the tasks' progress reports (:mod:`mirrorspark.core.progress_records`) and raw
metrics, read into the flow's positions, totals and copied ranges.
"""

from __future__ import annotations

import logging
import time
from typing import Any, Protocol

from confluent_kafka import KafkaError, KafkaException, TopicPartition

from mirrorspark.client.context import FlowContext
from mirrorspark.core.progress_records import PartitionReport, decode_report, record_kind
from mirrorspark.errors import ClusterError, CorruptRecordError
from mirrorspark.kafka.admin import is_transient

log = logging.getLogger(__name__)

_NOT_KNOWN_YET = frozenset({KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError._UNKNOWN_PARTITION})
"""Errors of a topic created a moment ago (retried like transient errors when reading its end offset)."""


class ReportSink(Protocol):
    """What a :class:`ProgressChannelReader` feeds: a :class:`~mirrorspark.replication.connector.flow.Flow`."""

    @property
    def name(self) -> str:
        """The flow's name, ``"S->T"``."""
        ...

    @property
    def context(self) -> FlowContext:
        """The flow's context (its clients)."""
        ...

    @property
    def progress_topic(self) -> str:
        """The flow's progress channel."""
        ...

    def apply_report(
        self, report: PartitionReport, *, generation: int | None = None, segments_only: bool = False
    ) -> bool:
        """Apply one report; tell whether it was of a replicated partition."""
        ...


class ProgressChannelReader:
    """Reads one flow's progress channel on the driver into ``sink`` (:meth:`Flow.apply_report`)."""

    def __init__(self, sink: ReportSink) -> None:
        self.sink = sink
        self.skipped = 0
        self._next = -2  # the next offset to read (-2: the beginning)
        self._consumer = self._open()

    def _open(self) -> Any:
        """Create the channel's consumer, assigned at the next offset to read."""
        consumer = self.sink.context.consumer(
            "target", "task-progress-target-consumer", overrides={"enable.partition.eof": True}
        )
        consumer.assign([TopicPartition(self.sink.progress_topic, 0, self._next)])
        return consumer

    def _reopen(self) -> None:
        """Replace the consumer, whose cached metadata lost the channel's partition (librdkafka: for 5 minutes)."""
        old, self._consumer = self._consumer, self._open()
        try:
            old.close()
        except Exception as e:  # the old one's trouble is why it is replaced
            log.debug("%s: closing the progress channel's old consumer: %s", self.sink.name, e)

    def load(self, timeout_s: float = 30.0) -> int:
        """Read the channel to its end at start, restoring the copied segments only; return reports read."""
        return self.poll(until_end=True, timeout_s=timeout_s, segments_only=True)

    def poll(
        self,
        *,
        until_end: bool = False,
        timeout_s: float = 0.0,
        generation: int | None = None,
        segments_only: bool = False,
    ) -> int:
        """Apply the reports that arrived (``until_end``: up to the end at the call, within ``timeout_s`` s).

        Returns reports applied (short of the end: a WARNING). With ``until_end``, raises ``ClusterError``
        when the end offset cannot be read within ``timeout_s`` (at least 1 s) or the target refuses.
        """
        applied = 0
        deadline = time.monotonic() + timeout_s
        target = self._end_offset(max(1.0, timeout_s)) if until_end else None
        while True:
            msgs = self._consumer.consume(num_messages=1000, timeout=0.05 if until_end else 0)
            last = -1
            for m in msgs:
                if m.error() is not None:
                    continue
                last = int(m.offset() or 0)
                self._next = last + 1
                if record_kind(m.key()) != "report":
                    continue  # the driver's flow, lag and group records (format version 2): for the service
                try:
                    report = decode_report(m.key(), m.value())
                except CorruptRecordError as e:
                    self.skipped += 1
                    log.warning("%s: skipped a progress record at offset %d: %s", self.sink.name, m.offset(), e)
                    continue
                if report.flow == self.sink.name and self.sink.apply_report(
                    report, generation=generation, segments_only=segments_only
                ):
                    applied += 1
            if target is None:
                return applied
            pos = max(self._consumer.position([TopicPartition(self.sink.progress_topic, 0)])[0].offset, last + 1)
            if pos >= target:
                return applied
            if time.monotonic() >= deadline:
                self._short_of_end(pos, target, timeout_s, segments_only=segments_only)
                return applied

    def _short_of_end(self, pos: int, end: int, timeout_s: float, *, segments_only: bool) -> None:
        """Log (WARNING) that a read to the channel's end stopped at its deadline, and what that leaves out."""
        left = (
            "their copied runs and the positions they reached (offsets in those runs translate less exactly, "
            "and a topic re-created while the flow was stopped may be started over with a spurious gap)"
            if segments_only
            else "their positions and totals (the next generation may copy those records again)"
        )
        log.warning(
            "%s: reading the progress channel '%s' to its end offset %d stopped at offset %d after %.1f s; the "
            "reports not read now are not applied: %s",
            self.sink.name,
            self.sink.progress_topic,
            end,
            max(pos, 0),
            timeout_s,
            left,
        )

    def _end_offset(self, timeout_s: float) -> int:
        """Return the channel's end offset; transient errors (an unknown partition too) retried for ``timeout_s``."""
        deadline = time.monotonic() + timeout_s
        reopened = False
        while True:
            left = deadline - time.monotonic()
            try:
                return int(
                    self._consumer.get_watermark_offsets(
                        TopicPartition(self.sink.progress_topic, 0), timeout=max(0.5, left)
                    )[1]
                )
            except KafkaException as e:
                err = e.args[0] if e.args else None
                # a channel created a moment ago: not yet in every broker's metadata, nor in this client's
                unknown = isinstance(err, KafkaError) and err.code() in _NOT_KNOWN_YET
                again = is_transient(err) or unknown
                if unknown and not reopened:
                    self._reopen()  # a channel created a moment ago, or metadata lost in an outage: ask afresh
                    reopened = True
                if not again or time.monotonic() + 0.2 >= deadline:
                    raise ClusterError(
                        f"{self.sink.name}: reading the end of the progress channel '{self.sink.progress_topic}' "
                        f"on the target failed: {e}; check that the target cluster is up",
                        kafka_code=err.name() if isinstance(err, KafkaError) else None,
                        retriable=again,
                    ) from e
            time.sleep(0.2)  # a pause between two attempts, bounded by the deadline above

    def close(self) -> None:
        """Release the consumer."""
        self._consumer.close()


__all__ = ["ProgressChannelReader", "ReportSink"]
