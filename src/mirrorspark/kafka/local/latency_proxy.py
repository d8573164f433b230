"""A TCP proxy that makes a loopback connection look like a long link: a one-way delay and a bandwidth cap.

What the WAN case of ``make bench`` and the WAN tests put in front of a source cluster's WAN listener (#43), so
that MirrorMaker 2 and mirrorspark cross the same link. The link is modelled as it behaves for a Kafka client:

1. Every byte arrives ``delay_ms`` after it was sent, in each direction (an RTT of twice the delay), in order.
2. With a cap, each direction carries at most ``bandwidth_bytes_per_s`` over all of the proxy's connections
   (a token bucket of 1/20 s of the rate: bursts stay short), as one shared link does.
3. At most ``window_bytes`` are on their way per connection and direction, as a TCP window bounds what is in flight
   (the reader stops, the sender's socket fills and it waits); the throughput of one connection is at most
   ``window_bytes`` per RTT.
4. The shape can be changed while connections are open; it applies to the bytes read from then on.
5. A side that closes (or fails) closes the other side once what it sent before has been delivered.

It runs its own event loop in a daemon thread (:class:`LatencyProxy`) or as a process of its own
(``python -m mirrorspark.kafka.local.latency_proxy``; one per broker of a cluster: :func:`wan_link_processes`),
where a bench's many megabytes per second are not slowed by the bench's own threads.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import functools
import os
import select
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from mirrorspark.errors import LocalClusterError
from mirrorspark.kafka.local.model import LocalCluster
from mirrorspark.kafka.local.settings import HOST

MODULE = "mirrorspark.kafka.local.latency_proxy"
"""What ``python -m`` runs a proxy process as."""
CHUNK_BYTES = 256 * 1024
DEFAULT_WINDOW_BYTES = 16 * 1024 * 1024
BUCKET_S = 0.05
"""The token bucket holds this many seconds of the rate (invariant 2)."""


@dataclass(frozen=True)
class LinkShape:
    """The link a :class:`LatencyProxy` emulates: one-way delay (ms), cap (bytes/s per direction; 0 = none)."""

    delay_ms: float = 0.0
    bandwidth_bytes_per_s: int = 0
    window_bytes: int = DEFAULT_WINDOW_BYTES

    def __post_init__(self) -> None:
        if self.delay_ms < 0 or self.bandwidth_bytes_per_s < 0 or self.window_bytes < CHUNK_BYTES:
            raise LocalClusterError(
                f"link shape {self} is invalid: the delay and the bandwidth must be >= 0 and the window at least "
                f"{CHUNK_BYTES} bytes"
            )


class TokenBucket:
    """Bytes per second shared by every connection in one direction; 0 = no limit."""

    def __init__(self, rate: int) -> None:
        self.rate = rate
        self._tokens = 0.0
        self._at = time.monotonic()

    async def take(self, n: int) -> None:
        """Wait until ``n`` bytes may go (they may overdraw the bucket once: a chunk is never split)."""
        if self.rate <= 0:
            return
        now = time.monotonic()
        self._tokens = min(self.rate * BUCKET_S, self._tokens + (now - self._at) * self.rate)
        self._at = now
        self._tokens -= n
        if self._tokens < 0:
            await asyncio.sleep(-self._tokens / self.rate)


class _Pipe:
    """One direction of one connection: read, wait the delay, write (invariants 1, 3, 5)."""

    def __init__(self, link: _Link, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, bucket: int) -> None:
        self.link, self.reader, self.writer, self.bucket = link, reader, writer, bucket
        self.queue: collections.deque[tuple[float, bytes]] = collections.deque()
        self.in_flight = 0
        self.changed = asyncio.Event()
        self.eof = False
        self.closed = False

    async def pump_in(self) -> None:
        try:
            while not self.closed:
                while self.in_flight >= self.link.shape.window_bytes and not self.closed:
                    self.changed.clear()
                    await self.changed.wait()
                data = await self.reader.read(CHUNK_BYTES)
                if not data or self.closed:
                    break
                await self.link.buckets[self.bucket].take(len(data))
                self.queue.append((time.monotonic() + self.link.shape.delay_ms / 1000, data))
                self.in_flight += len(data)
                self.link.counted[self.bucket] += len(data)
                self.changed.set()
        except (ConnectionError, OSError):
            pass
        finally:
            self.eof = True
            self.changed.set()

    async def pump_out(self) -> None:
        try:
            while True:
                if not self.queue:
                    if self.eof:
                        break
                    self.changed.clear()
                    await self.changed.wait()
                    continue
                due, data = self.queue[0]
                wait = due - time.monotonic()
                if wait > 0:
                    await asyncio.sleep(wait)
                self.queue.popleft()
                self.writer.write(data)
                await self.writer.drain()
                # the window opens when the acknowledgement is back, one delay later (invariant 3)
                asyncio.get_running_loop().call_later(self.link.shape.delay_ms / 1000, self._acknowledged, len(data))
        except (ConnectionError, OSError):
            pass
        finally:
            self.closed = True  # a failed write: what is read from now on goes nowhere
            self.queue.clear()
            self.changed.set()
            with contextlib.suppress(ConnectionError, OSError):
                self.writer.close()

    def _acknowledged(self, n: int) -> None:
        self.in_flight -= n
        self.changed.set()


class _Link:
    """The proxy's state in its event loop: the shape, one bucket per direction, the bytes carried."""

    def __init__(self, shape: LinkShape) -> None:
        self.shape = shape
        self.buckets = [TokenBucket(shape.bandwidth_bytes_per_s), TokenBucket(shape.bandwidth_bytes_per_s)]
        self.counted = [0, 0]

    def reshape(self, shape: LinkShape) -> None:
        self.shape = shape
        for bucket in self.buckets:
            bucket.rate = shape.bandwidth_bytes_per_s

    async def serve(
        self, upstream: tuple[str, int], client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter
    ) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection(*upstream)
        except OSError:
            client_writer.close()
            return
        to_server = _Pipe(self, client_reader, up_writer, 0)
        to_client = _Pipe(self, up_reader, client_writer, 1)
        pumps = (to_server.pump_in(), to_server.pump_out(), to_client.pump_in(), to_client.pump_out())
        with contextlib.suppress(asyncio.CancelledError):  # the proxy stops: a handler that ends cancelled is logged
            await asyncio.gather(*pumps)


