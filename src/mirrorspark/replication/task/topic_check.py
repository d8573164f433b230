"""How an exactly-once copy task checks that its source topics were not re-created under it (KIP-516 topic ids).

The consumer follows a topic by name, so after a re-creation a transaction could commit the new topic's
records as the old topic's (faults-random seed 42; commit.py's C6). The ids are read with
``DescribeTopics`` at most every :data:`TOPIC_ID_CHECK_S` (``engine-audit-2.md`` N8), not per commit.
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
    """The ids of a task's source topics (``started``; unknown ids unchecked), read at most every ``TOPIC_ID_CHECK_S``.

    **Guarantee.** A check runs before a commit once the last successful one is that old, and before
    every ``final`` commit (it must succeed), reading the ids after the commit's records. A re-created
    topic is found at the first successful check after it, and nothing of it is committed from then on;
    records read from it before that check (at most :data:`TOPIC_ID_CHECK_S` of copying, up to
    :data:`TOPIC_ID_STALE_S` while checks fail) may be copied twice, never lost.
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

        A failed read within :data:`TOPIC_ID_STALE_S` of the last success is answered with the ids read
        then; a ``final`` commit's read is tried twice and never answered so. Raises MirrorsparkError or
        KafkaException otherwise (the task fails, its transaction aborted).
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
