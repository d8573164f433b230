"""A flow's schema replication figures as the driver publishes them (``status``, the service, Prometheus)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class SchemaSyncFigures:
    """What a flow's schema sync holds after its last pass.

    ``subjects`` and ``versions``: source subjects (and their versions) the target holds under the policy's names;
    ``registered``: versions the driver registered on the target since the run began; ``synced_at_ms``: when the
    last pass ended (epoch ms, 0 before the first); ``error``: the last pass's error message, ``None`` when it
    succeeded.
    """

    subjects: int = 0
    versions: int = 0
    registered: int = 0
    synced_at_ms: int = 0
    error: str | None = None


__all__ = ["SchemaSyncFigures"]
