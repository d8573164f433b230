"""Plumbing shared by the fault scenarios: a feed of unique records, a tail of the remote topic, exact counts.

A scenario of ``tests/faults/`` has the same skeleton whatever it breaks::

    feed = Feed(source, topic, partitions=4, rate=200).start()      # keeps producing through the fault
    tail = Tail(target, remote, partitions=4, mode=mode).start()    # times when records arrive
    ... start the replicator ...
    tail.wait_copying(feed, copy_s=2.0, alive=run.check)           # caught up and growing: then break it
    marks = high_watermarks(target, remote)                         # nothing at or after these is old
    t_fault = time.monotonic(); <the fault>; <the repair, if any>
    resume_s = tail.wait_resumed(marks, t_fault, alive=run.check)   # every partition got a new record
    produced = feed.finish()
    tail.wait_all(produced, alive=run.check)
    counted = count_copies(target, remote, produced, mode, tag=topic.encode())  # exact counts
    conclude("<scenario>", mode, counted, faults=1, rate=200, resumes=[resume_s])  # figures + asserts

* :class:`Feed` produces values ``<tag>|<sequence, 12 digits>|<padding>`` round-robin over the
  partitions at a steady rate with an idempotent producer (no duplicate on the source, whatever the
  retries), and keeps the values the source acknowledged: that set is "produced".
* :class:`Tail` consumes the remote topic from the beginning with the mode's isolation level
  (``read_committed`` in exactly-once mode, so records of aborted transactions never count) and
  notes when each partition's records arrived. It answers "is the target growing" and "when did
  copying resume": the first moment every partition delivered a record at or above the high
  watermark taken after the fault (records below it were written before; control records of
  transactions are never delivered, so an abort marker does not count as copying).
* :func:`count_copies` reads the remote topic to its end offsets once everything arrived and counts,
  per produced value, the copies a consumer of the mode's isolation level sees: ``lost`` (produced,
  never seen), ``duplicated`` (copies beyond the first), ``foreign`` (values seen that the source
  never acknowledged: a delivery that timed out but was written; not a duplicate).
* :func:`duplicate_bound` states the at-least-once bound the scenarios assert;
  :func:`one_flush_bound` the tighter one of a hand-over (a standby's take-over, a relaunch after
  ``kill -9``), and :func:`order_breaks` the checker's ``order`` rule across it
  (``engine-audit-2.md`` N5).
* :class:`RunProcess` is ``mirrorspark run`` as a subprocess in its own session: launch, ``kill -9``
  of every process of its tree (driver, Spark JVM, PySpark daemon, Python workers), kill of one
  Python worker running a copy task, graceful stop.

* :func:`conclude` records a scenario's figures (:mod:`figures`) and asserts the mode's guarantees.

Import it in a test of ``tests/faults/`` as ``from scenario import Feed, Tail, ...`` (pytest puts
the test's folder on ``sys.path``; the folder's ``conftest.py`` adds ``tests/integration`` for
``helpers`` and ``standalone``, which this module uses).

Everything polls against deadlines (never a bare sleep before an assert); timings are measured
and reported, never asserted. Units: seconds, records, records per second, ms where a key says so.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import psutil
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Message, Producer, TopicPartition
from helpers import Bootstrap, assert_eventually, client_config, consume_all, end_offsets
from standalone import _kill_groups, _tree_groups

from mirrorspark.replication.task.daemon import is_daemon_command

__all__ = [
    "AT_LEAST_ONCE",
    "EXACTLY_ONCE",
    "MODES",
    "Counted",
    "Feed",
    "RunProcess",
    "Tail",
    "conclude",
    "copy_task_workers",
    "count_copies",
    "duplicate_bound",
    "feed_sequence",
    "high_watermarks",
    "mode_properties",
    "one_flush_bound",
    "order_breaks",
    "port_of",
    "summary",
]

logger = logging.getLogger("faults")

AT_LEAST_ONCE = "at-least-once"
EXACTLY_ONCE = "exactly-once"
MODES = (AT_LEAST_ONCE, EXACTLY_ONCE)
"""The two delivery modes every scenario runs in (``pytest.mark.parametrize("mode", MODES)``)."""

FLUSH_MS = 1000
"""The commit interval the at-least-once bounds assume (ms): MirrorMaker 2's ``offset.flush.interval.ms`` and
exactly once's ``transaction.boundary.interval.ms`` in the scenarios; at least once, mirrorspark commits every
250 ms (its default ``offset.flush.interval.ms``; Connect's is 60 000), within the bound."""


def mode_properties(mode: str, source: str, target: str) -> dict[str, str]:
    """``mm2.properties`` entries that select ``mode`` for the flow ``source->target`` (cluster aliases).

    At least once: the defaults (commits every ``offset.flush.interval.ms`` = 250 ms).
    Exactly once: ``<target>.exactly.once.source.support = enabled`` (KIP-618) with
    ``<source>-><target>.transaction.boundary = interval`` every 1000 ms (per flow, as MM2 reads
    them), so that each transaction holds about one flush interval of records and a fault lands
    inside an open one (the default boundary ``poll`` commits after every batch read:
    transactions are then open for milliseconds only).

    Raises
    ------
    ValueError
        If ``mode`` is not one of :data:`MODES`.
    """
    if mode == AT_LEAST_ONCE:
        return {}
    if mode == EXACTLY_ONCE:
        return {
            f"{target}.exactly.once.source.support": "enabled",
            f"{source}->{target}.transaction.boundary": "interval",
            f"{source}->{target}.transaction.boundary.interval.ms": str(FLUSH_MS),
        }
    raise ValueError(f"unknown mode {mode!r}: use one of {MODES}")


def duplicate_bound(rate: int, faults: int, *, flush_ms: int = FLUSH_MS, slack_s: float = 4.0) -> int:
    """The at-least-once duplicate bound: what ``faults`` faults may re-copy, in records.

    A copy task commits the records the target acknowledged every ``flush_ms``; when it dies, what
    it copied since its last commit is copied again by its successor (MM2's rule, Connect's
    ``offset.flush.interval.ms``). With the copy caught up with a feed of ``rate`` records/s (all
    partitions together), that is at most the records produced in one flush interval, plus those
    produced while a commit is written and while records wait for their acknowledgement:
    ``slack_s`` seconds, generous on a loaded 2-core machine. Per fault, all partitions together::

        ceil(rate x (flush_ms / 1000 + slack_s))

    and ``faults`` times that. It holds only for faults that hit a caught-up copy
    (:meth:`Tail.wait_copying`): a kill while a backlog drains re-copies up to one flush interval
    at the copy's own (higher) rate.
    """
    return faults * math.ceil(rate * (flush_ms / 1000 + slack_s))


HANDOVER_SLACK_S = 0.5
"""What a hand-over may copy twice beyond one commit interval, s of the feed: a commit's write and its
acknowledgement, a copy loop's turn, a grant check (``GRANT_POLL_S``)."""


def one_flush_bound(rate: int, faults: int, flush_ms: int) -> int:
    """Records a hand-over may copy twice: one ``offset.flush.interval.ms`` of the feed per fault, plus slack.

    A new holder of a flow's lease starts from what the previous holder committed, read once the
    previous holder's last commit landed; the previous holder copied nothing past its last grant
    (``engine-audit-2.md`` N5): what is copied twice is what it copied since its last commit, at most
    ``flush_ms`` of the feed (``rate`` records/s, all partitions) plus :data:`HANDOVER_SLACK_S`::

        faults x ceil(rate x (flush_ms / 1000 + HANDOVER_SLACK_S))
    """
    return faults * math.ceil(rate * (flush_ms / 1000 + HANDOVER_SLACK_S))


def feed_sequence(value: bytes | None) -> int | None:
    """A :class:`Feed` value's sequence number (``None`` for any other value)."""
    parts = (value or b"").split(b"|")
    return int(parts[1]) if len(parts) >= 3 and parts[1].isdigit() else None


def order_breaks(
    bootstrap: Bootstrap,
    topic: str,
    mode: str,
    *,
    partitions: int,
    sequence: Callable[[bytes | None], int | None] = feed_sequence,
) -> list[str]:
    """Where the first copies of a source partition's records are out of upstream order (empty: nowhere).

    The randomized checker's ``order`` rule (``chaos_check``): in each remote partition, read as a
    consumer of ``mode`` does, the first copy of each record comes after the first copies of the
    records before it upstream, and lies in the partition of the same number. A feed writes
    sequence ``n`` to partition ``n % partitions`` from one idempotent producer: upstream order is
    the sequence's. Two writers at once (an old and a new holder of the flow's lease) break it.
    """
    seen: set[int] = set()
    newest: dict[int, int] = {}
    breaks: list[str] = []
    for r in consume_all(bootstrap, topic, timeout_s=180, read_committed=mode == EXACTLY_ONCE):
        n = sequence(r["value"])
        if n is None or n in seen:
            continue
        seen.add(n)
        p = r["partition"]
        if n % partitions != p:
            breaks.append(f"record {n} of partition {n % partitions} copied into remote partition {p}")
        elif n < newest.get(p, -1):
            breaks.append(f"remote partition {p}: record {n} first copied at offset {r['offset']}, after {newest[p]}")
        else:
            newest[p] = n
    return breaks


# --------------------------------------------------------------------------- the feed


class Feed:
    """A producer thread: ``rate`` records/s of unique values, round-robin over ``partitions``, until :meth:`finish`.

    Values are ``b"<tag>|<sequence %012d>|"`` followed by ``pad`` bytes of padding; the sequence
    starts at 0. The producer is idempotent (acks=all), so the source holds each value once. It keeps
    producing through a fault of the replicator; a fault of the *source* (paused, cut off) only delays
    acknowledgements (``message.timeout.ms`` 300 s), counted when they arrive.

    Parameters
    ----------
    bootstrap:
        The source cluster.
    topic:
        The source topic (exists, ``partitions`` partitions).
    partitions:
        Partitions to spread over.
    rate:
        Records per second, all partitions together.
    tag:
        Prefix of every value (default: the topic).
    pad:
        Bytes of padding per value (default 64).
    limit:
        Records to produce in all, then stop producing (:meth:`finish` still ends the thread);
        ``None``: until :meth:`finish`.

    Attributes
    ----------
    acked:
        Values the source acknowledged, in acknowledgement order.
    errors:
        Delivery errors (at most 20 kept); :meth:`finish` fails if there is any.
    sent:
        Records handed to the producer so far.
    """

    def __init__(
        self,
        bootstrap: Bootstrap,
        topic: str,
        partitions: int,
        rate: int,
        *,
        tag: str | None = None,
        pad: int = 64,
        limit: int | None = None,
    ) -> None:
        self.bootstrap, self.topic, self.partitions, self.rate = bootstrap, topic, partitions, rate
        self.limit = limit
        self.tag = (tag or topic).encode()
        self.pad = b"." * pad
        self.acked: list[bytes] = []
        self.errors: list[KafkaError] = []
        self.sent = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"fault-feed-{topic}", daemon=True)

    def start(self) -> Feed:
        """Start producing; returns ``self``."""
        self._thread.start()
        return self

    def _run(self) -> None:
        producer = Producer(
            client_config(
                self.bootstrap,
                **{"client.id": "mirrorspark-faults|feed", "enable.idempotence": True, "linger.ms": 5},
            )
        )
        t0 = time.monotonic()
        while not self._stop.is_set():
            due = int((time.monotonic() - t0) * self.rate) + 1
            if self.limit is not None:
                due = min(due, self.limit)
            while self.sent < due:
                n = self.sent
                try:
                    producer.produce(
                        self.topic,
                        self.tag + b"|%012d|" % n + self.pad,
                        partition=n % self.partitions,
                        on_delivery=self._delivered,
                    )
                except BufferError:
                    producer.poll(0.05)
                    continue
                self.sent = n + 1
            producer.poll(0)
            self._stop.wait(0.02)  # pacing, not a wait for a condition
        producer.flush(120)

    def _delivered(self, err: KafkaError | None, msg: Message) -> None:
        if err is not None:
            if len(self.errors) < 20:
                self.errors.append(err)
        else:
            self.acked.append(msg.value() or b"")

    def finish(self) -> set[bytes]:
        """Stop producing, wait for the acknowledgements; return the acknowledged values.

        Raises
        ------
        AssertionError
            If the thread did not end within 150 s or a delivery failed.
        """
        self._stop.set()
        self._thread.join(150)
        assert not self._thread.is_alive(), "the feed did not stop"
        assert not self.errors, f"{len(self.errors)} delivery error(s) on the source: {self.errors[:3]}"
        return set(self.acked)


