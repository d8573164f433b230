"""Connector configs (issue #25 items 1-4): shapes, Connect's precedence and defaults, refusals, round trips."""

from __future__ import annotations

import dataclasses
import json
import logging
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from mirrorspark.cli.app import app
from mirrorspark.config.connect import Connector, connectors_to_properties, read_connect
from mirrorspark.config.convert import convert_config
from mirrorspark.config.model import MirrorConfig
from mirrorspark.config.parse import load_config, parse_config
from mirrorspark.config.properties import parse_properties
from mirrorspark.errors import ConfigError

EXAMPLES = Path(__file__).resolve().parents[2] / "docs" / "examples" / "connect"
SRC = "org.apache.kafka.connect.mirror.MirrorSourceConnector"
CKP = "org.apache.kafka.connect.mirror.MirrorCheckpointConnector"
HB = "org.apache.kafka.connect.mirror.MirrorHeartbeatConnector"
BASE = {
    "source.cluster.alias": "a",
    "source.cluster.bootstrap.servers": "a:9092",
    "target.cluster.alias": "b",
    "target.cluster.bootstrap.servers": "b:9092",
}


def body(name: str, cls: str, **config: str) -> dict[str, Any]:
    return {"name": name, "config": {"connector.class": cls, **BASE, **config}}


