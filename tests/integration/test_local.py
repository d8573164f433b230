"""The local cluster launcher (:mod:`mirrorspark.kafka.local`) against real brokers."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient
from helpers import admin, assert_eventually, consume_all, create_topic, produce, unique_name

from mirrorspark.errors import LocalClusterError, UnknownAliasError
from mirrorspark.kafka.jars import JARS_DIR_ENV, classpath, jar_dir, java_executable
from mirrorspark.kafka.local.clusters import (
    load_clusters,
    restart_cluster,
    start_clusters,
    stop_broker,
    stop_cluster,
    stop_clusters,
)
from mirrorspark.kafka.local.model import LocalBroker, LocalClusters
from mirrorspark.kafka.local.settings import STATE_FILE

pytestmark = pytest.mark.integration


def parse_properties(text: str) -> dict[str, str]:
    """A small Java-properties reader: ``key = value`` lines, ``#`` comments, no continuations."""
    props: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", "!")):
            continue
        key, sep, value = line.partition("=")
        assert sep, f"not a property line: {raw!r}"
        props[key.strip()] = value.strip()
    return props


def cluster_id_of(bootstrap: str) -> str:
    client = admin(bootstrap)  # keep a reference: the future fails if the client is destroyed
    result = client.describe_cluster(request_timeout=10).result(timeout=15)
    return str(result.cluster_id)


