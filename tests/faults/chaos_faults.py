"""The randomized fault checker's faults and the schedule drawn from a seed.

A fault is a small object (:class:`Fault`): a ``kind`` name, :meth:`Fault.skip` (why it cannot run in
this setup, or ``None``) and :meth:`Fault.apply` (break something, return a one-line note). Adding
a fault is a class here and one entry in :data:`FAULTS`; the schedule, the replay and the
verdict pick it up by name. A fault gets what it may touch through :class:`Cell` (the running
``mirrorspark run``, the feed, the clusters) and its parameters from the schedule (drawn from the
seed, so that a failing seed replays the same faults on the same topics and partitions).

Faults (issue #23 item 7): ``kill-run`` (kill -9 of the whole run's process groups, relaunched),
``kill-worker`` (one Spark Python worker running a copy task), ``kill-jvm`` (the Spark driver
JVM; the run must end by itself, then it is relaunched), ``kill-leader`` (the target's partition
leader, restarted later; needs a 3-broker target), ``cut-driver`` (the driver-only network
cut: the driver's clients reach the target through proxies, the copy tasks directly),
``recreate-topic``, ``delete-records`` (past the
copied position: the run is frozen while the source moves on), ``add-partitions`` and
``foreign-offset`` (an MM2-format ``mm2-offsets`` record far past the partition's end).
"""

from __future__ import annotations

import contextlib
import random
import signal
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import psutil
from chaos_feed import ChaosFeed, Removal
from confluent_kafka import Producer, TopicPartition
from helpers import admin, assert_eventually, client_config
from proxy import ProxyGroup
from scenario import RunProcess, copy_task_workers, port_of

from mirrorspark.kafka.local.brokers import pid_alive, signal_group
from mirrorspark.kafka.local.clusters import load_clusters, restart_cluster, stop_broker
from mirrorspark.mm2.connect_offsets import default_partition, source_offset_key, source_offset_value

__all__ = ["FAULTS", "Cell", "Fault", "Planned", "draw_schedule", "format_schedule"]

JVM_EXIT_S = 30.0
"""Seconds the run gets to end by itself after its Spark driver JVM was killed (issue item 3 asks for 5)."""

FOREIGN_JUMP = 1_000_000
"""How far past a partition's end a foreign ``mm2-offsets`` record points, offsets."""


@dataclass
class Cell:
    """What the faults may touch: the run under test, the feed, the clusters.

    Attributes
    ----------
    run:
        The ``mirrorspark run`` process (relaunched by the faults that kill it).
    feed:
        The feed (holds topics while they change).
    source, target:
        ``bootstrap.servers`` of the source and of the target.
    target_dir:
        The target's ``LocalClusters`` base directory (to kill and restart its brokers).
    target_alias:
        The target cluster's alias in that directory.
    flows:
        The source aliases of the flows (``alo``, ``eos``): one ``mm2-offsets.<alias>.internal`` each.
    notes:
        Things seen while applying faults that are no data violation (e.g. a slow exit).
    restore:
        Repairs still due (time.monotonic(), what, callable), run by the schedule's loop.
    foreign:
        The foreign ``mm2-offsets`` records written: (source alias, topic, partition, offset).
    removed:
        The fault log of source records removed (``delete-records``, ``recreate-topic``): exactly
        which records each fault removed and when; the only ground on which the checker excuses
        a record the flows did not copy.
    outage_s:
        Seconds of outages so far (a target broker down, the run frozen), for the duplicate bound.
    driver_proxies:
        The proxies in front of every target broker that only the run's driver goes through
        (``mirrorspark.executor.target.bootstrap.servers`` keeps the copy tasks direct), when
        ``cut-driver`` is among the kinds; ``None`` otherwise.
    """

    run: RunProcess
    feed: ChaosFeed
    source: str
    target: str
    target_dir: Path
    target_alias: str
    flows: Sequence[str]
    notes: list[str] = field(default_factory=list)
    restore: list[tuple[float, str, Callable[[], str]]] = field(default_factory=list)
    foreign: set[tuple[str, str, int, int]] = field(default_factory=set)
    removed: list[Removal] = field(default_factory=list)
    outage_s: float = 0.0
    driver_proxies: ProxyGroup | None = None

    def run_pid(self) -> int | None:
        """The pid of the running ``mirrorspark run``, ``None`` if it is not running."""
        proc = self.run.proc
        return proc.pid if proc is not None and proc.poll() is None else None


@dataclass(frozen=True)
class Planned:
    """One fault of a schedule: when (seconds after copying started), which, with what parameters."""

    at_s: float
    kind: str
    params: dict[str, Any]


