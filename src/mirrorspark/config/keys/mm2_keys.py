"""MM2's own keys: those of ``MirrorMakerConfig``, the Kafka clients, the three connectors and the Connect worker.

Each is declared once here, as MM2 declares it (``ConfigDef.define(...)`` in ``MirrorMakerConfig``,
``MirrorConnectorConfig``, ``MirrorSourceConfig``, ``MirrorCheckpointConfig``, ``MirrorHeartbeatConfig``
and Connect's ``DistributedConfig``), in MM2's order; mirrorspark's own keys are in
:mod:`~mirrorspark.config.keys.mirrorspark_keys`.
"""

from __future__ import annotations

from typing import Final

from mirrorspark.config.keys.config_key import ConfigKey
from mirrorspark.mm2.filters import (
    DEFAULT_CONFIG_PROPERTIES_EXCLUDE,
    DEFAULT_GROUPS,
    DEFAULT_GROUPS_EXCLUDE,
    DEFAULT_TOPICS,
    DEFAULT_TOPICS_EXCLUDE,
)
from mirrorspark.mm2.internal_topics import connect_configs_topic, connect_offsets_topic, connect_worker_group
from mirrorspark.mm2.policy import DEFAULT_POLICY_CLASS

_RF_DOC: Final = "; -1 = the broker's default.replication.factor"
SOURCE_PLACEHOLDER: Final = "<source>"
"""Stands for the flow's source alias in a default (``offset.storage.topic``)."""


def _list_default(items: tuple[str, ...]) -> str:
    """Write a default list in its textual form, as a user would write it (``a, b, c``)."""
    return ", ".join(items)


def _job_keys(job: str, what: str, enabled: str, interval: str) -> tuple[ConfigKey, ConfigKey]:
    """Declare the ``<job>.enabled`` + ``<job>.interval.seconds`` pair MM2 uses for periodic jobs."""
    prefix = job.replace(".", "_")
    return (
        ConfigKey(f"{job}.enabled", "boolean", enabled, f"Whether to {what}.", field=f"{prefix}_enabled"),
        ConfigKey(
            f"{job}.interval.seconds",
            "long",
            interval,
            f"Period of the job that does: {what}; a negative value disables the job (as in MM2).",
            "s",
            nonzero=True,
            field=f"{prefix}_interval_s",
            negative_disables=f"{job}.enabled",
        ),
    )


