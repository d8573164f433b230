"""How an exactly-once copy task checks that its source topics were not re-created under it (KIP-516 topic ids).

The consumer follows a topic by name: after the topic is deleted and created again it may read the
new topic's records at the old topic's positions, and a transaction committing them as the old
topic's makes them copied twice once the driver starts the new topic over (faults-random seed 42).
Each commit therefore compares the ids the task was started with to the source's, read with a
``DescribeTopics`` call (:class:`TopicIdCheck`). Before ``engine-audit-2.md`` N8 that call was made
before every transaction: a source round trip per commit (every 250 ms, or every poll with
``transaction.boundary=poll``), and one failed call failed the task (restart: abort, fence, read
``mm2-offsets`` again). Now the ids read are kept for :data:`TOPIC_ID_CHECK_S`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Final

from confluent_kafka import KafkaException

from mirrorspark.errors import MirrorsparkError

log = logging.getLogger(__name__)

TOPIC_ID_CHECK_S: Final = 5.0
"""Seconds the source topic ids read by a check are taken as current: a commit after that reads them again."""

TOPIC_ID_STALE_S: Final = 30.0
"""Seconds after the last successful check within which a failed check is retried at the next commit
instead of failing the task (the commit goes on the ids read then)."""

TopicIdsReader = Callable[[Sequence[str]], Mapping[str, str]]
"""Reads the ids of the given source topics (KIP-516), the topics that exist only."""


class TopicIdCheck:
    """The ids of a task's source topics, read from the source at most every :data:`TOPIC_ID_CHECK_S`.

    **Guarantee.** A check runs before a commit when the last successful one began
    :data:`TOPIC_ID_CHECK_S` or more before, and before every ``final`` commit (the task's last,
    also the one after a partition was found out of range; it must succeed); the ids are read
    after the records the commit holds were read (an id never comes back). So a re-created topic
    is found at the first successful check after its re-creation, before that commit, and
    nothing of it is committed from then on; a final commit never holds a record of a re-created
    topic. What is not guaranteed any more (it was with a check before every transaction):
    records the consumer read from the new topic *before* that first check, at most
    :data:`TOPIC_ID_CHECK_S` of copying (up to :data:`TOPIC_ID_STALE_S` while checks fail), may
    have been committed as the old topic's by the commits in between: copied twice once the
    driver starts the new topic over, never lost.

    Parameters
    ----------
    reader:
        Reads the source topics' ids (a ``DescribeTopics`` call on the source).
    started:
        ``{source topic: topic id}`` the task was started with (topics without a known id are not checked).
    clock:
        Monotonic seconds (injectable).
    what:
        The task, for the log (``"flow A->B: task 0"``).
    """

    def __init__(
        self, reader: TopicIdsReader, started: Mapping[str, str], clock: Callable[[], float], what: str
    ) -> None:
        self.reader = reader
        self.started = dict(started)
        self.clock = clock
        self.what = what
        self._ids: dict[str, str] = {}
        self._checked_at: float | None = None  # when the last successful check began (clock s)

    def recreated(self, topics: Sequence[str], *, final: bool) -> set[str]:
        """Return those of ``topics`` whose id is not the one the task started with (re-created, or deleted).

        Reads the ids when a check is due (see the class); a failed read within
        :data:`TOPIC_ID_STALE_S` of the last successful check is logged and answered with the ids
        read then (the next commit tries again). A ``final`` commit's read is tried twice, and
        never answered from the ids read before.

        Raises
        ------
        MirrorsparkError, KafkaException
            The ids could not be read and no check succeeded within :data:`TOPIC_ID_STALE_S`, or
            a ``final`` commit's read failed twice (the task fails; its open transaction is aborted
            and the next generation copies it again, never twice).
        """
        wanted = [t for t in topics if t in self.started]
        if not wanted:
            return set()
        now = self.clock()
        last = self._checked_at
        if final or last is None or now - last >= TOPIC_ID_CHECK_S:
            try:
                self._ids = self._read(tries=2 if final else 1)
                self._checked_at = now
            except (MirrorsparkError, KafkaException) as e:
                if final or last is None or now - last >= TOPIC_ID_STALE_S:
                    raise
                log.warning(
                    "%s: reading the source topics' ids failed (%s); retried at the next commit, the ids read "
                    "%.0f s ago hold until then",
                    self.what,
                    e,
                    now - last,
                )
        return {t for t in wanted if self._ids.get(t) != self.started[t]}

    def _read(self, *, tries: int) -> dict[str, str]:
        """Read the ids of every started topic, ``tries`` times at most; raise the last failure."""
        for attempt in range(tries):
            try:
                return dict(self.reader(sorted(self.started)))
            except (MirrorsparkError, KafkaException):
                if attempt + 1 >= tries:
                    raise
        raise AssertionError("tries must be >= 1")


__all__ = ["TOPIC_ID_CHECK_S", "TOPIC_ID_STALE_S", "TopicIdCheck", "TopicIdsReader"]
