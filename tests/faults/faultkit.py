"""What the broker and network fault scenarios share: the workload, both modes in one run, exact counts.

Each scenario runs one in-process :class:`~mirrorspark.replication.driver.Replicator` with two
replication flows over the same source topic and the same target cluster, one per mode: the source
cluster is named by two aliases (``alo`` and ``eos``) and the target by two (``alo_t`` and ``eos_t``),
so the flows ``alo->alo_t`` (at-least-once) and ``eos->eos_t`` (``eos_t.exactly.once.source.support =
enabled``) copy the same records into two remote topics (``alo.<topic>``, ``eos.<topic>``) and live
through the same fault at the same moment. A background producer writes records with unique values
(``<run>-<i>``) during the whole scenario, so what is lost and what is duplicated is counted exactly.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import KafkaError, Producer
from figures import FaultFigures, full_size, record
from helpers import admin, assert_eventually, consume_all, end_offsets, kafka_tool, unique_name
from pyspark.sql import SparkSession
from test_replication import running

from mirrorspark.config.parse import parse_config
from mirrorspark.config.properties import format_properties, parse_properties
from mirrorspark.kafka.local.model import LocalCluster
from mirrorspark.replication.driver import Replicator

MODES = ("at-least-once", "exactly-once")
"""The two modes, in the order the figures are recorded."""

SOURCE_ALIAS = {"at-least-once": "alo", "exactly-once": "eos"}
TARGET_ALIAS = {"at-least-once": "alo_t", "exactly-once": "eos_t"}

PARTITIONS = 2
"""Partitions of the source topic (and of its remote topics), one copy task each per flow."""

FLUSH_INTERVAL_MS = 1000
"""``offset.flush.interval.ms`` of the at-least-once flow (mirrorspark's default, set explicitly)."""


@dataclass(frozen=True)
class Size:
    """How big a scenario is: ``small`` under ``make test``, ``full`` under ``make faults``.

    Attributes
    ----------
    outage_s:
        How long a cluster stays unreachable (paused, cut off), s.
    rate:
        Records per second the workload produces, all partitions together.
    settle_s:
        How long the copy runs after it resumed before the workload stops, s.
    """

    outage_s: float
    rate: int
    settle_s: float


def size() -> Size:
    """The scenario size of this run (:func:`figures.full_size`)."""
    if full_size():
        return Size(outage_s=60.0, rate=1000, settle_s=15.0)
    return Size(outage_s=15.0, rate=200, settle_s=4.0)


def config_text(source: LocalCluster, target: LocalCluster, topic: str, **extra: str) -> str:
    """The ``mm2.properties`` of the two flows (one per mode) from ``source`` to ``target``.

    Every replication factor is ``-1``: the cluster's ``default.replication.factor``, which the
    local launcher sets to its broker count (3 on a 3-broker target); fast intervals as the
    integration tier uses, ``offset.flush.interval.ms`` set to :data:`FLUSH_INTERVAL_MS`.
    ``extra`` is written last.
    """
    props: dict[str, str] = {"clusters": ", ".join([*SOURCE_ALIAS.values(), *TARGET_ALIAS.values()])}
    for mode in MODES:
        for alias, cluster in ((SOURCE_ALIAS[mode], source), (TARGET_ALIAS[mode], target)):
            for key, value in cluster.java_client_properties().items():
                props[f"{alias}.{key}"] = value
        props[f"{SOURCE_ALIAS[mode]}->{TARGET_ALIAS[mode]}.enabled"] = "true"
        props[f"{TARGET_ALIAS[mode]}.offset.flush.interval.ms"] = str(FLUSH_INTERVAL_MS)
    props[f"{TARGET_ALIAS['exactly-once']}.exactly.once.source.support"] = "enabled"
    for key in (
        "replication.factor",
        "offset-syncs.topic.replication.factor",
        "heartbeats.topic.replication.factor",
        "checkpoints.topic.replication.factor",
        "offset.storage.replication.factor",
        "config.storage.replication.factor",
        "status.storage.replication.factor",
    ):
        props[key] = "-1"  # each cluster's default.replication.factor: its broker count (up to 3)
    props.update(
        {
            "topics": topic,
            "groups": "none-faults",
            "tasks.max": str(PARTITIONS),
            "refresh.topics.interval.seconds": "1",
            "emit.heartbeats.interval.seconds": "1",
            "offset.lag.max": "100",
            **extra,
        }
    )
    return format_properties(props, header="# mm2.properties of a fault scenario: one flow per mode")


def remote_topic(mode: str, topic: str) -> str:
    """The remote topic of ``topic`` in ``mode``'s flow."""
    return f"{SOURCE_ALIAS[mode]}.{topic}"


class Workload:
    """A background producer of records with unique values, ``<run>-<i>``, round robin over the partitions.

    Idempotent (``acks=all``): the source holds each value once, whatever the retries, so every
    extra copy on the target is the replicator's. It keeps producing through faults of the source
    (records wait in the producer's queue) until :meth:`stop`, or ``max_s`` seconds at most.

    Parameters
    ----------
    bootstrap:
        The source cluster's ``bootstrap.servers``.
    topic:
        The source topic.
    rate:
        Records per second, all partitions together.
    max_s:
        Seconds after which it stops by itself (a bound on the scenario).
    """

    def __init__(self, bootstrap: str, topic: str, *, rate: int, max_s: float) -> None:
        self.topic = topic
        self.run = unique_name("run")
        self.rate = rate
        self.max_s = max_s
        self.acked: set[bytes] = set()
        self.errors: list[str] = []
        self.sent = 0
        self._stop = threading.Event()
        self._producer = Producer(
            {
                "bootstrap.servers": bootstrap,
                "client.id": "mirrorspark-faults|workload",
                "enable.idempotence": True,
                "acks": "all",
                "linger.ms": 5,
                "message.timeout.ms": 300_000,
                "log_level": 0,  # refused connections while the source is down are expected
            }
        )
        self._thread = threading.Thread(target=self._produce, name="workload", daemon=True)

    def __enter__(self) -> Workload:
        self._thread.start()
        return self

    def __exit__(self, exc_type: object, *exc: object) -> None:
        if exc_type is None:
            self.stop()
            return
        self._stop.set()  # the scenario failed: drop what is left, quickly
        self._thread.join(30)
        self._producer.purge()
        self._producer.flush(1)

    def _on_delivery(self, err: KafkaError | None, msg: Any) -> None:
        if err is None:
            self.acked.add(msg.value())
        else:
            self.errors.append(err.str())

    def _produce(self) -> None:
        start = time.monotonic()
        while not self._stop.is_set() and time.monotonic() - start < self.max_s:
            due = int((time.monotonic() - start) * self.rate)
            while self.sent < due:
                value = f"{self.run}-{self.sent}".encode()
                try:
                    self._producer.produce(
                        self.topic, value, partition=self.sent % PARTITIONS, on_delivery=self._on_delivery
                    )
                except BufferError:
                    break
                self.sent += 1
            self._producer.poll(0.02)

    def stop(self, timeout_s: float = 180.0) -> set[bytes]:
        """Stop producing, wait for every acknowledgement; return the acknowledged values.

        Raises
        ------
        AssertionError
            If a record was not acknowledged in time or failed (then the counts would not be exact).
        """
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(30)
        left = self._producer.flush(timeout_s)
        assert left == 0, f"{left} workload records not acknowledged by the source within {timeout_s:.0f} s"
        assert not self.errors, f"workload records failed: {self.errors[:3]}"
        return set(self.acked)


def stable_ends(bootstrap: str, topic: str, *, committed: bool, partitions: set[int] | None = None) -> int:
    """Sum of the end offsets (last stable offsets when ``committed``) of ``partitions`` (default all).

    ``-1`` while the topic is missing or a partition has no leader (not grown yet).
    """
    try:
        ends = end_offsets(bootstrap, topic, read_committed=committed, timeout_s=5)
    except Exception:  # missing topic, leader moving, broker coming back: not grown yet
        return -1
    return sum(end for p, (_, end) in ends.items() if partitions is None or p in partitions)


def wait_copying(bootstrap: str, topic: str, *, timeout_s: float = 600.0) -> None:
    """Wait until both remote topics have committed records (both flows copy).

    Spark's first tasks of a session start slowly on a loaded machine: hence the long default.
    """
    for mode in MODES:
        remote = remote_topic(mode, topic)
        assert_eventually(
            lambda remote=remote: stable_ends(bootstrap, remote, committed=True) > 0,
            timeout_s=timeout_s,
            interval_s=0.5,
            message=f"{remote} received nothing",
        )


def resume_seconds(
    bootstrap: str,
    topic: str,
    since: float,
    *,
    partitions: dict[str, set[int]] | None = None,
    timeout_s: float = 300.0,
) -> dict[str, float]:
    """Seconds from ``since`` (``time.monotonic()`` at the end of the fault) until each remote topic grows.

    "Grows": the end offsets (at-least-once) or the last stable offsets (exactly-once: committed
    records) of the remote topic's ``partitions[mode]`` (default all) pass their sum at the first
    look after ``since``.

    Raises
    ------
    AssertionError
        If a remote topic did not grow within ``timeout_s``.
    """
    committed = {mode: mode == "exactly-once" for mode in MODES}
    base: dict[str, int] = {}
    last: dict[str, str] = {}  # what the newest look saw, for the failure message
    resumed: dict[str, float] = {}
    deadline = time.monotonic() + timeout_s
    while len(resumed) < len(MODES):
        for mode in MODES:
            if mode in resumed:
                continue
            only = None if partitions is None else partitions[mode]
            remote = remote_topic(mode, topic)
            try:
                ends = end_offsets(bootstrap, remote, read_committed=committed[mode], timeout_s=5)
            except Exception as e:  # missing topic, leader moving, broker coming back: not grown yet
                last[mode] = f"end offsets failed: {type(e).__name__}: {e}"
                continue
            now = sum(end for p, (_, end) in ends.items() if only is None or p in only)
            last[mode] = f"ends {sorted((p, end) for p, (_, end) in ends.items() if only is None or p in only)}"
            if mode not in base:
                base[mode] = now
            elif now > base[mode]:
                resumed[mode] = round(time.monotonic() - since, 1)
        if time.monotonic() >= deadline:
            raise AssertionError(
                f"copying did not resume within {timeout_s:.0f} s: resumed {resumed}, first sums {base}, "
                f"newest looks {last}; partitions now: {_partition_states(bootstrap, topic, partitions)}"
            )
        time.sleep(0.1)
    return resumed


def _partition_states(bootstrap: str, topic: str, partitions: dict[str, set[int]] | None) -> str:
    """Leader and in-sync replicas of each remote topic's ``partitions`` (for failure messages)."""
    out = []
    for mode in MODES:
        remote = remote_topic(mode, topic)
        try:
            meta = admin(bootstrap).list_topics(topic=remote, timeout=10).topics[remote]
            only = None if partitions is None else partitions[mode]
            out.append(
                f"{remote}: "
                + ", ".join(
                    f"{p} leader {m.leader} isr {list(m.isrs)}"
                    for p, m in sorted(meta.partitions.items())
                    if only is None or p in only
                )
            )
        except Exception as e:
            out.append(f"{remote}: metadata failed: {type(e).__name__}: {e}")
    return "; ".join(out)


def transactions_report(bootstrap: str, *, timeout_s: float = 60.0) -> str:
    """What ``kafka-transactions.sh`` (KIP-664) says of a cluster's open transactions, for a failure message.

    ``list``, ``describe`` of each listed transactional id, and ``find-hanging`` on every broker:
    a transaction the coordinator no longer knows but a partition still holds open (its last
    stable offset stuck) shows there. Best effort: a command that fails or times out says so.
    """

    def tool(*args: str) -> str:
        try:
            done = kafka_tool(bootstrap, "org.apache.kafka.tools.TransactionsCommand", *args, timeout_s=timeout_s)
        except (OSError, subprocess.TimeoutExpired) as e:
            return f"{' '.join(args)}: {type(e).__name__}: {e}"
        return f"$ kafka-transactions.sh {' '.join(args)}\n{done.stdout.strip()}{done.stderr.strip()[-2000:]}"

    out = [tool("list")]
    listed = out[0].splitlines()[2:]  # the command line, then the header
    out += [tool("describe", "--transactional-id", line.split()[0]) for line in listed if line.strip()]
    try:
        brokers = sorted(admin(bootstrap).list_topics(timeout=10).brokers)
    except Exception as e:
        return "\n".join([*out, f"brokers: {type(e).__name__}: {e}"])
    out += [tool(*_find_hanging(b)) for b in brokers]
    return "\n".join(out)


def _find_hanging(broker: int) -> tuple[str, ...]:
    """``kafka-transactions.sh find-hanging`` arguments for ``broker``: transactions open for over a minute."""
    return ("find-hanging", "--broker-id", str(broker), "--max-transaction-timeout", "1")


def abort_hanging_transactions(bootstrap: str, *, timeout_s: float = 60.0) -> list[str]:
    """Do what the replication task's error tells its operator for a hanging transaction (KIP-664).

    ``kafka-transactions.sh find-hanging`` on every broker (transactions open for longer than a minute
    that their coordinator no longer has open), then ``abort`` of each listed partition from its start
    offset. A coordinator that lost a commit's markers (seen once in CI after a ``SIGSTOP`` of the single
    KRaft node fenced its broker: the coordinator wrote ``CompleteCommit``, no partition got a marker)
    leaves such a transaction on the data and offsets partitions alike; aborting it on all of them
    keeps them consistent. Returns ``topic-partition@start-offset`` of each abort.
    """
    tool = "org.apache.kafka.tools.TransactionsCommand"
    aborted: list[str] = []
    for broker in sorted(admin(bootstrap).list_topics(timeout=10).brokers):
        found = kafka_tool(bootstrap, tool, *_find_hanging(broker), timeout_s=timeout_s)
        for line in found.stdout.splitlines():
            cols = line.split()
            if len(cols) < 6 or not (cols[1].isdigit() and cols[5].isdigit()):
                continue  # the header, or nothing found
            topic, partition, start = cols[0], cols[1], cols[5]
            done = kafka_tool(
                bootstrap,
                tool,
                "abort",
                "--topic",
                topic,
                "--partition",
                partition,
                "--start-offset",
                start,
                timeout_s=timeout_s,
            )
            if done.returncode != 0 and "Could not find any open transactions" in done.stderr:
                continue  # it ended between the listing and the abort: nothing hangs there any more
            assert done.returncode == 0, f"abort of {topic}-{partition} at {start} failed: {done.stderr[-2000:]}"
            aborted.append(f"{topic}-{partition}@{start}")
    return aborted


def copy_more(bootstrap: str, topic: str, records: int, *, timeout_s: float = 180.0) -> None:
    """Wait until each remote topic has grown by ``records`` (committed, for exactly-once) from now on."""
    for mode in MODES:
        remote, committed = remote_topic(mode, topic), mode == "exactly-once"
        base = (
            assert_eventually(
                lambda remote=remote, committed=committed: stable_ends(bootstrap, remote, committed=committed) + 1,
                timeout_s=timeout_s,
            )
            - 1
        )
        assert_eventually(
            lambda remote=remote, committed=committed, base=base: (
                stable_ends(bootstrap, remote, committed=committed) >= base + records
            ),
            timeout_s=timeout_s,
            interval_s=0.5,
            message=f"{remote} did not grow by {records} records",
        )


def pause(pids: list[int], seconds: float) -> None:
    """SIGSTOP the processes ``pids`` for ``seconds`` (the outage), then SIGCONT them, even on failure."""
    # A pid of 0 (a broker recorded as stopped) would signal this process's own group.
    assert all(pid > 0 for pid in pids), f"not running: {pids}"
    try:
        for pid in pids:
            os.kill(pid, signal.SIGSTOP)
        time.sleep(seconds)  # the outage itself, not a wait for a condition
    finally:
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)


