"""What mirrorspark refuses in a connector config before anything starts, and the consistency of a replication flow.

* A converter other than ``ByteArrayConverter`` (``key.converter``, ``value.converter``, ``header.converter``):
  it would change the bytes MM2 copies unchanged.
* A ``${provider:...}`` placeholder of a provider other than ``env``, ``file`` and ``directory``
  (Strimzi's ``${secrets:...}``, ``${configmaps:...}``, ``${strimzisecrets:...}``, Vault ...): mirrorspark
  cannot resolve it. Messages name the connector and key, never the value.
* Within one replication flow: two connectors of one kind; a source and a checkpoint connector whose
  ``topics``, ``topics.exclude``, ``topic.filter.class``, ``offset-syncs.topic.location`` or
  ``replication.policy.*`` differ (MM2's checkpoints then name topics the source connector never copied).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Final

from mirrorspark.config.connect.model import Connector, ConnectorKind
from mirrorspark.config.keys import KEYS, show
from mirrorspark.errors import ConfigError

BYTE_ARRAY_CONVERTER: Final = "org.apache.kafka.connect.converters.ByteArrayConverter"
CONVERTER_KEYS: Final = ("key.converter", "value.converter", "header.converter")
RESOLVED_PROVIDERS: Final = ("env", "file", "directory")
_PROVIDER = re.compile(r"\$\{([^}:]*):")
SHARED_TOPIC_KEYS: Final = (
    "topics",
    "topics.exclude",
    "topics.blacklist",
    "topic.filter.class",
    "offset-syncs.topic.location",
)
"""Keys a flow's source and checkpoint connectors must agree on (besides every ``replication.policy.*``)."""


def check_connector(connector: Connector) -> None:
    """Refuse a connector whose converters change bytes, or whose placeholders mirrorspark cannot resolve.

    Raises ConfigError naming the connector, its file and line, the key and the fix (never a placeholder's value).
    """
    if not connector.source:
        raise ConfigError(
            f"{connector.where()} has no 'source.cluster.alias'; set it to the source cluster's alias "
            "(MirrorConnectorConfig requires it)"
        )
    if connector.source == connector.target:
        raise ConfigError(
            f"{connector.where()} names '{connector.source}' as both its source and target cluster alias; "
            "a replication flow's source and target must differ: fix 'source.cluster.alias' or 'target.cluster.alias'"
        )
    for key in CONVERTER_KEYS:
        value = connector.config.get(key, "").strip()
        if value and value not in (BYTE_ARRAY_CONVERTER, BYTE_ARRAY_CONVERTER.rsplit(".", 1)[-1]):
            raise ConfigError(
                f"{connector.where(key)}: '{key}' is {value}, which would change the bytes copied: mirrorspark copies "
                f"keys, values and headers unchanged, as MM2 does with ByteArrayConverter; set '{key}' to "
                f"{BYTE_ARRAY_CONVERTER} or remove it"
            )
    for key, value in connector.config.items():
        for provider in _PROVIDER.findall(value):
            if provider not in RESOLVED_PROVIDERS:
                raise ConfigError(
                    f"{connector.where(key)}: '{key}' uses a placeholder of config provider '{provider}', which "
                    "mirrorspark cannot resolve (it resolves ${env:NAME}, ${file:PATH:KEY} and ${directory:DIR:FILE}); "
                    "mount the secret or config map as a file and use ${file:...} or ${directory:...}, "
                    "or use ${env:...}"
                )


def check_one_per_kind(connectors: Iterable[Connector]) -> dict[ConnectorKind, Connector]:
    """Sort the connectors of one replication flow by kind.

    Raises ConfigError (two connectors of one kind serve the flow; the message names both).
    """
    by_kind: dict[ConnectorKind, Connector] = {}
    for c in connectors:
        other = by_kind.get(c.kind)
        if other is not None:
            raise ConfigError(
                f"{other.where()} and {c.where()} are both {c.kind} connectors of replication flow "
                f"{c.source}->{c.target}; keep one (mirrorspark runs one of each kind per flow)"
            )
        by_kind[c.kind] = c
    return by_kind


def check_topics_agree(source: Connector, checkpoint: Connector) -> None:
    """Refuse a flow whose source and checkpoint connectors disagree on its topics or replication policy.

    Raises ConfigError naming both connectors and every key that differs, with both values (none is a secret).
    """
    keys = sorted(
        {
            k
            for k in (*source.config, *checkpoint.config)
            if k in SHARED_TOPIC_KEYS or k.startswith("replication.policy.")
        }
    )
    differ = [k for k in keys if _norm(source.config, k) != _norm(checkpoint.config, k)]
    if differ:
        diff = "; ".join(f"'{k}': {_shown(source.config, k)} vs {_shown(checkpoint.config, k)}" for k in differ)
        raise ConfigError(
            f"{source.where()} and {checkpoint.where()} serve replication flow {source.source}->{source.target} "
            f"but differ in {diff}; give both connectors the same values (the checkpoint connector must "
            "see the topics the source connector copies, named by the same policy)"
        )


def _norm(config: Mapping[str, str], key: str) -> str | None:
    """Return the value in effect: as set, else MM2's default (``None`` for a key without one)."""
    value = config.get(key)
    if value is None:
        ck = KEYS.get(key)
        value = None if ck is None else ck.default
    return None if value is None else value.strip()


def _shown(config: Mapping[str, str], key: str) -> str:
    value = config.get(key)
    return "(unset)" if value is None else show(key, value)


__all__ = [
    "BYTE_ARRAY_CONVERTER",
    "CONVERTER_KEYS",
    "RESOLVED_PROVIDERS",
    "SHARED_TOPIC_KEYS",
    "check_connector",
    "check_one_per_kind",
    "check_topics_agree",
]
