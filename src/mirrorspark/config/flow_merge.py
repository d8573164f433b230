"""One flow's configuration: its keys merged (``S->T.<key>`` > top-level ``<key>`` > MM2's default), typed and checked.

The counterpart of MM2's ``MirrorMakerConfig.connectorBaseConfig`` (the merge), the connectors'
``ConfigDef`` (the typed values, filled by walking the registry: :attr:`ConfigKey.field`), the herder rule
of ``clusterPairs`` and the connectors' own validation (offset syncs, exactly-once, KIP-618).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from mirrorspark.config.client_chain import (
    client_settings,
    connector_client_kinds,
    consumed_by_clients,
    flow_clients,
)
from mirrorspark.config.keys import (
    CONFIG_KEYS,
    CONNECTOR_PREFIXES,
    KEYS,
    SOURCE_PLACEHOLDER,
    WORKER_PREFIXES,
    ConfigKey,
)
from mirrorspark.config.model import FlowConfig, PolicyConfig
from mirrorspark.config.raw import RawConfig
from mirrorspark.config.schema_sync import FLOW_KEYS as SCHEMA_SYNC_KEYS
from mirrorspark.config.schema_sync import flow_schema_sync
from mirrorspark.config.values import to_value
from mirrorspark.core.placement_rules import PlacementRules, parse_placement_rules
from mirrorspark.core.rename_rules import FORMAT_KEY, RULES_KEY, RenamingConfig, parse_renaming
from mirrorspark.core.renaming import RENAMING_POLICY_NAMES, check_renaming
from mirrorspark.core.transforms import INSERT_HEADER, TransformsConfig, parse_transforms
from mirrorspark.errors import ConfigError, PlacementError, TransformConfigError

PLACEMENT_KEY: Final = "mirrorspark.replica.placement"

# Keys filling a typed field, walked from the registry (see ConfigKey.field / ConfigKey.holder).
# Connector and flow keys are read from the flow's merge (S->T.<key> > top level > default).
_FLOW_FILL_KEYS: Final = tuple(
    k
    for k in CONFIG_KEYS
    if k.field is not None and k.holder in ("flow", "policy") and k.scope in ("connector", "flow")
)
# Worker keys are read from the target cluster (<T>.<key>, or top level for offset.storage.*).
_WORKER_FILL_KEYS: Final = tuple(k for k in CONFIG_KEYS if k.field is not None and k.scope == "worker")
# Deprecated 3.x alias of a key (topics.blacklist of topics.exclude, ...): replacement -> alias.
_DEPRECATED_ALIAS: Final = {k.replaced_by: k.name for k in CONFIG_KEYS if k.replaced_by is not None}
# Merged flow keys that fill a typed field (the rest of the merge goes to FlowConfig.extra).
_TYPED_FLOW_KEYS: Final = frozenset({k.name for k in _FLOW_FILL_KEYS}) | frozenset(
    _DEPRECATED_ALIAS[k.name] for k in _FLOW_FILL_KEYS if k.name in _DEPRECATED_ALIAS
)


def flow_config(raw: RawConfig, s: str, t: str) -> FlowConfig:
    """Build the configuration of flow ``S->T``.

    Raises ConfigError (a value that does not convert, an empty separator, offset-sync keys without offset syncs,
    commits followed without checkpoints, exactly-once settings that cannot hold), TransformConfigError or
    PlacementError.
    """
    flow_raw = raw.flow_raw.get((s, t), {})
    merged, written = _merge(raw, s, t)
    values = _typed_values(raw, merged, written)
    flow_values = values["flow"]
    flow_values["transforms"] = _transforms(raw, merged, written, s, t)
    flow_values["renaming"] = _renaming(raw, merged, written, values["policy"], s)
    flow_values["replica_placement"] = _placement(
        raw, flow_values["replica_placement"], written.get(PLACEMENT_KEY, PLACEMENT_KEY)
    )

    policy = PolicyConfig(**values["policy"])
    if not policy.separator:
        raise ConfigError(
            f"{raw.src}: '{written.get('replication.policy.separator')}' is empty: remote topic "
            "names need a separator; remove the key to use '.' or set another one"
        )

    # MM2's clusterPairs: a flow has a herder iff S->T.enabled=true or heartbeats are enabled for it;
    # its connectors then use S->T.enabled, else the top-level 'enabled', else false.
    flow_enabled = flow_values.pop("enabled")
    has_herder = ("enabled" in flow_raw and flow_enabled) or flow_values["emit_heartbeats_enabled"]
    enabled = flow_enabled and has_herder
    flow_values.update(flow_schema_sync(raw, s, t, merged, written, enabled=enabled))

    for ck in _WORKER_FILL_KEYS:
        found = _worker(raw, ck.name, t)
        if found is None or (ck.type == "string" and not ck.choices and not found[0].strip()):
            found = ((ck.default or "").replace(SOURCE_PLACEHOLDER, s), f"{ck.name} (default)")
        flow_values[str(ck.field)] = to_value(ck, *found, raw.src)

    clients = flow_clients(raw, s, t)
    for name, props in clients.items():
        flow_values[name] = client_settings(props)
    flow_values["connector_clients"] = {  # a Connect deployment's checkpoint / heartbeat connector's own clients
        f"{kind}.{name}": client_settings(props)
        for kind in connector_client_kinds(raw, s, t)
        for name, props in flow_clients(raw, s, t, connector=kind).items()
    }

    _check_offset_syncs(raw, flow_values["emit_offset_syncs_enabled"], merged, written, s, t)
    if flow_values["emit_checkpoints_on_commit"] and not flow_values["emit_checkpoints_enabled"]:
        raise ConfigError(
            f"{raw.src}: flow {s}->{t} has '{written['emit.checkpoints.on.commit']}' = true but checkpoints are "
            f"off ('{written.get('emit.checkpoints.enabled', 'emit.checkpoints.interval.seconds')}'): following "
            "the source's commits writes checkpoints, so set emit.checkpoints.enabled=true (and a positive "
            "emit.checkpoints.interval.seconds) or remove emit.checkpoints.on.commit"
        )
    extra = {
        k: v.strip()
        for k, v in merged.items()
        if k not in _TYPED_FLOW_KEYS
        and k not in SCHEMA_SYNC_KEYS
        and not consumed_by_clients(k)
        and not k.startswith(("config.providers", "transforms", "predicates", "topic.rename"))  # typed
    }
    _check_exactly_once(raw, clients["source_consumer"], clients["target_producer"], flow_values, s, t, written)
    return FlowConfig(source=s, target=t, enabled=enabled, policy=policy, extra=extra, **flow_values)


def _merge(raw: RawConfig, s: str, t: str) -> tuple[dict[str, str], dict[str, str]]:
    """Merge the flow's keys: top-level connector keys, overridden by ``S->T.*``."""
    merged: dict[str, str] = {}
    written: dict[str, str] = {}
    for key, value in raw.top_all.items():
        ck = KEYS.get(key)
        if (ck is not None and ck.scope == "connector") or (ck is None and key.startswith(CONNECTOR_PREFIXES)):
            merged[key], written[key] = value, key
    for key, value in raw.flow_raw.get((s, t), {}).items():
        merged[key], written[key] = value, f"{s}->{t}.{key}"
    return merged, written