class Fault(Protocol):
    """A fault the schedule can draw. ``params`` come from :meth:`draw` (seeded), never from the clock."""

    kind: str

    def draw(self, rng: random.Random, topics: int) -> dict[str, Any]:
        """Parameters for one occurrence (topic index, partition, seconds until the repair)."""
        ...

    def skip(self, cell: Cell) -> str | None:
        """Why this fault cannot run in this setup, or ``None``."""
        ...

    def configure(self, props: dict[str, str], mode_aliases: Sequence[tuple[str, str]]) -> None:
        """Adjust the run's ``mm2.properties`` before the first launch (e.g. route the driver through a proxy)."""
        ...

    def apply(self, cell: Cell, topic: str, params: dict[str, Any]) -> str:
        """Break it; return a one-line note of what was done."""
        ...


class _Base:
    kind = ""

    def draw(self, rng: random.Random, topics: int) -> dict[str, Any]:
        return {"topic": rng.randrange(topics), "partition": rng.randrange(2)}

    def skip(self, cell: Cell) -> str | None:
        return None

    def configure(self, props: dict[str, str], mode_aliases: Sequence[tuple[str, str]]) -> None:
        return None


class KillRun(_Base):
    """``kill -9`` of every process group of the run (driver, Spark JVM, PySpark daemon, workers); relaunched."""

    kind = "kill-run"

    def apply(self, cell: Cell, topic: str, params: dict[str, Any]) -> str:
        if cell.run.proc is None:
            cell.run.launch()
            return "run was not running: relaunched"
        cell.run.kill()
        cell.run.launch()
        return f"kill -9 of the whole run, relaunched (launch #{cell.run.launches})"


class KillWorker(_Base):
    """``kill -9`` of one Spark Python worker running a copy task (the driver restarts the task)."""

    kind = "kill-worker"

    def apply(self, cell: Cell, topic: str, params: dict[str, Any]) -> str:
        pid = cell.run_pid()
        if pid is None:
            return "skipped: run not running"
        deadline = time.monotonic() + 60.0  # a relaunched run may still be starting its copy tasks
        workers = copy_task_workers(pid, port_of(cell.source))
        while not workers and time.monotonic() < deadline and cell.run_pid() == pid:
            time.sleep(0.5)
            with contextlib.suppress(psutil.Error):
                workers = copy_task_workers(pid, port_of(cell.source))
        if not workers:
            return "skipped: no Python worker running a copy task within 60 s"
        victim = workers[params["partition"] % len(workers)]
        with contextlib.suppress(psutil.NoSuchProcess):
            victim.kill()
            victim.wait(30)
        return f"kill -9 of Python worker {victim.pid} (of {len(workers)} copying)"


class KillJvm(_Base):
    """``kill -9`` of the Spark driver JVM under the run; the run must exit by itself; then relaunched."""

    kind = "kill-jvm"

    def apply(self, cell: Cell, topic: str, params: dict[str, Any]) -> str:
        pid = cell.run_pid()
        if pid is None:
            return "skipped: run not running"
        jvms = _driver_jvms(pid)
        if not jvms:
            return "skipped: no Spark driver JVM under the run within 120 s"
        jvms[0].kill()
        began = time.monotonic()
        proc = cell.run.proc
        assert proc is not None
        try:
            code: int | str = proc.wait(JVM_EXIT_S)
            waited = f"the run exited {code} after {time.monotonic() - began:.1f} s"
        except Exception:
            waited = f"the run was still alive {JVM_EXIT_S:.0f} s after its JVM died: killed"
            cell.notes.append(f"kill-jvm: {waited}")
        if cell.run.proc is not None:
            if cell.run.proc.poll() is not None:
                cell.run.proc = None
            else:
                cell.run.kill()
        cell.run.launch()
        return f"kill -9 of the Spark driver JVM {jvms[0].pid}; {waited}; relaunched"


def _driver_jvms(pid: int, timeout_s: float = 120.0) -> list[psutil.Process]:
    """The Spark driver JVM(s) under process ``pid``, waiting up to ``timeout_s`` for a relaunched run's to start."""
    deadline = time.monotonic() + timeout_s
    while True:
        with contextlib.suppress(psutil.Error):
            kids = psutil.Process(pid).children(recursive=True)
            jvms = [p for p in kids if p.name() == "java" and "SparkSubmit" in _cmd(p)]
            if jvms or time.monotonic() > deadline:
                return jvms
        if time.monotonic() > deadline:
            return []
        time.sleep(0.5)


