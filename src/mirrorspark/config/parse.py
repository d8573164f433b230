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
settings of a role are composed along MM2's chain (:mod:`~mirrorspark.config.client_chain`).

The steps, each a module: the file's keys resolved and sorted by where they apply
(:mod:`~mirrorspark.config.raw`), checked as written (:mod:`~mirrorspark.config.key_checks`), each
cluster's client settings (:mod:`~mirrorspark.config.client_chain`) and Schema Registry
(:mod:`~mirrorspark.config.schema_sync`), each flow merged and typed (:mod:`~mirrorspark.config.flow_merge`),
the top-level keys of mirrorspark's data path and service (here).

Every key is declared once in :data:`~mirrorspark.config.keys.CONFIG_KEYS`; a key nobody knows (not mirrorspark's,
MM2's, Kafka Connect's, nor a Kafka or librdkafka client property where one goes) is an error naming its line and
the closest valid key (:mod:`~mirrorspark.config.key_names`), or, in lenient mode (``lenient=True``, or
``mirrorspark.config.lenient = true`` in the file), a warning in :attr:`MirrorConfig.warnings`. Secrets
(any key containing ``password``, ``secret``, ``sasl.jaas.config`` or ``ssl.key``) never appear in a message
or ``repr``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

from mirrorspark.config.client_chain import cluster_config
from mirrorspark.config.connect.read import read_connect
from mirrorspark.config.connect.to_properties import ConnectDefaults, input_to_properties
from mirrorspark.config.flow_merge import flow_config
from mirrorspark.config.key_checks import check_keys
from mirrorspark.config.keys import CONFIG_KEYS, KEYS, ConfigKey
from mirrorspark.config.model import DataPathConfig, MirrorConfig, ServiceConfig
from mirrorspark.config.properties import parse_properties_with_lines
from mirrorspark.config.raw import KeyOrigins, RawConfig
from mirrorspark.config.runnable import check_cycles
from mirrorspark.config.values import to_value
from mirrorspark.errors import ConfigError

CONNECT_DEFAULTS_ENV: Final = "MIRRORSPARK_CONNECT_DEFAULTS"
"""Environment variable naming the connector defaults, ``apache`` or ``csm`` (:func:`load_config`)."""

# mirrorspark's top-level keys, by the object whose fields they fill (see ConfigKey.field / ConfigKey.holder).
_DATA_PATH_KEYS: Final = tuple(k for k in CONFIG_KEYS if k.field is not None and k.holder == "data_path")
_SERVICE_KEYS: Final = tuple(k for k in CONFIG_KEYS if k.field is not None and k.holder == "service")
# Connector keys whose top-level value (connector-level default) MirrorConfig keeps for tools serving no flow.
_TOP_LEVEL_KEYS: Final = tuple(k for k in CONFIG_KEYS if k.top_level_field is not None)


def _top_level(raw: RawConfig, ck: ConfigKey) -> Any:
    """Return the typed top-level value of ``ck``, else its default."""
    return to_value(ck, raw.top_all.get(ck.name, ck.default or ""), ck.name, raw.src)


