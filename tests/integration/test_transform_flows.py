"""Single Message Transforms on real brokers and real Spark: each transform and predicate, RegexRouter's
effect on remote topics, checkpoints and cycles, a refused transform, a user transform, and what dropped
records do to source offsets, ``status`` and a consumer failing over.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from helpers import consume_all, create_topic, end_offsets, produce, unique_name
from pyspark.sql import SparkSession
from test_checkpoints import checkpoints, commit, config, read_from, replicate
from test_replication import topics_of
from verify_check import summary, verify_now

from mirrorspark.client.status import status
from mirrorspark.errors import ConfigError
from mirrorspark.kafka.local.model import LocalClusters
from mirrorspark.mm2.connect_offsets import decode_source_offset

pytestmark = [pytest.mark.integration, pytest.mark.spark]

T = "org.apache.kafka.connect.transforms."
P = "org.apache.kafka.connect.transforms.predicates."


def flow_keys(flow: str, **keys: str) -> dict[str, str]:
    """``{flow}.<key>`` for each key (MM2's per-flow form, the one MM2 itself honours)."""
    return {f"{flow}.{k.replace('__', '.')}": v for k, v in keys.items()}


def chain_keys(orders: str) -> dict[str, str]:
    """Every built-in transform and predicate, per flow primary->backup (MM2's form).

    * ``dropDebug``: Filter where HasHeaderKey ``debug``;
    * ``dropTombs``: Filter where RecordIsTombstone;
    * ``tag``: InsertHeader ``via: mirrorspark`` where TopicNameMatches the remote ``orders`` topic;
    * ``strip``: DropHeaders ``secret`` where the topic is *not* the remote ``orders`` (negate).
    """
    return flow_keys(
        "primary->backup",
        transforms="dropDebug, dropTombs, tag, strip",
        transforms__dropDebug__type=T + "Filter",
        transforms__dropDebug__predicate="hasDebug",
        transforms__dropTombs__type=T + "Filter",
        transforms__dropTombs__predicate="isTomb",
        transforms__tag__type=T + "InsertHeader",
        transforms__tag__header="via",
        transforms__tag__value__literal="mirrorspark",
        transforms__tag__predicate="isOrders",
        transforms__strip__type=T + "DropHeaders",
        transforms__strip__headers="secret",
        transforms__strip__predicate="isOrders",
        transforms__strip__negate="true",
        predicates="hasDebug, isTomb, isOrders",
        predicates__hasDebug__type=P + "HasHeaderKey",
        predicates__hasDebug__name="debug",
        predicates__isTomb__type=P + "RecordIsTombstone",
        predicates__isOrders__type=P + "TopicNameMatches",
        predicates__isOrders__pattern=f"primary\\.{orders}",
    )


def source_record(i: int) -> dict[str, Any]:
    """Record ``i``: every 3rd has a ``debug`` header, every 5th is a tombstone, every 2nd a ``secret`` header."""
    headers = [("n", str(i).encode())]
    if i % 2 == 0:
        headers.append(("secret", b"s"))
    if i % 3 == 0:
        headers.append(("debug", None))
    return {"key": f"k{i}".encode(), "value": None if i % 5 == 0 else f"v{i}".encode(), "headers": headers}


def want(*, orders: bool, start: int = 0) -> list[tuple[Any, ...]]:
    """What the chain makes of records ``start..59`` on the orders topic or the other one (drops left out)."""
    out = []
    for i in range(start, 60):
        r = source_record(i)
        if i % 3 == 0 or r["value"] is None:  # dropDebug, dropTombs
            continue
        headers = list(r["headers"])
        if orders:
            headers.append(("via", b"mirrorspark"))  # tag
        else:
            headers = [h for h in headers if h[0] != "secret"]  # strip
        out.append((r["key"], r["value"], tuple(headers)))
    return out


def seen(records: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return [(r["key"], r["value"], tuple((k, v) for k, v in r["headers"])) for r in records]


def committed_positions(bootstrap: str, source: str) -> dict[tuple[str, int], int]:
    """The flow's committed source positions from ``mm2-offsets.<source>.internal`` (Connect's layout)."""
    out: dict[tuple[str, int], int] = {}
    for r in consume_all(bootstrap, f"mm2-offsets.{source}.internal"):
        so = decode_source_offset(r["key"], r["value"])
        if so is not None and so.cluster == source and so.offset is not None:
            out[(so.topic, so.partition)] = so.offset + 1
    return out


def test_each_transform_and_predicate_and_drop_accounting(local_clusters: LocalClusters, spark: SparkSession) -> None:
    p, b = local_clusters.bootstrap("primary"), local_clusters.bootstrap("backup")
    orders, other = unique_name("smt-orders"), unique_name("smt-other")
    for t in (orders, other):
        create_topic(p, t, partitions=1)
        produce(p, t, [source_record(i) for i in range(60)])  # 59 % 3 != 0, 60 is the end
        produce(p, t, [{"key": b"last", "value": b"x", "headers": [("debug", b"1")]}])  # a dropped tail record
    group = unique_name("smt-group")
    consumed = {(orders, 0): 30, (other, 0): 31}  # 30 is a dropped record (debug), 31 is copied
    commit(p, group, consumed)
    cfg = config(
        local_clusters,
        [("primary", "backup")],
        topics=f"{orders}|{other}",
        **chain_keys(orders),
    )
    replicate(cfg, spark)

    assert seen(consume_all(b, f"primary.{orders}")) == want(orders=True)
    assert seen(consume_all(b, f"primary.{other}")) == want(orders=False)

    # Dropped records advance the committed source position: to the end, dropped tail included.
    ends = {(t, 0): end_offsets(p, t)[0][1] for t in (orders, other)}
    assert ends == {(orders, 0): 61, (other, 0): 61}
    positions = committed_positions(b, "primary")
    assert {k: positions[k] for k in ends} == ends

    # Counted: 20 debug + 8 tombstones without debug + the tail record, per topic, in status.
    dropped = sum(1 for i in range(60) if i % 3 == 0 or i % 5 == 0) + 1
    [fs] = status(cfg)[0]
    by_topic = {t.topic: t.dropped_records for t in fs.topics}
    assert by_topic[orders] == dropped and by_topic[other] == dropped

    # A consumer failing over from its checkpoint reads every copy of a record it had not consumed,
    # whether its committed offset points at a dropped record (30) or a copied one (31).
    cps = checkpoints(b, "primary.checkpoints.internal", group)
    for t, is_orders in ((orders, True), (other, False)):
        cp = cps[(f"primary.{t}", 0)]
        assert cp.upstream_offset == consumed[(t, 0)]
        remaining = want(orders=is_orders, start=consumed[(t, 0)])
        on_target = seen([r for r in consume_all(b, f"primary.{t}") if r["offset"] >= cp.downstream_offset])
        assert on_target[len(on_target) - len(remaining) :] == remaining, "a record was skipped"
        assert len(on_target) - len(remaining) == 0  # and exactly: nothing read again

    # Verify compares each source record after the flow's transforms (#42): every copy verified, every dropped
    # record skipped (not missing), although the chain added, removed and kept headers record by record. From the
    # epoch on (--since): the default window starts at the first copy (offset 1), after dropped record 0; and the
    # dropped tail record (60) leaves no segment, so it is read as an edge and skipped, not unverified.
    parts = verify_now(spark, cfg, "primary", "backup", f"{orders}|{other}", since_ms=0)
    verified, skipped, gap_offsets, unverified, found = summary(parts)
    copies = len(want(orders=True)) + len(want(orders=False))
    assert (verified, skipped, gap_offsets, unverified, found) == (copies, 2 * dropped, 0, 0, [])


def test_regex_router_renames_remote_topics_and_checkpoints_follow(
    local_clusters: LocalClusters, spark: SparkSession
) -> None:
    """RegexRouter names the remote topic: created, written and checkpointed under the routed name."""
    p, b = local_clusters.bootstrap("primary"), local_clusters.bootstrap("backup")
    topic, group = unique_name("smt-route"), unique_name("smt-route-group")
    create_topic(p, topic, partitions=2)
    produce(p, topic, [{"value": f"v{i}".encode(), "partition": i % 2} for i in range(40)])
    commit(p, group, {(topic, 0): 7, (topic, 1): 20})
    keys = flow_keys(
        "primary->backup",
        transforms="route",
        transforms__route__type=T + "RegexRouter",
        transforms__route__regex="primary\\.(.*)",
        transforms__route__replacement="mirrored-$1",
    )
    cfg = config(local_clusters, [("primary", "backup")], topics=topic, **keys)
    replicate(cfg, spark)
    routed = f"mirrored-{topic}"
    assert sorted(r["value"] for r in consume_all(b, routed)) == sorted(f"v{i}".encode() for i in range(40))
    assert f"primary.{topic}" not in topics_of(b)  # the policy's name is never created (MM2 creates it empty)
    cps = checkpoints(b, "primary.checkpoints.internal", group)
    assert set(cps) == {(routed, 0), (routed, 1)}
    for part, offset in ((0, 7), (1, 20)):
        src = read_from(p, topic, part, offset)
        assert read_from(b, routed, part, cps[(routed, part)].downstream_offset) == src
    [fs] = status(cfg)[0]
    # heartbeats are records of the flow too, renamed as MM2's transforms rename them (a predicate can spare them)
    # (other tests' remote heartbeats on the shared primary, e.g. third.heartbeats, are replicated and renamed too)
    remote_topics = {t.remote_topic for t in fs.topics}
    assert {routed, "mirrored-heartbeats"} <= remote_topics
    assert all(t.startswith("mirrored-") for t in remote_topics), remote_topics

    # Cycle detection: a router that strips the source alias makes the flow keep names, so with the
    # reverse flow the records would come back: refused when the configuration is loaded, before
    # anything runs (config/runnable.py), as for IdentityReplicationPolicy.
    strip = flow_keys(
        "primary->backup",
        transforms="route",
        transforms__route__type=T + "RegexRouter",
        transforms__route__regex="primary\\.(.*)",
        transforms__route__replacement="$1",
    )
    with pytest.raises(ConfigError, match="cycle"):
        config(local_clusters, [("primary", "backup"), ("backup", "primary")], topics=topic, **strip)


def test_a_refused_transform_exits_2_naming_why(local_clusters: LocalClusters, tmp_path: Path) -> None:
    props = tmp_path / "mm2.properties"
    props.write_text(
        local_clusters.mm2_properties(
            [("primary", "backup")],
            extra={"primary->backup.transforms": "cast", "primary->backup.transforms.cast.type": T + "Cast$Value"},
        )
    )
    done = subprocess.run(
        [sys.executable, "-m", "mirrorspark", "run", str(props), "--until-caught-up"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    assert "primary->backup.transforms.cast.type" in done.stderr and "byte arrays" in done.stderr


USER_TRANSFORM = '''
"""A user transform for mirrorspark: JSON values get a field, records with value b"skip" are dropped."""
import json
from dataclasses import replace


class Stamp:
    field = "stamp"

    def configure(self, props):
        self.field = props.get("field", self.field)

    def apply(self, record):
        if record.value == b"skip":
            return None
        doc = json.loads(record.value)
        doc[self.field] = record.topic
        return replace(record, value=json.dumps(doc, sort_keys=True).encode())
'''


def test_a_user_transform_runs_on_the_executors(
    local_clusters: LocalClusters, spark: SparkSession, tmp_path: Path
) -> None:
    module = unique_name("smt_user").replace("-", "_")
    path = tmp_path / f"{module}.py"
    path.write_text(textwrap.dedent(USER_TRANSFORM))
    sys.path.insert(0, str(tmp_path))  # the driver loads it at start (configure), the executors unpickle it
    spark.sparkContext.addPyFile(str(path))
    try:
        p, b = local_clusters.bootstrap("primary"), local_clusters.bootstrap("backup")
        topic = unique_name("smt-user")
        create_topic(p, topic, partitions=1)
        produce(p, topic, [{"value": b"skip" if i % 4 == 0 else f'{{"i": {i}}}'.encode()} for i in range(20)])
        keys = flow_keys(
            "primary->backup",
            transforms="stamp",
            transforms__stamp__type=f"{module}:Stamp",
            transforms__stamp__field="via",
            transforms__stamp__predicate="mine",  # heartbeats go through the chain too, as in MM2
            predicates="mine",
            predicates__mine__type=P + "TopicNameMatches",
            predicates__mine__pattern=f"primary.{topic}",
        )
        cfg = config(local_clusters, [("primary", "backup")], topics=topic, **keys)
        replicate(cfg, spark)
        want = [f'{{"i": {i}, "via": "primary.{topic}"}}'.encode() for i in range(20) if i % 4]
        assert [r["value"] for r in consume_all(b, f"primary.{topic}")] == want
        [fs] = status(cfg)[0]
        assert fs.dropped_records == 5
    finally:
        sys.path.remove(str(tmp_path))