def write_rest(tmp_path: Path, *bodies: dict[str, Any], name: str = "connectors.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(list(bodies)))
    return path


def load(tmp_path: Path, *bodies: dict[str, Any], **kwargs: Any) -> MirrorConfig:
    return load_config(write_rest(tmp_path, *bodies), env={}, **kwargs)


# --------------------------------------------------------------------------- shapes


@pytest.mark.parametrize(
    ("example", "checkpoints", "heartbeats"),
    [
        ("strimzi-connectors.yaml", True, True),
        ("strimzi-mirror-maker2.yaml", True, True),
        ("rest-connectors.json", True, False),
        ("rest-expand-info.json", False, True),
        ("rest-folder", True, False),
    ],
)
def test_every_example_shape_loads_into_one_flow(example: str, checkpoints: bool, heartbeats: bool) -> None:
    cfg = load_config(EXAMPLES / example, env={})
    flow = cfg.flow("primary", "backup")
    assert flow.enabled
    assert flow.emit_checkpoints_enabled is checkpoints
    assert flow.emit_heartbeats_enabled is heartbeats
    assert flow.tasks_max == (1 if example == "rest-folder" else 2)
    assert cfg.clusters["backup"].bootstrap_servers == "localhost:9093"
    reverse = cfg.flow("backup", "primary")
    assert not reverse.enabled and not reverse.emit_heartbeats_enabled
    assert cfg.enabled_flows() == (flow,)


def test_kafka_mirror_maker2_expands_as_strimzi_does() -> None:
    found = read_connect(EXAMPLES / "strimzi-mirror-maker2.yaml")
    assert found is not None
    names = [c.name for c in found.connectors]
    assert names == [f"primary->backup.Mirror{k}Connector" for k in ("Source", "Checkpoint", "Heartbeat")]
    source = found.connectors[0]
    assert source.config["topics"] == "orders.*, payments"  # topicsPattern
    assert source.config["tasks.max"] == "2"  # tasksMax
    assert found.cluster_props == {"backup.offset.storage.topic": "mm2-offsets.primary.internal"}
    cfg = load_config(EXAMPLES / "strimzi-mirror-maker2.yaml", env={})
    assert cfg.flow("primary", "backup").offset_storage_topic == "mm2-offsets.primary.internal"


def test_kafka_mirror_maker2_with_kubernetes_secrets_is_refused(tmp_path: Path) -> None:
    doc = yaml.safe_load((EXAMPLES / "strimzi-mirror-maker2.yaml").read_text())
    doc["spec"]["clusters"][0]["authentication"] = {"type": "scram-sha-512", "username": "u"}
    path = tmp_path / "mm2.yaml"
    path.write_text(yaml.safe_dump(doc))
    with pytest.raises(ConfigError, match=r"cluster 'primary' sets 'authentication'.*Kubernetes secrets"):
        load_config(path, env={})


def test_a_rest_body_a_put_config_body_and_a_kind_list_are_read(tmp_path: Path) -> None:
    (tmp_path / "src.json").write_text(json.dumps(body("s", SRC)))
    (tmp_path / "ckp.json").write_text(json.dumps({"connector.class": CKP, "name": "c", **BASE}))
    items = {"apiVersion": "v1", "kind": "List", "items": [_kafka_connector("h", HB, {})]}
    (tmp_path / "hb.yaml").write_text(yaml.safe_dump(items))
    (tmp_path / "notes.txt").write_text("ignored")
    flow = load_config(tmp_path, env={}).flow("a", "b")
    assert flow.enabled and flow.emit_checkpoints_enabled and flow.emit_heartbeats_enabled


def _kafka_connector(name: str, cls: str, config: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "kafka.strimzi.io/v1beta2",
        "kind": "KafkaConnector",
        "metadata": {"name": name},
        "spec": {"class": cls, "config": {**BASE, **config}, **spec},
    }


def test_detection_by_content_not_extension(tmp_path: Path) -> None:
    as_txt = tmp_path / "connectors.txt"
    as_txt.write_text(json.dumps([body("s", SRC)]))
    assert load_config(as_txt, env={}).flow("a", "b").enabled
    props = tmp_path / "mm2.conf"
    props.write_text("clusters = a, b\na.bootstrap.servers = a:1\nb.bootstrap.servers = b:1\na->b.enabled = true\n")
    assert load_config(props, env={}).flow("a", "b").enabled
    colon_props = tmp_path / "colon.properties"  # YAML-shaped, but a .properties file is always properties
    colon_props.write_text("clusters: a, b\na.bootstrap.servers: a:1\nb.bootstrap.servers: b:1\n")
    assert load_config(colon_props, env={}).clusters["a"].bootstrap_servers == "a:1"


def test_an_unrecognised_yaml_or_json_is_an_error_naming_the_file_and_the_shapes(tmp_path: Path) -> None:
    path = tmp_path / "other.yaml"
    path.write_text("a: 1\n---\n" + yaml.safe_dump(_kafka_connector("s", SRC, {})))
    with pytest.raises(ConfigError) as e:
        load_config(path, env={})
    assert f"document 1 of {path} is of no accepted shape" in str(e.value)
    assert "KafkaConnector" in str(e.value) and "expand=info" in str(e.value)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ConfigError, match=r"holds no .yaml, .yml or .json file"):
        load_config(empty, env={})


def test_other_kinds_and_other_connector_classes_are_skipped_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "all.yaml"
    docs = [{"kind": "ConfigMap", "metadata": {"name": "x"}}, _kafka_connector("s", SRC, {})]
    docs.append(_kafka_connector("jdbc", "io.confluent.connect.jdbc.JdbcSinkConnector", {}))
    path.write_text(yaml.safe_dump_all(docs))
    with caplog.at_level(logging.WARNING, logger="mirrorspark.config"):
        cfg = load_config(path, env={})
    assert any("document 1, of kind 'ConfigMap', is not a connector; skipped" in w for w in cfg.warnings)
    assert any(
        "'io.confluent.connect.jdbc.JdbcSinkConnector' is not one of MM2's connectors" in w for w in cfg.warnings
    )
    assert f"{path}: {cfg.warnings[0]}" in caplog.text  # the loader's one-line format: '<file>: <message>'


def test_tasks_max_from_spec_overrides_the_config(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(_kafka_connector("s", SRC, {"tasks.max": "1"}, tasksMax=4)))
    assert load_config(path, env={}).flow("a", "b").tasks_max == 4


