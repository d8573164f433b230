"""Loading the policy ``replication.policy.class`` names: MM2's two, or a Python class (MM2 loads a Java one)."""

from __future__ import annotations

import importlib

from mirrorspark.errors import ConfigError
from mirrorspark.mm2.policy.default_policy import DefaultReplicationPolicy
from mirrorspark.mm2.policy.identity_policy import IdentityReplicationPolicy
from mirrorspark.mm2.policy.replication_policy import (
    DEFAULT_POLICY_CLASS,
    DEFAULT_SEPARATOR,
    INTERNAL_TOPIC_SEPARATOR_ENABLED_CONFIG,
    JAVA_PACKAGE,
    SEPARATOR_CONFIG,
    SOURCE_CLUSTER_ALIAS_CONFIG,
    ReplicationPolicy,
)

_DEFAULT_POLICY_NAMES = frozenset({"DefaultReplicationPolicy", DEFAULT_POLICY_CLASS})
_IDENTITY_POLICY_NAMES = frozenset({"IdentityReplicationPolicy", f"{JAVA_PACKAGE}IdentityReplicationPolicy"})


def load_policy(
    class_name: str,
    *,
    separator: str = DEFAULT_SEPARATOR,
    internal_topic_separator_enabled: bool = True,
    source_cluster_alias: str | None = None,
) -> ReplicationPolicy:
    """Create the replication policy named by ``replication.policy.class``.

    ``class_name`` is MM2's Java class name or short name of its two policies, or a Python class as
    ``package.module:ClassName``, instantiated with no arguments and, if it has ``configure(props)``, configured
    with the ``replication.policy.*`` keys and ``source.cluster.alias`` (MM2's ``Configurable``). Raises ConfigError
    naming the fix if the class cannot be found, imported, instantiated or configured, or is not a
    :class:`ReplicationPolicy`.
    """
    name = class_name.strip()
    if name in _DEFAULT_POLICY_NAMES:
        return DefaultReplicationPolicy(
            separator=separator, internal_topic_separator_enabled=internal_topic_separator_enabled
        )
    if name in _IDENTITY_POLICY_NAMES:
        return IdentityReplicationPolicy(
            source_cluster_alias=source_cluster_alias,
            separator=separator,
            internal_topic_separator_enabled=internal_topic_separator_enabled,
        )

    fix = (
        "set replication.policy.class to DefaultReplicationPolicy, IdentityReplicationPolicy, "
        "or a Python class as 'package.module:ClassName' importable by mirrorspark"
    )
    module_name, colon, attr = name.partition(":")
    if not colon or not module_name or not attr:
        raise ConfigError(f"unknown replication.policy.class {class_name!r} (Java classes cannot be loaded); {fix}")
    try:
        module = importlib.import_module(module_name)
    except Exception as e:
        raise ConfigError(
            f"replication.policy.class {class_name!r}: cannot import module {module_name!r} ({e}); {fix}"
        ) from e
    cls: object = module
    for part in attr.split("."):
        try:
            cls = getattr(cls, part)
        except AttributeError as e:
            raise ConfigError(
                f"replication.policy.class {class_name!r}: module {module_name!r} has no {attr!r}; {fix}"
            ) from e
    if not isinstance(cls, type):
        raise ConfigError(f"replication.policy.class {class_name!r} is not a class; {fix}")
    try:
        policy: object = cls()
    except Exception as e:
        raise ConfigError(
            f"replication.policy.class {class_name!r} cannot be instantiated with no arguments ({e}); "
            "give its constructor defaults and read settings in configure(props)"
        ) from e
    if not isinstance(policy, ReplicationPolicy):
        raise ConfigError(
            f"replication.policy.class {class_name!r} is not a replication policy; "
            "subclass mirrorspark.BaseReplicationPolicy (or DefaultReplicationPolicy) and "
            "implement format_remote_topic, topic_source and upstream_topic"
        )
    configure = getattr(policy, "configure", None)
    if callable(configure):
        props = {
            SEPARATOR_CONFIG: separator,
            INTERNAL_TOPIC_SEPARATOR_ENABLED_CONFIG: "true" if internal_topic_separator_enabled else "false",
        }
        if source_cluster_alias is not None:
            props[SOURCE_CLUSTER_ALIAS_CONFIG] = source_cluster_alias
        try:
            configure(props)
        except ConfigError:
            raise
        except Exception as e:
            raise ConfigError(
                f"replication.policy.class {class_name!r}: configure() failed ({e}); "
                "check the replication.policy.* settings"
            ) from e
    return policy


__all__ = ["load_policy"]
