"""Schema Registry configuration (#39 item 1): each cluster's registry, each flow's schema sync, connector configs."""

from __future__ import annotations

import json
import pickle
from pathlib import Path
from typing import Any

import pytest

from mirrorspark.config.convert import convert_config
from mirrorspark.config.keys import CONFIG_KEYS, SCHEMA_REGISTRY_PREFIX
from mirrorspark.config.model import MirrorConfig
from mirrorspark.config.parse import load_config, parse_config
from mirrorspark.config.schema_registry import SchemaRegistrySettings
from mirrorspark.errors import ConfigError

pytestmark = pytest.mark.unit

BASE = {"clusters": "A, B", "A.bootstrap.servers": "a:9092", "B.bootstrap.servers": "b:9092", "A->B.enabled": "true"}
BOTH = {"A.schema.registry.url": "http://a:8081", "B.schema.registry.url": "http://b:8081"}
SECRET = "s3cr3t-v4lue"
SOURCE = "org.apache.kafka.connect.mirror.MirrorSourceConnector"
HEARTBEAT = "org.apache.kafka.connect.mirror.MirrorHeartbeatConnector"


def parse(**props: str) -> MirrorConfig:
    return parse_config({**BASE, **props})


def error(**props: str) -> str:
    with pytest.raises(ConfigError) as e:
        parse(**props)
    return e.value.message


# --- the keys ---------------------------------------------------------------------------------


def test_registry_keys_are_confluent_kafkas_client_names_under_the_prefix() -> None:
    """Every name confluent-kafka's SchemaRegistryClient reads from a string config (CUSTOM's callables aside)."""
    names = {k.name[len(SCHEMA_REGISTRY_PREFIX) :] for k in CONFIG_KEYS if k.name.startswith(SCHEMA_REGISTRY_PREFIX)}
    client = {
        "url",
        "basic.auth.user.info",
        "ssl.ca.location",
        "ssl.certificate.location",
        "ssl.key.location",
        "ssl.key.password",
        "proxy",
        "timeout",
        "cache.capacity",
        "cache.latest.ttl.sec",
        "max.retries",
        "retries.wait.ms",
        "retries.max.wait.ms",
        "bearer.auth.credentials.source",
        "bearer.auth.token",
        "bearer.auth.logical.cluster",
        "bearer.auth.identity.pool.id",
        "bearer.auth.client.id",
        "bearer.auth.client.secret",
        "bearer.auth.scope",
        "bearer.auth.issuer.endpoint.url",
        "bearer.auth.issuer.endpoint.query",
    }
    assert names == client | {"basic.auth.credentials.source"}  # Java's, checked and not passed on
    assert all(k.scope == "cluster" for k in CONFIG_KEYS if k.name.startswith(SCHEMA_REGISTRY_PREFIX))


# --- a cluster's registry -----------------------------------------------------------------------


def test_a_cluster_without_registry_keys_has_none() -> None:
    config = parse(**{"B.schema.registry.url": " "})  # an empty URL names no registry, as an unset one
    assert config.cluster("A").schema_registry is None and config.cluster("B").schema_registry is None
    assert not config.flow("A", "B").sync_schemas_enabled


def test_registry_urls_and_settings_are_parsed() -> None:
    config = parse(
        **{
            "A.schema.registry.url": " http://a1:8081/apis/ccompat/v7 , https://a2:8081 ",
            "A.schema.registry.ssl.ca.location": "/etc/ca.pem",
            "A.schema.registry.timeout": "10",
            "A.schema.registry.max.retries": "5",
            "A.schema.registry.basic.auth.user.info": "user:pw",
        }
    )
    registry = config.cluster("A").schema_registry
    assert registry is not None
    assert registry.urls == ("http://a1:8081/apis/ccompat/v7", "https://a2:8081")
    assert registry.to_client_config() == {
        "url": "http://a1:8081/apis/ccompat/v7,https://a2:8081",
        "ssl.ca.location": "/etc/ca.pem",
        "timeout": 10,
        "max.retries": 5,
        "basic.auth.user.info": "user:pw",
    }
    assert pickle.loads(pickle.dumps(registry)) == registry and hash(registry)


