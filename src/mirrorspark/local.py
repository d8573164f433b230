"""Local Apache Kafka clusters for tests and the demo, launched from the Maven jars.

:func:`start_clusters` starts N independent KRaft clusters on loopback ports, each
with 1 to 3 brokers, as detached JVM processes (``java -cp build/jars/kafka/* kafka.Kafka``)
that outlive the Python process that started them, and records their state in
``<base_dir>/clusters.json`` so that another process (``mirrorspark local down``)
can find and stop them.

Layout of one ``up``::

    <base_dir>/
        clusters.json             state: aliases, ports, pids (mode 0600, holds SASL passwords)
        log4j2.properties         broker logging at WARN, written by us
        .lock                     serialises start/stop on this base dir
        <alias>/                  LocalCluster.data_dir
            node-<id>/
                server.properties
                kafka.log         the JVM's stdout and stderr
                data/             log.dirs (and the KRaft metadata log)

Topology: node 0 of every cluster runs ``process.roles=broker,controller`` and is the
only KRaft voter (static ``controller.quorum.voters``, so formatting needs no
``--standalone``); nodes 1 and 2 run ``process.roles=broker``. A single voter
elects itself at once, which is the fastest reliable start-up (three combined
nodes would need a quorum of JVMs up first); while node 0 is down the cluster cannot
change metadata (no leader elections, topic creation or registrations).

Start-up speed: every cluster is formatted and started concurrently; storage
formatting runs the JVM with C1 only. While no AppCDS archive exists, the first
broker started dumps one (``-XX:ArchiveClassesAtExit``) when it is stopped cleanly; later
JVMs map it (``-XX:SharedArchiveFile``), which roughly halves JVM start-up
(3.2 s -> 1.8 s for one broker on a 2-core machine). The archive is cached under
``<jars base>/../cds`` (env ``MIRRORSPARK_CDS_DIR``), keyed by the ``java``
binary and the jar set; ``MIRRORSPARK_KAFKA_CDS=0`` turns the trick off.

:func:`stop_cluster`, :func:`stop_broker` and :func:`restart_cluster` simulate outages:
the brokers stop and start again on the same ports, data and cluster id.

:func:`start_mirror_maker` runs Apache Kafka's own MirrorMaker 2 (dedicated mode, from the
``mm2`` jars) against such clusters, for compatibility tests and benchmarks; it returns a
:class:`MirrorMakerProcess` to stop it gracefully (Connect then commits its source offsets).

Thread-safety: the functions may be called from several threads and processes;
start and stop on one base directory are serialised by an advisory file lock.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import hashlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import uuid
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any, Final, Literal

from confluent_kafka.admin import AdminClient

from mirrorspark.errors import LocalClusterError, UnknownAliasError
from mirrorspark.jars import classpath, jar_dir, jars_base_dir, java_executable

__all__ = [
    "STATE_FILE",
    "LocalBroker",
    "LocalCluster",
    "LocalClusters",
    "MirrorMakerProcess",
    "SecurityProtocol",
    "load_clusters",
    "restart_cluster",
    "start_clusters",
    "start_mirror_maker",
    "stop_broker",
    "stop_cluster",
    "stop_clusters",
]

SecurityProtocol = Literal["plaintext", "sasl_plain"]
"""How clients reach the brokers: ``"plaintext"`` (no auth) or ``"sasl_plain"``
(SASL/PLAIN over plaintext, ``StandardAuthorizer`` ACLs, super users ``admin`` and
``ANONYMOUS``)."""

STATE_FILE: Final = "clusters.json"
"""Name of the state file written into the base directory of one ``up``."""

_STATE_VERSION: Final = 1
_LOCK_FILE: Final = ".lock"
_LOG4J_FILE: Final = "log4j2.properties"
_HOST: Final = "127.0.0.1"
_ALIAS_RE: Final = re.compile(r"[A-Za-z0-9_-]+")
_SASL_NAME_RE: Final = re.compile(r"[A-Za-z0-9_.-]+")
_MAX_BROKERS: Final = 3
_LOG_TAIL_LINES: Final = 30
_PORT_ATTEMPTS: Final = 3
_POLL_INTERVAL_S: Final = 0.05
_ADMIN_USER: Final = "admin"
_DEFAULT_ADMIN_PASSWORD: Final = "admin-secret"

# Properties the launcher owns: overriding them through extra_broker_props would break
# the bookkeeping of ports, roles and directories.
_RESERVED_PROPS: Final = frozenset(
    {
        "advertised.listeners",
        "broker.rack",
        "controller.listener.names",
        "controller.quorum.bootstrap.servers",
        "controller.quorum.voters",
        "listeners",
        "log.dir",
        "log.dirs",
        "node.id",
        "process.roles",
    }
)

# Topic-creation defaults that KRaft reads on the controller only.
_CONTROLLER_ONLY_PROPS: Final = ("default.replication.factor", "num.partitions")

# Heap and GC as Kafka's start script (KAFKA_JVM_PERFORMANCE_OPTS) with a small heap.
_BROKER_JVM_FLAGS: Final = (
    "-Xms128m",
    "-Xmx512m",
    "-XX:+UseG1GC",
    "-XX:MaxGCPauseMillis=20",
    "-XX:InitiatingHeapOccupancyPercent=35",
    "-XX:+ExplicitGCInvokesConcurrent",
    "-XX:MaxInlineLevel=15",
    "-XX:+ExitOnOutOfMemoryError",
    "-Djava.awt.headless=true",
)
# StorageTool lives for under a second: C1 only and a small heap start it fastest.
_TOOL_JVM_FLAGS: Final = ("-Xmx256m", "-XX:TieredStopAtLevel=1", "-Djava.awt.headless=true")
# Silence CDS warnings (e.g. "shared class paths mismatch" after the jars changed).
_CDS_QUIET: Final = ("-Xlog:cds=off", "-Xlog:cds+dynamic=off")
_CDS_DUMP_FILE: Final = "cds-dump.jsa"
_CDS_TARGET_FILE: Final = "cds-dump.target"

_LOG4J2_PROPERTIES: Final = """\
# Written by mirrorspark.local: broker logs at WARN, plus the start-up line.
status = warn
name = mirrorspark-local
appender.console.type = Console
appender.console.name = STDOUT
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = WARN
rootLogger.appenderRef.stdout.ref = STDOUT
logger.raftserver.name = kafka.server.KafkaRaftServer
logger.raftserver.level = INFO
"""

# Popen handles of the brokers this process started, so that it can reap them.
_CHILDREN: dict[int, subprocess.Popen[bytes]] = {}
_CHILDREN_LOCK = threading.Lock()


# --------------------------------------------------------------------------------------------
# Public data model
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LocalBroker:
    """One broker (JVM process) of a local cluster.

    Attributes
    ----------
    node_id:
        Kafka ``node.id``, 0-based within the cluster.
    port:
        Client listener port on 127.0.0.1 (``PLAINTEXT`` or ``SASL_PLAINTEXT``).
    controller_port:
        Port of the KRaft ``CONTROLLER`` listener this node uses: its own for node 0
        (the combined broker+controller), node 0's for broker-only nodes.
    rack:
        ``broker.rack``, or ``None`` if not set.
    pid:
        Process id of the JVM, which is also its process group id (own session);
        ``0`` while the broker is stopped (see :func:`stop_cluster`).
    log_path:
        File receiving the JVM's stdout and stderr (log4j2 at WARN).
    controller:
        Whether the node also runs the KRaft controller (node 0 only).
    """

    node_id: int
    port: int
    controller_port: int
    rack: str | None
    pid: int
    log_path: Path
    controller: bool = field(default=False, kw_only=True)

    @property
    def node_dir(self) -> Path:
        """Directory of this node: ``server.properties``, ``kafka.log`` and ``data/``."""
        return self.log_path.parent

    @property
    def properties_path(self) -> Path:
        """The node's ``server.properties``."""
        return self.node_dir / "server.properties"

    @property
    def address(self) -> str:
        """``127.0.0.1:<port>`` of the client listener."""
        return f"{_HOST}:{self.port}"


