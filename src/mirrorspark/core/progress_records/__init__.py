"""The progress channel's records: what the copy tasks report after each commit, what the driver adds (no I/O).

A long-running copy task (:mod:`mirrorspark.replication.stream`) commits its own source
offsets every ``offset.flush.interval.ms``; right after each commit it writes one
:class:`PartitionReport` per partition that moved to the flow's progress channel, a topic on
the target named ``mm2-task-progress<isep><source><isep>internal``
(:func:`~mirrorspark.mm2.internal_topics.mirrorspark_topic` with
:data:`~mirrorspark.mm2.internal_topics.TASK_PROGRESS_PREFIX`). The driver reads it to follow
positions (``--until-caught-up``, ``status``, lag) and to feed the checkpoint emitter's
exact translation; the metrics service reads the same records, like SRM's raw-metrics topic.

The topic is compacted with a ``min.compaction.lag.ms`` of one hour: the last hour of reports
stays readable as a stream of samples, and the newest report of every partition is kept for
good, so the copied segments it carries — and with them exact offset translation — survive
restarts of the replicator.

Record layout (compact JSON, UTF-8), one record per partition and commit:

* key ``{"flow":"A->B","topic":"t1","partition":0}``
* value ``{"task":<task index>,"generation":<n>,"next_offset":<next upstream offset to copy>,
  "records":<n>,"value_bytes":<n>,"key_bytes":<n>,"latency_ms_sum":<n>,"latency_ms_max":<n>,
  "latency_samples":<n>,"segments":[[upstream_start,downstream_start,count],...],"at":<epoch ms>}``

``records``, the byte counts and the latency figures are those of the commit interval (deltas);
``segments`` are the partition's most recent copied runs (:data:`SEGMENTS_KEPT` at most,
oldest first), the whole window each time, so the newest record alone restores them.

**Version 2** (:data:`FORMAT_VERSION`) is additive: a version-1 reader ignores what it does not
know, and a version-2 reader reads version-1 records (``"v"`` absent = 1) with the new figures
empty.

* Partition reports gain ``"v":2``, ``"latency_ms_min"``, ``"latency_hist"`` (the interval's latency
  samples counted per bucket of :data:`~mirrorspark.mm2.metrics.LATENCY_BUCKETS_MS`) and the record
  age at poll (MM2's ``record-age-ms``): ``"age_ms_sum"``, ``"age_ms_min"``, ``"age_ms_max"``,
  ``"age_samples"``; and (additive, absent = -1) ``"fetched_from"`` and ``"leader"``: the source broker the
  task's consumer fetched the partition from and its leader, by librdkafka's statistics (KIP-392 follower
  fetching); and (additive, absent = 0) ``"dropped"``: records of the interval a transform dropped; and
  (additive, absent = null) ``"topic_id"``: the id (KIP-516) of the source topic's incarnation the task
  copied, so that a reader drops the late reports of a topic deleted and re-created; and (additive,
  absent = null) ``"epoch"``: the lease epoch the task's generation was started under, and ``"run"``: the
  driver run that started the task (a random id per flow per process), so that a driver moves positions
  and totals only on reports of its own generations (generation numbers start at 1 in every process);
  and (additive, absent = null and 0) ``"attempt"`` and ``"seq"``: the writing task attempt (a random id)
  and the report's number among its reports of the partition, so that a report written again after its
  write timed out (at least once) is counted once (:class:`ReportSequences`); and (additive, absent = 0,
  written only when not 0) ``"schema_hits"``, ``"schema_misses"`` and ``"schema_unknown"``: records of the
  interval whose key or value schema id (Confluent wire format) was translated from the task's id cache, was
  translated after asking the registries, or is unknown to the source registry and was copied unchanged.
* The driver writes four more kinds of records, told apart by ``"kind"`` in the key (a key
  without ``"kind"`` is a partition report; readers skip kinds they do not know):

  - ``{"kind":"flow","flow":F}`` -> ``{"v":1,"at":ms,"state":"running"|"standby"|"failed"|"stopped",
    "engine":"continuous"|"batch","tasks":n,"task_restarts":n,"generation":n,"error":text|null,
    "interval_ms":n,"throttle_limit":n,"throttle_rate":n|null,"throttled_ms":n}`` (:class:`FlowMetrics`;
    the last three since #43, absent in older records);
  - ``{"kind":"lag","flow":F,"topic":t}`` -> ``{"v":1,"at":ms,"remote_topic":rt,"partitions":[{"p":n,
    "position":n,"end":n,"lag":n,"lag_ms":n|null,"records":n,"value_bytes":n}]}`` (:class:`TopicLag`):
    per partition the committed position, the source end offset, lag in records and in ms
    (:class:`~mirrorspark.mm2.metrics.LagClock`), and the records and value bytes copied since the
    driver started (MM2's ``record-count``/``byte-count``);
  - ``{"kind":"group","flow":F,"group":g}`` -> ``{"v":1,"at":ms,"latency_ms":n|null,"partitions":[{"topic":t,
    "remote_topic":rt,"p":n,"upstream":n,"checkpoint_upstream":n|null,"checkpoint_downstream":n|null,
    "lag":n|null,"rereads":n|null}]}`` (:class:`GroupMetrics`): the checkpoint cycle's latency (MM2's
    ``checkpoint-latency-ms``), and per partition the group's committed offset on the source, its newest
    checkpoint, the records committed since (checkpoint lag) and the records a failover to that
    checkpoint would read again;
  - ``{"kind":"group-sync","flow":F,"group":g}`` -> ``{"v":1,"at":ms,"synced":n,"skipped_active":n,
    "skipped_unknown":n}`` (:class:`GroupSync`, additive: a reader without it knows no counts): what group
    offset sync (``sync.group.offsets.enabled``) did to the target group since the driver started
    (:class:`~mirrorspark.core.group_sync_counts.GroupSyncCounts`), written whenever the counts changed, cycle
    or not (its own kind, so the ``group`` record's samples are not repeated); compaction keeps the newest.

* The driver's failover watch (``mirrorspark.failover.policy``, :mod:`mirrorspark.core.failover_policy`)
  writes a fifth kind, only when something happens; compaction keeps the newest per flow, so it reads
  as the flow's failover state:

  - ``{"kind":"failover","flow":F}`` -> ``{"v":1,"at":ms,"event":"failover"|"recovered","policy":p,
    "dry_run":bool,"since":ms,"reason":text,"events":n,"groups":[{"group":g,"outcome":o,"offsets":n,
    "detail":text|null}]}`` (:class:`FailoverEvent`): ``since`` is when the source started to count as
    failed, ``events`` the failover events the driver recorded for the flow since it started, and per
    listed group what was done: ``moved`` (its checkpoints committed on T), ``would-move`` (dry run),
    ``refused`` (active members on T), ``manual`` (policy ``manual``: only recorded) or ``failed``.
    A ``recovered`` record has no groups (failback stays the operator's decision).

* A flow that replicates schemas (``sync.schemas.enabled``) gets a sixth kind from the driver, the newest
  figures of its schema sync (:class:`~mirrorspark.core.schemas.figures.SchemaSyncFigures`), written when
  they change; compaction keeps the newest per flow:

  - ``{"kind":"schemas","flow":F}`` -> ``{"v":1,"at":ms,"subjects":n,"versions":n,"registered":n,
    "synced_at":ms,"error":text|null}`` (:class:`FlowSchemas`): source subjects (and their versions) the
    target holds under the policy's names, versions the driver registered on the target since it started,
    when the last sync pass ended (0 before the first) and that pass's error (null when it succeeded).

The records, one room each: the copy tasks' partition reports (``partition_reports``), the driver's
``flow``/``lag``/``group``/``group-sync``/``failover``/``schemas`` records (``driver_records``), the JSON they
share and a record's kind (``channel_json``). Import from here: this package is the channel format's public surface.
"""

