"""The flow context: built once, one client.id rule, client settings translated once."""

from __future__ import annotations

import pytest

from fakes import two_clusters
from mirrorspark.client.context import FlowContext, ReplicationContext
from mirrorspark.config.model import ClientSettings
from mirrorspark.kafka.factory import KafkaClients, client_conf
from mirrorspark.mm2.policy import IdentityReplicationPolicy

pytestmark = pytest.mark.unit


def test_client_id_rule_keeps_a_user_id_as_prefix() -> None:
    assert client_conf({}, "A->B|mirrorspark|x")["client.id"] == "A->B|mirrorspark|x"
    conf = client_conf({"client.id": "app", "linger.ms": "7"}, "A->B|mirrorspark|x", defaults={"linger.ms": 5})
    assert conf["client.id"] == "app|A->B|mirrorspark|x"
    assert conf["linger.ms"] == "7"  # the user's settings win over defaults
    assert conf["log_level"] == 3
    assert client_conf({"acks": "1"}, "id", overrides={"acks": "all"})["acks"] == "all"


def test_settings_are_translated_once(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[ClientSettings] = []
    real = ClientSettings.to_librdkafka

    def counting(self: ClientSettings) -> dict[str, str]:
        calls.append(self)
        return real(self)

    monkeypatch.setattr(ClientSettings, "to_librdkafka", counting)
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
