"""One active instance per flow: :class:`~mirrorspark.replication.worker.lease.FlowLease` against real brokers.

Each test uses its own lease group (``group_id=unique_name(...)``) on the session clusters, so
tests never share a lease; they share the lease topic ``mm2-lease.primary.internal`` on
``backup`` (its offsets only grow, so epochs keep growing across tests). Instances that must
die without leaving the group (``kill -9``, ``SIGSTOP``) run in a subprocess, a tiny script
using :class:`FlowLease` that reports on stdout.
"""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import admin, assert_eventually, consume_all, unique_name

from mirrorspark.client.context import FlowContext
from mirrorspark.config.model import MirrorConfig
from mirrorspark.config.parse import parse_config
from mirrorspark.config.properties import parse_properties
from mirrorspark.core.lease_claims import decode_claim
from mirrorspark.kafka.admin import ClusterAdmin
from mirrorspark.kafka.local.model import LocalClusters
from mirrorspark.mm2.internal_topics import lease_group
from mirrorspark.replication.worker.lease import SESSION_TIMEOUT_MS, FlowLease

pytestmark = pytest.mark.integration

TAKEOVER_DEADLINE_S = SESSION_TIMEOUT_MS / 1000 + 30
"""A crashed holder's lease goes to a standby after the session timeout plus a rebalance: generous margin."""

CHILD = """
import sys, time
from mirrorspark.client.context import FlowContext
from mirrorspark.config.parse import parse_config
from mirrorspark.config.properties import parse_properties
from mirrorspark.replication.worker.lease import FlowLease

props, group = sys.argv[1], sys.argv[2]
config = parse_config(parse_properties(open(props).read()))
ctx = FlowContext.build(config, config.flow("primary", "backup"))
lost = []
lease = FlowLease(ctx, group_id=group, holder="child", on_lost=lost.append)
lease.start()
while not lease.wait_acquired(1.0):
    pass
print("HELD", lease.epoch, flush=True)  # only this thread prints: lines never interleave
while not lost:
    time.sleep(0.1)
print("LOST", lost[0], flush=True)
while not lease.standby:
    time.sleep(0.1)
print("STANDBY", flush=True)
while True:
    time.sleep(1)
"""


@pytest.fixture
def config(local_clusters: LocalClusters, tmp_path: Path) -> Iterator[tuple[MirrorConfig, Path]]:
    """The session clusters with flows ``primary->backup`` and ``backup->primary``, and its properties file."""
    text = local_clusters.mm2_properties([("primary", "backup"), ("backup", "primary")])
    path = tmp_path / "mm2.properties"
    path.write_text(text)
    yield parse_config(parse_properties(text)), path


def context(config: MirrorConfig, source: str = "primary", target: str = "backup") -> FlowContext:
    return FlowContext.build(config, config.flow(source, target))


class Child:
    """A subprocess holding (or waiting for) the lease of ``primary->backup``; its stdout lines in a queue."""

    def __init__(self, props: Path, group: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", CHILD, str(props), group],
            stdout=subprocess.PIPE,
            text=True,
            env=os.environ.copy(),
        )
        self.lines: queue.Queue[str] = queue.Queue()
        self.seen: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line.strip())

    def expect(self, word: str, timeout_s: float = 60.0) -> list[str]:
        """Wait for the next line starting with ``word``; return its words."""
        deadline = time.monotonic() + timeout_s
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"the child printed no {word!r} within {timeout_s:.0f} s: {self.seen}")
            try:
                line = self.lines.get(timeout=left)
            except queue.Empty:
                continue
            self.seen.append(line)
            if line.split()[0] == word:
                return line.split()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(30)


@pytest.fixture
def children() -> Iterator[list[Child]]:
    """Children started by a test; killed at its end whatever happened."""
    started: list[Child] = []
    yield started
    for child in started:
        child.stop()


def last_claim(local_clusters: LocalClusters, topic: str, flow: str) -> str:
    """Holder named by the last claim of ``flow`` in the lease topic."""
    holders = [
        c.holder
        for r in consume_all(local_clusters.bootstrap("backup"), topic)
        if (c := decode_claim(r["key"], r["value"])) is not None and c.flow == flow
    ]
    assert holders
    return holders[-1]


def test_exactly_one_holds_and_a_clean_stop_hands_over_at_once(
    config: tuple[MirrorConfig, Path], local_clusters: LocalClusters
) -> None:
    cfg, _ = config
    ctx = context(cfg)
    assert FlowLease(ctx).group_id == lease_group("primary->backup") == "mirrorspark-lease-primary->backup"
    group = unique_name("lease")
    a = FlowLease(ctx, group_id=group, holder="a")
    b = FlowLease(ctx, group_id=group, holder="b")
    try:
        a.start()
        assert a.wait_acquired(60)
        first = a.epoch
        assert first >= 1
        assert a.holds(first)
        b.start()
        assert_eventually(lambda: b.standby, timeout_s=60, message="b never joined as a standby")
        # the holder keeps its lease when a standby joins (cooperative-sticky)
        assert a.held and a.holds(first)
        assert not b.held and not b.wait_acquired(0.5) and b.epoch == 0
        committed = ClusterAdmin(admin(local_clusters.bootstrap("backup")), "backup").group_offsets(group)
        assert committed[(a.topic, 0)][0] == first  # the group's committed offset is the epoch
        assert last_claim(local_clusters, a.topic, "primary->backup") == "a"

        a.close()
        assert not a.held and not a.holds(first)
        assert b.wait_acquired(TAKEOVER_DEADLINE_S)
        assert b.epoch > first
        assert not a.held
        assert last_claim(local_clusters, a.topic, "primary->backup") == "b"
    finally:
        a.close()
        b.close()


