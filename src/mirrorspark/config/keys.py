"""The key registry: every configuration key mirrorspark knows, declared once."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import KW_ONLY, dataclass
from types import MappingProxyType
from typing import Any, Final, Literal

from mirrorspark.mm2.filters import (
    DEFAULT_CONFIG_PROPERTIES_EXCLUDE,
    DEFAULT_GROUPS,
    DEFAULT_GROUPS_EXCLUDE,
    DEFAULT_TOPICS,
    DEFAULT_TOPICS_EXCLUDE,
)
from mirrorspark.mm2.internal_topics import connect_offsets_topic
from mirrorspark.mm2.policy import DEFAULT_POLICY_CLASS

KeyType = Literal["boolean", "int", "long", "short", "string", "list", "class"]
"""Value types of :class:`ConfigKey`, named as in Kafka's ``ConfigDef``."""

KeyHolder = Literal["flow", "policy", "data_path", "service"]
"""Which typed object a key's :attr:`ConfigKey.field` belongs to: :class:`FlowConfig` (``flow``),
:class:`PolicyConfig` (``policy``, i.e. ``FlowConfig.policy``), :class:`DataPathConfig`
(``data_path``, i.e. ``MirrorConfig.data_path``) or :class:`ServiceConfig` (``service``, i.e.
``MirrorConfig.service``: the metrics service, ``mirrorspark service``)."""

KeyEffect = Literal["used", "accepted"]
"""What mirrorspark does with a key's value:

``used``
    the value changes what mirrorspark does;
``accepted``
    accepted (and validated) for MM2 compatibility, no effect: mirrorspark has nothing the key
    could configure (a REST server, Java plugins, Connect's transactions, ...).
"""

ACCEPTED_NOTE: Final = "accepted for MM2 compatibility, no effect"
"""How ``config-reference`` marks keys whose :attr:`ConfigKey.effect` is ``accepted``."""

KeyScope = Literal["driver", "client", "connector", "flow", "worker", "mirrorspark"]
"""Where a key is read:

``driver``
    top level only (``MirrorMakerConfig``'s own keys, e.g. ``clusters``);
``client``
    Kafka client keys: top level, ``<alias>.``, ``<role>.`` and ``<side>.<role>.`` prefixes;
``connector``
    MM2 connector keys: top level (default for every flow) or ``S->T.`` (override);
``flow``
    connector keys that MM2 reads from ``S->T.`` only (top-level ones are dropped by MM2's driver);
``worker``
    Kafka Connect worker keys of the target cluster: ``<T>.<key>``, or top level for keys
    starting with ``offset.storage`` (MM2's ``workerConfig``);
``mirrorspark``
    mirrorspark's own keys, top level only.
"""


# --------------------------------------------------------------------------------------
# Key registry
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ConfigKey:
    """One configuration key mirrorspark knows, declared once (README tables are generated from these).

    Parameters
    ----------
    name:
        The key as written at top level, e.g. ``"refresh.topics.interval.seconds"``.
    type:
        Value type, named as in Kafka's ``ConfigDef``: ``boolean`` (``true``/``false``,
        case-insensitive), ``int`` (32-bit), ``long`` (64-bit), ``short`` (16-bit), ``string``,
        ``list`` (comma-separated, items trimmed; empty value = empty list) or ``class``
        (a Java class name).
    default:
        MM2's default in its textual form, parsed like a user value; ``None`` when there is no
        default (required key, or unset means "not configured").
    doc:
        One-sentence meaning, including the meaning of sentinels (e.g. ``-1``).
    unit:
        Unit of numeric values (``"ms"``, ``"s"``, ``"records"``, ``"tasks"``,
        ``"partitions"``, ``"replicas"``), or ``None``.
    scope:
        Where the key is read, see :data:`KeyScope`. Keyword-only.
    choices:
        Allowed values of a ``string`` key (matched case-sensitively, as MM2 does); empty = any.
    removed_choices:
        Values a ``string`` key once allowed and no longer does, each with why it was removed:
        ``(value, reason)`` pairs; such a value is a :class:`~mirrorspark.errors.ConfigError`
        whose message gives the reason and the choices left.
    minimum:
        Smallest allowed integer value, or ``None``.
    nonzero:
        Whether ``0`` is rejected even if ``minimum`` allows it (e.g. replication factors,
        where ``-1`` means "broker default").
    regex:
        Whether the items of a ``list`` key are regular expressions (validated at parse time).
    replaced_by:
        For a deprecated MM2 3.x alias (e.g. ``topics.blacklist``): the key that replaces it.
    removed_in:
        Kafka version that removed the key, if any (accepted for compatibility, with a warning).
    field:
        Name of the dataclass field the parsed value fills (in the object named by ``holder``),
        or ``None`` for keys the parser consumes itself (``clusters``, client keys), deprecated
        aliases (they fill the field of ``replaced_by``) and keys that fill nothing. A value in
        seconds (``unit="s"``) is stored as a ``float``.
    holder:
        The object holding ``field``, see :data:`KeyHolder`.
    top_level_field:
        For a ``connector`` key: the :class:`MirrorConfig` field its top-level value (the default of
        every flow, else the key's default) also fills, for the tools that serve no flow; ``None`` for most.
    effect:
        ``"used"``, or ``"accepted"`` for keys accepted for MM2 compatibility with no effect;
        see :data:`KeyEffect`.
    negative_disables:
        For a job's ``<job>.interval.seconds``: the ``<job>.enabled`` key a negative value turns
        off (MM2's scheduler skips jobs with a negative interval).
    retired:
        For a mirrorspark key that no longer has any effect: why (accepted and validated, with a
        warning naming the reason, so that files setting it still load).

    Notes
    -----
    Mirrors one ``ConfigDef.define(...)`` call of MM2's ``MirrorSourceConfig``,
    ``MirrorCheckpointConfig``, ``MirrorHeartbeatConfig``, ``MirrorConnectorConfig``,
    ``MirrorMakerConfig`` or Kafka Connect's ``DistributedConfig``.
    """

    name: str
    type: KeyType
    default: str | None
    doc: str
    unit: str | None = None
    _: KW_ONLY
    scope: KeyScope = "connector"
    choices: tuple[str, ...] = ()
    removed_choices: tuple[tuple[str, str], ...] = ()
    minimum: int | None = None
    nonzero: bool = False
    regex: bool = False
    replaced_by: str | None = None
    removed_in: str | None = None
    field: str | None = None
    holder: KeyHolder = "flow"
    top_level_field: str | None = None
    effect: KeyEffect = "used"
    negative_disables: str | None = None
    retired: str | None = None


