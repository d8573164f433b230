"""mirrorspark: MirrorMaker 2-compatible cross-cluster replication for Apache Kafka on Apache Spark.

The public API is what this module exports (:data:`__all__`); everything else is internal
and may change between releases. Names are resolved on first use, so ``import mirrorspark``
loads neither confluent-kafka nor PySpark.

Examples
--------
>>> import mirrorspark
>>> config = mirrorspark.load_config("mm2.properties")  # doctest: +SKIP
>>> mirrorspark.translate_offsets(config, cluster="B", remote_alias="A", group="G")  # doctest: +SKIP

Notes
-----
Layers: ``docs/design.md``, enforced by import-linter. ``mm2``, ``core`` and ``client`` import without PySpark,
like MM2's ``mirror-client`` artifact.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from mirrorspark.client.control_store import ControlStore
    from mirrorspark.client.mirror_client import (
        MirrorClient,
        checkpoint_topics,
        heartbeat_topics,
        remote_topics,
        replication_hops,
        translate_offsets,
        upstream_clusters,
    )
    from mirrorspark.config.model import MirrorConfig
    from mirrorspark.config.parse import load_config, parse_config
    from mirrorspark.core.renaming import RenamingReplicationPolicy
    from mirrorspark.core.transforms import ConnectRecord, Transformation
    from mirrorspark.errors import MirrorsparkError
    from mirrorspark.mm2.policy import (
        BaseReplicationPolicy,
        DefaultReplicationPolicy,
        IdentityReplicationPolicy,
        ReplicationPolicy,
    )

_EXPORTS: dict[str, str] = {
    "BaseReplicationPolicy": "mirrorspark.mm2.policy",
    "ConnectRecord": "mirrorspark.core.transforms",
    "ControlStore": "mirrorspark.client.control_store",
    "DefaultReplicationPolicy": "mirrorspark.mm2.policy",
    "IdentityReplicationPolicy": "mirrorspark.mm2.policy",
    "MirrorClient": "mirrorspark.client.mirror_client",
    "MirrorConfig": "mirrorspark.config.model",
    "MirrorsparkError": "mirrorspark.errors",
    "RenamingReplicationPolicy": "mirrorspark.core.renaming",
    "ReplicationPolicy": "mirrorspark.mm2.policy",
    "Transformation": "mirrorspark.core.transforms",
    "checkpoint_topics": "mirrorspark.client.mirror_client",
    "heartbeat_topics": "mirrorspark.client.mirror_client",
    "load_config": "mirrorspark.config.parse",
    "parse_config": "mirrorspark.config.parse",
    "remote_topics": "mirrorspark.client.mirror_client",
    "replication_hops": "mirrorspark.client.mirror_client",
    "translate_offsets": "mirrorspark.client.mirror_client",
    "upstream_clusters": "mirrorspark.client.mirror_client",
}


def __getattr__(name: str) -> Any:
    """Resolve a public name on first use (PEP 562); raises AttributeError for a name outside :data:`__all__`."""
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'mirrorspark' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """Return the public API, for ``dir(mirrorspark)`` and completion."""
    return sorted({*globals(), *__all__})


__all__ = [
    "BaseReplicationPolicy",
    "ConnectRecord",
    "ControlStore",
    "DefaultReplicationPolicy",
    "IdentityReplicationPolicy",
    "MirrorClient",
    "MirrorConfig",
    "MirrorsparkError",
    "RenamingReplicationPolicy",
    "ReplicationPolicy",
    "Transformation",
    "__version__",
    "checkpoint_topics",
    "heartbeat_topics",
    "load_config",
    "parse_config",
    "remote_topics",
    "replication_hops",
    "translate_offsets",
    "upstream_clusters",
]