@dataclass(frozen=True)
class LocalCluster:
    """One local Kafka cluster: its alias, brokers and how to connect.

    Attributes
    ----------
    alias:
        The cluster alias (as in ``mm2.properties``).
    bootstrap_servers:
        Comma-separated ``127.0.0.1:<port>`` of every broker.
    data_dir:
        ``<base_dir>/<alias>``, holding one ``node-<id>`` directory per broker.
    brokers:
        The brokers, by ``node_id``.
    cluster_id:
        The KRaft cluster id (base64url of 16 random bytes).
    security:
        ``"plaintext"`` or ``"sasl_plain"``.
    sasl_users:
        SASL/PLAIN ``user -> password`` accepted by the brokers (always contains ``admin``,
        the brokers' own, super user identity); empty for ``"plaintext"``. Hidden from
        ``repr``.
    """

    alias: str
    bootstrap_servers: str
    data_dir: Path
    brokers: tuple[LocalBroker, ...]
    cluster_id: str = field(default="", kw_only=True)
    security: SecurityProtocol = field(default="plaintext", kw_only=True)
    sasl_users: Mapping[str, str] = field(default_factory=dict, kw_only=True, repr=False)

    def client_config(self, user: str | None = None) -> dict[str, str]:
        """Return a librdkafka (confluent-kafka) client configuration for this cluster.

        Parameters
        ----------
        user:
            SASL user to authenticate as, default ``admin`` (a super user); ignored
            for ``"plaintext"`` clusters.

        Returns
        -------
        dict[str, str]
            ``bootstrap.servers`` and, for ``"sasl_plain"``, ``security.protocol``,
            ``sasl.mechanism``, ``sasl.username`` and ``sasl.password``.

        Raises
        ------
        LocalClusterError
            If ``user`` is not one of the cluster's SASL users.
        """
        config = {"bootstrap.servers": self.bootstrap_servers}
        if self.security == "sasl_plain":
            name, password = self._credentials(user)
            config.update(
                {
                    "security.protocol": "SASL_PLAINTEXT",
                    "sasl.mechanism": "PLAIN",
                    "sasl.username": name,
                    "sasl.password": password,
                }
            )
        return config

    def java_client_properties(self, user: str | None = None) -> dict[str, str]:
        """Return a Java Kafka client configuration (MM2, Spark's ``kafka.*`` options).

        Parameters
        ----------
        user:
            SASL user to authenticate as, default ``admin``; ignored for ``"plaintext"``.

        Returns
        -------
        dict[str, str]
            ``bootstrap.servers`` and, for ``"sasl_plain"``, ``security.protocol``,
            ``sasl.mechanism`` and a ``PlainLoginModule`` ``sasl.jaas.config``.

        Raises
        ------
        LocalClusterError
            If ``user`` is not one of the cluster's SASL users.
        """
        config = {"bootstrap.servers": self.bootstrap_servers}
        if self.security == "sasl_plain":
            name, password = self._credentials(user)
            config.update(
                {
                    "security.protocol": "SASL_PLAINTEXT",
                    "sasl.mechanism": "PLAIN",
                    "sasl.jaas.config": (
                        "org.apache.kafka.common.security.plain.PlainLoginModule required"
                        f' username="{name}" password="{password}";'
                    ),
                }
            )
        return config

    def _credentials(self, user: str | None) -> tuple[str, str]:
        name = _ADMIN_USER if user is None else user
        if name not in self.sasl_users:
            raise LocalClusterError(
                f"cluster {self.alias!r} has no SASL user {name!r}: use one of {', '.join(sorted(self.sasl_users))}"
            )
        return name, self.sasl_users[name]


@dataclass(frozen=True)
class LocalClusters:
    """The state of one ``up``: every cluster started together under one base directory.

    Attributes
    ----------
    base_dir:
        The base directory holding ``clusters.json`` and one directory per cluster.
    clusters:
        The clusters by alias, in the order they were given.
    """

    base_dir: Path
    clusters: Mapping[str, LocalCluster]

    def cluster(self, alias: str) -> LocalCluster:
        """Return the cluster called ``alias``.

        Parameters
        ----------
        alias:
            The cluster alias.

        Returns
        -------
        LocalCluster
            The cluster.

        Raises
        ------
        UnknownAliasError
            If there is no such cluster.
        """
        try:
            return self.clusters[alias]
        except KeyError:
            raise UnknownAliasError(
                f"no local cluster {alias!r} in {self.base_dir}: known aliases are"
                f" {', '.join(self.clusters) or '(none)'}"
            ) from None

    def bootstrap(self, alias: str) -> str:
        """Return ``bootstrap.servers`` of one cluster.

        Parameters
        ----------
        alias:
            The cluster alias.

        Returns
        -------
        str
            Comma-separated ``127.0.0.1:<port>`` of the cluster's brokers.

        Raises
        ------
        UnknownAliasError
            If there is no such cluster.
        """
        return self.cluster(alias).bootstrap_servers

    def mm2_properties(
        self,
        flows: Sequence[tuple[str, str]] | None = None,
        extra: Mapping[str, str] | None = None,
    ) -> str:
        """Return a ready-to-use ``mm2.properties`` for these clusters.

        Every internal topic replication factor (``replication.factor``,
        ``offset-syncs.``/``heartbeats.``/``checkpoints.topic.replication.factor`` and the
        Connect ``offset.``/``config.``/``status.storage.replication.factor``) is set to
        the smallest broker count of the clusters, so the file works on 1-broker clusters.

        Parameters
        ----------
        flows:
            ``(source, target)`` alias pairs written as ``source->target.enabled = true``.
            Default ``None``: the first alias to the second if there are at least two
            clusters, else no flow; ``[]`` for no flow.
        extra:
            Further properties, written last (they override the generated ones).

        Returns
        -------
        str
            The file's text in Java properties syntax, ending with a newline.

        Raises
        ------
        UnknownAliasError
            If a flow names an alias that is not one of the clusters.
        LocalClusterError
            If a flow's source and target are the same alias.
        """
        aliases = list(self.clusters)
        if flows is None:
            flows = [(aliases[0], aliases[1])] if len(aliases) >= 2 else []
        for source, target in flows:
            self.cluster(source)
            self.cluster(target)
            if source == target:
                raise LocalClusterError(f"flow {source}->{target} replicates a cluster to itself")
        rf = str(min((len(c.brokers) for c in self.clusters.values()), default=1))
        props: dict[str, str] = {"clusters": ", ".join(aliases)}
        for alias, cluster in self.clusters.items():
            for key, value in cluster.java_client_properties().items():
                props[f"{alias}.{key}"] = value
        for source, target in flows:
            props[f"{source}->{target}.enabled"] = "true"
        for key in (
            "replication.factor",
            "offset-syncs.topic.replication.factor",
            "heartbeats.topic.replication.factor",
            "checkpoints.topic.replication.factor",
            "offset.storage.replication.factor",
            "config.storage.replication.factor",
            "status.storage.replication.factor",
        ):
            props[key] = rf
        props.update(extra or {})
        header = f"# mm2.properties for the local clusters in {self.base_dir} (mirrorspark local)"
        return _format_properties(props, header=header, separator=" = ")

    def to_json(self) -> dict[str, dict[str, str]]:
        """Return the librdkafka client configuration of every cluster, by alias.

        Returns
        -------
        dict[str, dict[str, str]]
            ``{"primary": {"bootstrap.servers": "127.0.0.1:PORT"}, ...}``; SASL clusters
            also carry the ``admin`` credentials (see :meth:`LocalCluster.client_config`).
        """
        return {alias: cluster.client_config() for alias, cluster in self.clusters.items()}


# --------------------------------------------------------------------------------------------
# Public functions
# --------------------------------------------------------------------------------------------