def test_the_client_config_is_accepted_by_confluent_kafka() -> None:
    pytest.importorskip("authlib", reason="confluent-kafka's schema registry extra (authlib, ...) is not installed")
    from confluent_kafka.schema_registry import SchemaRegistryClient

    config = parse(
        **BOTH,
        **{
            "A.schema.registry.basic.auth.credentials.source": "USER_INFO",
            "A.schema.registry.basic.auth.user.info": "u:p",
            "A.schema.registry.retries.max.wait.ms": "100",
            "B.schema.registry.bearer.auth.credentials.source": "STATIC_TOKEN",
            "B.schema.registry.bearer.auth.token": SECRET,
            "B.schema.registry.bearer.auth.logical.cluster": "lsrc-1",
        },
    )
    for alias in ("A", "B"):
        registry = config.cluster(alias).schema_registry
        assert registry is not None
        SchemaRegistryClient(registry.to_client_config()).close()  # builds, no request sent


def test_env_and_file_placeholders_are_resolved(tmp_path: Path) -> None:
    secrets = tmp_path / "registry.properties"
    secrets.write_text(f"user.info = u:{SECRET}\n")
    config = parse_config(
        {
            **BASE,
            "A.schema.registry.url": "${env:REGISTRY_URL}",
            "A.schema.registry.basic.auth.user.info": f"${{file:{secrets}:user.info}}",
        },
        env={"REGISTRY_URL": "https://registry:8081"},
    )
    registry = config.cluster("A").schema_registry
    assert registry is not None and registry.urls == ("https://registry:8081",)
    assert registry.properties["basic.auth.user.info"] == f"u:{SECRET}"


@pytest.mark.parametrize(
    ("written", "suggested"),
    [
        ("A.schema.registry.urll", "A.schema.registry.url"),
        ("A.schema.registry.ssl.ca.locaton", "A.schema.registry.ssl.ca.location"),
        ("A.schema.registry.basic.auth.userinfo", "A.schema.registry.basic.auth.user.info"),
        ("B.schema.registry.bearer.auth.tokn", "B.schema.registry.bearer.auth.token"),
    ],
)
def test_a_misspelled_registry_key_names_the_nearest_valid_one(written: str, suggested: str) -> None:
    message = error(**BOTH, **{written: "x"})
    assert f"unknown key '{written}'; did you mean '{suggested}'?" in message


def test_a_java_only_registry_key_is_unknown() -> None:
    assert "unknown key 'A.schema.registry.ssl.truststore.location'" in error(
        **BOTH, **{"A.schema.registry.ssl.truststore.location": "/ts.jks"}
    )


@pytest.mark.parametrize(
    ("props", "expected"),
    [
        ({"schema.registry.url": "http://x:8081"}, "'schema.registry.url' names no cluster"),
        ({"A->B.schema.registry.url": "http://x:8081"}, "set it as '<alias>.schema.registry.url'"),
        ({"A.schema.registry.timeout": "5"}, "set but not 'A.schema.registry.url'"),
        ({"A.schema.registry.url": "registry:8081"}, "not an http:// or https:// URL"),
        ({"A.schema.registry.url": "http://a", "A.schema.registry.timeout": "0"}, "'A.schema.registry.timeout'"),
        ({"A.schema.registry.url": "http://a", "A.schema.registry.max.retries": "x"}, "a 32-bit integer >= 0"),
        ({"A.schema.registry.url": "http://a", "A.schema.registry.basic.auth.user.info": "nocolon"}, "user:password"),
        (
            {"A.schema.registry.url": "http://u:p@a", "A.schema.registry.basic.auth.user.info": "u:p"},
            "give the credentials once",
        ),
        ({"A.schema.registry.url": "http://a", "A.schema.registry.ssl.key.location": "k"}, "ssl.certificate.location"),
        (
            {"A.schema.registry.url": "http://a", "A.schema.registry.basic.auth.credentials.source": "USER_INFO"},
            "needs 'A.schema.registry.basic.auth.user.info'",
        ),
        (
            {"A.schema.registry.url": "http://a", "A.schema.registry.basic.auth.credentials.source": "SASL_INHERIT"},
            "expected one of USER_INFO, URL",
        ),
        (
            {"A.schema.registry.url": "http://a", "A.schema.registry.bearer.auth.token": "t"},
            "not 'A.schema.registry.bearer.auth.credentials.source'",
        ),
        (
            {"A.schema.registry.url": "http://a", "A.schema.registry.bearer.auth.credentials.source": "OAUTHBEARER"},
            "'A.schema.registry.bearer.auth.client.secret'",
        ),
        (
            {"A.schema.registry.url": "http://a", "A.schema.registry.bearer.auth.credentials.source": "CUSTOM"},
            "expected one of STATIC_TOKEN, OAUTHBEARER, OAUTHBEARER_AZURE_IMDS",
        ),
    ],
)
def test_registry_settings_the_client_would_refuse_stop_the_load(props: dict[str, str], expected: str) -> None:
    assert expected in error(**props)