# --------------------------------------------------------------------------- Connect's semantics


def test_client_precedence_is_connects(tmp_path: Path) -> None:
    cfg = load(
        tmp_path,
        body(
            "s",
            SRC,
            **{
                "source.cluster.security.protocol": "SSL",
                "source.cluster.max.poll.records": "1",  # not a client connection key: MM2 drops it
                "consumer.max.poll.records": "2",
                "consumer.fetch.min.bytes": "3",
                "source.consumer.fetch.min.bytes": "4",
                "producer.linger.ms": "5",
                "producer.override.linger.ms": "6",
                "target.producer.acks": "1",
            },
        ),
    )
    flow = cfg.flow("a", "b")
    consumer = dict(flow.source_consumer.properties)
    assert consumer["security.protocol"] == "SSL"
    assert consumer["max.poll.records"] == "2"
    assert consumer["fetch.min.bytes"] == "4"
    assert consumer["enable.auto.commit"] == "false" and consumer["auto.offset.reset"] == "earliest"
    producer = dict(flow.target_producer.properties)
    assert producer["linger.ms"] == "6" and producer["acks"] == "1"
    assert dict(flow.source_producer.properties)["linger.ms"] == "5"
    # every connector naming 'a' agrees on its security protocol: cluster-wide tools get it too
    assert dict(cfg.clusters["a"].admin.properties)["security.protocol"] == "SSL"


def test_a_client_key_connectors_disagree_on_stays_per_flow(tmp_path: Path) -> None:
    cfg = load(
        tmp_path,
        body("s", SRC, **{"source.cluster.security.protocol": "SSL"}),
        body("h", HB),
    )
    assert "security.protocol" not in dict(cfg.clusters["a"].admin.properties)
    assert dict(cfg.flow("a", "b").source_admin.properties)["security.protocol"] == "SSL"


@pytest.mark.parametrize(
    ("defaults", "env", "explicit", "expected"),
    [
        (None, {}, None, False),
        ("apache", {}, None, False),
        ("csm", {}, None, True),
        (None, {"MIRRORSPARK_CONNECT_DEFAULTS": "csm"}, None, True),
        ("apache", {"MIRRORSPARK_CONNECT_DEFAULTS": "csm"}, None, False),
        ("csm", {}, "false", False),
        ("apache", {}, "true", True),
    ],
)
def test_sync_group_offsets_default_is_apaches_or_csms(
    tmp_path: Path, defaults: str | None, env: dict[str, str], explicit: str | None, expected: bool
) -> None:
    extra = {} if explicit is None else {"sync.group.offsets.enabled": explicit}
    path = write_rest(tmp_path, body("s", SRC), body("c", CKP, **extra))
    assert load_config(path, env=env, defaults=defaults).flow("a", "b").sync_group_offsets_enabled is expected


def test_unknown_defaults_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"unknown connector defaults 'cdh'"):
        load(tmp_path, body("s", SRC), defaults="cdh")


def test_apache_defaults_apply_where_connectors_are_silent(tmp_path: Path) -> None:
    flow = load(tmp_path, body("s", SRC), body("c", CKP), body("h", HB)).flow("a", "b")
    assert flow.emit_checkpoints_interval_s == 60 and flow.emit_heartbeats_interval_s == 1
    assert flow.tasks_max == 1 and not flow.sync_group_offsets_enabled
    assert flow.topics == (".*",)  # MM2's default topics


def test_a_source_connector_alone_copies_without_checkpoints_or_heartbeats(tmp_path: Path) -> None:
    cfg = load(tmp_path, body("s", SRC, **{"sync.group.offsets.enabled": "true", "groups": "x"}))
    flow = cfg.flow("a", "b")
    assert flow.enabled and flow.emit_offset_syncs_enabled
    assert not flow.emit_checkpoints_enabled and not flow.sync_group_offsets_enabled  # a source connector's ignored
    assert not flow.emit_heartbeats_enabled and cfg.heartbeat_flows() == ()


