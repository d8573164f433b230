"""Creating topics on a real broker: many topics in batched requests, failures named (MM2 ``TopicAdmin``)."""

from __future__ import annotations

import pytest
from helpers import admin, unique_name

from mirrorspark.errors import ClusterError
from mirrorspark.kafka.admin import ClusterAdmin, TopicSpec
from mirrorspark.kafka.local.model import LocalClusters

pytestmark = [pytest.mark.integration]


def test_topics_are_created_in_batches(local_clusters: LocalClusters) -> None:
    b = local_clusters.bootstrap("backup")
    prefix = unique_name("many")
    client = admin(b)
    backup = ClusterAdmin(client, "backup", timeout_s=30.0)
    specs = [TopicSpec(f"{prefix}.{i:03d}", 2, -1, {"retention.ms": "3600000"}) for i in range(40)]
    assert backup.create_topics(specs) == [s.name for s in specs]
    md = client.list_topics(timeout=30).topics
    assert all(len(md[s.name].partitions) == 2 for s in specs)
    # existing topics are skipped; a failing one is named, and the others of the call are still created
    more = [*specs[:3], TopicSpec(f"{prefix}.new", 1, -1), TopicSpec(f"{prefix}.bad", 1, 7)]
    with pytest.raises(ClusterError, match=rf"'{prefix}\.bad' on cluster 'backup'.*replication factor"):
        backup.create_topics(more)
    md = client.list_topics(timeout=30).topics
    assert f"{prefix}.new" in md and f"{prefix}.bad" not in md
    assert backup.create_topics(more[:4]) == []
