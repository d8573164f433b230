"""Checked writes: produce records, wait for every acknowledgement, retry what failed (bounded).

The driver's internal records (offset syncs, checkpoints, source offsets, heartbeats,
progress, ...) are small and keyed on compacted topics, so sending one again is harmless;
losing one silently is not. :func:`deliver` produces a list of records with a delivery
callback each, flushes, and sends again — in order, from the first record that failed — until
every record is acknowledged, the attempts are used up or the deadline passes; then it raises a
:class:`~mirrorspark.errors.ClusterError` naming what was written, the topic and the cluster.
Callers advance the state that depends on the write (sync state, checkpoint store, committed
positions) only after it returns.

Notes
-----
MM2's tasks write the same records through Kafka Connect's producer callbacks
(``MirrorSourceTask.commitRecord``/``sendOffsetSync``, ``MirrorCheckpointTask`` via the
framework's ``WorkerSourceTask``), which log a failed send and retry it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from confluent_kafka import KafkaError, KafkaException

from mirrorspark.errors import ClusterError
from mirrorspark.kafka.protocols import DeliveryCallback, ProducerLike

log = logging.getLogger(__name__)

DELIVERY_ATTEMPTS = 3
"""Sends of one record :func:`deliver` tries before giving up."""

DELIVERY_TIMEOUT_S = 30.0
"""Seconds :func:`deliver` waits in all for acknowledgements."""


@dataclass(frozen=True)
class Outgoing:
    """One record to write (``partition`` -1: the partitioner's; ``timestamp`` in epoch ms, 0: the producer's)."""

    topic: str
    key: bytes | None
    value: bytes | None
    partition: int = -1
    timestamp: int = 0


def _reason(err: object) -> str:
    if isinstance(err, KafkaError):
        return f"{err.str()} ({err.name()})"
    if isinstance(err, KafkaException) and err.args and isinstance(err.args[0], KafkaError):
        return _reason(err.args[0])
    return str(err)


def _callback(i: int, acked: set[int], failures: dict[int, object]) -> DeliveryCallback:
    def on_delivery(err: KafkaError | None, _msg: object) -> None:
        if err is None:
            acked.add(i)
        else:
            failures[i] = err

    return on_delivery


def deliver(
    producer: ProducerLike,
    records: Sequence[Outgoing],
    *,
    what: str,
    alias: str,
    attempts: int = DELIVERY_ATTEMPTS,
    timeout_s: float = DELIVERY_TIMEOUT_S,
    hint: str = "",
    sleep: Callable[[float], None] = time.sleep,
) -> None:
    """Write records and wait until the cluster acknowledged every one; retry failures (bounded).

    Raises ClusterError when a record is still not acknowledged after ``attempts`` sends or ``timeout_s`` seconds in
    all, naming ``what``, the topic, the cluster and the last reason.
    """
    pending = list(records)
    if not pending:
        return
    deadline = time.monotonic() + timeout_s
    attempt = 0
    while True:
        attempt += 1
        failures: dict[int, object] = {}
        acked: set[int] = set()
        for i, rec in enumerate(pending):
            kwargs: dict[str, Any] = {"partition": rec.partition} if rec.partition >= 0 else {}
            if rec.timestamp:
                kwargs["timestamp"] = rec.timestamp
            while True:
                try:
                    producer.produce(
                        rec.topic,
                        rec.value,
                        rec.key,
                        on_delivery=_callback(i, acked, failures),
                        **kwargs,
                    )
                    break
                except BufferError:  # the local queue is full: let it drain
                    if time.monotonic() >= deadline:
                        failures[i] = "the producer's queue stayed full"
                        break
                    producer.poll(0.1)
                except KafkaException as e:
                    failures[i] = e
                    break
        left = producer.flush(max(0.0, deadline - time.monotonic()))
        unacked = [i for i in range(len(pending)) if i not in acked]
        if not unacked:
            return
        first = min(unacked)
        reason = failures.get(first)
        timed_out = reason is None  # still in flight when the time ran out
        if not failures and left and time.monotonic() >= deadline:
            timed_out = True
        retriable = timed_out or (isinstance(reason, KafkaError) and reason.retriable())
        message = f"{what}: writing to topic '{pending[first].topic}' on cluster '{alias}' failed: " + (
            f"not acknowledged within {timeout_s:.0f} s" if timed_out else _reason(reason)
        )
        if attempt >= attempts or time.monotonic() >= deadline:
            raise ClusterError(
                f"{message} ({len(unacked)} of {len(pending)} records unacknowledged after {attempt} attempts)"
                + (f"; {hint}" if hint else ""),
                kafka_code=reason.name() if isinstance(reason, KafkaError) else None,
                retriable=retriable,
            )
        log.warning(
            "%s; sending %d records again (attempt %d of %d)", message, len(pending) - first, attempt + 1, attempts
        )
        pending = pending[first:]  # in order, from the first that failed: the last one written stays the newest
        sleep(min(1.0, 0.1 * 2 ** (attempt - 1), max(0.0, deadline - time.monotonic())))


__all__ = ["DELIVERY_ATTEMPTS", "DELIVERY_TIMEOUT_S", "Outgoing", "deliver"]