# --------------------------------------------------------------------------- the tail


_NOT_YET = {KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError._UNKNOWN_TOPIC, KafkaError._UNKNOWN_PARTITION}
"""Consumer errors while the remote topic is not created yet: the tail waits for it."""


class Tail:
    """A consumer thread on the remote topic: which fed values arrived, and when each partition grew.

    It reads from the beginning with ``read_committed`` in exactly-once mode (records of open or
    aborted transactions are not delivered) and ``read_uncommitted`` in at-least-once mode, and
    keeps, per partition, the offset and arrival time (``time.monotonic()``) of each poll's newest
    record, plus the distinct values seen. Values that do not start with the feed's ``tag`` are
    ignored. Start it before the replicator creates the remote topic: it waits for the topic.

    Parameters
    ----------
    bootstrap:
        The target cluster.
    topic:
        The remote topic (e.g. ``primary.<topic>``).
    partitions:
        Its partition count (the source topic's).
    mode:
        One of :data:`MODES`.
    """

    def __init__(self, bootstrap: Bootstrap, topic: str, partitions: int, mode: str) -> None:
        self.bootstrap, self.topic, self.partitions, self.mode = bootstrap, topic, partitions, mode
        self.seen: set[bytes] = set()
        self.errors: list[str] = []
        self._arrivals: dict[int, list[tuple[int, float]]] = {p: [] for p in range(partitions)}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"fault-tail-{topic}", daemon=True)

    def start(self) -> Tail:
        """Start reading; returns ``self``."""
        self._thread.start()
        return self

    def _run(self) -> None:
        consumer = Consumer(
            client_config(
                self.bootstrap,
                **{
                    "group.id": f"mirrorspark-faults-tail-{os.getpid()}-{id(self)}",  # never joined
                    "client.id": "mirrorspark-faults|tail",
                    "enable.auto.commit": False,
                    "isolation.level": "read_committed" if self.mode == EXACTLY_ONCE else "read_uncommitted",
                    "fetch.wait.max.ms": 100,
                    "topic.metadata.refresh.interval.ms": 1000,
                    "log_level": 3,  # the topic may not exist yet: no warning per metadata refresh
                },
            )
        )
        try:
            consumer.assign([TopicPartition(self.topic, p, OFFSET_BEGINNING) for p in range(self.partitions)])
            while not self._stop.is_set():
                msgs = consumer.consume(num_messages=10_000, timeout=0.1)
                now = time.monotonic()
                newest: dict[int, int] = {}
                values = []
                for m in msgs:
                    err = m.error()
                    if err is not None:
                        if err.code() not in _NOT_YET and len(self.errors) < 20:
                            self.errors.append(str(err))
                        continue
                    p, o = m.partition(), m.offset()
                    if p is not None and o is not None:
                        newest[p] = max(newest.get(p, -1), o)
                    values.append(m.value() or b"")
                if not newest:
                    continue
                with self._lock:
                    self.seen.update(values)
                    for p, o in newest.items():
                        self._arrivals.setdefault(p, []).append((o, now))
        finally:
            consumer.close()

    def stop(self) -> None:
        """Stop reading (idempotent)."""
        self._stop.set()
        self._thread.join(30)

    def __enter__(self) -> Tail:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- questions ----------------------------------------------------------------------------

    def distinct(self, values: Iterable[bytes]) -> int:
        """How many of ``values`` arrived (at least once)."""
        with self._lock:
            return sum(1 for v in values if v in self.seen)

    def newest(self) -> dict[int, int]:
        """``{partition: newest offset delivered}`` (-1 for a partition with nothing yet)."""
        with self._lock:
            return {p: (a[-1][0] if a else -1) for p, a in self._arrivals.items()}

    def resumed_at(self, marks: Mapping[int, int]) -> float | None:
        """When every partition ``p`` had delivered a record at offset ``>= marks[p]`` (monotonic time), or None."""
        times = []
        with self._lock:
            for p, mark in marks.items():
                t = next((t for o, t in self._arrivals.get(p, []) if o >= mark), None)
                if t is None:
                    return None
                times.append(t)
        return max(times, default=None)

    # -- waits --------------------------------------------------------------------------------

    def wait_copying(
        self,
        feed: Feed,
        *,
        copy_s: float,
        lag_s: float = 2.0,
        alive: Callable[[], object] = lambda: None,
        timeout_s: float = 900.0,
    ) -> None:
        """Wait until the copy caught up with ``feed`` and every partition keeps growing, then ``copy_s`` more seconds.

        Growing: every partition delivers a record above the newest one seen when the wait began
        (the replicator is copying). Caught up: then, of the values the source acknowledged, at most
        ``lag_s`` seconds' worth at the feed's rate are not on the target yet (a backlog, e.g. what
        the feed produced while the replicator started, is drained). ``copy_s`` seconds of steady
        copying follow (several flush intervals: commits happen), so that a fault right after hits
        a caught-up copy (:func:`duplicate_bound`).

        Parameters
        ----------
        feed:
            The running feed.
        copy_s:
            Seconds of steady copying after the catch-up, seconds.
        lag_s:
            The lag still counted as caught up, seconds of the feed's records.
        alive:
            Called on every poll; raises (e.g. an ``AssertionError`` with the replicator's log) if the
            replicator died, which fails the wait at once.
        timeout_s:
            Deadline for the catch-up and the growth, seconds (a bound: JVMs may take minutes to
            start on a loaded machine).

        Raises
        ------
        AssertionError
            If the copy did not catch up or grow before the deadline.
        """
        began = time.monotonic()
        allowed = max(1, int(feed.rate * lag_s))

        def caught_up() -> bool:
            alive()
            acked = list(feed.acked)
            missing = len(acked) - self.distinct(acked)
            assert missing <= allowed, (
                f"{missing} of {len(acked)} fed records not on the target yet (tail errors: {self.errors[:3]})"
            )
            return True

        self.wait_resumed({p: o + 1 for p, o in self.newest().items()}, began, alive=alive, timeout_s=timeout_s)
        assert_eventually(caught_up, timeout_s=timeout_s, interval_s=0.2, message="the copy did not catch up")
        logger.info("%s: copying and caught up with the feed after %.1f s", self.topic, time.monotonic() - began)
        deadline = time.monotonic() + copy_s
        while time.monotonic() < deadline:  # steady copying, checked for the replicator's death
            alive()
            self._stop.wait(0.1)

    def wait_resumed(
        self,
        marks: Mapping[int, int],
        since: float,
        *,
        alive: Callable[[], object] = lambda: None,
        timeout_s: float = 900.0,
    ) -> float:
        """Wait until every partition delivered a record at or above ``marks``; return the seconds since ``since``.

        Parameters
        ----------
        marks:
            ``{partition: offset}``, typically :func:`high_watermarks` taken right after the fault:
            records at these offsets or above were written after it.
        since:
            ``time.monotonic()`` of the fault (the kill).
        alive:
            As in :meth:`wait_copying`.
        timeout_s:
            Deadline, seconds.

        Returns
        -------
        float
            Seconds from ``since`` to the arrival of the first new record of the last partition to
            resume: the "seconds until copying resumes" of the fault suite.
        """

        def resumed() -> float | None:
            alive()
            return self.resumed_at(marks)

        at = assert_eventually(resumed, timeout_s=timeout_s, interval_s=0.1, message="copying did not resume")
        logger.info("%s: every partition grew %.1f s after the mark", self.topic, at - since)
        return max(0.0, at - since)

    def wait_all(
        self, produced: set[bytes], *, alive: Callable[[], object] = lambda: None, timeout_s: float = 900.0
    ) -> None:
        """Wait until every value of ``produced`` arrived on the target (as the mode's consumer sees it)."""

        def complete() -> bool:
            alive()
            missing = len(produced) - self.distinct(produced)
            assert missing == 0, f"{missing} of {len(produced)} fed records not on the target"
            return True

        began = time.monotonic()
        assert_eventually(complete, timeout_s=timeout_s, interval_s=0.5, message="records were lost")
        logger.info("%s: all %d fed records arrived after %.1f s", self.topic, len(produced), time.monotonic() - began)


