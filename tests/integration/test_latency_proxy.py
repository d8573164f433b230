"""The WAN tests' and bench's latency proxy over real loopback sockets (no Kafka): invariants 1-5."""

from __future__ import annotations

import os
import socket
import socketserver
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from mirrorspark.errors import LocalClusterError
from mirrorspark.kafka.local.latency_proxy import LatencyProxy, LinkShape, wan_link_processes
from mirrorspark.kafka.local.model import LocalBroker, LocalCluster

pytestmark = pytest.mark.integration


class _Echo(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        while data := self.request.recv(65536):
            self.request.sendall(data)


class _Sink(socketserver.BaseRequestHandler):
    """Reads everything, then answers with the byte count."""

    def handle(self) -> None:
        total = 0
        while data := self.request.recv(1 << 20):
            total += len(data)
            if data.endswith(b"!"):
                break
        self.request.sendall(str(total).encode())


def _server(handler: type[socketserver.BaseRequestHandler]) -> Iterator[tuple[str, int]]:
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server.server_address[0], server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def echo() -> Iterator[tuple[str, int]]:
    yield from _server(_Echo)


@pytest.fixture
def sink() -> Iterator[tuple[str, int]]:
    yield from _server(_Sink)


def _round_trip_s(port: int, payload: bytes = b"ping") -> float:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        began = time.monotonic()
        s.sendall(payload)
        got = b""
        while len(got) < len(payload):
            got += s.recv(65536)
        assert got == payload
        return time.monotonic() - began


def test_every_byte_crosses_each_way_after_the_delay_in_order(echo: tuple[str, int]) -> None:
    """Invariant 1: a round trip takes twice the one-way delay; the bytes come back as sent."""
    with LatencyProxy(echo, LinkShape(delay_ms=100)) as proxy:
        rtt = _round_trip_s(proxy.port)
        assert rtt >= 0.2, rtt
        payload = bytes(range(256)) * 4096  # 1 MiB, several chunks
        assert _round_trip_s(proxy.port, payload) >= 0.2
        assert proxy.bytes_carried[0] >= len(payload) and proxy.bytes_carried[1] >= len(payload)


def test_the_cap_bounds_the_rate_over_all_connections_and_changes_live(sink: tuple[str, int]) -> None:
    """Invariants 2 and 4: 4 MiB over two connections at 2 MiB/s take about 2 s; at 8 MiB/s about 0.5 s."""

    def send(port: int, n: int, out: list[int]) -> None:
        with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
            s.sendall(b"x" * (n - 1) + b"!")
            out.append(int(s.recv(64)))

    with LatencyProxy(sink, LinkShape(bandwidth_bytes_per_s=2 << 20)) as proxy:
        for rate, low_s in ((2 << 20, 1.6), (8 << 20, 0.3)):
            proxy.reshape(LinkShape(bandwidth_bytes_per_s=rate))
            out: list[int] = []
            began = time.monotonic()
            senders = [threading.Thread(target=send, args=(proxy.port, 2 << 20, out)) for _ in range(2)]
            for t in senders:
                t.start()
            for t in senders:
                t.join(60)
            took = time.monotonic() - began
            assert out == [2 << 20, 2 << 20]
            assert took >= low_s, (rate, took)  # never faster than the cap (its bucket holds 1/20 s)


def test_a_window_bounds_one_connections_throughput_to_a_window_per_round_trip(sink: tuple[str, int]) -> None:
    """Invariant 3: a 256 KiB window over a 100 ms RTT carries at most about 2.5 MiB/s: 1 MiB takes >= 0.3 s."""
    with (
        LatencyProxy(sink, LinkShape(delay_ms=50, window_bytes=256 * 1024)) as proxy,
        socket.create_connection(("127.0.0.1", proxy.port), timeout=30) as s,
    ):
        began = time.monotonic()
        s.sendall(b"x" * ((1 << 20) - 1) + b"!")
        assert int(s.recv(64)) == 1 << 20
        assert time.monotonic() - began >= 0.3


def test_a_closed_upstream_closes_the_client(echo: tuple[str, int]) -> None:
    """Invariant 5, and a proxy to nothing: the client sees the connection closed, not a hang."""
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        nothing = free.getsockname()
    with (
        LatencyProxy(nothing, LinkShape(delay_ms=10)) as proxy,
        socket.create_connection(("127.0.0.1", proxy.port), timeout=10) as s,
    ):
        assert s.recv(10) == b""


def test_a_busy_port_and_a_bad_shape_are_refused(echo: tuple[str, int]) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        with pytest.raises(LocalClusterError, match="cannot listen"):
            LatencyProxy(echo, port=busy.getsockname()[1]).start()
    with pytest.raises(LocalClusterError, match="invalid"):
        LinkShape(delay_ms=-1)


def _far(upstream_port: int, port: int) -> LocalCluster:
    """A cluster of one broker whose WAN listener is ``upstream_port``, advertised at ``port``."""
    broker = LocalBroker(0, 0, 0, None, 0, Path("unused/kafka.log"), wan_listen_port=upstream_port, wan_port=port)
    return LocalCluster("far", "127.0.0.1:0", Path("unused"), (broker,))


def test_the_link_runs_as_a_process_per_broker(echo: tuple[str, int], tmp_path: Path) -> None:
    """wan_link_processes: each broker's advertised WAN port is a proxy process of the shape; stop ends them."""
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    with wan_link_processes(_far(echo[1], port), LinkShape(delay_ms=100), log_path=tmp_path / "proxy.log") as link:
        assert len(link.pids) == 1 and os.getpid() not in link.pids
        assert _round_trip_s(port) >= 0.2
    assert link.pids == []
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=2).close()


def test_a_proxy_process_that_cannot_listen_says_so(echo: tuple[str, int], tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        with pytest.raises(LocalClusterError, match="did not start"):
            wan_link_processes(_far(echo[1], busy.getsockname()[1]), log_path=tmp_path / "proxy.log", timeout_s=60)
    assert "cannot listen" in (tmp_path / "proxy.log").read_text()
