"""What the driver's start leaves for the copy tasks' first generation (fakes: no broker, no Spark)."""

from __future__ import annotations

import pytest

from fakes import two_clusters
from mirrorspark.replication.driver import Replicator

pytestmark = pytest.mark.unit


def test_the_first_generation_already_has_the_heartbeats_topic_the_start_creates(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Only ``A->B`` is enabled, yet ``B->A``'s heartbeats go to A's ``heartbeats`` topic (as MM2's do), created at
    start. Before, the flow listed A's topics first: its first topic refresh found ``heartbeats-0`` and restarted
    the copy tasks just started (every fresh run lost a generation, and a kill in that second re-copied a batch)."""
    cfg, a, _b, clients = two_clusters()
    a.create_topic("orders", 2)
    replicator = Replicator(cfg, clients=clients)
    monkeypatch.setattr(replicator, "join_leases", lambda: None)  # the lease group needs a real coordinator
    try:
        replicator.start()
        [flow] = replicator.flows
        assert flow.assignment[0] == (("heartbeats", 0), ("orders", 0), ("orders", 1))
        assert flow.refresh_topics() == []  # nothing new for the first refresh: no restart
    finally:
        replicator.close()
