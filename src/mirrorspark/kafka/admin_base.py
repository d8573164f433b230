"""What every call of :class:`~mirrorspark.kafka.admin.ClusterAdmin` shares: client, timeout, the one error rule.

The rule, applied in one place (:meth:`AdminBase._error`, through :meth:`AdminBase._call`):

* a ``KafkaException`` becomes a :class:`~mirrorspark.errors.ClusterError` naming the call and the
  cluster alias, with Kafka's error name (``kafka_code``) and ``retriable`` as :func:`is_transient` says;
* no answer (``concurrent.futures.TimeoutError``, or librdkafka's ``_TIMED_OUT`` / ``_TRANSPORT``:
  the request timed out, or no broker could be reached) becomes a
  :class:`~mirrorspark.errors.ClusterUnreachableError` (``retriable``) naming the alias, its bootstrap
  servers when known, and the fix.

A call's own semantics (an unknown topic left out, "already exists" ignored...) are decided before
the rule: :meth:`AdminBase._settle` hands the call the Kafka errors it expects instead of raising.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Container, Iterator, Mapping
from concurrent.futures import Future
from typing import Final, TypeVar

from confluent_kafka import KafkaError, KafkaException

from mirrorspark.config.keys import KEYS
from mirrorspark.errors import ClusterError, ClusterUnreachableError
from mirrorspark.kafka.factory import serve_logs
from mirrorspark.kafka.protocols import AdminLike

PartitionKey = tuple[str, int]
"""``(topic, partition)``."""

T = TypeVar("T")

DEFAULT_TIMEOUT_S: Final = int(KEYS["admin.timeout.ms"].default or "60000") / 1000
"""Seconds of ``admin.timeout.ms``'s default (60 s): the timeout of a :class:`AdminBase` built without one."""

_TRANSIENT = frozenset(
    {
        KafkaError.NOT_LEADER_FOR_PARTITION,
        KafkaError.LEADER_NOT_AVAILABLE,
        KafkaError.NOT_COORDINATOR,
        KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
        KafkaError.COORDINATOR_NOT_AVAILABLE,
        KafkaError.REQUEST_TIMED_OUT,
        KafkaError.OFFSET_NOT_AVAILABLE,
        KafkaError.UNKNOWN_LEADER_EPOCH,  # ListOffsets right after a topic is created (retriable in Kafka)
        KafkaError._TRANSPORT,
        KafkaError._TIMED_OUT,
    }
)

_NO_ANSWER = frozenset({KafkaError._TIMED_OUT, KafkaError._TRANSPORT})
"""librdkafka's local errors meaning "no answer": the request timed out, or no broker could be reached."""


def is_transient(err: object) -> bool:
    """Whether a Kafka error is worth retrying: flagged retriable, or one librdkafka does not flag."""
    return isinstance(err, KafkaError) and (err.retriable() or err.code() in _TRANSIENT)


def kafka_error(e: object) -> KafkaError | None:
    """Return the ``KafkaError`` a ``KafkaException`` carries (or ``e`` itself if it is one), else ``None``."""
    if isinstance(e, KafkaError):
        return e
    err = e.args[0] if isinstance(e, KafkaException) and e.args else None
    return err if isinstance(err, KafkaError) else None


class _AnyAnswer:
    """Every Kafka error code but "no answer" (:data:`_NO_ANSWER`): a call that reports each outcome itself."""

    def __contains__(self, code: object) -> bool:
        return code not in _NO_ANSWER


ANY_ANSWER: Final[Container[int]] = _AnyAnswer()
"""``expected`` of :meth:`AdminBase._settle` for a call that reports every broker's answer itself."""


class AdminBase:
    """A cluster's admin client with its alias and timeout, and the one error rule (base of ``ClusterAdmin``)."""

    def __init__(
        self,
        admin: AdminLike,
        alias: str,
        *,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        bootstrap_servers: str | None = None,
        timeout_setting: str = "admin.timeout.ms",
    ) -> None:
        self.admin = admin
        self.alias = alias
        self.timeout_s = float(timeout_s)
        self.bootstrap_servers = bootstrap_servers
        self.timeout_setting = timeout_setting

    def __repr__(self) -> str:
        return f"{type(self).__name__}(alias={self.alias!r}, timeout_s={self.timeout_s:g})"

    # ------------------------------------------------------------------ the one rule

    def _unreachable(self, what: str, why: str, code: str | None) -> ClusterUnreachableError:
        at = f" at {self.bootstrap_servers}" if self.bootstrap_servers else ""
        return ClusterUnreachableError(
            f"cluster '{self.alias}' is unreachable{at}: {what} {why}; check that the cluster is up and "
            f"'{self.alias}.bootstrap.servers' is right, or raise '{self.timeout_setting}'",
            kafka_code=code,
            retriable=True,
        )

    def _error(self, e: object, what: str, hints: Mapping[int, str] | None = None) -> ClusterError:
        """Translate the failure ``e`` of a call ``what`` (the one rule: see the module docstring)."""
        if isinstance(e, TimeoutError):  # concurrent.futures.TimeoutError is TimeoutError (Python 3.11+)
            return self._unreachable(what, f"timed out after {self.timeout_s:g} s", None)
        err = kafka_error(e)
        if err is None:
            return ClusterError(f"{what} on cluster '{self.alias}' failed: {e}")
        if err.code() in _NO_ANSWER:
            return self._unreachable(what, f"failed: {err.str()} ({err.name()})", err.name())
        hint = (hints or {}).get(err.code(), "")
        return ClusterError(
            f"{what} on cluster '{self.alias}' failed: {err.str()} ({err.name()}){hint}",
            kafka_code=err.name(),
            retriable=is_transient(err),
        )

    @contextlib.contextmanager
    def _call(self, what: str, hints: Mapping[int, str] | None = None) -> Iterator[None]:
        """Serve librdkafka's log lines, then run the block under the one rule."""
        serve_logs(self.admin)
        try:
            yield
        except (KafkaException, TimeoutError) as e:
            raise self._error(e, what, hints) from e

    # ------------------------------------------------------------------ waiting

    def _deadline(self) -> float:
        """Return the monotonic time by which a call of several futures must be answered."""
        return time.monotonic() + self.timeout_s

    @staticmethod
    def _left(deadline: float | None, default: float) -> float:
        return default if deadline is None else max(0.0, deadline - time.monotonic())

    def _wait(
        self, fut: Future[T], what: str, *, deadline: float | None = None, hints: Mapping[int, str] | None = None
    ) -> T:
        """Wait for one answer (until ``deadline``, else :attr:`timeout_s`); any failure under the one rule."""
        with self._call(what, hints):
            return fut.result(timeout=self._left(deadline, self.timeout_s))

    def _settle(
        self,
        fut: Future[T],
        what: str,
        expected: Container[int],
        *,
        deadline: float | None = None,
        hints: Mapping[int, str] | None = None,
    ) -> T | KafkaError:
        """Wait as :meth:`_wait`, but return (not raise) a Kafka error whose code the call expects."""
        with self._call(what, hints):
            try:
                return fut.result(timeout=self._left(deadline, self.timeout_s))
            except KafkaException as e:
                err = kafka_error(e)
                if err is not None and err.code() in expected:
                    return err  # the call's own outcome (e.g. "no such topic"), decided before the rule
                raise


__all__ = ["ANY_ANSWER", "DEFAULT_TIMEOUT_S", "AdminBase", "PartitionKey", "is_transient", "kafka_error"]
