"""One active instance, also under a partition (``engine-audit.md`` F5): grants, take-over wait, task deadlines.

The lease's grant and take-over rules on an injected clock with stub lease clients (the group
coordinator's answers are what the test says); the grant link over a real socket on localhost.
"""

from __future__ import annotations

import contextlib
import json
import socket
import time
from typing import Any

import pytest
from confluent_kafka import KafkaError, TopicPartition

from fakes import FlowLockStub, run_flow_jobs_inline, two_clusters
from mirrorspark.client.context import FlowContext
from mirrorspark.errors import SparkDriverLostError
from mirrorspark.replication.task.grant_client import GRANT_ASK_S, GrantClient
from mirrorspark.replication.worker import lease as lease_module
from mirrorspark.replication.worker import supervisor as supervisor_module
from mirrorspark.replication.worker.grant_server import GrantServer
from mirrorspark.replication.worker.lease import CONTACT_CHECK_STALE_S, SESSION_TIMEOUT_MS, FlowLease
from mirrorspark.replication.worker.lease_window import CONTACT_MARGIN_MS
from mirrorspark.replication.worker.supervisor import FlowSupervisor, SupervisorState
from polling import assert_eventually

pytestmark = pytest.mark.unit


@pytest.fixture(autouse=True)
def _inline_flow_jobs(monkeypatch: pytest.MonkeyPatch) -> None:
    run_flow_jobs_inline(monkeypatch)  # take-overs end within the tick that starts them


WINDOW_S = (SESSION_TIMEOUT_MS - CONTACT_MARGIN_MS) / 1000


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


class Delivered:
    def __init__(self, offset: int) -> None:
        self._offset = offset

    def offset(self) -> int:
        return self._offset


class ClaimProducer:
    """The lease topic: the next claim lands at ``offset`` (epoch = offset + 1)."""

    def __init__(self, offset: int) -> None:
        self.offset = offset

    def produce(self, _topic: str, _value: bytes, _key: bytes, *, partition: int, on_delivery: Any) -> None:
        on_delivery(None, Delivered(self.offset))

    def flush(self, _timeout: float) -> int:
        return 0


class GroupMember:
    """The lease consumer as the coordinator sees it: every commit is taken (its answer comes by ``on_commit``)."""

    def __init__(self) -> None:
        self.commits: list[tuple[int, bool]] = []
        self.sent: list[TopicPartition] = []  # what each commit carried: its answer (``on_commit``) echoes it

    def memberid(self) -> str:
        return "member-1"

    def commit(self, *, offsets: list[TopicPartition], asynchronous: bool) -> None:
        if not asynchronous:  # librdkafka waits for a coordinator with no limit: a lease thread stuck in it
            raise AssertionError("a synchronous commit can wait forever (no coordinator after a target outage)")
        self.commits.append((offsets[0].offset, asynchronous))
        self.sent.append(offsets[0])

    def poll(self, _timeout: float) -> None:
        return None  # no answer: the coordinator is not there


def holding(clock: Clock, *, claim_offset: int, landing_ms: int = 5000) -> tuple[FlowLease, GroupMember]:
    """A lease that was assigned the lease partition and claimed it at ``clock.now``."""
    cfg, _a, _b, clients = two_clusters()
    lease = FlowLease(FlowContext.build(cfg, cfg.flow("A", "B"), clients=clients), clock=clock, landing_ms=landing_ms)
    member = GroupMember()
    lease._producer, lease._consumer = ClaimProducer(claim_offset), member
    lease._on_assign(member, [TopicPartition(lease.topic, 0)])
    # the coordinator answers the claim's (asynchronous) commit at the lease thread's next poll
    member.poll = lambda _timeout: lease._on_commit(None, [TopicPartition(lease.topic, 0, lease._claim_epoch)])  # type: ignore[attr-defined]
    lease._claim()
    assert lease.held and lease.epoch == claim_offset + 1
    return lease, member


