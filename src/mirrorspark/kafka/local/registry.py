"""Schema Registries for local clusters: Apicurio Registry's Confluent-compatible API, run on Java 21+.

``make install`` unpacks Apicurio Registry 3.3.3's finished Quarkus app into ``build/apicurio-registry/`` (the
``registry`` profile of ``pom.xml``). Each registry is one JVM running ``quarkus-run.jar`` with in-memory H2 storage,
its HTTP and management interfaces on free loopback ports; it serves Confluent's Schema Registry API under
``/apis/ccompat/v7`` (:attr:`~mirrorspark.kafka.local.model.LocalSchemaRegistry.url`) and assigns its own schema
ids, starting at 1. The app needs Java 21+ (:func:`registry_java`), which Kafka and Spark do not: only what starts a
registry looks for one. The processes follow the brokers' conventions: own session, log file, a pid-reuse check,
``SIGTERM`` (the registry stops in well under a second), then ``SIGKILL``.
"""

from __future__ import annotations

import os
import re
import signal
import time
import urllib.error
import urllib.request
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Final

from mirrorspark.errors import LocalClusterError
from mirrorspark.kafka.jars import jars_base_dir
from mirrorspark.kafka.local.brokers import free_ports, log_tail, pid_alive, reap, signal_group
from mirrorspark.kafka.local.jvm_process import spawn_detached
from mirrorspark.kafka.local.model import LocalSchemaRegistry
from mirrorspark.kafka.local.settings import HOST, POLL_INTERVAL_S, PORT_ATTEMPTS

REGISTRY_JAVA_ENV: Final = "MIRRORSPARK_REGISTRY_JAVA"
"""Environment variable naming the ``java`` binary (Java 21+) that runs the registries."""

REGISTRY_DIR_ENV: Final = "MIRRORSPARK_REGISTRY_DIR"
"""Environment variable overriding the unpacked app's directory (holding ``quarkus-run.jar``)."""

MIN_JAVA: Final = 21
"""The oldest Java feature release the app runs on (its classes are class-file version 65)."""

JVM_DIR: Final = Path("/usr/lib/jvm")
"""Where Debian (and Temurin's packages) install JDKs: searched for the newest Java 21+."""

REGISTRY_HEAP: Final = "-Xmx384m"
"""The registry JVM's heap (its resident size is about 300 MB)."""

READY_TIMEOUT_S: Final = 120.0
"""How long a registry may take to answer (about 7 s on an idle machine, 25 s on a loaded one)."""

INSTALL_HINT: Final = (
    f"install a Java {MIN_JAVA}+ runtime (Temurin 21 or newer; Debian 12 has no openjdk-21 package),"
    f" or set {REGISTRY_JAVA_ENV} to its bin/java"
)

_JAR: Final = "quarkus-run.jar"
_LOG_NAME: Final = "schema-registry"
_PROBE_TIMEOUT_S: Final = 2.0
_PROBE_INTERVAL_S: Final = 0.25
_PORT_IN_USE: Final = ("Address already in use", "Port already bound", "already in use")

# --------------------------------------------------------------------------------------------
# Java 21+ and the app
# --------------------------------------------------------------------------------------------


def java_version(java_home: Path) -> tuple[int, ...] | None:
    """Return the version a JDK's ``release`` file gives, ``None`` if unreadable.

    ``JAVA_VERSION="25.0.3"`` gives ``(25, 0, 3)``, the old ``"1.8.0_292"`` gives ``(8, 0, 292)``.
    """
    try:
        text = (java_home / "release").read_text(errors="replace")
    except OSError:
        return None
    match = re.search(r'^JAVA_VERSION="?([^"\n]+)', text, re.MULTILINE)
    numbers = tuple(int(n) for n in re.findall(r"\d+", match[1])) if match else ()
    if not numbers:
        return None
    return numbers[1:] if numbers[0] == 1 and len(numbers) > 1 else numbers