MM2_KEYS: Final[tuple[ConfigKey, ...]] = (
    # --- MirrorMakerConfig (dedicated driver), top level only --------------------------------
    ConfigKey(
        "clusters",
        "list",
        None,
        "Cluster aliases (required); every ordered pair (S, T) with S != T is a flow S->T. "
        "Aliases may contain letters, digits, '-' and '_', but no '.', '->' or whitespace.",
        scope="driver",
    ),
    ConfigKey(
        "dedicated.mode.enable.internal.rest",
        "boolean",
        "false",
        "MM2's internal REST server (KIP-710); mirrorspark has none.",
        scope="driver",
        effect="accepted",
    ),
    ConfigKey(
        "config.providers",
        "list",
        "",
        "Names of config providers; ${env:NAME}, ${file:PATH:KEY} and ${directory:DIR:FILE} are "
        "resolved whether or not they are declared.",
        scope="driver",
    ),
    ConfigKey(
        "listeners",
        "list",
        "http://:8083",
        "Connect REST listeners; mirrorspark has no REST server.",
        scope="driver",
        effect="accepted",
    ),
    ConfigKey(
        "admin.listeners",
        "list",
        None,
        "Connect REST admin listeners; mirrorspark has no REST server.",
        scope="driver",
        effect="accepted",
    ),
    # --- Kafka client keys (documented here; composed per client kind, see mirrorspark.config.parse) ----
    ConfigKey(
        "bootstrap.servers",
        "list",
        None,
        "host:port pairs of a cluster's brokers; required per cluster as <alias>.bootstrap.servers "
        "(a top-level value is the default for every cluster).",
        scope="client",
    ),
    ConfigKey(
        "security.protocol",
        "string",
        "PLAINTEXT",
        "PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL (any case, as Kafka's SecurityProtocol.forName); top level "
        "or <alias>. (with ssl.* and sasl.*).",
        scope="client",
        choices=("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"),
    ),
    ConfigKey(
        "client.rack",
        "string",
        None,
        "Where the replicator runs (a broker.rack name of the source cluster): with the brokers' "
        "replica.selector.class=RackAwareReplicaSelector (KIP-392) every source read fetches from an in-sync "
        "replica in this rack, even a follower. Per cluster as <alias>.client.rack (consumers of that cluster; "
        "a mirrorspark extension: MM2 passes only <alias>.consumer.client.rack on), overridden by "
        "<alias>.consumer.client.rack and <S>-><T>.source.consumer.client.rack.",
        scope="client",
    ),
    # --- MirrorConnectorConfig: keys common to the three connectors -------------------------
    ConfigKey(
        "enabled",
        "boolean",
        "false",
        "Whether flow S->T replicates (set as S->T.enabled; a top-level value is the default of every "
        "flow that has heartbeats enabled, as in MM2's driver).",
        field="enabled",
    ),
    ConfigKey(
        "admin.timeout.ms",
        "long",
        "60000",
        "Timeout of admin calls of the control jobs (topic refresh, config and ACL sync, checkpoints, "
        "group offset sync, internal topics).",
        "ms",
        minimum=0,
        field="admin_timeout_ms",
        top_level_field="admin_timeout_ms",
    ),
    ConfigKey(
        "replication.policy.class",
        "class",
        DEFAULT_POLICY_CLASS,
        "ReplicationPolicy naming remote topics (DefaultReplicationPolicy or IdentityReplicationPolicy).",
        field="class_name",
        holder="policy",
    ),
    ConfigKey(
        "replication.policy.separator",
        "string",
        ".",
        "Separator between the source alias and the topic name in remote topics; must not be empty.",
        field="separator",
        holder="policy",
    ),
    ConfigKey(
        "replication.policy.internal.topic.separator.enabled",
        "boolean",
        "true",
        "Whether the separator is also used in MM2's internal topic names (KIP-949); false keeps '.'.",
        field="internal_topic_separator_enabled",
        holder="policy",
    ),
    ConfigKey(
        "forwarding.admin.class",
        "class",
        "org.apache.kafka.clients.admin.ForwardingAdmin",
        "Admin client class of MM2 (KIP-787); mirrorspark always uses its own admin client.",
        effect="accepted",
    ),
    ConfigKey(
        "topic.filter.class",
        "class",
        "org.apache.kafka.connect.mirror.DefaultTopicFilter",
        "TopicFilter class deciding which topics are replicated; mirrorspark always uses "
        "DefaultTopicFilter (topics, topics.exclude).",
        effect="accepted",
    ),
    ConfigKey(
        "group.filter.class",
        "class",
        "org.apache.kafka.connect.mirror.DefaultGroupFilter",
        "GroupFilter class deciding which consumer groups are checkpointed; mirrorspark always "
        "uses DefaultGroupFilter (groups, groups.exclude).",
        effect="accepted",
    ),
    ConfigKey(
        "config.property.filter.class",
        "class",
        "org.apache.kafka.connect.mirror.DefaultConfigPropertyFilter",
        "ConfigPropertyFilter class deciding which topic configs are copied; mirrorspark always "
        "uses DefaultConfigPropertyFilter (config.properties.exclude).",
        effect="accepted",
    ),
    ConfigKey(
        "offset-syncs.topic.location",
        "string",
        "source",
        "Cluster holding the offset-syncs topic: source or target.",
        choices=("source", "target"),
        field="offset_syncs_topic_location",
    ),
    ConfigKey(
        "emit.offset-syncs.enabled",
        "boolean",
        "true",
        "Whether offset syncs are written (KIP-1031); checkpoints need them.",
        field="emit_offset_syncs_enabled",
    ),
    ConfigKey(
        "tasks.max",
        "int",
        "1",
        "Maximum number of tasks per connector of a flow.",
        "tasks",
        minimum=1,
        field="tasks_max",
    ),
    ConfigKey(
        "transforms",
        "list",
        "",
        "Single Message Transforms applied to every copied record, in order, after the remote topic is named "
        "(Connect's syntax: transforms.<t>.type, transforms.<t>.predicate, transforms.<t>.negate and each "
        "transform's own transforms.<t>.<setting>): Filter, InsertHeader, DropHeaders, RegexRouter (renames "
        "remote topics) or a Python class as package.module:ClassName; transforms that need schemas (Cast, "
        "ReplaceField, HeaderFrom, ...) are refused at load. Read per flow (S->T.transforms, as MM2) or at top "
        "level for every flow (mirrorspark only: MM2 drops top-level transforms.<t>.* keys). Empty = records "
        "copied unchanged. See docs/transforms.md.",
        field="transforms",
    ),
    ConfigKey(
        "predicates",
        "list",
        "",
        "Predicates the transforms refer to by transforms.<t>.predicate (predicates.<p>.type: TopicNameMatches "
        "with predicates.<p>.pattern, HasHeaderKey with predicates.<p>.name, RecordIsTombstone); per flow or "
        "at top level, as transforms.",
    ),
    ConfigKey(
        "tasks.max.enforce",
        "boolean",
        "true",
        "Connect's tasks.max enforcement.",
        effect="accepted",
    ),
    ConfigKey(
        "metric.reporters",
        "list",
        "org.apache.kafka.common.metrics.JmxReporter",
        "Java metric reporter classes.",
        effect="accepted",
    ),
    ConfigKey(
        "auto.include.jmx.reporter",
        "boolean",
        "true",
        "Kafka 3.x JMX reporter switch; ignored.",
        removed_in="4.0",
        effect="accepted",
    ),
    # --- MirrorSourceConfig -----------------------------------------------------------------
    ConfigKey(
        "topics",
        "list",
        _list_default(DEFAULT_TOPICS),
        "Regexes of source topics to replicate (full match; empty = none).",
        regex=True,
        field="topics",
    ),
    ConfigKey(
        "topics.exclude",
        "list",
        _list_default(DEFAULT_TOPICS_EXCLUDE),
        "Regexes of source topics never replicated (replaces the default list).",
        regex=True,
        field="topics_exclude",
    ),
    ConfigKey(
        "topics.blacklist",
        "list",
        None,
        "Deprecated alias of topics.exclude, honoured if topics.exclude is absent.",
        regex=True,
        replaced_by="topics.exclude",
        removed_in="4.0",
    ),
    ConfigKey(
        "config.properties.exclude",
        "list",
        _list_default(DEFAULT_CONFIG_PROPERTIES_EXCLUDE),
        "Regexes of topic config names never copied to remote topics (replaces the default list).",
        regex=True,
        field="config_properties_exclude",
    ),
    ConfigKey(
        "config.properties.blacklist",
        "list",
        None,
        "Deprecated alias of config.properties.exclude, honoured if that key is absent.",
        regex=True,
        replaced_by="config.properties.exclude",
        removed_in="4.0",
    ),
    ConfigKey(
        "use.defaults.from",
        "string",
        "target",
        "Whose default wins for topic configs at their default on the source (KIP-894): target deletes "
        "the target's override, source copies the source default. Read per flow only, as in MM2.",
        scope="flow",
        choices=("target", "source"),
        field="use_defaults_from",
    ),
    ConfigKey(
        "consumer.poll.timeout.ms",
        "long",
        "1000",
        "MM2's timeout of one poll of a source task's consumer. mirrorspark's copy tasks wait at most 250 ms "
        "for the first record of a poll (then take what else is there at once), which is also how often they "
        "ask the driver's grant server for grants.",
        "ms",
        minimum=0,
        field="consumer_poll_timeout_ms",
        effect="accepted",
    ),
    *_job_keys("refresh.topics", "discover new source topics and partitions", "true", "600"),
    *_job_keys("sync.topic.configs", "copy topic configs to remote topics", "true", "600"),
    *_job_keys("sync.topic.acls", "copy topic ACLs to remote topics", "true", "600"),
    ConfigKey(
        "use.incremental.alter.configs",
        "string",
        "requested",
        "Kafka 3.5-3.9 switch for IncrementalAlterConfigs; ignored (always incremental, as 4.0).",
        choices=("requested", "required", "never"),
        removed_in="4.0",
        effect="accepted",
    ),
    ConfigKey(
        "replication.factor",
        "int",
        "2",
        "Replication factor of newly created remote topics" + _RF_DOC + ".",
        "replicas",
        minimum=-1,
        nonzero=True,
        field="replication_factor",
    ),
    ConfigKey(
        "offset-syncs.topic.replication.factor",
        "short",
        "3",
        "Replication factor of the offset-syncs topic" + _RF_DOC + ".",
        "replicas",
        minimum=-1,
        nonzero=True,
        field="offset_syncs_topic_replication_factor",
    ),
    ConfigKey(
        "offset.lag.max",
        "long",
        "100",
        "How far (in target offsets) replication may get ahead of the last offset sync before a new one "
        "is written; 0 = a sync per record.",
        "records",
        field="offset_lag_max",
    ),
    ConfigKey(
        "heartbeats.replication.enabled",
        "boolean",
        "true",
        "Whether heartbeat topics are replicated even if the topic filter rejects them (Kafka 4.0).",
        field="heartbeats_replication_enabled",
    ),
    ConfigKey(
        "add.source.alias.to.metrics",
        "boolean",
        "false",
        "Kafka 3.5-3.9 metrics tag switch; ignored (the source tag is always present).",
        removed_in="4.0",
        effect="accepted",
    ),
    ConfigKey(
        "exactly.once.support",
        "string",
        "requested",
        "Connect's exactly-once requirement of the source connector (KIP-618): requested or required. "
        "required fails at start unless <T>.exactly.once.source.support=enabled and "
        "<S>.consumer.isolation.level=read_committed (MirrorSourceConnector.exactlyOnceSupport). "
        "Read per flow only, as in MM2.",
        scope="flow",
        choices=("requested", "required"),
        field="exactly_once_support",
    ),
    ConfigKey(
        "transaction.boundary",
        "string",
        "poll",
        "Connect's exactly-once transaction boundary (KIP-618), with <T>.exactly.once.source.support=enabled: "
        "poll (one transaction per batch a copy task reads; through a backlog, full batches join one "
        "transaction of up to offset.flush.interval.ms or 32 MiB) or interval (one per "
        "transaction.boundary.interval.ms, or 32 MiB). connector is rejected at start, as MM2 rejects it "
        "(MirrorSourceConnector defines no boundaries). Read per flow only, as in MM2.",
        scope="flow",
        choices=("poll", "interval", "connector"),
        field="transaction_boundary",
    ),
    ConfigKey(
        "transaction.boundary.interval.ms",
        "long",
        "0",
        "Milliseconds between two transaction commits of a copy task with transaction.boundary=interval; "
        "0 (the default): offset.flush.interval.ms, as in Connect. Read per flow only, as in MM2.",
        scope="flow",
        unit="ms",
        minimum=0,
        field="transaction_boundary_interval_ms",
    ),
    # --- MirrorCheckpointConfig -------------------------------------------------------------
    ConfigKey(
        "groups",
        "list",
        _list_default(DEFAULT_GROUPS),
        "Regexes of consumer groups to checkpoint (full match).",
        regex=True,
        field="groups",
    ),
    ConfigKey(
        "groups.exclude",
        "list",
        _list_default(DEFAULT_GROUPS_EXCLUDE),
        "Regexes of consumer groups never checkpointed (replaces the default list).",
        regex=True,
        field="groups_exclude",
    ),
    ConfigKey(
        "groups.blacklist",
        "list",
        None,
        "Deprecated alias of groups.exclude, honoured if groups.exclude is absent.",
        regex=True,
        replaced_by="groups.exclude",
        removed_in="4.0",
    ),
    *_job_keys("refresh.groups", "discover consumer groups on the source", "true", "600"),
    *_job_keys("emit.checkpoints", "write checkpoints of consumer group offsets", "true", "60"),
    ConfigKey(
        "emit.checkpoints.on.commit",
        "boolean",
        "false",
        "Beyond MM2 (KIP-1292's aim): follow each source group's commits as they happen (the source's "
        "__consumer_offsets, read from its start) and write each commit's exact checkpoint as soon as the copy "
        "has passed it, then, with sync.group.offsets.enabled, commit it to the group on the target at once if "
        "the group has no members there. The emit.checkpoints and sync.group.offsets jobs keep running every "
        "interval as a backstop. Needs READ and DESCRIBE on the source's __consumer_offsets topic. false (the "
        "default): MM2's timing.",
        field="emit_checkpoints_on_commit",
    ),
    *_job_keys("sync.group.offsets", "write translated offsets into idle target groups", "false", "60"),
    ConfigKey(
        "checkpoints.topic.replication.factor",
        "short",
        "3",
        "Replication factor of <S>.checkpoints.internal" + _RF_DOC + ".",
        "replicas",
        minimum=-1,
        nonzero=True,
        field="checkpoints_topic_replication_factor",
    ),
    # --- MirrorHeartbeatConfig --------------------------------------------------------------
    *_job_keys("emit.heartbeats", "write heartbeats to the target", "true", "1"),
    ConfigKey(
        "heartbeats.topic.replication.factor",
        "short",
        "3",
        "Replication factor of the heartbeats topic" + _RF_DOC + ".",
        "replicas",
        minimum=-1,
        nonzero=True,
        field="heartbeats_topic_replication_factor",
    ),
    # --- Connect worker of the target cluster -----------------------------------------------
    ConfigKey(
        "offset.storage.topic",
        "string",
        connect_offsets_topic(SOURCE_PLACEHOLDER),
        "Topic on the target holding Connect source offsets of flow S->T (always '.'-separated).",
        scope="worker",
        field="offset_storage_topic",
    ),
    ConfigKey(
        "config.storage.topic",
        "string",
        connect_configs_topic(SOURCE_PLACEHOLDER),
        "Topic on the target holding Kafka Connect's connector and task configs of flow S->T (always "
        "'.'-separated); with exactly.once.source.support=enabled mirrorspark reads the previous task count of "
        "the source connector from it, to fence every task of the replicator it takes over from (KIP-618).",
        scope="worker",
        field="config_storage_topic",
    ),
    ConfigKey(
        "group.id",
        "string",
        connect_worker_group(SOURCE_PLACEHOLDER),
        "Kafka Connect worker group of flow S->T on the target, set as <T>.group.id (MM2's dedicated mode: "
        "<S>-mm2); with exactly.once.source.support=enabled the copy tasks' transactional ids are "
        "<group.id>-<connector>-<task>, Connect's own (KIP-618).",
        scope="worker",
        field="connect_group_id",
    ),
    ConfigKey(
        "offset.storage.partitions",
        "int",
        "25",
        "Partitions of the offset storage topic when it is created.",
        "partitions",
        scope="worker",
        minimum=1,
        field="offset_storage_partitions",
    ),
    ConfigKey(
        "offset.storage.replication.factor",
        "short",
        "3",
        "Replication factor of the offset storage topic" + _RF_DOC + ".",
        "replicas",
        scope="worker",
        minimum=-1,
        nonzero=True,
        field="offset_storage_replication_factor",
    ),
    ConfigKey(
        "exactly.once.source.support",
        "string",
        "disabled",
        "Exactly-once source support of the target's worker (KIP-618), set as "
        "<T>.exactly.once.source.support: disabled, preparing or enabled. enabled: each copy task of a flow "
        "into T writes its records and its source offsets (mm2-offsets.<S>.internal) in one Kafka "
        "transaction, with a transactional id per flow and task (<group.id>-<connector>-<task>, "
        "Connect's and MM2's own: <S>-mm2-MirrorSourceConnector-<task> in MM2's dedicated mode), so a "
        "restarted task or a second instance fences the old one; a read_committed consumer of the target sees "
        "every copied record once. preparing is KIP-618's rolling-upgrade step (only "
        "Connect's own config writes become transactional): mirrorspark copies at least once, as MM2 does.",
        scope="worker",
        choices=("disabled", "preparing", "enabled"),
        field="exactly_once_source_support",
    ),
    ConfigKey(
        "offset.flush.interval.ms",
        "long",
        "250",
        "How often each copy task commits the source offsets (and offset syncs) "
        "of the records the target acknowledged, set as <T>.offset.flush.interval.ms. Connect's default is "
        "60000; mirrorspark's is 250, so a kill -9 re-copies about a quarter of a second of records (at "
        "most mirrorspark.offset.flush.records per task), for four small writes per moving partition per "
        "second, sent without waiting.",
        "ms",
        scope="worker",
        minimum=1,
        field="offset_flush_interval_ms",
    ),
)
"""MM2's keys, in MM2's order: driver, client, connector (common, source, checkpoint, heartbeat), worker keys."""


__all__ = ["MM2_KEYS", "SOURCE_PLACEHOLDER"]