def high_watermarks(bootstrap: Bootstrap, topic: str) -> dict[int, int]:
    """``{partition: high watermark}`` of ``topic``: ``read_uncommitted`` end offsets (every record so far is below)."""
    return {p: e for p, (_, e) in end_offsets(bootstrap, topic, read_committed=False, timeout_s=30).items()}


# --------------------------------------------------------------------------- exact counts


@dataclass(frozen=True)
class Counted:
    """What a consumer of the remote topic sees of the fed values, counted exactly.

    Attributes
    ----------
    produced:
        Values the source acknowledged, records.
    received:
        Fed records read on the target (every copy), records.
    lost:
        Produced values never read on the target, records.
    duplicated:
        Copies beyond the first, records.
    foreign:
        Values read on the target that the source never acknowledged, records (a delivery that
        failed on the client but was written; never a duplicate).
    uncommitted_copies:
        Exactly-once only: copies beyond the first a ``read_uncommitted`` consumer sees (records of
        aborted transactions, invisible to ``read_committed`` ones), records; 0 in at-least-once mode.
    """

    produced: int
    received: int
    lost: int
    duplicated: int
    foreign: int
    uncommitted_copies: int


def _copies(bootstrap: Bootstrap, topic: str, tag: bytes, *, read_committed: bool) -> Counter[bytes]:
    return Counter(
        v
        for r in consume_all(bootstrap, topic, timeout_s=180, read_committed=read_committed)
        if (v := r["value"] or b"").startswith(tag)
    )


