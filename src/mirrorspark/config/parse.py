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
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

from mirrorspark.config.keys import (
    CONFIG_KEYS,
    CONNECT_PREFIXES,
    CONNECTOR_PREFIXES,
    FLOW_CLIENT_PREFIXES,
    KEYS,
    MIRRORSPARK_PREFIX,
    REST_PREFIXES,
    ROLE_PREFIXES,
    ROLES,
    SIDE_CLUSTER_PREFIXES,
    SIDE_ROLE_PREFIXES,
    SIDES,
    SOURCE_PLACEHOLDER,
    WORKER_PREFIXES,
    ConfigKey,
    is_client_key,
)
from mirrorspark.config.model import (
    ClientSettings,
    ClusterConfig,
    DataPathConfig,
    FlowConfig,
    MirrorConfig,
    PolicyConfig,
    ServiceConfig,
)
from mirrorspark.config.properties import parse_properties
from mirrorspark.config.resolve import Resolver
from mirrorspark.config.values import split_list, to_value, validate
from mirrorspark.core.placement_rules import PlacementRules, parse_placement_rules
from mirrorspark.core.transforms import INSERT_HEADER, TransformsConfig, parse_transforms
from mirrorspark.errors import ConfigError, PlacementError, TransformConfigError, UnknownAliasError

_log = logging.getLogger(__name__)

PLACEMENT_KEY: Final = "mirrorspark.replica.placement"


# --------------------------------------------------------------------------------------
# Parsing a whole configuration
# --------------------------------------------------------------------------------------

_ALIAS_BAD = re.compile(r"[\s.,]|->")

# Keys filling a typed field, walked from the registry (see ConfigKey.field / ConfigKey.holder).
# Connector and flow keys are read from the flow's merge (S->T.<key> > top level > default).
_FLOW_FILL_KEYS: Final = tuple(
    k
    for k in CONFIG_KEYS
    if k.field is not None and k.holder in ("flow", "policy") and k.scope in ("connector", "flow")
)
# Worker keys are read from the target cluster (<T>.<key>, or top level for offset.storage.*).
_WORKER_FILL_KEYS: Final = tuple(k for k in CONFIG_KEYS if k.field is not None and k.scope == "worker")
_DATA_PATH_KEYS: Final = tuple(k for k in CONFIG_KEYS if k.field is not None and k.holder == "data_path")
_SERVICE_KEYS: Final = tuple(k for k in CONFIG_KEYS if k.field is not None and k.holder == "service")
# Connector keys whose top-level value (connector-level default) MirrorConfig keeps for tools serving no flow.
_TOP_LEVEL_KEYS: Final = tuple(k for k in CONFIG_KEYS if k.top_level_field is not None)
# Deprecated 3.x alias of a key (topics.blacklist of topics.exclude, ...): replacement -> alias.
_DEPRECATED_ALIAS: Final = {k.replaced_by: k.name for k in CONFIG_KEYS if k.replaced_by is not None}
# Merged flow keys that fill a typed field (the rest of the merge goes to FlowConfig.extra).
_TYPED_FLOW_KEYS: Final = frozenset({k.name for k in _FLOW_FILL_KEYS}) | frozenset(
    _DEPRECATED_ALIAS[k.name] for k in _FLOW_FILL_KEYS if k.name in _DEPRECATED_ALIAS
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
        if f"{role}.{k}" not in KEYS and not k.startswith("override.")
    }