def registry_java(*, environ: Mapping[str, str] | None = None, jvm_dir: Path = JVM_DIR) -> str:
    """Return the ``java`` that runs the registries: Java 21 or newer.

    ``MIRRORSPARK_REGISTRY_JAVA`` (a ``java`` binary) if set, else ``JAVA_HOME``'s if it is 21+, else the newest
    21+ JDK in ``jvm_dir`` (default ``/usr/lib/jvm``); ``environ`` defaults to ``os.environ``.

    Raises LocalClusterError if ``MIRRORSPARK_REGISTRY_JAVA`` is not an executable or is older than Java 21, or no
    Java 21+ is found (naming what to install).
    """
    env = os.environ if environ is None else environ
    named = env.get(REGISTRY_JAVA_ENV, "").strip()
    if named:
        return _named_java(named)
    java_home = env.get("JAVA_HOME", "").strip()
    if java_home:
        home = Path(java_home).expanduser()
        java, version = _executable(home), java_version(home)
        if java is not None and version is not None and version[0] >= MIN_JAVA:
            return java
    found = _newest_jdk(jvm_dir)
    if found is None:
        looked = f"JAVA_HOME={java_home} and {jvm_dir}" if java_home else str(jvm_dir)
        raise LocalClusterError(
            f"the Schema Registry (Apicurio Registry) needs Java {MIN_JAVA}+ and there is none in {looked}:"
            f" {INSTALL_HINT}"
        )
    return found


def _named_java(named: str) -> str:
    """Check the ``java`` named by ``MIRRORSPARK_REGISTRY_JAVA`` (trusted if its JDK has no ``release`` file)."""
    java = Path(named).expanduser()
    if not (java.is_file() and os.access(java, os.X_OK)):
        raise LocalClusterError(f"{REGISTRY_JAVA_ENV}={named} is not an executable file: {INSTALL_HINT}")
    version = java_version(java.resolve().parent.parent)
    if version is not None and version[0] < MIN_JAVA:
        raise LocalClusterError(
            f"{REGISTRY_JAVA_ENV}={named} is Java {version[0]}, and the Schema Registry needs Java {MIN_JAVA}+:"
            f" {INSTALL_HINT}"
        )
    return str(java)


def _executable(java_home: Path) -> str | None:
    java = java_home / "bin" / "java"
    return str(java) if java.is_file() and os.access(java, os.X_OK) else None


def _newest_jdk(jvm_dir: Path) -> str | None:
    """Return the ``bin/java`` of the newest Java 21+ under ``jvm_dir``, ``None`` if there is none."""
    try:
        homes = sorted(jvm_dir.iterdir())
    except OSError:
        return None
    best: tuple[tuple[int, ...], str] | None = None
    for home in homes:
        version, java = java_version(home), _executable(home)
        if version is None or java is None or version[0] < MIN_JAVA:
            continue
        if best is None or version > best[0]:
            best = (version, java)
    return None if best is None else best[1]


def registry_app_dir() -> Path:
    """Return the unpacked app's directory: ``MIRRORSPARK_REGISTRY_DIR``, else ``<repo>/build/apicurio-registry``.

    Raises LocalClusterError if it holds no ``quarkus-run.jar`` (the message says to run ``make install``).
    """
    override = os.environ.get(REGISTRY_DIR_ENV, "").strip()
    app_dir = Path(override).expanduser().resolve() if override else jars_base_dir().parent / "apicurio-registry"
    if not (app_dir / _JAR).is_file():
        raise LocalClusterError(
            f"Apicurio Registry not found in {app_dir}: run `make install` to unpack it with Maven"
            f" (or point {REGISTRY_DIR_ENV} at a directory holding {_JAR})"
        )
    return app_dir


