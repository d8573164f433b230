"""The driver's end of the grant link: grants, ``stop`` and ``abort`` from the driver to its copy tasks over TCP.

Each running generation's grant is an absolute deadline on the driver's monotonic clock, renewed while
it holds the flow's :class:`~mirrorspark.replication.worker.lease.FlowLease`; the task's end, and why an
answer is a deadline on the task's own clock, is
:class:`~mirrorspark.replication.task.grant_client.GrantClient`.

The same link carries the flow's throttle (``replication.throttled.rate``): :meth:`GrantServer.throttle`
sends every task of the flow its share, ``rate <bytes/s>`` (0: no limit), again whenever the share
changes and to every task that connects; throttled tasks report ``spent <bytes> <seconds>`` (running
totals per task), summed per flow over its tasks and generations by :meth:`GrantServer.throttle_totals`.
"""

from __future__ import annotations

import contextlib
import json
import logging
import secrets
import socket
import threading
import time
from collections.abc import Callable

from mirrorspark.core.throttle import task_share

log = logging.getLogger(__name__)

ACCEPT_POLL_S = 0.5
"""Seconds the grant server's accept loop waits before checking whether it was closed."""


class GrantServer:
    """Commands from the driver to its copy tasks over TCP: grants, ``stop``, ``abort``; closed: the driver is gone.

    Listens on ``host`` (``spark.driver.host``) on a free port; a task sends its hello with the token
    (random per driver, no Kafka secret) and then ``ask <t>``, answered ``lease <t + r>`` while its
    generation has ``r`` seconds of grant left. Thread-safe; one thread per connected task.
    """

    def __init__(self, host: str = "127.0.0.1", *, clock: Callable[[], float] = time.monotonic) -> None:
        self._server = socket.create_server((host, 0))
        self.address: tuple[str, int, str] = (host, self._server.getsockname()[1], secrets.token_hex(16))
        self._clock = clock
        self._lock = threading.Lock()
        self._send_lock = threading.Lock()
        self._conns: dict[tuple[str, int, int], socket.socket] = {}
        self._stopped: set[tuple[str, int]] = set()  # (flow, generation) told to stop
        self._aborted: set[tuple[str, int]] = set()  # (flow, generation) told to abort: never a grant again
        self._grants: dict[tuple[str, int], float] = {}  # (flow, generation) -> deadline (driver monotonic s)
        self._newest: dict[str, int] = {}  # flow -> newest generation granted, stopped or aborted
        self._shares: dict[str, int] = {}  # flow -> each task's throttle share (bytes/s, 0: no limit)
        self._spent: dict[tuple[str, int, int], tuple[int, float]] = {}  # task -> its last throttle totals
        self._totals: dict[str, tuple[int, float]] = {}  # flow -> bytes let through, seconds held back
        self._closed = False
        self._thread = threading.Thread(target=self._accept, name="mirrorspark-grant-server", daemon=True)
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
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _newer(self, flow: str, generation: int) -> None:
        """Note ``generation`` as the flow's newest (under the lock); forget older generations' grants and stops."""
        if generation > self._newest.get(flow, 0):
            self._newest[flow] = generation
            for key in [k for k in self._grants if k[0] == flow and k[1] < generation]:
                del self._grants[key]
            self._stopped = {k for k in self._stopped if k[0] != flow or k[1] >= generation}
            self._aborted = {k for k in self._aborted if k[0] != flow or k[1] >= generation}

    def _serve(self, conn: socket.socket) -> None:
        """Take a task's hello, then answer its grant requests until the connection closes.

        A task of an older or aborted generation is told ``abort`` and closed (lease.py's L7): a grant
        would let it commit stale positions, or fence the current task's transactional id.
        """
        try:
            conn.settimeout(10)
            reader = conn.makefile("rb")
            hello = json.loads(reader.readline(4096))
            if not isinstance(hello, dict) or hello.get("token") != self.address[2]:
                _drop(conn)
                return
            key = (str(hello["flow"]), int(hello["task"]), int(hello["generation"]))
            asked = float(hello.get("ask", 0.0))
        except (OSError, ValueError, KeyError, TypeError):
            _drop(conn)
            return
        with self._lock:
            if self._closed:  # closed while this task said hello
                _drop(conn)
                return
            stale = key[2] < self._newest.get(key[0], 0) or (key[0], key[2]) in self._aborted
            old = None if stale else self._conns.pop(key, None)
            if not stale:
                self._conns[key] = conn
            stop = (key[0], key[2]) in self._stopped
        if stale:  # a task of an older or aborted generation: never a grant (engine-audit.md F8, engine-audit-2 N7)
            log.info(
                "%s: copy task %d of generation %d started after its generation ended or was aborted: told to end "
                "without committing",
                *key,
            )
            self._send(conn, b"abort\n")
            conn.close()
            return
        if old is not None:
            _drop(old)
        with self._lock:
            share = self._shares.get(key[0], 0)
        if share:
            self._send(conn, f"rate {share}\n".encode())
        self._answer(conn, key, asked)
        if stop:
            self._send(conn, b"stop\n")
        conn.settimeout(None)
        with contextlib.suppress(OSError, ValueError):
            for line in reader:
                cmd, _, arg = line.decode("ascii", "replace").strip().partition(" ")
                if cmd == "ask":
                    self._answer(conn, key, float(arg))
                elif cmd == "spent":
                    sent, _, secs = arg.partition(" ")
                    self._spend(key, int(sent), float(secs))

    def _spend(self, key: tuple[str, int, int], sent: int, secs: float) -> None:
        """Add what a task let through and held back since its last report to its flow's totals."""
        with self._lock:
            last_sent, last_s = self._spent.get(key, (0, 0.0))
            self._spent[key] = (sent, secs)
            total_sent, total_s = self._totals.get(key[0], (0, 0.0))
            self._totals[key[0]] = (total_sent + max(0, sent - last_sent), total_s + max(0.0, secs - last_s))

    def _answer(self, conn: socket.socket, key: tuple[str, int, int], asked: float) -> None:
        """Send the task's grant as a deadline on its own clock: ``asked`` + what is left of the generation's."""
        with self._lock:
            deadline = self._grants.get((key[0], key[2]))
        left = None if deadline is None else deadline - self._clock()
        if left is not None and left > 0:
            self._send(conn, f"lease {asked + left!r}\n".encode())

    def _send(self, conn: socket.socket, data: bytes) -> None:
        with self._send_lock, contextlib.suppress(OSError):
            conn.sendall(data)

    def stop(self, flow: str, generation: int) -> None:
        """Tell every task of ``flow``'s ``generation`` to commit and end (also those not connected yet)."""
        with self._lock:
            self._newer(flow, generation)
            self._stopped.add((flow, generation))
        self._broadcast(flow, generation, b"stop\n")

    def _broadcast(self, flow: str, generation: int, data: bytes) -> None:
        with self._lock:
            conns = [c for (f, _, g), c in self._conns.items() if f == flow and g == generation]
        for c in conns:
            self._send(c, data)

    def throttle(self, flow: str, limit: int, tasks: int) -> None:
        """Give each of ``flow``'s ``tasks`` running tasks an equal share of ``limit`` (bytes/s, 0: no limit).

        Sent to every connected task of the flow when the share changes, and to each task that connects.
        """
        share = task_share(limit, tasks)
        with self._lock:
            if self._shares.get(flow, 0) == share:
                return
            self._shares[flow] = share
            conns = [c for (f, _, _), c in self._conns.items() if f == flow]
        log.info(
            "%s: throttle share of each of its %d copy task(s): %s",
            flow,
            tasks,
            f"{share} bytes/s" if share else "none",
        )
        for c in conns:
            self._send(c, f"rate {share}\n".encode())

    def throttle_totals(self, flow: str) -> tuple[int, float]:
        """Return ``flow``'s throttle totals: record bytes its throttled tasks let through, seconds they held back."""
        with self._lock:
            return self._totals.get(flow, (0, 0.0))

    def grant(self, flow: str, generation: int, deadline: float) -> None:
        """Let the tasks of ``flow``'s ``generation`` commit until ``deadline`` (the driver's monotonic clock, s).

        An earlier deadline shortens later answers; a grant of an older or aborted generation is ignored
        (L7).
        """
        with self._lock:
            if generation < self._newest.get(flow, 0) or (flow, generation) in self._aborted:
                return
            self._newer(flow, generation)
            self._grants[(flow, generation)] = deadline

    def abort(self, flow: str, generation: int) -> None:
        """Tell the tasks of ``flow``'s ``generation`` to end without committing; for good, late tasks included (L7)."""
        with self._lock:
            self._newer(flow, generation)
            self._grants.pop((flow, generation), None)
            self._aborted.add((flow, generation))
        self._broadcast(flow, generation, b"abort\n")

    def forget(self, flow: str, task: int, generation: int) -> None:
        """Drop a finished task's connection."""
        with self._lock:
            conn = self._conns.pop((flow, task, generation), None)
            self._spent.pop((flow, task, generation), None)
        if conn is not None:
            _drop(conn)

    def close(self) -> None:
        """Close the server and every connection (tasks still running end without committing)."""
        with self._lock:
            self._closed = True
            conns = list(self._conns.values())
            self._conns.clear()
        self._server.close()
        for c in conns:
            _drop(c)


def _drop(conn: socket.socket) -> None:
    """Close a task's connection now (its reader thread holds the socket open: shut it down first)."""
    with contextlib.suppress(OSError):
        conn.shutdown(socket.SHUT_RDWR)
    conn.close()


__all__ = ["ACCEPT_POLL_S", "GrantServer"]