@dataclass
class Outcome:
    """Exact counts of one mode's remote topic against the acknowledged workload."""

    produced: int
    lost: int
    duplicated: int
    foreign: int
    seen: Counter[bytes] = field(repr=False)


def count(bootstrap: str, topic: str, mode: str, expected: set[bytes]) -> Outcome:
    """Read ``mode``'s remote topic (``read_committed`` for exactly-once) and count against ``expected``."""
    values = Counter(
        r["value"]
        for r in consume_all(bootstrap, remote_topic(mode, topic), 120, read_committed=mode == "exactly-once")
    )
    return Outcome(
        produced=len(expected),
        lost=len(expected - set(values)),
        duplicated=sum(n - 1 for n in values.values() if n > 1),
        foreign=len(set(values) - expected),
        seen=values,
    )


def drained(bootstrap: str, topic: str, expected: set[bytes], *, timeout_s: float = 240.0) -> dict[str, Outcome]:
    """Wait until both remote topics hold every expected value, then count them (for each mode)."""
    outcomes: dict[str, Outcome] = {}
    for mode in MODES:
        committed = mode == "exactly-once"
        remote = remote_topic(mode, topic)
        assert_eventually(
            lambda remote=remote, committed=committed: (
                stable_ends(bootstrap, remote, committed=committed) >= len(expected)
            ),
            timeout_s=timeout_s,
            interval_s=1.0,
            message=f"{remote} is short of the {len(expected)} records produced",
        )

        def complete(mode: str = mode) -> Outcome:
            outcome = count(bootstrap, topic, mode, expected)
            assert outcome.lost == 0, f"{mode}: {outcome.lost} of {len(expected)} records not (yet) on the target"
            return outcome

        try:
            outcomes[mode] = assert_eventually(complete, timeout_s=90, interval_s=2.0)
        except AssertionError:
            outcomes[mode] = count(bootstrap, topic, mode, expected)  # recorded, then asserted by the caller
    return outcomes