def start_clusters(
    aliases: Sequence[str],
    *,
    base_dir: Path,
    brokers: int = 1,
    racks: Sequence[str] | None = None,
    extra_broker_props: Mapping[str, str] | None = None,
    security: SecurityProtocol = "plaintext",
    sasl_users: Mapping[str, str] | None = None,
    timeout_s: float = 90.0,
) -> LocalClusters:
    """Start one independent local Kafka cluster per alias and wait until all are ready.

    The JVMs run detached (own session) and survive the calling process; stop them with
    :func:`stop_clusters` (``mirrorspark local down --dir DIR``). A cluster is ready when
    every one of its brokers is registered and answers metadata requests. Data left in
    ``<base_dir>/<alias>`` by an earlier, stopped ``up`` is deleted first.

    Parameters
    ----------
    aliases:
        Cluster aliases, non-empty, unique, each matching ``[A-Za-z0-9_-]+``.
    base_dir:
        Directory for the state file and the clusters' data; created if missing.
    brokers:
        Brokers per cluster, 1 to 3 (default 1).
    racks:
        ``broker.rack`` of each broker (same racks in every cluster), length ``brokers``;
        default ``None``: no rack. Rack-aware follower fetching also needs
        ``replica.selector.class`` in ``extra_broker_props``.
    extra_broker_props:
        Properties merged into every broker's ``server.properties`` after the defaults
        (ports, roles, directories and racks are the launcher's and cannot be set).
    security:
        ``"plaintext"`` (default) or ``"sasl_plain"``: a ``SASL_PLAINTEXT`` client and
        inter-broker listener with the PLAIN mechanism, ``StandardAuthorizer`` and
        ``super.users=User:admin;User:ANONYMOUS`` (the controller listener stays plaintext).
    sasl_users:
        For ``"sasl_plain"``: ``user -> password`` accepted by the brokers; ``admin`` (the
        brokers' own identity) is added with password ``admin-secret`` if missing.
        Must be ``None`` for ``"plaintext"``.
    timeout_s:
        Deadline in seconds for formatting, starting and readiness of all clusters
        (default 90).

    Returns
    -------
    LocalClusters
        The running clusters, also written to ``<base_dir>/clusters.json``.

    Raises
    ------
    LocalClusterError
        If an argument is invalid, ``base_dir`` already has running clusters, the jars or
        ``java`` are missing, formatting fails, or a cluster is not ready in time (the
        message then holds the last 30 lines of the broker log). Every process started
        by the failed call has been stopped.
    """
    aliases = _validate_aliases(aliases)
    if not 1 <= brokers <= _MAX_BROKERS:
        raise LocalClusterError(f"brokers must be between 1 and {_MAX_BROKERS}, got {brokers}")
    rack_list: list[str | None] = [None] * brokers
    if racks is not None:
        if len(racks) != brokers:
            raise LocalClusterError(f"racks must name one rack per broker: {brokers} brokers, {len(racks)} racks")
        if any(not r.strip() for r in racks):
            raise LocalClusterError("racks must be non-empty strings")
        rack_list = list(racks)
    extra = dict(extra_broker_props or {})
    reserved = sorted(_RESERVED_PROPS.intersection(extra))
    if reserved:
        raise LocalClusterError(
            f"extra_broker_props cannot set {', '.join(reserved)}: the launcher owns ports, roles,"
            " directories and racks (use the racks argument for broker.rack)"
        )
    users = _validate_security(security, sasl_users)
    deadline = time.monotonic() + timeout_s
    base_dir = Path(base_dir).expanduser().resolve()
    base_dir.mkdir(parents=True, exist_ok=True)
    java = java_executable()
    cp = classpath("kafka")
    with _locked(base_dir):
        _refuse_if_running(base_dir)
        _write_text(base_dir / _LOG4J_FILE, _LOG4J2_PROPERTIES)
        for attempt in range(1, _PORT_ATTEMPTS + 1):
            try:
                return _start_once(
                    aliases,
                    base_dir=base_dir,
                    racks=rack_list,
                    extra=extra,
                    security=security,
                    users=users,
                    java=java,
                    cp=cp,
                    deadline=deadline,
                )
            except _PortInUseError:
                if attempt == _PORT_ATTEMPTS:
                    raise LocalClusterError(
                        f"could not start the local clusters in {base_dir}: a loopback port was taken"
                        f" by another process {_PORT_ATTEMPTS} times; retry"
                    ) from None
    raise AssertionError("unreachable")  # pragma: no cover


def load_clusters(base_dir: Path) -> LocalClusters:
    """Read the state of an ``up`` from ``<base_dir>/clusters.json``.

    Parameters
    ----------
    base_dir:
        The base directory given to :func:`start_clusters`.

    Returns
    -------
    LocalClusters
        The clusters as recorded (processes are not checked).

    Raises
    ------
    LocalClusterError
        If there is no state file (no clusters were started there) or it is unreadable.
    """
    base_dir = Path(base_dir).expanduser().resolve()
    state = _read_state(base_dir)
    if state is None:
        raise LocalClusterError(
            f"no local clusters in {base_dir}: start them with `mirrorspark local up --dir {base_dir}`"
        )
    return state


def stop_clusters(base_dir: Path, *, timeout_s: float = 30.0) -> list[str]:
    """Stop every broker of an ``up`` and remove its state file.

    Broker-only nodes are stopped first (their controlled shutdown needs the controller),
    then the controller nodes: ``SIGTERM`` to each process group, then ``SIGKILL`` to
    those still running after ``timeout_s``. Data directories and logs are kept.
    Idempotent: without a state file nothing happens.

    Parameters
    ----------
    base_dir:
        The base directory given to :func:`start_clusters`.
    timeout_s:
        Seconds to wait for a graceful exit of each phase (broker-only nodes, then
        controllers) before ``SIGKILL`` (default 30).

    Returns
    -------
    list[str]
        Aliases of the clusters that were recorded (in order), empty if there were none.

    Raises
    ------
    LocalClusterError
        If the state file exists but cannot be read.
    """
    base_dir = Path(base_dir).expanduser().resolve()
    if not (base_dir / STATE_FILE).exists():
        return []
    with _locked(base_dir):
        state = _read_state(base_dir)
        if state is None:
            return []
        all_brokers = [b for c in state.clusters.values() for b in c.brokers]
        _stop_brokers(all_brokers, timeout_s=timeout_s)
        (base_dir / STATE_FILE).unlink(missing_ok=True)
        return list(state.clusters)


def stop_cluster(clusters: LocalClusters, alias: str, *, timeout_s: float = 30.0) -> LocalClusters:
    """Stop every broker of one cluster, keeping its data and ports (an outage).

    Parameters
    ----------
    clusters:
        The state of the ``up`` holding the cluster.
    alias:
        The cluster to stop.
    timeout_s:
        Seconds to wait for a graceful exit of each phase before ``SIGKILL`` (default 30).

    Returns
    -------
    LocalClusters
        The state with the cluster's broker pids set to 0, also written to the state file;
        :func:`restart_cluster` starts the brokers again.

    Raises
    ------
    UnknownAliasError
        If there is no such cluster.
    """
    cluster = clusters.cluster(alias)
    return _stop_nodes(clusters, cluster, cluster.brokers, timeout_s=timeout_s)


def stop_broker(clusters: LocalClusters, alias: str, node_id: int, *, timeout_s: float = 30.0) -> LocalClusters:
    """Stop one broker of a cluster, keeping its data and port.

    Stopping node 0 also stops the cluster's only KRaft controller: the other brokers
    then keep running but cannot change metadata (no leader elections, no new topics).

    Parameters
    ----------
    clusters:
        The state of the ``up`` holding the cluster.
    alias:
        The cluster.
    node_id:
        The broker's ``node.id``.
    timeout_s:
        Seconds to wait for a graceful exit before ``SIGKILL`` (default 30).

    Returns
    -------
    LocalClusters
        The state with the broker's pid set to 0, also written to the state file;
        :func:`restart_cluster` starts it again.

    Raises
    ------
    UnknownAliasError
        If there is no such cluster.
    LocalClusterError
        If the cluster has no broker ``node_id``.
    """
    cluster = clusters.cluster(alias)
    brokers = [b for b in cluster.brokers if b.node_id == node_id]
    if not brokers:
        raise LocalClusterError(
            f"local cluster {alias!r} has no broker {node_id}: its node ids are"
            f" {', '.join(str(b.node_id) for b in cluster.brokers)}"
        )
    return _stop_nodes(clusters, cluster, brokers, timeout_s=timeout_s)


