"""Secret hygiene: no credential in any repr of config objects, flow contexts or Spark copy tasks."""

from __future__ import annotations

import pickle

import pytest
from typer.testing import CliRunner

from fakes import two_clusters
from mirrorspark.cli.app import app
from mirrorspark.client.context import ReplicationContext
from mirrorspark.config.keys import MASK, is_secret, masked
from mirrorspark.config.model import ClientSettings
from mirrorspark.errors import ConfigError
from mirrorspark.replication.task.spec import CopyTaskSpec, PartitionAssignment

pytestmark = pytest.mark.unit

SECRET = "pa55-w0rd-xyz"

SECRET_NAMES = [
    "sasl.password",
    "sasl.jaas.config",
    "kafka.sasl.jaas.config",
    "ssl.key.password",
    "ssl.keystore.password",
    "ssl.truststore.password",
    "ssl.key.pem",
    "ssl.keystore.key",
    "ssl.keystore.passphrase",
    "my.key.passphrase",
    "sasl.oauthbearer.client.secret",
    "sasl.oauthbearer.config",
    "A.consumer.sasl.password",
    "basic.auth.user.info",
    "SASL.PASSWORD",
    "schema.registry.basic.auth.user.info",
    "A.schema.registry.basic.auth.user.info",
    "schema.registry.ssl.key.password",
    "schema.registry.bearer.auth.token",
    "schema.registry.bearer.auth.client.secret",
]

PLAIN_NAMES = [
    "bootstrap.servers",
    "security.protocol",
    "sasl.mechanism",
    "sasl.username",
    "ssl.ca.location",
    "ssl.endpoint.identification.algorithm",
    "client.id",
    "group.id",
    "schema.registry.url",
    "schema.registry.ssl.ca.location",
    "schema.registry.bearer.auth.client.id",
    "schema.registry.bearer.auth.logical.cluster",
]


@pytest.mark.parametrize("name", SECRET_NAMES)
def test_secret_names_are_recognised(name: str) -> None:
    assert is_secret(name)


@pytest.mark.parametrize("name", PLAIN_NAMES)
def test_ordinary_names_are_shown(name: str) -> None:
    assert not is_secret(name)


def test_masked_replaces_only_secret_values() -> None:
    conf = {"bootstrap.servers": "b:9092", "sasl.password": SECRET, "ssl.key.password": SECRET, "linger.ms": 5}
    assert masked(conf) == {
        "bootstrap.servers": "b:9092",
        "sasl.password": MASK,
        "ssl.key.password": MASK,
        "linger.ms": 5,
    }


def copy_task() -> CopyTaskSpec:
    conf = {
        "bootstrap.servers": "a:9092",
        "sasl.username": "mirror",
        "sasl.password": SECRET,
        "ssl.key.password": SECRET,
        "ssl.keystore.password": SECRET,
        "sasl.oauthbearer.client.secret": SECRET,
    }
    return CopyTaskSpec(
        flow="A->B",
        source="A",
        target="B",
        task_index=0,
        generation=1,
        consumer_conf=conf,
        producer_conf=dict(conf),
        commit_conf=dict(conf),
        syncs_conf=None,
        offsets_topic="mm2-offsets.A.internal",
        offsets_partitions=25,
        syncs_topic="mm2-offset-syncs.B.internal",
        progress_topic="mm2-task-progress.A.internal",
        partitions=(PartitionAssignment("t", 0, "A.t", 0),),
        offset_lag_max=100,
        flush_interval_s=1.0,
        grant_address=("127.0.0.1", 1, "token"),
    )


def test_a_copy_task_repr_masks_credentials_and_keeps_the_rest() -> None:
    task = copy_task()
    text = repr(task)
    assert SECRET not in text and SECRET not in str(task)
    assert "a:9092" in text and "mirror" in text and "A.t" in text and "task_index=0" in text
    # the task itself still carries them (the Spark task needs them)
    assert pickle.loads(pickle.dumps(task)).consumer_conf["sasl.password"] == SECRET


