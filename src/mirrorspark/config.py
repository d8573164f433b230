"""MirrorMaker 2's ``mm2.properties``, parsed once into frozen, typed objects.

This module is the edge: it reads the properties text (Java ``.properties`` syntax),
resolves ``${env:...}`` / ``${file:...}`` / ``${directory:...}`` placeholders, validates
every key MirrorMaker 2 (MM2) knows, and returns a :class:`MirrorConfig`. Nothing below
it reads a raw property string: client settings become confluent-kafka (librdkafka)
configs in :meth:`ClientSettings.to_librdkafka` and Spark Kafka source options in
:meth:`ClientSettings.to_spark_options`, and nowhere else.

Key shapes (as in MM2's ``MirrorMakerConfig``)::

    clusters = A, B                  # required; every ordered pair (S, T), S != T, is a flow
    A.bootstrap.servers = ...        # <alias>.<key>: cluster-level (client and Connect worker keys)
    A.consumer.isolation.level = ... # <alias>.<role>.<key>: client settings of one role on one cluster
    A->B.enabled = true              # <S>-><T>.<key>: flow-level, overrides the top-level <key>
    topics = .*                      # top-level: default for every flow (connector keys only)
    mirrorspark.read.mode = consumer # mirrorspark's own keys, top-level only

Precedence of a flow key: ``S->T.<key>`` > top-level ``<key>`` > MM2's default. Client
settings of a role are composed from lowest to highest precedence (MM2's ``clusterProps``
and ``MirrorConnectorConfig``): top-level client keys (``bootstrap.servers``,
``security.protocol``, ``ssl.*``, ``sasl.*``) -> cluster ``C.<client key>`` -> flow
``S->T.<side>.cluster.<client key>`` -> top-level ``<role>.*`` -> flow ``S->T.<role>.*``
-> cluster ``C.<role>.*`` -> top-level ``<side>.<role>.*`` -> flow
``S->T.<side>.<role>.*`` (-> flow ``S->T.producer.override.*`` for the data producer).

Every key is declared once in :data:`CONFIG_KEYS`; keys nobody knows produce a warning in
:attr:`MirrorConfig.warnings`, never an error. Secrets (any key containing ``password``,
``secret``, ``sasl.jaas.config`` or ``ssl.key``) never appear in a message or ``repr``.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import KW_ONLY, dataclass, field, fields
from pathlib import Path
from types import MappingProxyType
from typing import Any, ClassVar, Final, Literal

from mirrorspark.errors import BadRegexError, ConfigError, UnknownAliasError

_log = logging.getLogger(__name__)

KeyType = Literal["boolean", "int", "long", "short", "string", "list", "class"]
"""Value types of :class:`ConfigKey`, named as in Kafka's ``ConfigDef``."""

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
    minimum: int | None = None
    nonzero: bool = False
    regex: bool = False
    replaced_by: str | None = None
    removed_in: str | None = None


_DEFAULT_POLICY_CLASS: Final = "org.apache.kafka.connect.mirror.DefaultReplicationPolicy"
_TOPICS_EXCLUDE_DEFAULT: Final = r".*[\-\.]internal, .*\.replica, __.*"
_GROUPS_EXCLUDE_DEFAULT: Final = "console-consumer-.*, connect-.*, __.*"
_CONFIG_PROPERTIES_EXCLUDE_DEFAULT: Final = (
    r"follower\.replication\.throttled\.replicas, leader\.replication\.throttled\.replicas, "
    r"message\.timestamp\.difference\.max\.ms, message\.timestamp\.type, "
    r"unclean\.leader\.election\.enable, min\.insync\.replicas"
)
_RF_DOC: Final = "; -1 = the broker's default.replication.factor"


def _job_keys(job: str, what: str, enabled: str, interval: str) -> tuple[ConfigKey, ConfigKey]:
    """The ``<job>.enabled`` + ``<job>.interval.seconds`` pair MM2 uses for periodic jobs."""
    return (
        ConfigKey(f"{job}.enabled", "boolean", enabled, f"Whether to {what}."),
        ConfigKey(
            f"{job}.interval.seconds",
            "long",
            interval,
            f"Period of the job that does: {what}; a negative value disables the job (as in MM2).",
            "s",
            nonzero=True,
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
        "MM2's internal REST server (KIP-710); accepted for compatibility, mirrorspark has none.",
        scope="driver",
    ),
    ConfigKey(
        "config.providers",
        "list",
        "",
        "Names of config providers; ${env:NAME}, ${file:PATH:KEY} and ${directory:DIR:FILE} are "
        "resolved whether or not they are declared.",
        scope="driver",
    ),
    ConfigKey("listeners", "list", "http://:8083", "Connect REST listeners; accepted, unused.", scope="driver"),
    ConfigKey("admin.listeners", "list", None, "Connect REST admin listeners; accepted, unused.", scope="driver"),
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
    # --- MirrorConnectorConfig: keys common to the three connectors -------------------------
    ConfigKey(
        "enabled",
        "boolean",
        "false",
        "Whether flow S->T replicates (set as S->T.enabled; a top-level value is the default of every "
        "flow that has heartbeats enabled, as in MM2's driver).",
    ),
    ConfigKey("admin.timeout.ms", "long", "60000", "Timeout of admin calls of the control jobs.", "ms", minimum=0),
    ConfigKey(
        "replication.policy.class",
        "class",
        _DEFAULT_POLICY_CLASS,
        "ReplicationPolicy naming remote topics (DefaultReplicationPolicy or IdentityReplicationPolicy).",
    ),
    ConfigKey(
        "replication.policy.separator",
        "string",
        ".",
        "Separator between the source alias and the topic name in remote topics; must not be empty.",
    ),
    ConfigKey(
        "replication.policy.internal.topic.separator.enabled",
        "boolean",
        "true",
        "Whether the separator is also used in MM2's internal topic names (KIP-949); false keeps '.'.",
    ),
    ConfigKey(
        "forwarding.admin.class",
        "class",
        "org.apache.kafka.clients.admin.ForwardingAdmin",
        "Admin client class of MM2 (KIP-787); accepted, mirrorspark always uses its own admin client.",
    ),
    ConfigKey(
        "topic.filter.class",
        "class",
        "org.apache.kafka.connect.mirror.DefaultTopicFilter",
        "TopicFilter class deciding which topics are replicated.",
    ),
    ConfigKey(
        "group.filter.class",
        "class",
        "org.apache.kafka.connect.mirror.DefaultGroupFilter",
        "GroupFilter class deciding which consumer groups are checkpointed.",
    ),
    ConfigKey(
        "config.property.filter.class",
        "class",
        "org.apache.kafka.connect.mirror.DefaultConfigPropertyFilter",
        "ConfigPropertyFilter class deciding which topic configs are copied.",
    ),
    ConfigKey(
        "offset-syncs.topic.location",
        "string",
        "source",
        "Cluster holding the offset-syncs topic: source or target.",
        choices=("source", "target"),
    ),
    ConfigKey(
        "emit.offset-syncs.enabled",
        "boolean",
        "true",
        "Whether offset syncs are written (KIP-1031); checkpoints need them.",
    ),
    ConfigKey("tasks.max", "int", "1", "Maximum number of tasks per connector of a flow.", "tasks", minimum=1),
    ConfigKey("tasks.max.enforce", "boolean", "true", "Connect's tasks.max enforcement; accepted, unused."),
    ConfigKey(
        "metric.reporters",
        "list",
        "org.apache.kafka.common.metrics.JmxReporter",
        "Java metric reporter classes; accepted, unused.",
    ),
    ConfigKey(
        "auto.include.jmx.reporter",
        "boolean",
        "true",
        "Kafka 3.x JMX reporter switch; ignored.",
        removed_in="4.0",
    ),
    # --- MirrorSourceConfig -----------------------------------------------------------------
    ConfigKey(
        "topics",
        "list",
        ".*",
        "Regexes of source topics to replicate (full match; empty = none).",
        regex=True,
    ),
    ConfigKey(
        "topics.exclude",
        "list",
        _TOPICS_EXCLUDE_DEFAULT,
        "Regexes of source topics never replicated (replaces the default list).",
        regex=True,
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
        _CONFIG_PROPERTIES_EXCLUDE_DEFAULT,
        "Regexes of topic config names never copied to remote topics (replaces the default list).",
        regex=True,
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
    ),
    ConfigKey(
        "consumer.poll.timeout.ms",
        "long",
        "1000",
        "Timeout of one poll of a source consumer.",
        "ms",
        minimum=0,
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
    ),
    ConfigKey(
        "replication.factor",
        "int",
        "2",
        "Replication factor of newly created remote topics" + _RF_DOC + ".",
        "replicas",
        minimum=-1,
        nonzero=True,
    ),
    ConfigKey(
        "offset-syncs.topic.replication.factor",
        "short",
        "3",
        "Replication factor of the offset-syncs topic" + _RF_DOC + ".",
        "replicas",
        minimum=-1,
        nonzero=True,
    ),
    ConfigKey(
        "offset.lag.max",
        "long",
        "100",
        "How far (in target offsets) replication may get ahead of the last offset sync before a new one "
        "is written; 0 = a sync per record.",
        "records",
    ),
    ConfigKey(
        "heartbeats.replication.enabled",
        "boolean",
        "true",
        "Whether heartbeat topics are replicated even if the topic filter rejects them (Kafka 4.0).",
    ),
    ConfigKey(
        "add.source.alias.to.metrics",
        "boolean",
        "false",
        "Kafka 3.5-3.9 metrics tag switch; ignored (the source tag is always present).",
        removed_in="4.0",
    ),
    ConfigKey(
        "exactly.once.support",
        "string",
        "requested",
        "Connect's exactly-once requirement of the source connector: requested or required "
        "(required needs <S>.consumer.isolation.level=read_committed). Read per flow only, as in MM2.",
        scope="flow",
        choices=("requested", "required"),
    ),
    ConfigKey(
        "transaction.boundary",
        "string",
        "poll",
        "Connect's exactly-once transaction boundary. Read per flow only, as in MM2.",
        scope="flow",
        choices=("poll", "interval", "connector"),
    ),
    # --- MirrorCheckpointConfig -------------------------------------------------------------
    ConfigKey("groups", "list", ".*", "Regexes of consumer groups to checkpoint (full match).", regex=True),
    ConfigKey(
        "groups.exclude",
        "list",
        _GROUPS_EXCLUDE_DEFAULT,
        "Regexes of consumer groups never checkpointed (replaces the default list).",
        regex=True,
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
    ),
    # --- Connect worker of the target cluster -----------------------------------------------
    ConfigKey(
        "offset.storage.topic",
        "string",
        "mm2-offsets.<source>.internal",
        "Topic on the target holding Connect source offsets of flow S->T (always '.'-separated).",
        scope="worker",
    ),
    ConfigKey(
        "offset.storage.partitions",
        "int",
        "25",
        "Partitions of the offset storage topic when it is created.",
        "partitions",
        scope="worker",
        minimum=1,
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
    ),
    ConfigKey(
        "exactly.once.source.support",
        "string",
        "disabled",
        "Exactly-once source support of the target's worker (KIP-618), set as "
        "<T>.exactly.once.source.support: disabled, preparing or enabled.",
        scope="worker",
        choices=("disabled", "preparing", "enabled"),
    ),
    # --- mirrorspark ------------------------------------------------------------------------
    ConfigKey(
        "mirrorspark.batch.max.records.per.partition",
        "int",
        "200000",
        "Most records one batch copies from one source partition.",
        "records",
        scope="mirrorspark",
        minimum=1,
    ),
    ConfigKey(
        "mirrorspark.batch.idle.interval.ms",
        "long",
        "200",
        "Pause between batches when the previous batch copied nothing.",
        "ms",
        scope="mirrorspark",
        minimum=0,
    ),
    ConfigKey(
        "mirrorspark.batch.follow.ms",
        "long",
        "1000",
        "How long a batch keeps copying records that arrive after it was planned: once its tasks have "
        "copied up to the end offsets seen when planning, they follow their partitions until this long "
        "after they started, so that new records go out at once rather than in the next batch "
        "(lower latency, fewer Spark jobs). 0 = stop at those end offsets. Ignored by --until-caught-up.",
        "ms",
        scope="mirrorspark",
        minimum=0,
    ),
    ConfigKey(
        "mirrorspark.read.mode",
        "string",
        "consumer",
        "How Spark tasks read the source: consumer (confluent-kafka consumers inside Spark tasks) or "
        "spark-kafka (Spark's Kafka source).",
        scope="mirrorspark",
        choices=("consumer", "spark-kafka"),
    ),
    ConfigKey(
        "mirrorspark.identity.allow.cycles",
        "boolean",
        "false",
        "Whether to start although enabled flows form a cycle (A->B and B->A, or A->B->C->A) through a flow "
        "whose replication policy keeps topic names (IdentityReplicationPolicy), which MM2's cycle check cannot "
        "stop; set it only when the flows' topic filters never match a topic replicated along the cycle.",
        scope="mirrorspark",
    ),
)
"""Every key mirrorspark knows, in MM2's order: driver, client, connector, worker, mirrorspark keys."""

