"""When a flow's supervisor tries again: a failed copy task's restart, a failed read, a new generation."""

from __future__ import annotations

from collections.abc import Callable

from mirrorspark.errors import MirrorsparkError, TransactionCoordinatorError
from mirrorspark.kafka.admin import PartitionKey

BACKOFF_INITIAL_S = 1.0
"""Seconds before the first restart of a failed copy task; doubled at each further failure."""

BACKOFF_MAX_S = 30.0
"""Longest wait between two restarts of a failing copy task (s)."""

MAX_FAILURES = 6
"""Failures of one copy task in a row, with no record copied in between, after which its flow is marked failed."""

READ_RETRY_INITIAL_S = 2.0
"""Seconds before reading the progress channel or ``mm2-offsets`` again after a failed read; doubled at each
further failure up to :data:`BACKOFF_MAX_S` (each read may take seconds: never at every tick)."""


def fatal_task_error(error: MirrorsparkError, *, first_start: bool) -> bool:
    """Tell whether a copy task's error fails its flow at once, a retry being unable to fix it.

    A record too large or an authorization failure (:attr:`~mirrorspark.errors.MirrorsparkError.fatal`),
    or a target without a transaction coordinator at the flow's first start (``first_start``). MM2's
    exactly-once task fails for good on any error; mirrorspark retries the rest with backoff.
    """
    return error.fatal or (first_start and isinstance(error, TransactionCoordinatorError))


class TaskFailures:
    """Failures in a row of each copy task of a flow, and the backoff before each restart.

    Counted per task, as Connect does: a broker lost under the target fails every task once, which must
    not add up to a failed flow. Any progress of the flow clears every count.
    """

    def __init__(self) -> None:
        self.by_task: dict[int, int] = {}

    def failed(self, index: int) -> int:
        """Count one more failure of task ``index``; return its failures in a row (>= 1)."""
        n = self.by_task[index] = self.by_task.get(index, 0) + 1
        return n

    def succeeded(self, index: int) -> None:
        """Start the count of task ``index`` over: it copied again."""
        self.by_task.pop(index, None)

    def clear(self) -> None:
        """Start every count over: the flow copied again."""
        self.by_task.clear()

    @property
    def worst(self) -> int:
        """Failures in a row of the most failing task (0 when none failed)."""
        return max(self.by_task.values(), default=0)

    @staticmethod
    def backoff_s(failures: int) -> float:
        """Seconds before restarting a task after its ``failures``-th failure in a row (doubling, capped)."""
        return float(min(BACKOFF_MAX_S, BACKOFF_INITIAL_S * 2 ** (max(1, failures) - 1)))

    @staticmethod
    def exhausted(failures: int) -> bool:
        """Whether ``failures`` in a row of one task fail its flow (:data:`MAX_FAILURES`)."""
        return failures >= MAX_FAILURES


class ReadBackoff:
    """Reads that failed (the progress channel, ``mm2-offsets``, a take-over), each tried again only after a backoff."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self.clock = clock
        self.by_read: dict[str, tuple[int, float]] = {}  # read -> (failures in a row, not before: clock s)

    def may(self, what: str) -> bool:
        """Whether the read ``what`` may be tried now (never failed, or its backoff passed)."""
        return self.clock() >= self.by_read.get(what, (0, 0.0))[1]

    def failed(self, what: str) -> None:
        """Back the read ``what`` off after a failure."""
        failures = self.by_read.get(what, (0, 0.0))[0] + 1
        delay = min(BACKOFF_MAX_S, READ_RETRY_INITIAL_S * 2 ** (failures - 1))
        self.by_read[what] = (failures, self.clock() + delay)

    def ok(self, what: str) -> None:
        """Forget the read ``what``'s failures: it succeeded."""
        self.by_read.pop(what, None)


def assignment_change(old: tuple[tuple[PartitionKey, ...], int], new: tuple[tuple[PartitionKey, ...], int]) -> str:
    """Say in a few words how the copy tasks' assignment changed (for the restart's log line)."""
    before, after = set(old[0]), set(new[0])
    words = []
    for what, keys in (("added", after - before), ("dropped", before - after)):
        if keys:
            names = ", ".join(f"{t}-{p}" for t, p in sorted(keys)[:3]) + (", ..." if len(keys) > 3 else "")
            words.append(f"{len(keys)} partition{'s' if len(keys) > 1 else ''} {what} ({names})")
    if new[1] != old[1]:
        words.append(f"{new[1] - old[1]} topic(s) re-created")
    if not words:
        words.append("partitions reordered")
    return "assignment changed: " + ", ".join(words)


__all__ = [
    "BACKOFF_INITIAL_S",
    "BACKOFF_MAX_S",
    "MAX_FAILURES",
    "READ_RETRY_INITIAL_S",
    "ReadBackoff",
    "TaskFailures",
    "assignment_change",
    "fatal_task_error",
]
