"""Start, stop and restart local KRaft clusters from the Maven jars."""

from __future__ import annotations

import contextlib
import functools
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from types import MappingProxyType

from mirrorspark.errors import LocalClusterError
from mirrorspark.kafka.jars import classpath, java_executable
from mirrorspark.kafka.local.brokers import (
    PortInUseError,
    is_our_broker,
    launch_broker,
    refuse_if_running,
    start_once,
    stop_brokers,
    wait_ready,
)
from mirrorspark.kafka.local.cds import Cds
from mirrorspark.kafka.local.model import LocalBroker, LocalCluster, LocalClusters, LocalSchemaRegistry
from mirrorspark.kafka.local.registry import READY_TIMEOUT_S, launch_registries, stop_registries, wait_registries
from mirrorspark.kafka.local.settings import (
    LOG4J2_PROPERTIES,
    LOG4J_FILE,
    MAX_BROKERS,
    PORT_ATTEMPTS,
    REGISTRY_DIR,
    RESERVED_PROPS,
    STATE_FILE,
    SecurityProtocol,
)
from mirrorspark.kafka.local.state import (
    locked,
    read_state,
    validate_aliases,
    validate_security,
    with_cluster,
    write_state,
    write_text,
)

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
    schema_registry: bool = False,
    wan: bool = False,
) -> LocalClusters:
    """Start one independent local Kafka cluster per alias and wait until all are ready.

    ``wan``: each broker also gets a WAN listener (plaintext only) that advertises a port of its own, for
    :func:`wan_link` to put a long link in front of (:attr:`LocalCluster.wan_bootstrap_servers`).

    ``schema_registry``: also start one Schema Registry per cluster (:mod:`~mirrorspark.kafka.local.registry`,
    Java 21+), started alongside the brokers and waited for up to 120 s (or ``timeout_s`` if longer).

    Raises LocalClusterError if an argument is invalid, ``base_dir`` already has running clusters, the jars or ``java``
    (Java 21+ for the registries) are missing, formatting fails, or a cluster or registry is not ready in time (the
    message then holds the last 30 lines of its log). Every process started by the failed call has been stopped.
    """
    aliases = validate_aliases(aliases)
    rack_list, extra = _checked_layout(brokers, racks, extra_broker_props)
    users = validate_security(security, sasl_users)
    if wan and security != "plaintext":
        raise LocalClusterError(f"a WAN listener is plaintext only, not {security}: start the clusters without wan")
    deadline = time.monotonic() + timeout_s
    base_dir = Path(base_dir).expanduser().resolve()
    base_dir.mkdir(parents=True, exist_ok=True)
    java = java_executable()
    cp = classpath("kafka")
    start = functools.partial(
        start_once,
        aliases,
        base_dir=base_dir,
        racks=rack_list,
        extra=extra,
        security=security,
        users=users,
        java=java,
        cp=cp,
        deadline=deadline,
        wan=wan,
    )
    with locked(base_dir):
        leftover = _registries_of(base_dir)
        refuse_if_running(base_dir)
        stop_registries(leftover)  # of an earlier up whose brokers are gone: its state is replaced now
        registries = launch_registries(aliases, base_dir=base_dir / REGISTRY_DIR) if schema_registry else {}
        try:
            write_text(base_dir / LOG4J_FILE, LOG4J2_PROPERTIES)
            started = _retry_ports(start, base_dir)
            if not registries:
                return started
            return _with_registries(started, registries, timeout_s=max(timeout_s, READY_TIMEOUT_S))
        except BaseException:
            stop_registries(registries.values(), timeout_s=5.0)
            raise


def _checked_layout(
    brokers: int, racks: Sequence[str] | None, extra_broker_props: Mapping[str, str] | None
) -> tuple[list[str | None], dict[str, str]]:
    """Check the broker count, racks and extra broker properties; return the rack per broker and the properties.

    Raises LocalClusterError on a broker count out of range, racks not one per broker, or a reserved property.
    """
    if not 1 <= brokers <= MAX_BROKERS:
        raise LocalClusterError(f"brokers must be between 1 and {MAX_BROKERS}, got {brokers}")
    rack_list: list[str | None] = [None] * brokers
    if racks is not None:
        if len(racks) != brokers:
            raise LocalClusterError(f"racks must name one rack per broker: {brokers} brokers, {len(racks)} racks")
        if any(not r.strip() for r in racks):
            raise LocalClusterError("racks must be non-empty strings")
        rack_list = list(racks)
    extra = dict(extra_broker_props or {})
    reserved = sorted(RESERVED_PROPS.intersection(extra))
    if reserved:
        raise LocalClusterError(
            f"extra_broker_props cannot set {', '.join(reserved)}: the launcher owns ports, roles,"
            " directories and racks (use the racks argument for broker.rack)"
        )
    return rack_list, extra


def _retry_ports(start: Callable[[], LocalClusters], base_dir: Path) -> LocalClusters:
    """Run ``start`` again, up to ``PORT_ATTEMPTS`` times in all, while a broker loses its port to another process."""
    for attempt in range(1, PORT_ATTEMPTS + 1):
        try:
            return start()
        except PortInUseError:
            if attempt == PORT_ATTEMPTS:
                raise LocalClusterError(
                    f"could not start the local clusters in {base_dir}: a loopback port was taken"
                    f" by another process {PORT_ATTEMPTS} times; retry"
                ) from None
    raise AssertionError("unreachable")  # pragma: no cover