def parse_config(
    props: Mapping[str, str],
    *,
    env: Mapping[str, str] | None = None,
    source_name: str = "<properties>",
    clusters: Sequence[str] | None = None,
    lenient: bool = False,
    lines: Mapping[str, int] | None = None,
) -> MirrorConfig:
    """Validate MM2 properties and build the typed configuration.

    Parameters
    ----------
    props:
        Raw properties, e.g. from :func:`~mirrorspark.config.properties.parse_properties`.
    env:
        Environment for ``${env:NAME}`` placeholders; ``None`` = ``os.environ``.
    source_name:
        Where ``props`` came from; prefixes every message.
    clusters:
        MM2's ``--clusters`` option (target aliases this node serves), stored as
        :attr:`MirrorConfig.target_clusters`; ``None`` = all.
    lenient:
        Whether keys nobody knows are only warned about (once each, in :attr:`MirrorConfig.warnings`)
        instead of refused; ``mirrorspark.config.lenient = true`` in ``props`` does the same. Default
        ``False``: strict.
    lines:
        Per key, its line in the file (:func:`parse_properties_with_lines`), named in messages; ``None`` = unknown.

    Returns
    -------
    MirrorConfig

    Raises
    ------
    ConfigError
        On keys nobody knows (unless lenient: one error listing each as ``<file>:<line>: unknown key
        '<key>'; did you mean '<key>'?``), a missing or malformed ``clusters``, a cluster without
        bootstrap servers, an invalid value (the message names key, value and expected type), an unresolvable
        placeholder, ``emit.offset-syncs.enabled=false`` with ``offset-syncs.*`` keys, enabled flows that form a
        cycle through an identity-style policy (:func:`~mirrorspark.config.runnable.check_cycles`), ...
    UnknownAliasError
        If a flow key ``X->Y.*`` or ``clusters`` names an alias not in ``clusters``.
    BadRegexError
        If ``topics``, ``topics.exclude``, ``groups``, ``groups.exclude`` or
        ``config.properties.exclude`` (top level or per flow) holds an invalid regex.

    Notes
    -----
    Mirrors MM2's ``MirrorMakerConfig`` (``clusterPairs``, ``clusterProps``,
    ``workerConfig``, ``connectorBaseConfig``) followed by the connectors' config validation. MM2
    ignores keys it does not know; mirrorspark refuses them unless lenient.
    """
    return _parse(props, env=env, source_name=source_name, clusters=clusters, lenient=lenient, lines=lines)


def _parse(
    props: Mapping[str, str],
    *,
    env: Mapping[str, str] | None,
    source_name: str,
    clusters: Sequence[str] | None,
    lenient: bool,
    lines: Mapping[str, int] | None = None,
    origins: KeyOrigins | None = None,
    notes: Sequence[str] = (),
) -> MirrorConfig:
    """:func:`parse_config`, keys converted from connector configs named by ``origins`` in every message."""
    try:
        config = _build(props, env, source_name, clusters, lenient, lines, origins, notes)
    except ConfigError as e:
        if origins is None:
            raise
        raise type(e)(origins.describe(e.message)) from e
    check_cycles(config)  # a loaded MirrorConfig is one that may run
    return config


def _build(
    props: Mapping[str, str],
    env: Mapping[str, str] | None,
    source_name: str,
    clusters: Sequence[str] | None,
    lenient: bool,
    lines: Mapping[str, int] | None,
    origins: KeyOrigins | None,
    notes: Sequence[str],
) -> MirrorConfig:
    raw = RawConfig(props, os.environ if env is None else env, source_name, lines, origins=origins, notes=notes)
    check_keys(raw, lenient=lenient or bool(_top_level(raw, KEYS["mirrorspark.config.lenient"])))
    cluster_configs = {alias: cluster_config(raw, alias) for alias in raw.aliases}
    flows = tuple(flow_config(raw, s, t) for s in raw.aliases for t in raw.aliases if s != t)
    data_path = DataPathConfig(**{str(ck.field): _top_level(raw, ck) for ck in _DATA_PATH_KEYS})
    return MirrorConfig(
        clusters=cluster_configs,
        flows=flows,
        data_path=data_path,
        service=ServiceConfig(**{str(ck.field): _top_level(raw, ck) for ck in _SERVICE_KEYS}),
        **{str(ck.top_level_field): _top_level(raw, ck) for ck in _TOP_LEVEL_KEYS},
        warnings=raw.warnings,
        source_name=source_name,
        target_clusters=None if clusters is None else tuple(clusters),
    )