def _cmd(p: psutil.Process) -> str:
    with contextlib.suppress(psutil.Error):
        return " ".join(p.cmdline())
    return ""


class KillLeader(_Base):
    """``kill -9`` of the broker leading a remote partition (not the controller, node 0); restarted later."""

    kind = "kill-leader"

    def draw(self, rng: random.Random, topics: int) -> dict[str, Any]:
        return {**super().draw(rng, topics), "down_s": round(rng.uniform(5.0, 20.0), 1)}

    def skip(self, cell: Cell) -> str | None:
        brokers = load_clusters(cell.target_dir).cluster(cell.target_alias).brokers
        if len(brokers) < 3:
            return "skipped: needs a 3-broker target (--target-brokers 3)"
        if any(b.pid == 0 for b in brokers):
            return "skipped: a target broker is already down"
        return None

    def apply(self, cell: Cell, topic: str, params: dict[str, Any]) -> str:
        remote = f"{cell.flows[0]}.{topic}"
        meta = admin(cell.target).list_topics(topic=remote, timeout=10).topics.get(remote)
        leader = meta.partitions[params["partition"]].leader if meta and meta.partitions else -1
        victim = leader if leader in (1, 2) else 1 + params["partition"] % 2
        broker = next(
            b for b in load_clusters(cell.target_dir).cluster(cell.target_alias).brokers if b.node_id == victim
        )
        signal_group(broker.pid, signal.SIGKILL)
        assert_eventually(lambda: not pid_alive(broker.pid), timeout_s=30, message="the leader survived SIGKILL")

        def restart() -> str:
            stopped = stop_broker(load_clusters(cell.target_dir), cell.target_alias, victim)
            restart_cluster(stopped, cell.target_alias, timeout_s=300)
            return f"target broker {victim} restarted"

        cell.restore.append((time.monotonic() + float(params["down_s"]), f"restart broker {victim}", restart))
        cell.outage_s += float(params["down_s"])
        return f"kill -9 of target broker {victim} (leader of {remote}-{params['partition']}: {leader})"


class CutDriver(_Base):
    """The driver-only network cut (issue #23 item 5): the driver's proxies to the target refuse everything.

    The copy tasks keep their direct connections; the driver loses the flow's lease after the
    session timeout, its tasks' grants lapse (they end without committing), and once healed it
    takes the lease back and starts them again.
    """

    kind = "cut-driver"

    def draw(self, rng: random.Random, topics: int) -> dict[str, Any]:
        return {**super().draw(rng, topics), "down_s": round(rng.uniform(5.0, 20.0), 1)}

    def skip(self, cell: Cell) -> str | None:
        return None if cell.driver_proxies is not None else "skipped: the target is not behind the driver's proxies"

    def apply(self, cell: Cell, topic: str, params: dict[str, Any]) -> str:
        proxies = cell.driver_proxies
        assert proxies is not None
        dropped = proxies.down()

        def heal() -> str:
            proxies.up()
            return "the driver's network to the target healed" if not proxies.cuts else "one cut of the driver's ended"

        down_s = float(params["down_s"])
        cell.restore.append((time.monotonic() + down_s, "heal the driver's network", heal))
        cell.outage_s += down_s
        return f"the driver's network to the target cut for {down_s} s ({dropped} connections dropped)"


class RecreateTopic(_Base):
    """A source topic deleted and re-created with its partitions, then fed again (a new incarnation)."""

    kind = "recreate-topic"

    def apply(self, cell: Cell, topic: str, params: dict[str, Any]) -> str:
        return cell.feed.recreate(topic, cell.removed)


class DeleteRecords(_Base):
    """``deleteRecords`` past the copied position: the run is frozen (SIGSTOP) while the feed moves on, then the
    source partition is emptied up to its end, then the run continues (SIGCONT)."""

    kind = "delete-records"

    def draw(self, rng: random.Random, topics: int) -> dict[str, Any]:
        return {**super().draw(rng, topics), "frozen_s": round(rng.uniform(1.5, 3.5), 1)}

    def apply(self, cell: Cell, topic: str, params: dict[str, Any]) -> str:
        pid = cell.run_pid()
        procs = [psutil.Process(pid), *psutil.Process(pid).children(recursive=True)] if pid else []
        for p in procs:
            with contextlib.suppress(psutil.Error):
                p.suspend()
        try:
            time.sleep(float(params["frozen_s"]))  # the feed moves on while the copy cannot: part of the fault
            cell.outage_s += float(params["frozen_s"])
            part = params["partition"]
            first, end = cell.feed.source_range(topic, part)
            life = cell.feed.incarnations(topic)[-1]
            tp = TopicPartition(topic, part, end)
            client = admin(cell.source)  # kept alive until the future resolves
            # logged before it is asked for: a request that times out may still have removed them
            cell.removed.append(
                Removal(self.kind, int(time.time() * 1000), topic, life.index, life.topic_id, part, first, end)
            )
            client.delete_records([tp], request_timeout=30)[tp].result(30)
        finally:
            for p in procs:
                with contextlib.suppress(psutil.Error):
                    p.resume()
        return f"deleteRecords {topic}-{part} before {end} (run frozen {params['frozen_s']} s)"