class LatencyProxy:
    """A link from ``127.0.0.1:port`` (0 = a free port) to ``upstream``, in a daemon thread of its own.

    :meth:`route` adds more ports, each to its own upstream (a cluster's brokers), all over the one link: they
    share its cap (invariant 2).
    """

    def __init__(self, upstream: tuple[str, int], shape: LinkShape | None = None, *, port: int = 0) -> None:
        self._link = _Link(shape or LinkShape())
        self._routes: list[tuple[int, tuple[str, int]]] = [(port, upstream)]
        self._loop: asyncio.AbstractEventLoop | None = None
        self._servers: list[asyncio.Server] = []
        self._thread: threading.Thread | None = None
        self.ports: list[int] = []

    @property
    def port(self) -> int:
        """The first route's port (0 until started)."""
        return self.ports[0] if self.ports else 0

    def route(self, port: int, upstream: tuple[str, int]) -> LatencyProxy:
        """Also forward ``port`` to ``upstream`` (before :meth:`start`)."""
        self._routes.append((port, upstream))
        return self

    @property
    def shape(self) -> LinkShape:
        """The link as it is now."""
        return self._link.shape

    @property
    def bytes_carried(self) -> tuple[int, int]:
        """Bytes read so far: (toward the upstream, toward the clients)."""
        return self._link.counted[0], self._link.counted[1]

    def start(self) -> LatencyProxy:
        """Listen and serve; return at once (started already: nothing). Raises LocalClusterError if a port is taken."""
        if self._loop is not None:
            return self
        ready = threading.Event()
        failure: list[BaseException] = []
        loop = asyncio.new_event_loop()

        def run() -> None:
            asyncio.set_event_loop(loop)
            for port, upstream in self._routes:
                try:
                    server = loop.run_until_complete(
                        asyncio.start_server(
                            functools.partial(self._link.serve, upstream), HOST, port, reuse_address=True
                        )
                    )
                except OSError as e:
                    failure.append(LocalClusterError(f"the latency proxy cannot listen on {HOST}:{port}: {e}"))
                    break
                self._servers.append(server)
                self.ports.append(server.sockets[0].getsockname()[1])
            ready.set()
            loop.run_forever()

        self._loop = loop
        self._thread = threading.Thread(target=run, name="latency-proxy", daemon=True)
        self._thread.start()
        ready.wait()
        if failure:
            self.stop()
            raise failure[0]
        return self

    def reshape(self, shape: LinkShape) -> None:
        """Change the link for the bytes read from now on (invariant 4)."""
        if self._loop is None:
            self._link.reshape(shape)
        else:
            self._loop.call_soon_threadsafe(self._link.reshape, shape)

    def stop(self) -> None:
        """Stop listening and drop every connection (idempotent)."""
        loop, self._loop = self._loop, None
        if loop is None:
            return

        async def close() -> None:
            for server in self._servers:
                server.close()
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)  # ended here, not destroyed pending at loop stop

        asyncio.run_coroutine_threadsafe(close(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        if self._thread is not None:
            self._thread.join(10)

    def __enter__(self) -> LatencyProxy:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.stop()


def wan_link(cluster: LocalCluster, shape: LinkShape | None = None) -> LatencyProxy:
    """Start the link to ``cluster``'s WAN listeners: each broker's advertised WAN port to its WAN listener.

    Clients given :attr:`LocalCluster.wan_bootstrap_servers` then cross it for every request. Raises
    LocalClusterError if the cluster has no WAN listener or a port is taken.
    """
    cluster.wan_bootstrap_servers  # noqa: B018 (raises without a WAN listener)
    first, *rest = cluster.brokers
    proxy = LatencyProxy((HOST, first.wan_listen_port), shape, port=first.wan_port)
    for broker in rest:
        proxy.route(broker.wan_port, (HOST, broker.wan_listen_port))
    return proxy.start()


class LinkProcesses:
    """A :func:`wan_link` made of processes, one ``python -m mirrorspark.kafka.local.latency_proxy`` per broker.

    Each broker's link is a process of its own, so a bandwidth cap applies per broker rather than over the cluster
    (invariant 2 holds within each); a shape is changed by starting the processes again (:func:`wan_link_processes`).
    """

    def __init__(self, processes: Sequence[subprocess.Popen[str]]) -> None:
        self.processes = list(processes)

    @property
    def pids(self) -> list[int]:
        """The proxies' process ids."""
        return [p.pid for p in self.processes]

    def stop(self) -> None:
        """Terminate every proxy (SIGTERM, then SIGKILL after 10 s) and wait for it (idempotent)."""
        for p in self.processes:
            if p.poll() is None:
                p.terminate()
        for p in self.processes:
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(10)
        self.processes = []

    def __enter__(self) -> LinkProcesses:
        return self

    def __exit__(self, *_: object) -> None:
        self.stop()


def wan_link_processes(
    cluster: LocalCluster, shape: LinkShape | None = None, *, log_path: Path | None = None, timeout_s: float = 30.0
) -> LinkProcesses:
    """Start :func:`wan_link`'s routes as processes (:class:`LinkProcesses`); return once each listens.

    The proxies' standard error goes to ``log_path`` (appended; ``None``: discarded). Raises LocalClusterError if the
    cluster has no WAN listener, or a proxy exits or stays silent for ``timeout_s`` (e.g. its port is taken).
    """
    cluster.wan_bootstrap_servers  # noqa: B018 (raises without a WAN listener)
    shape = shape or LinkShape()
    link = LinkProcesses([])
    try:
        for broker in cluster.brokers:
            command = [sys.executable, "-m", MODULE]
            command += ["--upstream", f"{HOST}:{broker.wan_listen_port}", "--port", str(broker.wan_port)]
            command += ["--delay-ms", str(shape.delay_ms), "--bandwidth", str(shape.bandwidth_bytes_per_s)]
            command += ["--window", str(shape.window_bytes)]
            with open(log_path or os.devnull, "a") as err:
                proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=err, text=True)
            link.processes.append(proc)
            _await_port(proc, timeout_s, log_path)
    except BaseException:
        link.stop()
        raise
    return link


def _await_port(proc: subprocess.Popen[str], timeout_s: float, log_path: Path | None) -> None:
    """Wait for a proxy process's first line, its port (:func:`main`)."""
    assert proc.stdout is not None
    ready, _, _ = select.select([proc.stdout], [], [], timeout_s)
    line = proc.stdout.readline() if ready else ""
    if not line.strip().isdigit():
        proc.kill()
        proc.wait(10)
        where = f" (its log: {log_path})" if log_path else ""
        raise LocalClusterError(f"the latency proxy process did not start within {timeout_s:g} s{where}")


def main(argv: Sequence[str] | None = None) -> int:
    """Run a proxy in the foreground until SIGTERM or SIGINT; print its port on the first line."""
    parser = argparse.ArgumentParser(prog="python -m mirrorspark.kafka.local.latency_proxy", description=__doc__)
    parser.add_argument("--upstream", required=True, help="host:port the proxy forwards to")
    parser.add_argument("--port", type=int, default=0, help="port to listen on, 127.0.0.1 (0 = a free one)")
    parser.add_argument("--delay-ms", type=float, default=0.0, help="one-way delay in milliseconds")
    parser.add_argument("--bandwidth", type=int, default=0, help="bytes/s per direction (0 = no limit)")
    parser.add_argument("--window", type=int, default=DEFAULT_WINDOW_BYTES, help="bytes in flight per connection")
    args = parser.parse_args(argv)
    host, _, port = args.upstream.rpartition(":")
    shape = LinkShape(args.delay_ms, args.bandwidth, args.window)
    proxy = LatencyProxy((host or HOST, int(port)), shape, port=args.port).start()
    print(proxy.port, flush=True)
    stopped = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stopped.set())
    stopped.wait()
    proxy.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