def test_l2_grants_never_reach_past_the_last_confirmed_contact() -> None:
    """L2. Before, the holder renewed 3-second grants while a cached flag said "held": a driver cut off from
    the target granted on for seconds after the coordinator gave the lease to a standby."""
    clock = Clock(100.0)
    lease, member = holding(clock, claim_offset=4)  # the claim's commit, sent at 100, is the first contact
    assert lease.contact_at == 100.0
    assert lease.grant(5, 3.0) == 103.0
    clock.now = 104.0  # no contact confirmed since 100 (the target unreachable): capped
    assert lease.grant(5, 3.0) == 100.0 + WINDOW_S
    clock.now = 100.0 + WINDOW_S
    assert lease.grant(5, 3.0) is None  # the coordinator may expire the session from 100 + 6 s on
    lease._check_contact()  # a contact check goes out at 105 ...
    assert member.commits[-1] == (5, True)
    clock.now = 105.5
    lease._on_commit(None, member.sent[-1:])  # ... and its answer says the session was kept: contact at 105 (sent)
    assert lease.contact_at == 100.0 + WINDOW_S
    assert lease.grant(5, 3.0) == 108.5
    clock.now = 106.5
    lease._check_contact()
    lease._on_commit(KafkaError(KafkaError.ILLEGAL_GENERATION), member.sent[-1:])  # refused: no contact
    assert lease.contact_at == 105.0
    assert lease.grant(4, 3.0) is None  # another holding's tasks get nothing


def test_l5_a_new_holder_waits_out_the_previous_holders_last_commit() -> None:
    """L5. The first holding of a flow's lease starts at once; a later one ``landing_ms`` after its assignment."""
    clock = Clock(50.0)
    first, _ = holding(clock, claim_offset=0)
    assert first.safe_at == 50.0
    clock.now = 60.0
    later, _ = holding(clock, claim_offset=8)
    assert later.safe_at == 65.0  # the commit producers' message.timeout.ms (5 s) after the assignment


def test_l6_a_holder_gives_the_partition_back_only_once_its_grants_are_spent() -> None:
    """L6. Revoked while its tasks may still commit under a grant: the callback (and so the hand-over) waits
    until that grant ended and its writes could land; with the tasks ended it returns at once."""
    lease, _ = holding(Clock(time.monotonic()), claim_offset=2, landing_ms=200)
    lease._clock = time.monotonic  # real time from here: the wait is an Event's
    deadline = lease.grant(3, 0.1)
    assert deadline is not None
    lease._on_revoke(None, [TopicPartition(lease.topic, 0)])
    assert time.monotonic() >= deadline + 0.2 and not lease.held
    again, _ = holding(Clock(time.monotonic()), claim_offset=3, landing_ms=60_000)
    assert again.grant(4, 30.0) is not None
    again.void_grants()  # every task of the holding ended
    again._on_revoke(None, [TopicPartition(again.topic, 0)])  # returns at once, not in 90 s
    assert not again.held


class WaitingLease:
    held, epoch, failure = True, 7, None

    def __init__(self, safe_at: float) -> None:
        self.safe_at = safe_at

    def holds(self, epoch: int) -> bool:
        return epoch == self.epoch

    def grant(self, epoch: int, seconds: float) -> float | None:
        return time.monotonic() + seconds

    def may_grant(self, epoch: int) -> bool:
        return self.holds(epoch) and self.fresh

    fresh = True
    own = False  # every epoch between this instance's last holding and this one is its own claim

    def claimed_only_by_self(self, after: int, upto: int) -> bool:
        return self.own


class NoReports:
    def poll(self, **_kw: Any) -> bool:
        return False


class OneFlow(FlowLockStub):
    name, halted, order = "A->B", None, (("t", 0),)
    assignment = (order, 0)
    exactly_once = False

    def __init__(self) -> None:
        self.reports, self.reloads = NoReports(), 0

    def reload_positions(self) -> None:
        self.reloads += 1
        self.read_at = time.monotonic()

    def task_specs(self, generation: int, address: Any, *, stop_at: Any = None, epoch: int = 0) -> list[Any]:
        return []


class Grants:
    address = ("127.0.0.1", 0)

    def grant(self, flow: str, generation: int, deadline: float) -> None:
        pass

    def throttle(self, *_: Any) -> None: ...


class RecordedGrants(Grants):
    def __init__(self) -> None:
        self.deadlines: list[float] = []

    def grant(self, flow: str, generation: int, deadline: float) -> None:
        self.deadlines.append(deadline)


