"""One active instance, also under a partition (issue #23 item 5, ``engine-audit.md`` F5).

Only the **driver** of the active instance is cut off from the target; its copy tasks are not: the
target broker has a second listener advertised at a TCP proxy (:mod:`proxy`), the active instance's
driver reaches the target through it (``<T>.bootstrap.servers`` = the proxy) and its copy tasks
directly (``mirrorspark.executor.target.bootstrap.servers`` = the broker's own listener). A second
instance (``mirrorspark run`` as a process, every client direct) waits as a standby. The proxy then
drops every connection for the outage: the coordinator expires the active driver's lease and the
standby takes the flows over, while the old instance's tasks still reach the target.

Asserted from the clusters, in both modes at once (:mod:`faultkit`):

* **one writer at a time**: the progress reports, written in the same commit as the source offsets,
  carry the lease epoch their task was started under; per partition the epochs never go back (no
  report of the old holding after one of the new), and the new holding did report;
* ``mm2-offsets`` never moves backwards (``read_committed`` for exactly-once);
* nothing lost; no duplicate for a ``read_committed`` reader in exactly-once mode; at-least-once
  duplicates within the fault kit's bound, and within one ``offset.flush.interval.ms`` of the workload
  (plus slack: :func:`scenario.one_flush_bound`): the standby reads the positions once the old holder's
  last commit landed, and the old holder's tasks copy nothing past their last grant (``engine-audit-2.md`` N5);
* **order across the hand-over**: in each remote partition the first copies are in upstream order
  (:func:`scenario.order_breaks`): the two instances never write the same partitions at once;
* **translation never points past a copied record**: a consumer group on the source commits while
  records flow; for every checkpoint ``(upstream u, downstream d)`` either instance wrote, every
  source record at or after ``u`` has a copy at or after ``d``.
"""

from __future__ import annotations

import atexit
import threading
import time
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, TopicPartition
from faultkit import (
    FLUSH_INTERVAL_MS,
    MODES,
    PARTITIONS,
    SOURCE_ALIAS,
    TARGET_ALIAS,
    config_text,
    copy_more,
    drained,
    finish,
    remote_topic,
    restarts_by_mode,
    scenario,
    size,
)
from figures import full_size
from helpers import admin, assert_eventually, client_config, consume_all, end_offsets, unique_name
from proxy import TcpProxy, behind_proxy
from pyspark.sql import SparkSession
from scenario import RunProcess, one_flush_bound, order_breaks

from mirrorspark.core.progress_records import decode_report, record_kind
from mirrorspark.kafka.local.clusters import start_clusters, stop_clusters
from mirrorspark.kafka.local.model import LocalCluster, LocalClusters
from mirrorspark.mm2.connect_offsets import decode_source_offset
from mirrorspark.mm2.records import Checkpoint

pytestmark = [pytest.mark.integration, pytest.mark.spark, pytest.mark.timeout(1800)]

GROUP_LAG = 20
"""Records the source consumer group's committed offsets stay behind the source's end."""


@pytest.fixture(scope="module")
def clusters(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalClusters]:
    """A source and a target cluster, one broker each."""
    base_dir = tmp_path_factory.mktemp("faults-partition")

    def stop() -> None:
        stop_clusters(base_dir)

    atexit.register(stop)
    try:
        yield start_clusters(["src", "tgt"], base_dir=base_dir, brokers=1, timeout_s=300)
    finally:
        stop()
        atexit.unregister(stop)


@pytest.fixture(scope="module")
def proxied(clusters: LocalClusters) -> Iterator[tuple[LocalCluster, TcpProxy]]:
    """The target as the active driver sees it (through the proxy), and the proxy."""
    with behind_proxy(clusters, "tgt") as (target, proxy):
        yield target, proxy


class GroupCommits:
    """A consumer group on the source committing ``end - GROUP_LAG`` of every partition twice a second."""

    def __init__(self, bootstrap: str, topic: str, group: str) -> None:
        self.bootstrap, self.topic = bootstrap, topic
        self._consumer = Consumer(client_config(bootstrap, **{"group.id": group, "enable.auto.commit": False}))
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="group-commits", daemon=True)

    def __enter__(self) -> GroupCommits:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        self._thread.join(30)
        self._consumer.close()

    def _run(self) -> None:
        while not self._stop.wait(0.5):
            try:
                ends = end_offsets(self.bootstrap, self.topic, read_committed=False, timeout_s=5)
                offsets = [TopicPartition(self.topic, p, e - GROUP_LAG) for p, (_, e) in ends.items() if e > GROUP_LAG]
                if offsets:
                    self._consumer.commit(offsets=offsets, asynchronous=False)
            except Exception:  # the source is never cut here; a slow answer is tried again
                continue


