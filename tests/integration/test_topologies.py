"""Replication topologies with three real clusters: circle, fan-in, fan-out, identity loops.

The session's ``primary`` and ``backup`` clusters plus a ``third`` one started for this
module; the aliases in the configs are the cluster names (``A``, ``B``, ``C`` below), so MM2
names stay consistent with the other test modules that share the session clusters.
Every test replicates its own uniquely named topics (``topics=`` filter) with in-process
:class:`~mirrorspark.replication.driver.Replicator` passes (``run(until_caught_up=True)``): one pass moves
a record one hop, so a topology needs as many passes as its longest path, plus one to show
that nothing more is copied.

Active/active between two clusters (different topics on each side) is also covered by
``test_replication.py::test_two_flows_both_ways_never_loop``; here both sides write the
same topic name.
"""

from __future__ import annotations

import atexit
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from helpers import admin, consume_all, create_topic, produce, unique_name
from pyspark.sql import SparkSession

from copy_check import assert_copy
from mirrorspark.config.model import MirrorConfig
from mirrorspark.config.parse import parse_config
from mirrorspark.config.properties import parse_properties
from mirrorspark.errors import ConfigError
from mirrorspark.kafka.local.clusters import start_clusters, stop_clusters
from mirrorspark.kafka.local.model import LocalClusters
from mirrorspark.replication.driver import FlowStats, Replicator

pytestmark = [pytest.mark.integration, pytest.mark.spark]

A, B, C = "primary", "backup", "third"
IDENTITY = "org.apache.kafka.connect.mirror.IdentityReplicationPolicy"