@pytest.mark.parametrize("previous", ["this-instance", "another-instance"])
def test_a_take_over_grants_only_once_the_previous_holder_can_no_longer_commit(
    previous: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """None of a new holder's tasks may commit before ``safe_at``, when the old holder's last commit has landed.

    After this instance's own holding (its tasks ended), the tasks start at the first tick that sees the
    lease held: their start (Spark job, Python worker, clients) overlaps the wait. After another instance's
    (a standby's take-over, a relaunch after ``kill -9``), ``mm2-offsets`` is read, and the tasks started,
    only once ``safe_at`` plus a margin passed: the old holder's last commit is seen, not copied again
    (engine-audit-2 N5). Earlier, a grant at once let both instances' commits interleave."""
    monkeypatch.setattr(supervisor_module, "TAKEOVER_MARGIN_S", 0.1)
    flow, lease, grants = OneFlow(), WaitingLease(safe_at=time.monotonic() + 0.3), RecordedGrants()
    sup = FlowSupervisor(flow, object(), grants, lease)  # type: ignore[arg-type]
    sup.state = "standby"  # type: ignore[assignment]
    if previous == "this-instance":
        sup.epoch, lease.own = 6, True  # type: ignore[misc]
    sup.tick()
    assert (sup.state, flow.reloads, sup.epoch, sup.generation) == ("running", 1, 7, 1)
    if previous == "this-instance":
        assert flow.read_at < lease.safe_at  # started at once
        sup.grant()
        assert grants.deadlines == []  # copying, not committing
    else:
        assert flow.read_at >= lease.safe_at + 0.1
    assert_eventually(lambda: sup.grant() or bool(grants.deadlines), timeout_s=10, interval_s=0.05)
    assert grants.deadlines[0] > lease.safe_at


def test_a_delayed_grant_line_never_extends_the_permission() -> None:
    """The grant is an absolute deadline on the task's clock, computed from when the task asked.

    Before, the driver sent ``lease <seconds>`` and the task counted them from when it *read* the
    line: an answer read a second late (a loaded executor, a slow network) let it commit a second
    past the driver's grant, after a standby could have taken the flow over.
    """
    grants = GrantServer()
    try:
        client = GrantClient(grants.address, {"flow": "A->B", "task": 0, "generation": 1})
        deadline = time.monotonic() + 1.5
        grants.grant("A->B", 1, deadline)
        time.sleep(GRANT_ASK_S)
        client.check()  # asks; the answer waits on the socket, unread
        time.sleep(1.0)  # the task reads it late
        assert_eventually(client.may_commit, timeout_s=5, interval_s=0.01, message="no grant arrived")
        assert client.lease_until <= deadline  # the same host: one monotonic clock
        assert_eventually(lambda: not client.may_commit(), timeout_s=5, interval_s=0.05)
        client.close()
    finally:
        grants.close()


class JoinedLease(WaitingLease):
    """A lease the driver joined before Spark started (``Replicator.join_leases``)."""

    started = True

    def start(self) -> None:
        raise AssertionError("started twice")


def test_a_lease_joined_before_spark_started_is_not_started_again() -> None:
    sup = FlowSupervisor(OneFlow(), object(), Grants(), JoinedLease(safe_at=0.0))  # type: ignore[arg-type]
    sup.begin()
    assert sup.state == "standby"
    sup.tick()  # taken while Spark started: copying at the first tick
    assert (sup.state, sup.epoch) == ("running", 7)


def test_a_holder_without_recent_contact_starts_nothing() -> None:
    """Held, but the coordinator has not answered for most of a session timeout (this driver cut off
    from the target): the lease may already be another instance's. Before, the driver started and
    restarted tasks on its cached flag; a restarted exactly-once task fenced the new holder's."""
    flow, lease = OneFlow(), WaitingLease(safe_at=0.0)
    lease.fresh = False
    sup = FlowSupervisor(flow, object(), Grants(), lease)  # type: ignore[arg-type]
    sup.state = "standby"  # type: ignore[assignment]
    sup.tick()
    assert (sup.state, flow.reloads, sup.generation) == ("standby", 0, 0)
    lease.fresh = True  # a contact check answered
    sup.tick()
    assert (sup.state, flow.reloads, sup.generation) == ("running", 1, 1)
    lease.fresh = False
    sup.next_start[0] = 0.0  # a task ended and is due for a restart ...
    sup.tick()
    assert sup.next_start == {0: 0.0} and sup.restarts == 0  # ... not while contact is lapsed


def test_a_claim_whose_commit_is_never_answered_is_tried_again_later(monkeypatch: pytest.MonkeyPatch) -> None:
    """After a target outage the coordinator may stay unknown: the claim's commit gives up at its deadline.

    Before, the claim committed synchronously: librdkafka waited for a coordinator with no limit, the
    lease thread never polled or claimed again, and the flow stalled for minutes (the crash loop's
    30 s target stop).
    """
    monkeypatch.setattr(lease_module, "CLAIM_TIMEOUT_S", 0.3)
    cfg, _a, _b, clients = two_clusters()
    lease = FlowLease(FlowContext.build(cfg, cfg.flow("A", "B"), clients=clients), clock=Clock(100.0))
    member = GroupMember()
    lease._producer, lease._consumer = ClaimProducer(4), member
    lease._on_assign(member, [TopicPartition(lease.topic, 0)])
    lease._claim()
    assert not lease.held and member.commits == [(5, True)]
    assert lease._claim_failure is not None and "not answered" in lease._claim_failure
    assert lease._retry_at > time.monotonic()  # tried again after CLAIM_RETRY_S


def test_l3_a_stale_contact_checks_late_answer_is_never_credited_to_a_newer_check() -> None:
    """L3 (engine-audit-2 N1): check C1 goes unanswered, is given up after ``CONTACT_CHECK_STALE_S``, C2 goes out;
    then C1's answer comes (a half-open link: the coordinator saw C1 at about its send time, the answer was held).

    Before, any answer was credited to the check in flight: C1's moved the contact to C2's send time, and grants
    reached ``window_s`` past it, after the coordinator could have expired the session (a standby holding too).
    """
    clock = Clock(100.0)
    lease, member = holding(clock, claim_offset=4)
    clock.now = 101.0
    lease._check_contact()  # C1
    c1 = member.sent[-1]
    clock.now = 101.0 + CONTACT_CHECK_STALE_S + 0.5
    lease._check_contact()  # C1 given up: C2
    c2 = member.sent[-1]
    assert [offset for offset, _ in member.commits] == [5, 5, 5]  # the claim's commit, C1, C2
    lease._on_commit(None, [c1])  # C1's late answer proves nothing about C2's time
    assert lease.contact_at <= 101.0
    assert lease.grant(5, 3.0) is None  # past C1's send + window: no grant
    lease._on_commit(None, [c2])  # C2's own answer (still in flight): contact when C2 was sent
    assert lease.contact_at == clock.now
    assert lease.grant(5, 3.0) == clock.now + 3.0


def test_l4_a_claim_acknowledged_whose_commit_failed_still_counts_as_this_instances_own() -> None:
    """L4 (engine-audit-2 N11): the claim is on the lease topic, so no other instance held that epoch.

    A holding at epoch 5 is lost; the next claim lands at offset 5 but its commit is refused (the
    partition moved on meanwhile, ``ILLEGAL_GENERATION``); the one after lands at 6 and holds (epoch 7).
    The lease was this instance's only: the supervisor may take the running tasks back (at least once).
    """
    clock = Clock(100.0)
    lease, member = holding(clock, claim_offset=4)
    tp = TopicPartition(lease.topic, 0)
    lease._on_lost_partitions(member, [tp])
    lease._on_assign(member, [tp])
    lease._producer = ClaimProducer(5)
    member.poll = lambda _timeout: lease._on_commit(  # type: ignore[method-assign]
        KafkaError(KafkaError.ILLEGAL_GENERATION), [TopicPartition(lease.topic, 0, lease._claim_epoch)]
    )
    lease._claim()
    assert not lease.held and lease._claim_failure is not None
    lease._producer = ClaimProducer(6)
    member.poll = lambda _timeout: lease._on_commit(None, [TopicPartition(lease.topic, 0, lease._claim_epoch)])  # type: ignore[method-assign]
    lease._claim()
    assert lease.held and lease.epoch == 7
    assert lease.claimed_only_by_self(5, 7) and lease.claimed_only_by_self(4, 7)
    lease._on_lost_partitions(member, [tp])
    lease._on_assign(member, [tp])
    lease._producer = ClaimProducer(8)  # offset 7 is another instance's claim: it held the lease in between
    lease._claim()
    assert lease.held and lease.epoch == 9
    assert not lease.claimed_only_by_self(7, 9) and not lease.claimed_only_by_self(5, 9)
    assert lease.claimed_only_by_self(8, 9)  # the very next epoch: nothing in between


class LostAcknowledgement:
    """The lease topic appends the claim, but its acknowledgement never comes back (the produce times out)."""

    def produce(self, _topic: str, _value: bytes, _key: bytes, *, partition: int, on_delivery: Any) -> None:
        pass

    def flush(self, _timeout: float) -> int:
        return 1


def test_l4_a_claim_whose_produce_timed_out_but_landed_counts_as_another_holders() -> None:
    """L4 (engine-audit-2 N11): conservative for an ambiguous claim: its offset is unknown, so an epoch this
    instance may have written counts as another's, and the supervisor aborts and reloads instead of taking the
    running tasks back."""
    clock = Clock(100.0)
    lease, member = holding(clock, claim_offset=4)
    tp = TopicPartition(lease.topic, 0)
    lease._on_lost_partitions(member, [tp])
    lease._on_assign(member, [tp])
    lease._producer = LostAcknowledgement()  # landed at offset 5 (epoch 6), unbeknown to the lease
    lease._claim()
    assert not lease.held and lease._claim_failure is not None and "no acknowledgement" in lease._claim_failure
    lease._producer = ClaimProducer(6)
    lease._claim()
    assert lease.held and lease.epoch == 7
    assert not lease.claimed_only_by_self(5, 7)


def hello_answer(grants: GrantServer, generation: int) -> bytes:
    """What the server sends a task of ``generation`` of ``A->B`` saying hello now, until it closes (2 s at most)."""
    host, port, token = grants.address
    hello = {"token": token, "flow": "A->B", "task": 0, "generation": generation, "ask": 0.0}
    got = b""
    with socket.create_connection((host, port), timeout=2) as sock:
        sock.sendall(json.dumps(hello).encode() + b"\n")
        with contextlib.suppress(TimeoutError):
            while chunk := sock.recv(4096):
                got += chunk
    return got


def test_l7_an_aborted_generation_gets_no_grant_and_its_late_task_is_told_abort() -> None:
    """L7 (engine-audit-2 N7): abort means commit nothing, also for a task that says hello after the abort.

    Before, ``abort`` marked the generation as stopped: a late task was told ``stop`` (commit and end), and a
    renewal the grant thread computed before the abort gave it a grant for one final commit.
    """
    grants = GrantServer()
    try:
        grants.grant("A->B", 3, time.monotonic() + 5.0)
        grants.abort("A->B", 3)
        grants.grant("A->B", 3, time.monotonic() + 5.0)  # a renewal computed before the abort: refused
        assert hello_answer(grants, 3) == b"abort\n"
        grants.grant("A->B", 4, time.monotonic() + 5.0)  # the next generation is granted as ever
        assert hello_answer(grants, 4).startswith(b"lease ")
    finally:
        grants.close()


def test_l7_after_the_driver_jvm_is_lost_a_late_task_is_told_abort_and_gets_no_grant() -> None:
    """L7 (engine-audit-2 N7): the same after ``FlowSupervisor.abandon`` (the Spark driver JVM is gone)."""
    grants = GrantServer()
    try:
        sup = FlowSupervisor(OneFlow(), object(), grants, WaitingLease(safe_at=0.0))  # type: ignore[arg-type]
        sup.state, sup.generation = SupervisorState.RUNNING, 2
        renewal = time.monotonic() + 3.0  # computed by the grant thread just before the loss was seen
        sup.abandon(SparkDriverLostError("the Spark driver JVM (pid 4242) was killed by SIGKILL"))
        grants.grant(sup.name, 2, renewal)
        assert hello_answer(grants, 2) == b"abort\n"
    finally:
        grants.close()