def _stop_nodes(
    clusters: LocalClusters, cluster: LocalCluster, brokers: Sequence[LocalBroker], *, timeout_s: float
) -> LocalClusters:
    ids = {b.node_id for b in brokers}
    with _locked(clusters.base_dir):
        _stop_brokers(brokers, timeout_s=timeout_s)
        stopped = replace(cluster, brokers=tuple(replace(b, pid=0) if b.node_id in ids else b for b in cluster.brokers))
        new_state = _with_cluster(clusters, stopped)
        _write_state(new_state)
        return new_state


def restart_cluster(clusters: LocalClusters, alias: str, *, timeout_s: float = 90.0) -> LocalClusters:
    """Start again the brokers of a cluster stopped by :func:`stop_cluster` or :func:`stop_broker`.

    The brokers reuse their data directories, ports and cluster id; brokers of the
    cluster that are still running are left alone.

    Parameters
    ----------
    clusters:
        The state of the ``up`` holding the cluster.
    alias:
        The cluster to restart.
    timeout_s:
        Deadline in seconds until the cluster is ready (default 90).

    Returns
    -------
    LocalClusters
        The state with the new pids, also written to the state file.

    Raises
    ------
    UnknownAliasError
        If there is no such cluster.
    LocalClusterError
        If the cluster does not become ready in time (with the broker log's tail); the
        brokers started by this call are stopped again.
    """
    cluster = clusters.cluster(alias)
    deadline = time.monotonic() + timeout_s
    java = java_executable()
    cp = classpath("kafka")
    with _locked(clusters.base_dir):
        cds = _Cds.for_kafka(java)
        started: dict[int, LocalBroker] = {}
        try:
            for broker in cluster.brokers:
                if broker.pid and _is_our_broker(broker):
                    continue
                pid = _launch_broker(java, cp, clusters.base_dir, broker.properties_path, broker.log_path, cds)
                started[broker.node_id] = replace(broker, pid=pid)
            restarted = replace(cluster, brokers=tuple(started.get(b.node_id, b) for b in cluster.brokers))
            new_state = _with_cluster(clusters, restarted)
            _write_state(new_state)
            _wait_ready([restarted], deadline=deadline)
        except BaseException:
            _stop_brokers(started.values(), timeout_s=5.0, graceful=False)
            down = replace(
                cluster,
                brokers=tuple(replace(b, pid=0) if b.node_id in started else b for b in cluster.brokers),
            )
            with contextlib.suppress(OSError):
                _write_state(_with_cluster(clusters, down))
            raise
        return new_state


# --------------------------------------------------------------------------------------------
# Apache Kafka's own MirrorMaker 2, dedicated mode (for compatibility tests and benchmarks)
# --------------------------------------------------------------------------------------------

_MM2_MAIN: Final = "org.apache.kafka.connect.mirror.MirrorMaker"
_MM2_LOG4J_FILE: Final = "mirror-maker-log4j2.properties"
_MM2_STARTED_LINE: Final = "Kafka MirrorMaker started"
# As the broker JVMs (and Kafka's KAFKA_JVM_PERFORMANCE_OPTS) minus the heap, which is an argument.
_MM2_JVM_FLAGS: Final = tuple(f for f in _BROKER_JVM_FLAGS if not f.startswith(("-Xms", "-Xmx")))

_MM2_LOG4J2_PROPERTIES: Final = """\
# Written by mirrorspark.local: MirrorMaker 2 logs at WARN, its own classes at INFO
# (start-up, herder leadership, connector and task lifecycle, topic creation).
status = warn
name = mirrorspark-local-mm2
appender.console.type = Console
appender.console.name = STDOUT
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = WARN
rootLogger.appenderRef.stdout.ref = STDOUT
logger.mirror.name = org.apache.kafka.connect.mirror
logger.mirror.level = INFO
# "refreshing topics took 9 ms" every refresh interval: noise.
logger.mirrorscheduler.name = org.apache.kafka.connect.mirror.Scheduler
logger.mirrorscheduler.level = WARN
"""


@dataclass
class MirrorMakerProcess:
    """A running (or stopped) Apache Kafka MirrorMaker 2 JVM started by :func:`start_mirror_maker`.

    Attributes
    ----------
    pid:
        Process id of the JVM, which is also its process group id (own session).
    properties:
        The ``mm2.properties`` it was started with.
    clusters:
        The ``--clusters`` target aliases it serves, empty for all.
    log_path:
        File receiving the JVM's stdout and stderr (log4j2: WARN, ``org.apache.kafka.connect.mirror``
        at INFO).
    command:
        The full ``java`` command line.
    started_at:
        ``time.monotonic()`` when the JVM was launched.
    returncode:
        Exit status once the process has exited and been reaped by this process, else ``None``
        (143 = exited on ``SIGTERM``, -9 = killed; see mm2.md §15 for MM2's own codes).

    Not thread-safe; :meth:`stop` is idempotent.
    """

    pid: int
    properties: Path
    clusters: tuple[str, ...]
    log_path: Path
    command: tuple[str, ...] = field(repr=False)
    started_at: float = field(repr=False)
    returncode: int | None = None
    _proc: subprocess.Popen[bytes] | None = field(default=None, repr=False, compare=False)

    @property
    def running(self) -> bool:
        """Whether the JVM is still running (and is still this MirrorMaker, not a reused pid)."""
        if self._proc is not None:
            code = self._proc.poll()
            if code is not None:
                self.returncode = code
                return False
            return True
        return _pid_alive(self.pid) and _is_our_mirror_maker(self.pid, self.properties)

    def wait_started(self, timeout_s: float = 60.0) -> float:
        """Wait until the driver has started its herders (log line ``Kafka MirrorMaker started``).

        The herders then still have to join their Connect groups and start the connectors
        and tasks (about a second on a local cluster), so replication proper begins a little
        later; wait for the data itself where it matters.

        Parameters
        ----------
        timeout_s:
            Deadline in seconds (default 60).

        Returns
        -------
        float
            Seconds from launch until the line was seen (a start-up time measurement, to
            within the 50 ms poll interval).

        Raises
        ------
        LocalClusterError
            If the process exits first, or the line does not appear in time (with the log tail).
        """
        deadline = time.monotonic() + timeout_s
        offset = 0
        pending = b""
        while True:
            try:
                with open(self.log_path, "rb") as f:
                    f.seek(offset)
                    chunk = f.read()
            except OSError:
                chunk = b""
            offset += len(chunk)
            pending += chunk
            if _MM2_STARTED_LINE.encode() in pending:
                return time.monotonic() - self.started_at
            pending = pending[-len(_MM2_STARTED_LINE) :]
            if not self.running:
                raise LocalClusterError(
                    f"MirrorMaker (pid {self.pid}) exited during start-up"
                    f"{'' if self.returncode is None else f' with status {self.returncode}'}; last lines of"
                    f" {self.log_path}:\n{self.log_tail()}"
                )
            if time.monotonic() >= deadline:
                raise LocalClusterError(
                    f"MirrorMaker (pid {self.pid}) did not log {_MM2_STARTED_LINE!r} within {timeout_s:.0f} s;"
                    f" last lines of {self.log_path}:\n{self.log_tail()}"
                )
            time.sleep(_POLL_INTERVAL_S)

    def stop(self, timeout_s: float = 30.0) -> int | None:
        """Stop MirrorMaker: ``SIGTERM`` (graceful), then ``SIGKILL`` after ``timeout_s``.

        On ``SIGTERM`` the driver's shutdown hook stops every herder: the connectors' tasks
        stop and Connect commits their source offsets (``mm2-offsets.<source>.internal``)
        and MM2 flushes its pending offset syncs, so a successor resumes exactly where this
        process stopped. After ``SIGKILL`` the stored offsets are those of the last periodic
        flush (``offset.flush.interval.ms``) and a successor repeats the records since.
        Idempotent: a process that has already exited is not signalled again.

        Parameters
        ----------
        timeout_s:
            Seconds to wait for the graceful exit before ``SIGKILL`` (default 30).

        Returns
        -------
        int or None
            The exit status (143 after a graceful ``SIGTERM`` exit, -9 if it had to be
            killed), or ``None`` if the process was not started by this Python process.

        Raises
        ------
        LocalClusterError
            If the process survives ``SIGKILL``.
        """
        if self.running:
            _signal_group(self.pid, signal.SIGTERM)
            if not self._wait_exit(time.monotonic() + timeout_s):
                _signal_group(self.pid, signal.SIGKILL)
                if not self._wait_exit(time.monotonic() + 10.0):
                    raise LocalClusterError(f"MirrorMaker process {self.pid} survived SIGKILL: check it with ps")
        _reap(self.pid)
        if self._proc is not None:
            self.returncode = self._proc.returncode
        return self.returncode

    def log_tail(self, n: int = _LOG_TAIL_LINES) -> str:
        """Return the last ``n`` lines of the log (default 30), or a note if there is none."""
        return _log_tail(self.log_path, n)

    def __enter__(self) -> MirrorMakerProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _wait_exit(self, deadline: float) -> bool:
        while self.running:
            if time.monotonic() >= deadline:
                return False
            time.sleep(_POLL_INTERVAL_S)
        return True


