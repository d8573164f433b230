"""MM2's replication policies: how remote and internal topics are named (``ReplicationPolicy``).

As MM2 ships them, one room each: the interface and its defaults (``replication_policy``:
:class:`ReplicationPolicy`, :class:`BaseReplicationPolicy`, the policy keys), ``DefaultReplicationPolicy``
(``default_policy``), ``IdentityReplicationPolicy`` (``identity_policy``), and loading the class
``replication.policy.class`` names (``loading``: :func:`load_policy`). Import from here: this package is the
policies' public surface.
"""

from mirrorspark.mm2.policy.default_policy import DefaultReplicationPolicy
from mirrorspark.mm2.policy.identity_policy import IdentityReplicationPolicy
from mirrorspark.mm2.policy.loading import load_policy
from mirrorspark.mm2.policy.replication_policy import (
    ALLOW_IDENTITY_CYCLES_KEY,
    DEFAULT_POLICY_CLASS,
    DEFAULT_SEPARATOR,
    HEARTBEATS_TOPIC,
    IDENTITY_PROBE_TOPIC,
    INTERNAL_TOPIC_SEPARATOR_ENABLED_CONFIG,
    SEPARATOR_CONFIG,
    SOURCE_CLUSTER_ALIAS_CONFIG,
    BaseReplicationPolicy,
    ReplicationPolicy,
)

__all__ = [
    "ALLOW_IDENTITY_CYCLES_KEY",
    "DEFAULT_POLICY_CLASS",
    "DEFAULT_SEPARATOR",
    "HEARTBEATS_TOPIC",
    "IDENTITY_PROBE_TOPIC",
    "INTERNAL_TOPIC_SEPARATOR_ENABLED_CONFIG",
    "SEPARATOR_CONFIG",
    "SOURCE_CLUSTER_ALIAS_CONFIG",
    "BaseReplicationPolicy",
    "DefaultReplicationPolicy",
    "IdentityReplicationPolicy",
    "ReplicationPolicy",
    "load_policy",
]
