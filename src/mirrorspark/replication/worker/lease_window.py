"""What one holding of a flow's lease may grant, and when a take-over is safe: pure rules, the clock injected.

A :class:`GrantWindow` keeps, for one holding of a
:class:`~mirrorspark.replication.worker.lease.FlowLease`:

* **contact**: when the holder *sent* its newest round trip the coordinator answered (the claim's
  commit, then the contact checks); an offset commit maintains the session, so the lease cannot move
  before ``contact + session.timeout.ms``;
* **grants**: absolute deadlines, each capped at ``contact + session.timeout.ms -``
  :data:`CONTACT_MARGIN_MS` (lease.py's L2), so every grant ends before the coordinator can move the
  lease;
* **safe_at**: when the holding may read committed offsets and start its tasks: ``landing_ms`` (the
  commit producers' ``message.timeout.ms``) after the assignment, at once for epoch 1 (L5).

Thread-safe: the lease thread records contacts, the worker's grant thread asks for grants.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Final

CONTACT_MARGIN_MS: Final = 1000
"""How long before the coordinator could first expire the holder's session its grants end (ms): covers
broker wall-clock steps and clock drift."""


class GrantWindow:
    """The grants and the take-over wait of one holding of a flow's lease (``*_ms`` in ms)."""

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
        """Start a holding: assigned at ``assigned_at``, claim committed at ``contact_at``, ``first`` for epoch 1."""
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
        """Return a deadline ``seconds`` from now capped by the last contact (on :attr:`clock`), or ``None`` if past."""
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
