"""An exactly-once copy task's checks of its source topics' ids, on the in-memory fakes (``engine-audit-2.md`` N8).

The ids are read at most every ``TOPIC_ID_CHECK_S`` and before the final commit, not before every
transaction; a failed read is retried while a recent check holds; a re-created topic is still
found and nothing of it is committed from then on.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping, Sequence

import pytest
from test_copy_task_runner import Task, step
from test_exactly_once_start import EosTask

from mirrorspark.errors import ClusterError
from mirrorspark.replication.task.grant_client import GrantState
from mirrorspark.replication.task.spec import TaskOutcome
from mirrorspark.replication.task.topic_check import TOPIC_ID_CHECK_S, TOPIC_ID_STALE_S

pytestmark = pytest.mark.unit

TURN_S = 0.7
"""Clock seconds per turn of the loop: a commit is due every second or two (flush interval 1 s)."""


class Ids:
    """A source admin's ``DescribeTopics``: ``t`` has the id ``now``; with ``every``, every ``every``-th call fails."""

    def __init__(self, now: str = "OLD", every: int = 0) -> None:
        self.now = now
        self.calls = 0
        self.every = every

    def __call__(self, topics: Sequence[str]) -> Mapping[str, str]:
        self.calls += 1
        if self.every and self.calls % self.every == 0:
            raise ClusterError("describing topic 't' on cluster 'A' failed: Local: Timed out")
        return dict.fromkeys(topics, self.now)


def eos_task(ids: Ids) -> EosTask:
    t = EosTask(start=0, records=3)
    parts = tuple(dataclasses.replace(a, topic_id="OLD") for a in t.spec.partitions)
    t.spec = dataclasses.replace(t.spec, partitions=parts)
    t.runner = t.build(topic_ids=ids)
    return t


def copying(ids: Ids, turns: int, then: str | None = None, at: int = 0) -> Callable[[Task, int], None]:
    """A hook: every turn the clock moves :data:`TURN_S` and a record arrives; stop after ``turns``.

    ``then``: the topic's id from turn ``at`` on (re-created under the task).
    """

    def hook(task: Task, turn: int) -> None:
        task.now = turn * TURN_S
        task.a.append("t", b"k", f"n{turn}".encode(), partition=0, ts=2_000 + turn)
        if then is not None and turn == at:
            ids.now = then
        if turn >= turns:
            task.grants.state = GrantState.STOP

    return hook


def test_commits_read_the_topic_ids_at_most_every_check_interval() -> None:
    """N8: a transaction every second or so read the ids before each one (a source round trip per commit)."""
    ids = Ids()
    t = eos_task(ids)
    assert step(t, copying(ids, 40), turns=60) == TaskOutcome.STOPPED
    elapsed = t.now
    assert t.data.commits >= 15  # the commits really were many
    assert ids.calls <= math.ceil(elapsed / TOPIC_ID_CHECK_S) + 1, (ids.calls, t.data.commits, elapsed)
    assert len(t.copied()) == 3 + 40 and t.committed() == {0: 42}  # the record of the last turn is never read


def test_a_source_admin_failing_one_call_in_two_does_not_fail_the_task() -> None:
    """A failed read is retried at the next commit while a check younger than TOPIC_ID_STALE_S holds."""
    assert TOPIC_ID_STALE_S > 2 * TOPIC_ID_CHECK_S
    ids = Ids(every=2)
    t = eos_task(ids)
    assert step(t, copying(ids, 40), turns=60) == TaskOutcome.STOPPED
    assert ids.calls >= 4  # failed calls were made, and survived
    assert len(t.copied()) == 3 + 40 and t.committed() == {0: 42}  # the record of the last turn is never read


def test_a_source_admin_failing_for_longer_than_a_check_holds_fails_the_task() -> None:
    """Past TOPIC_ID_STALE_S without a successful read, the task fails as before (restarted by the driver)."""
    ids = Ids(every=1)
    t = eos_task(ids)
    with pytest.raises(ClusterError, match="describing topic"):
        step(t, copying(ids, 40), turns=60)
    assert t.committed() == {}


@pytest.mark.parametrize("turns", [3, 40])
def test_c6_a_topic_recreated_under_the_task_is_still_caught(turns: int) -> None:
    """C6. Re-created at turn 2 (the records from offset 5 on are the new topic's): found by the final commit
    (stopped at turn 3: the task ends ``stopped``, as it was told) or by the next due check (copying on: it
    ends ``out_of_range``); either way within a check interval, with the partition reported out of range for
    the driver, and a final commit never holds the new topic's records."""
    ids = Ids()
    t = eos_task(ids)
    outcome = step(t, copying(ids, turns, then="NEW", at=2), turns=60)
    assert outcome == (TaskOutcome.STOPPED if turns == 3 else TaskOutcome.OUT_OF_RANGE)
    assert t.runner.parts.out_of_range == [("t", 0)] and ids.calls >= 2
    assert t.now <= 2 * TURN_S + TOPIC_ID_CHECK_S + t.spec.flush_interval_s + TURN_S
    if turns == 3:
        assert t.committed().get(0, -1) < 5  # nothing read after the re-creation was committed


def test_c6_a_final_commit_never_goes_on_the_ids_read_before() -> None:
    """C6. The final commit's read is tried twice and must succeed: failing, the task fails (its transaction is
    aborted, the next generation copies it again) rather than commit records no read came after."""
    ids = Ids()
    t = eos_task(ids)

    def hook(task: Task, turn: int) -> None:
        copying(ids, 3)(task, turn)
        if turn == 2:
            ids.every = 1  # every read fails from now on, well within TOPIC_ID_STALE_S of the good one

    with pytest.raises(ClusterError, match="describing topic"):
        step(t, hook, turns=60)
    assert t.committed().get(0, -1) < 3 + 3  # the records read after the last good check stay uncommitted
