"""Broker processes: planning, storage formatting, launching, readiness, stopping."""

from __future__ import annotations

import base64
import contextlib
import os
import shutil
import signal
import socket
import subprocess
import time
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any

from confluent_kafka.admin import AdminClient

from mirrorspark.config.properties import format_properties
from mirrorspark.errors import LocalClusterError
from mirrorspark.kafka.local.cds import Cds
from mirrorspark.kafka.local.model import LocalBroker, LocalCluster, LocalClusters
from mirrorspark.kafka.local.settings import (
    ADMIN_USER,
    CHILDREN,
    CHILDREN_LOCK,
    CONTROLLER_ONLY_PROPS,
    HOST,
    KAFKA_PROTOCOL,
    LOG4J_FILE,
    LOG_TAIL_LINES,
    POLL_INTERVAL_S,
    SASL_MECHANISM,
    STATE_FILE,
    TLS_SECURITY,
    TOOL_JVM_FLAGS,
    WAN_LISTENER,
    SecurityProtocol,
    jvm_flags,
)
from mirrorspark.kafka.local.state import read_state, write_state, write_text
from mirrorspark.kafka.local.tls import BrokerTls, generate_tls

# --------------------------------------------------------------------------------------------
# Start-up
# --------------------------------------------------------------------------------------------


class PortInUseError(Exception):
    """A broker could not bind its port (taken between allocation and bind)."""


@dataclass(frozen=True)
class _Plan:
    cluster: LocalCluster
    properties: dict[int, dict[str, str]]  # node_id -> server.properties


