"""Fencing the copy tasks of a flow's previous generation before a new one starts (KIP-618 ``fenceZombies``).

An exactly-once copy task's transactional id is per task index (Connect's ``<group.id>-<connector>-<i>``:
``<source>-mm2-MirrorSourceConnector-<i>`` in MM2's dedicated mode,
:func:`~mirrorspark.client.connect_tasks.transactional_id`), and its own
``init_transactions`` fences only the older producers of *that* id. When the task count or the
partition-to-index mapping changes (a topic added, dropped or re-created, another ``tasks.max``,
MM2 or a second instance handing over), a partition's previous owner may have had another
index: it would never be fenced, and a transaction it still commits lands behind the new
owner's start (a ``read_committed`` consumer sees records twice, ``engine-audit.md`` F4).

Kafka Connect's herder fences every task id of the connector's previous generation before
starting new tasks (``fenceZombies``: ``Admin.fenceProducers`` on ids ``0 ..
max(previous task count, new task count) - 1``, the previous count read from the config topic);
:attr:`Flow.fence_count <mirrorspark.replication.connector.flow.Flow.fence_count>` is how many mirrorspark fences,
the previous replicator's count read from that same topic
(:func:`~mirrorspark.client.connect_tasks.read_previous_task_count`).
:func:`fence_zombies` does the same with librdkafka: one transactional producer per id, whose
``init_transactions`` bumps the id's epoch (every older producer of it is fenced) and completes
or aborts its pending transaction, all ids in parallel, within one timeout.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from typing import TYPE_CHECKING, Any

from confluent_kafka import KafkaException

from mirrorspark.client.connect_tasks import transactional_id
from mirrorspark.config.model import FlowConfig
from mirrorspark.errors import ClusterError
from mirrorspark.replication.connector.task_configs import init_transactions_timeout_s
from mirrorspark.replication.task.failures import init_transactions_error

if TYPE_CHECKING:
    from mirrorspark.replication.connector.flow import Flow

log = logging.getLogger(__name__)

FENCE_PARALLELISM = 16
"""Most transactional ids initialised at once by :func:`fence_zombies`."""

FENCE_GRACE_S = 1.0
"""Seconds :func:`fence_zombies` waits past its timeout for the ``init_transactions`` calls to return."""

ProducerFactory = Callable[[str], Any]
"""Creates a producer of the flow's target with the given ``transactional.id`` (``init_transactions``,
and ``close`` if it has one)."""


def _close(p: Any, tid: str) -> None:
    """Close a fencing producer after its ``init_transactions`` (its epoch is bumped: nothing is left to do).

    Only after a success: confluent-kafka's ``close`` of a producer whose ``init_transactions``
    failed raises a ``SystemError`` that would hide the error naming the id and the fix.
    """
    close = getattr(p, "close", None)
    if close is None:
        return
    try:
        close()
    except Exception as e:  # closing is best effort: the id is fenced already
        log.debug("closing the fencing producer of %s failed: %s", tid, e)


def fence_ids(cfg: FlowConfig, count: int) -> list[str]:
    """Return the transactional ids of copy tasks ``0 .. count - 1`` of a flow (KIP-618, :func:`transactional_id`)."""
    return [transactional_id(cfg, i) for i in range(count)]


def fence_flow(flow: Flow, count: int) -> float:
    """Fence the transactional ids of copy tasks ``0 .. count - 1`` of an exactly-once flow (:func:`fence_zombies`).

    The producers are created by the flow's client factory from its target producer settings
    (``client.id`` ``<S>-><T>|mirrorspark|fencing-producer``), each ``init_transactions`` bounded
    by the target producer's ``max.block.ms`` (as a copy task's).

    Parameters
    ----------
    flow:
        The started flow.
    count:
        How many task indexes to fence.

    Returns
    -------
    float
        Seconds it took.

    Raises
    ------
    ClusterError, ConfigError
        As :func:`fence_zombies`; ``max.block.ms`` or a client setting is invalid.
    """
    ctx = flow.context
    cfg = flow.config
    settings = cfg.target_producer
    client_id = ctx.client_id("fencing-producer")

    def producer(tid: str) -> Any:
        return ctx.clients.producer(settings, client_id=client_id, overrides={"transactional.id": tid})

    timeout_s = init_transactions_timeout_s(ctx.settings("target_producer").properties)
    return fence_zombies(cfg.name, cfg.source, cfg.target, fence_ids(cfg, count), producer, timeout_s=timeout_s)


def fence_zombies(
    flow: str, source: str, target: str, ids: Sequence[str], producer: ProducerFactory, *, timeout_s: float
) -> float:
    """Fence every producer that may hold one of ``ids``: ``init_transactions`` on each, in parallel.

    Parameters
    ----------
    flow, source, target:
        The flow ``"S->T"`` and its cluster aliases (for messages).
    ids:
        The transactional ids to fence (:func:`fence_ids`).
    producer:
        Creates a producer with a given ``transactional.id`` on the flow's target.
    timeout_s:
        Seconds for all of them (each ``init_transactions`` is given what is left).

    Returns
    -------
    float
        Seconds it took.

    Raises
    ------
    ClusterError
        An id could not be initialised: the message names it and the fix (an ACL on the
        ``TransactionalId`` prefix, a target without a transaction coordinator
        (:class:`~mirrorspark.errors.TransactionCoordinatorError`), or the broker's error). No
        task may start then: a zombie of that id could still commit.
    """
    started = time.monotonic()
    deadline = started + timeout_s

    def fence(tid: str) -> None:
        p = producer(tid)
        try:
            p.init_transactions(max(1.0, deadline - time.monotonic()))
        except KafkaException as e:
            raise init_transactions_error(flow, source, target, tid, timeout_s, e) from e
        _close(p, tid)

    if not ids:
        return 0.0
    with ThreadPoolExecutor(max_workers=min(FENCE_PARALLELISM, len(ids)), thread_name_prefix="fence") as pool:
        futures = {pool.submit(fence, tid): tid for tid in ids}
        done, pending = wait(futures, timeout=timeout_s + FENCE_GRACE_S)
        for f in pending:
            f.cancel()
        errors = [e for f in done if (e := f.exception()) is not None]
        if errors:
            if isinstance(errors[0], ClusterError):
                raise errors[0]
            raise ClusterError(f"flow {flow}: fencing the previous copy tasks failed: {errors[0]}") from errors[0]
        if pending:
            late = sorted(futures[f] for f in pending)
            raise ClusterError(
                f"flow {flow}: fencing the previous copy tasks did not finish within {timeout_s:.0f} s on cluster "
                f"'{target}' (transactional ids {', '.join(late)}): its transaction coordinator does not answer; "
                "the new copy tasks start once it does"
            )
    return time.monotonic() - started


__all__ = ["FENCE_GRACE_S", "FENCE_PARALLELISM", "ProducerFactory", "fence_flow", "fence_ids", "fence_zombies"]
