"""A Kafka Connect runtime JVM launched detached from the Maven jars: MirrorMaker 2 or a Connect worker.

What :mod:`~mirrorspark.kafka.local.mirror_maker` and :mod:`~mirrorspark.kafka.local.connect_worker` share: the
launch (own session, numbered log file, log4j2 file, JVM flags), the identity check against pid reuse, the log
tail for error messages and the stop (``SIGTERM``, then ``SIGKILL`` after a bound).
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar, Self

from mirrorspark.errors import LocalClusterError
from mirrorspark.kafka.jars import classpath, java_executable
from mirrorspark.kafka.local.brokers import log_tail, pid_alive, reap, signal_group
from mirrorspark.kafka.local.settings import (
    CHILDREN,
    CHILDREN_LOCK,
    LOG_TAIL_LINES,
    POLL_INTERVAL_S,
    jvm_flags,
)
from mirrorspark.kafka.local.state import locked, write_text


@dataclass(kw_only=True)
class JvmProcess:
    """A running (or stopped) Kafka Connect runtime JVM started by :func:`launch_jvm`."""

    #: The Java main class, which with :attr:`properties` identifies the process on its command line.
    MAIN: ClassVar[str] = ""
    #: What the process is, for messages ("MirrorMaker", "Connect worker").
    WHAT: ClassVar[str] = "JVM"

    pid: int
    properties: Path
    log_path: Path
    command: tuple[str, ...] = field(repr=False)
    started_at: float = field(repr=False)
    returncode: int | None = None
    _proc: subprocess.Popen[bytes] | None = field(default=None, repr=False, compare=False)

    @property
    def running(self) -> bool:
        """Whether the JVM is still running (and is still this process, not a reused pid)."""
        if self._proc is not None:
            code = self._proc.poll()
            if code is not None:
                self.returncode = code
                return False
            return True
        return pid_alive(self.pid) and self._is_ours()

    def stop(self, timeout_s: float = 30.0) -> int | None:
        """Stop the JVM: ``SIGTERM`` (graceful), then ``SIGKILL`` after ``timeout_s``.

        Raises LocalClusterError if the process survives ``SIGKILL``.
        """
        if self.running:
            signal_group(self.pid, signal.SIGTERM)
            if not self._wait_exit(time.monotonic() + timeout_s):
                signal_group(self.pid, signal.SIGKILL)
                if not self._wait_exit(time.monotonic() + 10.0):
                    raise LocalClusterError(f"{self.WHAT} process {self.pid} survived SIGKILL: check it with ps")
        reap(self.pid)
        if self._proc is not None:
            self.returncode = self._proc.returncode
        return self.returncode

    def log_tail(self, n: int = LOG_TAIL_LINES) -> str:
        """Return the last ``n`` lines of the log (default 30), or a note if there is none."""
        return log_tail(self.log_path, n)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _check_starting(self, *, deadline: float, timeout_s: float, waiting_for: str) -> None:
        """Raise if the JVM exited during start-up or ``deadline`` (``time.monotonic()``) has passed.

        Raises LocalClusterError (naming what was waited for, with the log tail).
        """
        if not self.running:
            status = "" if self.returncode is None else f" with status {self.returncode}"
            raise LocalClusterError(
                f"{self.WHAT} (pid {self.pid}) exited during start-up{status}; last lines of"
                f" {self.log_path}:\n{self.log_tail()}"
            )
        if time.monotonic() >= deadline:
            raise LocalClusterError(
                f"{self.WHAT} (pid {self.pid}) did not {waiting_for} within {timeout_s:.0f} s;"
                f" last lines of {self.log_path}:\n{self.log_tail()}"
            )

    def _wait_exit(self, deadline: float) -> bool:
        while self.running:
            if time.monotonic() >= deadline:
                return False
            time.sleep(POLL_INTERVAL_S)
        return True

    def _is_ours(self) -> bool:
        """Whether :attr:`pid` runs :attr:`MAIN` with :attr:`properties` (guards against pid reuse)."""
        try:
            cmdline = Path(f"/proc/{self.pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            return True  # no procfs: trust the pid
        return self.MAIN.encode() in cmdline and str(self.properties).encode() in cmdline


@dataclass(frozen=True, kw_only=True)
class Launched:
    """A JVM just launched by :func:`launch_jvm`: what a :class:`JvmProcess` is made of."""

    pid: int
    log_path: Path
    command: tuple[str, ...]
    started_at: float
    proc: subprocess.Popen[bytes]


def launch_jvm(
    *,
    what: str,
    main: str,
    args: tuple[str, ...],
    heap: str,
    base_dir: Path,
    log_name: str,
    log4j_file: str,
    log4j_properties: str,
) -> Launched:
    """Launch ``java -cp build/jars/mm2/* <main> <args>`` detached, in its own session, and return at once.

    Raises LocalClusterError if ``java`` or the ``mm2`` jars are missing, or the JVM cannot be launched.
    """
    java = java_executable()
    cp = classpath("mm2")
    base_dir = Path(base_dir).expanduser().resolve()
    base_dir.mkdir(parents=True, exist_ok=True)
    log4j = base_dir / log4j_file
    command = (
        java,
        *heap.split(),
        *jvm_flags(os.environ, heap=None),
        f"-Dlog4j2.configurationFile={log4j}",
        "-cp",
        cp,
        main,
        *args,
    )
    with locked(base_dir):
        write_text(log4j, log4j_properties, mode=0o644)
        proc, log_path = spawn_detached(command, base_dir, log_name, f"{what} ({java})")
        started_at = time.monotonic()
    return Launched(pid=proc.pid, log_path=log_path, command=command, started_at=started_at, proc=proc)


def spawn_detached(
    command: Sequence[str], base_dir: Path, log_stem: str, what: str
) -> tuple[subprocess.Popen[bytes], Path]:
    """Start ``command`` in its own session, output to a new ``base_dir/<log_stem>-<n>.log``; a child to reap.

    Raises LocalClusterError naming ``what`` when it cannot be started.
    """
    n = 0
    while (base_dir / f"{log_stem}-{n}.log").exists():
        n += 1
    log_path = base_dir / f"{log_stem}-{n}.log"
    try:
        with open(log_path, "xb") as log:
            proc = subprocess.Popen(
                list(command),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=base_dir,
                start_new_session=True,
                close_fds=True,
            )
    except OSError as e:
        raise LocalClusterError(f"could not launch {what}: {e}") from e
    with CHILDREN_LOCK:
        CHILDREN[proc.pid] = proc
    return proc, log_path


__all__ = ["JvmProcess", "Launched", "launch_jvm", "spawn_detached"]