def registry_command(
    java: str, app_dir: Path, *, port: int, management_port: int, heap: str = REGISTRY_HEAP
) -> tuple[str, ...]:
    """Return the command line of one registry: in-memory H2, HTTP on ``port`` and management on ``management_port``.

    Both interfaces listen on 127.0.0.1 only (the app's defaults are 0.0.0.0 and 9000 for every instance). The
    serial collector keeps memory small; the full JIT stays on: a subject with hundreds of versions registers each
    new one 2.7 times faster than with C1 alone, for about 0.8 s more start-up (about 3.4 s on an idle machine).
    """
    return (
        java,
        *heap.split(),
        "-XX:+UseSerialGC",
        "-XX:+ExitOnOutOfMemoryError",
        "-Djava.awt.headless=true",
        f"-Dquarkus.http.host={HOST}",
        f"-Dquarkus.http.port={port}",
        f"-Dquarkus.management.host={HOST}",
        f"-Dquarkus.management.port={management_port}",
        "-Dapicurio.storage.kind=sql",
        "-Dapicurio.storage.sql.kind=h2",
        "-Dapicurio.datasource.url=jdbc:h2:mem:registry",
        "-Dapicurio.datasource.jdbc.initial-size=2",
        "-Dapicurio.datasource.jdbc.min-size=2",
        "-jar",
        str(app_dir / _JAR),
    )


# --------------------------------------------------------------------------------------------
# Start, readiness, stop
# --------------------------------------------------------------------------------------------


def launch_registries(names: Sequence[str], *, base_dir: Path) -> dict[str, LocalSchemaRegistry]:
    """Start one registry per name, detached, and return them by name at once (see :func:`wait_registries`).

    Each logs to ``<base_dir>/schema-registry-<name>-<n>.log``.

    Raises LocalClusterError if no Java 21+ is found, the app is not unpacked, or a JVM cannot be launched (those
    already launched are stopped).
    """
    java = registry_java()
    app_dir = registry_app_dir()
    base_dir = Path(base_dir).expanduser().resolve()
    base_dir.mkdir(parents=True, exist_ok=True)
    launched: dict[str, LocalSchemaRegistry] = {}
    try:
        for name in names:
            launched[name] = _launch(java, app_dir, base_dir, name)
    except BaseException:
        stop_registries(launched.values(), timeout_s=5.0)
        raise
    return launched


def wait_registries(
    registries: Mapping[str, LocalSchemaRegistry], *, timeout_s: float = READY_TIMEOUT_S
) -> dict[str, LocalSchemaRegistry]:
    """Wait until every registry answers ``GET <url>/subjects`` with 200; return them by name.

    A registry that lost its port to another process between choosing and binding is launched again on new ports
    (so the result may differ from ``registries``).

    Raises LocalClusterError if a registry exits during start-up or does not answer within ``timeout_s`` (with its
    log tail); every registry (of ``registries`` or launched again) is stopped then.
    """
    current = dict(registries)
    try:
        _poll_ready(current, deadline=time.monotonic() + timeout_s, timeout_s=timeout_s)
    except BaseException:
        stop_registries([*registries.values(), *current.values()], timeout_s=5.0)
        raise
    return current


def _poll_ready(current: dict[str, LocalSchemaRegistry], *, deadline: float, timeout_s: float) -> None:
    """Poll until every registry of ``current`` answers, launching one again in place after a port clash."""
    pending = set(current)
    attempts = dict.fromkeys(current, 1)
    while pending:
        for name in sorted(pending):
            registry = current[name]
            if _answers(registry):
                pending.discard(name)
            elif not pid_alive(registry.pid):
                reap(registry.pid)
                tail = log_tail(registry.log_path)
                if attempts[name] < PORT_ATTEMPTS and any(s in tail for s in _PORT_IN_USE):
                    attempts[name] += 1
                    current[name] = _relaunch(registry, name)
                    continue
                raise LocalClusterError(
                    f"Schema Registry {name!r} (pid {registry.pid}) exited during start-up; last lines of"
                    f" {registry.log_path}:\n{tail}"
                )
            elif time.monotonic() >= deadline:
                raise LocalClusterError(
                    f"Schema Registry {name!r} (pid {registry.pid}) did not answer GET {registry.url}/subjects"
                    f" within {timeout_s:.0f} s; last lines of {registry.log_path}:\n{log_tail(registry.log_path)}"
                )
        if pending:
            time.sleep(_PROBE_INTERVAL_S)