def port_open(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


def pid_running(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"


@pytest.fixture
def own_base_dir(tmp_path: Path) -> Iterator[Path]:
    """A base directory for clusters a test starts itself; whatever runs there is stopped after."""
    base_dir = tmp_path / "clusters"
    try:
        yield base_dir
    finally:
        stop_clusters(base_dir)


# --- the session clusters ----------------------------------------------------------------------


def test_the_two_clusters_are_independent_and_usable(local_clusters: LocalClusters) -> None:
    assert list(local_clusters.clusters) == ["primary", "backup"]
    topic = unique_name("local-usable")
    base_ms = int(time.time() * 1000) - 3_600_000  # within retention.ms, or the broker may delete them
    sent: dict[str, list[dict[str, Any]]] = {
        alias: [
            {
                "key": f"k{i}".encode(),
                "value": f"{alias}-{i}".encode(),
                "headers": [("h", str(i).encode())],
                "timestamp_ms": base_ms + i,
            }
            for i in range(5)
        ]
        for alias in local_clusters.clusters
    }
    for alias, records in sent.items():
        bootstrap = local_clusters.bootstrap(alias)
        create_topic(bootstrap, topic, partitions=2)
        produce(bootstrap, topic, [{**r, "partition": i % 2} for i, r in enumerate(records)])

    for alias, records in sent.items():
        got = consume_all(local_clusters.bootstrap(alias), topic)
        assert sorted(r["value"] for r in got) == sorted(r["value"] for r in records)
        assert {r["partition"] for r in got} == {0, 1}
        first = next(r for r in got if r["key"] == b"k0")
        assert first["headers"] == [("h", b"0")]
        assert first["timestamp_ms"] == base_ms
        assert first["offset"] == 0

    ids = {alias: cluster_id_of(local_clusters.bootstrap(alias)) for alias in local_clusters.clusters}
    assert ids["primary"] != ids["backup"]
    for alias, cluster in local_clusters.clusters.items():
        assert cluster.cluster_id == ids[alias]
        assert len(cluster.brokers) == 1
        broker = cluster.brokers[0]
        assert broker.controller and broker.rack is None
        assert cluster.bootstrap_servers == f"127.0.0.1:{broker.port}"
        assert broker.log_path.is_file()
        assert broker.log_path.stat().st_size < 100_000, "broker logs should stay at WARN"


def test_a_topic_created_on_one_cluster_does_not_exist_on_the_other(local_clusters: LocalClusters) -> None:
    topic = unique_name("local-only-primary")
    create_topic(local_clusters.bootstrap("primary"), topic)
    assert topic in admin(local_clusters.bootstrap("primary")).list_topics(timeout=10).topics
    assert topic not in admin(local_clusters.bootstrap("backup")).list_topics(timeout=10).topics


def test_to_json_and_bootstrap(local_clusters: LocalClusters) -> None:
    doc = local_clusters.to_json()
    assert list(doc) == ["primary", "backup"]
    for alias, config in doc.items():
        assert config == {"bootstrap.servers": local_clusters.bootstrap(alias)}
    json.dumps(doc)
    with pytest.raises(UnknownAliasError, match="nosuch"):
        local_clusters.bootstrap("nosuch")


def test_mm2_properties_parse_with_the_right_bootstrap_servers(local_clusters: LocalClusters) -> None:
    props = parse_properties(local_clusters.mm2_properties())
    assert [a.strip() for a in props["clusters"].split(",")] == ["primary", "backup"]
    assert props["primary.bootstrap.servers"] == local_clusters.bootstrap("primary")
    assert props["backup.bootstrap.servers"] == local_clusters.bootstrap("backup")
    assert props["primary->backup.enabled"] == "true"
    assert "backup->primary.enabled" not in props
    for key in (
        "replication.factor",
        "offset-syncs.topic.replication.factor",
        "heartbeats.topic.replication.factor",
        "checkpoints.topic.replication.factor",
        "offset.storage.replication.factor",
        "config.storage.replication.factor",
        "status.storage.replication.factor",
    ):
        assert props[key] == "1", key

    both = parse_properties(
        local_clusters.mm2_properties(
            flows=[("primary", "backup"), ("backup", "primary")],
            extra={"topics": "orders.*", "replication.factor": "-1"},
        )
    )
    assert both["primary->backup.enabled"] == both["backup->primary.enabled"] == "true"
    assert both["topics"] == "orders.*"
    assert both["replication.factor"] == "-1"

    none = parse_properties(local_clusters.mm2_properties(flows=[]))
    assert not any(k.endswith(".enabled") for k in none)

    with pytest.raises(UnknownAliasError):
        local_clusters.mm2_properties(flows=[("primary", "dr")])
    with pytest.raises(LocalClusterError):
        local_clusters.mm2_properties(flows=[("primary", "primary")])


def test_load_clusters_reads_back_the_state(local_clusters: LocalClusters) -> None:
    loaded = load_clusters(local_clusters.base_dir)
    assert loaded == local_clusters
    assert loaded.to_json() == local_clusters.to_json()
    state = json.loads((local_clusters.base_dir / STATE_FILE).read_text())
    assert state["clusters"]["primary"]["brokers"][0]["pid"] == local_clusters.clusters["primary"].brokers[0].pid


def test_a_busy_base_dir_is_refused(local_clusters: LocalClusters) -> None:
    with pytest.raises(LocalClusterError, match="local down --dir") as info:
        start_clusters(["other"], base_dir=local_clusters.base_dir)
    assert str(local_clusters.base_dir) in str(info.value)
    assert load_clusters(local_clusters.base_dir) == local_clusters  # untouched


# --- clusters started by the test itself ------------------------------------------------------


def test_clusters_outlive_the_starting_process_and_stop_from_another(own_base_dir: Path) -> None:
    script = textwrap.dedent(
        f"""
        from pathlib import Path
        from mirrorspark.kafka.local.clusters import start_clusters
        start_clusters(["solo"], base_dir=Path({str(own_base_dir)!r}))
        """
    )
    subprocess.run([sys.executable, "-c", script], check=True, timeout=120)

    clusters = load_clusters(own_base_dir)
    assert list(clusters.clusters) == ["solo"]
    broker = clusters.clusters["solo"].brokers[0]
    assert pid_running(broker.pid)
    topic = unique_name("local-solo")
    create_topic(clusters.bootstrap("solo"), topic)
    produce(clusters.bootstrap("solo"), topic, [{"value": b"still here"}])
    assert [r["value"] for r in consume_all(clusters.bootstrap("solo"), topic)] == [b"still here"]

    assert stop_clusters(own_base_dir) == ["solo"]
    assert not pid_running(broker.pid)
    assert not port_open(broker.port)
    assert not (own_base_dir / STATE_FILE).exists()
    assert stop_clusters(own_base_dir) == []  # idempotent
    with pytest.raises(LocalClusterError, match="no local clusters"):
        load_clusters(own_base_dir)


def test_a_base_dir_can_be_reused_after_down(own_base_dir: Path) -> None:
    first = start_clusters(["again"], base_dir=own_base_dir)
    first_id = first.clusters["again"].cluster_id
    stop_clusters(own_base_dir)
    second = start_clusters(["again"], base_dir=own_base_dir)
    assert second.clusters["again"].cluster_id != first_id
    assert cluster_id_of(second.bootstrap("again")) == second.clusters["again"].cluster_id


def test_three_brokers_with_racks(own_base_dir: Path) -> None:
    racks = ["rack-a", "rack-b", "rack-c"]
    clusters = start_clusters(
        ["racked"],
        base_dir=own_base_dir,
        brokers=3,
        racks=racks,
        extra_broker_props={"replica.selector.class": "org.apache.kafka.common.replica.RackAwareReplicaSelector"},
    )
    cluster = clusters.clusters["racked"]
    assert [b.rack for b in cluster.brokers] == racks
    assert [b.controller for b in cluster.brokers] == [True, False, False]
    assert len(cluster.bootstrap_servers.split(",")) == 3
    client = admin(cluster.bootstrap_servers)
    description = client.describe_cluster(request_timeout=10).result(timeout=15)
    assert {node.id: node.rack for node in description.nodes} == {0: "rack-a", 1: "rack-b", 2: "rack-c"}

    topic = unique_name("local-racked")
    create_topic(cluster.bootstrap_servers, topic, partitions=3)  # default RF = 3
    meta = admin(cluster.bootstrap_servers).list_topics(topic=topic, timeout=10).topics[topic]
    assert all(len(p.replicas) == 3 for p in meta.partitions.values())
    produce(cluster.bootstrap_servers, topic, [{"value": str(i).encode()} for i in range(30)])
    assert len(consume_all(cluster.bootstrap_servers, topic)) == 30

    props = parse_properties(clusters.mm2_properties())
    assert props["replication.factor"] == "3"
    assert not any(k.endswith(".enabled") for k in props)  # one cluster: no default flow

    # one broker down and back
    down = stop_broker(clusters, "racked", 2)
    assert [b.pid == 0 for b in down.clusters["racked"].brokers] == [False, False, True]

    seen: list[set[int] | str] = []

    def registered() -> set[int] | None:
        # A fresh admin client per call: one made before the stop may keep routing requests to the
        # stopped broker (a timeout then is "not yet", not a failure). KRaft lists a broker until the
        # controller fenced it: at once after a controlled shutdown, or broker.session.timeout.ms
        # (9 s) after a broker that had to be killed.
        fresh = admin(cluster.bootstrap_servers)  # referenced until the answer is in (else destroyed: _DESTROY)
        try:
            nodes = fresh.describe_cluster(request_timeout=5).result(timeout=10).nodes
            seen.append({n.id for n in nodes})
        except KafkaException as e:
            seen.append(str(e))
        return seen[-1] if isinstance(seen[-1], set) else None

    try:
        assert_eventually(lambda: registered() == {0, 1}, message="broker 2 is still registered")
    except AssertionError as e:
        raise AssertionError(f"{e}; the last answers: {seen[-5:]}") from None
    assert len(consume_all(cluster.bootstrap_servers, topic)) == 30  # leaders moved
    up = restart_cluster(down, "racked")
    assert all(b.pid for b in up.clusters["racked"].brokers)
    assert_eventually(lambda: registered() == {0, 1, 2}, message="broker 2 did not register again")
    with pytest.raises(LocalClusterError, match="no broker 7"):
        stop_broker(up, "racked", 7)


def test_stop_and_restart_one_cluster(own_base_dir: Path) -> None:
    clusters = start_clusters(["left", "right"], base_dir=own_base_dir)
    topic = unique_name("local-outage")
    create_topic(clusters.bootstrap("left"), topic)
    produce(clusters.bootstrap("left"), topic, [{"value": b"before"}])
    left = clusters.clusters["left"].brokers[0]

    down = stop_cluster(clusters, "left")
    assert down.clusters["left"].brokers[0].pid == 0
    assert not pid_running(left.pid) and not port_open(left.port)
    assert load_clusters(own_base_dir) == down
    # the other cluster is unaffected
    create_topic(clusters.bootstrap("right"), topic)
    produce(clusters.bootstrap("right"), topic, [{"value": b"during"}])
    assert [r["value"] for r in consume_all(clusters.bootstrap("right"), topic)] == [b"during"]
    assert cluster_id_of(clusters.bootstrap("right")) == clusters.clusters["right"].cluster_id

    up = restart_cluster(down, "left")
    restarted = up.clusters["left"].brokers[0]
    assert restarted.pid not in (0, left.pid)
    assert restarted.port == left.port
    assert up.clusters["left"].cluster_id == clusters.clusters["left"].cluster_id
    assert cluster_id_of(up.bootstrap("left")) == clusters.clusters["left"].cluster_id
    assert [r["value"] for r in consume_all(up.bootstrap("left"), topic)] == [b"before"]
    assert load_clusters(own_base_dir) == up
    assert sorted(stop_clusters(own_base_dir)) == ["left", "right"]


def test_a_broker_that_cannot_start_is_reported_with_its_log(own_base_dir: Path) -> None:
    with pytest.raises(LocalClusterError, match=r"failed|exited during start-up|not ready") as info:
        start_clusters(
            ["broken"],
            base_dir=own_base_dir,
            extra_broker_props={"num.io.threads": "not-a-number"},
            timeout_s=60,
        )
    assert "num.io.threads" in str(info.value)
    assert not (own_base_dir / STATE_FILE).exists()


def test_sasl_plain_cluster(own_base_dir: Path) -> None:
    clusters = start_clusters(
        ["secure"], base_dir=own_base_dir, security="sasl_plain", sasl_users={"alice": "alice-secret"}
    )
    cluster = clusters.clusters["secure"]
    assert set(cluster.sasl_users) == {"admin", "alice"}
    assert "alice-secret" not in repr(cluster)
    topic = unique_name("local-sasl")
    create_topic(cluster.client_config(), topic)
    produce(cluster.client_config(), topic, [{"value": b"secret"}])
    assert [r["value"] for r in consume_all(cluster.client_config(), topic)] == [b"secret"]
    assert clusters.to_json()["secure"]["security.protocol"] == "SASL_PLAINTEXT"
    props = parse_properties(clusters.mm2_properties())
    assert props["secure.security.protocol"] == "SASL_PLAINTEXT"
    assert 'username="admin"' in props["secure.sasl.jaas.config"]

    # alice authenticates but, with no ACLs, is not authorized to read the topic.
    alice = AdminClient({**cluster.client_config("alice"), "log_level": 0})
    assert topic not in alice.list_topics(timeout=10).topics
    # a wrong password is rejected (librdkafka reports it through error_cb)
    errors: list[KafkaError] = []
    wrong_config: dict[str, Any] = {**cluster.client_config("alice"), "sasl.password": "nope"}
    wrong = AdminClient({**wrong_config, "log_level": 0, "error_cb": errors.append})  # type: ignore[dict-item]

    def authentication_failed() -> bool:
        with contextlib.suppress(KafkaException):
            wrong.list_topics(timeout=0.5)
        wrong.poll(0.1)  # serves error_cb
        return any(e.code() == KafkaError._AUTHENTICATION for e in errors)

    assert_eventually(authentication_failed, timeout_s=15, message="a wrong password was not rejected")


# --- validation (no JVM) -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("aliases", "kwargs", "match"),
    [
        ([], {}, "no cluster aliases"),
        (["a", "a"], {}, "duplicate"),
        (["a b"], {}, "invalid cluster alias"),
        (["a.b"], {}, "invalid cluster alias"),
        ("primary", {}, "sequence"),
        (["a"], {"brokers": 0}, "between 1 and 3"),
        (["a"], {"brokers": 4}, "between 1 and 3"),
        (["a"], {"brokers": 2, "racks": ["r1"]}, "one rack per broker"),
        (["a"], {"extra_broker_props": {"listeners": "PLAINTEXT://:9092"}}, "cannot set listeners"),
        (["a"], {"extra_broker_props": {"broker.rack": "x"}}, "cannot set broker.rack"),
        (["a"], {"sasl_users": {"bob": "pw"}}, "sasl_plain"),
        (["a"], {"security": "sasl_plain", "sasl_users": {"bob": 'p"w'}}, "invalid password"),
        (["a"], {"security": "tls"}, "unknown security"),
    ],
)
def test_invalid_arguments_are_refused(
    tmp_path: Path, aliases: list[str], kwargs: dict[str, object], match: str
) -> None:
    with pytest.raises(LocalClusterError, match=match):
        start_clusters(aliases, base_dir=tmp_path, **kwargs)  # type: ignore[arg-type]
    assert not (tmp_path / STATE_FILE).exists()


def test_a_foreign_directory_is_not_deleted(tmp_path: Path) -> None:
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "precious.txt").write_text("keep me")
    with pytest.raises(LocalClusterError, match="not a local cluster directory"):
        start_clusters(["mine"], base_dir=tmp_path)
    assert (tmp_path / "mine" / "precious.txt").read_text() == "keep me"


