"""Fencing the copy tasks of a flow's previous generation before a new one starts (KIP-618 ``fenceZombies``).

A task's ``init_transactions`` fences only older producers of its own id (per task index); when the
mapping of partitions to indexes changes, a previous owner under another index could still commit
(``engine-audit.md`` F4). So, as Connect's herder does, :func:`fence_zombies` initialises every id below
the larger of the previous and the new task count, in parallel, within one timeout.
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
    """Close a fencing producer after a successful ``init_transactions`` (after a failure, ``close`` raises)."""
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
    """Fence the transactional ids of copy tasks ``0 .. count - 1`` of an exactly-once flow; return the seconds it took.

    Each ``init_transactions`` is bounded by the target producer's ``max.block.ms``. Raises as
    :func:`fence_zombies`, and ConfigError for an invalid client setting.
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
    """Fence every producer that may hold one of ``ids``, ``init_transactions`` on each in parallel; return the seconds.

    ``timeout_s`` bounds them all. Raises ClusterError naming the id and the fix (a ``TransactionalId``
    ACL, no transaction coordinator, the broker's error) when one fails: then no task may start.
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