RETIRED_BATCH_ENGINE: Final = (
    "it configured the batch engine, which was removed: every run, 'run --until-caught-up' included, runs on "
    "the long-running copy tasks"
)
"""Why the batch engine's keys (``mirrorspark.batch.*``) have no effect (the batch engine was removed in issue #22)."""

_RF_DOC: Final = "; -1 = the broker's default.replication.factor"
SOURCE_PLACEHOLDER: Final = "<source>"
"""Stands for the flow's source alias in a default (``offset.storage.topic``)."""


def _list_default(items: tuple[str, ...]) -> str:
    """Write a default list in its textual form, as a user would write it (``a, b, c``).

    Parameters
    ----------
    items:
        The list's items, e.g. MM2's default ``groups.exclude`` patterns.

    Returns
    -------
    str
        The items joined with ``", "``.
    """
    return ", ".join(items)


def _job_keys(job: str, what: str, enabled: str, interval: str) -> tuple[ConfigKey, ConfigKey]:
    """Declare the ``<job>.enabled`` + ``<job>.interval.seconds`` pair MM2 uses for periodic jobs.

    They fill ``FlowConfig.<job>_enabled`` and ``FlowConfig.<job>_interval_s`` (``.`` -> ``_``).

    Parameters
    ----------
    job:
        The keys' common prefix, e.g. ``"sync.topic.configs"``.
    what:
        What the job does, completing "Whether to ..." in the keys' docs.
    enabled:
        The default of ``<job>.enabled`` (``"true"`` or ``"false"``).
    interval:
        The default of ``<job>.interval.seconds``, in seconds (a negative value disables the job).

    Returns
    -------
    tuple[ConfigKey, ConfigKey]
        The ``enabled`` key and the ``interval.seconds`` key, in that order.
    """
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


CONFIG_KEYS: Final[tuple[ConfigKey, ...]] = (
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
    # --- Kafka client keys (documented here; composed per role, see the module docstring) ----
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
        "PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL; top level or <alias>. (with ssl.* and sasl.*).",
        scope="client",
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
        "copied unchanged. See README, Transforms.",
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
        "check the driver's task channel.",
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
        "poll (one transaction per batch a copy task reads, up to 10,000 records) or interval (one per "
        "transaction.boundary.interval.ms). connector is rejected at start, as MM2 rejects it "
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
        "transaction, with a transactional id per flow and task (<S>-mm2-MirrorSourceConnector-<task>, "
        "MM2's own), so a restarted task or a second instance fences the old one; a read_committed consumer "
        "of the target sees every copied record once. preparing is KIP-618's rolling-upgrade step (only "
        "Connect's own config writes become transactional): mirrorspark copies at least once, as MM2 does.",
        scope="worker",
        choices=("disabled", "preparing", "enabled"),
        field="exactly_once_source_support",
    ),
    ConfigKey(
        "offset.flush.interval.ms",
        "long",
        "1000",
        "How often each copy task commits the source offsets (and offset syncs) "
        "of the records the target acknowledged, set as <T>.offset.flush.interval.ms. Connect's default is "
        "60000; mirrorspark's is 1000, so a crash re-copies at most about one second of records, for one "
        "small write per moving partition per second.",
        "ms",
        scope="worker",
        minimum=1,
        field="offset_flush_interval_ms",
    ),
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
)
"""Every key mirrorspark knows, in MM2's order: driver, client, connector, worker, mirrorspark keys."""

