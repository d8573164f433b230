"""The key registry: every configuration key mirrorspark knows, declared once.

:class:`ConfigKey` and its vocabulary (``config_key``), MM2's keys (``mm2_keys``), mirrorspark's own
(``mirrorspark_keys``, ``schema_registry_keys``), the registry that joins them and the shapes of unregistered keys
(``registry``), and secret values (``masking``). Import from here: this package is the registry's public surface.
"""

from mirrorspark.config.keys.config_key import ACCEPTED_NOTE, ConfigKey, KeyEffect, KeyHolder, KeyScope, KeyType
from mirrorspark.config.keys.masking import MASK, is_secret, masked, show
from mirrorspark.config.keys.mirrorspark_keys import RETIRED_BATCH_ENGINE
from mirrorspark.config.keys.mm2_keys import SOURCE_PLACEHOLDER
from mirrorspark.config.keys.registry import (
    CONFIG_KEYS,
    CONNECT_PREFIXES,
    CONNECTOR_CLIENT_KINDS,
    CONNECTOR_CLIENT_PREFIXES,
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
    WORKER_PREFIXES,
    is_client_key,
)
from mirrorspark.config.keys.schema_registry_keys import (
    SCHEMA_REGISTRY_PREFIX,
    SYNC_SCHEMAS_ENABLED,
    SYNC_SCHEMAS_INTERVAL,
    SYNC_SCHEMAS_UNKNOWN_IDS,
)

__all__ = [
    "ACCEPTED_NOTE",
    "CONFIG_KEYS",
    "CONNECTOR_CLIENT_KINDS",
    "CONNECTOR_CLIENT_PREFIXES",
    "CONNECTOR_PREFIXES",
    "CONNECT_PREFIXES",
    "FLOW_CLIENT_PREFIXES",
    "KEYS",
    "MASK",
    "MIRRORSPARK_PREFIX",
    "REST_PREFIXES",
    "RETIRED_BATCH_ENGINE",
    "ROLES",
    "ROLE_PREFIXES",
    "SCHEMA_REGISTRY_PREFIX",
    "SIDES",
    "SIDE_CLUSTER_PREFIXES",
    "SIDE_ROLE_PREFIXES",
    "SOURCE_PLACEHOLDER",
    "SYNC_SCHEMAS_ENABLED",
    "SYNC_SCHEMAS_INTERVAL",
    "SYNC_SCHEMAS_UNKNOWN_IDS",
    "WORKER_PREFIXES",
    "ConfigKey",
    "KeyEffect",
    "KeyHolder",
    "KeyScope",
    "KeyType",
    "is_client_key",
    "is_secret",
    "masked",
    "show",
]
