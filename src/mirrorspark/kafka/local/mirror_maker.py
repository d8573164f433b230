"""Apache Kafka's own MirrorMaker 2 in dedicated mode, for compatibility tests and benchmarks."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Final

from mirrorspark.errors import LocalClusterError
from mirrorspark.kafka.local.jvm_process import JvmProcess, launch_jvm
from mirrorspark.kafka.local.settings import POLL_INTERVAL_S

# --------------------------------------------------------------------------------------------
# Apache Kafka's own MirrorMaker 2, dedicated mode (for compatibility tests and benchmarks)
# --------------------------------------------------------------------------------------------

_MM2_MAIN: Final = "org.apache.kafka.connect.mirror.MirrorMaker"
_MM2_LOG4J_FILE: Final = "mirror-maker-log4j2.properties"
_MM2_STARTED_LINE: Final = "Kafka MirrorMaker started"

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


@dataclass(kw_only=True)
class MirrorMakerProcess(JvmProcess):
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

    Not thread-safe; :meth:`~JvmProcess.stop` (``SIGTERM``: Connect commits the source offsets to
    ``mm2-offsets.<source>.internal``; then ``SIGKILL``) is idempotent.
    """

    MAIN: ClassVar[str] = _MM2_MAIN
    WHAT: ClassVar[str] = "MirrorMaker"

    clusters: tuple[str, ...] = ()

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
            self._check_starting(deadline=deadline, timeout_s=timeout_s, waiting_for=f"log {_MM2_STARTED_LINE!r}")
            time.sleep(POLL_INTERVAL_S)


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
    launched = launch_jvm(
        what="MirrorMaker",
        main=_MM2_MAIN,
        args=(str(properties), *(("--clusters", *targets) if targets else ())),
        heap=heap,
        base_dir=base_dir,
        log_name="mirror-maker",
        log4j_file=_MM2_LOG4J_FILE,
        log4j_properties=_MM2_LOG4J2_PROPERTIES,
    )
    return MirrorMakerProcess(
        pid=launched.pid,
        properties=properties,
        clusters=targets,
        log_path=launched.log_path,
        command=launched.command,
        started_at=launched.started_at,
        _proc=launched.proc,
    )


__all__ = ["MirrorMakerProcess", "start_mirror_maker"]