def count_copies(bootstrap: Bootstrap, topic: str, produced: set[bytes], mode: str, *, tag: bytes) -> Counted:
    """Read the remote topic to its end offsets and count each produced value's copies.

    Call it once :meth:`Tail.wait_all` returned (and, in at-least-once mode, once the replicator
    stopped, or at least once no fault is pending). Exactly-once mode reads ``read_committed``
    (what must hold exactly once) and, for the notes, ``read_uncommitted``.

    Parameters
    ----------
    bootstrap:
        The target cluster.
    topic:
        The remote topic.
    produced:
        :meth:`Feed.finish`'s values.
    mode:
        One of :data:`MODES`.
    tag:
        The feed's value prefix (other values of the topic are ignored).
    """
    eos = mode == EXACTLY_ONCE
    copies = _copies(bootstrap, topic, tag, read_committed=eos)
    uncommitted = 0
    if eos:
        raw = _copies(bootstrap, topic, tag, read_committed=False)
        uncommitted = sum(n - 1 for n in raw.values() if n > 1)
    seen = set(copies)
    return Counted(
        produced=len(produced),
        received=sum(copies.values()),
        lost=len(produced - seen),
        duplicated=sum(n - 1 for v, n in copies.items() if n > 1 and v in produced),
        foreign=len(seen - produced),
        uncommitted_copies=uncommitted,
    )


