"""A TCP proxy between mirrorspark and a target broker that can cut the network on demand.

The broker gets a second listener, ``EXTERNAL``, advertised at the proxy's port: clients that
bootstrap through the proxy learn the proxy's address from the metadata and never reach the broker
around it, while the broker's own traffic (inter-broker, transaction markers to itself) and the
test's readers use the direct ``PLAINTEXT`` listener.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

from mirrorspark.config.properties import format_properties, parse_properties
from mirrorspark.kafka.local.clusters import restart_cluster, stop_cluster
from mirrorspark.kafka.local.model import LocalCluster, LocalClusters

HOST = "127.0.0.1"


class TcpProxy:
    """Forward every connection accepted on :attr:`port` to ``127.0.0.1:<upstream>``, byte for byte.

    :meth:`cut` closes every open connection (both sides) and, while it lasts, closes new ones as
    soon as they are accepted: to a client the target is unreachable. Threads only, no asyncio.
    """

    def __init__(self) -> None:
        self._listener = socket.create_server((HOST, 0))
        self.port: int = self._listener.getsockname()[1]
        self.upstream = 0
        self.cuts = 0
        self.accepted = 0
        self._pairs: set[tuple[socket.socket, socket.socket]] = set()
        self._lock = threading.Lock()
        self._down = threading.Event()
        self._closed = threading.Event()
        self._thread = threading.Thread(target=self._accept, name="tcp-proxy", daemon=True)

    def start(self, upstream: int) -> None:
        """Forward to ``upstream`` (a port on 127.0.0.1) from now on."""
        self.upstream = upstream
        self._thread.start()

    def close(self) -> None:
        """Stop accepting and close every connection."""
        self._closed.set()
        with contextlib.suppress(OSError):
            self._listener.close()
        self._drop_all()

    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            if self._down.is_set():
                _close(client)
                continue
            try:
                server = socket.create_connection((HOST, self.upstream), timeout=10)
            except OSError:
                _close(client)
                continue
            server.settimeout(None)
            pair = (client, server)
            with self._lock:
                self._pairs.add(pair)
                self.accepted += 1
            for a, b in ((client, server), (server, client)):
                threading.Thread(target=self._pump, args=(a, b, pair), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket, pair: tuple[socket.socket, socket.socket]) -> None:
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                dst.sendall(data)
        except OSError:
            pass
        finally:
            with self._lock:
                self._pairs.discard(pair)
            _close(src)
            _close(dst)

    def _drop_all(self) -> int:
        with self._lock:
            pairs = list(self._pairs)
            self._pairs.clear()
        for client, server in pairs:
            _close(client)
            _close(server)
        return len(pairs)

    def cut(self, seconds: float) -> int:
        """Drop every connection and refuse new ones for ``seconds``; return how many were dropped."""
        dropped = self.down()
        try:
            time.sleep(seconds)  # the outage itself, not a wait for a condition
            return dropped
        finally:
            self.up()

    def down(self) -> int:
        """Drop every connection and refuse new ones until :meth:`up`; return how many were dropped."""
        self._down.set()
        self.cuts += 1
        return self._drop_all()

    def up(self) -> None:
        """Accept and forward connections again."""
        self._down.clear()


def _close(s: socket.socket) -> None:
    with contextlib.suppress(OSError):
        s.shutdown(socket.SHUT_RDWR)
    with contextlib.suppress(OSError):
        s.close()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


class ProxyGroup:
    """One :class:`TcpProxy` per broker of a cluster, cut and healed together (:func:`proxy_every_broker`).

    Cuts nest: a cut that begins while another lasts keeps the network down until both healed.
    """

    def __init__(self, proxies: list[TcpProxy]) -> None:
        self.proxies = proxies
        self.bootstrap_servers = ",".join(f"{HOST}:{p.port}" for p in proxies)
        self.cuts = 0  # cuts not healed yet

    def down(self) -> int:
        """Cut every broker's proxy (:meth:`TcpProxy.down`); return how many connections were dropped."""
        self.cuts += 1
        return sum(p.down() for p in self.proxies)

    def up(self) -> None:
        """Heal one cut; the proxies forward again once every cut is healed."""
        self.cuts = max(0, self.cuts - 1)
        if self.cuts == 0:
            for p in self.proxies:
                p.up()

    def close(self) -> None:
        """Stop every proxy."""
        for p in self.proxies:
            p.close()


def proxy_every_broker(clusters: LocalClusters, alias: str) -> ProxyGroup:
    """Put every broker of cluster ``alias`` behind a proxy of its own; the caller closes the group.

    Each broker is given an ``EXTERNAL`` listener on a free port advertised at its proxy's port
    (the cluster is stopped and started again); clients bootstrapping through the group's
    ``bootstrap_servers`` reach the brokers only through the proxies, the direct listeners stay.
    """
    cluster = clusters.cluster(alias)
    pairs = [(TcpProxy(), _free_port()) for _ in cluster.brokers]
    stopped = stop_cluster(clusters, alias)
    for broker, (proxy, external) in zip(cluster.brokers, pairs, strict=True):
        _add_external_listener(broker.properties_path, external, proxy.port, f"node {broker.node_id} of {alias}")
    restart_cluster(stopped, alias, timeout_s=300)
    for proxy, external in pairs:
        proxy.start(external)
    return ProxyGroup([proxy for proxy, _ in pairs])


def _add_external_listener(path: Path, port: int, advertised: int, what: str) -> None:
    """Give one broker an ``EXTERNAL`` listener on ``port``, advertised at ``advertised`` (its proxy)."""
    props = parse_properties(path.read_text())
    props["listeners"] += f",EXTERNAL://{HOST}:{port}"
    props["advertised.listeners"] += f",EXTERNAL://{HOST}:{advertised}"
    props["listener.security.protocol.map"] += ",EXTERNAL:PLAINTEXT"
    path.write_text(format_properties(props, header=f"# {what}, behind a proxy"))


@contextlib.contextmanager
def behind_proxy(clusters: LocalClusters, alias: str) -> Iterator[tuple[LocalCluster, TcpProxy]]:
    """Put cluster ``alias`` (one broker) behind a :class:`TcpProxy`; yield the cluster as clients see it.

    The broker is stopped, given an ``EXTERNAL`` listener on a free port advertised at the proxy's
    port, and started again. The yielded cluster's ``bootstrap_servers`` is the proxy; the direct
    address stays ``clusters.bootstrap(alias)``.
    """
    cluster = clusters.cluster(alias)
    assert len(cluster.brokers) == 1, "one broker behind one proxy"
    proxy = TcpProxy()
    external = _free_port()
    stopped = stop_cluster(clusters, alias)
    _add_external_listener(cluster.brokers[0].properties_path, external, proxy.port, f"node 0 of local cluster {alias}")
    restart_cluster(stopped, alias, timeout_s=300)
    proxy.start(external)
    try:
        yield replace(cluster, bootstrap_servers=f"{HOST}:{proxy.port}"), proxy
    finally:
        proxy.close()