def test_a_checkpoint_connector_without_source_copies_nothing_and_warns(tmp_path: Path) -> None:
    cfg = load(tmp_path, body("c", CKP))
    assert not cfg.flow("a", "b").enabled and cfg.enabled_flows() == ()
    assert any(
        "connector 'c'" in w and "has no source connector for replication flow a->b" in w and "offsets translate" in w
        for w in cfg.warnings
    )


def test_a_disabled_source_connector_disables_the_flow(tmp_path: Path) -> None:
    assert not load(tmp_path, body("s", SRC, enabled="false"), body("h", HB)).flow("a", "b").enabled


def test_a_heartbeat_connector_alone_emits_heartbeats_only(tmp_path: Path) -> None:
    cfg = load(tmp_path, body("h", HB, **{"emit.heartbeats.interval.seconds": "5"}))
    assert cfg.enabled_flows() == () and [f.emit_heartbeats_interval_s for f in cfg.heartbeat_flows()] == [5]


@pytest.mark.parametrize("key", ["key.converter", "value.converter", "header.converter"])
def test_a_converter_other_than_byte_array_is_refused(tmp_path: Path, key: str) -> None:
    with pytest.raises(ConfigError) as e:
        load(tmp_path, body("s", SRC, **{key: "org.apache.kafka.connect.json.JsonConverter"}))
    assert f"connector 's' ({tmp_path / 'connectors.json'}" in str(e.value)
    assert f"set '{key}' to org.apache.kafka.connect.converters.ByteArrayConverter or remove it" in str(e.value)


def test_byte_array_converters_are_accepted(tmp_path: Path) -> None:
    conv = {k: "org.apache.kafka.connect.converters.ByteArrayConverter" for k in ("key.converter", "value.converter")}
    assert load(tmp_path, body("s", SRC, **conv, **{"header.converter": "ByteArrayConverter"})).flow("a", "b").enabled


def test_env_and_file_placeholders_are_resolved(tmp_path: Path) -> None:
    secrets = tmp_path / "s.properties"
    secrets.write_text("jaas = x required;\n")
    cfg = load_config(
        write_rest(
            tmp_path,
            body(
                "s",
                SRC,
                **{
                    "topics": "${env:TOPICS}",
                    "source.cluster.sasl.jaas.config": f"${{file:{secrets}:jaas}}",
                },
            ),
        ),
        env={"TOPICS": "orders"},
    )
    flow = cfg.flow("a", "b")
    assert flow.topics == ("orders",)
    assert dict(flow.source_consumer.properties)["sasl.jaas.config"] == "x required;"


@pytest.mark.parametrize("provider", ["secrets", "configmaps", "strimzisecrets", "vault"])
def test_strimzi_and_unknown_providers_are_refused_without_the_value(tmp_path: Path, provider: str) -> None:
    value = f"${{{provider}:ns/secret:password}}"
    with pytest.raises(ConfigError) as e:
        load(tmp_path, body("s", SRC, **{"source.cluster.sasl.jaas.config": f"user='u' password='{value}'"}))
    message = str(e.value)
    assert f"'source.cluster.sasl.jaas.config' uses a placeholder of config provider '{provider}'" in message
    assert "connector 's'" in message and "ns/secret" not in message and "user=" not in message


# --------------------------------------------------------------------------- consistency


@pytest.mark.parametrize(
    ("key", "source_value", "checkpoint_value"),
    [
        ("topics", "orders.*", "orders"),
        ("topics.exclude", "x", "y"),
        ("replication.policy.separator", "_", "."),
        ("replication.policy.class", "org.apache.kafka.connect.mirror.IdentityReplicationPolicy", None),
        ("offset-syncs.topic.location", "target", None),
    ],
)
def test_source_and_checkpoint_connectors_must_agree(
    tmp_path: Path, key: str, source_value: str, checkpoint_value: str | None
) -> None:
    ckp = {} if checkpoint_value is None else {key: checkpoint_value}
    with pytest.raises(ConfigError) as e:
        load(tmp_path, body("s", SRC, **{key: source_value}), body("c", CKP, **ckp))
    message = str(e.value)
    assert "connector 's'" in message and "connector 'c'" in message
    assert f"differ in '{key}': '{source_value}' vs " in message


