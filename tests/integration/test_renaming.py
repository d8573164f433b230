"""Renaming rules on real clusters: data, topic configs, checkpoints and a failover land on the renamed topics.

One run of ``primary->backup`` with ``topic.rename.format = ${topic}.dr`` and a regex rule for the orders
topics, plus a ``RegexRouter`` that would put two source topics on one remote topic: the collision is refused
naming both, before anything of them is written, and the rest of the flow runs. (ACL sync names the renamed
topic through the same policy; the local clusters have no authorizer, so tests/unit/test_rename_rules.py checks it.)
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from confluent_kafka import ConsumerGroupTopicPartitions
from confluent_kafka.admin import ConfigResource, ResourceType
from helpers import admin, consume_all, create_topic, produce, unique_name
from helpers import commit_offsets as commit
from pyspark.sql import SparkSession

from mirrorspark.config.parse import parse_config
from mirrorspark.config.properties import parse_properties
from mirrorspark.kafka.local.model import LocalClusters
from mirrorspark.mm2.records import Checkpoint
from mirrorspark.replication.driver import Replicator

pytestmark = [pytest.mark.integration, pytest.mark.spark]

RECORDS = 60  # per partition


@dataclass(frozen=True)
class Run:
    """What the module's one run left behind."""

    props: Path
    primary: str
    backup: str
    prefix: str
    orders: str  # <prefix>.orders.eu on primary, 2 partitions
    pay: str  # <prefix>.pay on primary, retention.ms set
    group: str
    committed: dict[tuple[str, int], int]
    errors: list[str]

    @property
    def orders_remote(self) -> str:
        return f"{self.prefix}-dr-orders-eu.replica"

    @property
    def pay_remote(self) -> str:
        return f"{self.pay}.dr"


class _Errors(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


@pytest.fixture(scope="module")
def run(local_clusters: LocalClusters, spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Run]:
    p, b = local_clusters.bootstrap("primary"), local_clusters.bootstrap("backup")
    prefix = unique_name("ren")
    orders, pay = f"{prefix}.orders.eu", f"{prefix}.pay"
    create_topic(p, orders, partitions=2)
    create_topic(p, pay, config={"retention.ms": "86400123"})
    for name in (f"{prefix}.m1", f"{prefix}.m2"):
        create_topic(p, name)
        produce(p, name, [{"value": b"m"}])
    produce(p, orders, [{"value": f"o{i}".encode(), "partition": i % 2} for i in range(2 * RECORDS)])
    produce(p, pay, [{"value": f"p{i}".encode()} for i in range(RECORDS)])
    group = f"{prefix}-group"
    committed = {(orders, 0): 25, (orders, 1): 40, (pay, 0): 33}
    commit(p, group, committed)
    text = local_clusters.mm2_properties(
        [("primary", "backup")],
        extra={
            "topics": f"{prefix}[.].*",
            "groups": f"{prefix}-.*",
            "topic.rename.format": "${topic}.dr",
            "topic.rename.rules": "orders",
            "topic.rename.rules.orders.regex": f"^{prefix}\\.orders\\.(.*)$",
            "topic.rename.rules.orders.replacement": f"{prefix}-dr-orders-$1.replica",
            "transforms": "merge",
            "transforms.merge.type": "org.apache.kafka.connect.transforms.RegexRouter",
            "transforms.merge.regex": f"{prefix}[.]m[12][.]dr",
            "transforms.merge.replacement": f"{prefix}.merged",
            "refresh.topics.interval.seconds": "1",
            "refresh.groups.interval.seconds": "1",
            "emit.checkpoints.interval.seconds": "1",
            "emit.heartbeats.interval.seconds": "1",
            "sync.group.offsets.enabled": "false",
        },
    )
    props = tmp_path_factory.mktemp("renaming") / "mm2.properties"
    props.write_text(text)
    handler = _Errors()
    logging.getLogger("mirrorspark").addHandler(handler)
    try:
        Replicator(parse_config(parse_properties(text)), spark).run(until_caught_up=True)
    finally:
        logging.getLogger("mirrorspark").removeHandler(handler)
    yield Run(props, p, b, prefix, orders, pay, group, committed, handler.messages)


def topics_of(bootstrap: str) -> set[str]:
    return set(admin(bootstrap).list_topics(timeout=30).topics)


def test_records_and_configs_land_on_the_renamed_topics(run: Run) -> None:
    on_backup = topics_of(run.backup)
    assert {run.orders_remote, run.pay_remote} <= on_backup
    assert not {t for t in on_backup if run.prefix in t and t.startswith("primary.")}  # no alias-prefixed copy
    for part in (0, 1):
        src = [r["value"] for r in consume_all(run.primary, run.orders) if r["partition"] == part]
        assert [r["value"] for r in consume_all(run.backup, run.orders_remote) if r["partition"] == part] == src
    assert [r["value"] for r in consume_all(run.backup, run.pay_remote)] == [f"p{i}".encode() for i in range(RECORDS)]
    resource = ConfigResource(ResourceType.TOPIC, run.pay_remote)
    a = admin(run.backup)  # kept until the future completes
    configs = a.describe_configs([resource])[resource].result(30)
    assert configs["retention.ms"].value == "86400123"


def test_two_topics_on_one_remote_topic_are_refused_naming_both(run: Run) -> None:
    assert f"{run.prefix}.merged" not in topics_of(run.backup)
    assert any(f"'{run.prefix}.m1' and '{run.prefix}.m2'" in m and f"{run.prefix}.merged" in m for m in run.errors), (
        run.errors
    )


def test_checkpoints_name_the_renamed_topics(run: Run) -> None:
    latest: dict[tuple[str, int], Checkpoint] = {}
    for r in consume_all(run.backup, "primary.checkpoints.internal"):
        cp = Checkpoint.decode(r["key"], r["value"])
        if cp.consumer_group_id == run.group:
            latest[(cp.topic, cp.partition)] = cp
    assert {k: cp.upstream_offset for k, cp in latest.items()} == {
        (run.orders_remote, 0): 25,
        (run.orders_remote, 1): 40,
        (run.pay_remote, 0): 33,
    }


def test_failover_commits_the_group_on_the_renamed_topics(run: Run) -> None:
    args = ["failover", "--source", "primary", "--target", "backup", "--group", run.group, "--config", str(run.props)]
    plan = subprocess.run(
        [sys.executable, "-m", "mirrorspark", *args, "--dry-run", "--json"], capture_output=True, text=True, timeout=120
    )
    assert plan.returncode == 0, plan.stderr
    assert {(o["topic"], o["partition"]) for o in json.loads(plan.stdout)["offsets"]} == {
        (run.orders_remote, 0),
        (run.orders_remote, 1),
        (run.pay_remote, 0),
    }
    done = subprocess.run(
        [sys.executable, "-m", "mirrorspark", *args, "--execute"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    a = admin(run.backup)
    res = a.list_consumer_group_offsets([ConsumerGroupTopicPartitions(run.group)])[run.group].result(30)
    got = {(tp.topic, tp.partition): tp.offset for tp in res.topic_partitions if tp.offset >= 0}
    assert got == {(run.orders_remote, 0): 25, (run.orders_remote, 1): 40, (run.pay_remote, 0): 33}
