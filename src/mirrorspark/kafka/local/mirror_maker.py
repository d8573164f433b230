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
    """A running (or stopped) Apache Kafka MirrorMaker 2 JVM started by :func:`start_mirror_maker`."""

    MAIN: ClassVar[str] = _MM2_MAIN
    WHAT: ClassVar[str] = "MirrorMaker"

    clusters: tuple[str, ...] = ()

    def wait_started(self, timeout_s: float = 60.0) -> float:
        """Wait until the driver has started its herders (log line ``Kafka MirrorMaker started``).

        Raises LocalClusterError if the process exits first, or the line does not appear in time (with the log tail).
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

    Raises LocalClusterError if ``properties`` is missing, ``clusters`` is empty or not a sequence of names, ``java`` or
    the ``mm2`` jars are missing, or the JVM cannot be launched.
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
