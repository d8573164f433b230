"""The flow context and the client factory: built once, one client.id rule, one builder, settings translated once."""

from __future__ import annotations

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient

from fakes import two_clusters
from mirrorspark.client.context import FlowContext, ReplicationContext
from mirrorspark.config.model import ClientSettings
from mirrorspark.config.parse import parse_config
from mirrorspark.errors import ConfigError
from mirrorspark.kafka.factory import KafkaClients, client_conf, create
from mirrorspark.mm2.policy import IdentityReplicationPolicy

pytestmark = pytest.mark.unit


def test_client_id_rule_keeps_a_user_id_as_prefix() -> None:
    assert client_conf({}, "A->B|mirrorspark|x")["client.id"] == "A->B|mirrorspark|x"
    conf = client_conf({"client.id": "app", "linger.ms": "7"}, "A->B|mirrorspark|x", defaults={"linger.ms": 5})
    assert conf["client.id"] == "app|A->B|mirrorspark|x"
    assert conf["linger.ms"] == "7"  # the user's settings win over defaults
    assert conf["log_level"] == 3
    assert client_conf({"acks": "1"}, "id", overrides={"acks": "all"})["acks"] == "all"


def counting_translations(monkeypatch: pytest.MonkeyPatch) -> list[ClientSettings]:
    calls: list[ClientSettings] = []
    real = ClientSettings.to_librdkafka

    def counting(self: ClientSettings) -> dict[str, str]:
        calls.append(self)
        return real(self)

    monkeypatch.setattr(ClientSettings, "to_librdkafka", counting)
    return calls


def test_settings_are_translated_once(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = counting_translations(monkeypatch)
    cfg, _, _, _ = two_clusters()
    ctx = FlowContext.build(cfg, cfg.flow("A", "B"), clients=KafkaClients())
    for _ in range(3):
        ctx.client_conf("source_consumer", "replication-consumer")
        ctx.client_conf("target_producer", "replication-producer")
    assert len(calls) == 2
    with pytest.raises(TypeError):
        ctx.librdkafka("source_consumer")["x"] = "y"  # type: ignore[index]


def test_contexts_are_built_once_per_flow() -> None:
    cfg, _, _, clients = two_clusters(
        "replication.policy.class = org.apache.kafka.connect.mirror.IdentityReplicationPolicy\n"
    )
    contexts = ReplicationContext(cfg, clients)
    ctx = contexts.flow("A", "B")
    assert contexts.flow("A", "B") is ctx
    assert contexts.of(cfg.flow("A", "B")) is ctx
    assert contexts.reverse(ctx) is contexts.flow("B", "A")
    assert isinstance(ctx.policy, IdentityReplicationPolicy)
    assert ctx.policy.format_remote_topic("A", "t") == "t"
    assert ctx.client_id("x") == "A->B|mirrorspark|x"
    assert contexts.cluster_policy("B") is contexts.cluster_policy("B")
    assert ctx.clients is clients


def test_one_builder_creates_every_kind_and_the_factory_translates_once(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = counting_translations(monkeypatch)
    settings = ClientSettings(properties={"bootstrap.servers": "127.0.0.1:1", "client.id": "app"})
    clients = KafkaClients()
    admin = clients.admin(settings, client_id="A->B|mirrorspark|test-admin")
    producer = clients.producer(settings, client_id="A->B|mirrorspark|test-producer")
    consumer = clients.consumer(settings, client_id="A->B|mirrorspark|test-consumer")  # group.id set for it
    assert isinstance(admin, AdminClient) and isinstance(producer, Producer) and isinstance(consumer, Consumer)
    assert len(calls) == 1
    alone = create("consumer", settings, client_id="A->B|mirrorspark|test-consumer")  # translates itself
    assert isinstance(alone, Consumer) and len(calls) == 2
    for c in (consumer, alone):
        c.close()


def test_a_rejected_property_names_the_key_as_written_and_the_cluster_alias() -> None:
    with pytest.raises(ConfigError) as e:
        create("producer", ClientSettings(properties={"linger.ms": "soon"}), client_id="A->B|mirrorspark|p")
    assert "producer client property 'linger.ms' = 'soon'" in str(e.value) and "'<alias>.linger.ms'" in str(e.value)
    cfg = parse_config(
        {"clusters": "A, B", "A.bootstrap.servers": "a:1", "B.bootstrap.servers": "b:1", "B.producer.linger.ms": "soon"}
    )
    with pytest.raises(ConfigError) as e:
        FlowContext.build(cfg, cfg.flow("A", "B"), clients=KafkaClients()).producer("target", "test-producer")
    assert str(e.value).startswith("flow A->B, cluster 'B' (target): invalid producer client property 'linger.ms'")
    assert "'B.producer.linger.ms'" in str(e.value) and "A->B|mirrorspark|test-producer" in str(e.value)