class _Parser:
    """One run of :func:`parse_config`; collects warnings."""

    def __init__(self, props: Mapping[str, str], env: Mapping[str, str], src: str) -> None:
        self.src = src
        self._warnings: dict[str, None] = {}
        resolver = Resolver(props, env, src, self.warn)
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
        aliases = split_list(self.props["clusters"])
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
            ck = KEYS.get(key)
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
        if not flow_level and ck.scope == "worker" and not key.startswith(WORKER_PREFIXES):
            self.warn(f"'{key}' is ignored at top level, as in MM2: set it per target cluster as '<alias>.{key}'")
            return
        if flow_level and ck.scope in ("driver", "mirrorspark", "worker"):
            where = f"set it per target cluster as '<alias>.{key}'" if ck.scope == "worker" else "set it at top level"
            self.warn(f"'{written}' has no effect at flow level: {where}")
            return
        if ck.scope == "client":
            return
        validate(ck, value, written, self.src)
        if ck.replaced_by is not None:
            self.warn(
                f"'{written}' is deprecated and was removed in Kafka {ck.removed_in}: rename it to '{ck.replaced_by}'"
            )
        elif ck.removed_in is not None:
            self.warn(f"'{written}' was removed in Kafka {ck.removed_in} and is ignored")
        elif ck.retired is not None:
            self.warn(f"'{written}' has no effect: {ck.retired}; delete it")

    def _check_unknown_top(self, key: str) -> None:
        if key.startswith(MIRRORSPARK_PREFIX):
            known = ", ".join(k.name for k in CONFIG_KEYS if k.scope == "mirrorspark")
            self.warn(f"unknown key '{key}' is ignored (mirrorspark's keys are: {known})")
            return
        accepted = is_client_key(key) or key.startswith(
            ROLE_PREFIXES + SIDE_ROLE_PREFIXES + WORKER_PREFIXES + CONNECTOR_PREFIXES + REST_PREFIXES + CONNECT_PREFIXES
        )
        if accepted:
            return
        head, dot, rest = key.partition(".")
        hint = ""
        if dot and (is_client_key(rest) or rest.startswith(ROLE_PREFIXES)):
            hint = f" (is '{head}' missing from 'clusters'?)"
        self.warn(f"unknown key '{key}' is ignored{hint}")

    def check_flow_level(self, s: str, t: str) -> None:
        """Validate known ``S->T.*`` keys, warn about unknown ones and ones without effect per flow."""
        for key, value in self.flow_raw.get((s, t), {}).items():
            written = f"{s}->{t}.{key}"
            ck = KEYS.get(key)
            if is_client_key(key):
                self.warn(
                    f"'{written}' has no effect on clients (as in MM2): use "
                    f"'{s}->{t}.source.consumer.{key}', '{s}->{t}.target.producer.{key}' and the like, "
                    f"or '<alias>.{key}'"
                )
            elif ck is not None:
                self._check_known(ck, key, value, written, flow_level=True)
            elif key.startswith(MIRRORSPARK_PREFIX):
                self.warn(f"'{written}' has no effect: mirrorspark.* keys are read at top level only")
            elif not key.startswith(FLOW_CLIENT_PREFIXES + CONNECTOR_PREFIXES):
                self.warn(f"unknown key '{written}' is ignored")

    def check_transforms(self) -> None:
        """Warn where mirrorspark runs transforms MM2 would not, or would run differently."""
        top = [k for k in self.top if k.startswith(("transforms.", "predicates."))]
        if top or split_list(self.top.get("transforms", "")) or split_list(self.top.get("predicates", "")):
            self.warn(
                "top-level 'transforms' and 'transforms.<t>.*' apply to every flow in mirrorspark, but MM2 drops "
                "top-level 'transforms.<t>.*' keys from its connectors: for a file MM2 runs the same way, set "
                "them per flow ('<source>-><target>.transforms', '<source>-><target>.transforms.<t>.type', ...)"
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
        roles = {role: _settings({**self._base_client(alias, role), **_role_props(raw, role)}) for role in ROLES}
        return ClusterConfig(
            alias=alias,
            bootstrap_servers=servers,
            admin=roles["admin"],
            consumer=roles["consumer"],
            producer=roles["producer"],
        )

    def _base_client(self, alias: str, role: str) -> dict[str, str]:
        """MM2's ``clusterProps`` client keys: top-level ones, overridden by ``<alias>.<client key>``.

        Consumers also get ``client.rack`` (top level, overridden by ``<alias>.client.rack``): where the
        replicator runs, for follower fetching (KIP-392); MM2 itself passes on only ``<alias>.consumer.client.rack``.
        """
        rack = ("client.rack",) if role == "consumer" else ()
        base = {k: v for k, v in self.top_all.items() if is_client_key(k) or k in rack}
        base.update({k: v for k, v in self.cluster_raw[alias].items() if is_client_key(k) or k in rack})
        return base

    def _client(self, alias: str, side: str, role: str, flow: Mapping[str, str]) -> dict[str, str]:
        """Compose the client settings of one side and role of a flow (the chain in the module docstring).

        Parameters
        ----------
        alias:
            The cluster of ``side`` (the flow's source or target).
        side:
            ``"source"`` or ``"target"``.
        role:
            ``"admin"``, ``"consumer"`` or ``"producer"``.
        flow:
            The flow's own ``S->T.*`` properties, prefix removed.

        Returns
        -------
        dict[str, str]
            Java client properties, the later links of the chain winning.
        """
        props = self._base_client(alias, role)
        props.update({k: v for k, v in _strip_prefix(flow, f"{side}.cluster.").items() if is_client_key(k)})
        props.update(_role_props(self.top, role))
        props.update(_role_props(flow, role))
        props.update(_role_props(self.cluster_raw[alias], role))
        props.update(_strip_prefix(self.top, f"{side}.{role}."))
        props.update(_strip_prefix(flow, f"{side}.{role}."))
        return props

    def _worker(self, name: str, target: str) -> tuple[str, str] | None:
        """Worker key ``name`` of the target: top level (worker prefixes only) beats ``<T>.name``."""
        if name in self.top_all and name.startswith(WORKER_PREFIXES):
            return self.top_all[name], name
        if name in self.cluster_raw[target]:
            return self.cluster_raw[target][name], f"{target}.{name}"
        return None

    def flow(self, s: str, t: str) -> FlowConfig:
        flow_raw = self.flow_raw.get((s, t), {})
        merged: dict[str, str] = {}
        written: dict[str, str] = {}
        for key, value in self.top_all.items():
            ck = KEYS.get(key)
            if (ck is not None and ck.scope == "connector") or (ck is None and key.startswith(CONNECTOR_PREFIXES)):
                merged[key], written[key] = value, key
        for key, value in flow_raw.items():
            merged[key], written[key] = value, f"{s}->{t}.{key}"
        r = _FlowReader(merged, written, self.src)

        values: dict[str, dict[str, Any]] = {"flow": {}, "policy": {}}
        for ck in _FLOW_FILL_KEYS:
            key = ck.name
            alias = _DEPRECATED_ALIAS.get(key)
            if alias is not None and key not in merged and alias in merged:
                key = alias
            values[ck.holder][str(ck.field)] = r.value(key)
        for ck in _FLOW_FILL_KEYS:
            if ck.negative_disables is None or values[ck.holder][str(ck.field)] >= 0:
                continue
            flag = KEYS[ck.negative_disables]
            if values[flag.holder][str(flag.field)]:
                self.warn(f"'{written[ck.name]}' is negative, which disables the job (as in MM2)")
                values[flag.holder][str(flag.field)] = False
        flow_values = values["flow"]
        flow_values["transforms"] = self._transforms(merged, written, s, t)
        flow_values["replica_placement"] = self._placement(
            flow_values["replica_placement"], written.get(PLACEMENT_KEY, PLACEMENT_KEY)
        )

        policy = PolicyConfig(**values["policy"])
        if not policy.separator:
            raise ConfigError(
                f"{self.src}: '{written.get('replication.policy.separator')}' is empty: remote topic "
                "names need a separator; remove the key to use '.' or set another one"
            )

        # MM2's clusterPairs: a flow has a herder iff S->T.enabled=true or heartbeats are enabled for it;
        # its connectors then use S->T.enabled, else the top-level 'enabled', else false.
        flow_enabled = flow_values.pop("enabled")
        has_herder = ("enabled" in flow_raw and flow_enabled) or flow_values["emit_heartbeats_enabled"]
        enabled = flow_enabled and has_herder

        for ck in _WORKER_FILL_KEYS:
            found = self._worker(ck.name, t)
            if found is None or (ck.type == "string" and not ck.choices and not found[0].strip()):
                found = ((ck.default or "").replace(SOURCE_PLACEHOLDER, s), f"{ck.name} (default)")
            flow_values[str(ck.field)] = to_value(ck, *found, self.src)

        clients = {
            f"{side}_{role}": self._client(s if side == "source" else t, side, role, flow_raw)
            for side in SIDES
            for role in ROLES
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
            flow_values[name] = _settings(props)

        self._check_offset_syncs(flow_values["emit_offset_syncs_enabled"], merged, written, s, t)
        extra = {
            k: v.strip()
            for k, v in merged.items()
            if k not in _TYPED_FLOW_KEYS
            and not _consumed_by_clients(k)
            and not k.startswith(("config.providers", "transforms", "predicates"))  # transforms: typed
        }
        self._check_exactly_once(clients["source_consumer"], clients["target_producer"], flow_values, s, t, written)

        return FlowConfig(
            source=s,
            target=t,
            enabled=enabled,
            policy=policy,
            extra=extra,
            **flow_values,
        )

    def _transforms(self, merged: Mapping[str, str], written: Mapping[str, str], s: str, t: str) -> TransformsConfig:
        """Read the flow's ``transforms*`` and ``predicates*`` keys, warning where MM2 would differ.

        See :func:`~mirrorspark.core.transforms.parse_transforms`.

        Raises
        ------
        TransformConfigError
            As :func:`~mirrorspark.core.transforms.parse_transforms`, the message opening with the file.
        """
        keys = {k: v for k, v in merged.items() if k.startswith(("transforms", "predicates"))}
        try:
            config = parse_transforms(keys, lambda k: written.get(k, k))
        except TransformConfigError as e:
            raise TransformConfigError(f"{self.src}: {e.message}") from e
        if any(spec.type == INSERT_HEADER for spec in config.transforms):
            converter = merged.get("header.converter", "").strip()
            if not converter.endswith("StringConverter"):
                self.warn(
                    f"{s}->{t}: InsertHeader writes its value.literal as UTF-8 bytes; MM2 with this file would fail "
                    "on every record (its default header.converter, ByteArrayConverter, takes no string): set "
                    "'header.converter = org.apache.kafka.connect.storage.StringConverter' for MM2 to write the same"
                )
        if config.routes:
            self.warn(
                f"{s}->{t}: RegexRouter renames remote topics: a renamed topic that no longer carries the "
                "source alias is not recognised as a remote topic (cycle detection, replication hops, "
                "upstream clusters, failback translation see it as local); checkpoints name the renamed "
                "topic (README, Transforms)"
            )
        return config

    def _placement(self, raw: str, written: str) -> PlacementRules | None:
        """Read ``mirrorspark.replica.placement``: inline JSON (``{...}`` or ``[...]``) or a JSON file's path.

        Raises
        ------
        ConfigError
            The file cannot be read.
        PlacementError
            Anything :func:`~mirrorspark.core.placement_rules.parse_placement_rules` refuses (bad JSON,
            observers, a rack twice, ...), the message naming the key as written.
        """
        value = raw.strip()
        if not value:
            return None
        where = f"'{written}'"
        if not value.startswith(("{", "[")):
            try:
                text = Path(value).read_text(encoding="utf-8")
            except OSError as e:
                raise ConfigError(
                    f"{self.src}: {where} names the placement file '{value}', which cannot be read "
                    f"({e.strerror or type(e).__name__}); fix the path (relative to the working directory) "
                    "or write the JSON inline"
                ) from e
            where = f"{where} (file '{value}')"
        else:
            text = value
        try:
            rules = parse_placement_rules(text)
        except PlacementError as e:
            raise PlacementError(f"{self.src}: {where}: {e.message}") from e
        for note in rules.notes:
            self.warn(f"{where}: {note}")
        return rules

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
        consumer: Mapping[str, str],
        producer: Mapping[str, str],
        flow_values: Mapping[str, Any],
        s: str,
        t: str,
        written: Mapping[str, str],
    ) -> None:
        """Refuse exactly-once settings that cannot hold, as MM2 and Connect validate them (KIP-618)."""
        enabled = flow_values["exactly_once_source_support"] == "enabled"
        boundary_key = written.get("transaction.boundary", "transaction.boundary")
        support_key = written.get("exactly.once.support", "exactly.once.support")
        worker_key = f"{t}.exactly.once.source.support"
        if flow_values["transaction_boundary"] == "connector":
            raise ConfigError(
                f"{self.src}: '{boundary_key}' = connector: MirrorSourceConnector defines no "
                "transaction boundaries of its own (MM2 rejects this too); use poll (the default) or interval"
            )
        if flow_values["exactly_once_support"] == "required":
            if not enabled:
                raise ConfigError(
                    f"{self.src}: '{support_key}' = required, but flow {s}->{t} does not run "
                    f"exactly-once: set '{worker_key} = enabled' (KIP-618), or exactly.once.support = requested"
                )
            if consumer.get("isolation.level", "").strip() != "read_committed":
                raise ConfigError(
                    f"{self.src}: '{support_key}' = required needs the source consumer "
                    f"to read committed data: set '{s}.consumer.isolation.level = read_committed'"
                )
        if not enabled:
            return
        interval_ms = flow_values["offset_flush_interval_ms"]
        if flow_values["transaction_boundary_interval_ms"] > 0:
            interval_ms = flow_values["transaction_boundary_interval_ms"]
        raw_timeout = str(producer.get("transaction.timeout.ms", "")).strip()
        timeout_ms = int(raw_timeout) if raw_timeout.isdigit() else 60_000  # librdkafka's and Java's default
        if timeout_ms <= interval_ms:
            raise ConfigError(
                f"{self.src}: flow {s}->{t} runs exactly-once with transactions of up to {interval_ms} ms, but the "
                f"target producer's transaction.timeout.ms is {timeout_ms} ms: the coordinator would abort "
                f"every transaction; set '{t}.producer.transaction.timeout.ms' above {interval_ms} or commit more "
                "often (transaction.boundary.interval.ms / offset.flush.interval.ms)"
            )

    def data_path(self) -> DataPathConfig:
        values: dict[str, Any] = {
            str(ck.field): to_value(ck, self.top_all.get(ck.name, ck.default or ""), ck.name, self.src)
            for ck in _DATA_PATH_KEYS
        }
        return DataPathConfig(**values)

    def service(self) -> ServiceConfig:
        values: dict[str, Any] = {
            str(ck.field): to_value(ck, self.top_all.get(ck.name, ck.default or ""), ck.name, self.src)
            for ck in _SERVICE_KEYS
        }
        return ServiceConfig(**values)

    def top_level(self) -> dict[str, Any]:
        """Return the :class:`MirrorConfig` fields connector keys' top-level values fill (``top_level_field``)."""
        return {
            str(ck.top_level_field): to_value(ck, self.top_all.get(ck.name, ck.default or ""), ck.name, self.src)
            for ck in _TOP_LEVEL_KEYS
        }


def _consumed_by_clients(key: str) -> bool:
    """Whether a merged flow key feeds a client chain rather than :attr:`FlowConfig.extra`."""
    if key in KEYS:
        return False
    if key.startswith(SIDE_CLUSTER_PREFIXES):
        return is_client_key(key.split(".", 2)[2])
    if key.startswith(SIDE_ROLE_PREFIXES):
        return True
    role, _, rest = key.partition(".")
    # producer.override.* feeds the data producer; consumer.override.* / admin.override.* stay in extra
    return role in ROLES and (role == "producer" or not rest.startswith("override."))


def _settings(props: Mapping[str, str]) -> ClientSettings:
    """Client settings with values trimmed, as Kafka's ``ConfigDef`` trims them (lists item by item)."""
    return ClientSettings(
        properties={k: _join_servers(v) if k == "bootstrap.servers" else v.strip() for k, v in props.items()}
    )


def _join_servers(raw: str) -> str:
    """Normalise a ``bootstrap.servers`` list to ``"h1:9092,h2:9092"`` (items trimmed, empty items dropped)."""
    return ",".join(item for item in split_list(raw) if item)


class _FlowReader:
    """Typed access to a flow's merged properties, falling back to MM2's defaults."""

    def __init__(self, merged: Mapping[str, str], written: Mapping[str, str], src: str) -> None:
        self._merged = merged
        self._written = written
        self._src = src

    def _raw(self, key: str) -> tuple[ConfigKey, str, str]:
        ck = KEYS[key]
        if key in self._merged:
            return ck, self._merged[key], self._written[key]
        return ck, ck.default or "", f"{key} (default)"

    def value(self, key: str) -> Any:
        """Return the typed value of ``key`` (see :func:`~mirrorspark.config.values.to_value`).

        Parameters
        ----------
        key:
            A registered key (:data:`CONFIG_KEYS`), e.g. ``"offset.lag.max"``.

        Returns
        -------
        Any
            The flow's value, else the key's default, converted to the key's type (units as
            the key's name says: ``.ms``, ``.seconds``).

        Raises
        ------
        ConfigError
            If the value does not convert; the message names the key as written and the source.
        """
        return to_value(*self._raw(key), self._src)


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
    p.check_transforms()
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
        service=p.service(),
        **p.top_level(),
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


__all__ = ["load_config", "parse_config"]