def test_equal_defaults_written_or_not_agree(tmp_path: Path) -> None:
    assert load(tmp_path, body("s", SRC, **{"offset-syncs.topic.location": "source"}), body("c", CKP)).flow("a", "b")


def test_differing_bootstrap_servers_for_one_alias_run_each_connectors_own_clients(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Connect runs each connector with its own clients (issue #37 item 7): no longer refused, warned about."""
    with caplog.at_level(logging.WARNING):
        cfg = load(tmp_path, body("s", SRC), body("h", HB, **{"target.cluster.bootstrap.servers": "other:9092"}))
    assert "connectors reach cluster 'b' at different bootstrap servers" in caplog.text
    assert "connector 's'" in caplog.text and "connector 'h'" in caplog.text
    flow = cfg.flow("a", "b")
    assert cfg.clusters["b"].bootstrap_servers == flow.target_admin.get("bootstrap.servers") == "b:9092"
    assert flow.for_connector("heartbeat").target_admin.get("bootstrap.servers") == "other:9092"


def test_two_connectors_of_one_kind_in_a_flow_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"connector 's2'.*both source connectors of replication flow a->b"):
        load(tmp_path, body("s1", SRC), body("s2", SRC))


def test_a_connector_without_source_alias_or_with_equal_aliases_is_refused(tmp_path: Path) -> None:
    bad = body("s", SRC)
    del bad["config"]["source.cluster.alias"]
    with pytest.raises(ConfigError, match=r"connector 's'.*has no 'source.cluster.alias'"):
        load(tmp_path, bad)
    with pytest.raises(ConfigError, match=r"names 'b' as both its source and target cluster alias"):
        load(tmp_path, body("s", SRC, **{"source.cluster.alias": "b"}))


def test_a_misspelt_key_names_the_connector_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(_kafka_connector("s", SRC, {"topcs": "x"}), sort_keys=False))
    with pytest.raises(ConfigError) as e:
        load_config(path, env={})
    line = next(i for i, t in enumerate(path.read_text().splitlines(), 1) if "topcs" in t)
    assert f"unknown key 'topcs' of connector 's' ({path}:{line}); did you mean 'topics'?" in str(e.value)
    assert "a->b." not in str(e.value)


def test_an_invalid_value_names_the_connector(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"'emit.checkpoints.interval.seconds' of connector 'c'"):
        load(tmp_path, body("s", SRC), body("c", CKP, **{"emit.checkpoints.interval.seconds": "soon"}))


def test_a_non_scalar_value_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(_kafka_connector("s", SRC, {"topics": ["a", "b"]})))
    with pytest.raises(ConfigError, match=r"connector 's': 'topics' is a list"):
        load_config(path, env={})


# --------------------------------------------------------------------------- convert and round trips

MM2 = """clusters = a, b, c
a.bootstrap.servers = a:9092
b.bootstrap.servers = b:9092
c.bootstrap.servers = c:9092
security.protocol = PLAINTEXT
a.consumer.max.poll.records = 7
consumer.fetch.min.bytes = 9
a->b.enabled = true
a->b.topics = orders.*
a->b.tasks.max = 3
a->b.sync.group.offsets.enabled = true
a->b.source.consumer.isolation.level = read_committed
a->b.producer.override.linger.ms = 20
a->c.enabled = true
a->c.emit.checkpoints.enabled = false
replication.policy.separator = _
emit.heartbeats.interval.seconds = 2
b->a.emit.heartbeats.enabled = false
c->a.emit.heartbeats.enabled = false
b->c.emit.heartbeats.enabled = false
c->b.emit.heartbeats.enabled = false
"""