class AddPartitions(_Base):
    """Partitions added to a source topic (1 or 2), fed from then on."""

    kind = "add-partitions"

    def draw(self, rng: random.Random, topics: int) -> dict[str, Any]:
        return {**super().draw(rng, topics), "more": rng.choice((1, 2))}

    def apply(self, cell: Cell, topic: str, params: dict[str, Any]) -> str:
        return cell.feed.add_partitions(topic, int(params["more"]))


class ForeignOffset(_Base):
    """A foreign ``mm2-offsets`` record: MM2's key and value for the flow's partition, far past its end.

    What a stray writer (or a rebuilt source under the same alias) leaves behind: the flow must
    not adopt it (audit F1) when it next reads its offsets.
    """

    kind = "foreign-offset"

    def draw(self, rng: random.Random, topics: int) -> dict[str, Any]:
        return {**super().draw(rng, topics), "flow": rng.randrange(2)}

    def apply(self, cell: Cell, topic: str, params: dict[str, Any]) -> str:
        alias = cell.flows[params["flow"] % len(cell.flows)]
        part = params["partition"]
        offsets_topic = f"mm2-offsets.{alias}.internal"
        meta = admin(cell.target).list_topics(topic=offsets_topic, timeout=10).topics.get(offsets_topic)
        if meta is None or not meta.partitions or meta.error is not None:
            return f"skipped: {offsets_topic} does not exist yet"
        key = source_offset_key(alias, topic, part)
        offset = cell.feed.source_end(topic, part) + FOREIGN_JUMP
        value = source_offset_value(offset)
        cell.foreign.add((alias, topic, part, offset))
        producer = Producer(client_config(cell.target, **{"client.id": "mirrorspark-chaos|foreign", "acks": "all"}))
        producer.produce(offsets_topic, value, key, partition=default_partition(key, len(meta.partitions)))
        assert producer.flush(30) == 0, "the foreign mm2-offsets record was not acknowledged"
        return f"{offsets_topic}: {key.decode()} = {value.decode()}"


FAULTS: dict[str, Fault] = {
    f.kind: f
    for f in (
        KillRun(),
        KillWorker(),
        KillJvm(),
        KillLeader(),
        CutDriver(),
        RecreateTopic(),
        DeleteRecords(),
        AddPartitions(),
        ForeignOffset(),
    )
}
"""Every fault by kind; the schedule draws among the kinds it is given."""


def draw_schedule(
    seed: int, duration_s: float, kinds: Sequence[str], topics: int, *, spacing_s: float
) -> list[Planned]:
    """The faults of a run, drawn from ``seed`` alone: replaying a seed replays its schedule.

    One fault per ``spacing_s`` on average (at least one), at uniform times in
    ``[0.1, 0.85] x duration_s`` (the end is left to recover), at least 3 s apart, each of a kind
    drawn uniformly from ``kinds`` with its own parameters (:meth:`Fault.draw`).

    Raises
    ------
    KeyError
        If a kind is not in :data:`FAULTS`.
    """
    rng = random.Random(seed)
    count = max(1, round(duration_s / spacing_s))
    times: list[float] = []
    for _ in range(count):
        at = round(rng.uniform(0.1, 0.85) * duration_s, 1)
        while any(abs(at - t) < 3.0 for t in times):
            at = round(at + 3.0, 1)
        times.append(at)
    plan = []
    for at in sorted(times):
        kind = rng.choice(list(kinds))
        plan.append(Planned(at, kind, FAULTS[kind].draw(rng, topics)))
    return plan


def format_schedule(seed: int, plan: Sequence[Planned]) -> str:
    """The schedule as printed before the run: one line per fault."""
    lines = [f"schedule of seed {seed}: {len(plan)} fault(s)"]
    for p in plan:
        lines.append(f"  t+{p.at_s:6.1f} s  {p.kind:<15} {p.params}")
    return "\n".join(lines)