def test_lenient_mode_ignores_an_unknown_registry_key() -> None:
    config = parse_config({**BASE, **BOTH, "A.schema.registry.nope": "x"}, lenient=True)
    registry = config.cluster("A").schema_registry
    assert registry is not None and dict(registry.properties) == {}
    assert any("A.schema.registry.nope" in w for w in config.warnings)


# --- a flow's schema replication ----------------------------------------------------------------


def test_schema_replication_is_on_when_both_sides_name_a_registry() -> None:
    config = parse(**BOTH)
    for s, t in (("A", "B"), ("B", "A")):
        flow = config.flow(s, t)
        assert flow.sync_schemas_enabled and flow.sync_schemas_unknown_ids == "fail"
        assert "sync.schemas.enabled" not in flow.extra


@pytest.mark.parametrize(
    "registries", [{}, {"A.schema.registry.url": "http://a"}, {"B.schema.registry.url": "http://b"}]
)
def test_schema_replication_is_off_unless_both_sides_name_a_registry(registries: dict[str, str]) -> None:
    assert not parse(**registries).flow("A", "B").sync_schemas_enabled


@pytest.mark.parametrize("key", ["sync.schemas.enabled", "A->B.sync.schemas.enabled"])
def test_the_off_switch(key: str) -> None:
    config = parse(**BOTH, **{key: "false"})
    assert not config.flow("A", "B").sync_schemas_enabled
    assert config.flow("B", "A").sync_schemas_enabled is (key == "A->B.sync.schemas.enabled")


def test_a_flow_override_beats_the_top_level_key() -> None:
    config = parse(**BOTH, **{"sync.schemas.enabled": "false", "A->B.sync.schemas.enabled": "true"})
    assert config.flow("A", "B").sync_schemas_enabled and not config.flow("B", "A").sync_schemas_enabled


@pytest.mark.parametrize(
    ("props", "missing"),
    [
        ({"A->B.sync.schemas.enabled": "true"}, "set 'A.schema.registry.url' and 'B.schema.registry.url'"),
        ({"sync.schemas.enabled": "true", "A.schema.registry.url": "http://a"}, "set 'B.schema.registry.url',"),
        ({"A->B.sync.schemas.enabled": "true", "B.schema.registry.url": "http://b"}, "set 'A.schema.registry.url',"),
        ({"B->A.sync.schemas.enabled": "true", "B.schema.registry.url": "http://b"}, "set 'A.schema.registry.url',"),
    ],
)
def test_explicitly_on_without_a_registry_names_the_missing_url(props: dict[str, str], missing: str) -> None:
    message = error(**props)
    assert "sync.schemas.enabled' = true" in message and missing in message