def _typed_values(raw: RawConfig, merged: Mapping[str, str], written: Mapping[str, str]) -> dict[str, dict[str, Any]]:
    """Fill the typed fields of ``FlowConfig`` (``"flow"``) and ``PolicyConfig`` (``"policy"``) from the merge.

    A deprecated alias fills its replacement's field when that is unset; a negative ``<job>.interval.seconds``
    disables the job (as MM2's scheduler skips it), with a warning.
    """
    r = _FlowReader(merged, written, raw.src)
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
            raw.warn(f"'{written[ck.name]}' is negative, which disables the job (as in MM2)")
            values[flag.holder][str(flag.field)] = False
    return values


def _worker(raw: RawConfig, name: str, target: str) -> tuple[str, str] | None:
    """Worker key ``name`` of the target: top level (worker prefixes only) beats ``<T>.name``."""
    if name in raw.top_all and name.startswith(WORKER_PREFIXES):
        return raw.top_all[name], name
    if name in raw.cluster_raw[target]:
        return raw.cluster_raw[target][name], f"{target}.{name}"
    return None


def _transforms(
    raw: RawConfig, merged: Mapping[str, str], written: Mapping[str, str], s: str, t: str
) -> TransformsConfig:
    """Read the flow's ``transforms*`` and ``predicates*`` keys, warning where MM2 would differ.

    Raises TransformConfigError as :func:`~mirrorspark.core.transforms.parse_transforms`, naming the file.
    """
    keys = {k: v for k, v in merged.items() if k.startswith(("transforms", "predicates"))}
    try:
        config = parse_transforms(keys, lambda k: written.get(k, k))
    except TransformConfigError as e:
        raise TransformConfigError(f"{raw.src}: {e.message}") from e
    if any(spec.type == INSERT_HEADER for spec in config.transforms):
        converter = merged.get("header.converter", "").strip()
        if not converter.endswith("StringConverter"):
            raw.warn(
                f"{s}->{t}: InsertHeader writes its value.literal as UTF-8 bytes; MM2 with this file would fail "
                "on every record (its default header.converter, ByteArrayConverter, takes no string): set "
                "'header.converter = org.apache.kafka.connect.storage.StringConverter' for MM2 to write the same"
            )
    if config.routes:
        raw.warn(
            f"{s}->{t}: RegexRouter renames remote topics: a renamed topic that no longer carries the "
            "source alias is not recognised as a remote topic (cycle detection, replication hops, "
            "upstream clusters, failback translation see it as local); checkpoints name the renamed "
            "topic (docs/transforms.md)"
        )
    return config


