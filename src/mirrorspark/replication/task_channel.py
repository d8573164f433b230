"""The driver's end of the task channel: commands from the driver to its copy tasks over TCP.

The driver renews a short lease grant on it (``lease <seconds>``) while it holds the flow's
:class:`~mirrorspark.replication.lease.FlowLease`, and sends ``stop`` (commit and end) or
``abort`` (end without committing). A task commits only under a valid grant, so a task that
outlived its driver or its driver's lease (a zombie) never writes a position. The task's end is
:class:`~mirrorspark.replication.task.channel.ChannelClient`.
"""

from __future__ import annotations

import contextlib
import json
import logging
import secrets
import socket
import threading

log = logging.getLogger(__name__)

ACCEPT_POLL_S = 0.5
"""Seconds the task channel's accept loop waits before checking whether it was closed."""


class TaskChannel:
    """Commands from the driver to its copy tasks over TCP: ``stop``, or a closed connection when the driver dies.

    The server listens on ``host`` (the driver's address, reachable from every executor) on a
    free port; a task connects, sends ``{"token":..,"flow":..,"task":..,"generation":..}`` and
    waits for a line. The token (random, per driver) keeps foreign connections out; it carries
    no Kafka secret.

    Parameters
    ----------
    host:
        Address to listen on and to give the tasks (``spark.driver.host``).
    """

    def __init__(self, host: str = "127.0.0.1") -> None:
        self._server = socket.create_server((host, 0))
        self.address: tuple[str, int, str] = (host, self._server.getsockname()[1], secrets.token_hex(16))
        self._lock = threading.Lock()
        self._conns: dict[tuple[str, int, int], socket.socket] = {}
        self._stopped: set[tuple[str, int]] = set()  # (flow, generation) told to stop
        self._grants: dict[tuple[str, int], float] = {}  # (flow, generation) -> lease seconds last granted
        self._newest: dict[str, int] = {}  # flow -> newest generation granted, stopped or aborted
        self._closed = False
        self._thread = threading.Thread(target=self._accept, name="mirrorspark-task-channel", daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        self._server.settimeout(ACCEPT_POLL_S)  # a blocked accept() is not woken by close(): poll
        while not self._closed:
            try:
                conn, _ = self._server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            conn.setblocking(True)
            threading.Thread(target=self._hello, args=(conn,), daemon=True).start()

    def _newer(self, flow: str, generation: int) -> None:
        """Note ``generation`` as the flow's newest (under the lock); forget older generations' grants and stops."""
        if generation > self._newest.get(flow, 0):
            self._newest[flow] = generation
            for key in [k for k in self._grants if k[0] == flow and k[1] < generation]:
                del self._grants[key]
            self._stopped = {k for k in self._stopped if k[0] != flow or k[1] >= generation}

    def _hello(self, conn: socket.socket) -> None:
        """Register a task that said hello and send it its generation's grant and stop, if any.

        A task of a generation older than the flow's newest (a copy task whose Spark job started
        only after the supervisor had moved on) is refused: ``abort``, then the connection closes.
        A grant would let it commit stale positions, and in exactly-once mode its
        ``init_transactions`` would fence the current task with the same index.
        """
        try:
            conn.settimeout(10)
            line = conn.makefile("rb").readline(4096)
            hello = json.loads(line)
            if not isinstance(hello, dict) or hello.get("token") != self.address[2]:
                conn.close()
                return
            key = (str(hello["flow"]), int(hello["task"]), int(hello["generation"]))
        except (OSError, ValueError, KeyError, TypeError):
            conn.close()
            return
        with self._lock:
            if self._closed:  # closed while this task said hello
                conn.close()
                return
            stale = key[2] < self._newest.get(key[0], 0)
            old = None if stale else self._conns.pop(key, None)
            if not stale:
                self._conns[key] = conn
            stop = (key[0], key[2]) in self._stopped
            grant = None if stale else self._grants.get((key[0], key[2]))
        if stale:  # a task of an older generation, started late: never a grant (engine-audit.md F8)
            log.info(
                "%s: copy task %d of generation %d started after its generation ended: told to end without committing",
                *key,
            )
            self._send(conn, b"abort\n")
            conn.close()
            return
        if old is not None:
            old.close()
        if grant is not None:
            self._send(conn, f"lease {grant}\n".encode())
        if stop:
            self._send(conn, b"stop\n")

    @staticmethod
    def _send(conn: socket.socket, data: bytes) -> None:
        with contextlib.suppress(OSError):
            conn.sendall(data)

    def stop(self, flow: str, generation: int) -> None:
        """Tell every task of ``flow``'s ``generation`` to commit and end (also those not connected yet)."""
        with self._lock:
            self._newer(flow, generation)
            self._stopped.add((flow, generation))
            conns = [c for (f, _, g), c in self._conns.items() if f == flow and g == generation]
        for c in conns:
            self._send(c, b"stop\n")

    def _broadcast(self, flow: str, generation: int, data: bytes) -> None:
        with self._lock:
            conns = [c for (f, _, g), c in self._conns.items() if f == flow and g == generation]
        for c in conns:
            self._send(c, data)

    def grant(self, flow: str, generation: int, seconds: float) -> None:
        """Let the tasks of ``flow``'s ``generation`` commit for ``seconds`` from now (renewed while leased).

        A grant of an older generation than the flow's newest is ignored: grants are keyed by
        generation, and a late task of an older one never gets one.
        """
        with self._lock:
            if generation < self._newest.get(flow, 0):
                return
            self._newer(flow, generation)
            self._grants[(flow, generation)] = seconds
        self._broadcast(flow, generation, f"lease {seconds}\n".encode())

    def abort(self, flow: str, generation: int) -> None:
        """Tell the tasks of ``flow``'s ``generation`` to end without committing (the flow's lease was lost)."""
        with self._lock:
            self._newer(flow, generation)
            self._grants.pop((flow, generation), None)
            self._stopped.add((flow, generation))
        self._broadcast(flow, generation, b"abort\n")

    def forget(self, flow: str, task: int, generation: int) -> None:
        """Drop a finished task's connection."""
        with self._lock:
            conn = self._conns.pop((flow, task, generation), None)
        if conn is not None:
            conn.close()

    def close(self) -> None:
        """Close the server and every connection (tasks still running end without committing)."""
        with self._lock:
            self._closed = True
            conns = list(self._conns.values())
            self._conns.clear()
        self._server.close()
        for c in conns:
            c.close()


__all__ = ["ACCEPT_POLL_S", "TaskChannel"]