@pytest.fixture(scope="module")
def clusters(local_clusters: LocalClusters, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """Bootstrap servers of A (primary), B (backup) and C (third, started for this module)."""
    base_dir = tmp_path_factory.mktemp("third-cluster")

    def stop() -> None:
        stop_clusters(base_dir)

    atexit.register(stop)  # safety net if the session dies before the teardown (idempotent)
    try:
        third = start_clusters([C], base_dir=base_dir, brokers=1)
        yield {A: local_clusters.bootstrap(A), B: local_clusters.bootstrap(B), C: third.bootstrap(C)}
    finally:
        stop()
        atexit.unregister(stop)


def properties(boot: Mapping[str, str], flows: list[tuple[str, str]], **extra: str) -> str:
    """mm2.properties text for the three clusters: the flows enabled, fast intervals, RF 1."""
    props = {
        "clusters": ", ".join(boot),
        **{f"{alias}.bootstrap.servers": servers for alias, servers in boot.items()},
        **{f"{s}->{t}.enabled": "true" for s, t in flows},
        "refresh.topics.interval.seconds": "1",
        "emit.heartbeats.interval.seconds": "1",
        "tasks.max": "2",
        "offset.lag.max": "10",
        **{
            key: "1"
            for key in (
                "replication.factor",
                "offset-syncs.topic.replication.factor",
                "heartbeats.topic.replication.factor",
                "checkpoints.topic.replication.factor",
                "offset.storage.replication.factor",
                "config.storage.replication.factor",
                "status.storage.replication.factor",
            )
        },
        **extra,
    }
    return "".join(f"{k} = {v}\n" for k, v in props.items())


def config(boot: Mapping[str, str], flows: list[tuple[str, str]], **extra: str) -> MirrorConfig:
    return parse_config(parse_properties(properties(boot, flows, **extra)))


def one_pass(cfg: MirrorConfig, spark: SparkSession) -> list[FlowStats]:
    """One Replicator run until caught up with the end offsets seen at its start."""
    return Replicator(cfg, spark).run(until_caught_up=True)


def copied(stats: list[FlowStats], needle: str) -> dict[str, int]:
    """Records copied per flow and source topic, for topics containing ``needle`` (no heartbeats)."""
    return {f"{f.flow}:{t.topic}": t.records for f in stats for t in f.topics if needle in t.topic and t.records}


def topics_with(boot: str, needle: str) -> set[str]:
    return {t for t in admin(boot).list_topics(timeout=30).topics if needle in t}


def values(boot: str, topic: str) -> list[bytes | None]:
    return [r["value"] for r in consume_all(boot, topic)]


def by_partition(records: list[dict[str, Any]]) -> dict[int, list[bytes | None]]:
    out: dict[int, list[bytes | None]] = {}
    for r in records:
        out.setdefault(r["partition"], []).append(r["value"])
    return out


def partitions(boot: str, topic: str) -> int:
    return len(admin(boot).list_topics(timeout=30).topics[topic].partitions)


# ---------------------------------------------------------------------------------- active/active


def test_active_active_same_topic_on_both_sides(clusters: dict[str, str], spark: SparkSession) -> None:
    """A<->B, both sides write `t`: each side's records reach the other once, as `<other>.t`; nothing loops."""
    t = unique_name("aa")
    for alias in (A, B):
        create_topic(clusters[alias], t, partitions=2)
        produce(clusters[alias], t, [{"value": f"{alias}-{i}".encode(), "partition": i % 2} for i in range(20)])
    cfg = config(clusters, [(A, B), (B, A)], topics=f".*{t}")
    first = one_pass(cfg, spark)
    assert copied(first, t) == {f"{A}->{B}:{t}": 20, f"{B}->{A}:{t}": 20}
    second = one_pass(cfg, spark)  # sees the remote topics and must not copy them back
    assert copied(second, t) == {}
    for here, other in ((A, B), (B, A)):
        assert topics_with(clusters[here], t) == {t, f"{other}.{t}"}
        assert_copy(consume_all(clusters[other], t), consume_all(clusters[here], f"{other}.{t}"))
        assert len(values(clusters[here], t)) == 20  # the local topic got nothing


# ---------------------------------------------------------------------------------- circle


def test_circle_of_three_reaches_every_cluster_once(clusters: dict[str, str], spark: SparkSession) -> None:
    """SRM's replication circle A->B->C->A: every record reaches every cluster exactly once, with
    multi-hop names (`A.t` on B, `B.A.t` on C); `C.B.A.t` never appears on A."""
    t = unique_name("circle")
    for alias in (A, B, C):
        create_topic(clusters[alias], t, partitions=2)
        produce(clusters[alias], t, [{"value": f"{alias}-{i}".encode(), "partition": i % 2} for i in range(10)])
    cfg = config(clusters, [(A, B), (B, C), (C, A)], topics=f".*{t}")
    one_pass(cfg, spark)  # first hop
    one_pass(cfg, spark)  # second hop
    last = one_pass(cfg, spark)  # nothing left to copy
    assert copied(last, t) == {}

    expected = {
        # cluster: {remote topic: the cluster its records were written to}
        A: {f"{C}.{t}": C, f"{C}.{B}.{t}": B},
        B: {f"{A}.{t}": A, f"{A}.{C}.{t}": C},
        C: {f"{B}.{t}": B, f"{B}.{A}.{t}": A},
    }
    originals = {alias: consume_all(clusters[alias], t) for alias in (A, B, C)}
    for alias, remotes in expected.items():
        assert topics_with(clusters[alias], t) == {t, *remotes}
        assert len(originals[alias]) == 10  # nothing came back into the local topic
        for remote, origin in remotes.items():
            assert_copy(originals[origin], consume_all(clusters[alias], remote), what=remote)
    # every record is on every cluster exactly once
    for alias in (A, B, C):
        everything = sorted(
            v or b"" for topic in topics_with(clusters[alias], t) for v in values(clusters[alias], topic)
        )
        assert everything == sorted(f"{o}-{i}".encode() for o in (A, B, C) for i in range(10))


# ---------------------------------------------------------------------------------- fan-in


def test_fan_in_default_policy_keeps_sources_apart(clusters: dict[str, str], spark: SparkSession) -> None:
    """A->C and B->C: `A.t` and `B.t` side by side on C, each with its own records."""
    t = unique_name("fanin")
    create_topic(clusters[A], t, partitions=2)
    create_topic(clusters[B], t, partitions=3)
    produce(clusters[A], t, [{"value": f"a{i}".encode(), "partition": i % 2} for i in range(10)])
    produce(clusters[B], t, [{"value": f"b{i}".encode(), "partition": i % 3} for i in range(12)])
    cfg = config(clusters, [(A, C), (B, C)], topics=t)
    one_pass(cfg, spark)
    assert topics_with(clusters[C], t) == {f"{A}.{t}", f"{B}.{t}"}
    for source in (A, B):
        assert_copy(consume_all(clusters[source], t), consume_all(clusters[C], f"{source}.{t}"))
        assert partitions(clusters[C], f"{source}.{t}") == partitions(clusters[source], t)


def test_fan_in_identity_policy_merges_into_one_topic(clusters: dict[str, str], spark: SparkSession) -> None:
    """A->C and B->C with IdentityReplicationPolicy: one `t` on C with both sides' records, each
    source's order per partition kept (same partition counts on both sources)."""
    t = unique_name("merge")
    for alias in (A, B):
        create_topic(clusters[alias], t, partitions=2)
        produce(clusters[alias], t, [{"value": f"{alias}-{i}".encode(), "partition": i % 2} for i in range(30)])
    cfg = config(clusters, [(A, C), (B, C)], topics=t, **{"replication.policy.class": IDENTITY})
    stats = one_pass(cfg, spark)
    assert copied(stats, t) == {f"{A}->{C}:{t}": 30, f"{B}->{C}:{t}": 30}
    assert topics_with(clusters[C], t) == {t}
    assert partitions(clusters[C], t) == 2
    merged = by_partition(consume_all(clusters[C], t))
    for alias in (A, B):
        mine = {p: [v for v in vs if v is not None and v.startswith(f"{alias}-".encode())] for p, vs in merged.items()}
        assert mine == by_partition(consume_all(clusters[alias], t))
    assert sum(len(vs) for vs in merged.values()) == 60


# ---------------------------------------------------------------------------------- identity loops


def test_identity_loop_is_refused_unless_opted_in(
    clusters: dict[str, str], spark: SparkSession, tmp_path: Path
) -> None:
    """A->B and B->A with IdentityReplicationPolicy would copy `t` round forever: refused (exit 2
    from the CLI); with the opt-in key and topic filters that never match a replicated topic it runs."""
    x, y = unique_name("idloop-x"), unique_name("idloop-y")
    identity = {"replication.policy.class": IDENTITY}
    text = properties(clusters, [(A, B), (B, A)], topics=f"{x}|{y}", **identity)
    with pytest.raises(ConfigError) as e:
        Replicator(parse_config(parse_properties(text)), spark)
    assert f"flows {A}->{B}, {B}->{A} form a replication cycle" in str(e.value)
    # one identity flow in the cycle is enough: `t` of A would come back to A as `B.t`, `B.B.t`, ...
    mixed = properties(
        clusters, [(A, B), (B, A)], topics=f"{x}|{y}", **{f"{A}->{B}.replication.policy.class": IDENTITY}
    )
    with pytest.raises(ConfigError, match=f"and {A}->{B} keeps topic names"):
        Replicator(parse_config(parse_properties(mixed)), spark)

    path = tmp_path / "mm2.properties"
    path.write_text(text)
    r = subprocess.run(
        [sys.executable, "-m", "mirrorspark", "run", str(path), "--until-caught-up", "--quiet"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 2, r.stderr
    assert "[CONFIG_INVALID]" in r.stderr
    assert f"{A}->{B}, {B}->{A} form a replication cycle" in r.stderr
    assert "DefaultReplicationPolicy" in r.stderr
    assert "mirrorspark.identity.allow.cycles = true" in r.stderr
    assert "Traceback" not in r.stderr

    # opted in, with each flow copying only its own side's topic: x from A to B, y from B to A
    create_topic(clusters[A], x)
    create_topic(clusters[B], y)
    produce(clusters[A], x, [{"value": b"x1"}])
    produce(clusters[B], y, [{"value": b"y1"}])
    cfg = config(
        clusters,
        [(A, B), (B, A)],
        **identity,
        **{f"{A}->{B}.topics": x, f"{B}->{A}.topics": y, "mirrorspark.identity.allow.cycles": "true"},
    )
    one_pass(cfg, spark)
    again = one_pass(cfg, spark)
    assert copied(again, "idloop") == {}
    for alias in (A, B):
        assert values(clusters[alias], x) == [b"x1"]
        assert values(clusters[alias], y) == [b"y1"]


# ---------------------------------------------------------------------------------- fan-out


def test_fan_out_from_one_replicator(clusters: dict[str, str], spark: SparkSession) -> None:
    """A->B and A->C in one Replicator (one `mirrorspark run`): `A.t` on both targets."""
    t = unique_name("fanout")
    create_topic(clusters[A], t, partitions=3)
    produce(clusters[A], t, [{"key": f"k{i}".encode(), "value": f"v{i}".encode()} for i in range(40)])
    cfg = config(clusters, [(A, B), (A, C)], topics=t)
    r = Replicator(cfg, spark)
    stats = r.run(until_caught_up=True)
    assert [f.flow for f in stats] == [f"{A}->{B}", f"{A}->{C}"]
    assert copied(stats, t) == {f"{A}->{B}:{t}": 40, f"{A}->{C}:{t}": 40}
    source = consume_all(clusters[A], t)
    for target in (B, C):
        assert topics_with(clusters[target], t) == {f"{A}.{t}"}
        assert [(x["partition"], x["key"], x["value"]) for x in consume_all(clusters[target], f"{A}.{t}")] == [
            (x["partition"], x["key"], x["value"]) for x in source
        ]