def _flows(cfg: MirrorConfig) -> dict[tuple[str, str], Any]:
    return {(f.source, f.target): f for f in cfg.flows}


@pytest.mark.parametrize("to", ["kafka-connector", "rest"])
def test_mm2_to_connectors_to_mm2_gives_the_same_flows(tmp_path: Path, to: str) -> None:
    src = tmp_path / "mm2.properties"
    src.write_text(MM2)
    out = tmp_path / ("c.yaml" if to == "kafka-connector" else "c.json")
    out.write_text(convert_config(src, to=to, env={}))  # type: ignore[arg-type]
    before, after = load_config(src, env={}), load_config(out, env={})
    for pair, flow in _flows(before).items():
        other = _flows(after)[pair]
        assert (flow.enabled, flow.emit_checkpoints_enabled, flow.emit_heartbeats_enabled) == (
            other.enabled,
            other.emit_checkpoints_enabled,
            other.emit_heartbeats_enabled,
        ), pair
        if flow.enabled:
            # a source connector needs a name of its own: its offsets are keyed by it from then on
            assert other.source_connector_name == f"{pair[0]}-to-{pair[1]}-source"
            assert dataclasses.replace(flow, source_connector_name=other.source_connector_name) == other, pair
    assert {a: c.bootstrap_servers for a, c in before.clusters.items()} == {
        a: c.bootstrap_servers for a, c in after.clusters.items()
    }


def _connectors(path: Path) -> dict[tuple[str, str, str], dict[str, str]]:
    found = read_connect(path)
    assert found is not None
    return {(c.source, c.target, c.kind): c.config for c in found.connectors}


def test_connectors_to_mm2_to_connectors_gives_equivalent_connectors(tmp_path: Path) -> None:
    mm2 = tmp_path / "mm2.properties"
    mm2.write_text(convert_config(EXAMPLES / "strimzi-connectors.yaml", env={}))
    back = tmp_path / "back.yaml"
    back.write_text(convert_config(mm2, env={}))
    original, again = _connectors(EXAMPLES / "strimzi-connectors.yaml"), _connectors(back)
    assert original.keys() == again.keys()
    for key, config in original.items():
        ignored = {"key.converter", "value.converter"}  # ByteArrayConverter: the worker's default
        if key[2] != "source":
            ignored.add("tasks.max")  # mirrorspark runs the checkpoint and heartbeat jobs on the driver: no tasks
        assert {k: v for k, v in config.items() if k not in ignored}.items() <= again[key].items(), key
    # and converting again reaches a fixed point
    assert convert_config(back, env={}).splitlines()[1:] == mm2.read_text().splitlines()[1:]


@settings(max_examples=40, deadline=None)
@given(
    topics=st.sampled_from(["orders.*", "a, b", ".*"]),
    tasks=st.integers(min_value=1, max_value=8),
    sync=st.sampled_from([None, "true", "false"]),
    kinds=st.sets(st.sampled_from(["source", "checkpoint", "heartbeat"]), min_size=1),
    interval=st.integers(min_value=1, max_value=120),
)
def test_round_trip_property(topics: str, tasks: int, sync: str | None, kinds: set[str], interval: int) -> None:
    assume("source" in kinds or "checkpoint" not in kinds)  # a checkpoint connector alone copies nothing: not kept
    connectors = []
    if "source" in kinds:
        connectors.append(_conn("s", "source", {"topics": topics, "tasks.max": str(tasks)}))
    if "checkpoint" in kinds:
        extra = {"topics": topics, "emit.checkpoints.interval.seconds": str(interval)}
        connectors.append(
            _conn("c", "checkpoint", extra | ({} if sync is None else {"sync.group.offsets.enabled": sync}))
        )
    if "heartbeat" in kinds:
        connectors.append(_conn("h", "heartbeat", {"emit.heartbeats.interval.seconds": str(interval)}))
    first = connectors_to_properties(connectors)
    cfg = parse_config(first.props, env={})
    from mirrorspark.config.connect.to_connectors import properties_to_connectors

    back = properties_to_connectors(first.props, cfg, file="x")
    second = connectors_to_properties(back.connectors)
    assert parse_config(second.props, env={}).flows == cfg.flows
    expected = {"source", "checkpoint"} & kinds if "source" in kinds else set()
    assert {c.kind for c in back.connectors} - {"heartbeat"} == expected


