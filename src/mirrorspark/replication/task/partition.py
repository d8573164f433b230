"""A copy task's state per source partition: what was produced and acknowledged, what was committed."""

from __future__ import annotations

import time
from typing import Any

from confluent_kafka import KafkaError

from mirrorspark.core.provenance import Hop, fresh_prefix
from mirrorspark.kafka.protocols import DeliveredLike
from mirrorspark.mm2.metrics import HISTOGRAM_SIZE, bucket_of
from mirrorspark.mm2.offset_syncs import CopiedSegment, SyncState
from mirrorspark.replication.task.schema_ids import SchemaIdTranslator
from mirrorspark.replication.task.spec import PartitionAssignment, PartitionKey

LATENCY_SAMPLE_MASK = 15
"""Replication latency and record age are sampled on every 16th record of a partition (the 1st, 17th, ... a task
produced or saw acknowledged, whatever commits came between: a partition at a few records per commit is sampled too)."""

FULL_SCAN_EVERY = 30
"""Every this many commits a task checks all its partitions' positions, not only those that read records."""


class PartitionCopy:
    """One source partition inside a copy task (hot path; owned by the task's thread).

    Delivery reports of one partition arrive in production order (idempotent producer), so the ``i``-th
    report belongs to ``upstream[i]``: :meth:`delivered` only appends to ``downstream``, and a commit
    folds both (:func:`~mirrorspark.mm2.offset_syncs.fold_acknowledged`). ``committed`` is the committed
    position (next offset to copy); ``read_to`` the next offset to read (-1 before the first record);
    ``error`` the first failed delivery since the last commit; ``reports`` the last report's ``seq``.
    ``schema_hits``/``schema_misses``/``schema_unknown`` count the interval's records whose schema id was
    translated from the task's id cache, translated after asking the registries, or unknown to the source
    registry and copied unchanged. ``provenance``: see :meth:`stamp_provenance`.
    """

    __slots__ = (
        "acked_n",
        "age_max",
        "age_min",
        "age_n",
        "age_sum",
        "assignment",
        "committed",
        "downstream",
        "dropped",
        "error",
        "failures",
        "key_bytes",
        "lat_hist",
        "lat_max",
        "lat_min",
        "lat_n",
        "lat_sum",
        "partition",
        "produced_n",
        "provenance",
        "read_to",
        "reports",
        "schema_hits",
        "schema_ids",
        "schema_misses",
        "schema_unknown",
        "segments",
        "state",
        "target_topic",
        "transforms",
        "upstream",
        "value_bytes",
    )

    def __init__(self, assignment: PartitionAssignment) -> None:
        self.assignment = assignment
        self.partition = assignment.partition
        self.target_topic = assignment.target_topic
        self.transforms = assignment.transforms
        self.schema_ids: SchemaIdTranslator | None = None  # the task's, unless the flow copies bytes as they are
        # provenance.header.enable: (the first 30 bytes of a fresh header, the flow's hop); None: headers unread
        self.provenance: tuple[bytes, Hop] | None = None
        self.committed = assignment.start
        self.read_to = -1  # next offset to read, as far as this task has read (-1: nothing yet)
        self.state = SyncState()
        self.segments: tuple[CopiedSegment, ...] = ()
        self.upstream: list[int] = []
        self.downstream: list[int] = []
        # records produced and acknowledged since the task began (not reset by a commit): what is sampled
        self.produced_n = 0
        self.acked_n = 0
        self.failures = 0
        self.error: tuple[KafkaError, int] | None = None  # the first failed delivery: (error, upstream offset)
        self.reports = 0
        self.reset_interval()

    @property
    def key(self) -> PartitionKey:
        """``(source topic, partition)``."""
        return self.assignment.key

    def stamp_provenance(self, source_alias: str, hop: Hop) -> None:
        """Stamp this partition's copies with the provenance header of flow ``hop`` (from ``source_alias``)."""
        a = self.assignment
        self.provenance = (fresh_prefix(hop.source, source_alias, a.source_topic, a.partition), hop)

    @property
    def name(self) -> str:
        """``"<source topic>-<partition>"``, for messages."""
        return f"{self.assignment.source_topic}-{self.partition}"

    def reset_interval(self) -> None:
        """Start a new reporting interval: bytes, drops, schema-id counts, latency and record ages back to zero."""
        self.value_bytes = self.key_bytes = self.dropped = 0
        self.schema_hits = self.schema_misses = self.schema_unknown = 0
        self.lat_sum = self.lat_max = self.lat_n = 0
        self.lat_min = self.age_min = -1  # -1: no sample yet
        self.lat_hist = [0] * HISTOGRAM_SIZE
        self.age_sum = self.age_n = self.age_max = 0

    def forget_unacknowledged(self) -> None:
        """Drop what was produced since the last commit (an aborted transaction): nothing of it is kept."""
        self.upstream.clear()
        self.downstream.clear()
        self.error = None
        self.failures = 0
        self.reset_interval()

    def interval_metrics(self) -> dict[str, Any]:
        """Return the interval's latency and record-age figures as fields of a ``PartitionReport``."""
        return {
            "latency_ms_min": self.lat_min if self.lat_min >= 0 else None,
            "latency_hist": tuple(self.lat_hist),
            "age_ms_sum": self.age_sum,
            "age_ms_min": self.age_min if self.age_min >= 0 else None,
            "age_ms_max": self.age_max,
            "age_samples": self.age_n,
        }

    def sample_age(self, timestamp_ms: int) -> None:
        """Record one record's age at poll, ``now - timestamp_ms`` in ms (MM2's ``record-age-ms``)."""
        age = max(0, int(time.time() * 1000) - timestamp_ms)
        self.age_sum += age
        self.age_n += 1
        if age > self.age_max:
            self.age_max = age
        if self.age_min < 0 or age < self.age_min:
            self.age_min = age

    def delivered(self, err: KafkaError | None, msg: DeliveredLike) -> None:
        """Record one delivery report (the producer's callback, in production order; timestamps in epoch ms)."""
        if err is None:
            self.downstream.append(msg.offset())  # type: ignore[arg-type]  # set when delivered; no cast() per record
            self.acked_n += 1
            if not (self.acked_n - 1) & LATENCY_SAMPLE_MASK:  # the 1st, 17th, ... since the task began
                lat = int(time.time() * 1000) - msg.timestamp()[1]
                self.lat_sum += lat
                self.lat_n += 1
                if lat > self.lat_max:
                    self.lat_max = lat
                if self.lat_min < 0 or lat < self.lat_min:
                    self.lat_min = max(0, lat)
                self.lat_hist[bucket_of(lat)] += 1
            return
        if self.error is None:
            index = len(self.downstream) + self.failures
            self.error = (err, self.upstream[index] if index < len(self.upstream) else -1)
        self.failures += 1


class TaskPartitions:
    """A copy task's partitions, and which of them a commit must look at.

    A commit looks at the :attr:`dirty` partitions (read or awaiting acknowledgements since the last
    commit), and every :data:`FULL_SCAN_EVERY` commits (and at the last) at all of them, for positions
    moved by transaction markers or compaction alone. ``copied``: records committed by this run.
    """

    def __init__(self, assignments: tuple[PartitionAssignment, ...]) -> None:
        self.by_key: dict[PartitionKey, PartitionCopy] = {a.key: PartitionCopy(a) for a in assignments}
        self.dirty: set[PartitionKey] = set()
        self.out_of_range: list[PartitionKey] = []
        self.copied = 0
        self._commits = 0

    def due(self, *, final: bool) -> list[PartitionKey]:
        """Count one more commit and return the partitions it looks at (all when ``final``); empties the dirty set."""
        self._commits += 1
        full = final or self._commits % FULL_SCAN_EVERY == 0
        keys = list(self.by_key) if full else [k for k in self.dirty if k in self.by_key]
        self.dirty.clear()
        return keys


__all__ = ["FULL_SCAN_EVERY", "LATENCY_SAMPLE_MASK", "PartitionCopy", "TaskPartitions"]