_KEYS: Final[Mapping[str, ConfigKey]] = MappingProxyType({k.name: k for k in CONFIG_KEYS})
if len(_KEYS) != len(CONFIG_KEYS):  # pragma: no cover - guards the registry itself
    raise AssertionError("duplicate name in CONFIG_KEYS")

_ROLES: Final = ("consumer", "producer", "admin")
_SIDES: Final = ("source", "target")
# Top-level prefixes MM2 passes through (worker config, connector config, REST server).
_WORKER_PREFIXES: Final = (
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
_CONNECTOR_PREFIXES: Final = (
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
_CONNECT_PREFIXES: Final = ("plugin.",)
_ROLE_PREFIXES: Final = tuple(f"{role}." for role in _ROLES)
_SIDE_ROLE_PREFIXES: Final = tuple(f"{side}.{role}." for side in _SIDES for role in _ROLES)
_SIDE_CLUSTER_PREFIXES: Final = tuple(f"{side}.cluster." for side in _SIDES)
_FLOW_CLIENT_PREFIXES: Final = _ROLE_PREFIXES + _SIDE_ROLE_PREFIXES + _SIDE_CLUSTER_PREFIXES
_REST_PREFIXES: Final = (
    "rest.",
    "listeners.",
    "access.control.",
    "admin.listeners.",
    "response.http.headers.",
)
_MIRRORSPARK_PREFIX: Final = "mirrorspark."

_SECRET_MARKERS: Final = (
    "password",
    "secret",
    "sasl.jaas.config",
    "ssl.key",
    "basic.auth.user.info",
    "credential",
)
_MASK: Final = "******"


def _is_secret(key: str) -> bool:
    """Whether values of ``key`` must never be shown (passwords, JAAS configs, private keys)."""
    low = key.lower()
    return any(marker in low for marker in _SECRET_MARKERS)


def _show(key: str, value: str) -> str:
    """``repr`` of ``value`` for messages, or the mask when ``key`` holds a secret."""
    return _MASK if _is_secret(key) else repr(value)


def _is_client_key(key: str) -> bool:
    """Whether ``key`` is a client connection key (MM2's ``MirrorClientConfig.CLIENT_CONFIG_DEF``)."""
    return key in ("bootstrap.servers", "security.protocol") or key.startswith(("ssl.", "sasl."))


# --------------------------------------------------------------------------------------
# Java .properties syntax
# --------------------------------------------------------------------------------------

_NATURAL_LINE = re.compile(r"\r\n|\r|\n")
_PROPS_WS: Final = " \t\f"
_ESCAPES: Final = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}
_HEX4 = re.compile(r"[0-9a-fA-F]{4}")


def parse_properties(text: str) -> dict[str, str]:
    """Parse Java ``.properties`` text, as ``java.util.Properties.load`` does.

    Parameters
    ----------
    text:
        The file's text. Lines end with ``\\n``, ``\\r\\n`` or ``\\r``.

    Returns
    -------
    dict[str, str]
        Keys and values in file order; a key given twice keeps its last value.

    Raises
    ------
    ConfigError
        On a malformed ``\\uXXXX`` escape; the message gives the line number, never the line.

    Notes
    -----
    Mirrors ``java.util.Properties.load(Reader)``: blank lines and lines whose first
    non-blank character is ``#`` or ``!`` are comments (a backslash does not continue a
    comment); a line ending in an odd number of backslashes continues on the next line,
    whose leading whitespace is dropped; the key ends at the first unescaped ``=``, ``:``
    or whitespace, and whitespace plus at most one ``=``/``:`` separate it from the value;
    leading whitespace is trimmed, trailing whitespace of a value is kept; escapes
    ``\\t \\n \\r \\f \\uXXXX`` are decoded and a backslash before any other character
    stands for that character (``\\=``, ``\\:``, ``\\ ``, ``\\\\``).
    """
    lines = _NATURAL_LINE.split(text)
    if lines and lines[0].startswith("\ufeff"):
        lines[0] = lines[0][1:]
    out: dict[str, str] = {}
    i = 0
    while i < len(lines):
        lineno = i + 1
        logical = lines[i].lstrip(_PROPS_WS)
        i += 1
        if not logical or logical[0] in "#!":
            continue
        while _continues(logical):
            logical = logical[:-1]
            if i >= len(lines):
                break
            logical += lines[i].lstrip(_PROPS_WS)
            i += 1
        key, value = _split_key_value(logical)
        out[_unescape(key, lineno)] = _unescape(value, lineno)
    return out


def _continues(line: str) -> bool:
    """Whether ``line`` ends with an odd number of backslashes (a line continuation)."""
    n = len(line) - len(line.rstrip("\\"))
    return n % 2 == 1


def _split_key_value(line: str) -> tuple[str, str]:
    """Split a logical line into its still-escaped key and value (``Properties.load`` rules)."""
    key_end = len(line)
    value_start = len(line)
    has_sep = False
    backslash = False
    for pos, c in enumerate(line):
        if c in "=:" and not backslash:
            key_end, value_start, has_sep = pos, pos + 1, True
            break
        if c in _PROPS_WS and not backslash:
            key_end, value_start = pos, pos + 1
            break
        backslash = (not backslash) if c == "\\" else False
    while value_start < len(line):
        c = line[value_start]
        if c not in _PROPS_WS:
            if not has_sep and c in "=:":
                has_sep = True
            else:
                break
        value_start += 1
    return line[:key_end], line[value_start:]


def _unescape(s: str, lineno: int) -> str:
    """Decode the escapes of a key or value (``Properties.loadConvert``)."""
    if "\\" not in s:
        return s
    out: list[str] = []
    j = 0
    while j < len(s):
        c = s[j]
        j += 1
        if c != "\\":
            out.append(c)
            continue
        if j >= len(s):
            break
        c = s[j]
        j += 1
        if c == "u":
            digits = s[j : j + 4]
            if not _HEX4.fullmatch(digits):
                raise ConfigError(
                    f"line {lineno}: malformed \\uXXXX escape (a \\u must be followed by 4 hex digits); "
                    "fix the escape or write the character itself"
                )
            out.append(chr(int(digits, 16)))
            j += 4
        else:
            out.append(_ESCAPES.get(c, c))
    result = "".join(out)
    if any("\ud800" <= ch <= "\udfff" for ch in result):  # join UTF-16 surrogate pairs as Java strings do
        result = result.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")
    return result


# --------------------------------------------------------------------------------------
# ${provider:path:key} placeholders (Kafka's ConfigTransformer)
# --------------------------------------------------------------------------------------

_PLACEHOLDER = re.compile(r"\$\{([^}]*?):(?:([^}]*?):)?([^}]*?)\}")
_PROVIDER_KINDS: Final = {
    "FileConfigProvider": "file",
    "EnvVarConfigProvider": "env",
    "DirectoryConfigProvider": "directory",
}


class _Resolver:
    """Resolves ``${env:NAME}``, ``${file:PATH:KEY}`` and ``${directory:DIR:FILE}`` in values."""

    def __init__(self, props: Mapping[str, str], env: Mapping[str, str], src: str, warn: Callable[[str], None]) -> None:
        self._env = env
        self._src = src
        self._warn = warn
        self._files: dict[str, dict[str, str]] = {}
        self._kinds = {"env": "env", "file": "file", "directory": "directory"}
        for name in _split_list(props.get("config.providers", "")):
            cls = props.get(f"config.providers.{name}.class", "").strip()
            kind = _PROVIDER_KINDS.get(cls.rsplit(".", 1)[-1])
            if kind is not None:
                self._kinds[name] = kind
            else:
                self._kinds.pop(name, None)

    def resolve(self, key: str, value: str) -> str:
        """``value`` with every placeholder of a known provider replaced."""
        if "${" not in value:
            return value
        return _PLACEHOLDER.sub(lambda m: self._one(key, m), value)

    def _fail(self, key: str, placeholder: str, problem: str) -> ConfigError:
        return ConfigError(f"{self._src}: cannot resolve {placeholder} in '{key}': {problem}")

    def _one(self, key: str, m: re.Match[str]) -> str:
        placeholder = m.group(0)
        provider, path, name = m.group(1), m.group(2), m.group(3)
        kind = self._kinds.get(provider)
        if kind == "env":
            if path:
                raise self._fail(key, placeholder, "environment placeholders take no path; write ${env:NAME}")
            if name not in self._env:
                raise self._fail(
                    key,
                    placeholder,
                    f"environment variable '{name}' is not set; export it or set the value directly",
                )
            return self._env[name]
        if kind == "file":
            if not path:
                raise self._fail(key, placeholder, "write ${file:/path/to/file.properties:key}")
            props = self._read_properties(key, placeholder, path)
            if name not in props:
                raise self._fail(key, placeholder, f"file '{path}' has no key '{name}'; add it or fix the placeholder")
            return props[name]
        if kind == "directory":
            if not path:
                raise self._fail(key, placeholder, "write ${directory:/path/to/dir:file}")
            return self._read_text(key, placeholder, os.path.join(path, name))
        self._warn(
            f"'{key}' uses {placeholder} of config provider '{provider}', which mirrorspark cannot resolve "
            "(only env, file and directory providers); the value is used as written"
        )
        return placeholder

    def _read_text(self, key: str, placeholder: str, path: str) -> str:
        try:
            return Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as e:
            reason = e.strerror if isinstance(e, OSError) and e.strerror else type(e).__name__
            raise self._fail(
                key,
                placeholder,
                f"file '{path}' cannot be read ({reason}); check the path and its permissions",
            ) from e

    def _read_properties(self, key: str, placeholder: str, path: str) -> dict[str, str]:
        if path not in self._files:
            text = self._read_text(key, placeholder, path)
            try:
                self._files[path] = parse_properties(text)
            except ConfigError as e:
                raise self._fail(key, placeholder, f"file '{path}': {e.message}") from e
        return self._files[path]


# --------------------------------------------------------------------------------------
# Value conversion
# --------------------------------------------------------------------------------------

_INT_RE = re.compile(r"[+-]?[0-9]+")
_INT_BITS: Final = {"short": 16, "int": 32, "long": 64}
_TYPE_NAMES: Final = {
    "boolean": "a boolean (true or false)",
    "short": "a 16-bit integer",
    "int": "a 32-bit integer",
    "long": "a 64-bit integer",
    "string": "a string",
    "class": "a Java class name",
    "list": "a comma-separated list",
}


def _split_list(raw: str) -> tuple[str, ...]:
    """Kafka's LIST parsing: trim, empty = no items, else split on commas and trim every item."""
    trimmed = raw.strip()
    if not trimmed:
        return ()
    return tuple(item.strip() for item in trimmed.split(","))


def _invalid(src: str, written: str, raw: str, expected: str) -> ConfigError:
    return ConfigError(
        f"{src}: invalid value {_show(written, raw.strip())} for '{written}': expected {expected}; "
        f"fix '{written}' or remove it to use the default"
    )


def _to_bool(ck: ConfigKey, raw: str, written: str, src: str) -> bool:
    value = raw.strip().lower()
    if value not in ("true", "false"):
        raise _invalid(src, written, raw, _TYPE_NAMES["boolean"])
    return value == "true"


def _to_int(ck: ConfigKey, raw: str, written: str, src: str) -> int:
    value = raw.strip()
    bits = _INT_BITS[ck.type]
    low, high = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
    expected = _TYPE_NAMES[ck.type]
    if ck.minimum is not None:
        expected += f" >= {ck.minimum}" + (" other than 0" if ck.nonzero else "")
    elif ck.nonzero:
        expected += " other than 0"
    if ck.unit:
        expected += f" ({ck.unit})"
    if ck.nonzero and ck.minimum == -1:
        expected += ", -1 = broker default"
    if not _INT_RE.fullmatch(value):
        raise _invalid(src, written, raw, expected)
    number = int(value)
    if not low <= number <= high or (ck.minimum is not None and number < ck.minimum) or (ck.nonzero and number == 0):
        raise _invalid(src, written, raw, expected)
    return number


def _to_str(ck: ConfigKey, raw: str, written: str, src: str) -> str:
    value = raw.strip()
    if ck.choices and value not in ck.choices:
        raise _invalid(src, written, raw, "one of " + ", ".join(ck.choices))
    if ck.type == "class" and not value:
        raise _invalid(src, written, raw, _TYPE_NAMES["class"])
    return value


def _to_list(ck: ConfigKey, raw: str, written: str, src: str) -> tuple[str, ...]:
    items = _split_list(raw)
    if ck.regex:
        _check_regexes(items, written, src)
    return items


def _check_regexes(items: Sequence[str], written: str, src: str) -> None:
    """Compile each item, then the ``|``-joined whole (as the filters will), with ``re.ASCII``."""
    for item in items:
        try:
            re.compile(item, re.ASCII)
        except re.error as e:
            raise BadRegexError(
                f"{src}: '{written}' holds the pattern {item!r}, which is not a valid regular "
                f"expression ({e}); fix or escape it (items are comma-separated regexes, each matched "
                "against the whole name)"
            ) from e
    if items:
        try:
            re.compile("|".join(items), re.ASCII)
        except re.error as e:
            raise BadRegexError(
                f"{src}: '{written}' holds patterns {list(items)!r} that do not compile once joined "
                f"with '|' ({e}); inline flags such as (?i) must start the first item, or use a scoped "
                "group such as (?i:abc)"
            ) from e


def _validate(ck: ConfigKey, raw: str, written: str, src: str) -> None:
    """Raise :class:`ConfigError` if ``raw`` is not a valid value of ``ck``."""
    if ck.type == "boolean":
        _to_bool(ck, raw, written, src)
    elif ck.type in _INT_BITS:
        _to_int(ck, raw, written, src)
    elif ck.type == "list":
        _to_list(ck, raw, written, src)
    else:
        _to_str(ck, raw, written, src)


# --------------------------------------------------------------------------------------
# Frozen objects
# --------------------------------------------------------------------------------------


def _rebuild(cls: type[Any], kwargs: dict[str, Any]) -> Any:
    """Pickle helper: construct ``cls`` from keyword arguments."""
    return cls(**kwargs)


class _Frozen:
    """Shared ``repr`` (secrets masked), pickling and read-only mapping fields of the config objects."""

    _MAPPING_FIELDS: ClassVar[tuple[str, ...]] = ()

    def _freeze_mappings(self) -> None:
        for name in self._MAPPING_FIELDS:
            object.__setattr__(self, name, MappingProxyType(dict(getattr(self, name))))

    def __reduce__(self) -> tuple[Any, ...]:
        kwargs = {
            f.name: dict(v) if isinstance(v, MappingProxyType) else v
            for f in fields(self)  # type: ignore[arg-type]
            for v in [getattr(self, f.name)]
        }
        return (_rebuild, (type(self), kwargs))

    def __repr__(self) -> str:
        parts = []
        for f in fields(self):  # type: ignore[arg-type]
            value = getattr(self, f.name)
            if isinstance(value, MappingProxyType):
                items = (f"{k!r}: {_show(k, v) if isinstance(v, str) else repr(v)}" for k, v in value.items())
                parts.append(f"{f.name}={{{', '.join(items)}}}")
            else:
                parts.append(f"{f.name}={value!r}")
        return f"{type(self).__name__}({', '.join(parts)})"


@dataclass(frozen=True, kw_only=True, repr=False)
class ClientSettings(_Frozen):
    """Java-style Kafka client properties of one client role (admin, consumer or producer).

    Parameters
    ----------
    properties:
        Java client property names and values (e.g. ``{"bootstrap.servers": "b1:9092"}``);
        copied into a read-only mapping.

    Notes
    -----
    The Python counterpart of the maps MM2's ``MirrorConnectorConfig.sourceConsumerConfig``
    and friends build. ``repr`` and ``str`` mask secret values (keys containing
    ``password``, ``secret``, ``sasl.jaas.config``, ``ssl.key``) as ``******``. Instances
    are immutable, hashable, picklable and safe to share between threads.
    """

    properties: Mapping[str, str]

    _MAPPING_FIELDS = ("properties",)

    def __post_init__(self) -> None:
        self._freeze_mappings()

    def __hash__(self) -> int:
        return hash(frozenset(self.properties.items()))

    def __str__(self) -> str:
        return repr(self)

    @property
    def bootstrap_servers(self) -> str:
        """The ``bootstrap.servers`` value (comma-separated ``host:port`` pairs).

        Raises
        ------
        ConfigError
            If no ``bootstrap.servers`` is set.
        """
        value = self.properties.get("bootstrap.servers")
        if not value:
            raise ConfigError("client settings have no bootstrap.servers: set '<alias>.bootstrap.servers'")
        return value

    def get(self, key: str, default: str | None = None) -> str | None:
        """The value of Java client property ``key``, or ``default`` if it is not set.

        Parameters
        ----------
        key:
            Java client property name, e.g. ``"isolation.level"``.
        default:
            Returned when ``key`` is not set.

        Returns
        -------
        str or None
        """
        return self.properties.get(key, default)

    def with_overrides(self, overrides: Mapping[str, str]) -> ClientSettings:
        """A copy with ``overrides`` applied on top (an override wins).

        Parameters
        ----------
        overrides:
            Java client properties to set.

        Returns
        -------
        ClientSettings
        """
        return ClientSettings(properties={**self.properties, **overrides})

    def to_librdkafka(self) -> dict[str, str]:
        """These settings as a confluent-kafka (librdkafka) configuration.

        The one place Java client properties become librdkafka properties. Keys both
        clients share are kept (``bootstrap.servers``, ``security.protocol``,
        ``sasl.mechanism``, ``client.id``, ``client.rack``, ``isolation.level``, ``acks``,
        ``linger.ms``, ``batch.size``, ``compression.type``, ``enable.idempotence``,
        ``fetch.*``, ``request.timeout.ms``, ``retries``, ``retry.backoff.ms``,
        ``reconnect.backoff.*``, ``connections.max.idle.ms``, ``client.dns.lookup``, ...);
        Java-only keys (serializers, interceptors, ``metrics.*``, ``sasl.login.*``,
        ``max.block.ms``, ``ssl.protocol``, ...) are dropped; keys nobody knows are kept, so
        librdkafka rejects true typos with its own message. Translations:

        * ``sasl.jaas.config``: ``PlainLoginModule``/``ScramLoginModule`` ->
          ``sasl.username``/``sasl.password``; ``OAuthBearerLoginModule`` -> OIDC client
          credentials (with ``sasl.oauthbearer.token.endpoint.url``) or an unsecured JWT;
          ``Krb5LoginModule`` -> ``sasl.kerberos.keytab``/``sasl.kerberos.principal``;
        * ``ssl.truststore.location`` -> ``ssl.ca.location`` if the file is PEM;
          ``ssl.keystore.location`` -> ``ssl.keystore.location`` (PKCS#12) or
          ``ssl.certificate.location``/``ssl.key.location`` (``ssl.keystore.type=PEM``);
          inline ``ssl.keystore.key``/``ssl.keystore.certificate.chain``/
          ``ssl.truststore.certificates`` -> ``ssl.key.pem``/``ssl.certificate.pem``/``ssl.ca.pem``;
          librdkafka-native ``ssl.ca.location``/``ssl.certificate.location`` win over Java stores;
        * ``ssl.endpoint.identification.algorithm`` ``""`` -> ``none``;
        * ``receive.buffer.bytes``/``send.buffer.bytes`` -> ``socket.*.buffer.bytes`` (-1 -> 0, OS default);
        * ``buffer.memory`` (bytes) -> ``queue.buffering.max.kbytes`` (KiB);
          ``delivery.timeout.ms`` -> ``message.timeout.ms``; ``fetch.max.wait.ms`` ->
          ``fetch.wait.max.ms``; ``max.request.size`` -> ``message.max.bytes``;
          ``compression.<type>.level`` -> ``compression.level``;
          ``auto.offset.reset=none`` -> ``error``.

        Returns
        -------
        dict[str, str]
            A new dict; reads PEM/keystore files only to sniff their format.

        Raises
        ------
        ConfigError
            If a JAAS config cannot be parsed or translated, or a Java trust/key store is not
            in a format librdkafka reads (JKS, PKCS#12 truststore); the message says what to
            set instead and never contains a secret.
        """
        return _to_librdkafka(self.properties)

    def to_spark_options(self) -> dict[str, str]:
        """These settings as Spark Kafka source options.

        The one place Java client properties become Spark options: every property is
        prefixed with ``kafka.``, except those Spark's Kafka source rejects
        (``auto.offset.reset``, ``key.deserializer``, ``value.deserializer``,
        ``enable.auto.commit``, ``interceptor.classes``), which are dropped.

        Returns
        -------
        dict[str, str]
            e.g. ``{"kafka.bootstrap.servers": "b1:9092", "kafka.isolation.level": "read_committed"}``.
        """
        return {f"kafka.{k}": v for k, v in self.properties.items() if k not in _SPARK_REJECTED}


@dataclass(frozen=True, kw_only=True, repr=False)
class ClusterConfig(_Frozen):
    """One Kafka cluster named in ``clusters``.

    Parameters
    ----------
    alias:
        The cluster alias, e.g. ``"primary"``.
    bootstrap_servers:
        ``<alias>.bootstrap.servers`` (or the top-level ``bootstrap.servers``).
    admin, consumer, producer:
        Cluster-level client settings per role: MM2's ``clusterProps(alias)`` with the role
        prefix, i.e. the top-level client keys (``bootstrap.servers``,
        ``security.protocol``, ``ssl.*``, ``sasl.*``), overridden by ``<alias>.<client key>``,
        overridden by ``<alias>.<role>.*``. Flow-specific clients are in :class:`FlowConfig`.

    Notes
    -----
    Mirrors ``MirrorMakerConfig.clusterProps`` / ``clientConfig`` of MM2.
    """

    alias: str
    bootstrap_servers: str
    admin: ClientSettings
    consumer: ClientSettings
    producer: ClientSettings


@dataclass(frozen=True, kw_only=True)
class PolicyConfig:
    """The replication policy of a flow (``replication.policy.*`` keys).

    Parameters
    ----------
    class_name:
        ``replication.policy.class``: Java class name of MM2's policy
        (``...DefaultReplicationPolicy`` or ``...IdentityReplicationPolicy``).
    separator:
        ``replication.policy.separator``: between source alias and topic; never empty.
    internal_topic_separator_enabled:
        ``replication.policy.internal.topic.separator.enabled`` (KIP-949): whether
        MM2's internal topic names use ``separator`` (True) or ``"."``.

    Notes
    -----
    The ``replication.policy.*`` configuration MM2 passes to ``ReplicationPolicy.configure``
    (``DefaultReplicationPolicy``, ``IdentityReplicationPolicy``).
    """

    class_name: str = _DEFAULT_POLICY_CLASS
    separator: str = "."
    internal_topic_separator_enabled: bool = True


@dataclass(frozen=True, kw_only=True, repr=False)
class FlowConfig(_Frozen):
    """Everything one replication flow S->T needs, merged and typed.

    One per ordered pair of aliases; MM2 runs one "herder" (Connect worker with the three
    connectors ``MirrorSourceConnector``, ``MirrorCheckpointConnector``,
    ``MirrorHeartbeatConnector``) per flow. Each field comes from ``S->T.<key>``, else the
    top-level ``<key>``, else MM2's default (see :data:`CONFIG_KEYS`); worker fields come
    from the target cluster (``<T>.<key>``). Durations are in seconds (``_s``) or
    milliseconds (``_ms``).

    Parameters
    ----------
    source, target:
        Cluster aliases; ``source != target``.
    enabled:
        Whether the flow replicates data and checkpoints: ``S->T.enabled``, else the
        top-level ``enabled`` when the flow has a herder (heartbeats enabled), else False.
    topics, topics_exclude, groups, groups_exclude, config_properties_exclude:
        Regex lists (``topics``, ``topics.exclude``, ...), validated; empty = matches nothing.
    use_defaults_from:
        ``"target"`` or ``"source"`` (``S->T.use.defaults.from`` only, as in MM2).
    tasks_max:
        ``tasks.max`` (>= 1).
    refresh_topics_enabled, refresh_topics_interval_s:
        ``refresh.topics.enabled`` / ``.interval.seconds``: topic discovery (default on, 600 s).
    refresh_groups_enabled, refresh_groups_interval_s:
        ``refresh.groups.*``: consumer group discovery (default on, 600 s).
    sync_topic_configs_enabled, sync_topic_configs_interval_s:
        ``sync.topic.configs.*``: topic config sync (default on, 600 s).
    sync_topic_acls_enabled, sync_topic_acls_interval_s:
        ``sync.topic.acls.*``: topic ACL sync (default on, 600 s).
    emit_heartbeats_enabled, emit_heartbeats_interval_s:
        ``emit.heartbeats.*``: heartbeats (default on, 1 s).
    emit_checkpoints_enabled, emit_checkpoints_interval_s:
        ``emit.checkpoints.*``: checkpoints (default on, 60 s).
    sync_group_offsets_enabled, sync_group_offsets_interval_s:
        ``sync.group.offsets.*``: writing translated offsets to idle target groups (default off, 60 s).
        For all these ``x.enabled`` + ``x.interval.seconds`` pairs a job is off when its flag
        is False; a negative interval turns the flag off (as MM2's scheduler does).
    emit_offset_syncs_enabled:
        ``emit.offset-syncs.enabled``.
    heartbeats_replication_enabled:
        ``heartbeats.replication.enabled`` (Kafka 4.0).
    offset_lag_max:
        ``offset.lag.max``, in records.
    replication_factor, offset_syncs_topic_replication_factor, heartbeats_topic_replication_factor,
    checkpoints_topic_replication_factor, offset_storage_replication_factor:
        Replication factors of created topics; -1 = the broker's default.
    offset_storage_topic:
        Worker key ``<T>.offset.storage.topic``; default ``mm2-offsets.<source>.internal``.
    offset_storage_partitions:
        Worker key ``offset.storage.partitions``; default 25.
    offset_syncs_topic_location:
        ``"source"`` or ``"target"``.
    consumer_poll_timeout_ms, admin_timeout_ms:
        ``consumer.poll.timeout.ms`` and ``admin.timeout.ms``, in milliseconds.
    exactly_once_source_support:
        Worker key ``<T>.exactly.once.source.support``: ``"disabled"``, ``"preparing"`` or ``"enabled"``.
    policy:
        The replication policy.
    source_consumer:
        Data consumer on S (``enable.auto.commit=false`` forced, ``auto.offset.reset=earliest``
        unless overridden).
    source_admin, source_producer:
        Admin and (offset-syncs, when the location is ``source``) producer on S.
    target_producer:
        Data producer on T (also the offset-syncs producer when the location is ``target``);
        includes ``<T>.producer.*`` and ``S->T.producer.override.*``.
    target_admin, target_consumer:
        Admin and consumer on T (the consumer gets the same forced settings as ``source_consumer``).
    extra:
        Every other flow-level property after the merge (e.g. ``exactly.once.support``,
        ``transforms``), read-only.

    Notes
    -----
    Mirrors ``MirrorMakerConfig.connectorBaseConfig`` + ``workerConfig`` and the typed
    getters of ``MirrorSourceConfig``, ``MirrorCheckpointConfig`` and ``MirrorHeartbeatConfig``.
    """

    source: str
    target: str
    enabled: bool
    topics: tuple[str, ...]
    topics_exclude: tuple[str, ...]
    groups: tuple[str, ...]
    groups_exclude: tuple[str, ...]
    config_properties_exclude: tuple[str, ...]
    use_defaults_from: str
    tasks_max: int
    refresh_topics_enabled: bool
    refresh_topics_interval_s: float
    refresh_groups_enabled: bool
    refresh_groups_interval_s: float
    sync_topic_configs_enabled: bool
    sync_topic_configs_interval_s: float
    sync_topic_acls_enabled: bool
    sync_topic_acls_interval_s: float
    emit_heartbeats_enabled: bool
    emit_heartbeats_interval_s: float
    emit_checkpoints_enabled: bool
    emit_checkpoints_interval_s: float
    sync_group_offsets_enabled: bool
    sync_group_offsets_interval_s: float
    emit_offset_syncs_enabled: bool
    heartbeats_replication_enabled: bool
    offset_lag_max: int
    replication_factor: int
    offset_syncs_topic_replication_factor: int
    heartbeats_topic_replication_factor: int
    checkpoints_topic_replication_factor: int
    offset_storage_replication_factor: int
    offset_storage_topic: str
    offset_storage_partitions: int
    offset_syncs_topic_location: str
    consumer_poll_timeout_ms: int
    admin_timeout_ms: int
    exactly_once_source_support: str
    policy: PolicyConfig
    source_consumer: ClientSettings
    source_admin: ClientSettings
    source_producer: ClientSettings
    target_producer: ClientSettings
    target_admin: ClientSettings
    target_consumer: ClientSettings
    extra: Mapping[str, str]

    _MAPPING_FIELDS = ("extra",)

    def __post_init__(self) -> None:
        self._freeze_mappings()

    def __hash__(self) -> int:
        return hash((self.source, self.target, self.enabled))

    @property
    def name(self) -> str:
        """The flow's name as MM2 writes it, ``"<source>-><target>"``."""
        return f"{self.source}->{self.target}"


@dataclass(frozen=True, kw_only=True)
class DataPathConfig:
    """mirrorspark's own settings (top-level ``mirrorspark.*`` keys): the data path, and the identity-cycle check.

    Parameters
    ----------
    max_records_per_partition:
        ``mirrorspark.batch.max.records.per.partition``: most records one batch copies from
        one source partition (>= 1).
    idle_interval_ms:
        ``mirrorspark.batch.idle.interval.ms``: pause between batches, in milliseconds, when
        the previous batch copied nothing (>= 0).
    follow_ms:
        ``mirrorspark.batch.follow.ms``: how long, in milliseconds from its start, a task keeps
        copying records that arrive after the batch was planned, once it has reached the planned
        end offsets (>= 0; 0 = stop at the planned end offsets).
    read_mode:
        ``mirrorspark.read.mode``: ``"consumer"`` (confluent-kafka consumers inside Spark
        tasks) or ``"spark-kafka"`` (Spark's Kafka source).
    identity_allow_cycles:
        ``mirrorspark.identity.allow.cycles``: start even if enabled flows form a cycle through
        an identity-style flow (:func:`mirrorspark.policy.check_identity_cycles`).

    Notes
    -----
    mirrorspark's own; MM2 has no counterpart (Connect's worker polls one task at a time).
    """

    max_records_per_partition: int = 200_000
    idle_interval_ms: int = 200
    follow_ms: int = 1000
    read_mode: str = "consumer"
    identity_allow_cycles: bool = False


@dataclass(frozen=True, kw_only=True, repr=False)
class MirrorConfig(_Frozen):
    """A whole ``mm2.properties``, parsed and validated.

    Parameters
    ----------
    clusters:
        Clusters by alias, in the order of ``clusters``; read-only.
    flows:
        Every ordered pair (S, T), S != T, in MM2's order (for S in clusters: for T in clusters).
    data_path:
        mirrorspark's data-path settings.
    warnings:
        Human-readable warnings (unknown keys, deprecated keys, keys MM2 ignores), each also
        logged once at WARNING by this module's logger.
    source_name:
        Where the properties came from (a path, or ``"<properties>"``).
    target_clusters:
        The ``--clusters`` option (targets this node serves) given to :func:`load_config` /
        :func:`parse_config`, or ``None`` for all; the default of ``targets`` in
        :meth:`enabled_flows` and :meth:`heartbeat_flows`.

    Notes
    -----
    Mirrors MM2's ``MirrorMakerConfig`` plus the herder selection of its ``MirrorMaker`` driver.
    """

    clusters: Mapping[str, ClusterConfig]
    flows: tuple[FlowConfig, ...]
    data_path: DataPathConfig = field(default_factory=DataPathConfig)
    warnings: tuple[str, ...] = ()
    source_name: str = "<properties>"
    target_clusters: tuple[str, ...] | None = None

    _MAPPING_FIELDS = ("clusters",)

    def __post_init__(self) -> None:
        self._freeze_mappings()
        object.__setattr__(self, "flows", tuple(self.flows))
        object.__setattr__(self, "warnings", tuple(self.warnings))
        if self.target_clusters is not None:
            object.__setattr__(self, "target_clusters", tuple(self._check_aliases(self.target_clusters, "--clusters")))

    def __hash__(self) -> int:
        return hash((self.source_name, self.flows))

    def _unknown(self, alias: str, what: str) -> UnknownAliasError:
        known = ", ".join(self.clusters) or "(none)"
        return UnknownAliasError(
            f"{self.source_name}: {what} names cluster alias {alias!r}, which is not in 'clusters' "
            f"(known: {known}); use one of those or add it to 'clusters'"
        )

    def _check_aliases(self, aliases: Iterable[str], what: str) -> list[str]:
        if isinstance(aliases, str):
            raise TypeError(f"{what}: expected a sequence of aliases, got the string {aliases!r}")
        checked = list(aliases)
        for alias in checked:
            if alias not in self.clusters:
                raise self._unknown(alias, what)
        return checked

    def cluster(self, alias: str) -> ClusterConfig:
        """The cluster called ``alias``.

        Raises
        ------
        UnknownAliasError
            If ``alias`` is not in ``clusters``; the message lists the known aliases.
        """
        if alias not in self.clusters:
            raise self._unknown(alias, "the request")
        return self.clusters[alias]

    def flow(self, source: str, target: str) -> FlowConfig:
        """The flow ``source->target``.

        Raises
        ------
        UnknownAliasError
            If either alias is not in ``clusters``.
        ConfigError
            If ``source == target`` (MM2 has no such flow).
        """
        self._check_aliases((source, target), f"flow {source}->{target}")
        for f in self.flows:
            if f.source == source and f.target == target:
                return f
        raise ConfigError(f"{self.source_name}: there is no flow {source}->{target}: source and target must differ")

    def _targets(self, targets: Sequence[str] | None) -> tuple[FlowConfig, ...]:
        if targets is None:
            targets = self.target_clusters
        if targets is None:
            return self.flows
        wanted = set(self._check_aliases(targets, "--clusters"))
        return tuple(f for f in self.flows if f.target in wanted)

    def enabled_flows(self, targets: Sequence[str] | None = None) -> tuple[FlowConfig, ...]:
        """Flows that replicate (``S->T.enabled=true``), in order.

        Parameters
        ----------
        targets:
            MM2's ``--clusters`` option: keep only flows whose **target** is listed;
            ``None`` = :attr:`target_clusters` (all flows if that is ``None`` too).

        Returns
        -------
        tuple[FlowConfig, ...]
            Possibly empty (no enabled flow is not an error here).

        Raises
        ------
        UnknownAliasError
            If ``targets`` names an alias not in ``clusters``.
        """
        return tuple(f for f in self._targets(targets) if f.enabled)

    def heartbeat_flows(self, targets: Sequence[str] | None = None) -> tuple[FlowConfig, ...]:
        """Flows whose heartbeat connector emits heartbeats, in order.

        MM2's ``clusterPairs`` rule: a flow gets a herder if it is enabled **or** heartbeats
        are enabled for it (``S->T.emit.heartbeats.enabled``, else the top-level key, else
        true); its heartbeat connector then emits iff ``emit_heartbeats_enabled``. So with
        three clusters and nothing set, all six flows emit heartbeats.

        Parameters
        ----------
        targets:
            As in :meth:`enabled_flows`.

        Returns
        -------
        tuple[FlowConfig, ...]

        Raises
        ------
        UnknownAliasError
            If ``targets`` names an alias not in ``clusters``.
        """
        # A flow with emit_heartbeats_enabled always has a herder, so the rule reduces to that flag.
        return tuple(f for f in self._targets(targets) if f.emit_heartbeats_enabled)


# --------------------------------------------------------------------------------------
# Java client properties -> librdkafka / Spark
# --------------------------------------------------------------------------------------

_SPARK_REJECTED: Final = frozenset(
    {
        "auto.offset.reset",
        "key.deserializer",
        "value.deserializer",
        "enable.auto.commit",
        "interceptor.classes",
    }
)

_LIBRDKAFKA_RENAMES: Final = {
    "receive.buffer.bytes": "socket.receive.buffer.bytes",
    "send.buffer.bytes": "socket.send.buffer.bytes",
    "delivery.timeout.ms": "message.timeout.ms",
    "fetch.max.wait.ms": "fetch.wait.max.ms",
    "max.request.size": "message.max.bytes",
    "ssl.keystore.key": "ssl.key.pem",
    "ssl.keystore.certificate.chain": "ssl.certificate.pem",
    "ssl.truststore.certificates": "ssl.ca.pem",
}
# Java client keys librdkafka has no (compatible) counterpart for: dropped silently.
_JAVA_ONLY_KEYS: Final = frozenset(
    {
        "key.serializer",
        "value.serializer",
        "key.deserializer",
        "value.deserializer",
        "interceptor.classes",
        "partitioner.class",
        "partitioner.adaptive.partitioning.enable",
        "partitioner.availability.timeout.ms",
        "partitioner.ignore.keys",
        "max.poll.records",
        "max.block.ms",
        "metric.reporters",
        "auto.include.jmx.reporter",
        "default.api.timeout.ms",
        "security.providers",
        "socket.connection.setup.timeout.max.ms",
        "metadata.max.idle.ms",
        "exclude.internal.topics",
        "internal.leave.group.on.close",
        "bootstrap.controllers",
        "ssl.protocol",
        "ssl.enabled.protocols",
        "ssl.provider",
        "ssl.cipher.suites",
        "ssl.keymanager.algorithm",
        "ssl.trustmanager.algorithm",
        "ssl.secure.random.implementation",
        "ssl.engine.factory.class",
        "ssl.truststore.password",
        "sasl.client.callback.handler.class",
        "sasl.kerberos.kinit.cmd",
        "sasl.kerberos.ticket.renew.jitter",
        "sasl.kerberos.ticket.renew.window.factor",
        "sasl.oauthbearer.jwks.endpoint.url",
        "sasl.oauthbearer.jwks.endpoint.refresh.ms",
        "sasl.oauthbearer.jwks.endpoint.retry.backoff.ms",
        "sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms",
        "sasl.oauthbearer.expected.audience",
        "sasl.oauthbearer.expected.issuer",
        "sasl.oauthbearer.clock.skew.seconds",
        "sasl.oauthbearer.scope.claim.name",
        "sasl.oauthbearer.header.urlencode",
        "sasl.oauthbearer.jwt.retriever.class",
        "sasl.oauthbearer.jwt.validator.class",
    }
)
_JAVA_ONLY_PREFIXES: Final = ("metrics.", "sasl.login.")
# Handled by dedicated code below, never copied as they are.
_SPECIAL_KEYS: Final = frozenset(
    {
        "sasl.jaas.config",
        "ssl.truststore.location",
        "ssl.truststore.type",
        "ssl.keystore.location",
        "ssl.keystore.type",
        "ssl.keystore.password",
        "ssl.endpoint.identification.algorithm",
        "buffer.memory",
        "partition.assignment.strategy",
        "client.dns.lookup",
        "auto.offset.reset",
        "compression.gzip.level",
        "compression.lz4.level",
        "compression.zstd.level",
    }
)
_ASSIGNORS: Final = {
    "RangeAssignor": "range",
    "RoundRobinAssignor": "roundrobin",
    "CooperativeStickyAssignor": "cooperative-sticky",
}
_LIBRDKAFKA_RECEIVE_MAX_DEFAULT: Final = 100_000_000


def _to_librdkafka(props: Mapping[str, str]) -> dict[str, str]:
    """Implementation of :meth:`ClientSettings.to_librdkafka`."""
    out: dict[str, str] = {}
    renamed: dict[str, str] = {}
    for key, value in props.items():
        if key in _SPECIAL_KEYS or key in _JAVA_ONLY_KEYS or key.startswith(_JAVA_ONLY_PREFIXES):
            continue
        if key in _LIBRDKAFKA_RENAMES:
            renamed[_LIBRDKAFKA_RENAMES[key]] = value
        else:
            out[key] = value
    for key, value in renamed.items():  # an explicit librdkafka key wins over a translated Java one
        out.setdefault(key, value)
    for key in ("socket.receive.buffer.bytes", "socket.send.buffer.bytes"):
        if out.get(key, "").strip() == "-1":  # Java: -1 = OS default; librdkafka: 0 = OS default
            out[key] = "0"

    if "buffer.memory" in props and "queue.buffering.max.kbytes" not in out:
        try:
            out["queue.buffering.max.kbytes"] = str(max(1, int(props["buffer.memory"].strip()) // 1024))
        except ValueError:
            raise ConfigError(
                f"invalid value {props['buffer.memory']!r} for 'buffer.memory': expected a number of bytes"
            ) from None
    ctype = props.get("compression.type", "").strip()
    if f"compression.{ctype}.level" in props and "compression.level" not in out:
        out["compression.level"] = props[f"compression.{ctype}.level"]
    if "auto.offset.reset" in props:
        reset = props["auto.offset.reset"].strip()
        out["auto.offset.reset"] = "error" if reset == "none" else reset
    if props.get("client.dns.lookup", "").strip() in (
        "use_all_dns_ips",
        "resolve_canonical_bootstrap_servers_only",
    ):
        out["client.dns.lookup"] = props["client.dns.lookup"].strip()
    if "partition.assignment.strategy" in props:
        names = [n.rsplit(".", 1)[-1] for n in _split_list(props["partition.assignment.strategy"])]
        if "." not in props["partition.assignment.strategy"]:  # already librdkafka names
            out["partition.assignment.strategy"] = props["partition.assignment.strategy"]
        elif len(names) == 1 and names[0] in _ASSIGNORS:
            out["partition.assignment.strategy"] = _ASSIGNORS[names[0]]
        # a list of Java classes (e.g. Java's default "RangeAssignor, CooperativeStickyAssignor") has no
        # librdkafka equivalent (it cannot mix eager and cooperative assignors): left to librdkafka's default.
    if "ssl.endpoint.identification.algorithm" in props:
        algo = props["ssl.endpoint.identification.algorithm"].strip()
        out["ssl.endpoint.identification.algorithm"] = algo.lower() if algo else "none"
    _translate_fetch_limits(out)
    _translate_truststore(props, out)
    _translate_keystore(props, out)
    if "sasl.jaas.config" in props:
        _translate_jaas(props["sasl.jaas.config"], props, out)
    return out


def _translate_fetch_limits(out: dict[str, str]) -> None:
    """Raise ``receive.message.max.bytes`` when a Java-sized ``fetch.max.bytes`` needs it (librdkafka)."""
    fetch_max = out.get("fetch.max.bytes", "").strip()
    if fetch_max.isdigit() and "receive.message.max.bytes" not in out:
        needed = int(fetch_max) + 512
        if needed > _LIBRDKAFKA_RECEIVE_MAX_DEFAULT:
            out["receive.message.max.bytes"] = str(needed)


def _sniff(path: str, key: str, size: int) -> bytes:
    """The first ``size`` bytes of a store file named by ``key``."""
    try:
        with open(path, "rb") as fh:
            return fh.read(size)
    except OSError as e:
        raise ConfigError(
            f"{key} '{path}' cannot be read ({e.strerror or type(e).__name__}); check the path and its permissions"
        ) from e


def _translate_truststore(props: Mapping[str, str], out: dict[str, str]) -> None:
    """Java ``ssl.truststore.location`` -> librdkafka ``ssl.ca.location`` (PEM only)."""
    location = props.get("ssl.truststore.location", "").strip()
    if not location or "ssl.ca.location" in out or "ssl.ca.pem" in out:
        return
    store_type = props.get("ssl.truststore.type", "JKS").strip().upper() or "JKS"
    if b"-----BEGIN" in _sniff(location, "ssl.truststore.location", 1 << 16):
        out["ssl.ca.location"] = location
        return
    raise ConfigError(
        f"ssl.truststore.location '{location}' is a {store_type} trust store, but librdkafka needs PEM "
        "certificates: export them (e.g. keytool -exportcert -rfc -keystore <store> -alias <ca> > ca.pem) "
        "and set ssl.ca.location=<ca.pem> (it takes precedence over the Java trust store)"
    )


def _translate_keystore(props: Mapping[str, str], out: dict[str, str]) -> None:
    """Java ``ssl.keystore.*`` -> librdkafka PKCS#12 keystore or PEM certificate/key locations."""
    location = props.get("ssl.keystore.location", "").strip()
    native = ("ssl.certificate.location", "ssl.key.location", "ssl.certificate.pem", "ssl.key.pem")
    if not location or any(k in out for k in native):
        return
    store_type = props.get("ssl.keystore.type", "JKS").strip().upper() or "JKS"
    if store_type == "PEM":
        out["ssl.certificate.location"] = location
        out["ssl.key.location"] = location
        return
    head = _sniff(location, "ssl.keystore.location", 4)
    if store_type in ("JKS", "PKCS12") and head[:1] == b"\x30":  # DER: a PKCS#12 file (Java reads it as JKS too)
        out["ssl.keystore.location"] = location
        if "ssl.keystore.password" in props:
            out["ssl.keystore.password"] = props["ssl.keystore.password"]
        return
    raise ConfigError(
        f"ssl.keystore.location '{location}' is a {store_type} key store"
        + (" (JKS format)" if head == b"\xfe\xed\xfe\xed" else "")
        + ", which librdkafka cannot read: convert it to PKCS#12 (keytool -importkeystore -deststoretype "
        "PKCS12) "
        "and set ssl.keystore.type=PKCS12, or set ssl.certificate.location and ssl.key.location to PEM files"
    )


_JAAS_HEAD = re.compile(r"\s*([A-Za-z_$][\w.$]*)\s+(required|requisite|sufficient|optional)\b", re.IGNORECASE)
_JAAS_OPTION = re.compile(r'\s*([^\s=;"]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s;"]+))', re.DOTALL)


def _parse_jaas(text: str) -> tuple[str, dict[str, str]]:
    """Parse ``<LoginModule> <flag> key="value" ...;`` into the module's simple name and its options."""
    bad = ConfigError(
        "sasl.jaas.config cannot be parsed: expected one login module such as "
        '\'org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="p";\''
    )
    head = _JAAS_HEAD.match(text)
    if head is None:
        raise bad
    options: dict[str, str] = {}
    pos = head.end()
    while (m := _JAAS_OPTION.match(text, pos)) is not None:
        quoted, bare = m.group(2), m.group(3)
        options[m.group(1)] = re.sub(r"\\(.)", r"\1", quoted, flags=re.DOTALL) if quoted is not None else bare
        pos = m.end()
    if text[pos:].strip() != ";":
        raise bad
    return head.group(1).rsplit(".", 1)[-1], options


def _translate_jaas(jaas: str, props: Mapping[str, str], out: dict[str, str]) -> None:
    """``sasl.jaas.config`` -> librdkafka's ``sasl.*`` keys (explicit librdkafka keys win)."""
    module, options = _parse_jaas(jaas)
    if module in ("PlainLoginModule", "ScramLoginModule"):
        if "username" not in options or "password" not in options:
            raise ConfigError(f'sasl.jaas.config: {module} needs username="..." and password="..." options')
        out.setdefault("sasl.username", options["username"])
        out.setdefault("sasl.password", options["password"])
    elif module == "OAuthBearerLoginModule":
        if "sasl.oauthbearer.token.endpoint.url" in props:
            out.setdefault("sasl.oauthbearer.method", "oidc")
            for option, target in (
                ("clientId", "sasl.oauthbearer.client.id"),
                ("clientSecret", "sasl.oauthbearer.client.secret"),
                ("scope", "sasl.oauthbearer.scope"),
            ):
                if option in options:
                    out.setdefault(target, options[option])
        elif "unsecuredLoginStringClaim_sub" in options:
            out.setdefault("enable.sasl.oauthbearer.unsecure.jwt", "true")
            out.setdefault("sasl.oauthbearer.config", f"principal={options['unsecuredLoginStringClaim_sub']}")
        else:
            raise ConfigError(
                "sasl.jaas.config: OAuthBearerLoginModule without sasl.oauthbearer.token.endpoint.url or "
                "unsecuredLoginStringClaim_sub cannot be translated for librdkafka; "
                "set the token endpoint URL"
            )
    elif module == "Krb5LoginModule":
        if "keyTab" in options:
            out.setdefault("sasl.kerberos.keytab", options["keyTab"])
        if "principal" in options:
            out.setdefault("sasl.kerberos.principal", options["principal"])
        if "serviceName" in options:
            out.setdefault("sasl.kerberos.service.name", options["serviceName"])
    else:
        raise ConfigError(
            f"sasl.jaas.config: login module {module} has no librdkafka equivalent; use PlainLoginModule, "
            "ScramLoginModule, OAuthBearerLoginModule or Krb5LoginModule, "
            "or set librdkafka's sasl.* keys directly"
        )


# --------------------------------------------------------------------------------------
# Parsing a whole configuration
# --------------------------------------------------------------------------------------

_ALIAS_BAD = re.compile(r"[\s.,]|->")

# FlowConfig fields read from connector/flow keys: field -> key.
_FLOW_BOOL_FIELDS: Final = {
    "emit_offset_syncs_enabled": "emit.offset-syncs.enabled",
    "heartbeats_replication_enabled": "heartbeats.replication.enabled",
}
_FLOW_JOBS: Final = {
    "refresh_topics": "refresh.topics",
    "refresh_groups": "refresh.groups",
    "sync_topic_configs": "sync.topic.configs",
    "sync_topic_acls": "sync.topic.acls",
    "emit_heartbeats": "emit.heartbeats",
    "emit_checkpoints": "emit.checkpoints",
    "sync_group_offsets": "sync.group.offsets",
}
_FLOW_INT_FIELDS: Final = {
    "tasks_max": "tasks.max",
    "offset_lag_max": "offset.lag.max",
    "replication_factor": "replication.factor",
    "offset_syncs_topic_replication_factor": "offset-syncs.topic.replication.factor",
    "heartbeats_topic_replication_factor": "heartbeats.topic.replication.factor",
    "checkpoints_topic_replication_factor": "checkpoints.topic.replication.factor",
    "consumer_poll_timeout_ms": "consumer.poll.timeout.ms",
    "admin_timeout_ms": "admin.timeout.ms",
}
_FLOW_LIST_FIELDS: Final = {
    "topics": ("topics", None),
    "topics_exclude": ("topics.exclude", "topics.blacklist"),
    "groups": ("groups", None),
    "groups_exclude": ("groups.exclude", "groups.blacklist"),
    "config_properties_exclude": ("config.properties.exclude", "config.properties.blacklist"),
}
_FLOW_STR_FIELDS: Final = {
    "use_defaults_from": "use.defaults.from",
    "offset_syncs_topic_location": "offset-syncs.topic.location",
}
_POLICY_KEYS: Final = (
    "replication.policy.class",
    "replication.policy.separator",
    "replication.policy.internal.topic.separator.enabled",
)
_TYPED_FLOW_KEYS: Final = frozenset(
    {
        "enabled",
        *_FLOW_BOOL_FIELDS.values(),
        *_FLOW_INT_FIELDS.values(),
        *_FLOW_STR_FIELDS.values(),
        *_POLICY_KEYS,
    }
    | {f"{job}.enabled" for job in _FLOW_JOBS.values()}
    | {f"{job}.interval.seconds" for job in _FLOW_JOBS.values()}
    | {k for pair in _FLOW_LIST_FIELDS.values() for k in pair if k is not None}
)


def _strip_prefix(props: Mapping[str, str], prefix: str) -> dict[str, str]:
    """Keys starting with ``prefix``, prefix removed (Kafka's ``originalsWithPrefix``)."""
    n = len(prefix)
    return {k[n:]: v for k, v in props.items() if k.startswith(prefix) and len(k) > n}


def _role_props(props: Mapping[str, str], role: str) -> dict[str, str]:
    """``<role>.*`` client properties, skipping MM2 keys that merely start like one (``admin.timeout.ms``)."""
    return {
        k: v
        for k, v in _strip_prefix(props, f"{role}.").items()
        if f"{role}.{k}" not in _KEYS and not k.startswith("override.")
    }


class _Parser:
    """One run of :func:`parse_config`; collects warnings."""

    def __init__(self, props: Mapping[str, str], env: Mapping[str, str], src: str) -> None:
        self.src = src
        self._warnings: dict[str, None] = {}
        resolver = _Resolver(props, env, src, self.warn)
        self.props = {k.strip(): resolver.resolve(k, v) for k, v in props.items()}
        self.aliases = self._aliases()
        self.top_all: dict[str, str] = {}  # every non-flow key (MM2 filters top-level keys by name)
        self.top: dict[str, str] = {}  # non-flow keys not starting with '<alias>.'
        self.cluster_raw: dict[str, dict[str, str]] = {a: {} for a in self.aliases}
        self.flow_raw: dict[tuple[str, str], dict[str, str]] = {}
        self._classify()

    # -- helpers -------------------------------------------------------------------------

    def warn(self, message: str) -> None:
        if message not in self._warnings:
            self._warnings[message] = None
            _log.warning("%s: %s", self.src, message)

    @property
    def warnings(self) -> tuple[str, ...]:
        return tuple(self._warnings)

    def _aliases(self) -> tuple[str, ...]:
        if "clusters" not in self.props:
            raise ConfigError(
                f"{self.src}: no 'clusters' key: list the cluster aliases, "
                "e.g. 'clusters = primary, backup', and give each a '<alias>.bootstrap.servers'"
            )
        aliases = _split_list(self.props["clusters"])
        if not aliases:
            raise ConfigError(
                f"{self.src}: 'clusters' is empty: list the cluster aliases, e.g. 'clusters = primary, backup'"
            )
        seen: set[str] = set()
        for alias in aliases:
            if not alias or _ALIAS_BAD.search(alias):
                raise ConfigError(
                    f"{self.src}: 'clusters' holds the alias {alias!r}: aliases must be non-empty and "
                    "contain no '.', ',', '->' or whitespace (e.g. 'us-west', 'dc_1'); rename it"
                )
            if alias in seen:
                raise ConfigError(f"{self.src}: 'clusters' lists the alias {alias!r} twice; list each cluster once")
            seen.add(alias)
        return aliases

    def _flow_of(self, key: str) -> tuple[str, str] | None:
        """``(S, T)`` if ``key`` is a flow key ``S->T.<k>``; ``None`` if it is not flow-shaped."""
        head, dot, _ = key.partition(".")
        if "->" not in head or not dot:
            return None
        for m in re.finditer("->", head):
            s, t = head[: m.start()], head[m.end() :]
            if s in self.cluster_raw and t in self.cluster_raw:
                if s == t:
                    raise ConfigError(
                        f"{self.src}: '{key}' names the flow {head}, but a flow's source and target "
                        "must differ; remove the key"
                    )
                return s, t
        s, _, t = head.partition("->")
        unknown = [a for a in (s, t) if a not in self.cluster_raw] or [head]
        raise UnknownAliasError(
            f"{self.src}: '{key}' names cluster alias {unknown[0]!r}, which is not in 'clusters' "
            f"(known: {', '.join(self.aliases)}); add it to 'clusters' or fix the key"
        )

    def _classify(self) -> None:
        for key, value in self.props.items():
            pair = self._flow_of(key)
            if pair is not None:
                self.flow_raw.setdefault(pair, {})[key.partition(".")[2]] = value
                continue
            self.top_all[key] = value
            head, dot, rest = key.partition(".")
            if dot and head in self.cluster_raw:
                self.cluster_raw[head][rest] = value
            else:
                self.top[key] = value

    # -- validation of what is written -----------------------------------------------------

    def check_top_level(self) -> None:
        """Validate known top-level keys, warn about unknown, ignored or deprecated ones."""
        for key, value in self.top_all.items():
            ck = _KEYS.get(key)
            if ck is not None:
                self._check_known(ck, key, value, key, flow_level=False)
            elif key in self.top:
                self._check_unknown_top(key)

    def _check_known(self, ck: ConfigKey, key: str, value: str, written: str, *, flow_level: bool) -> None:
        if not flow_level and ck.scope == "flow":
            self.warn(
                f"'{key}' is ignored at top level: MM2 reads it per flow only; set it as '<source>-><target>.{key}'"
            )
            return
        if not flow_level and ck.scope == "worker" and not key.startswith(_WORKER_PREFIXES):
            self.warn(f"'{key}' is ignored at top level, as in MM2: set it per target cluster as '<alias>.{key}'")
            return
        if flow_level and ck.scope in ("driver", "mirrorspark", "worker"):
            where = f"set it per target cluster as '<alias>.{key}'" if ck.scope == "worker" else "set it at top level"
            self.warn(f"'{written}' has no effect at flow level: {where}")
            return
        if ck.scope == "client":
            return
        _validate(ck, value, written, self.src)
        if ck.replaced_by is not None:
            self.warn(
                f"'{written}' is deprecated and was removed in Kafka {ck.removed_in}: rename it to '{ck.replaced_by}'"
            )
        elif ck.removed_in is not None:
            self.warn(f"'{written}' was removed in Kafka {ck.removed_in} and is ignored")

    def _check_unknown_top(self, key: str) -> None:
        if key.startswith(_MIRRORSPARK_PREFIX):
            known = ", ".join(k.name for k in CONFIG_KEYS if k.scope == "mirrorspark")
            self.warn(f"unknown key '{key}' is ignored (mirrorspark's keys are: {known})")
            return
        accepted = _is_client_key(key) or key.startswith(
            _ROLE_PREFIXES
            + _SIDE_ROLE_PREFIXES
            + _WORKER_PREFIXES
            + _CONNECTOR_PREFIXES
            + _REST_PREFIXES
            + _CONNECT_PREFIXES
        )
        if accepted:
            if key == "transforms" and _split_list(self.top[key]):
                self._warn_transforms(key)
            return
        head, dot, rest = key.partition(".")
        hint = ""
        if dot and (_is_client_key(rest) or rest.startswith(_ROLE_PREFIXES)):
            hint = f" (is '{head}' missing from 'clusters'?)"
        self.warn(f"unknown key '{key}' is ignored{hint}")

    def check_flow_level(self, s: str, t: str) -> None:
        """Validate known ``S->T.*`` keys, warn about unknown ones and ones without effect per flow."""
        for key, value in self.flow_raw.get((s, t), {}).items():
            written = f"{s}->{t}.{key}"
            ck = _KEYS.get(key)
            if _is_client_key(key):
                self.warn(
                    f"'{written}' has no effect on clients (as in MM2): use "
                    f"'{s}->{t}.source.consumer.{key}', '{s}->{t}.target.producer.{key}' and the like, "
                    f"or '<alias>.{key}'"
                )
            elif ck is not None:
                self._check_known(ck, key, value, written, flow_level=True)
            elif key.startswith(_MIRRORSPARK_PREFIX):
                self.warn(f"'{written}' has no effect: mirrorspark.* keys are read at top level only")
            elif key == "transforms":
                if _split_list(value):
                    self._warn_transforms(written)
            elif not key.startswith(_FLOW_CLIENT_PREFIXES + _CONNECTOR_PREFIXES):
                self.warn(f"unknown key '{written}' is ignored")

    def _warn_transforms(self, written: str) -> None:
        self.warn(
            f"'{written}' configures Connect transforms (SMTs), which mirrorspark does not run: "
            "records are copied unchanged"
        )

    # -- building --------------------------------------------------------------------------

    def cluster(self, alias: str) -> ClusterConfig:
        raw = self.cluster_raw[alias]
        servers = _join_servers(raw.get("bootstrap.servers") or self.top_all.get("bootstrap.servers") or "")
        if not servers:
            raise ConfigError(
                f"{self.src}: cluster '{alias}' has no bootstrap servers: add "
                f"'{alias}.bootstrap.servers = host1:9092,host2:9092'"
            )
        base = self._base_client(alias)
        roles = {role: _settings({**base, **_role_props(raw, role)}) for role in _ROLES}
        return ClusterConfig(
            alias=alias,
            bootstrap_servers=servers,
            admin=roles["admin"],
            consumer=roles["consumer"],
            producer=roles["producer"],
        )

    def _base_client(self, alias: str) -> dict[str, str]:
        """MM2's ``clusterProps`` client keys: top-level ones, overridden by ``<alias>.<client key>``."""
        base = {k: v for k, v in self.top_all.items() if _is_client_key(k)}
        base.update({k: v for k, v in self.cluster_raw[alias].items() if _is_client_key(k)})
        return base

    def _client(self, alias: str, side: str, role: str, flow: Mapping[str, str]) -> dict[str, str]:
        """The client chain of one side and role of a flow (see the module docstring)."""
        props = self._base_client(alias)
        props.update({k: v for k, v in _strip_prefix(flow, f"{side}.cluster.").items() if _is_client_key(k)})
        props.update(_role_props(self.top, role))
        props.update(_role_props(flow, role))
        props.update(_role_props(self.cluster_raw[alias], role))
        props.update(_strip_prefix(self.top, f"{side}.{role}."))
        props.update(_strip_prefix(flow, f"{side}.{role}."))
        return props

    def _worker(self, name: str, target: str) -> tuple[str, str] | None:
        """Worker key ``name`` of the target: top level (worker prefixes only) beats ``<T>.name``."""
        if name in self.top_all and name.startswith(_WORKER_PREFIXES):
            return self.top_all[name], name
        if name in self.cluster_raw[target]:
            return self.cluster_raw[target][name], f"{target}.{name}"
        return None

    def flow(self, s: str, t: str) -> FlowConfig:
        flow_raw = self.flow_raw.get((s, t), {})
        merged: dict[str, str] = {}
        written: dict[str, str] = {}
        for key, value in self.top_all.items():
            ck = _KEYS.get(key)
            if (ck is not None and ck.scope == "connector") or (ck is None and key.startswith(_CONNECTOR_PREFIXES)):
                merged[key], written[key] = value, key
        for key, value in flow_raw.items():
            merged[key], written[key] = value, f"{s}->{t}.{key}"
        r = _FlowReader(merged, written, self.src)

        values: dict[str, Any] = {}
        for fname, key in _FLOW_BOOL_FIELDS.items():
            values[fname] = r.boolean(key)
        for fname, key in _FLOW_INT_FIELDS.items():
            values[fname] = r.integer(key)
        for fname, key in _FLOW_STR_FIELDS.items():
            values[fname] = r.string(key)
        for fname, (key, alias) in _FLOW_LIST_FIELDS.items():
            if alias is not None and key not in merged and alias in merged:
                values[fname] = r.items(alias)
            else:
                values[fname] = r.items(key)
        for fname, job in _FLOW_JOBS.items():
            enabled, interval = r.boolean(f"{job}.enabled"), r.integer(f"{job}.interval.seconds")
            if interval < 0 and enabled:
                self.warn(f"'{written[f'{job}.interval.seconds']}' is negative, which disables the job (as in MM2)")
                enabled = False
            values[f"{fname}_enabled"], values[f"{fname}_interval_s"] = enabled, float(interval)

        policy = PolicyConfig(
            class_name=r.string("replication.policy.class"),
            separator=r.string("replication.policy.separator"),
            internal_topic_separator_enabled=r.boolean("replication.policy.internal.topic.separator.enabled"),
        )
        if not policy.separator:
            raise ConfigError(
                f"{self.src}: '{written.get('replication.policy.separator')}' is empty: remote topic "
                "names need a separator; remove the key to use '.' or set another one"
            )

        # MM2's clusterPairs: a flow has a herder iff S->T.enabled=true or heartbeats are enabled for it;
        # its connectors then use S->T.enabled, else the top-level 'enabled', else false.
        flow_enabled = r.boolean("enabled")
        has_herder = ("enabled" in flow_raw and flow_enabled) or values["emit_heartbeats_enabled"]
        enabled = flow_enabled and has_herder

        values["offset_storage_replication_factor"] = self._worker_int("offset.storage.replication.factor", t)
        values["offset_storage_partitions"] = self._worker_int("offset.storage.partitions", t)
        topic = self._worker("offset.storage.topic", t)
        values["offset_storage_topic"] = topic[0].strip() if topic and topic[0].strip() else f"mm2-offsets.{s}.internal"
        eos = self._worker("exactly.once.source.support", t)
        values["exactly_once_source_support"] = (
            _to_str(_KEYS["exactly.once.source.support"], eos[0], eos[1], self.src) if eos else "disabled"
        )

        clients = {
            f"{side}_{role}": self._client(s if side == "source" else t, side, role, flow_raw)
            for side in _SIDES
            for role in _ROLES
        }
        clients["target_producer"].update(_strip_prefix(flow_raw, "producer.override."))
        for name in ("source_consumer", "target_consumer"):
            c = clients[name]
            if c.get("enable.auto.commit", "false").strip().lower() != "false":
                self.warn(
                    f"{s}->{t}: enable.auto.commit for the {name.replace('_', ' ')} is forced to false, as in MM2"
                )
            c["enable.auto.commit"] = "false"
            c.setdefault("auto.offset.reset", "earliest")
        for name, props in clients.items():
            values[name] = _settings(props)

        self._check_offset_syncs(values["emit_offset_syncs_enabled"], merged, written, s, t)
        extra = {
            k: v.strip()
            for k, v in merged.items()
            if k not in _TYPED_FLOW_KEYS and not _consumed_by_clients(k) and not k.startswith("config.providers")
        }
        self._check_exactly_once(extra, clients["source_consumer"], s, t, written)

        return FlowConfig(
            source=s,
            target=t,
            enabled=enabled,
            policy=policy,
            extra=extra,
            **values,
        )

    def _worker_int(self, key: str, target: str) -> int:
        ck = _KEYS[key]
        found = self._worker(key, target)
        raw, written = found if found else (ck.default or "", key)
        return _to_int(ck, raw, written, self.src)

    def _check_offset_syncs(
        self, emit: bool, merged: Mapping[str, str], written: Mapping[str, str], s: str, t: str
    ) -> None:
        if emit:
            return
        conflicting = [written[k] for k in merged if k.startswith(("offset-syncs-", "offset-syncs.topic."))]
        if conflicting:
            raise ConfigError(
                f"{self.src}: flow {s}->{t} has '{written['emit.offset-syncs.enabled']}' = false but "
                f"also sets {', '.join(repr(c) for c in conflicting)}: offset syncs are off, so remove "
                "those keys or set emit.offset-syncs.enabled=true (MM2 rejects this combination too)"
            )

    def _check_exactly_once(
        self,
        extra: Mapping[str, str],
        consumer: Mapping[str, str],
        s: str,
        t: str,
        written: Mapping[str, str],
    ) -> None:
        if extra.get("exactly.once.support") != "required":
            return
        if consumer.get("isolation.level", "").strip() != "read_committed":
            raise ConfigError(
                f"{self.src}: '{written['exactly.once.support']}' = required needs the source consumer "
                f"to read committed data: set '{s}.consumer.isolation.level = read_committed'"
            )

    def data_path(self) -> DataPathConfig:
        def get(key: str) -> tuple[str, str]:
            return self.top_all.get(key, _KEYS[key].default or ""), key

        return DataPathConfig(
            max_records_per_partition=_to_int(
                _KEYS["mirrorspark.batch.max.records.per.partition"],
                *get("mirrorspark.batch.max.records.per.partition"),
                self.src,
            ),
            idle_interval_ms=_to_int(
                _KEYS["mirrorspark.batch.idle.interval.ms"],
                *get("mirrorspark.batch.idle.interval.ms"),
                self.src,
            ),
            follow_ms=_to_int(_KEYS["mirrorspark.batch.follow.ms"], *get("mirrorspark.batch.follow.ms"), self.src),
            read_mode=_to_str(_KEYS["mirrorspark.read.mode"], *get("mirrorspark.read.mode"), self.src),
            identity_allow_cycles=_to_bool(
                _KEYS["mirrorspark.identity.allow.cycles"], *get("mirrorspark.identity.allow.cycles"), self.src
            ),
        )


def _consumed_by_clients(key: str) -> bool:
    """Whether a merged flow key feeds a client chain rather than :attr:`FlowConfig.extra`."""
    if key in _KEYS:
        return False
    if key.startswith(_SIDE_CLUSTER_PREFIXES):
        return _is_client_key(key.split(".", 2)[2])
    if key.startswith(_SIDE_ROLE_PREFIXES):
        return True
    role, _, rest = key.partition(".")
    # producer.override.* feeds the data producer; consumer.override.* / admin.override.* stay in extra
    return role in _ROLES and (role == "producer" or not rest.startswith("override."))


def _settings(props: Mapping[str, str]) -> ClientSettings:
    """Client settings with values trimmed, as Kafka's ``ConfigDef`` trims them (lists item by item)."""
    return ClientSettings(
        properties={k: _join_servers(v) if k == "bootstrap.servers" else v.strip() for k, v in props.items()}
    )


def _join_servers(raw: str) -> str:
    """A ``bootstrap.servers`` list as ``"h1:9092,h2:9092"`` (items trimmed, empty items dropped)."""
    return ",".join(item for item in _split_list(raw) if item)


class _FlowReader:
    """Typed access to a flow's merged properties, falling back to MM2's defaults."""

    def __init__(self, merged: Mapping[str, str], written: Mapping[str, str], src: str) -> None:
        self._merged = merged
        self._written = written
        self._src = src

    def _raw(self, key: str) -> tuple[ConfigKey, str, str]:
        ck = _KEYS[key]
        if key in self._merged:
            return ck, self._merged[key], self._written[key]
        return ck, ck.default or "", f"{key} (default)"

    def boolean(self, key: str) -> bool:
        return _to_bool(*self._raw(key), self._src)

    def integer(self, key: str) -> int:
        return _to_int(*self._raw(key), self._src)

    def string(self, key: str) -> str:
        return _to_str(*self._raw(key), self._src)

    def items(self, key: str) -> tuple[str, ...]:
        return _to_list(*self._raw(key), self._src)


def parse_config(
    props: Mapping[str, str],
    *,
    env: Mapping[str, str] | None = None,
    source_name: str = "<properties>",
    clusters: Sequence[str] | None = None,
) -> MirrorConfig:
    """Validate MM2 properties and build the typed configuration.

    Parameters
    ----------
    props:
        Raw properties, e.g. from :func:`parse_properties`.
    env:
        Environment for ``${env:NAME}`` placeholders; ``None`` = ``os.environ``.
    source_name:
        Where ``props`` came from; prefixes every message.
    clusters:
        MM2's ``--clusters`` option (target aliases this node serves), stored as
        :attr:`MirrorConfig.target_clusters`; ``None`` = all.

    Returns
    -------
    MirrorConfig

    Raises
    ------
    ConfigError
        On a missing or malformed ``clusters``, a cluster without bootstrap servers, an
        invalid value (the message names key, value and expected type), an unresolvable
        placeholder, ``emit.offset-syncs.enabled=false`` with ``offset-syncs.*`` keys, ...
    UnknownAliasError
        If a flow key ``X->Y.*`` or ``clusters`` names an alias not in ``clusters``.
    BadRegexError
        If ``topics``, ``topics.exclude``, ``groups``, ``groups.exclude`` or
        ``config.properties.exclude`` (top level or per flow) holds an invalid regex.

    Notes
    -----
    Mirrors MM2's ``MirrorMakerConfig`` (``clusterPairs``, ``clusterProps``,
    ``workerConfig``, ``connectorBaseConfig``) followed by the connectors' config validation.
    """
    p = _Parser(props, os.environ if env is None else env, source_name)
    p.check_top_level()
    for s in p.aliases:
        for t in p.aliases:
            if s != t:
                p.check_flow_level(s, t)
    cluster_configs = {alias: p.cluster(alias) for alias in p.aliases}
    flows = tuple(p.flow(s, t) for s in p.aliases for t in p.aliases if s != t)
    data_path = p.data_path()
    return MirrorConfig(
        clusters=cluster_configs,
        flows=flows,
        data_path=data_path,
        warnings=p.warnings,
        source_name=source_name,
        target_clusters=None if clusters is None else tuple(clusters),
    )


def load_config(
    path: str | os.PathLike[str],
    *,
    env: Mapping[str, str] | None = None,
    clusters: Sequence[str] | None = None,
) -> MirrorConfig:
    """Read and parse an ``mm2.properties`` file.

    Parameters
    ----------
    path:
        The properties file; UTF-8 (ISO-8859-1, Java's encoding for property files, if it
        is not valid UTF-8).
    env:
        Environment for ``${env:NAME}`` placeholders; ``None`` = ``os.environ``.
    clusters:
        MM2's ``--clusters`` option: target aliases this node serves (validated; the default
        of :meth:`MirrorConfig.enabled_flows`); ``None`` = all.

    Returns
    -------
    MirrorConfig

    Raises
    ------
    ConfigError
        If the file cannot be read (the message names the path), or anything
        :func:`parse_config` rejects.
    UnknownAliasError
        If ``clusters`` or a flow key names an alias not in ``clusters``.
    BadRegexError
        See :func:`parse_config`.

    Notes
    -----
    Mirrors MM2's ``MirrorMaker`` driver reading its properties file (``Utils.loadProps``).
    """
    name = os.fspath(path)
    try:
        data = Path(name).read_bytes()
    except OSError as e:
        raise ConfigError(
            f"cannot read MirrorMaker 2 config file '{name}' ({e.strerror or type(e).__name__}); "
            "check the path and its permissions"
        ) from e
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = data.decode("iso-8859-1")
    try:
        props = parse_properties(text)
    except ConfigError as e:
        raise ConfigError(f"{name}: {e.message}") from e
    return parse_config(props, env=env, source_name=name, clusters=clusters)


__all__ = [
    "CONFIG_KEYS",
    "ClientSettings",
    "ClusterConfig",
    "ConfigKey",
    "DataPathConfig",
    "FlowConfig",
    "KeyScope",
    "KeyType",
    "MirrorConfig",
    "PolicyConfig",
    "load_config",
    "parse_config",
    "parse_properties",
]
