"""A flow's slow lease work off the driver loop, one job at a time per flow (``engine-audit-2.md`` N4, N5, N10).

A take-over (reading ``mm2-offsets``, fencing, reading the progress channel) or the joins of a loss,
stop or restart run on the flow's own :class:`FlowThread`; its supervisor supervises nothing else of
that flow meanwhile, and other flows never wait.

**Invariants of a hand-over** (at least once; exactly once is fenced besides):

* a take-over after **another instance's** holding waits until ``safe_at`` plus
  :data:`TAKEOVER_MARGIN_S`, then reads ``mm2-offsets``: a commit of the previous holder that landed
  meanwhile is seen, not copied again;
* its tasks produce nothing before their first grant
  (:attr:`~mirrorspark.replication.task.spec.CopyTaskSpec.after_other_holder`);
* a task whose grant lapsed produces nothing more, so the old holder's last records precede the new
  holder's assignment.

**Residual risk (N10).** ``safe_at`` counts the client-side ``message.timeout.ms``: a broker may still
append a write the client gave up on, or records queued while a cut link held (``HOLD_S``), once it
heals. :data:`TAKEOVER_MARGIN_S` covers the usual delay; a later straggler means duplicates or an old
copy after a new one, never a loss.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence

from mirrorspark.replication.worker.task_launcher import TaskJob, end_jobs

log = logging.getLogger(__name__)

TAKEOVER_MARGIN_S = 2.0
"""Seconds past the lease's ``safe_at`` a take-over from another instance's holding waits before reading
``mm2-offsets`` (N10)."""


class FlowThread:
    """One flow's background job (threads named after it): a take-over, or the joins of a loss, stop or restart."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.what = ""
        self.epoch = 0  # the lease epoch a take-over is for (0: not a take-over)
        self.cancel = threading.Event()
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None

    @property
    def pending(self) -> bool:
        """Whether a job runs now."""
        return self._thread is not None and self._thread.is_alive()

    @property
    def idle(self) -> bool:
        """Whether no job runs or waits to be collected (:meth:`collect`)."""
        return self._thread is None

    def submit(self, what: str, job: Callable[[], object], *, epoch: int = 0) -> None:
        """Run ``job`` (``what``: ``take-over``, ``loss``, ...) on a new thread; RuntimeError while one is pending."""
        if self._thread is not None:
            raise RuntimeError(f"{self.name}: a {self.what} is still under way")
        self.what, self.epoch, self._error = what, epoch, None
        self.cancel.clear()
        self._thread = threading.Thread(
            target=self._run, args=(job,), name=f"mirrorspark-{what}-{self.name}", daemon=True
        )
        self._thread.start()

    def _run(self, job: Callable[[], object]) -> None:
        try:
            job()
        except BaseException as e:  # handed to the tick that collects the job
            self._error = e

    def collect(self) -> BaseException | None:
        """Forget the ended job; return its error (``None``: it succeeded, or none ran). Once not :attr:`pending`."""
        if self._thread is None or self._thread.is_alive():
            return None
        self._thread = None
        error, self._error = self._error, None
        return error

    def join(self, timeout_s: float) -> bool:
        """Wait up to ``timeout_s`` for the pending job; return whether none is pending any more."""
        thread = self._thread
        if thread is not None and self.pending:
            thread.join(max(0.0, timeout_s))
        return not self.pending

    def wait_until(self, at: float, clock: Callable[[], float] = time.monotonic) -> bool:
        """Sleep until ``at`` (``clock`` s) unless cancelled first; return whether not cancelled."""
        while not self.cancel.is_set():
            left = at - clock()
            if left <= 0:
                return True
            self.cancel.wait(min(left, 0.5))
        return False


def end_runs(name: str, runs: Sequence[TaskJob], deadline: float, clock: Callable[[], float]) -> None:
    """Join flow ``name``'s copy tasks until ``deadline``, cancel those still running, all together; log them."""
    cancelled, stuck = end_jobs(runs, deadline, clock)
    if cancelled:
        log.warning(
            "%s: copy task(s) %s did not end in time: their Spark jobs were cancelled",
            name,
            ", ".join(str(r.spec.task_index) for r in cancelled),
        )
    if stuck:
        log.warning(
            "%s: copy task(s) %s still running after their Spark jobs were cancelled: left behind (they "
            "commit nothing more without a grant)",
            name,
            ", ".join(str(r.spec.task_index) for r in stuck),
        )


__all__ = ["TAKEOVER_MARGIN_S", "FlowThread", "end_runs"]