def start_registries(
    names: Sequence[str], *, base_dir: Path, timeout_s: float = READY_TIMEOUT_S
) -> dict[str, LocalSchemaRegistry]:
    """Start one registry per name, all at once, and return them by name once each answers.

    Raises LocalClusterError as :func:`launch_registries` and :func:`wait_registries` do; every registry the call
    started is stopped then.
    """
    return wait_registries(launch_registries(names, base_dir=base_dir), timeout_s=timeout_s)


def stop_registries(registries: Iterable[LocalSchemaRegistry], *, timeout_s: float = 10.0) -> None:
    """Stop registries: ``SIGTERM`` to each one's process group, ``SIGKILL`` to any left after ``timeout_s``.

    A registry already gone (or whose pid now runs something else) is skipped.

    Raises LocalClusterError if a process survives ``SIGKILL``.
    """
    running = [r for r in registries if is_our_registry(r)]
    for registry in running:
        signal_group(registry.pid, signal.SIGTERM)
    pending = _wait_exit(running, deadline=time.monotonic() + timeout_s)
    for registry in pending:
        signal_group(registry.pid, signal.SIGKILL)
    pending = _wait_exit(pending, deadline=time.monotonic() + 10.0)
    for registry in running:
        reap(registry.pid)
    if pending:
        raise LocalClusterError(
            f"Schema Registry processes {', '.join(str(r.pid) for r in pending)} survived SIGKILL: check them with ps"
        )


def is_our_registry(registry: LocalSchemaRegistry) -> bool:
    """Whether ``registry.pid`` is alive and still runs this registry (guards against pid reuse)."""
    if not pid_alive(registry.pid):
        return False
    try:
        cmdline = Path(f"/proc/{registry.pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return True  # no procfs: trust the pid
    return f"-Dquarkus.http.port={registry.port}".encode() in cmdline and b"-jar" in cmdline


def _launch(java: str, app_dir: Path, base_dir: Path, name: str) -> LocalSchemaRegistry:
    """Launch one registry JVM in its own session on two free ports; return at once."""
    port, management_port = free_ports(2)
    command = registry_command(java, app_dir, port=port, management_port=management_port)
    proc, log_path = spawn_detached(command, base_dir, f"{_LOG_NAME}-{name}", f"Schema Registry {name!r} ({java})")
    return LocalSchemaRegistry(port=port, management_port=management_port, pid=proc.pid, log_path=log_path)


def _relaunch(registry: LocalSchemaRegistry, name: str) -> LocalSchemaRegistry:
    """Launch ``registry`` again on new ports, with the same ``java`` and app (after a port clash)."""
    return _launch(registry_java(), registry_app_dir(), registry.log_path.parent, name)


def _answers(registry: LocalSchemaRegistry) -> bool:
    """Whether ``GET <url>/subjects`` answers 200 now."""
    try:
        with urllib.request.urlopen(f"{registry.url}/subjects", timeout=_PROBE_TIMEOUT_S) as response:
            return bool(response.status == 200)
    except (OSError, urllib.error.HTTPError):
        return False


def _wait_exit(registries: Sequence[LocalSchemaRegistry], *, deadline: float) -> list[LocalSchemaRegistry]:
    pending = list(registries)
    while pending:
        pending = [r for r in pending if pid_alive(r.pid)]
        if not pending or time.monotonic() >= deadline:
            break
        time.sleep(POLL_INTERVAL_S)
    return pending


__all__ = [
    "INSTALL_HINT",
    "JVM_DIR",
    "MIN_JAVA",
    "READY_TIMEOUT_S",
    "REGISTRY_DIR_ENV",
    "REGISTRY_HEAP",
    "REGISTRY_JAVA_ENV",
    "is_our_registry",
    "java_version",
    "launch_registries",
    "registry_app_dir",
    "registry_command",
    "registry_java",
    "start_registries",
    "stop_registries",
    "wait_registries",
]