def workload_sequence(value: bytes | None) -> int | None:
    """A fault kit workload value's sequence number (``<run>-<i>``: ``i``), ``None`` for any other value."""
    head, _, tail = (value or b"").rpartition(b"-")
    return int(tail) if head and tail.isdigit() else None


def lease_members(bootstrap: str, mode: str) -> int:
    """Members of the lease group of ``mode``'s flow."""
    group = f"mirrorspark-lease-{SOURCE_ALIAS[mode]}->{TARGET_ALIAS[mode]}"
    client = admin(bootstrap)  # referenced until the answer: a collected client drops its requests
    try:
        return len(client.describe_consumer_groups([group])[group].result(10).members)
    except Exception:
        return 0


def report_epochs(bootstrap: str, mode: str) -> dict[int, list[int]]:
    """``{partition: [epoch of each progress report, in channel order]}`` of ``mode``'s flow."""
    out: dict[int, list[int]] = defaultdict(list)
    for r in consume_all(bootstrap, f"mm2-task-progress.{SOURCE_ALIAS[mode]}.internal", 60):
        if record_kind(r["key"]) == "report":
            report = decode_report(r["key"], r["value"])
            out[report.partition].append(report.epoch)
    return dict(out)


def backwards_offsets(bootstrap: str, mode: str, topic: str) -> list[str]:
    """Where ``mm2-offsets`` of ``mode``'s flow moved backwards for ``topic`` (empty: never)."""
    last: dict[int, int] = {}
    back = []
    records = consume_all(bootstrap, f"mm2-offsets.{SOURCE_ALIAS[mode]}.internal", 60, read_committed=True)
    for r in records:
        so = decode_source_offset(r["key"], r["value"])
        if so is None or so.topic != topic or so.offset is None:
            continue
        if so.offset < last.get(so.partition, -1):
            back.append(f"partition {so.partition}: {last[so.partition]} -> {so.offset}")
        last[so.partition] = max(so.offset, last.get(so.partition, -1))
    return back


def skipping_checkpoints(source: str, target: str, topic: str, group: str, mode: str) -> tuple[int, list[str]]:
    """Count ``mode``'s checkpoints of ``group`` and list those pointing past a copied record."""
    upstream = {(r["partition"], r["value"]): r["offset"] for r in consume_all(source, topic, 120)}
    last_copy: dict[tuple[int, int], int] = {}  # (partition, upstream offset) -> its newest copy downstream
    for r in consume_all(target, remote_topic(mode, topic), 120, read_committed=mode == "exactly-once"):
        u = upstream.get((r["partition"], r["value"]))
        if u is not None:
            last_copy[(r["partition"], u)] = max(r["offset"], last_copy.get((r["partition"], u), -1))
    checkpoints = [
        Checkpoint.decode(r["key"], r["value"])
        for r in consume_all(target, f"{SOURCE_ALIAS[mode]}.checkpoints.internal", 60)
    ]
    ours = [c for c in checkpoints if c.consumer_group_id == group and c.topic == remote_topic(mode, topic)]
    bad = []
    for c in ours:
        skipped = [
            u
            for (p, u), d in last_copy.items()
            if p == c.partition and u >= c.upstream_offset and d < c.downstream_offset
        ]
        if skipped:
            bad.append(
                f"partition {c.partition}: {c.upstream_offset} -> {c.downstream_offset} skips "
                f"{len(skipped)} copied record(s) from upstream {min(skipped)}"
            )
    return len(ours), bad