def test_config_and_context_reprs_hold_no_secret() -> None:
    jaas = f'org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="{SECRET}";'
    cfg, _, _, clients = two_clusters(
        "A.security.protocol = SASL_PLAINTEXT\nA.sasl.mechanism = PLAIN\n"
        f"A.sasl.jaas.config = {jaas}\n"
        f"A.ssl.keystore.password = {SECRET}\nA.consumer.ssl.key.password = {SECRET}\n"
        f"B.producer.sasl.oauthbearer.client.secret = {SECRET}\n"
    )
    contexts = ReplicationContext(cfg, clients)
    ctx = contexts.flow("A", "B")
    for obj in (cfg, cfg.flow("A", "B"), cfg.cluster("A"), ctx, contexts, ctx.flow_config.source_consumer):
        assert SECRET not in repr(obj) and SECRET not in str(obj), type(obj).__name__
    settings = ClientSettings(properties={"ssl.keystore.passphrase": SECRET})
    assert SECRET not in repr(settings)


REGISTRY_SECRETS = (
    f"A.schema.registry.url = https://u:{SECRET}@registry-a:8081\n"
    "A.schema.registry.ssl.certificate.location = /client.pem\n"
    f"A.schema.registry.ssl.key.password = {SECRET}\n"
    "B.schema.registry.url = https://registry-b:8081\n"
    f"B.schema.registry.basic.auth.user.info = u:{SECRET}\n"
)


def test_schema_registry_secrets_are_masked_in_every_repr() -> None:
    cfg, _, _, clients = two_clusters(
        REGISTRY_SECRETS
        + "B->A.enabled = true\nB->A.sync.schemas.enabled = true\n"
        + "A.schema.registry.bearer.auth.credentials.source = STATIC_TOKEN\n"
        + f"A.schema.registry.bearer.auth.token = {SECRET}\nA.schema.registry.bearer.auth.logical.cluster = lsrc-1\n"
    )
    ctx = ReplicationContext(cfg, clients).flow("A", "B")
    registry = cfg.cluster("A").schema_registry
    assert registry is not None and cfg.flow("A", "B").sync_schemas_enabled
    for obj in (cfg, cfg.cluster("A"), cfg.cluster("B"), registry, cfg.cluster("B").schema_registry, ctx):
        assert SECRET not in repr(obj) and SECRET not in str(obj), type(obj).__name__
    assert "https://******@registry-a:8081" in repr(registry) and "lsrc-1" in repr(registry)
    # the settings themselves still carry them (the registry client needs them), also after pickling
    assert pickle.loads(pickle.dumps(registry)).to_client_config()["bearer.auth.token"] == SECRET


@pytest.mark.parametrize(
    "extra",
    [
        f"A.schema.registry.url = https://u:{SECRET}@a\nA.schema.registry.basic.auth.user.info = u:{SECRET}\n",
        f"A.schema.registry.url = u:{SECRET}@a:8081\n",
        f"A.schema.registry.url = https://a\nA.schema.registry.basic.auth.user.info = {SECRET}\n",
        f"A.schema.registry.url = https://a\nA.schema.registry.bearer.auth.token = {SECRET}\n",
        f"A.schema.registry.url = https://a\nA.schema.registry.ssl.key.password = {SECRET}\n",
        f"A.schema.registry.basic.auth.user.info = u:{SECRET}\n",
    ],
)
def test_schema_registry_errors_and_logs_hold_no_secret(extra: str, caplog: pytest.LogCaptureFixture) -> None:
    with pytest.raises(ConfigError) as e:
        two_clusters(extra)
    assert SECRET not in str(e.value)
    assert SECRET not in caplog.text


def test_spark_conf_option_needs_key_value() -> None:
    r = CliRunner().invoke(app, ["run", "nope.properties", "--conf", "spark.authenticate"])
    assert r.exit_code == 2
    assert "expected KEY=VALUE" in r.output
