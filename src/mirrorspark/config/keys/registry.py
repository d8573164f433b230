"""The registry: every key mirrorspark knows (MM2's, then its own), looked up by name, and the shapes of the others.

:data:`CONFIG_KEYS` is the one list ``docs/config.md`` (``mirrorspark config-reference``) and the parser walk;
:data:`KEYS` looks a key up by its top-level name. The prefixes say which unregistered keys MM2 passes on
(client settings of a kind or side, worker, connector and REST keys).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

from mirrorspark.config.keys.config_key import ConfigKey
from mirrorspark.config.keys.mirrorspark_keys import MIRRORSPARK_KEYS
from mirrorspark.config.keys.mm2_keys import MM2_KEYS
from mirrorspark.config.keys.schema_registry_keys import SCHEMA_REGISTRY_KEYS

CONFIG_KEYS: Final[tuple[ConfigKey, ...]] = MM2_KEYS + MIRRORSPARK_KEYS + SCHEMA_REGISTRY_KEYS
"""Every key mirrorspark knows, in MM2's order: driver, client, connector, worker, mirrorspark, Schema Registry keys."""

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
    "topic.rename.rules.",
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
CONNECTOR_CLIENT_KINDS: Final = ("checkpoint", "heartbeat")
"""Connectors that may run clients of their own in a flow: ``S->T.mirrorspark.<kind>.<flow client key>``."""
CONNECTOR_CLIENT_PREFIXES: Final = tuple(f"{MIRRORSPARK_PREFIX}{kind}." for kind in CONNECTOR_CLIENT_KINDS)


def is_client_key(key: str) -> bool:
    """Whether ``key`` is a client connection key (MM2's ``MirrorClientConfig.CLIENT_CONFIG_DEF``)."""
    return key in ("bootstrap.servers", "security.protocol") or key.startswith(("ssl.", "sasl."))


__all__ = [
    "CONFIG_KEYS",
    "CONNECTOR_CLIENT_KINDS",
    "CONNECTOR_CLIENT_PREFIXES",
    "CONNECTOR_PREFIXES",
    "CONNECT_PREFIXES",
    "FLOW_CLIENT_PREFIXES",
    "KEYS",
    "MIRRORSPARK_PREFIX",
    "REST_PREFIXES",
    "ROLES",
    "ROLE_PREFIXES",
    "SIDES",
    "SIDE_CLUSTER_PREFIXES",
    "SIDE_ROLE_PREFIXES",
    "WORKER_PREFIXES",
    "is_client_key",
]