from mirrorspark.core.progress_records.channel_json import record_kind
from mirrorspark.core.progress_records.driver_records import (
    FailoverEvent,
    FlowMetrics,
    FlowSchemas,
    GroupFailover,
    GroupMetrics,
    GroupPartition,
    GroupSync,
    PartitionLag,
    TopicLag,
    decode_failover_event,
    decode_flow_metrics,
    decode_flow_schemas,
    decode_group_metrics,
    decode_group_sync,
    decode_topic_lag,
    encode_failover_event,
    encode_flow_metrics,
    encode_flow_schemas,
    encode_group_metrics,
    encode_group_sync,
    encode_topic_lag,
)
from mirrorspark.core.progress_records.partition_reports import (
    FORMAT_VERSION,
    SCHEMA_FIELDS,
    SEGMENTS_KEPT,
    PartitionReport,
    ReportSequences,
    decode_report,
    encode_report,
    newest_segments,
    report_key,
)

__all__ = [
    "FORMAT_VERSION",
    "SCHEMA_FIELDS",
    "SEGMENTS_KEPT",
    "FailoverEvent",
    "FlowMetrics",
    "FlowSchemas",
    "GroupFailover",
    "GroupMetrics",
    "GroupPartition",
    "GroupSync",
    "PartitionLag",
    "PartitionReport",
    "ReportSequences",
    "TopicLag",
    "decode_failover_event",
    "decode_flow_metrics",
    "decode_flow_schemas",
    "decode_group_metrics",
    "decode_group_sync",
    "decode_report",
    "decode_topic_lag",
    "encode_failover_event",
    "encode_flow_metrics",
    "encode_flow_schemas",
    "encode_group_metrics",
    "encode_group_sync",
    "encode_report",
    "encode_topic_lag",
    "newest_segments",
    "record_kind",
    "report_key",
]
