"""Kafka Connect's config topic as a previous owner of a flow left it: how many tasks its source connector ran.

Connect's ``KafkaConfigBackingStore`` writes, per connector ``<c>``, ``task-<c>-<i>``, ``commit-<c>``
(``{"tasks":n}``) and, with exactly-once support, ``task-count-record-<c>`` (``{"task-count":n}``, KIP-618), as
JSON (a schema envelope is accepted). :class:`ConnectTaskCounts` gives the most task indexes any record names: how
many transactional ids (:func:`~mirrorspark.mm2.connect_offsets.task_transactional_id`) a successor must fence.
"""

from __future__ import annotations

import json
from typing import Any, Final

TASK_PREFIX: Final = "task-"
COMMIT_PREFIX: Final = "commit-"
TASK_COUNT_PREFIX: Final = "task-count-record-"


def _payload(value: bytes | None) -> dict[str, Any] | None:
    """Return the JSON object of a config record's value (unwrapping a schema envelope), or ``None``."""
    if value is None:
        return None
    try:
        body = json.loads(bytes(value).decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None
    if isinstance(body, dict) and isinstance(body.get("payload"), dict) and "schema" in body:
        body = body["payload"]
    return body if isinstance(body, dict) else None


def _count(body: dict[str, Any] | None, field: str) -> int | None:
    n = None if body is None else body.get(field)
    return n if isinstance(n, int) and not isinstance(n, bool) and n >= 0 else None


class ConnectTaskCounts:
    """The task counts one Connect config topic records for one connector, fed record by record."""

    def __init__(self, connector: str) -> None:
        self.connector = connector
        self.task_configs = 0  # 1 + the highest i of a task-<c>-<i> record
        self.committed: int | None = None  # the newest commit-<c> record's task count
        self.fenced: int | None = None  # the newest task-count-record-<c> record's task count

    def add(self, key: bytes | None, value: bytes | None) -> None:
        """Take one record of the config topic into account (a tombstone of a count leaves it as it was)."""
        try:
            name = bytes(key or b"").decode("utf-8")
        except UnicodeDecodeError:
            return
        c = self.connector
        if name == f"{TASK_COUNT_PREFIX}{c}":
            self.fenced = _count(_payload(value), "task-count") if value is not None else self.fenced
        elif name == f"{COMMIT_PREFIX}{c}":
            self.committed = _count(_payload(value), "tasks") if value is not None else self.committed
        elif name.startswith(f"{TASK_PREFIX}{c}-"):
            index = name[len(f"{TASK_PREFIX}{c}-") :]
            if index.isdigit() and index.isascii():
                self.task_configs = max(self.task_configs, int(index) + 1)

    @property
    def task_count(self) -> int | None:
        """How many task indexes of the connector may have run: the largest count any record gives; ``None`` if none."""
        counts = [n for n in (self.committed, self.fenced) if n is not None]
        if self.task_configs:
            counts.append(self.task_configs)
        return max(counts) if counts else None


__all__ = ["COMMIT_PREFIX", "TASK_COUNT_PREFIX", "TASK_PREFIX", "ConnectTaskCounts"]
