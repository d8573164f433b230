"""A copy task as the one Spark task of its job: build its clients, run it, return its result as data."""

from __future__ import annotations

import functools
import json
import logging
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final

from confluent_kafka import Consumer, KafkaException, Producer
from confluent_kafka.admin import AdminClient

from mirrorspark.core.replica_rows import FetchSource, fetch_sources
from mirrorspark.errors import DataPathError, MirrorsparkError
from mirrorspark.kafka.admin import ClusterAdmin
from mirrorspark.kafka.factory import with_logger
from mirrorspark.kafka.protocols import SourceConsumerLike
from mirrorspark.mm2.connect_offsets import OffsetHistory
from mirrorspark.replication.task.catch_up import READER_FETCH_BYTES, CatchUpConsumer
from mirrorspark.replication.task.commit import SOURCE_END_TIMEOUT_S, StoredOffsetsReader, TopicIdsReader
from mirrorspark.replication.task.grant_client import GrantClient
from mirrorspark.replication.task.idle import IdleConsumer, PausingConsumer
from mirrorspark.replication.task.runner import CopyTaskRunner
from mirrorspark.replication.task.schema_ids import SchemaIdTranslator
from mirrorspark.replication.task.spec import CopyTaskSpec, PartitionKey, TaskOutcome, TaskResult
from mirrorspark.replication.task.stored_offsets import read_stored_offsets

log = logging.getLogger(__name__)

FETCH_STATS_INTERVAL_MS: Final = 5000
"""``statistics.interval.ms`` of a copy task's source consumer with ``client.rack`` unless the settings choose
one: how often librdkafka says which broker serves each partition (0 in the settings turns it off)."""

CLEAN_OUTCOMES: Final = frozenset({TaskOutcome.STOPPED, TaskOutcome.CAUGHT_UP, TaskOutcome.OUT_OF_RANGE})
"""Outcomes after a successful last commit: the task's producers hold nothing more."""


def with_fetch_stats(conf: dict[str, Any], sources: dict[PartitionKey, FetchSource]) -> dict[str, Any]:
    """Return ``conf`` (changed in place) with a ``stats_cb`` filling ``sources`` from librdkafka statistics (KIP-392).

    Only a consumer that may fetch from a follower (``client.rack``, or its own
    ``statistics.interval.ms``) gets statistics: parsing them was most of an idle task's CPU at 1,000
    topics (issue #26); without them the reports say the fetch broker is unknown (-1).
    """

    def on_stats(doc: str) -> None:
        try:
            sources.update(fetch_sources(json.loads(doc)))
        except ValueError:  # a truncated document: the next one comes within the interval
            return

    if "statistics.interval.ms" not in conf and not str(conf.get("client.rack", "")).strip():
        return conf
    conf.setdefault("statistics.interval.ms", FETCH_STATS_INTERVAL_MS)
    conf["stats_cb"] = on_stats
    return conf


def _producer(conf: Mapping[str, Any], **extra: Any) -> Producer:
    c = {**conf, **extra}
    return Producer(with_logger(c, str(c.get("client.id", "replication-producer"))))


def _release(producer: Producer | None, *, clean: bool) -> None:
    """Drop what a producer holds unless the task ended cleanly (a lost run's buffer never lands late); never raise."""
    if producer is None:
        return
    try:
        if not clean:
            producer.purge()
            producer.flush(0)
            return
        producer.flush(10)
        producer.close()
    except KafkaException as e:  # e.g. a producer in a fatal state: the task's own error is what counts
        log.debug("releasing a producer failed: %s", e)


def executor_jvm_alive() -> Callable[[], bool]:
    """Return whether the executor JVM that started this Python worker still runs (``True`` where it cannot be found).

    Reads the JVM's ``/proc/<pid>/stat`` (Linux): gone or a zombie is dead. A task asks before each
    commit.
    """
    pid = os.getppid()
    for _ in range(2):  # the worker's parent, else the daemon's parent
        try:
            comm = Path(f"/proc/{pid}/comm").read_text().strip()
            if comm == "java":
                return functools.partial(_running, pid)
            pid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            break
    return lambda: True


def _running(pid: int) -> bool:
    """Whether process ``pid`` runs: not gone, and not a zombie (a killed JVM stays one until its parent reaps it)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    except (OSError, IndexError):
        return True
    return state not in ("Z", "X")


def stored_offsets_reader(spec: CopyTaskSpec) -> StoredOffsetsReader | None:
    """Return how an exactly-once task reads its stored source offsets with real clients (``None`` otherwise)."""
    if not spec.exactly_once or spec.offsets_consumer_conf is None or spec.offsets_admin_conf is None:
        return None
    consumer_conf = dict(spec.offsets_consumer_conf)
    admin_conf = dict(spec.offsets_admin_conf)
    timeout_s = max(spec.init_timeout_s, 2 * spec.flush_interval_s)

    def read(keys: Sequence[PartitionKey]) -> Mapping[PartitionKey, OffsetHistory]:
        consumer = Consumer(with_logger(consumer_conf, str(consumer_conf.get("client.id", "offsets-consumer"))))
        try:
            admin = AdminClient(with_logger(admin_conf, str(admin_conf.get("client.id", "offsets-admin"))))
            cluster = ClusterAdmin(admin, spec.target, timeout_s=timeout_s)
            return read_stored_offsets(spec, keys, consumer=consumer, admin=cluster, timeout_s=timeout_s)
        finally:
            consumer.close()

    return read


def topic_ids_reader(spec: CopyTaskSpec) -> TopicIdsReader | None:
    """Return how an exactly-once task reads its source topics' ids with a real admin client (``None`` otherwise)."""
    if not spec.exactly_once or spec.source_admin_conf is None:
        return None
    conf = dict(spec.source_admin_conf)
    held: list[ClusterAdmin] = []

    def read(topics: Sequence[str]) -> Mapping[str, str]:
        if not held:
            admin = AdminClient(with_logger(conf, str(conf.get("client.id", "topic-ids-admin"))))
            held.append(ClusterAdmin(admin, spec.source, timeout_s=SOURCE_END_TIMEOUT_S))
        return {t: d.topic_id for t, d in held[0].describe_topics(topics).items() if d.topic_id}

    return read


