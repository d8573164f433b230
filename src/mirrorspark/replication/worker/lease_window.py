"""What one holding of a flow's lease may grant, and when a take-over is safe: pure rules, the clock injected.

A :class:`GrantWindow` is the bookkeeping of one holding of a
:class:`~mirrorspark.replication.worker.lease.FlowLease` (``docs/design.md``, continuous engine item 8):

* **contact**: when the holder *sent* its newest round trip to the lease group's coordinator that
  succeeded (the claim's commit, then the contact checks). A successful offset commit reschedules a
  classic-protocol member's session from its arrival (Kafka's ``OffsetMetadataManager.commitOffset``:
  "offset commits maintain the session"), so the coordinator cannot give the lease to another
  member before ``contact + session.timeout.ms``;
* **grants**: absolute deadlines on the clock, each capped at ``contact + session.timeout.ms -``
  :data:`CONTACT_MARGIN_MS`, so every grant has ended before the coordinator can move the lease,
  whatever the network does to the holder (its heartbeats lost while its executors still reach the
  target); the latest deadline granted is kept;
* **safe_at**: when the holding may read the committed offsets and start its tasks: ``landing_ms``
  (how late a commit write sent under a grant can land: the commit producers'
  ``message.timeout.ms``) after the lease partition was assigned, at once for the first holding
  of the flow's lease (epoch 1). The previous holder's grants ended before that assignment: the
  coordinator expired its session (the cap above), or it gave the partition back itself, which it
  does only once its grants are spent (:meth:`GrantWindow.wait_spent`).

Thread-safe: the lease thread records contacts, the worker's grant thread asks for grants.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Final

CONTACT_MARGIN_MS: Final = 1000
"""How long before the coordinator could first expire the holder's session its grants end (ms).

Covers what the round trip cannot: the broker times sessions by its wall clock (a step of it
expires a session early), and the hosts' clocks tick at slightly different rates."""


class GrantWindow:
    """The grants and the take-over wait of one holding of a flow's lease (see the module notes).

    Parameters
    ----------
    session_timeout_ms:
        The lease group's ``session.timeout.ms``, in ms.
    landing_ms:
        How late a commit write sent under a grant can land, in ms (the commit producers'
        ``message.timeout.ms``).
    clock:
        Monotonic seconds; every time and deadline here is on it.
    """

    def __init__(
        self, *, session_timeout_ms: int, landing_ms: int, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.clock = clock
        self.window_s = max(0.0, (session_timeout_ms - CONTACT_MARGIN_MS) / 1000)
        self.landing_s = landing_ms / 1000
        self._lock = threading.Lock()
        self._contact_at = 0.0
        self._granted_until = 0.0
        self._safe_at = 0.0
        self._void = threading.Event()

    @property
    def contact_at(self) -> float:
        """When the newest successful round trip to the coordinator was sent (s; 0: none)."""
        return self._contact_at

    @property
    def safe_at(self) -> float:
        """When the holding may read the committed offsets and start its tasks (s)."""
        return self._safe_at

    @property
    def granted_until(self) -> float:
        """The latest deadline granted in this holding (s; 0: none, or voided)."""
        return self._granted_until

    def begin(self, *, assigned_at: float, contact_at: float, first: bool) -> None:
        """Start a new holding: assigned at ``assigned_at``, its claim's commit sent at ``contact_at``.

        ``first``: the first holding of the flow's lease (epoch 1): nothing to wait out.
        """
        with self._lock:
            self._contact_at = contact_at
            self._granted_until = 0.0
            self._safe_at = contact_at if first else assigned_at + self.landing_s
        self._void.clear()

    def contact(self, sent: float) -> None:
        """Record that a round trip sent at ``sent`` (s) came back successful."""
        with self._lock:
            self._contact_at = max(self._contact_at, sent)

    def grant(self, seconds: float) -> float | None:
        """Return a deadline ``seconds`` from now capped by the last contact, or ``None`` if it is already past.

        Parameters
        ----------
        seconds:
            The grant's length at most (s).

        Returns
        -------
        float or None
            An absolute deadline on :attr:`clock` (s).
        """
        now = self.clock()
        with self._lock:
            deadline = min(now + seconds, self._contact_at + self.window_s)
            if deadline <= now:
                return None
            self._granted_until = max(self._granted_until, deadline)
        self._void.clear()
        return deadline

    def fresh(self) -> bool:
        """Whether a grant can be given now: the last contact is recent enough (see :meth:`grant`)."""
        return self.clock() < self._contact_at + self.window_s

    def void(self) -> None:
        """Say that no task uses the holding's grants any more (they all ended)."""
        with self._lock:
            self._granted_until = 0.0
        self._void.set()

    def spent_in(self) -> float:
        """Seconds until every grant of the holding ended and its writes landed (0: already, none, or voided)."""
        if self._void.is_set() or not self._granted_until:
            return 0.0
        return max(0.0, self._granted_until + self.landing_s - self.clock())

    def wait_spent(self) -> None:
        """Block until :meth:`spent_in` is 0 (woken at once by :meth:`void`)."""
        left = self.spent_in()
        if left > 0:
            self._void.wait(left)


__all__ = ["CONTACT_MARGIN_MS", "GrantWindow"]