def start_mirror_maker(
    properties: Path,
    *,
    base_dir: Path,
    clusters: Sequence[str] | None = None,
    heap: str = "-Xmx512m",
) -> MirrorMakerProcess:
    """Start Apache Kafka's MirrorMaker 2 in dedicated mode, detached, and return at once.

    Runs ``java -cp build/jars/mm2/* org.apache.kafka.connect.mirror.MirrorMaker <properties>
    [--clusters ...]`` (what ``bin/connect-mirror-maker.sh`` runs) in its own session, with
    stdout and stderr in ``<base_dir>/mirror-maker-<n>.log`` (``n`` = the first free index,
    so several MirrorMakers can share a base directory) and logging configured by
    ``<base_dir>/mirror-maker-log4j2.properties`` (WARN; INFO for
    ``org.apache.kafka.connect.mirror``). The JVM outlives the calling process: stop it
    with :meth:`MirrorMakerProcess.stop` (in a ``finally``, or use the process as a context
    manager).

    Hints for ``mm2.properties`` in tests (see :meth:`LocalClusters.mm2_properties` for the
    replication factors of single-broker clusters):

    * Connect commits source offsets every ``offset.flush.interval.ms`` (default 60 s) and
      on a graceful stop; set ``<target alias>.offset.flush.interval.ms`` low (e.g. 1000) to
      see them sooner.
    * ``plugin.discovery = service_load`` and ``<target alias>.plugin.discovery =
      service_load`` skip Connect's class-path plugin scan (once for the driver, once per
      herder); all MM2 plugins have ServiceLoader manifests. On a 2-core machine the driver
      then starts in about 5 s instead of 14 s, and the first records are copied about 12 s
      after launch instead of 20 s.
    * By default a herder runs for every pair of clusters with heartbeats enabled (both
      directions with two clusters); ``clusters=[target]`` starts only the flows into
      ``target``.

    Parameters
    ----------
    properties:
        The ``mm2.properties`` file (must exist).
    base_dir:
        Directory for the log and log4j2 configuration; created if missing. May be the base
        directory of :func:`start_clusters` (the file names do not clash).
    clusters:
        Target cluster aliases for ``--clusters`` (herders only for flows into them);
        default ``None``: all clusters.
    heap:
        JVM heap flag(s), whitespace-separated (default ``-Xmx512m``; Kafka's script uses
        ``-Xms256M -Xmx2G``).

    Returns
    -------
    MirrorMakerProcess
        The running process; :meth:`MirrorMakerProcess.wait_started` waits for the driver
        to start.

    Raises
    ------
    LocalClusterError
        If ``properties`` is missing, ``clusters`` is empty or not a sequence of names,
        ``java`` or the ``mm2`` jars are missing, or the JVM cannot be launched.
    """
    properties = Path(properties).expanduser().resolve()
    if not properties.is_file():
        raise LocalClusterError(f"MirrorMaker properties file {properties} does not exist")
    targets: tuple[str, ...] = ()
    if clusters is not None:
        if isinstance(clusters, str):
            raise LocalClusterError(f"clusters must be a sequence of aliases, not the string {clusters!r}")
        targets = tuple(clusters)
        if not targets or any(not isinstance(c, str) or not c.strip() or c.startswith("-") for c in targets):
            raise LocalClusterError(f"clusters must be non-empty cluster aliases, got {list(targets)!r}")
    heap_flags = tuple(heap.split())
    java = java_executable()
    cp = classpath("mm2")
    base_dir = Path(base_dir).expanduser().resolve()
    base_dir.mkdir(parents=True, exist_ok=True)
    log4j = base_dir / _MM2_LOG4J_FILE
    command = (
        java,
        *heap_flags,
        *_MM2_JVM_FLAGS,
        f"-Dlog4j2.configurationFile={log4j}",
        "-cp",
        cp,
        _MM2_MAIN,
        str(properties),
        *(("--clusters", *targets) if targets else ()),
    )
    with _locked(base_dir):
        _write_text(log4j, _MM2_LOG4J2_PROPERTIES, mode=0o644)
        n = 0
        while (base_dir / f"mirror-maker-{n}.log").exists():
            n += 1
        log_path = base_dir / f"mirror-maker-{n}.log"
        try:
            with open(log_path, "xb") as log:
                proc = subprocess.Popen(
                    command,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    cwd=base_dir,
                    start_new_session=True,
                    close_fds=True,
                )
        except OSError as e:
            raise LocalClusterError(f"could not launch MirrorMaker ({java}): {e}") from e
        started_at = time.monotonic()
    with _CHILDREN_LOCK:
        _CHILDREN[proc.pid] = proc
    return MirrorMakerProcess(
        pid=proc.pid,
        properties=properties,
        clusters=targets,
        log_path=log_path,
        command=command,
        started_at=started_at,
        _proc=proc,
    )


