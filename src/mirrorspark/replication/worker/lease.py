"""One active instance per flow: a lease held through a Kafka consumer group on the flow's target.

Each ``mirrorspark run`` keeps one :class:`FlowLease` per flow ``S->T``: a consumer of the flow's
**lease group** (:func:`lease_group`) subscribed to its one-partition compacted **lease topic** on T
(``internal_topics.lease``). The coordinator assigns the partition to one live member, which *holds* the
lease and copies; the others are *standbys*. A dead holder is dropped after :data:`SESSION_TIMEOUT_MS`;
a clean stop (:meth:`FlowLease.close`) leaves the group at once. The consumer settings
(:func:`lease_consumer_overrides`) say why each is chosen. A daemon thread (``lease-<flow>``) polls the
consumer and runs the callbacks.

Taking the lease writes a **claim** (:class:`LeaseClaim`) and, once acknowledged, commits the claim's
offset plus one: the holding's **epoch** (:func:`claim_epoch`). While holding, a **contact check** (a
tagged asynchronous commit) every :data:`CONTACT_CHECK_S` moves the confirmed contact, which caps every
grant (:class:`~mirrorspark.replication.worker.lease_window.GrantWindow`). MM2 gets one active instance
from Connect's distributed herder instead.

Invariants (the tests that guard them cite them)
------------------------------------------------
* **L1** Epochs strictly increase across holdings, in every process: the claim's commit fails for a
  member that lost the partition, so a later holder claims after that ownership ended, and a zombie
  always has the smaller epoch. Epochs start over only if the lease topic is deleted.
* **L2** A grant never reaches past ``contact + session.timeout.ms - CONTACT_MARGIN_MS`` (the
  window), ``contact`` being when the newest round trip the coordinator answered (the claim's
  commit, then the contact checks) was *sent*; a holding that ended grants nothing.
* **L3** An answer is credited only to the contact check it answers (matched by its tag): a check
  unanswered for :data:`CONTACT_CHECK_STALE_S` is given up and its late answer confirms nothing, so
  a grant never reaches past the send time of the check answered + the window (engine-audit-2 N1).
* **L4** :meth:`FlowLease.claimed_only_by_self` holds only if every epoch in between is a claim this
  instance wrote and saw acknowledged (its commit may have failed); an unacknowledged claim that
  landed counts as another holder's (conservative).
* **L5** A new holding reads committed offsets and grants no earlier than :attr:`FlowLease.safe_at`:
  ``landing_ms`` after its assignment (at once for epoch 1).
* **L6** Giving the lease back (revoked, closed) waits until every grant ended and its writes could
  land, unless :meth:`FlowLease.void_grants` said no task is left.
* **L7** A generation told to abort never gets a grant again, and its late tasks are told ``abort``
  (:class:`~mirrorspark.replication.worker.grant_server.GrantServer`; engine-audit-2 N7).
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
from mirrorspark.core.lease_claims import LeaseClaim, claim_epoch, encode_claim, permission_hint
from mirrorspark.errors import ClusterError
from mirrorspark.mm2.internal_topics import lease_group
from mirrorspark.replication.connector.internal_topic_specs import internal_topic
from mirrorspark.replication.connector.task_configs import COMMIT_TIMEOUT_MS
from mirrorspark.replication.worker.lease_window import GrantWindow

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
"""Seconds after which a contact check still unanswered is given up: its late answer counts for nothing (L3)."""


def lease_consumer_overrides(
    group_id: str,
    *,
    session_timeout_ms: int = SESSION_TIMEOUT_MS,
    heartbeat_interval_ms: int = HEARTBEAT_INTERVAL_MS,
) -> dict[str, Any]:
    """Return (a new dict) the lease consumer's librdkafka settings that win over the flow's target consumer ones.

    Durations in ms (``ValueError`` unless positive and the heartbeat below the session timeout).
    ``cooperative-sticky``: a holder keeps the partition when a standby joins;
    ``group.protocol=classic``: KIP-848 ignores the client's session timeout and assignor;
    ``group.instance.id`` emptied: a static member sends no ``LeaveGroup``, so a clean stop would wait
    for the session timeout.
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
    """The lease of one flow: at most one instance (process) holds it; the others wait as standbys (module notes).

    ``on_acquired(epoch)`` and ``on_lost(epoch)`` run on the lease thread (``on_lost`` not on
    :meth:`close`); ``holder`` names this instance in its claims (default ``"<hostname>:<pid>"``);
    ``landing_ms`` is how late a task's commit write may land (ms; the commit producers'
    ``message.timeout.ms``): a new holder waits it out (L5), a holder giving up waits it past its last
    grant (L6). Durations in ms, ``clock`` in monotonic seconds; ``ValueError`` as
    :func:`lease_consumer_overrides`. Thread-safe: the properties may be read from any thread.
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
        self.topic = context.internal_topics.lease
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
        """Epoch of this instance's current holding, or of its last one once lost; 0 if it never held the lease (L1)."""
        return self._epoch

    def claimed_only_by_self(self, after: int, upto: int) -> bool:
        """Whether every epoch between this instance's holdings ``after`` and ``upto`` is its own, acknowledged (L4)."""
        with self._lock:
            return all(e in self._own_epochs for e in range(after + 1, upto))

    @property
    def failure(self) -> BaseException | None:
        """What stopped the lease thread (a fatal consumer error), or ``None`` while it runs."""
        return self._failure

    @property
    def safe_at(self) -> float:
        """When this holding may read the committed offsets and grant (monotonic s; L5)."""
        return self._window.safe_at

    @property
    def contact_at(self) -> float:
        """When (monotonic s) this instance sent its newest round trip to the coordinator that succeeded (0: none)."""
        return self._window.contact_at

    def grant(self, epoch: int, seconds: float) -> float | None:
        """Return a grant deadline (s, on this lease's clock) for the holding ``epoch``; ``None``: none allowed (L2)."""
        if not self.holds(epoch):
            return None
        return self._window.grant(seconds)

    def may_grant(self, epoch: int) -> bool:
        """Whether the holding ``epoch`` can grant now: held, and its last confirmed contact within the window (L2)."""
        return self.holds(epoch) and self._window.fresh()

    def void_grants(self) -> None:
        """Say that no copy task uses this holding's grants any more: giving the lease up waits for nothing (L6)."""
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
        """Whether this instance still holds the lease it took at ``epoch`` (``False`` once that holding was lost)."""
        with self._lock:
            return self._held and self._epoch == epoch

    def wait_acquired(self, timeout_s: float | None = None) -> bool:
        """Wait at most ``timeout_s`` s (``None``: no limit) until this instance holds the lease; return whether held.

        ``False`` at once after :meth:`close`. Raises :class:`~mirrorspark.errors.ClusterError` once the
        lease thread stopped on a fatal error (it will never be acquired), ``RuntimeError`` before :meth:`start`.
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
            target = self.context.flow_config.target
            code = _kafka_code(failure)
            hint = permission_hint(code, group=self.group_id, topic=self.topic, cluster=target)
            raise ClusterError(
                f"flow {self.flow_name}: the lease consumer on cluster '{target}' stopped: {_reason(failure)}{hint}",
                kafka_code=code,
            ) from failure

    # -- lifecycle --------------------------------------------------------------------------------

    def start(self, *, timeout_s: float | None = None) -> None:
        """Create the lease topic if missing, join the lease group and start the lease thread; return at once.

        ``timeout_s``: seconds the topic creation may take (default ``admin.timeout.ms``). Raises
        ClusterError if the topic cannot be created, ConfigError on invalid client settings,
        RuntimeError if called twice.
        """
        if self._thread is not None:
            raise RuntimeError(f"flow {self.flow_name}: lease already started")
        admin = self.context.cluster_admin("target", "lease-admin")
        admin = admin if timeout_s is None else admin.with_timeout(timeout_s)
        internal_topic(self.context, "lease").ensure(admin)
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
        """Give the lease up and leave the lease group (waiting at most ``timeout_s`` s): a standby takes over at once.

        Idempotent; ``on_lost`` is not called. From the lease thread itself (an ``on_lost`` callback)
        it only asks the thread to stop.
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
        """Commit the claim's offset (``epoch``) with this member's generation, asynchronously; wait for its answer.

        A synchronous commit waits for a coordinator with no limit. Raises ``KafkaException`` if refused,
        ``ClusterError`` (retriable) if unanswered within :data:`CLAIM_TIMEOUT_S`.
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
                    self.context.flow_config.target,
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