def start_once(
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
    wan: bool = False,
) -> LocalClusters:
    """Plan, format and launch every broker of ``aliases`` once, and wait until all are ready.

    Raises PortInUseError if a broker could not bind its port; LocalClusterError if a broker fails to start or is not
    ready by ``deadline`` (``time.monotonic()``).
    """
    n = len(racks)
    tls = generate_tls(base_dir) if security in TLS_SECURITY else None
    per_cluster = n + 1 + (2 * n if wan else 0)
    ports = free_ports(len(aliases) * per_cluster)
    plans: list[_Plan] = []
    for i, alias in enumerate(aliases):
        cluster_ports = ports[i * per_cluster : (i + 1) * per_cluster]
        plans.append(
            _plan_cluster(
                alias,
                base_dir=base_dir,
                ports=cluster_ports[:n],
                controller_port=cluster_ports[n],
                wan_ports=cluster_ports[n + 1 :],
                racks=racks,
                extra=extra,
                security=security,
                users=users,
                tls=tls,
            )
        )
    for plan in plans:
        _remove_stale_data(plan.cluster.data_dir)
        for broker in plan.cluster.brokers:
            broker.node_dir.mkdir(parents=True)
            write_text(
                broker.properties_path,
                format_properties(
                    plan.properties[broker.node_id],
                    header=f"# node {broker.node_id} of local cluster {plan.cluster.alias}",
                ),
            )
    cds = Cds.for_kafka(java)
    _format_storage(plans, java=java, cp=cp, base_dir=base_dir, cds=cds, deadline=deadline)

    started: list[LocalBroker] = []
    try:
        clusters: dict[str, LocalCluster] = {}
        for plan in plans:
            launched = []
            for broker in plan.cluster.brokers:
                pid = launch_broker(java, cp, base_dir, broker.properties_path, broker.log_path, cds)
                launched.append(replace(broker, pid=pid))
                started.append(launched[-1])
            clusters[plan.cluster.alias] = replace(plan.cluster, brokers=tuple(launched))
        state = LocalClusters(base_dir=base_dir, clusters=MappingProxyType(clusters))
        # Written before waiting, so that `down` finds the processes if we are interrupted.
        write_state(state)
        wait_ready(list(clusters.values()), deadline=deadline)
        return state
    except BaseException:
        stop_brokers(started, timeout_s=5.0, graceful=False)
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
    wan_ports: Sequence[int],
    racks: Sequence[str | None],
    extra: Mapping[str, str],
    security: SecurityProtocol,
    users: Mapping[str, str],
    tls: BrokerTls | None,
) -> _Plan:
    data_dir = base_dir / alias
    listener = KAFKA_PROTOCOL[security]
    common = _cluster_properties(len(ports), listener, controller_port)
    if security in SASL_MECHANISM:
        common.update(_sasl_properties(SASL_MECHANISM[security], listener, users))
    if tls is not None:
        common.update(tls.broker_properties())
    brokers: list[LocalBroker] = []
    properties: dict[int, dict[str, str]] = {}
    for node_id, (port, rack) in enumerate(zip(ports, racks, strict=True)):
        node_dir = data_dir / f"node-{node_id}"
        props = _node_properties(common, node_id, listener, port, controller_port, node_dir)
        wan_listen_port, wan_port = wan_ports[2 * node_id : 2 * node_id + 2] if wan_ports else (0, 0)
        if wan_port:
            props["listeners"] += f",{WAN_LISTENER}://{HOST}:{wan_listen_port}"
            props["advertised.listeners"] += f",{WAN_LISTENER}://{HOST}:{wan_port}"
            props["listener.security.protocol.map"] += f",{WAN_LISTENER}:{listener}"
        if rack is not None:
            props["broker.rack"] = rack
        props.update(extra)
        properties[node_id] = props
        brokers.append(
            LocalBroker(
                node_id=node_id,
                port=port,
                controller_port=controller_port,
                rack=rack,
                pid=0,
                log_path=node_dir / "kafka.log",
                controller=node_id == 0,
                wan_listen_port=wan_listen_port,
                wan_port=wan_port,
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
        ca_location=None if tls is None else tls.ca_location,
    )
    return _Plan(cluster=cluster, properties=properties)


def _cluster_properties(n: int, listener: str, controller_port: int) -> dict[str, str]:
    """Return the server properties every node of an ``n``-broker cluster shares (node 0 is the controller)."""
    return {
        "controller.quorum.voters": f"0@{HOST}:{controller_port}",
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


def _sasl_properties(mechanism: str, listener: str, users: Mapping[str, str]) -> dict[str, str]:
    """Return the SASL properties of a cluster: the listener's JAAS login, the ACL authorizer, the super users."""
    if mechanism == "PLAIN":
        # PLAIN users in-line; SCRAM users are created in the metadata log at format time.
        module = "org.apache.kafka.common.security.plain.PlainLoginModule"
        user_options = [f'user_{name}="{password}"' for name, password in users.items()]
    else:
        module = "org.apache.kafka.common.security.scram.ScramLoginModule"
        user_options = []
    jaas = " ".join([f"{module} required", f'username="{ADMIN_USER}" password="{users[ADMIN_USER]}"', *user_options])
    return {
        "sasl.enabled.mechanisms": mechanism,
        "sasl.mechanism.inter.broker.protocol": mechanism,
        f"listener.name.{listener.lower()}.{mechanism.lower()}.sasl.jaas.config": jaas + ";",
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": f"User:{ADMIN_USER};User:ANONYMOUS",
    }


def _node_properties(
    common: Mapping[str, str], node_id: int, listener: str, port: int, controller_port: int, node_dir: Path
) -> dict[str, str]:
    """Return the server properties of one node: the cluster's, its id, roles, listeners and log directory."""
    is_controller = node_id == 0
    props = dict(common)
    props["node.id"] = str(node_id)
    props["process.roles"] = "broker,controller" if is_controller else "broker"
    listeners = f"{listener}://{HOST}:{port}"
    if is_controller:
        listeners += f",CONTROLLER://{HOST}:{controller_port}"
    props["listeners"] = listeners
    props["advertised.listeners"] = f"{listener}://{HOST}:{port}"
    props["log.dirs"] = str(node_dir / "data")
    if not is_controller:
        # Topic-creation defaults are the controller's (Kafka warns on broker-only nodes).
        for key in CONTROLLER_ONLY_PROPS:
            props.pop(key, None)
    return props


def _format_storage(
    plans: Sequence[_Plan], *, java: str, cp: str, base_dir: Path, cds: Cds | None, deadline: float
) -> None:
    """Run ``kafka.tools.StorageTool format`` for every node, all concurrently."""
    jobs: list[tuple[LocalCluster, LocalBroker, subprocess.Popen[bytes]]] = []
    argfiles: list[Path] = []
    try:
        for plan in plans:
            for broker in plan.cluster.brokers:
                tool_args = [
                    "kafka.tools.StorageTool",
                    "format",
                    "--cluster-id",
                    plan.cluster.cluster_id,
                    "--config",
                    str(broker.properties_path),
                ]
                for name, password in plan.cluster.sasl_users.items() if plan.cluster.security == "sasl_ssl" else ():
                    tool_args += ["--add-scram", f'{SASL_MECHANISM["sasl_ssl"]}=[name={name},password="{password}"]']
                argfile = broker.node_dir / "format.args"
                # Java argfile syntax: one argument per line, in single quotes (no quote in any argument).
                write_text(argfile, "".join(f"'{arg}'\n" for arg in tool_args), mode=0o600)
                argfiles.append(argfile)
                args = [
                    java,
                    *TOOL_JVM_FLAGS,
                    *(cds.use_flags() if cds is not None else ()),
                    f"-Dlog4j2.configurationFile={base_dir / LOG4J_FILE}",
                    "-cp",
                    cp,
                    f"@{argfile}",
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
                tail = "\n".join(out.decode(errors="replace").splitlines()[-LOG_TAIL_LINES:])
                for password in cluster.sasl_users.values():
                    tail = tail.replace(password, "********")
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
        for argfile in argfiles:
            argfile.unlink(missing_ok=True)


def launch_broker(java: str, cp: str, base_dir: Path, properties: Path, log_path: Path, cds: Cds | None) -> int:
    """Start ``kafka.Kafka`` detached (own session); return its pid (= process group id)."""
    cds_flags: tuple[str, ...] = ()
    if cds is not None:
        cds_flags = cds.use_flags() or cds.dump_flags(log_path.parent)
    args = [
        java,
        *jvm_flags(os.environ),
        *cds_flags,
        f"-Dlog4j2.configurationFile={base_dir / LOG4J_FILE}",
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
    with CHILDREN_LOCK:
        CHILDREN[proc.pid] = proc
    return proc.pid


def wait_ready(clusters: Sequence[LocalCluster], *, deadline: float) -> None:
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
                f" {cluster.brokers[0].log_path}:\n{log_tail(cluster.brokers[0].log_path)}"
            )
        time.sleep(POLL_INTERVAL_S)


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
        if broker.pid == 0 or pid_alive(broker.pid):  # 0: not launched yet
            continue
        tail = log_tail(broker.log_path)
        if "Address already in use" in tail:
            raise PortInUseError(broker.address)
        raise LocalClusterError(
            f"node {broker.node_id} of local cluster {cluster.alias!r} exited during start-up;"
            f" last lines of {broker.log_path}:\n{tail}"
        )


def _port_open(port: int) -> bool:
    try:
        with socket.create_connection((HOST, port), timeout=0.2):
            return True
    except OSError:
        return False


def free_ports(count: int) -> list[int]:
    """Return ``count`` distinct free loopback ports (held together while choosing)."""
    sockets: list[socket.socket] = []
    try:
        for _ in range(count):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind((HOST, 0))
            sockets.append(s)
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def _random_cluster_id() -> str:
    """Make a random Kafka ``Uuid`` as ``StorageTool random-uuid`` prints it (base64url, no padding)."""
    while True:
        raw = uuid.uuid4().bytes
        text = base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")
        # Kafka reserves the all-zero id and 1 (the metadata topic id) and avoids a leading "-".
        if not text.startswith("-") and int.from_bytes(raw, "big") > 1:
            return text


# --------------------------------------------------------------------------------------------
# Stopping and process identity
# --------------------------------------------------------------------------------------------


def stop_brokers(brokers: Iterable[LocalBroker], *, timeout_s: float, graceful: bool = True) -> None:
    """Stop brokers: broker-only nodes first, then controllers; SIGKILL after ``timeout_s``."""
    running = [b for b in brokers if b.pid and is_our_broker(b)]
    for phase in ([b for b in running if not b.controller], [b for b in running if b.controller]):
        if not phase:
            continue
        sig = signal.SIGTERM if graceful else signal.SIGKILL
        for broker in phase:
            signal_group(broker.pid, sig)
        killed = not graceful
        pending = _wait_exit(phase, deadline=time.monotonic() + timeout_s)
        if pending:
            killed = True
            for broker in pending:
                signal_group(broker.pid, signal.SIGKILL)
            pending = _wait_exit(pending, deadline=time.monotonic() + 10.0)
        for broker in phase:
            reap(broker.pid)
            Cds.collect_dump(broker.node_dir, keep=not killed)
        if pending:
            raise LocalClusterError(
                f"broker processes {', '.join(str(b.pid) for b in pending)} survived SIGKILL: check them with ps"
            )


def _wait_exit(brokers: Sequence[LocalBroker], *, deadline: float) -> list[LocalBroker]:
    pending = list(brokers)
    while pending:
        pending = [b for b in pending if pid_alive(b.pid)]
        if not pending or time.monotonic() >= deadline:
            break
        time.sleep(POLL_INTERVAL_S)
    return pending


def signal_group(pid: int, sig: signal.Signals) -> None:
    """Send ``sig`` to the process group ``pid`` leads; a group already gone is ignored."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


def reap(pid: int) -> None:
    """Collect the exit status of a broker or MM2 process this process started (no zombie)."""
    with CHILDREN_LOCK:
        proc = CHILDREN.pop(pid, None)
    if proc is not None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=5.0)


def pid_alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie counts as exited; our own children are reaped)."""
    if pid <= 0:
        return False
    with CHILDREN_LOCK:
        proc = CHILDREN.get(pid)
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


def is_our_broker(broker: LocalBroker) -> bool:
    """Whether ``broker.pid`` is alive and still runs this broker (guards against pid reuse)."""
    if not pid_alive(broker.pid):
        return False
    try:
        cmdline = Path(f"/proc/{broker.pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return True  # no procfs: trust the pid
    return b"kafka.Kafka" in cmdline and str(broker.properties_path).encode() in cmdline


def refuse_if_running(base_dir: Path) -> None:
    """Refuse to start clusters in ``base_dir`` while clusters started there still run.

    Raises LocalClusterError (naming the running clusters and ``mirrorspark local down``).
    """
    try:
        state = read_state(base_dir)
    except LocalClusterError:
        state = None  # unreadable leftovers of a crashed up: replaced below
    if state is None:
        return
    running = [alias for alias, c in state.clusters.items() if any(b.pid and is_our_broker(b) for b in c.brokers)]
    if running:
        raise LocalClusterError(
            f"{base_dir} already has running local clusters ({', '.join(running)}):"
            f" run `mirrorspark local down --dir {base_dir}` first, or choose another directory"
        )
    (base_dir / STATE_FILE).unlink(missing_ok=True)


def log_tail(path: Path, lines: int = LOG_TAIL_LINES) -> str:
    """Return the last ``lines`` lines of a log file (``""`` if it cannot be read), for error messages."""
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