def duplicate_bound(rate: int, restarts: int, unreachable_s: float) -> int:
    """The at-least-once duplicate bound, records: one flush interval per restart, plus a target outage.

    A restarted copy task copies again what its predecessor had copied since its last commit: at
    most one ``offset.flush.interval.ms`` of records, plus what was in flight; two flush intervals
    of the workload's rate (all partitions) are allowed per restart of the flow's tasks (at least
    one: the fault itself). When the target is unreachable for longer than the flow lease's session
    timeout, the lease is lost and the tasks end without committing (a zombie never writes a
    position) what they had queued during the outage and delivered once the target answered again:
    up to ``unreachable_s`` of records more.
    """
    return int(rate * (max(1, restarts) * 2 * FLUSH_INTERVAL_MS / 1000 + unreachable_s))


@contextlib.contextmanager
def scenario(
    source: LocalCluster, target: LocalCluster, spark: SparkSession, *, prefix: str, max_s: float, **extra: str
) -> Iterator[tuple[str, Workload, Replicator]]:
    """Create a source topic, start the workload and both flows; yield ``(topic, workload, replicator)``.

    The block injects its fault while both flows copy; the replicator stops at its end (the
    workload too, if the block did not stop it).
    """
    from helpers import create_topic

    topic = unique_name(prefix)
    create_topic(source.bootstrap_servers, topic, partitions=PARTITIONS)
    cfg = parse_config(parse_properties(config_text(source, target, topic, **extra)))
    with Workload(source.bootstrap_servers, topic, rate=size().rate, max_s=max_s) as work, running(cfg, spark) as r:
        wait_copying(target.bootstrap_servers, topic)
        yield topic, work, r