# --------------------------------------------------------------------------- the replicator as a process


class RunProcess:
    """``python -m mirrorspark run <properties> --quiet [args]`` as a subprocess in its own session.

    Each :meth:`launch` writes its output to ``<log_dir>/run-<n>.log``. The process runs this
    interpreter, so it imports the same mirrorspark as the test.

    Parameters
    ----------
    properties:
        The ``mm2.properties`` file.
    log_dir:
        Directory of the logs (exists).
    args:
        Further arguments of ``run`` (e.g. ``["--master", url, "--conf", "k=v"]``).
    env:
        Extra environment variables (e.g. ``MIRRORSPARK_SPARK_LOG_LEVEL``).

    Attributes
    ----------
    launches:
        How many times :meth:`launch` ran.
    proc:
        The current process, or ``None`` after :meth:`kill` / :meth:`stop`.
    """

    def __init__(
        self, properties: Path, log_dir: Path, args: Sequence[str] = (), env: Mapping[str, str] | None = None
    ) -> None:
        self.properties, self.log_dir, self.args = properties, log_dir, list(args)
        self.env = {**os.environ, "MIRRORSPARK_SPARK_LOG_LEVEL": "ERROR", **(env or {})}
        self.launches = 0
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def log(self) -> Path:
        """The current (last) launch's log."""
        return self.log_dir / f"run-{self.launches}.log"

    def launch(self) -> None:
        """Start ``mirrorspark run`` (a new launch; the previous process must be gone)."""
        assert self.proc is None, "the previous run is still there"
        self.launches += 1
        logger.info("launching mirrorspark run #%d", self.launches)
        with self.log.open("wb") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "mirrorspark", "run", str(self.properties), "--quiet", *self.args],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=self.env,
                start_new_session=True,  # its own process group: the JVM and the daemon are below it
            )

    def check(self) -> None:
        """Raise ``RuntimeError`` (with the log's tail) if the run exited: fails a poll at once."""
        if self.proc is not None and self.proc.poll() is not None:
            raise RuntimeError(f"mirrorspark run exited with {self.proc.returncode}:\n{self.tail()}")

    def tail(self, chars: int = 4000) -> str:
        """The last ``chars`` characters of the current launch's log."""
        return self.log.read_text(errors="replace")[-chars:] if self.log.exists() else ""

    def kill(self) -> None:
        """``kill -9`` of the whole run: every process group of its tree (driver, Spark JVM, PySpark daemon and
        its Python workers); returns once none of them is left."""
        assert self.proc is not None, "not running"
        _kill_groups(_tree_groups(self.proc.pid))
        self.proc.wait(30)
        self.proc = None
        logger.info("killed mirrorspark run #%d (kill -9 of every process group of its tree)", self.launches)

    def copy_task_workers(self, source_port: int) -> list[psutil.Process]:
        """The Spark Python workers of this run (local master) running a copy task: :func:`copy_task_workers`."""
        assert self.proc is not None, "not running"
        return copy_task_workers(self.proc.pid, source_port)

    def stop(self, timeout_s: float = 90.0) -> int | None:
        """Stop gracefully (SIGTERM: every copy task commits and ends), SIGKILL whatever is left after ``timeout_s``.

        Returns
        -------
        int or None
            The exit code of a graceful stop (0 expected), ``None`` if it had to be killed or was
            not running. Idempotent.
        """
        if self.proc is None:
            return None
        groups = _tree_groups(self.proc.pid)
        with contextlib.suppress(ProcessLookupError):
            self.proc.send_signal(signal.SIGTERM)
        code: int | None
        try:
            code = self.proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            code = None
        _kill_groups(groups | _tree_groups(self.proc.pid))  # the JVM or the daemon left behind, if any
        self.proc.wait(30)
        self.proc = None
        return code