def load_config(
    path: str | os.PathLike[str],
    *,
    env: Mapping[str, str] | None = None,
    clusters: Sequence[str] | None = None,
    lenient: bool = False,
    defaults: str | None = None,
) -> MirrorConfig:
    """Read and parse an ``mm2.properties`` file, or connector configs (a YAML/JSON file or a folder of them).

    Parameters
    ----------
    path:
        An mm2.properties file (UTF-8; ISO-8859-1, Java's encoding for property files, if it is not valid
        UTF-8), or connector configs: a file or folder of Strimzi ``KafkaConnector`` documents, a
        ``KafkaMirrorMaker2`` document or Kafka Connect REST JSON, detected by content
        (:mod:`~mirrorspark.config.connect.read`) and converted into mm2.properties keys
        (:mod:`~mirrorspark.config.connect.to_properties`).
    env:
        Environment for ``${env:NAME}`` placeholders and ``MIRRORSPARK_CONNECT_DEFAULTS``; ``None`` = ``os.environ``.
    clusters:
        MM2's ``--clusters`` option: target aliases this node serves (validated; the default
        of :meth:`MirrorConfig.enabled_flows`); ``None`` = all.
    lenient:
        Whether keys nobody knows are only warned about instead of refused (a CLI ``--lenient`` flag);
        ``mirrorspark.config.lenient = true`` in the file does the same. Default ``False``: strict.
    defaults:
        Whose defaults connector configs are read with: ``"apache"`` (Apache Kafka's) or ``"csm"`` (Cloudera CSM
        Operator's: ``sync.group.offsets.enabled`` defaults to true); ``None`` = the environment variable
        ``MIRRORSPARK_CONNECT_DEFAULTS`` (set by the CLI's ``--connect-defaults``), else ``"apache"``.
        mm2.properties files ignore it.

    Returns
    -------
    MirrorConfig

    Raises
    ------
    ConfigError
        If the path cannot be read (the message names it), holds keys nobody knows (each named
        with ``<path>:<line>``, or for connector configs with the connector, file and line, and the closest
        valid key; unless lenient), a YAML/JSON file of no accepted shape, a connector config mirrorspark
        refuses (:func:`~mirrorspark.config.connect.to_properties.connectors_to_properties`), or anything
        :func:`parse_config` rejects.
    UnknownAliasError
        If ``clusters`` or a flow key names an alias not in ``clusters``.
    BadRegexError
        See :func:`parse_config`.

    Notes
    -----
    Mirrors MM2's ``MirrorMaker`` driver reading its properties file (``Utils.loadProps``); connector
    configs as Kafka Connect runs MM2's connectors (``MirrorConnectorConfig``).
    """
    name = os.fspath(path)
    env = os.environ if env is None else env
    found = read_connect(Path(name))
    if found is not None:
        converted = input_to_properties(found, defaults=connect_defaults(defaults, env))
        origins = KeyOrigins(converted.origins, frozenset(f"{s}->{t}." for s, t in converted.flows))
        notes = (*found.warnings, *converted.warnings)
        return _parse(
            converted.props, env=env, source_name=name, clusters=clusters, lenient=lenient, origins=origins, notes=notes
        )
    props, lines = read_properties(name)
    return parse_config(props, env=env, source_name=name, clusters=clusters, lenient=lenient, lines=lines)


def read_properties(name: str) -> tuple[dict[str, str], dict[str, int]]:
    """Read an mm2.properties file: its properties and the line of each key.

    Raises ConfigError naming the path if the file cannot be read or holds a malformed escape.
    """
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
        return parse_properties_with_lines(text)
    except ConfigError as e:
        raise ConfigError(f"{name}: {e.message}") from e


def connect_defaults(defaults: str | None, env: Mapping[str, str]) -> ConnectDefaults:
    """Return the connector defaults: ``defaults``, else ``MIRRORSPARK_CONNECT_DEFAULTS`` in ``env``, else apache.

    Raises ConfigError (the value is neither ``apache`` nor ``csm``).
    """
    value = defaults if defaults is not None else env.get(CONNECT_DEFAULTS_ENV, "").strip().lower() or "apache"
    if value == "apache":
        return "apache"
    if value == "csm":
        return "csm"
    raise ConfigError(
        f"unknown connector defaults {value!r} ({CONNECT_DEFAULTS_ENV} or --connect-defaults): use 'apache' "
        "(Apache Kafka's) or 'csm' (Cloudera CSM Operator's: sync.group.offsets.enabled defaults to true)"
    )


__all__ = ["CONNECT_DEFAULTS_ENV", "connect_defaults", "load_config", "parse_config", "read_properties"]