def test_top_level_on_leaves_a_disabled_flow_without_registry_off() -> None:
    """Top level = every flow that replicates; A->C copies nothing, so C's missing registry is no error."""
    props = {**BASE, "clusters": "A, B, C", "C.bootstrap.servers": "c:9092", **BOTH, "sync.schemas.enabled": "true"}
    parsed = parse_config(props)
    assert parsed.flow("A", "B").sync_schemas_enabled and not parsed.flow("A", "C").sync_schemas_enabled


@pytest.mark.parametrize("value", ["fail", "copy"])
def test_unknown_ids(value: str) -> None:
    assert parse(**BOTH, **{"A->B.sync.schemas.unknown.ids": value}).flow("A", "B").sync_schemas_unknown_ids == value
    assert "expected one of fail, copy" in error(**{"sync.schemas.unknown.ids": "skip"})


def test_invalid_switch_value_is_refused() -> None:
    assert "expected a boolean" in error(**BOTH, **{"A->B.sync.schemas.enabled": "yes"})


# --- connector configs --------------------------------------------------------------------------


def connector(name: str, cls: str, **config: str) -> dict[str, Any]:
    clusters = {"source.cluster.bootstrap.servers": "a:9092", "target.cluster.bootstrap.servers": "b:9092"}
    aliases = {"source.cluster.alias": "A", "target.cluster.alias": "B"}
    return {"name": name, "config": {"connector.class": cls, **aliases, **clusters, **config}}


def write(tmp_path: Path, *bodies: dict[str, Any]) -> Path:
    path = tmp_path / "connectors.json"
    path.write_text(json.dumps(list(bodies)))
    return path


REGISTRY_CONFIG = {
    "source.cluster.schema.registry.url": "http://a:8081",
    "target.cluster.schema.registry.url": "https://b:8081",
    "target.cluster.schema.registry.basic.auth.user.info": f"u:{SECRET}",
    "sync.schemas.unknown.ids": "copy",
}


def test_connector_registry_keys_become_the_clusters(tmp_path: Path) -> None:
    path = write(tmp_path, connector("src", SOURCE, **REGISTRY_CONFIG), connector("hb", HEARTBEAT))
    config = load_config(path)
    a, b = config.cluster("A").schema_registry, config.cluster("B").schema_registry
    assert a == SchemaRegistrySettings(urls=("http://a:8081",), properties={})
    assert b == SchemaRegistrySettings(urls=("https://b:8081",), properties={"basic.auth.user.info": f"u:{SECRET}"})
    flow = config.flow("A", "B")
    assert flow.sync_schemas_enabled and flow.sync_schemas_unknown_ids == "copy"
    assert not any("schema" in k for k in flow.extra)
    text = convert_config(str(path), to="properties")
    assert "A.schema.registry.url = http://a:8081" in text and "A->B.sync.schemas.unknown.ids = copy" in text


def test_connector_off_switch_and_round_trip(tmp_path: Path) -> None:
    path = write(tmp_path, connector("src", SOURCE, **REGISTRY_CONFIG, **{"sync.schemas.enabled": "false"}))
    assert not load_config(path).flow("A", "B").sync_schemas_enabled
    properties = tmp_path / "mm2.properties"
    properties.write_text(convert_config(str(path), to="properties"))
    (source,) = [c for c in json.loads(convert_config(str(properties), to="rest")) if c["name"] == "src"]
    for key, value in {**REGISTRY_CONFIG, "sync.schemas.enabled": "false"}.items():
        assert source["config"][key] == value, key


def test_connectors_giving_one_cluster_two_registries_are_refused(tmp_path: Path) -> None:
    hb = connector("hb", HEARTBEAT, **{"source.cluster.schema.registry.url": "http://other:8081"})
    path = write(tmp_path, connector("src", SOURCE, **REGISTRY_CONFIG), hb)
    with pytest.raises(ConfigError, match="a cluster has one Schema Registry"):
        load_config(path)


def test_a_misspelled_connector_registry_key_is_named(tmp_path: Path) -> None:
    path = write(tmp_path, connector("src", SOURCE, **{"source.cluster.schema.registry.urll": "http://a:8081"}))
    with pytest.raises(ConfigError, match=r"did you mean .*schema\.registry\.url"):
        load_config(path)