def test_only_the_drivers_network_to_the_target_is_cut_while_a_standby_waits(
    clusters: LocalClusters, proxied: tuple[LocalCluster, TcpProxy], spark: SparkSession, tmp_path: Path
) -> None:
    (target, proxy), direct = proxied, clusters.bootstrap("tgt")
    source = clusters.cluster("src")
    outage_s = 60.0 if full_size() else 25.0  # past the session timeout, the standby's take-over and its wait
    group = unique_name("faults-group")
    extra = {
        "mirrorspark.executor.target.bootstrap.servers": direct,  # the copy tasks never go through the proxy
        "groups": group,
        "emit.checkpoints.interval.seconds": "1",
        "refresh.groups.interval.seconds": "1",
        "sync.group.offsets.enabled": "false",
    }
    with scenario(source, target, spark, prefix="faults-split", max_s=900, **extra) as (topic, work, r):
        standby_props = tmp_path / "standby.properties"
        standby_props.write_text(config_text(source, clusters.cluster("tgt"), topic, **extra))
        standby = RunProcess(standby_props, tmp_path)
        with GroupCommits(source.bootstrap_servers, topic, group):
            try:
                standby.launch()
                for mode in MODES:
                    assert_eventually(
                        lambda mode=mode: standby.check() or lease_members(direct, mode) == 2,
                        timeout_s=600,
                        interval_s=1.0,
                        message=f"the second instance never joined the lease group of {mode} as a standby",
                    )
                # its Spark started too (it joined the lease groups before building Spark): the run's
                # loop logs this once its copy tasks' worker exists
                assert_eventually(
                    lambda: standby.check() or "flow eos->eos_t: the source consumer reads" in standby.tail(20_000),
                    timeout_s=600,
                    interval_s=1.0,
                    message="the second instance's Spark never started",
                )
                first = {s.name: s.epoch for s in r.supervisors}
                assert all(first.values()), f"the first instance holds every flow's lease: {first}"
                cut = threading.Thread(target=proxy.cut, args=(outage_s,), name="driver-cut", daemon=True)
                cut_at = time.monotonic()
                cut.start()

                def taken_over(mode: str) -> bool:
                    flow = f"{SOURCE_ALIAS[mode]}->{TARGET_ALIAS[mode]}"
                    epochs = report_epochs(direct, mode)
                    return len(epochs) == PARTITIONS and all(max(e) > first[flow] for e in epochs.values())

                for mode in MODES:  # assigned during the cut; its Spark tasks may start slowly on a loaded machine
                    assert_eventually(
                        lambda mode=mode: standby.check() or taken_over(mode),
                        timeout_s=outage_s + 240,
                        interval_s=0.5,
                        message=f"the standby did not take {mode}'s flow over:\n{standby.tail()}",
                    )
                took_over_s = round(time.monotonic() - cut_at, 1)
                cut.join(outage_s + 30)
                assert_eventually(
                    lambda: all(s.state == "standby" for s in r.supervisors),
                    timeout_s=180,
                    message="the cut-off instance did not go back to standby",
                )
                copy_more(direct, topic, int(size().rate * size().settle_s))
                expected = work.stop()
                outcomes = drained(direct, topic, expected)
                restarts = restarts_by_mode(r)
            finally:
                code = standby.stop()
    assert code == 0, f"the second instance did not stop cleanly ({code}):\n{standby.tail()}"
    failures = []
    checkpoints = {}
    for mode in MODES:
        for partition, epochs in report_epochs(direct, mode).items():
            if epochs != sorted(epochs):
                failures.append(f"{mode}: partition {partition} has reports of an older holding after a newer one")
        failures += [f"{mode}: mm2-offsets moved back, {b}" for b in backwards_offsets(direct, mode, topic)]
        checkpoints[mode], bad = skipping_checkpoints(source.bootstrap_servers, direct, topic, group, mode)
        failures += [f"{mode}: checkpoint {b}" for b in bad]
        if not checkpoints[mode]:
            failures.append(f"{mode}: no checkpoint of {group} was written: translation not exercised")
        remote = remote_topic(mode, topic)
        breaks = order_breaks(direct, remote, mode, partitions=PARTITIONS, sequence=workload_sequence)
        failures += [f"{mode}: order across the hand-over: {b}" for b in breaks[:5]]
        within = one_flush_bound(size().rate, 1, FLUSH_INTERVAL_MS)
        if mode == "at-least-once" and outcomes[mode].duplicated > within:
            failures.append(f"{mode}: {outcomes[mode].duplicated} copied twice, more than one flush ({within})")
    finish(
        f"only the active driver cut off from the target for {outage_s:.0f} s, a standby waiting (TCP proxy)",
        expected=expected,
        outcomes=outcomes,
        resumed={},
        restarts=restarts,
        unreachable_s=outage_s,
        notes=f"standby took over {took_over_s} s after the cut; checkpoints checked {checkpoints}",
    )
    assert not failures, "; ".join(failures)