def test_jar_dirs_and_java(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    kafka = jar_dir("kafka")
    assert any(kafka.glob("kafka_2.13-*.jar"))
    assert classpath("kafka") == f"{kafka}{os.sep}*"
    assert Path(java_executable()).is_file()
    with pytest.raises(LocalClusterError, match="unknown jar set"):
        jar_dir("flink")

    monkeypatch.setenv(JARS_DIR_ENV, str(tmp_path))
    with pytest.raises(LocalClusterError, match="make install"):
        jar_dir("kafka")
    (tmp_path / "mm2").mkdir()
    with pytest.raises(LocalClusterError, match="make install"):
        jar_dir("mm2")  # empty
    (tmp_path / "mm2" / "x.jar").write_bytes(b"")
    assert jar_dir("mm2") == (tmp_path / "mm2").resolve()

    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "nojdk"))
    with pytest.raises(LocalClusterError, match="JAVA_HOME"):
        java_executable()


def test_local_broker_paths() -> None:
    broker = LocalBroker(node_id=0, port=1, controller_port=2, rack=None, pid=0, log_path=Path("/x/node-0/kafka.log"))
    assert broker.properties_path == Path("/x/node-0/server.properties")
    assert broker.address == "127.0.0.1:1"


def test_assert_eventually_polls_until_true_and_reports_the_last_failure() -> None:
    calls = iter(range(100))
    assert assert_eventually(lambda: next(calls) >= 3 or None, timeout_s=5, interval_s=0.001) is True

    def never() -> None:
        raise AssertionError("still 0")

    with pytest.raises(AssertionError, match=r"nope.*still 0"):
        assert_eventually(never, timeout_s=0.05, interval_s=0.01, message="nope")