def _is_our_mirror_maker(pid: int, properties: Path) -> bool:
    """Whether ``pid`` runs MirrorMaker with ``properties`` (guards against pid reuse)."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return True  # no procfs: trust the pid
    return _MM2_MAIN.encode() in cmdline and str(properties).encode() in cmdline


# --------------------------------------------------------------------------------------------
# Start-up
# --------------------------------------------------------------------------------------------


class _PortInUseError(Exception):
    """A broker could not bind its port (taken between allocation and bind)."""


@dataclass(frozen=True)
class _Plan:
    cluster: LocalCluster
    properties: dict[int, dict[str, str]]  # node_id -> server.properties


def _start_once(
    aliases: list[str],
    *,
    base_dir: Path,
    racks: list[str | None],
    extra: dict[str, str],
    security: SecurityProtocol,
    users: dict[str, str],
    java: str,
    cp: str,
    deadline: float,
) -> LocalClusters:
    n = len(racks)
    ports = _free_ports(len(aliases) * (n + 1))
    plans: list[_Plan] = []
    for i, alias in enumerate(aliases):
        cluster_ports = ports[i * (n + 1) : (i + 1) * (n + 1)]
        plans.append(
            _plan_cluster(
                alias,
                base_dir=base_dir,
                ports=cluster_ports[:n],
                controller_port=cluster_ports[n],
                racks=racks,
                extra=extra,
                security=security,
                users=users,
            )
        )
    for plan in plans:
        _remove_stale_data(plan.cluster.data_dir)
        for broker in plan.cluster.brokers:
            broker.node_dir.mkdir(parents=True)
            _write_text(
                broker.properties_path,
                _format_properties(
                    plan.properties[broker.node_id],
                    header=f"# node {broker.node_id} of local cluster {plan.cluster.alias}",
                ),
            )
    cds = _Cds.for_kafka(java)
    _format_storage(plans, java=java, cp=cp, base_dir=base_dir, cds=cds, deadline=deadline)

    started: list[LocalBroker] = []
    try:
        clusters: dict[str, LocalCluster] = {}
        for plan in plans:
            launched = []
            for broker in plan.cluster.brokers:
                pid = _launch_broker(java, cp, base_dir, broker.properties_path, broker.log_path, cds)
                launched.append(replace(broker, pid=pid))
                started.append(launched[-1])
            clusters[plan.cluster.alias] = replace(plan.cluster, brokers=tuple(launched))
        state = LocalClusters(base_dir=base_dir, clusters=MappingProxyType(clusters))
        # Written before waiting, so that `down` finds the processes if we are interrupted.
        _write_state(state)
        _wait_ready(list(clusters.values()), deadline=deadline)
        return state
    except BaseException:
        _stop_brokers(started, timeout_s=5.0, graceful=False)
        (base_dir / STATE_FILE).unlink(missing_ok=True)
        raise


def _remove_stale_data(data_dir: Path) -> None:
    """Delete a cluster directory left by an earlier ``up``, refusing to touch anything else."""
    if not data_dir.exists():
        return
    foreign = [p.name for p in data_dir.iterdir() if not (p.is_dir() and p.name.startswith("node-"))]
    if foreign:
        raise LocalClusterError(
            f"{data_dir} exists and is not a local cluster directory (it holds"
            f" {', '.join(sorted(foreign)[:3])}): choose another base directory or alias"
        )
    shutil.rmtree(data_dir)


def _plan_cluster(
    alias: str,
    *,
    base_dir: Path,
    ports: Sequence[int],
    controller_port: int,
    racks: Sequence[str | None],
    extra: Mapping[str, str],
    security: SecurityProtocol,
    users: Mapping[str, str],
) -> _Plan:
    n = len(ports)
    data_dir = base_dir / alias
    listener = "SASL_PLAINTEXT" if security == "sasl_plain" else "PLAINTEXT"
    common: dict[str, str] = {
        "controller.quorum.voters": f"0@{_HOST}:{controller_port}",
        "controller.listener.names": "CONTROLLER",
        "inter.broker.listener.name": listener,
        "listener.security.protocol.map": f"CONTROLLER:PLAINTEXT,{listener}:{listener}",
        # Internal topics sized to the broker count; few partitions for a fast start.
        "offsets.topic.replication.factor": str(min(3, n)),
        "offsets.topic.num.partitions": "5",
        "transaction.state.log.replication.factor": str(min(3, n)),
        "transaction.state.log.min.isr": str(min(2, n)),
        "transaction.state.log.num.partitions": "5",
        "share.coordinator.state.topic.replication.factor": str(min(3, n)),
        "share.coordinator.state.topic.min.isr": str(min(2, n)),
        "share.coordinator.state.topic.num.partitions": "5",
        "default.replication.factor": str(min(3, n)),
        "num.partitions": "1",
        "auto.create.topics.enable": "false",
        "group.initial.rebalance.delay.ms": "0",
        # A 2-core test machine: fewer threads; the cleaner's dedupe buffer (default 128 MiB
        # of heap) shrunk so that a 512 MiB heap is ample.
        "num.network.threads": "2",
        "num.io.threads": "4",
        "log.cleaner.dedupe.buffer.size": str(8 * 1024 * 1024),
    }
    if security == "sasl_plain":
        jaas = " ".join(
            [
                "org.apache.kafka.common.security.plain.PlainLoginModule required",
                f'username="{_ADMIN_USER}" password="{users[_ADMIN_USER]}"',
                *(f'user_{name}="{password}"' for name, password in users.items()),
            ]
        )
        common.update(
            {
                "sasl.enabled.mechanisms": "PLAIN",
                "sasl.mechanism.inter.broker.protocol": "PLAIN",
                "listener.name.sasl_plaintext.plain.sasl.jaas.config": jaas + ";",
                "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
                "super.users": f"User:{_ADMIN_USER};User:ANONYMOUS",
            }
        )
    brokers: list[LocalBroker] = []
    properties: dict[int, dict[str, str]] = {}
    for node_id in range(n):
        node_dir = data_dir / f"node-{node_id}"
        is_controller = node_id == 0
        props = dict(common)
        props["node.id"] = str(node_id)
        props["process.roles"] = "broker,controller" if is_controller else "broker"
        listeners = f"{listener}://{_HOST}:{ports[node_id]}"
        if is_controller:
            listeners += f",CONTROLLER://{_HOST}:{controller_port}"
        props["listeners"] = listeners
        props["advertised.listeners"] = f"{listener}://{_HOST}:{ports[node_id]}"
        props["log.dirs"] = str(node_dir / "data")
        if not is_controller:
            # Topic-creation defaults are the controller's (Kafka warns on broker-only nodes).
            for key in _CONTROLLER_ONLY_PROPS:
                props.pop(key, None)
        rack = racks[node_id]
        if rack is not None:
            props["broker.rack"] = rack
        props.update(extra)
        properties[node_id] = props
        brokers.append(
            LocalBroker(
                node_id=node_id,
                port=ports[node_id],
                controller_port=controller_port,
                rack=rack,
                pid=0,
                log_path=node_dir / "kafka.log",
                controller=is_controller,
            )
        )
    cluster = LocalCluster(
        alias=alias,
        bootstrap_servers=",".join(b.address for b in brokers),
        data_dir=data_dir,
        brokers=tuple(brokers),
        cluster_id=_random_cluster_id(),
        security=security,
        sasl_users=MappingProxyType(dict(users)),
    )
    return _Plan(cluster=cluster, properties=properties)


def _format_storage(
    plans: Sequence[_Plan], *, java: str, cp: str, base_dir: Path, cds: _Cds | None, deadline: float
) -> None:
    """Run ``kafka.tools.StorageTool format`` for every node, all concurrently."""
    jobs: list[tuple[LocalCluster, LocalBroker, subprocess.Popen[bytes]]] = []
    try:
        for plan in plans:
            for broker in plan.cluster.brokers:
                args = [
                    java,
                    *_TOOL_JVM_FLAGS,
                    *(cds.use_flags() if cds is not None else ()),
                    f"-Dlog4j2.configurationFile={base_dir / _LOG4J_FILE}",
                    "-cp",
                    cp,
                    "kafka.tools.StorageTool",
                    "format",
                    "--cluster-id",
                    plan.cluster.cluster_id,
                    "--config",
                    str(broker.properties_path),
                ]
                proc = subprocess.Popen(
                    args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
                )
                jobs.append((plan.cluster, broker, proc))
        for cluster, broker, proc in jobs:
            try:
                out, _ = proc.communicate(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                raise LocalClusterError(
                    f"formatting the storage of node {broker.node_id} of local cluster {cluster.alias!r}"
                    " timed out: raise the timeout or check the machine's load"
                ) from None
            if proc.returncode != 0:
                tail = "\n".join(out.decode(errors="replace").splitlines()[-_LOG_TAIL_LINES:])
                raise LocalClusterError(
                    f"formatting the storage of node {broker.node_id} of local cluster {cluster.alias!r}"
                    f" failed (exit {proc.returncode}); StorageTool said:\n{tail}"
                )
    finally:
        for _, _, proc in jobs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            if proc.stdout is not None:
                proc.stdout.close()


def _launch_broker(java: str, cp: str, base_dir: Path, properties: Path, log_path: Path, cds: _Cds | None) -> int:
    """Start ``kafka.Kafka`` detached (own session); return its pid (= process group id)."""
    cds_flags: tuple[str, ...] = ()
    if cds is not None:
        cds_flags = cds.use_flags() or cds.dump_flags(log_path.parent)
    args = [
        java,
        *_BROKER_JVM_FLAGS,
        *cds_flags,
        f"-Dlog4j2.configurationFile={base_dir / _LOG4J_FILE}",
        f"-Dkafka.logs.dir={log_path.parent}",
        "-cp",
        cp,
        "kafka.Kafka",
        str(properties),
    ]
    with open(log_path, "ab") as log:
        proc = subprocess.Popen(
            args,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=log_path.parent,
            start_new_session=True,
            close_fds=True,
        )
    with _CHILDREN_LOCK:
        _CHILDREN[proc.pid] = proc
    return proc.pid


def _wait_ready(clusters: Sequence[LocalCluster], *, deadline: float) -> None:
    """Poll until every broker of every cluster is registered, or raise with the log tail."""
    pending = {c.alias: c for c in clusters}
    admins: dict[str, Any] = {}
    last_error: dict[str, str] = {}
    while pending:
        for alias, cluster in list(pending.items()):
            _check_alive(cluster)
            if not all(_port_open(b.port) for b in cluster.brokers):
                last_error[alias] = "client ports not open yet"
                continue
            admin = admins.get(alias)
            if admin is None:
                admin = admins[alias] = AdminClient(_probe_config(cluster))
            try:
                metadata = admin.list_topics(timeout=max(0.2, min(2.0, deadline - time.monotonic())))
            except Exception as e:  # KafkaException: broker not answering yet
                last_error[alias] = str(e)
                continue
            registered = len(metadata.brokers)
            if registered >= len(cluster.brokers):
                del pending[alias]
            else:
                last_error[alias] = f"{registered} of {len(cluster.brokers)} brokers registered"
        if not pending:
            return
        if time.monotonic() >= deadline:
            alias, cluster = next(iter(pending.items()))
            raise LocalClusterError(
                f"local cluster {alias!r} ({cluster.bootstrap_servers}) was not ready before the"
                f" deadline ({last_error.get(alias, 'no answer')}); last lines of"
                f" {cluster.brokers[0].log_path}:\n{_log_tail(cluster.brokers[0].log_path)}"
            )
        time.sleep(_POLL_INTERVAL_S)


def _probe_config(cluster: LocalCluster) -> dict[str, Any]:
    config: dict[str, Any] = dict(cluster.client_config())
    config.update(
        {
            "client.id": f"mirrorspark-local|{cluster.alias}|readiness",
            "log_level": 0,  # connection refused while starting is expected: no log noise
            "reconnect.backoff.ms": 50,
            "reconnect.backoff.max.ms": 200,
        }
    )
    return config


def _check_alive(cluster: LocalCluster) -> None:
    for broker in cluster.brokers:
        if broker.pid == 0 or _pid_alive(broker.pid):  # 0: not launched yet
            continue
        tail = _log_tail(broker.log_path)
        if "Address already in use" in tail:
            raise _PortInUseError(broker.address)
        raise LocalClusterError(
            f"node {broker.node_id} of local cluster {cluster.alias!r} exited during start-up;"
            f" last lines of {broker.log_path}:\n{tail}"
        )


def _port_open(port: int) -> bool:
    try:
        with socket.create_connection((_HOST, port), timeout=0.2):
            return True
    except OSError:
        return False


def _free_ports(count: int) -> list[int]:
    """Return ``count`` distinct free loopback ports (held together while choosing)."""
    sockets: list[socket.socket] = []
    try:
        for _ in range(count):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind((_HOST, 0))
            sockets.append(s)
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def _random_cluster_id() -> str:
    """A Kafka ``Uuid`` as ``StorageTool random-uuid`` prints it (base64url, no padding)."""
    while True:
        raw = uuid.uuid4().bytes
        text = base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")
        # Kafka reserves the all-zero id and 1 (the metadata topic id) and avoids a leading "-".
        if not text.startswith("-") and int.from_bytes(raw, "big") > 1:
            return text


# --------------------------------------------------------------------------------------------
# Stopping and process identity
# --------------------------------------------------------------------------------------------


def _stop_brokers(brokers: Iterable[LocalBroker], *, timeout_s: float, graceful: bool = True) -> None:
    """Stop brokers: broker-only nodes first, then controllers; SIGKILL after ``timeout_s``."""
    running = [b for b in brokers if b.pid and _is_our_broker(b)]
    for phase in ([b for b in running if not b.controller], [b for b in running if b.controller]):
        if not phase:
            continue
        sig = signal.SIGTERM if graceful else signal.SIGKILL
        for broker in phase:
            _signal_group(broker.pid, sig)
        killed = not graceful
        pending = _wait_exit(phase, deadline=time.monotonic() + timeout_s)
        if pending:
            killed = True
            for broker in pending:
                _signal_group(broker.pid, signal.SIGKILL)
            pending = _wait_exit(pending, deadline=time.monotonic() + 10.0)
        for broker in phase:
            _reap(broker.pid)
            _Cds.collect_dump(broker.node_dir, keep=not killed)
        if pending:
            raise LocalClusterError(
                f"broker processes {', '.join(str(b.pid) for b in pending)} survived SIGKILL: check them with ps"
            )


def _wait_exit(brokers: Sequence[LocalBroker], *, deadline: float) -> list[LocalBroker]:
    pending = list(brokers)
    while pending:
        pending = [b for b in pending if _pid_alive(b.pid)]
        if not pending or time.monotonic() >= deadline:
            break
        time.sleep(_POLL_INTERVAL_S)
    return pending


def _signal_group(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


def _reap(pid: int) -> None:
    with _CHILDREN_LOCK:
        proc = _CHILDREN.pop(pid, None)
    if proc is not None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=5.0)


def _pid_alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie counts as exited; our own children are reaped)."""
    if pid <= 0:
        return False
    with _CHILDREN_LOCK:
        proc = _CHILDREN.get(pid)
    if proc is not None:
        return proc.poll() is None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True  # no procfs: trust kill(0)
    return stat.rpartition(")")[2].split()[0:1] != ["Z"]