def restarts_by_mode(r: Replicator) -> dict[str, int]:
    """Copy-task restarts of each mode's flow so far."""
    by_name = {sup.name: sup.restarts for sup in r.supervisors}
    return {mode: by_name.get(f"{SOURCE_ALIAS[mode]}->{TARGET_ALIAS[mode]}", 0) for mode in MODES}


def finish(
    name: str,
    *,
    expected: set[bytes],
    outcomes: dict[str, Outcome],
    resumed: dict[str, float],
    restarts: dict[str, int],
    unreachable_s: float = 0.0,
    notes: str = "",
) -> None:
    """Record both modes' figures, then assert: nothing lost; exactly-once 0 duplicates; at-least-once bounded.

    ``unreachable_s`` is how long the target could not be written to (:func:`duplicate_bound`).
    """
    rate = size().rate
    failures = []
    for mode in MODES:
        o = outcomes[mode]
        if mode == "exactly-once":
            bound, limit = "0 (read_committed)", 0
        else:
            limit = duplicate_bound(rate, restarts[mode], unreachable_s)
            bound = (
                f"<= {limit}: {rate} records/s x (2 x {FLUSH_INTERVAL_MS} ms flush interval"
                f" x {max(1, restarts[mode])} task restart(s) + {unreachable_s:.0f} s target outage)"
            )
        record(
            FaultFigures(
                scenario=name,
                mode=mode,
                produced=len(expected),
                lost=o.lost,
                duplicated=o.duplicated,
                resume_s=resumed.get(mode),
                bound=bound,
                notes="; ".join(x for x in (notes, f"{restarts[mode]} task restart(s)") if x),
            )
        )
        if o.lost:
            failures.append(f"{mode}: {o.lost} of {len(expected)} records lost")
        if o.duplicated > limit:
            failures.append(f"{mode}: {o.duplicated} duplicates, bound {limit}")
        if o.foreign:
            failures.append(f"{mode}: {o.foreign} values on the target the workload never acknowledged")
    assert not failures, "; ".join(failures)