KEYS: Final[Mapping[str, ConfigKey]] = MappingProxyType({k.name: k for k in CONFIG_KEYS})
if len(KEYS) != len(CONFIG_KEYS):  # pragma: no cover - guards the registry itself
    raise AssertionError("duplicate name in CONFIG_KEYS")

ROLES: Final = ("consumer", "producer", "admin")
SIDES: Final = ("source", "target")
# Top-level prefixes MM2 passes through (worker config, connector config, REST server).
WORKER_PREFIXES: Final = (
    "offset.storage",
    "config.storage",
    "status.storage",
    "key.converter",
    "value.converter",
    "header.converter",
    "task",
    "worker",
    "replication.policy",
)
CONNECTOR_PREFIXES: Final = (
    "replication.policy",
    "config.providers",
    "errors.",
    "transforms",
    "predicates",
    "key.converter",
    "value.converter",
    "header.converter",
    "metrics.",
    "config.action.reload",
)
# Connect worker keys MM2's driver reads at top level that mean nothing to mirrorspark (no plugins).
CONNECT_PREFIXES: Final = ("plugin.",)
ROLE_PREFIXES: Final = tuple(f"{role}." for role in ROLES)
SIDE_ROLE_PREFIXES: Final = tuple(f"{side}.{role}." for side in SIDES for role in ROLES)
SIDE_CLUSTER_PREFIXES: Final = tuple(f"{side}.cluster." for side in SIDES)
FLOW_CLIENT_PREFIXES: Final = ROLE_PREFIXES + SIDE_ROLE_PREFIXES + SIDE_CLUSTER_PREFIXES
REST_PREFIXES: Final = (
    "rest.",
    "listeners.",
    "access.control.",
    "admin.listeners.",
    "response.http.headers.",
)
MIRRORSPARK_PREFIX: Final = "mirrorspark."

_SECRET_MARKERS: Final = (
    "password",  # sasl.password, ssl.key.password, ssl.keystore.password, ssl.truststore.password
    "passphrase",
    "secret",  # sasl.oauthbearer.client.secret
    "sasl.jaas.config",
    "sasl.oauthbearer.config",
    "ssl.key",  # ssl.key.pem, ssl.key.location's password siblings
    "keystore.key",  # ssl.keystore.key (PEM private key)
    "private",
    "token",
    "basic.auth.user.info",
    "credential",
    "apikey",
    "api.key",
)
_MASK: Final = "******"
MASK: Final = _MASK
"""What replaces a secret value in every ``repr``, message and log line."""


def is_secret(key: str) -> bool:
    """Tell whether values of ``key`` must never be shown (passwords, JAAS configs, private keys, tokens).

    Parameters
    ----------
    key:
        A Java or librdkafka client property name, with or without prefix (``A.consumer.sasl.password``,
        ``kafka.sasl.jaas.config``); case does not matter.

    Returns
    -------
    bool
        ``True`` when the name contains one of the secret markers (``password``, ``passphrase``,
        ``secret``, ``sasl.jaas.config``, ``sasl.oauthbearer.config``, ``ssl.key``, ``keystore.key``,
        ``private``, ``token``, ``basic.auth.user.info``, ``credential``, ``apikey``/``api.key``).
    """
    low = key.lower()
    return any(marker in low for marker in _SECRET_MARKERS)


def show(key: str, value: str) -> str:
    """``repr`` of ``value`` for messages, or the mask when ``key`` holds a secret."""
    return _MASK if is_secret(key) else repr(value)


def masked(conf: Mapping[str, Any]) -> dict[str, Any]:
    """Return a copy of a client configuration with every secret value replaced by :data:`MASK`.

    Parameters
    ----------
    conf:
        Java or librdkafka client properties (values of any type).

    Returns
    -------
    dict[str, Any]
        Same keys; values of secret keys (:func:`is_secret`) masked, the others as they were.
    """
    return {k: MASK if isinstance(k, str) and is_secret(k) else v for k, v in conf.items()}


def is_client_key(key: str) -> bool:
    """Whether ``key`` is a client connection key (MM2's ``MirrorClientConfig.CLIENT_CONFIG_DEF``)."""
    return key in ("bootstrap.servers", "security.protocol") or key.startswith(("ssl.", "sasl."))


__all__ = ["CONFIG_KEYS", "MASK", "ConfigKey", "KeyScope", "KeyType", "is_secret", "masked"]