def _is_our_broker(broker: LocalBroker) -> bool:
    """Whether ``broker.pid`` is alive and still runs this broker (guards against pid reuse)."""
    if not _pid_alive(broker.pid):
        return False
    try:
        cmdline = Path(f"/proc/{broker.pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return True  # no procfs: trust the pid
    return b"kafka.Kafka" in cmdline and str(broker.properties_path).encode() in cmdline


def _refuse_if_running(base_dir: Path) -> None:
    try:
        state = _read_state(base_dir)
    except LocalClusterError:
        state = None  # unreadable leftovers of a crashed up: replaced below
    if state is None:
        return
    running = [alias for alias, c in state.clusters.items() if any(b.pid and _is_our_broker(b) for b in c.brokers)]
    if running:
        raise LocalClusterError(
            f"{base_dir} already has running local clusters ({', '.join(running)}):"
            f" run `mirrorspark local down --dir {base_dir}` first, or choose another directory"
        )
    (base_dir / STATE_FILE).unlink(missing_ok=True)


def _log_tail(path: Path, lines: int = _LOG_TAIL_LINES) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - 64 * 1024))
            data = f.read()
    except OSError as e:
        return f"(no log: {e.strerror})"
    text = data.decode(errors="replace").splitlines()[-lines:]
    return "\n".join(text) if text else "(log is empty)"


# --------------------------------------------------------------------------------------------
# AppCDS archive (class-data sharing) for faster JVM start-up
# --------------------------------------------------------------------------------------------


