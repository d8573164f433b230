"""One active instance per flow: a lease held through a Kafka consumer group on the flow's target.

Two ``mirrorspark run`` processes on the same configuration must not both copy a flow. Each
process keeps one :class:`FlowLease` per flow ``S->T``: a confluent-kafka consumer subscribed
(``subscribe()``) to the flow's **lease topic** on T, a member of the flow's **lease group**.
The group coordinator assigns the topic's one partition to exactly one live member: that
instance *holds* the lease and copies; every other member is a *standby*. When the holder dies
(even ``kill -9``) the coordinator drops it after ``session.timeout.ms``
(:data:`SESSION_TIMEOUT_MS`, 6 s) and hands the partition to a standby, which takes over
within seconds; on a clean stop (:meth:`FlowLease.close`) the holder leaves the group and a
standby takes over at once (about one heartbeat, :data:`HEARTBEAT_INTERVAL_MS`).

Names
-----
* Lease topic: ``mm2-lease<isep><source><isep>internal`` on the target (:func:`lease_topic`),
  built like the flow policy's offset-syncs topic (:func:`~mirrorspark.mm2.internal_topics.mirrorspark_topic`),
  so the policy sees it as an MM2 internal topic and never replicates it. 1 partition,
  ``cleanup.policy=compact``, created if missing with the flow's
  ``checkpoints.topic.replication.factor`` (as the control and progress topics).
* Lease group: ``mirrorspark-lease-<source>-><target>``, e.g. ``mirrorspark-lease-A->B``
  (:func:`lease_group`; the flow name keeps it unambiguous when aliases contain ``-``). It
  replaces any ``group.id`` of the target consumer settings.

Consumer settings (:func:`lease_consumer_overrides`, on top of the flow's target consumer settings)
------------------------------------------------------------------------------------------------
* ``session.timeout.ms=6000`` (the broker's default ``group.min.session.timeout.ms``): how long
  after a holder's last heartbeat the coordinator gives its lease to a standby, hence the
  takeover delay after a crash; ``heartbeat.interval.ms=1000``.
* ``partition.assignment.strategy=cooperative-sticky``: the holder keeps the partition when a
  standby joins (with the eager ``range``/``roundrobin`` assignors every join reassigns from
  scratch by member id, so a standby starting would take the lease from a working holder about
  half of the time).
* ``group.protocol=classic`` (the KIP-848 protocol ignores the client's session timeout and
  assignor), ``group.instance.id`` emptied (a static member sends no ``LeaveGroup`` on close, so
  a clean stop would wait for the session timeout), ``enable.auto.commit=false``.

Polling
-------
A background thread (``lease-<flow>``, daemon) polls the consumer every
:data:`POLL_INTERVAL_S` (0.2 s); the group's rebalance callbacks run on it, and so do the
``on_acquired``/``on_lost`` callbacks given to :class:`FlowLease` (keep them short; they may
call :meth:`FlowLease.close`, which then does not wait for its own thread). The driver
needs no polling of its own: it asks :attr:`FlowLease.held` / :meth:`FlowLease.holds`, or waits
with :meth:`FlowLease.wait_acquired`.

Epoch (fencing)
---------------
Every time an instance takes the lease it writes a **claim** record (key ``{"flow":"A->B"}``,
value: holder, member id, time; :class:`LeaseClaim`) to partition 0 of the lease topic and,
once acknowledged (``acks=all``, idempotent producer), commits ``offset + 1`` for that
partition in the lease group. The **epoch** of that holding is ``claim offset + 1``
(:func:`claim_epoch`). The commit is checked by the group coordinator against the member's
generation: it fails for a member that has lost the partition (``ILLEGAL_GENERATION``,
``UNKNOWN_MEMBER_ID``, ...), and then the instance does not take the lease. So an epoch is
only granted to a member that owned the partition *after* its claim was written, and any later
holder writes its claim after that ownership ended: epochs strictly increase across takeovers,
in every process, and a zombie (an old holder that has not noticed its loss yet) always has a
smaller epoch than the current holder. The lease group's committed offset on the lease topic
(``kafka-consumer-groups --describe --group mirrorspark-lease-A->B``) is the current epoch.
Epochs start over only if the lease topic is deleted (log offsets restart at 0).

Grants and take-overs under a partition (``docs/design.md``, continuous engine item 8)
-------------------------------------------------------------------------------------
While it holds the lease, the lease thread sends a **contact check** every :data:`CONTACT_CHECK_S`
(an asynchronous commit of the epoch, one in flight); each success moves the holding's last
confirmed contact with the coordinator, which caps every grant (:meth:`FlowLease.grant`), and a
new holder starts no earlier than :attr:`FlowLease.safe_at`: the rules are
:class:`~mirrorspark.replication.lease_window.GrantWindow`'s.

Notes
-----
MM2 gets the same guarantee from Kafka Connect's distributed herder: the workers of a
Connect cluster form a group (``group.id``, ``session.timeout.ms`` 10 s) and the leader
assigns each connector and task to one worker; with exactly-once source support a task's
producer is fenced by ``transactional.id`` epochs (KIP-618). mirrorspark has no Connect
cluster, so it keeps one small group per flow on the target.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from collections.abc import Callable
from typing import Any, Final

from confluent_kafka import KafkaError, KafkaException, TopicPartition

from mirrorspark.client.context import FlowContext
from mirrorspark.core.lease_claims import LeaseClaim, claim_epoch, encode_claim, lease_topic, permission_hint
from mirrorspark.errors import ClusterError
from mirrorspark.mm2.internal_topics import lease_group
from mirrorspark.replication.lease_window import GrantWindow
from mirrorspark.replication.task_configs import COMMIT_TIMEOUT_MS

log = logging.getLogger(__name__)

LEASE_PARTITION: Final = 0
"""The lease topic partition whose owner holds the lease."""

SESSION_TIMEOUT_MS: Final = 6000
"""Default ``session.timeout.ms`` of the lease consumer, in ms: a crashed holder's lease goes to a
standby this long after its last heartbeat (6000 is the broker's default minimum)."""

HEARTBEAT_INTERVAL_MS: Final = 1000
"""Default ``heartbeat.interval.ms`` of the lease consumer, in ms: also about how long a standby
takes to notice that a holder left on a clean stop."""

ASSIGNMENT_STRATEGY: Final = "cooperative-sticky"
"""``partition.assignment.strategy`` of the lease consumer: a holder keeps its lease when standbys join."""

POLL_INTERVAL_S: Final = 0.2
"""Seconds between two polls of the lease consumer by its background thread."""

CLAIM_TIMEOUT_S: Final = 10.0
"""Seconds one claim (write + commit) may take before it is tried again."""

CLAIM_RETRY_S: Final = 1.0
"""Seconds between two attempts at a claim that failed (the partition is still assigned)."""

CLOSE_TIMEOUT_S: Final = 30.0
"""Default seconds :meth:`FlowLease.close` waits for the consumer to leave the group."""

CONTACT_CHECK_S: Final = 1.0
"""Seconds between two contact checks of the holder (an asynchronous commit of its epoch, one in flight)."""

CONTACT_CHECK_STALE_S: Final = 30.0
"""Seconds after which a contact check still unanswered is given up (a new one may be sent)."""


def lease_consumer_overrides(
    group_id: str,
    *,
    session_timeout_ms: int = SESSION_TIMEOUT_MS,
    heartbeat_interval_ms: int = HEARTBEAT_INTERVAL_MS,
) -> dict[str, Any]:
    """Return the librdkafka settings of the lease consumer that win over the flow's target consumer settings.

    Parameters
    ----------
    group_id:
        The lease group (:func:`lease_group`).
    session_timeout_ms:
        ``session.timeout.ms``, in ms: the takeover delay after a holder's crash. The broker
        accepts ``group.min.session.timeout.ms`` (6000) to ``group.max.session.timeout.ms``.
    heartbeat_interval_ms:
        ``heartbeat.interval.ms``, in ms; less than ``session_timeout_ms``.

    Returns
    -------
    dict[str, Any]
        A new dict (see the module notes for why each setting).

    Raises
    ------
    ValueError
        If a duration is not positive or the heartbeat interval is not below the session timeout.
    """
    if session_timeout_ms <= 0 or heartbeat_interval_ms <= 0 or heartbeat_interval_ms >= session_timeout_ms:
        raise ValueError(
            f"lease consumer: heartbeat interval ({heartbeat_interval_ms} ms) must be positive and below "
            f"the session timeout ({session_timeout_ms} ms)"
        )
    return {
        "group.id": group_id,
        "group.protocol": "classic",
        "group.instance.id": "",
        "session.timeout.ms": session_timeout_ms,
        "heartbeat.interval.ms": heartbeat_interval_ms,
        "partition.assignment.strategy": ASSIGNMENT_STRATEGY,
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        "enable.partition.eof": False,
    }


def default_holder() -> str:
    """Name of this process in claims: ``"<hostname>:<pid>"``."""
    return f"{socket.gethostname()}:{os.getpid()}"


def _reason(err: object) -> str:
    if isinstance(err, KafkaException) and err.args:
        err = err.args[0]
    if isinstance(err, KafkaError):
        return f"{err.str()} ({err.name()})"
    return str(err)


def _kafka_code(err: object) -> str | None:
    if isinstance(err, KafkaException) and err.args:
        err = err.args[0]
    return err.name() if isinstance(err, KafkaError) else None


class FlowLease:
    """The lease of one flow: at most one instance (process) holds it; the others wait as standbys.

    See the module notes for the names, the consumer settings, the background thread and how
    :attr:`epoch` is granted.

    Parameters
    ----------
    context:
        The flow's context; the lease uses the target's admin, producer and consumer settings
        (client ids ``A->B|mirrorspark|lease-admin``, ``lease-producer``, ``lease-consumer``).
    group_id:
        The lease group (default :func:`lease_group` of the flow; tests give a unique one).
    session_timeout_ms, heartbeat_interval_ms:
        The lease consumer's ``session.timeout.ms`` and ``heartbeat.interval.ms``, in ms
        (:func:`lease_consumer_overrides`).
    on_acquired:
        Called with the new epoch when this instance takes the lease (on the lease thread).
    on_lost:
        Called with the epoch that ended when this instance loses the lease it held: the
        partition was revoked or the membership lost (session timed out, e.g. the target was
        unreachable for longer than the session timeout), or the lease thread failed. Not
        called by :meth:`close`. Runs on the lease thread; keep it short.
    holder:
        Name of this instance in its claims (default ``"<hostname>:<pid>"``).
    landing_ms:
        How late a copy task's commit write may land after its grant check, in ms: the commit
        producers' ``message.timeout.ms`` (default
        :data:`~mirrorspark.replication.task_configs.COMMIT_TIMEOUT_MS`). A new holder waits this
        long after its assignment (:attr:`safe_at`); a holder giving the lease up waits this long
        past its last grant, unless its tasks ended (:meth:`void_grants`).
    clock:
        Monotonic seconds (tests inject one); every deadline of the lease is on it.

    Attributes
    ----------
    context, holder:
        As given.
    flow:
        The flow's name, ``"A->B"``.
    group_id:
        The lease group.
    topic:
        The lease topic on the flow's target (:func:`lease_topic`).

    Raises
    ------
    ValueError
        As :func:`lease_consumer_overrides`.

    Notes
    -----
    Typical use by a driver::

        lease = FlowLease(ctx, on_lost=lambda epoch: stop_copying())
        lease.start()
        while not lease.wait_acquired(5.0):
            pass  # standby
        epoch = lease.epoch  # tag this holding's work; check lease.holds(epoch) before committing
        ...
        lease.close()  # a standby takes over at once

    Thread-safe: the properties may be read from any thread.
    """

    def __init__(
        self,
        context: FlowContext,
        *,
        group_id: str | None = None,
        session_timeout_ms: int = SESSION_TIMEOUT_MS,
        heartbeat_interval_ms: int = HEARTBEAT_INTERVAL_MS,
        on_acquired: Callable[[int], None] | None = None,
        on_lost: Callable[[int], None] | None = None,
        holder: str | None = None,
        landing_ms: int = COMMIT_TIMEOUT_MS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.context = context
        self.flow_name = context.name
        self.group_id = group_id if group_id is not None else lease_group(context.name)
        self.topic = lease_topic(context.flow.source, context.policy)
        self.holder = holder if holder is not None else default_holder()
        self._overrides = lease_consumer_overrides(
            self.group_id, session_timeout_ms=session_timeout_ms, heartbeat_interval_ms=heartbeat_interval_ms
        )
        self._overrides["on_commit"] = self._on_commit
        self._window = GrantWindow(session_timeout_ms=session_timeout_ms, landing_ms=landing_ms, clock=clock)
        self._clock = clock
        self._on_acquired = on_acquired
        self._on_lost = on_lost
        self._lock = threading.Lock()
        self._acquired = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._consumer: Any = None
        self._producer: Any = None
        self._assigned = False  # the lease partition is in this member's assignment
        self._held = False
        self._joined = False
        self._standby_logged = False
        self._epoch = 0
        self._own_epochs: set[int] = set()  # epochs of every claim this instance wrote (a failed commit too)
        self._retry_at = 0.0
        self._claim_failure: str | None = None
        self._failure: BaseException | None = None
        self._closing = False
        self._assigned_at = 0.0  # when the lease partition was last assigned (monotonic s)
        self._check: tuple[str, float] | None = None  # the contact check in flight: its tag and when it was sent
        self._checks_sent = 0  # contact checks sent by this lease (numbers their tags)
        self._claim_answer: list[Any] | None = None  # the claim's commit in flight: its answer once it came
        self._claim_epoch = -1  # the offset the claim's commit in flight commits
        self._next_check = 0.0

    # -- state ------------------------------------------------------------------------------------

    @property
    def held(self) -> bool:
        """Whether this instance holds the lease now (its claim written and committed, not lost since)."""
        return self._held

    @property
    def started(self) -> bool:
        """Whether :meth:`start` was called (the lease thread runs or ran)."""
        return self._thread is not None

    @property
    def standby(self) -> bool:
        """Whether this instance is a member of the lease group without the lease (another instance holds it)."""
        return self._joined and not self._assigned and self._failure is None and not self._closing

    @property
    def epoch(self) -> int:
        """Epoch of this instance's current holding, or of its last one once lost; 0 if it never held the lease.

        Strictly greater than the epoch of every earlier holding of the flow's lease by any
        instance (module notes: ``claim offset + 1``).
        """
        return self._epoch

    def claimed_only_by_self(self, after: int, upto: int) -> bool:
        """Whether every epoch in ``(after, upto)`` is a claim this instance wrote (no other holder between).

        Parameters
        ----------
        after, upto:
            Two epochs of this instance's holdings (claim offsets + 1): an older one and the current one.
        """
        with self._lock:
            return all(e in self._own_epochs for e in range(after + 1, upto))

    @property
    def failure(self) -> BaseException | None:
        """What stopped the lease thread (a fatal consumer error), or ``None`` while it runs."""
        return self._failure

    @property
    def safe_at(self) -> float:
        """When this holding may read the committed offsets and start copying (monotonic s).

        ``landing_ms`` after the lease partition was assigned; at once for epoch 1
        (:class:`~mirrorspark.replication.lease_window.GrantWindow`).
        """
        return self._window.safe_at

    @property
    def contact_at(self) -> float:
        """When (monotonic s) this instance sent its newest round trip to the coordinator that succeeded (0: none)."""
        return self._window.contact_at

    def grant(self, epoch: int, seconds: float) -> float | None:
        """Return a grant deadline for the tasks of the holding ``epoch``, or ``None`` when none may be given.

        ``now + seconds``, capped at ``contact_at + session.timeout.ms - CONTACT_MARGIN_MS``:
        before the coordinator could give the lease to another instance, whatever happened to the
        network since (:meth:`~mirrorspark.replication.lease_window.GrantWindow.grant`).

        Parameters
        ----------
        epoch:
            The holding the tasks were started under.
        seconds:
            The grant's length at most (s).

        Returns
        -------
        float or None
            An absolute deadline on this lease's monotonic clock (s); ``None`` when the holding
            ``epoch`` is over or its last confirmed contact is too old. Thread-safe.
        """
        if not self.holds(epoch):
            return None
        return self._window.grant(seconds)

    def may_grant(self, epoch: int) -> bool:
        """Whether the holding ``epoch`` can grant now: held, its last confirmed contact recent enough.

        ``False`` while the coordinator has not answered for ``session.timeout.ms -
        CONTACT_MARGIN_MS``: the lease may be lost without this instance having noticed yet.
        """
        return self.holds(epoch) and self._window.fresh()

    def void_grants(self) -> None:
        """Say that no copy task uses this holding's grants any more (they all ended).

        Then giving the lease up (:meth:`close`, a revoked partition) waits for nothing: without
        it, it waits until ``landing_ms`` past the latest deadline granted.
        """
        self._window.void()

    def _wait_grants_spent(self) -> None:
        """Block until every grant of this holding ended and its writes landed, or :meth:`void_grants`."""
        left = self._window.spent_in()
        if left > 0:
            log.info(
                "flow %s: giving the lease up in at most %.1f s, once the copy tasks' grants have run out",
                self.flow_name,
                left,
            )
            self._window.wait_spent()

    def holds(self, epoch: int) -> bool:
        """Whether this instance still holds the lease it took at ``epoch``.

        Parameters
        ----------
        epoch:
            An epoch returned by :attr:`epoch` while :attr:`held`.

        Returns
        -------
        bool
            ``False`` once that holding was lost, even if the lease was taken again since
            (under a new epoch).
        """
        with self._lock:
            return self._held and self._epoch == epoch

    def wait_acquired(self, timeout_s: float | None = None) -> bool:
        """Wait until this instance holds the lease.

        Parameters
        ----------
        timeout_s:
            Seconds to wait at most (``None``: no limit).

        Returns
        -------
        bool
            Whether it holds the lease on return (``False`` at once after :meth:`close`).

        Raises
        ------
        ClusterError
            The lease thread stopped on a fatal error (it will never be acquired).
        RuntimeError
            :meth:`start` was not called.
        """
        if self._thread is None:
            raise RuntimeError(f"flow {self.flow_name}: lease not started")
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while True:
            step = 0.5 if deadline is None else min(0.5, max(0.0, deadline - time.monotonic()))
            if self._acquired.wait(step) and self._held:
                return True
            self._raise_failure()
            if self._closing or (deadline is not None and time.monotonic() >= deadline):
                return self._held

    def _raise_failure(self) -> None:
        failure = self._failure
        if failure is not None:
            target = self.context.flow.target
            code = _kafka_code(failure)
            hint = permission_hint(code, group=self.group_id, topic=self.topic, cluster=target)
            raise ClusterError(
                f"flow {self.flow_name}: the lease consumer on cluster '{target}' stopped: {_reason(failure)}{hint}",
                kafka_code=code,
            ) from failure

    # -- lifecycle --------------------------------------------------------------------------------

    def start(self, *, timeout_s: float | None = None) -> None:
        """Create the lease topic if missing, join the lease group and start the lease thread.

        Returns at once; :meth:`wait_acquired` tells when (and whether) the lease is held.

        Parameters
        ----------
        timeout_s:
            Seconds the topic creation may take (default: the flow's ``admin.timeout.ms``).

        Raises
        ------
        ClusterError
            The lease topic could not be created (e.g. a replication factor above the broker count).
        ConfigError
            The target's client settings are invalid.
        RuntimeError
            Called twice.
        """
        if self._thread is not None:
            raise RuntimeError(f"flow {self.flow_name}: lease already started")
        flow = self.context.flow
        admin = self.context.cluster_admin("target", "lease-admin")
        admin = admin if timeout_s is None else admin.with_timeout(timeout_s)
        admin.ensure_topic(
            self.topic,
            partitions=1,
            replication_factor=flow.checkpoints_topic_replication_factor,
            config={"cleanup.policy": "compact"},
        )
        self._producer = self.context.producer(
            "target",
            "lease-producer",
            overrides={
                "enable.idempotence": True,
                "acks": "all",
                "linger.ms": 0,
                "message.timeout.ms": int(CLAIM_TIMEOUT_S * 1000),
            },
        )
        self._consumer = self.context.consumer("target", "lease-consumer", overrides=self._overrides)
        self._consumer.subscribe(
            [self.topic], on_assign=self._on_assign, on_revoke=self._on_revoke, on_lost=self._on_lost_partitions
        )
        self._thread = threading.Thread(target=self._run, name=f"lease-{self.flow_name}", daemon=True)
        self._thread.start()

    def close(self, timeout_s: float = CLOSE_TIMEOUT_S) -> None:
        """Give the lease up and leave the lease group, so that a standby takes over at once.

        Idempotent. ``on_lost`` is not called. Called from the lease thread itself (an
        ``on_lost`` callback), it only asks the thread to stop.

        Parameters
        ----------
        timeout_s:
            Seconds to wait for the lease thread to leave the group (default 30).
        """
        with self._lock:
            was_held = self._held and not self._closing
            self._closing = True
            self._held = False
            self._acquired.clear()
        if was_held:
            log.info("flow %s: giving the lease up (epoch %d)", self.flow_name, self._epoch)
        self._stop.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout_s)
            if thread.is_alive():
                log.warning(
                    "flow %s: the lease consumer did not leave its group within %.0f s", self.flow_name, timeout_s
                )

    def __enter__(self) -> FlowLease:
        """Start the lease (:meth:`start`)."""
        self.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        """Give the lease up (:meth:`close`)."""
        self.close()

    def __repr__(self) -> str:
        state = "held" if self._held else "standby" if self.standby else "waiting"
        return f"FlowLease({self.flow_name!r}, group={self.group_id!r}, {state}, epoch={self._epoch})"

    # -- the lease thread -------------------------------------------------------------------------

    def _run(self) -> None:
        consumer = self._consumer
        try:
            while not self._stop.is_set():
                msg = consumer.poll(POLL_INTERVAL_S)  # rebalance callbacks run in here
                if msg is not None and msg.error() is not None:
                    self._poll_error(msg.error())
                claim_due = self._assigned and not self._held and time.monotonic() >= self._retry_at
                if claim_due and not self._stop.is_set():
                    self._claim()
                elif self._held:
                    self._check_contact()
        except Exception as e:  # a fatal consumer error: the lease is gone for good
            log.error("flow %s: the lease consumer failed: %s", self.flow_name, _reason(e))
            self._failure = e
            self._release("the lease consumer failed")
        finally:
            self._shutdown()

    def _check_contact(self) -> None:
        """Send a contact check when due: commit the epoch again, tagged, asynchronously, one in flight (L3)."""
        now = self._clock()
        if self._check is not None and now - self._check[1] < CONTACT_CHECK_STALE_S:
            return
        if now < self._next_check:
            return
        self._checks_sent += 1
        tag = f"mirrorspark contact check {self._checks_sent}"
        self._check = (tag, now)  # a stale check is given up: its late answer no longer matches (L3)
        self._next_check = now + CONTACT_CHECK_S
        try:
            tp = TopicPartition(self.topic, LEASE_PARTITION, self._epoch, metadata=tag)
            self._consumer.commit(offsets=[tp], asynchronous=True)
        except KafkaException as e:  # refused at once (e.g. no coordinator known): no contact this time
            self._check = None
            log.debug("flow %s: lease contact check not sent: %s", self.flow_name, _reason(e))

    def _commit_claim(self, epoch: int) -> None:
        """Commit the claim's offset (``epoch``) with this member's generation; wait at most :data:`CLAIM_TIMEOUT_S`.

        Asynchronous, its answer served by this thread's polls: a synchronous commit waits for a
        coordinator with no limit (librdkafka), and a lease thread stuck in it after the target
        came back never claimed again (the flow stalled for minutes).

        Raises
        ------
        KafkaException
            The commit failed (e.g. the partition moved on: another member's generation).
        ClusterError
            No answer within :data:`CLAIM_TIMEOUT_S` (retriable: the claim is tried again).
        """
        self._claim_answer, self._claim_epoch = [], epoch
        try:
            self._consumer.commit(offsets=[TopicPartition(self.topic, LEASE_PARTITION, epoch)], asynchronous=True)
            deadline = time.monotonic() + CLAIM_TIMEOUT_S
            while not self._claim_answer:
                if time.monotonic() >= deadline:
                    raise ClusterError(
                        f"the claim's commit was not answered within {CLAIM_TIMEOUT_S:.0f} s", retriable=True
                    )
                msg = self._consumer.poll(POLL_INTERVAL_S)  # serves the answer (and rebalance callbacks)
                if msg is not None and msg.error() is not None:
                    self._poll_error(msg.error())
            err = self._claim_answer[0]
        finally:
            self._claim_answer = None
        if err is not None:
            raise KafkaException(err)

    def _on_commit(self, err: Any, partitions: Any) -> None:
        """Take the answer to the claim's commit or to the contact check in flight (matched by its tag, L3)."""
        parts = [p for p in partitions or () if p.topic == self.topic and p.partition == LEASE_PARTITION]
        if self._claim_answer is not None and any(p.offset == self._claim_epoch for p in parts):
            self._claim_answer.append(err)
            return
        check = self._check
        if check is None or not any(p.metadata == check[0] for p in parts):
            return  # a late claim commit, a stale check given up, or a check of a holding that ended
        self._check = None
        if err is None and all(p.error is None for p in parts):
            self._window.contact(check[1])
        else:
            log.debug("flow %s: lease contact check failed: %s", self.flow_name, _reason(err))

    def _poll_error(self, err: Any) -> None:
        if isinstance(err, KafkaError) and (
            err.fatal() or err.code() in (KafkaError.GROUP_AUTHORIZATION_FAILED, KafkaError.TOPIC_AUTHORIZATION_FAILED)
        ):
            # not retried: the lease could never be acquired, the flow would wait as a standby forever
            raise KafkaException(err)
        log.debug("flow %s: lease consumer: %s", self.flow_name, _reason(err))

    def _shutdown(self) -> None:
        with self._lock:
            self._closing = True
        if self._held or self._window.granted_until:
            self._wait_grants_spent()  # leaving the group hands the lease over at once
        try:
            self._consumer.close()  # revokes (on_revoke) and leaves the group: a standby takes over now
        except Exception as e:
            log.warning("flow %s: closing the lease consumer failed: %s", self.flow_name, _reason(e))
        self._producer = None  # nothing in flight: every claim was flushed
        with self._lock:
            was_held, self._held, self._assigned = self._held, False, False
            self._acquired.clear()
        if was_held:
            log.info("flow %s: released the lease (epoch %d)", self.flow_name, self._epoch)

    def _is_lease(self, partitions: list[TopicPartition]) -> bool:
        return any(p.topic == self.topic and p.partition == LEASE_PARTITION for p in partitions)

    def _on_assign(self, _consumer: Any, partitions: list[TopicPartition]) -> None:
        self._joined = True
        if self._is_lease(partitions):
            self._assigned = True
            self._assigned_at = self._clock()
            self._retry_at = 0.0
        elif not self._assigned and not self._standby_logged:
            self._standby_logged = True
            log.info("flow %s: standby, waiting for the lease held by another instance", self.flow_name)

    def _on_revoke(self, _consumer: Any, partitions: list[TopicPartition]) -> None:
        if self._is_lease(partitions):
            self._release("its partition was reassigned")
            if not self._closing:
                self._wait_grants_spent()  # the partition goes to another member once this returns

    def _on_lost_partitions(self, _consumer: Any, partitions: list[TopicPartition]) -> None:
        self._joined = False  # no longer a member: a standby again only once it has rejoined
        if self._is_lease(partitions) or self._assigned:
            self._release("the group membership was lost (no heartbeat answered within the session timeout)")

    def _release(self, why: str) -> None:
        with self._lock:
            was_held, self._held, self._assigned = self._held, False, False
            self._acquired.clear()
            self._check = None
            closing = self._closing
            epoch = self._epoch
        self._standby_logged = False
        if not was_held:
            return
        if closing:
            log.info("flow %s: released the lease (epoch %d)", self.flow_name, epoch)
            return
        log.warning(
            "flow %s: lost the lease (epoch %d): %s; another instance may take over", self.flow_name, epoch, why
        )
        if self._on_lost is not None:
            try:
                self._on_lost(epoch)
            except Exception:
                log.exception("flow %s: the on_lost callback of the lease failed", self.flow_name)

    def _claim(self) -> None:
        """Write a claim, commit its offset + 1 with this member's generation; hold the lease if both succeed."""
        claim = LeaseClaim(self.flow_name, self.holder, self._consumer.memberid() or "", int(time.time() * 1000))
        key, value = encode_claim(claim)
        result: dict[str, Any] = {}

        def on_delivery(err: Any, msg: Any) -> None:
            result["err"] = err
            result["offset"] = msg.offset() if err is None and msg is not None else None

        sent = 0.0
        try:
            self._producer.produce(self.topic, value, key, partition=LEASE_PARTITION, on_delivery=on_delivery)
            self._producer.flush(CLAIM_TIMEOUT_S)
            if "err" not in result:
                raise ClusterError(f"no acknowledgement within {CLAIM_TIMEOUT_S:.0f} s", retriable=True)
            if result["err"] is not None:
                raise KafkaException(result["err"])
            offset = result["offset"]
            if offset is None or offset < 0:
                raise ClusterError("the acknowledgement carries no offset")
            epoch = claim_epoch(offset)
            with self._lock:
                self._own_epochs.add(epoch)
            # Checked against this member's generation: fails if the partition has moved on.
            sent = self._clock()  # also the holding's first contact (a commit keeps the session)
            self._commit_claim(epoch)
        except (KafkaException, ClusterError, BufferError) as e:
            reason = _reason(e)
            if reason != self._claim_failure:
                log.warning(
                    "flow %s: taking the lease failed on cluster '%s' (trying again every %.0f s): %s",
                    self.flow_name,
                    self.context.flow.target,
                    CLAIM_RETRY_S,
                    reason,
                )
            self._claim_failure = reason
            self._retry_at = time.monotonic() + CLAIM_RETRY_S
            return
        self._claim_failure = None
        with self._lock:
            if not self._assigned or self._closing:
                return
            self._epoch = epoch
            self._check = None
            self._next_check = sent + CONTACT_CHECK_S
            # epoch 1: no instance held the flow's lease before, nothing to wait out
            self._window.begin(assigned_at=self._assigned_at, contact_at=sent, first=epoch == 1)
            self._held = True
            self._acquired.set()
        log.info("flow %s: holds the lease (epoch %d, group '%s')", self.flow_name, epoch, self.group_id)
        if self._on_acquired is not None:
            try:
                self._on_acquired(epoch)
            except Exception:
                log.exception("flow %s: the on_acquired callback of the lease failed", self.flow_name)


__all__ = [
    "ASSIGNMENT_STRATEGY",
    "CLAIM_RETRY_S",
    "CLAIM_TIMEOUT_S",
    "CLOSE_TIMEOUT_S",
    "CONTACT_CHECK_S",
    "CONTACT_CHECK_STALE_S",
    "HEARTBEAT_INTERVAL_MS",
    "POLL_INTERVAL_S",
    "SESSION_TIMEOUT_MS",
    "FlowLease",
    "default_holder",
    "lease_consumer_overrides",
]