def copy_task_workers(root: int, source_port: int) -> list[psutil.Process]:
    """The Spark Python workers below process ``root`` that are running a copy task.

    The children of the ``pyspark.daemon`` processes in ``root``'s tree (the daemon forks one per
    running Spark task) that hold a TCP connection to the source broker's ``source_port``: an idle
    reused worker holds none. ``root`` is a ``mirrorspark run`` (local master) or a Spark worker JVM.
    """
    out = []
    for proc in psutil.Process(root).children(recursive=True):
        with contextlib.suppress(psutil.NoSuchProcess, psutil.AccessDenied):
            parent = proc.parent()
            if (
                parent is not None
                and is_daemon_command(parent.cmdline())
                and any(c.raddr and c.raddr.port == source_port for c in proc.net_connections(kind="tcp"))
            ):
                out.append(proc)
    return out


def port_of(bootstrap: str) -> int:
    """The port of the first ``host:port`` of a ``bootstrap.servers`` string."""
    return int(bootstrap.split(",")[0].rsplit(":", 1)[1])


def summary(values: Sequence[float]) -> str:
    """``"12.1, 11.4 s"``: the seconds of each fault, for a figures row's notes."""
    return ", ".join(f"{v:.1f}" for v in values) + " s"


def conclude(
    scenario: str,
    mode: str,
    counted: Counted,
    *,
    faults: int,
    rate: int,
    resumes: Sequence[float],
    notes: str = "",
) -> None:
    """Record one scenario's figures in one mode (:func:`figures.record`), then assert what must hold.

    Recorded first, so that a failed scenario's figures are in the table too. The row's
    ``resume_s`` is the worst of ``resumes``; the notes list each, and in exactly-once mode the
    copies only a ``read_uncommitted`` consumer sees (records of aborted transactions).

    Parameters
    ----------
    scenario:
        The row's name, e.g. ``"kill -9 of the whole run, 4 times in a row"``.
    mode:
        One of :data:`MODES`.
    counted:
        :func:`count_copies`'s result.
    faults:
        How many times the fault struck (the at-least-once bound scales with it).
    rate:
        The feed's rate, records/s.
    resumes:
        Seconds until copying resumed, per fault.
    notes:
        Further notes for the row.

    Raises
    ------
    AssertionError
        If a record was lost, a value the source never acknowledged showed up, or duplicates
        exceed the mode's bound (0 in exactly-once mode; :func:`duplicate_bound` in at-least-once mode).
    """
    from figures import FaultFigures, record

    if mode == EXACTLY_ONCE:
        bound, bound_text = 0, "0 (read_committed)"
    else:
        bound = duplicate_bound(rate, faults)
        bound_text = f"<= {bound:,} ({faults} x {rate}/s x ({FLUSH_MS / 1000:g} s flush + 4 s slack))"
    parts = [f"{faults} fault(s), {rate} records/s fed throughout"]
    if resumes:
        parts.append(f"resumed after {summary(resumes)}")
    if mode == EXACTLY_ONCE:
        parts.append(f"{counted.uncommitted_copies:,} copies in aborted transactions (read_uncommitted only)")
    if counted.foreign:
        parts.append(f"{counted.foreign} values the source never acknowledged")
    if notes:
        parts.append(notes)
    record(
        FaultFigures(
            scenario=scenario,
            mode=mode,
            produced=counted.produced,
            lost=counted.lost,
            duplicated=counted.duplicated,
            resume_s=round(max(resumes), 1) if resumes else None,
            bound=bound_text,
            notes="; ".join(parts),
        )
    )
    assert counted.lost == 0, f"{counted.lost} of {counted.produced} records lost"
    assert counted.foreign == 0, f"{counted.foreign} values on the target the source never acknowledged"
    assert counted.duplicated <= bound, f"{counted.duplicated} duplicates, bound {bound_text}"