def _conn(name: str, kind: str, config: dict[str, str]) -> Connector:
    return Connector(name=name, kind=kind, config={**BASE, **config}, file="t.json")  # type: ignore[arg-type]


def test_converted_properties_parse_as_the_connectors_do(tmp_path: Path) -> None:
    text = convert_config(EXAMPLES / "strimzi-connectors.yaml", env={})
    assert "# replication flow primary->backup: primary-to-backup-source (source)" in text
    from_text = parse_config(parse_properties(text), env={})
    assert from_text.flows == load_config(EXAMPLES / "strimzi-connectors.yaml", env={}).flows


def invoke(*args: str) -> tuple[int, str, str]:
    r = CliRunner().invoke(app, list(args))
    return r.exit_code, r.stdout, r.stderr


def test_cli_config_convert_and_reference(tmp_path: Path) -> None:
    code, out, _ = invoke("config", "convert", str(EXAMPLES / "rest-connectors.json"))
    assert code == 0 and "primary->backup.enabled = true" in out
    code, out, _ = invoke("config", "convert", "--to", "rest", "--config", str(EXAMPLES / "rest-connectors.json"))
    assert code == 0 and json.loads(out)[0]["config"]["connector.class"] == SRC
    target = tmp_path / "out.yaml"
    mm2 = tmp_path / "mm2.properties"
    mm2.write_text(MM2)
    code, _, _ = invoke("config", "convert", str(mm2), "--connect-cluster", "My_Connect", "-o", str(target))
    docs = list(yaml.safe_load_all(target.read_text()))
    assert code == 0 and {d["metadata"]["labels"]["strimzi.io/cluster"] for d in docs} == {"my-connect"}
    assert invoke("config", "reference")[1] == invoke("config-reference")[1]


def test_cli_bad_input_exits_2(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"x": 1}')
    code, _, err = invoke("config", "convert", str(bad))
    assert code == 2 and "CONFIG_INVALID" in err and "no accepted shape" in " ".join(err.split())


