"""The benchmark's environment: local clusters, the one SparkSession, fresh flows.

Fresh flows
-----------
Every measured run must copy the whole workload into an empty target. The source topic
is loaded once, so freshness comes from the *source alias*: run ``n`` calls the source
cluster ``s<n>`` in its ``mm2.properties`` (same bootstrap servers), which gives the flow
``s<n>->target`` a remote topic ``s<n>.<topic>`` and a Connect offsets topic
``mm2-offsets.s<n>.internal`` on the target that never existed before — no topic is ever
re-created under an old name (which, with idempotent producers cached in Spark workers,
could trip sequence-number checks), and no Kafka metadata propagation is waited on.
After the run every topic of the flow on the target (``s<n>.*``, ``*.s<n>.internal``) is
deleted so that the target's disk use stays bounded.
The offset syncs go to the target too (``offset-syncs.topic.location = target``, KIP-716, MM2 3.0+):
``mm2-offset-syncs.s<n>.internal``, new for each run and deleted with it. At MM2's default
location, ``mm2-offset-syncs.target.internal`` on the source, every run of a full benchmark
appended to one topic that every later run's checkpoints read from the beginning at start: the
2026-11-27 full run's driver CPU grew from 0.1 to 5 s per copy, and the scale case's idle
mirrorspark spent a whole core reading the earlier runs' syncs (issue #26).
"""

from __future__ import annotations

import gc
import logging
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from confluent_kafka.admin import AdminClient

from mirrorspark.kafka.local.clusters import start_clusters, stop_clusters
from mirrorspark.kafka.local.model import LocalClusters
from mirrorspark.kafka.local.settings import HEAP_OPTS_ENV

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["OFFSET_SYNCS", "SOURCE", "TARGET", "BenchEnv"]

log = logging.getLogger(__name__)

OFFSET_SYNCS = {"offset-syncs.topic.location": "target"}
"""Every run's offset syncs in a topic of its own on the target, deleted with the run's topics (module notes)."""

SOURCE = "source"
"""Alias of the source cluster (as started; flows use a fresh alias per run)."""
TARGET = "target"
"""Alias of the target cluster."""
BROKER_PROPS = {"log.segment.delete.delay.ms": "1000"}
"""The one broker setting off Kafka's defaults: a deleted topic's files go after 1 s, not 60 (see
:meth:`BenchEnv.delete_topics`); nothing on the data path."""