def _renaming(
    raw: RawConfig, merged: Mapping[str, str], written: Mapping[str, str], policy: Mapping[str, Any], s: str
) -> RenamingConfig:
    """Read and check the flow's ``topic.rename.*`` keys (the rules proven reversible, here, at load).

    Raises ConfigError naming the file: a rule or format refused by :func:`~mirrorspark.core.renaming.check_renaming`,
    or renaming beside an explicit ``replication.policy.class`` of another policy.
    """
    keys = {k: v for k, v in merged.items() if k == FORMAT_KEY or k.startswith(RULES_KEY)}
    try:
        renaming = parse_renaming(keys, lambda k: written.get(k, k))
        class_key = "replication.policy.class"
        if renaming and class_key in merged and merged[class_key].strip() not in RENAMING_POLICY_NAMES:
            shown = written.get(FORMAT_KEY) or written.get(RULES_KEY) or "topic.rename.*"
            raise ConfigError(
                f"'{shown}' renames topics with RenamingReplicationPolicy, but '{written[class_key]}' = "
                f"{merged[class_key].strip()!r} names another policy: remove one of the two (or set "
                f"'{class_key} = RenamingReplicationPolicy')"
            )
        if renaming or str(policy["class_name"]).strip() in RENAMING_POLICY_NAMES:
            isep = policy["separator"] if policy["internal_topic_separator_enabled"] else "."
            check_renaming(renaming, f"{s}{policy['separator']}", isep)
    except ConfigError as e:
        raise ConfigError(f"{raw.src}: {e.message}") from e
    return renaming


def _placement(raw: RawConfig, value: str, written: str) -> PlacementRules | None:
    """Read ``mirrorspark.replica.placement``: inline JSON (``{...}`` or ``[...]``) or a JSON file's path.

    Raises ConfigError if the file cannot be read; PlacementError (naming the key) for rules that do not parse.
    """
    value = value.strip()
    if not value:
        return None
    where = f"'{written}'"
    if not value.startswith(("{", "[")):
        try:
            text = Path(value).read_text(encoding="utf-8")
        except OSError as e:
            raise ConfigError(
                f"{raw.src}: {where} names the placement file '{value}', which cannot be read "
                f"({e.strerror or type(e).__name__}); fix the path (relative to the working directory) "
                "or write the JSON inline"
            ) from e
        where = f"{where} (file '{value}')"
    else:
        text = value
    try:
        rules = parse_placement_rules(text)
    except PlacementError as e:
        raise PlacementError(f"{raw.src}: {where}: {e.message}") from e
    for note in rules.notes:
        raw.warn(f"{where}: {note}")
    return rules


def _check_offset_syncs(
    raw: RawConfig, emit: bool, merged: Mapping[str, str], written: Mapping[str, str], s: str, t: str
) -> None:
    if emit:
        return
    conflicting = [written[k] for k in merged if k.startswith(("offset-syncs-", "offset-syncs.topic."))]
    if conflicting:
        raise ConfigError(
            f"{raw.src}: flow {s}->{t} has '{written['emit.offset-syncs.enabled']}' = false but "
            f"also sets {', '.join(repr(c) for c in conflicting)}: offset syncs are off, so remove "
            "those keys or set emit.offset-syncs.enabled=true (MM2 rejects this combination too)"
        )


def _check_exactly_once(
    raw: RawConfig,
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
            f"{raw.src}: '{boundary_key}' = connector: MirrorSourceConnector defines no "
            "transaction boundaries of its own (MM2 rejects this too); use poll (the default) or interval"
        )
    if flow_values["exactly_once_support"] == "required":
        if not enabled:
            raise ConfigError(
                f"{raw.src}: '{support_key}' = required, but flow {s}->{t} does not run "
                f"exactly-once: set '{worker_key} = enabled' (KIP-618), or exactly.once.support = requested"
            )
        if consumer.get("isolation.level", "").strip() != "read_committed":
            raise ConfigError(
                f"{raw.src}: '{support_key}' = required needs the source consumer "
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
            f"{raw.src}: flow {s}->{t} runs exactly-once with transactions of up to {interval_ms} ms, but the "
            f"target producer's transaction.timeout.ms is {timeout_ms} ms: the coordinator would abort "
            f"every transaction; set '{t}.producer.transaction.timeout.ms' above {interval_ms} or commit more "
            "often (transaction.boundary.interval.ms / offset.flush.interval.ms)"
        )


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

        Raises ConfigError if the value does not convert; the message names the key as written and the source.
        """
        return to_value(*self._raw(key), self._src)


__all__ = ["PLACEMENT_KEY", "flow_config"]