def catch_up_reader(spec: CopyTaskSpec) -> Callable[[int], Consumer]:
    """Return how a parallel catch-up's reader ``i`` builds its consumer: the task's settings, its own client id.

    The reader only assigns and reads (no group, no commit): ``enable.auto.commit`` is off as the task's own.
    """

    def build(index: int) -> Consumer:
        conf = dict(spec.consumer_conf)
        client_id = f"{conf.get('client.id', 'replication-consumer')}|catch-up-{index}"
        conf.update(
            {
                "client.id": client_id,
                "enable.auto.commit": False,
                "max.partition.fetch.bytes": READER_FETCH_BYTES,
                "queued.max.messages.kbytes": READER_FETCH_BYTES // 1024,
            }
        )
        return Consumer(with_logger(conf, client_id))

    return build


def idle_checker(spec: CopyTaskSpec) -> Consumer:
    """Return the consumer that asks the end offsets of a task's idle partitions: never assigned, its own client id."""
    conf = dict(spec.consumer_conf)
    client_id = f"{conf.get('client.id', 'replication-consumer')}|idle-check"
    conf.update({"client.id": client_id, "enable.auto.commit": False})
    return Consumer(with_logger(conf, client_id))


def run_copy_task(spec: CopyTaskSpec) -> TaskResult:
    """Build the task's clients and grant link, run it (:class:`CopyTaskRunner`), release them; OSError: no driver."""
    sources: dict[PartitionKey, FetchSource] = {}
    data = _producer(spec.producer_conf, **({"transactional.id": spec.transactional_id} if spec.exactly_once else {}))
    commits = _producer(spec.commit_conf)
    syncs = _producer(spec.syncs_conf) if spec.syncs_conf is not None else None
    schema_ids = SchemaIdTranslator.for_task(spec.schemas, spec.flow) if spec.schemas is not None else None
    outcome: TaskOutcome | None = None
    try:
        grants = GrantClient(
            spec.grant_address,
            {"flow": spec.flow, "task": spec.task_index, "generation": spec.generation},
            alive=executor_jvm_alive(),
        )
        conf = dict(spec.consumer_conf)
        main = Consumer(
            with_fetch_stats(with_logger(conf, str(conf.get("client.id", "replication-consumer"))), sources)
        )
        inner: PausingConsumer = main
        if spec.catch_up_readers > 1:  # else no wrapper at all (catch_up.py's U6)
            inner = CatchUpConsumer(
                main,
                catch_up_reader(spec),
                count=spec.catch_up_readers,
                backlog_records=spec.catch_up_backlog_records,
            )
        # idle partitions paused, woken by end offsets asked on a connection of their own (#44)
        consumer: SourceConsumerLike = IdleConsumer(inner, checker=lambda: idle_checker(spec))
        runner = CopyTaskRunner(
            spec,
            consumer=consumer,
            data=data,
            commit_producer=commits,
            syncs_producer=syncs,
            grants=grants,
            sources=sources,
            stored_offsets=stored_offsets_reader(spec),
            topic_ids=topic_ids_reader(spec),
            schema_ids=schema_ids,
        )
        result = runner.run()
        outcome = result.outcome
        return result
    finally:
        clean = outcome in CLEAN_OUTCOMES
        for p in (data, commits, syncs):
            _release(p, clean=clean)
        if schema_ids is not None:
            schema_ids.close()


def warm_worker(index: int) -> int:
    """Return ``index``: a warm-up task's body; unpickling it loads this module (the copy task's) into the worker."""
    return index


def run_copy_job(spec: CopyTaskSpec) -> TaskResult:
    """Run :func:`run_copy_task` as the one Spark task of its job, with no retry by Spark.

    Spark re-runs a failed or lost task with its first attempt's arguments, whose positions are stale:
    so a later attempt ends at once as ``lost`` (the driver restarts it from its committed offsets), and
    an error is returned as ``failed`` with its :class:`~mirrorspark.errors.ErrorInfo`, never raised.
    """
    from pyspark import TaskContext

    context = TaskContext.get()
    if context is not None and context.attemptNumber() > 0:
        return TaskResult(spec.flow, spec.task_index, spec.generation, TaskOutcome.LOST)
    try:
        return run_copy_task(spec)
    except MirrorsparkError as e:
        info = e.info(flow=spec.flow, task=spec.task_index)
    except Exception as e:  # anything else: named by its type, as the driver would see the job's failure
        text = str(e).splitlines()[0] if str(e) else type(e).__name__
        info = DataPathError(f"flow {spec.flow}: copy task {spec.task_index} failed: {text}").info(
            flow=spec.flow, task=spec.task_index
        )
    return TaskResult(spec.flow, spec.task_index, spec.generation, TaskOutcome.FAILED, error=info)


__all__ = [
    "CLEAN_OUTCOMES",
    "FETCH_STATS_INTERVAL_MS",
    "catch_up_reader",
    "idle_checker",
    "run_copy_job",
    "run_copy_task",
    "stored_offsets_reader",
    "topic_ids_reader",
    "warm_worker",
    "with_fetch_stats",
]
