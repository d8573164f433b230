"""mirrorspark's own keys (``mirrorspark.*``): replica placement, the data path, the metrics service, failover.

Each is declared once here; MM2's keys are in :mod:`~mirrorspark.config.keys.mm2_keys`.
"""

from __future__ import annotations

from typing import Final

from mirrorspark.config.keys.config_key import ConfigKey

RETIRED_BATCH_ENGINE: Final = (
    "it configured the batch engine, which was removed: every run, 'run --until-caught-up' included, runs on "
    "the long-running copy tasks"
)
"""Why the batch engine's keys (``mirrorspark.batch.*``) have no effect (the batch engine was removed in issue #22)."""


MIRRORSPARK_KEYS: Final[tuple[ConfigKey, ...]] = (
    # --- mirrorspark ------------------------------------------------------------------------
    ConfigKey(
        "mirrorspark.replica.placement",
        "string",
        None,
        "Replica placement of the remote topics mirrorspark creates on the target, in Confluent's placement JSON "
        '(version 1 or 2: "replicas" with "count" and "constraints": {"rack": ...}): a path to a JSON file, or the '
        "JSON itself. The JSON is one placement for every remote topic, or a list "
        '[{"topics": REGEX, "placement": {...}}] by remote topic name (the first match wins, unmatched topics get '
        "replication.factor). New remote topics and partitions get an explicit replica assignment over the "
        "target's racks, preferred leaders in the first rack listed; existing topics are moved by "
        "'mirrorspark placement apply'. observers are refused (Apache Kafka has none: replicate to that region "
        "with a flow instead); observerPromotionPolicy is accepted with a warning and has no effect. mirrorspark's "
        "own key, read per flow (S->T.mirrorspark.replica.placement) or at top level for every flow; unset = "
        "the broker's own placement.",
        field="replica_placement",
    ),
    ConfigKey(
        "mirrorspark.executor.source.bootstrap.servers",
        "string",
        None,
        "bootstrap.servers the copy tasks (on Spark's executors) use for the flow's source cluster, instead of "
        "the cluster's own (<S>.bootstrap.servers, which the driver keeps using): for a driver that reaches the "
        "cluster through another network than its executors (a driver outside the executors' Kubernetes "
        "network or VPC, a proxy or a different listener of the brokers). Every other client setting is the "
        "cluster's. mirrorspark's own key, read per flow (S->T.mirrorspark.executor.source.bootstrap.servers) "
        "or at top level for every flow; unset = the cluster's bootstrap.servers.",
        field="executor_source_bootstrap_servers",
    ),
    ConfigKey(
        "mirrorspark.executor.target.bootstrap.servers",
        "string",
        None,
        "bootstrap.servers the copy tasks (on Spark's executors) use for the flow's target cluster, instead of "
        "the cluster's own (<T>.bootstrap.servers, which the driver keeps using: the lease, the progress "
        "channel, the control jobs): see mirrorspark.executor.source.bootstrap.servers. Read per flow "
        "(S->T.mirrorspark.executor.target.bootstrap.servers) or at top level for every flow; unset = the "
        "cluster's bootstrap.servers.",
        field="executor_target_bootstrap_servers",
    ),
    ConfigKey(
        "mirrorspark.batch.max.records.per.partition",
        "int",
        "200000",
        "Most records one batch of the batch engine copied from one source partition.",
        "records",
        scope="mirrorspark",
        minimum=1,
        effect="accepted",
        retired=RETIRED_BATCH_ENGINE,
        holder="data_path",
    ),
    ConfigKey(
        "mirrorspark.batch.idle.interval.ms",
        "long",
        "200",
        "Pause between two batches of the batch engine when the previous one copied nothing.",
        "ms",
        scope="mirrorspark",
        minimum=0,
        effect="accepted",
        retired=RETIRED_BATCH_ENGINE,
        holder="data_path",
    ),
    ConfigKey(
        "mirrorspark.engine",
        "string",
        "auto",
        "Which data-path engine runs the copy tasks. mirrorspark has one: long-running Spark tasks, "
        "min(tasks.max, partitions) per flow, that poll, produce and commit their own offsets every "
        "offset.flush.interval.ms, supervised and restarted by the driver under the flow's lease; 'run "
        "--until-caught-up' runs on them too and ends once every partition reached the end offsets listed at "
        "start. auto and continuous both name it.",
        scope="mirrorspark",
        choices=("auto", "continuous"),
        removed_choices=(
            (
                "batch",
                "the batch engine was removed (one Spark job per batch, committed by the driver, with no lease: two "
                "bounded runs could copy one flow at once); 'run --until-caught-up' runs on the copy tasks",
            ),
        ),
        effect="accepted",
        retired="mirrorspark has one engine, which auto and continuous both name (batch was removed)",
        holder="data_path",
    ),
    ConfigKey(
        "mirrorspark.batch.follow.ms",
        "long",
        "1000",
        "How long a batch of the batch engine kept copying records that arrived after it was planned.",
        "ms",
        scope="mirrorspark",
        minimum=0,
        effect="accepted",
        retired=RETIRED_BATCH_ENGINE,
        holder="data_path",
    ),
    ConfigKey(
        "mirrorspark.read.mode",
        "string",
        "consumer",
        "How Spark tasks read the source: consumer (confluent-kafka consumers inside Spark tasks) is the only "
        "read mode, so the key changes nothing and is kept so that files setting it still load; spark-kafka "
        "(Spark's Kafka source) was removed and is an error.",
        scope="mirrorspark",
        effect="accepted",
        choices=("consumer",),
        removed_choices=(
            (
                "spark-kafka",
                "it could write one flow's records into another flow's remote topic (flows copying the same "
                "topic name from different clusters) and skipped records it could not read without a word",
            ),
        ),
        field="read_mode",
        holder="data_path",
    ),
    ConfigKey(
        "mirrorspark.config.lenient",
        "boolean",
        "false",
        "Whether a key nobody knows (not mirrorspark's, not MM2's or Kafka Connect's, not a Kafka or librdkafka "
        "client property where a client property goes) only gets a warning (true) instead of stopping the start "
        "with an error listing every such key with its line and a 'did you mean' (false): for files shared with "
        "MirrorMaker 2 that carry keys of plugins mirrorspark does not know. Top level only; the Python API's "
        "load_config(..., lenient=True) does the same.",
        scope="mirrorspark",
        holder="data_path",
    ),
    ConfigKey(
        "mirrorspark.identity.allow.cycles",
        "boolean",
        "false",
        "Whether to start although enabled flows form a cycle (A->B and B->A, or A->B->C->A) through a flow "
        "whose replication policy keeps topic names (IdentityReplicationPolicy), which MM2's cycle check cannot "
        "stop; set it only when the flows' topic filters never match a topic replicated along the cycle.",
        scope="mirrorspark",
        field="identity_allow_cycles",
        holder="data_path",
    ),
    ConfigKey(
        "provenance.header.enable",
        "boolean",
        "false",
        "Whether flow S->T stamps every record it copies with the provenance header __mirrorspark.provenance "
        "(origin cluster id and alias, source topic, partition and offset, hop count; at most 46 bytes, after the "
        "user's own headers, which stay byte for byte; layout in docs/flows.md) and skips a record whose header "
        "shows it originated on, or already passed through, T. With it on every flow of a cycle, flows that keep "
        "topic names (IdentityReplicationPolicy) may run active/active; a record travels at most 3 hops. Confluent "
        "Replicator's key, per flow (S->T.provenance.header.enable) or at top level for every flow; false copies "
        "records as they are, headers unread.",
        field="provenance_header_enable",
    ),
    ConfigKey(
        "verify.sampling.enable",
        "boolean",
        "false",
        "Whether mirrorspark run verifies flow S->T continuously: every verify.sampling.interval.ms it compares a "
        "random sample of the records the flow copied recently (verify.sampling.records of them, from the copied "
        "segments the driver knows) with their copies on T, as mirrorspark verify does, in a Spark job of its own "
        "on one spare task slot; each sample is appended to mm2-verify.<S>.internal on T (trigger sampling) and a "
        "divergence is logged at ERROR with its findings. The copy goes on whatever a sample finds. mirrorspark's "
        "own key, per flow (S->T.verify.sampling.enable) or at top level for every flow.",
        field="verify_sampling_enable",
    ),
    ConfigKey(
        "verify.sampling.interval.ms",
        "long",
        "600000",
        "How often mirrorspark run verifies a sample of flow S->T's copied records (verify.sampling.enable); the "
        "first sample one interval after the start. Per flow (S->T.verify.sampling.interval.ms) or at top level.",
        "ms",
        minimum=100,
        field="verify_sampling_interval_ms",
    ),
    ConfigKey(
        "verify.sampling.records",
        "long",
        "10000",
        "How many copied records of flow S->T each continuous sample compares (verify.sampling.enable), drawn at "
        "random in runs of 1024 consecutive records over the flow's partitions; fewer when the flow copied fewer. "
        "Per flow (S->T.verify.sampling.records) or at top level.",
        "records",
        minimum=1,
        field="verify_sampling_records",
    ),
    ConfigKey(
        "replication.link.rtt.ms",
        "long",
        "0",
        "The round-trip time of the link from flow S->T's tasks to S (ms): above 0 the source consumer's fetches "
        "are sized to the link's bandwidth-delay product (replication.link.rate times the RTT; see docs/running.md, "
        "'Long links'), so that one connection keeps the link full; 0 = a local link, librdkafka's fetch sizes. "
        "consumer.* keys set explicitly win. mirrorspark's own key, per flow (S->T.replication.link.rtt.ms) or at "
        "top level.",
        "ms",
        minimum=0,
        field="link_rtt_ms",
    ),
    ConfigKey(
        "replication.link.rate",
        "long",
        "125000000",
        "The bandwidth of the link from flow S->T's tasks to S (bytes/s; default 1 Gb/s), which "
        "replication.link.rtt.ms sizes fetches for. Per flow or at top level.",
        "bytes/s",
        minimum=1,
        field="link_rate",
    ),
    ConfigKey(
        "replication.catch.up.readers",
        "int",
        "1",
        "How many readers catch up one source partition of flow S->T in parallel when its backlog is at least "
        "replication.catch.up.backlog.records: each fetches disjoint offset ranges over a connection of its own, "
        "and the task produces the records in source order, so the copy, the offset syncs and exactly-once are as "
        "without it; it switches itself off when the partition has caught up (see docs/running.md, 'Parallel "
        "catch-up'). 1 = off, one consumer per task as MM2. Per flow or at top level.",
        minimum=1,
        field="catch_up_readers",
    ),
    ConfigKey(
        "replication.catch.up.backlog.records",
        "long",
        "100000",
        "The backlog of a source partition (records between the task's position and the partition's end) from "
        "which replication.catch.up.readers > 1 catches it up in parallel. Per flow or at top level.",
        "records",
        minimum=1,
        field="catch_up_backlog_records",
    ),
    ConfigKey(
        "replication.throttled.rate",
        "long",
        "0",
        "Most bytes of record data (keys, values and headers) per second that flow S->T copies, over all its "
        "tasks, each an equal share (the name of KIP-1279's mirror.replication.throttled.rate); 0 = no limit. "
        "Changed while running by 'mirrorspark control throttle' or the service's REST API, without a restart "
        "(within about 2 s). Per flow or at top level.",
        "bytes/s",
        minimum=0,
        field="throttled_rate",
    ),
    ConfigKey(
        "mirrorspark.on.gap",
        "string",
        "continue",
        "What a flow does when source records it has not copied yet are gone (deleted by retention or "
        "delete-records, a truncated source log, a topic deleted and re-created): either way the gap is "
        "logged at ERROR, kept in the compacted topic mm2-gaps.<source>.internal on the target and shown by "
        "mirrorspark status; continue resumes at the log start (as MM2 with auto.offset.reset=earliest), or "
        "at the new topic's beginning; stop halts the flow (other flows go on) and the run exits non-zero.",
        scope="mirrorspark",
        choices=("continue", "stop"),
        field="on_gap",
        holder="data_path",
    ),
    ConfigKey(
        "mirrorspark.offset.flush.records",
        "long",
        "1000",
        "How many records each copy task copies (acknowledged by the target) before it commits, if "
        "offset.flush.interval.ms has not passed first; a task also commits as soon as the first records it "
        "copied are acknowledged. A kill -9 then re-copies at most about this many records per task (plus a "
        "batch in flight) even while a backlog is copied at full speed, and a run killed within its first "
        "second has committed what it copied. At least once only: an exactly-once transaction is not "
        "bounded by records (a kill aborts it, nothing of it is copied twice) but by the interval and 32 MiB. "
        "0 = by time only (Connect's rule, after "
        "the first commit). mirrorspark's own key, read per flow (S->T.mirrorspark.offset.flush.records) or "
        "at top level for every flow.",
        "records",
        minimum=0,
        field="offset_flush_records",
    ),
    ConfigKey(
        "mirrorspark.source.connector.name",
        "string",
        "MirrorSourceConnector",
        "The Kafka Connect connector name the flow's source offsets are stored under in its offsets topic "
        "(offset.storage.topic on the target): the first element of each record key, "
        '["<name>",{"cluster":…,"partition":…,"topic":…}]. MM2\'s dedicated mode names its source '
        "connector MirrorSourceConnector; a Kafka Connect-based deployment names it as the operator did (the "
        "KafkaConnector's metadata.name, the REST body's name), and connector configs read by mirrorspark set it "
        "so: mirrorspark then resumes from the offsets Connect committed, and Connect from mirrorspark's. "
        "mirrorspark's own key, read per flow (S->T.mirrorspark.source.connector.name) or at top level.",
        field="source_connector_name",
    ),
    ConfigKey(
        "mirrorspark.exactly.once.fence.tasks.max",
        "int",
        "0",
        "With exactly.once.source.support=enabled: how many task indexes of the previous replicator "
        "(MM2, or MM2's connectors on Kafka Connect) to fence before the first copy tasks start, when its task "
        "count cannot be read from its Connect config topic (config.storage.topic on the target, "
        "mm2-configs.<S>.internal in MM2's dedicated mode). The transactional ids "
        "<group.id>-<connector>-0 .. -<n-1> are fenced, as Connect fences a connector's previous tasks "
        "(KIP-618). 0 = not set: the previous task count must then be readable, or the flow's offsets "
        "topic must hold no source offsets mirrorspark did not write, else the flow refuses to start. "
        "mirrorspark's own key, read per flow (S->T.mirrorspark.exactly.once.fence.tasks.max) or at top level.",
        "tasks",
        minimum=0,
        field="fence_tasks_max",
    ),
    ConfigKey(
        "mirrorspark.metrics.interval.ms",
        "long",
        "5000",
        "How often the driver writes each flow's raw metrics (state, task restarts, lag in records and seconds, "
        "consumer groups' checkpoints) to the flow's progress channel mm2-task-progress.<source>.internal on the "
        "target, where mirrorspark service reads them with the copy tasks' reports.",
        "ms",
        scope="mirrorspark",
        minimum=100,
        field="metrics_interval_ms",
        holder="data_path",
    ),
    ConfigKey(
        "mirrorspark.service.auth.token",
        "string",
        None,
        "Bearer token the metrics service's REST API and /metrics require (Authorization: Bearer <token>, "
        "compared in constant time); unset = no authentication. Use a ${file:...} or ${env:...} placeholder "
        "rather than writing it into the file.",
        scope="mirrorspark",
        field="auth_token",
        holder="service",
    ),
    ConfigKey(
        "mirrorspark.service.checkpoint.location",
        "string",
        None,
        "Checkpoint location of the metrics service's Spark aggregation job (its Kafka offsets and window "
        "state); unset = .mirrorspark/service/<cluster>/checkpoint under the working directory. Any "
        "Hadoop-compatible URI works (hdfs://, s3a:// with its jars on the class path): put it on durable, "
        "shared storage so that a restarted instance resumes its windows; one location per instance.",
        scope="mirrorspark",
        field="checkpoint_location",
        holder="service",
    ),
    ConfigKey(
        "mirrorspark.service.metrics.topic",
        "string",
        "mirrorspark-metrics.internal",
        "Compacted topic on the served cluster the metrics service's Spark job writes its window aggregates "
        "to (1 min, 5 min and 1 h sliding windows per flow, topic, partition, group and metric).",
        scope="mirrorspark",
        field="metrics_topic",
        holder="service",
    ),
    ConfigKey(
        "mirrorspark.service.trigger.interval.ms",
        "long",
        "5000",
        "Micro-batch trigger interval of the metrics service's Spark job: how fresh the window aggregates are, "
        "for one small Spark job per interval.",
        "ms",
        scope="mirrorspark",
        minimum=100,
        field="trigger_interval_ms",
        holder="service",
    ),
    # --- failover policy (per flow: top level = every flow, S->T.<key> = one flow) -------------
    ConfigKey(
        "mirrorspark.failover.policy",
        "string",
        "manual",
        "When the running flow treats its source as failed and moves consumer groups to the target (modelled on "
        "Confluent's observerPromotionPolicy): offline = a source partition of the flow has no leader; "
        "under-min-isr = no leader, or its ISR is below min(min.insync.replicas, replication factor); manual = "
        "as under-min-isr, but only recorded (WARNING log, failover record on the progress channel, status, "
        "service), nothing moved. A source cluster that does not answer counts as offline. Failback is always "
        "the operator's decision.",
        choices=("manual", "under-min-isr", "offline"),
        field="failover_policy",
    ),
    ConfigKey(
        "mirrorspark.failover.groups",
        "list",
        ".*",
        "Regexes (full match) of the consumer groups a failover moves: of the groups with checkpoints in "
        "<source>.checkpoints.internal on the target (those the flow's groups/groups.exclude select), each "
        "match gets its newest checkpoints committed on the target as mirrorspark failover does, never a group "
        "with active members there; empty = none.",
        regex=True,
        field="failover_groups",
    ),
    ConfigKey(
        "mirrorspark.failover.grace.ms",
        "long",
        "30000",
        "How long the source must stay failed under mirrorspark.failover.policy, observation to observation, "
        "before the failover fires (0 = at the first failed observation); a shorter outage fires nothing.",
        "ms",
        minimum=0,
        field="failover_grace_ms",
    ),
    ConfigKey(
        "mirrorspark.failover.check.interval.ms",
        "long",
        "5000",
        "How often the driver describes the flow's source topics (leader, ISR, min.insync.replicas) for the "
        "failover policy.",
        "ms",
        minimum=100,
        field="failover_check_interval_ms",
    ),
    ConfigKey(
        "mirrorspark.failover.dry.run",
        "boolean",
        "false",
        "Whether a failover only reports what it would commit (log, failover record, status) and commits nothing.",
        field="failover_dry_run",
    ),
    ConfigKey(
        "topic.rename.format",
        "string",
        None,
        "Name of a remote topic that no topic.rename.rules rule matches, '${topic}' standing for the source topic "
        "(Confluent Replicator's key, e.g. '${topic}.dr' or 'dr-${topic}'); unset with rules set = '${topic}', the "
        "name is kept. Setting it or topic.rename.rules makes the flow's policy RenamingReplicationPolicy (a "
        "different explicit replication.policy.class is refused); per flow or at top level. See docs/flows.md.",
    ),
    ConfigKey(
        "topic.rename.rules",
        "list",
        "",
        "Names of the renaming rules, tried in order, the first whose topic.rename.rules.<name>.regex matches the "
        "whole topic name renaming it to topic.rename.rules.<name>.replacement ($1, $2... = the regex's groups); "
        "rules that could give two topics one name are refused at load. Per flow or at top level; see docs/flows.md.",
        field="renaming",
    ),
)
"""mirrorspark's keys: the per-flow replica placement, the top-level data-path and service keys, the failover policy."""


__all__ = ["MIRRORSPARK_KEYS", "RETIRED_BATCH_ENGINE"]