def test_cli_connect_defaults_flag(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MIRRORSPARK_CONNECT_DEFAULTS", raising=False)
    path = write_rest(tmp_path, body("s", SRC), body("c", CKP))
    code, out, _ = invoke("--connect-defaults", "csm", "config", "convert", str(path))
    assert code == 0 and "a->b.sync.group.offsets.enabled = true" in out


def test_a_folder_config_after_a_list_option_ends_the_list(tmp_path: Path) -> None:
    from test_cli_conventions import leaf

    from mirrorspark.cli.conventions import normalize_args

    folder = tmp_path / "connectors"
    folder.mkdir()
    assert normalize_args(leaf("run"), ["--clusters", "b", "c", str(folder)]) == [
        "--clusters",
        "b",
        "--clusters",
        "c",
        str(folder),
    ]


def test_the_source_connectors_name_keys_the_flows_source_offsets() -> None:
    """Connect stores a MirrorSourceConnector's offsets under the connector's own name: the flow reads and writes
    them under it (issue #25 item 5); MM2's dedicated-mode name needs no key."""
    named = connectors_to_properties([_conn("dc1-source", "source", {})])
    [value] = [v for k, v in named.props.items() if k.endswith(".mirrorspark.source.connector.name")]
    assert value == "dc1-source"
    [flow] = [f for f in parse_config(named.props, env={}).flows if f.enabled]
    assert flow.source_connector_name == "dc1-source"
    dedicated = connectors_to_properties([_conn("MirrorSourceConnector", "source", {})])
    assert not any(k.endswith(".mirrorspark.source.connector.name") for k in dedicated.props)


# --------------------------------------------------------------------------- the Connect worker's own config

WORKER = """bootstrap.servers = b:9092
group.id = connect-cluster
offset.storage.topic = connect-offsets
offset.storage.replication.factor = 1
offset.flush.interval.ms = 1000
producer.linger.ms = 7
key.converter = org.apache.kafka.connect.converters.ByteArrayConverter
value.converter = org.apache.kafka.connect.converters.ByteArrayConverter
plugin.path = /opt/connectors
"""


def _folder(tmp_path: Path, worker: str, *bodies: dict[str, Any]) -> Path:
    folder = tmp_path / "deployment"
    folder.mkdir(parents=True)
    write_rest(folder, *(bodies or (body("dc1-source", SRC),)))
    (folder / "connect-distributed.properties").write_text(worker)
    return folder


def _worker_settings(cfg: MirrorConfig) -> tuple[str, int, int, str | None, str]:
    f = cfg.flow("a", "b")
    linger = f.target_producer.get("linger.ms")
    return (
        f.offset_storage_topic,
        f.offset_storage_replication_factor,
        f.offset_flush_interval_ms,
        linger,
        f.source_connector_name,
    )


def test_the_connect_workers_config_beside_the_connectors_says_where_the_offsets_are(tmp_path: Path) -> None:
    """The worker's offsets topic, its flush interval and its producer settings are the target's (the worker's
    bootstrap servers are b's): mirrorspark reads and writes the source offsets where the worker does, under the
    source connector's name (issue #25 item 5)."""
    cfg = load_config(_folder(tmp_path, WORKER), env={})
    assert _worker_settings(cfg) == ("connect-offsets", 1, 1000, "7", "dc1-source")


def test_a_strimzi_kafka_connect_document_is_the_workers_config(tmp_path: Path) -> None:
    path = tmp_path / "strimzi.yaml"
    worker = {"kind": "KafkaConnect", "metadata": {"name": "c"}, "spec": {"bootstrapServers": "b:9092", "config": {}}}
    worker["spec"]["config"] = {"offset.storage.topic": "c-offsets", "offset.storage.replication.factor": 1}
    path.write_text(yaml.safe_dump_all([worker, _kafka_connector("mirror-source", SRC, {})]))
    assert _worker_settings(load_config(path, env={}))[:2] + _worker_settings(load_config(path, env={}))[4:] == (
        "c-offsets",
        1,
        "mirror-source",
    )


def test_a_worker_of_no_named_cluster_or_with_a_converter_that_changes_bytes_is_refused(tmp_path: Path) -> None:
    with pytest.raises(
        ConfigError, match=r"connect-distributed.properties:1: its bootstrap.servers \(c:9092\) are none"
    ):
        load_config(_folder(tmp_path / "x", WORKER.replace("b:9092", "c:9092")), env={})
    json_values = WORKER.replace(
        "value.converter = org.apache.kafka.connect.converters.ByteArrayConverter",
        "value.converter = org.apache.kafka.connect.json.JsonConverter",
    )
    with pytest.raises(
        ConfigError,
        match=re.escape(
            "value.converter = org.apache.kafka.connect.json.JsonConverter applies to connector 'dc1-source'"
        ),
    ):
        load_config(_folder(tmp_path / "y", json_values), env={})
    fixed = body("dc1-source", SRC, **{"value.converter": "org.apache.kafka.connect.converters.ByteArrayConverter"})
    assert _worker_settings(load_config(_folder(tmp_path / "z", json_values, fixed), env={}))[0] == "connect-offsets"
