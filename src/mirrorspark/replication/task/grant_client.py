"""The copy task's end of the driver's grant server: one TCP connection, commands as text lines.

The driver (:class:`~mirrorspark.replication.worker.grant_server.GrantServer`) sends ``stop`` (commit
and end), ``abort`` (end without committing) and ``rate <bytes/s>`` (the task's share of the flow's
``replication.throttled.rate``, 0: no limit; a driver that never sends it leaves the task unlimited),
and answers grant requests. A throttled task adds ``spent <bytes> <seconds>`` to its requests (record
bytes let through and seconds held back, running totals; a driver that does not know it ignores it).

Every :data:`GRANT_ASK_S` the task sends ``ask <t>`` (``t``: its own ``time.monotonic()``); the driver
answers ``lease <t + r>`` (``r``: what is left of its grant when it answers). That is an absolute
deadline on the task's clock, at or before the driver's in real time however late it is read, so a
delayed line never extends a permission. Wall-clock deadlines would be off by the hosts' clock offset;
monotonic clocks only need to tick at the same rate (their drift is covered by
:data:`~mirrorspark.replication.worker.lease_window.CONTACT_MARGIN_MS`).
"""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Callable, Mapping
from enum import StrEnum
from typing import Any, Protocol

GRANT_ASK_S = 0.25
"""Seconds between two grant requests (``ask``) of a task: how far a task's deadline trails the driver's."""


class GrantState(StrEnum):
    """What the driver last said: ``open`` (copy), ``stop`` (commit, end), ``abort`` (commit nothing) or ``closed``."""

    OPEN = "open"
    STOP = "stop"
    ABORT = "abort"
    CLOSED = "closed"


class Grants(Protocol):
    """What a :class:`~mirrorspark.replication.task.runner.CopyTaskRunner` asks of its grant link to the driver.

    ``rate``: the task's throttle share, bytes/s (0: no limit).
    """

    rate: int

    def check(self) -> GrantState:
        """Read what the driver sent, never blocking; return the state."""
        ...

    def may_commit(self) -> bool:
        """Whether the driver's last grant is still valid (and the link open or stopping)."""
        ...

    def throttled(self, sent_bytes: int, throttled_s: float) -> None:
        """Note the task's throttle totals (record bytes let through, seconds held back) for the driver."""
        ...

    def close(self) -> None:
        """Close the connection."""
        ...


class GrantClient:
    """The task's end of the driver's grant server (a :class:`Grants`); OSError when the driver is unreachable.

    ``address`` is :attr:`CopyTaskSpec.grant_address`; ``hello`` (``flow``, ``task``, ``generation``)
    goes first with the token and the first ``ask``. ``clock`` is monotonic seconds; :attr:`lease_until`
    is the newest grant on it (0 before the first); :attr:`rate` the driver's last throttle share (bytes/s).
    ``alive`` says whether the executor JVM still lives: a task whose JVM died never commits again (issue #23).
    """

    def __init__(
        self,
        address: tuple[str, int, str],
        hello: Mapping[str, Any],
        *,
        clock: Callable[[], float] = time.monotonic,
        alive: Callable[[], bool] = lambda: True,
    ) -> None:
        host, port, token = address
        self._clock = clock
        self._alive = alive
        self._sock = socket.create_connection((host, port), timeout=30)
        self._asked = clock()
        self._sock.sendall(json.dumps({"token": token, **hello, "ask": self._asked}).encode() + b"\n")
        self._sock.setblocking(False)
        self._buf = b""
        self._out = b""  # what a full socket buffer left of the requests
        self.state = GrantState.OPEN
        self.lease_until = 0.0
        self.rate = 0  # bytes/s, 0: no limit
        self._spent = ""  # the throttle totals not sent yet ("": none new)

    def check(self) -> GrantState:
        """Read what the driver sent and ask for a grant when due; never blocks (see :class:`GrantState`)."""
        if self.state not in (GrantState.OPEN, GrantState.STOP):
            return self.state
        while True:
            try:
                data = self._sock.recv(4096)
            except (BlockingIOError, InterruptedError):
                break
            except OSError:
                self.state = GrantState.CLOSED
                return self.state
            if not data:
                self.state = GrantState.CLOSED
                return self.state
            self._buf += data
        *lines, self._buf = self._buf.split(b"\n")
        for line in lines:
            cmd, _, arg = line.decode("ascii", "replace").partition(" ")
            if cmd == "lease":
                self.lease_until = max(self.lease_until, float(arg))  # an earlier answer's deadline still holds
            elif cmd == "rate":
                self.rate = max(0, int(float(arg or 0)))
            elif cmd == "abort":
                self.state = GrantState.ABORT
            elif cmd == "stop" and self.state == GrantState.OPEN:
                self.state = GrantState.STOP
        self._ask()
        return self.state

    def _ask(self) -> None:
        now = self._clock()
        if now - self._asked < GRANT_ASK_S and not self._out:
            return
        if not self._out:
            self._out = f"{self._spent}ask {now!r}\n".encode()
            self._asked, self._spent = now, ""
        try:
            self._out = self._out[self._sock.send(self._out) :]
        except (BlockingIOError, InterruptedError):
            return  # the driver reads nothing (frozen): no answer, no grant; the rest goes next time
        except OSError:
            self.state = GrantState.CLOSED

    def throttled(self, sent_bytes: int, throttled_s: float) -> None:
        """Send the throttle totals with the next grant request (``spent <bytes> <seconds>``)."""
        self._spent = f"spent {sent_bytes} {throttled_s:.3f}\n"

    def may_commit(self) -> bool:
        """Whether the driver's grant is still valid: a task commits only under a live lease."""
        return self.check() in (GrantState.OPEN, GrantState.STOP) and self._clock() < self.lease_until and self._alive()

    def close(self) -> None:
        """Close the connection."""
        self._sock.close()


__all__ = ["GRANT_ASK_S", "GrantClient", "GrantState", "Grants"]