class BenchEnv:
    """Local ``source`` and ``target`` clusters (one broker each) and a lazily built SparkSession.

    Parameters
    ----------
    work_dir:
        Where the clusters keep data and state (``bench/.work/<case>``); stale data there is
        deleted on start.
    master:
        Spark master URL, e.g. ``local[*]``.
    broker_heap:
        The brokers' heap flags (``KAFKA_HEAP_OPTS``), e.g. Kafka's own ``-Xms1G -Xmx1G``; ``None``: the
        launcher's 512 MiB (or ``KAFKA_HEAP_OPTS`` if set).

    Use as a context manager: clusters start on enter and stop on exit, as does Spark.
    """

    def __init__(self, work_dir: Path, *, master: str = "local[*]", broker_heap: str | None = None) -> None:
        self.work_dir = work_dir
        self.master = master
        self.broker_heap = broker_heap
        self.clusters: LocalClusters | None = None
        self.cluster_start_s = 0.0
        self.spark_start_s = 0.0
        self._spark: SparkSession | None = None
        self._runs = 0

    # ------------------------------------------------------------------ lifecycle

    def __enter__(self) -> BenchEnv:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start(self) -> None:
        """Start both clusters; records :attr:`cluster_start_s` (seconds)."""
        t = time.perf_counter()
        stop_clusters(self.work_dir)  # a crashed earlier run may have left brokers behind
        # Kafka's default broker settings (as the launcher writes them): nothing tuned for the bench.
        # 240 s: on a machine shared with other work, brokers took more than the launcher's default 90 s
        saved = os.environ.get(HEAP_OPTS_ENV)
        if self.broker_heap is not None:
            os.environ[HEAP_OPTS_ENV] = self.broker_heap
        try:
            self.clusters = start_clusters(
                [SOURCE, TARGET], base_dir=self.work_dir, brokers=1, timeout_s=240.0, extra_broker_props=BROKER_PROPS
            )
        finally:
            if saved is None:
                os.environ.pop(HEAP_OPTS_ENV, None)
            else:
                os.environ[HEAP_OPTS_ENV] = saved
        self.cluster_start_s = time.perf_counter() - t

    def close(self) -> None:
        """Stop Spark, then the clusters. Idempotent."""
        self._stop_spark()
        gc.collect()  # release librdkafka clients of finished runs before their brokers go away
        if self.clusters is not None:
            stop_clusters(self.work_dir)
            self.clusters = None

    # ------------------------------------------------------------------ accessors

    def _clusters(self) -> LocalClusters:
        if self.clusters is None:
            raise RuntimeError("the benchmark clusters are not started")
        return self.clusters

    def bootstrap(self, alias: str) -> str:
        """``bootstrap.servers`` of ``source`` or ``target``."""
        return self._clusters().bootstrap(alias)

    def broker_pids(self) -> list[int]:
        """Process ids of every broker JVM (excluded from replicator CPU, measured apart)."""
        return [b.pid for c in self._clusters().clusters.values() for b in c.brokers if b.pid]

    @property
    def spark_started(self) -> SparkSession | None:
        """The SparkSession if :meth:`spark` has built it, else ``None`` (never starts Spark)."""
        return self._spark

    def spark(self) -> SparkSession:
        """The one SparkSession, built on first use; its start-up time goes to :attr:`spark_start_s`.

        Start-up includes a trivial job so that the JVM has launched a Python worker before
        any measured run.
        """
        if self._spark is None:
            from mirrorspark.spark_session import build_spark_session

            os.environ.setdefault("MIRRORSPARK_SPARK_LOG_LEVEL", "ERROR")
            t = time.perf_counter()
            spark = build_spark_session(
                master=self.master,
                app_name="mirrorspark-bench",
                ui=False,
            )
            parallelism = spark.sparkContext.defaultParallelism
            spark.sparkContext.parallelize(range(parallelism), parallelism).map(lambda x: x).collect()
            self.spark_start_s = time.perf_counter() - t
            self._spark = spark
        return self._spark

    def _stop_spark(self) -> None:
        if self._spark is not None:
            try:
                self._spark.stop()
            finally:
                self._spark = None

    def use_master(self, master: str) -> None:
        """Run Spark on ``master`` from the next :meth:`spark` call on (a session on another master is stopped)."""
        if master != self.master:
            self._stop_spark()
            self.master = master

    def spark_with_slots(self, slots: int) -> SparkSession:
        """The SparkSession with at least ``slots`` task slots: on ``local[slots]`` if the current master has fewer.

        As ``mirrorspark run`` sizes its local master by the copy tasks (``max(cores, 2 x slots, 8)``), a
        run of many flows needs a session of more slots than the benchmark's ``local[N]``; its start-up is
        not measured (:attr:`spark_start_s`). Restore the master with :meth:`use_master`.
        """
        spark = self.spark()
        if int(spark.sparkContext.defaultParallelism) >= slots:
            return spark
        if not self.master.startswith("local"):
            raise RuntimeError(f"Spark master {self.master} offers fewer than the {slots} task slots needed")
        self.use_master(f"local[{slots}]")
        return self.spark()

    # ------------------------------------------------------------------ fresh flows

    def fresh_alias(self) -> str:
        """A source alias never used before in this environment: ``s1``, ``s2``, ..."""
        self._runs += 1
        return f"s{self._runs}"

    def mm2_properties(self, source_alias: str | Sequence[str], extra: Mapping[str, str]) -> str:
        """``mm2.properties`` text for the flow ``<source_alias>->target``, or one such flow per alias.

        Parameters
        ----------
        source_alias:
            The alias the source cluster goes by in this run (:meth:`fresh_alias`); several aliases
            name the one source cluster several times, each alias a flow of its own into the target.
        extra:
            Further properties (topics, tasks.max, ...), written last.
        """
        aliases = [source_alias] if isinstance(source_alias, str) else list(source_alias)
        clusters = self._clusters()
        src = clusters.cluster(SOURCE)
        renamed = replace(
            clusters,
            clusters={**{a: replace(src, alias=a) for a in aliases}, TARGET: clusters.cluster(TARGET)},
        )
        return renamed.mm2_properties([(a, TARGET) for a in aliases], extra={**OFFSET_SYNCS, **extra})

    def delete_flow_topics(self, source_alias: str, *, timeout_s: float = 60.0) -> list[str]:
        """Delete every topic a run's flow left on the target; return their names.

        That is each topic named ``<source_alias>.<...>`` (remote topics) or
        ``<...>.<source_alias>.internal`` (the flow's Connect offsets topic and any other
        per-source internal topic mirrorspark writes).

        Parameters
        ----------
        source_alias:
            The alias the run gave the source cluster (:meth:`fresh_alias`).
        timeout_s:
            Seconds to wait for the listing and the deletion.
        """
        admin = AdminClient({"bootstrap.servers": self.bootstrap(TARGET), "log_level": 3})
        names = admin.list_topics(timeout=timeout_s).topics
        doomed = sorted(t for t in names if t.startswith(f"{source_alias}.") or t.endswith(f".{source_alias}.internal"))
        self.delete_topics(TARGET, doomed, timeout_s=timeout_s)
        return doomed

    def create_topic(self, alias: str, topic: str, partitions: int, *, timeout_s: float = 60.0) -> None:
        """Create a topic (replication factor 1) on ``source`` or ``target`` and wait for it."""
        from confluent_kafka.admin import NewTopic

        admin = AdminClient({"bootstrap.servers": self.bootstrap(alias), "log_level": 3})
        futures = admin.create_topics(
            [NewTopic(topic, num_partitions=partitions, replication_factor=1)], operation_timeout=timeout_s
        )
        for f in futures.values():
            f.result(timeout=timeout_s)

    def delete_topics(self, alias: str, topics: list[str], *, timeout_s: float = 60.0) -> None:
        """Delete topics on ``source`` or ``target``; missing ones are ignored.

        Parameters
        ----------
        alias:
            ``"source"`` or ``"target"``.
        topics:
            Topic names.
        timeout_s:
            Seconds to wait for the controller to accept the deletion.
        """
        if not topics:
            return
        admin = AdminClient({"bootstrap.servers": self.bootstrap(alias), "log_level": 3})
        futures: dict[str, Any] = admin.delete_topics(topics, operation_timeout=timeout_s)
        for name, f in futures.items():
            try:
                f.result(timeout=timeout_s)
            except Exception as e:  # UNKNOWN_TOPIC_OR_PART: already gone
                log.debug("deleting %s on %s: %s", name, alias, e)
        self._wait_files_released(alias, timeout_s=timeout_s)

    def _wait_files_released(self, alias: str, *, timeout_s: float) -> None:
        """Wait until the cluster's brokers removed every deleted log (its ``*-delete`` directory, files still open).

        A deleted partition keeps a file open until then; 10,000 of them and the next run's 10,000 new
        ones went past a broker's 20,000 open files (Kafka's docs ask for 100,000, this machine allows no more).
        """
        dirs = [b.node_dir / "data" for b in self._clusters().clusters[alias].brokers]
        deadline = time.monotonic() + timeout_s
        while any(e.name.endswith("-delete") for d in dirs if d.is_dir() for e in d.iterdir()):
            if time.monotonic() > deadline:
                log.warning("deleted logs on %s still on disk after %.0f s", alias, timeout_s)
                return
            time.sleep(0.5)