class _Cds:
    """A dynamic AppCDS archive of the Kafka class path, shared by every broker JVM."""

    def __init__(self, archive: Path) -> None:
        self.archive = archive
        self._dumper_chosen = False

    @classmethod
    def for_kafka(cls, java: str) -> _Cds | None:
        """Return the archive handle, or ``None`` if CDS is off or the cache is not writable."""
        if os.environ.get("MIRRORSPARK_KAFKA_CDS", "1").strip().lower() in {"0", "false", "no", "off"}:
            return None
        override = os.environ.get("MIRRORSPARK_CDS_DIR", "").strip()
        cache = Path(override).expanduser() if override else jars_base_dir().parent / "cds"
        try:
            cache.mkdir(parents=True, exist_ok=True)
        except OSError:
            return None
        if not os.access(cache, os.W_OK):
            return None
        digest = hashlib.sha256()
        java_path = Path(java).resolve()
        st = java_path.stat()
        digest.update(f"{java_path}\0{st.st_size}\0{st.st_mtime_ns}\0".encode())
        for jar in sorted(jar_dir("kafka").glob("*.jar")):
            st = jar.stat()
            digest.update(f"{jar.name}\0{st.st_size}\0{st.st_mtime_ns}\0".encode())
        return cls(cache / f"kafka-{digest.hexdigest()[:16]}.jsa")

    def use_flags(self) -> tuple[str, ...]:
        """Flags mapping the archive, or ``()`` if it does not exist yet."""
        if self.archive.is_file() and self.archive.stat().st_size > 0:
            return (f"-XX:SharedArchiveFile={self.archive}", *_CDS_QUIET)
        return ()

    def dump_flags(self, node_dir: Path) -> tuple[str, ...]:
        """Flags making one JVM (the first asked) dump an archive into ``node_dir`` at exit.

        The archive's cache path is noted beside the dump, so that whichever process
        stops the JVM can promote it (:meth:`collect_dump`).
        """
        if self._dumper_chosen:
            return ()
        self._dumper_chosen = True
        try:
            (node_dir / _CDS_TARGET_FILE).write_text(str(self.archive))
        except OSError:
            return ()
        return (f"-XX:ArchiveClassesAtExit={node_dir / _CDS_DUMP_FILE}", *_CDS_QUIET)

    @staticmethod
    def collect_dump(node_dir: Path, *, keep: bool) -> None:
        """Promote the archive a stopped JVM dumped into the cache (if it exited cleanly).

        The dump and its note are deleted in any case; failures are ignored (the archive
        is an optimisation only).
        """
        dump, target_note = node_dir / _CDS_DUMP_FILE, node_dir / _CDS_TARGET_FILE
        try:
            if keep and dump.is_file() and dump.stat().st_size > 0 and target_note.is_file():
                target = Path(target_note.read_text().strip())
                if not target.exists():
                    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
                    os.close(fd)
                    try:
                        shutil.copyfile(dump, tmp)
                        os.replace(tmp, target)
                    finally:
                        with contextlib.suppress(OSError):
                            os.unlink(tmp)
        except OSError:
            pass
        finally:
            with contextlib.suppress(OSError):
                dump.unlink(missing_ok=True)
                target_note.unlink(missing_ok=True)


# --------------------------------------------------------------------------------------------
# State file, locking, validation, properties
# --------------------------------------------------------------------------------------------


@contextlib.contextmanager
def _locked(base_dir: Path) -> Iterator[None]:
    base_dir.mkdir(parents=True, exist_ok=True)
    with open(base_dir / _LOCK_FILE, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _write_state(state: LocalClusters) -> None:
    doc = {
        "version": _STATE_VERSION,
        "base_dir": str(state.base_dir),
        "clusters": {
            alias: {
                "bootstrap.servers": c.bootstrap_servers,
                "data_dir": str(c.data_dir),
                "cluster_id": c.cluster_id,
                "security": c.security,
                "sasl_users": dict(c.sasl_users),
                "brokers": [
                    {
                        "node_id": b.node_id,
                        "port": b.port,
                        "controller_port": b.controller_port,
                        "rack": b.rack,
                        "pid": b.pid,
                        "log_path": str(b.log_path),
                        "controller": b.controller,
                    }
                    for b in c.brokers
                ],
            }
            for alias, c in state.clusters.items()
        },
    }
    _write_text(state.base_dir / STATE_FILE, json.dumps(doc, indent=2) + "\n", mode=0o600)


def _read_state(base_dir: Path) -> LocalClusters | None:
    path = base_dir / STATE_FILE
    try:
        doc = json.loads(path.read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as e:
        raise LocalClusterError(
            f"cannot read {path} ({e}): stop any brokers left from it by hand and delete the file"
        ) from e
    try:
        if doc.get("version") != _STATE_VERSION:
            raise ValueError(f"unsupported version {doc.get('version')!r}")
        clusters: dict[str, LocalCluster] = {}
        for alias, c in doc["clusters"].items():
            clusters[alias] = LocalCluster(
                alias=alias,
                bootstrap_servers=c["bootstrap.servers"],
                data_dir=Path(c["data_dir"]),
                brokers=tuple(
                    LocalBroker(
                        node_id=int(b["node_id"]),
                        port=int(b["port"]),
                        controller_port=int(b["controller_port"]),
                        rack=b["rack"],
                        pid=int(b["pid"]),
                        log_path=Path(b["log_path"]),
                        controller=bool(b["controller"]),
                    )
                    for b in c["brokers"]
                ),
                cluster_id=c["cluster_id"],
                security=c["security"],
                sasl_users=MappingProxyType(dict(c["sasl_users"])),
            )
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise LocalClusterError(
            f"{path} is not a mirrorspark local state file ({e}): stop any brokers left from it by hand"
            " and delete the file"
        ) from e
    return LocalClusters(base_dir=Path(doc.get("base_dir", base_dir)), clusters=MappingProxyType(clusters))


def _with_cluster(state: LocalClusters, cluster: LocalCluster) -> LocalClusters:
    clusters = dict(state.clusters)
    clusters[cluster.alias] = cluster
    return LocalClusters(base_dir=state.base_dir, clusters=MappingProxyType(clusters))


def _write_text(path: Path, text: str, *, mode: int = 0o600) -> None:
    """Write atomically (temporary file + rename)."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _validate_aliases(aliases: Sequence[str]) -> list[str]:
    if isinstance(aliases, str):
        raise LocalClusterError(f"aliases must be a sequence of names, not the string {aliases!r}")
    result = list(aliases)
    if not result:
        raise LocalClusterError("no cluster aliases given: name at least one, e.g. primary")
    for alias in result:
        if not isinstance(alias, str) or not _ALIAS_RE.fullmatch(alias):
            raise LocalClusterError(f"invalid cluster alias {alias!r}: use letters, digits, '_' and '-'")
    duplicates = sorted({a for a in result if result.count(a) > 1})
    if duplicates:
        raise LocalClusterError(f"duplicate cluster aliases: {', '.join(duplicates)}")
    return result


def _validate_security(security: str, users: Mapping[str, str] | None) -> dict[str, str]:
    if security == "plaintext":
        if users:
            raise LocalClusterError("sasl_users need security='sasl_plain'")
        return {}
    if security != "sasl_plain":
        raise LocalClusterError(f"unknown security {security!r}: use 'plaintext' or 'sasl_plain'")
    result = {_ADMIN_USER: _DEFAULT_ADMIN_PASSWORD}
    result.update(users or {})
    for name, password in result.items():
        if not _SASL_NAME_RE.fullmatch(name):
            raise LocalClusterError(f"invalid SASL user name {name!r}: use letters, digits, '_', '.' and '-'")
        if not password or any(ch in password for ch in '"\\;\n\r'):
            raise LocalClusterError(
                f"invalid password for SASL user {name!r}: must be non-empty without quotes,"
                " backslashes, semicolons or newlines"
            )
    return result


def _escape_properties(text: str, *, key: bool) -> str:
    """Escape for Java ``Properties.load``: backslashes and control characters always;
    ``=``, ``:`` and spaces in keys; a leading space, ``#`` or ``!``."""
    out = []
    for i, ch in enumerate(text):
        if ch in _PROPERTIES_ESCAPES:
            out.append(_PROPERTIES_ESCAPES[ch])
        elif (key and ch in "=: ") or (i == 0 and ch in " #!"):
            out.append("\\" + ch)
        else:
            out.append(ch)
    return "".join(out)


_PROPERTIES_ESCAPES: Final = {"\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _format_properties(props: Mapping[str, str], *, header: str = "", separator: str = "=") -> str:
    lines = [header] if header else []
    lines.extend(
        f"{_escape_properties(k, key=True)}{separator}{_escape_properties(v, key=False)}" for k, v in props.items()
    )
    return "\n".join(lines) + "\n"
