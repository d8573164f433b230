"""Waiting in tests: poll a check against a deadline (every tier; never a bare sleep-then-assert)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

from confluent_kafka import KafkaException

from mirrorspark.errors import ClusterError
from mirrorspark.kafka.admin import is_transient

__all__ = ["assert_eventually", "retriable"]

T = TypeVar("T")


def retriable(e: BaseException) -> bool:
    """Whether a check that raised ``e`` is worth calling again.

    True for a confluent-kafka ``KafkaException`` whose error is retriable (or one librdkafka
    does not flag, e.g. ``NOT_LEADER_FOR_PARTITION`` right after partitions were added:
    :func:`~mirrorspark.kafka.admin.is_transient`), and for a mirrorspark
    :class:`~mirrorspark.errors.ClusterError` raised with ``retriable=True``.
    """
    if isinstance(e, ClusterError):
        return e.retriable
    if isinstance(e, KafkaException):
        return is_transient(e.args[0] if e.args else None)
    return False


def assert_eventually(
    fn: Callable[[], T],
    timeout_s: float = 30.0,
    interval_s: float = 0.2,
    message: str = "condition not met",
) -> T:
    """Call ``fn`` until it succeeds, or fail after ``timeout_s`` seconds.

    ``fn`` succeeds when it returns anything but ``False`` or ``None`` without raising.
    An ``AssertionError`` or a retriable Kafka error (:func:`retriable`) means "not yet":
    ``fn`` is called again until the deadline. Other exceptions propagate at once.

    Parameters
    ----------
    fn:
        The check; it may ``assert`` inside.
    timeout_s:
        Deadline in seconds (default 30).
    interval_s:
        Pause between calls in seconds (default 0.2).
    message:
        Text of the final ``AssertionError``; the last assertion failure is appended.

    Returns
    -------
    T
        What ``fn`` returned on success.

    Raises
    ------
    AssertionError
        If ``fn`` did not succeed before the deadline (its last failure was an assertion or
        a false value).
    KafkaException, ClusterError
        The last retriable error, re-raised, if ``fn`` still raised it at the deadline; any
        non-retriable one at once.
    """
    deadline = time.monotonic() + timeout_s
    last: str = "returned a false value"
    while True:
        error: BaseException | None = None
        try:
            result = fn()
        except AssertionError as e:
            last = f"{type(e).__name__}: {e}"
        except (KafkaException, ClusterError) as e:
            if not retriable(e):
                raise
            last, error = f"{type(e).__name__}: {e}", e
        else:
            if result is not False and result is not None:
                return result
            last = f"returned {result!r}"
        if time.monotonic() >= deadline:
            if error is not None:
                raise error
            raise AssertionError(f"{message} (after {timeout_s:.1f} s; last: {last})")
        time.sleep(interval_s)
