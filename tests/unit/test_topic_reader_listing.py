"""A :class:`TopicReader` of a topic not created yet asks about that topic alone, never lists the cluster (#44).

The live throttle's control tail reads ``mm2-control.<source>.internal`` every second; until someone creates it,
each read listed every topic of the cluster (a ``Metadata`` request for all of them: at 1,000 topics the most
frequent stack of the driver's control thread in a profile). On fake clusters.
"""

from __future__ import annotations

import pytest

from fakes import FakeClients, FakeCluster
from mirrorspark.config.model import ClientSettings
from mirrorspark.kafka.reader import TopicReader

pytestmark = pytest.mark.unit


def test_a_missing_topic_is_described_alone_at_each_read_and_read_once_created() -> None:
    cluster = FakeCluster("A")
    for i in range(50):
        cluster.create_topic(f"other-{i}", 4)
    clients = FakeClients({"a:9092": cluster})
    settings = ClientSettings(properties={"bootstrap.servers": "a:9092"})
    reader = TopicReader(settings, settings, "A", "control", client_id="tail", clients=clients)
    got: list[bytes | None] = []
    for _ in range(3):
        assert reader.read(lambda _k, v: got.append(v), timeout_s=1.0) == 0
    [admin] = clients.admins
    assert "list_topics" not in admin.calls
    assert admin.calls.count("describe_topics") == 3  # looked for at every read: a new topic is seen at once
    cluster.create_topic("control", 1)
    cluster.append("control", b"k", b"v")
    assert reader.read(lambda _k, v: got.append(v), timeout_s=1.0) == 1
    assert got == [b"v"]
    assert "list_topics" not in admin.calls


def test_a_topic_the_principal_may_not_describe_reads_as_missing_as_in_a_listing() -> None:
    cluster = FakeCluster("A")
    cluster.create_topic("control", 1)
    cluster.append("control", b"k", b"v")
    cluster.undescribable.add("control")
    clients = FakeClients({"a:9092": cluster})
    settings = ClientSettings(properties={"bootstrap.servers": "a:9092"})
    reader = TopicReader(settings, settings, "A", "control", client_id="tail", clients=clients)
    assert reader.read(lambda _k, _v: None, timeout_s=1.0) == 0  # no error: a Metadata listing hid it too
