"""The copy task's end of the driver's task channel: one TCP connection, commands as text lines.

The driver (:class:`~mirrorspark.replication.task_channel.TaskChannel`) sends ``lease <seconds>``
(the task may commit until that many seconds from now), ``stop`` (commit and end) or ``abort``
(end without committing). A task commits only under a valid grant, so a task whose driver died,
froze or lost the flow's lease stops committing when its last grant expires.
"""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Mapping
from enum import StrEnum
from typing import Any, Protocol


class ChannelState(StrEnum):
    """What the driver last said.

    ``open`` (copy), ``stop`` (commit and end), ``abort`` (end, commit nothing: the driver lost the
    flow's lease) or ``closed`` (the driver is gone).
    """

    OPEN = "open"
    STOP = "stop"
    ABORT = "abort"
    CLOSED = "closed"


class Channel(Protocol):
    """What a :class:`~mirrorspark.replication.task.runner.CopyTaskRunner` asks of its channel to the driver."""

    def check(self) -> ChannelState:
        """Read what the driver sent, never blocking; return the state."""
        ...

    def may_commit(self) -> bool:
        """Whether the driver's last grant is still valid (and the channel open or stopping)."""
        ...

    def close(self) -> None:
        """Close the connection."""
        ...


class ChannelClient:
    """The task's end of the driver's task channel (a :class:`Channel`).

    Parameters
    ----------
    address:
        ``(host, port, token)`` of the driver's channel (:attr:`CopyTaskSpec.channel`).
    hello:
        Sent first with the token (``flow``, ``task``, ``generation``), so the driver knows which task this is.

    Raises
    ------
    OSError
        The driver cannot be reached.
    """

    def __init__(self, address: tuple[str, int, str], hello: Mapping[str, Any]) -> None:
        host, port, token = address
        self._sock = socket.create_connection((host, port), timeout=30)
        self._sock.sendall(json.dumps({"token": token, **hello}).encode() + b"\n")
        self._sock.setblocking(False)
        self._buf = b""
        self.state = ChannelState.OPEN
        self.lease_until = 0.0  # monotonic deadline of the driver's last grant

    def check(self) -> ChannelState:
        """Read what the driver sent; never blocks (see :class:`ChannelState`)."""
        if self.state not in (ChannelState.OPEN, ChannelState.STOP):
            return self.state
        while True:
            try:
                data = self._sock.recv(4096)
            except (BlockingIOError, InterruptedError):
                break
            except OSError:
                self.state = ChannelState.CLOSED
                return self.state
            if not data:
                self.state = ChannelState.CLOSED
                return self.state
            self._buf += data
        *lines, self._buf = self._buf.split(b"\n")
        for line in lines:
            cmd, _, arg = line.decode("ascii", "replace").partition(" ")
            if cmd == "lease":
                self.lease_until = time.monotonic() + float(arg)
            elif cmd == "abort":
                self.state = ChannelState.ABORT
            elif cmd == "stop" and self.state == ChannelState.OPEN:
                self.state = ChannelState.STOP
        return self.state

    def may_commit(self) -> bool:
        """Whether the driver's lease grant is still valid: a task commits only under a live lease."""
        return self.check() in (ChannelState.OPEN, ChannelState.STOP) and time.monotonic() < self.lease_until

    def close(self) -> None:
        """Close the connection."""
        self._sock.close()


__all__ = ["Channel", "ChannelClient", "ChannelState"]
