"""Apache Kafka's own MirrorMaker 2 in dedicated mode, for compatibility tests and benchmarks."""

from __future__ import annotations

import signal
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from mirrorspark.errors import LocalClusterError
from mirrorspark.kafka.jars import classpath, java_executable
from mirrorspark.kafka.local.brokers import log_tail, pid_alive, reap, signal_group
from mirrorspark.kafka.local.settings import (
    BROKER_JVM_FLAGS,
    CHILDREN,
    CHILDREN_LOCK,
    LOG_TAIL_LINES,
    POLL_INTERVAL_S,
)
from mirrorspark.kafka.local.state import locked, write_text

# --------------------------------------------------------------------------------------------
# Apache Kafka's own MirrorMaker 2, dedicated mode (for compatibility tests and benchmarks)
# --------------------------------------------------------------------------------------------

_MM2_MAIN: Final = "org.apache.kafka.connect.mirror.MirrorMaker"
_MM2_LOG4J_FILE: Final = "mirror-maker-log4j2.properties"
_MM2_STARTED_LINE: Final = "Kafka MirrorMaker started"
# As the broker JVMs (and Kafka's KAFKA_JVM_PERFORMANCE_OPTS) minus the heap, which is an argument.
_MM2_JVM_FLAGS: Final = tuple(f for f in BROKER_JVM_FLAGS if not f.startswith(("-Xms", "-Xmx")))

_MM2_LOG4J2_PROPERTIES: Final = """\
# Written by mirrorspark.kafka.local: MirrorMaker 2 logs at WARN, its own classes at INFO
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
        return pid_alive(self.pid) and _is_our_mirror_maker(self.pid, self.properties)

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
            time.sleep(POLL_INTERVAL_S)

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
            signal_group(self.pid, signal.SIGTERM)
            if not self._wait_exit(time.monotonic() + timeout_s):
                signal_group(self.pid, signal.SIGKILL)
                if not self._wait_exit(time.monotonic() + 10.0):
                    raise LocalClusterError(f"MirrorMaker process {self.pid} survived SIGKILL: check it with ps")
        reap(self.pid)
        if self._proc is not None:
            self.returncode = self._proc.returncode
        return self.returncode

    def log_tail(self, n: int = LOG_TAIL_LINES) -> str:
        """Return the last ``n`` lines of the log (default 30), or a note if there is none."""
        return log_tail(self.log_path, n)

    def __enter__(self) -> MirrorMakerProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _wait_exit(self, deadline: float) -> bool:
        while self.running:
            if time.monotonic() >= deadline:
                return False
            time.sleep(POLL_INTERVAL_S)
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
    with locked(base_dir):
        write_text(log4j, _MM2_LOG4J2_PROPERTIES, mode=0o644)
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
    with CHILDREN_LOCK:
        CHILDREN[proc.pid] = proc
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


__all__ = ["MirrorMakerProcess", "start_mirror_maker"]