def test_epoch_strictly_increases_on_every_takeover(config: tuple[MirrorConfig, Path]) -> None:
    """L1 (``replication/worker/lease.py``)."""
    cfg, _ = config
    ctx = context(cfg)
    group = unique_name("lease")
    leases = [FlowLease(ctx, group_id=group, holder=f"i{i}") for i in range(3)]
    acquired: list[int] = []
    lost: list[int] = []
    epochs: list[int] = []
    try:
        for lease in leases:
            lease.start()
        # Each holder in turn stops; one of the others takes over, with a larger epoch.
        running = list(leases)
        while running:
            holder = assert_eventually(
                lambda: next((x for x in running if x.held), None), timeout_s=TAKEOVER_DEADLINE_S
            )
            assert sum(x.held for x in leases) == 1
            epochs.append(holder.epoch)
            holder.close()
            running.remove(holder)
        # an instance that closed and starts again (a restart) gets a new, larger epoch
        again = FlowLease(ctx, group_id=group, holder="again", on_acquired=acquired.append, on_lost=lost.append)
        again.start()
        assert again.wait_acquired(60)
        epochs.append(again.epoch)
        again.close()
        assert acquired == [epochs[-1]]
        assert lost == []  # a clean close is not a loss
    finally:
        for lease in leases:
            lease.close()
    assert len(epochs) == 4
    assert epochs == sorted(set(epochs)), epochs


def test_kill_9_of_the_holder_a_standby_takes_over(
    config: tuple[MirrorConfig, Path], local_clusters: LocalClusters, children: list[Child]
) -> None:
    cfg, props = config
    group = unique_name("lease")
    child = Child(props, group)
    children.append(child)
    child_epoch = int(child.expect("HELD")[1])
    standby = FlowLease(context(cfg), group_id=group, holder="parent")
    try:
        standby.start()
        assert_eventually(lambda: standby.standby, timeout_s=60, message="never joined as a standby")
        assert not standby.held

        child.proc.send_signal(signal.SIGKILL)
        child.proc.wait(30)
        assert standby.wait_acquired(TAKEOVER_DEADLINE_S), "the standby did not take over from a killed holder"
        assert standby.epoch > child_epoch
        assert last_claim(local_clusters, standby.topic, "primary->backup") == "parent"
    finally:
        standby.close()


def test_a_zombie_holder_learns_it_lost_the_lease_and_has_the_smaller_epoch(
    config: tuple[MirrorConfig, Path], children: list[Child]
) -> None:
    """L1 (``replication/worker/lease.py``)."""
    cfg, props = config
    group = unique_name("lease")
    child = Child(props, group)
    children.append(child)
    child_epoch = int(child.expect("HELD")[1])
    lost: list[int] = []
    standby = FlowLease(context(cfg), group_id=group, holder="parent", on_lost=lost.append)
    try:
        standby.start()
        assert_eventually(lambda: standby.standby, timeout_s=60, message="never joined as a standby")
        child.proc.send_signal(signal.SIGSTOP)  # frozen: no heartbeat, yet still "holding"
        try:
            assert standby.wait_acquired(TAKEOVER_DEADLINE_S)
        finally:
            child.proc.send_signal(signal.SIGCONT)
        # the old holder wakes up, finds its membership gone, reports the loss and waits as a standby
        assert int(child.expect("LOST")[1]) == child_epoch < standby.epoch
        child.expect("STANDBY")
        assert standby.held and lost == []
    finally:
        standby.close()


def test_the_leases_of_two_flows_are_independent(config: tuple[MirrorConfig, Path]) -> None:
    cfg, _ = config
    forward, backward = context(cfg), context(cfg, "backup", "primary")
    assert FlowLease(forward).topic == "mm2-lease.primary.internal"
    assert FlowLease(backward).topic == "mm2-lease.backup.internal"
    # two instances of each flow: one holder per flow
    group_f, group_b = unique_name("lease-f"), unique_name("lease-b")
    leases = [
        FlowLease(forward, group_id=group_f),
        FlowLease(backward, group_id=group_b),
        FlowLease(forward, group_id=group_f),
        FlowLease(backward, group_id=group_b),
    ]
    try:
        for lease in leases:
            lease.start()

        def holder_and_standby(a: FlowLease, b: FlowLease) -> tuple[FlowLease, FlowLease] | None:
            # both instances join at once: either may win the lease
            if a.held and b.standby:
                return a, b
            if b.held and a.standby:
                return b, a
            return None

        f_holder, f_standby = assert_eventually(lambda: holder_and_standby(leases[0], leases[2]), timeout_s=60)
        b_holder, b_standby = assert_eventually(lambda: holder_and_standby(leases[1], leases[3]), timeout_s=60)
        # stopping the holder of one flow moves only that flow's lease
        f_holder.close()
        assert f_standby.wait_acquired(TAKEOVER_DEADLINE_S)
        assert b_holder.held and b_standby.standby
        assert [(x.flow_name, x.held) for x in (f_holder, f_standby, b_holder, b_standby)] == [
            ("primary->backup", False),
            ("primary->backup", True),
            ("backup->primary", True),
            ("backup->primary", False),
        ]
    finally:
        for lease in leases:
            lease.close()