def _registries_of(base_dir: Path) -> list[LocalSchemaRegistry]:
    """Return the Schema Registries the state of ``base_dir`` records (none if it has no readable state)."""
    try:
        state = read_state(base_dir)
    except LocalClusterError:
        return []
    clusters = state.clusters.values() if state is not None else ()
    return [c.schema_registry for c in clusters if c.schema_registry is not None]


def _with_registries(
    started: LocalClusters, registries: Mapping[str, LocalSchemaRegistry], *, timeout_s: float
) -> LocalClusters:
    """Wait for the clusters' registries and record them in the state; on failure stop the clusters' brokers too."""
    try:
        ready = wait_registries(registries, timeout_s=timeout_s)
    except BaseException:
        stop_brokers([b for c in started.clusters.values() for b in c.brokers], timeout_s=5.0, graceful=False)
        (started.base_dir / STATE_FILE).unlink(missing_ok=True)
        raise
    clusters = {alias: replace(c, schema_registry=ready[alias]) for alias, c in started.clusters.items()}
    state = LocalClusters(base_dir=started.base_dir, clusters=MappingProxyType(clusters))
    write_state(state)
    return state


def load_clusters(base_dir: Path) -> LocalClusters:
    """Read the state of an ``up`` from ``<base_dir>/clusters.json``.

    Raises LocalClusterError if there is no state file (no clusters were started there) or it is unreadable.
    """
    base_dir = Path(base_dir).expanduser().resolve()
    state = read_state(base_dir)
    if state is None:
        raise LocalClusterError(
            f"no local clusters in {base_dir}: start them with `mirrorspark local up --dir {base_dir}`"
        )
    return state


def stop_clusters(base_dir: Path, *, timeout_s: float = 30.0) -> list[str]:
    """Stop every broker (and Schema Registry) of an ``up`` and remove its state file.

    Raises LocalClusterError if the state file exists but cannot be read.
    """
    base_dir = Path(base_dir).expanduser().resolve()
    if not (base_dir / STATE_FILE).exists():
        return []
    with locked(base_dir):
        state = read_state(base_dir)
        if state is None:
            return []
        all_brokers = [b for c in state.clusters.values() for b in c.brokers]
        stop_registries([c.schema_registry for c in state.clusters.values() if c.schema_registry is not None])
        stop_brokers(all_brokers, timeout_s=timeout_s)
        (base_dir / STATE_FILE).unlink(missing_ok=True)
        return list(state.clusters)


def stop_cluster(clusters: LocalClusters, alias: str, *, timeout_s: float = 30.0) -> LocalClusters:
    """Stop every broker of one cluster, keeping its data and ports (an outage).

    Raises UnknownAliasError if there is no such cluster.
    """
    cluster = clusters.cluster(alias)
    return _stop_nodes(clusters, cluster, cluster.brokers, timeout_s=timeout_s)


def stop_broker(clusters: LocalClusters, alias: str, node_id: int, *, timeout_s: float = 30.0) -> LocalClusters:
    """Stop one broker of a cluster, keeping its data and port.

    Raises UnknownAliasError if there is no such cluster; LocalClusterError if the cluster has no broker ``node_id``.
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
    with locked(clusters.base_dir):
        stop_brokers(brokers, timeout_s=timeout_s)
        stopped = replace(cluster, brokers=tuple(replace(b, pid=0) if b.node_id in ids else b for b in cluster.brokers))
        new_state = with_cluster(clusters, stopped)
        write_state(new_state)
        return new_state


def restart_cluster(
    clusters: LocalClusters, alias: str, *, node_ids: Collection[int] | None = None, timeout_s: float = 90.0
) -> LocalClusters:
    """Start again the brokers of a cluster stopped by :func:`stop_cluster` or :func:`stop_broker`.

    Raises UnknownAliasError if there is no such cluster; LocalClusterError if the cluster does not become ready in time
    (with the broker log's tail); the brokers started by this call are stopped again.
    """
    cluster = clusters.cluster(alias)
    deadline = time.monotonic() + timeout_s
    java = java_executable()
    cp = classpath("kafka")
    with locked(clusters.base_dir):
        cds = Cds.for_kafka(java)
        started: dict[int, LocalBroker] = {}
        try:
            for broker in cluster.brokers:
                if (broker.pid and is_our_broker(broker)) or (node_ids is not None and broker.node_id not in node_ids):
                    continue
                pid = launch_broker(java, cp, clusters.base_dir, broker.properties_path, broker.log_path, cds)
                started[broker.node_id] = replace(broker, pid=pid)
            restarted = replace(cluster, brokers=tuple(started.get(b.node_id, b) for b in cluster.brokers))
            new_state = with_cluster(clusters, restarted)
            write_state(new_state)
            running = tuple(b for b in restarted.brokers if b.pid)
            wait_ready([replace(restarted, brokers=running)], deadline=deadline)
        except BaseException:
            stop_brokers(started.values(), timeout_s=5.0, graceful=False)
            down = replace(
                cluster,
                brokers=tuple(replace(b, pid=0) if b.node_id in started else b for b in cluster.brokers),
            )
            with contextlib.suppress(OSError):
                write_state(with_cluster(clusters, down))
            raise
        return new_state


__all__ = ["load_clusters", "restart_cluster", "start_clusters", "stop_broker", "stop_cluster", "stop_clusters"]
