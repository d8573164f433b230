"""Where the Spark driver JVM's own output goes: a log file with ``-v``, never the terminal (issue #24 item 3).

PySpark starts the driver JVM (``spark-submit``, ``pyspark.java_gateway.launch_gateway``) with this
process's stdout and stderr. Everything the JVM and its children print then reaches the terminal
(and ``--json``'s stdout): the JVM's own ``WARNING: Using incubator modules: jdk.incubator.vector``
(printed by the JVM at start, before any logging exists), Spark's ``Setting default log level to
"WARN"`` banner (printed with ``System.err`` by ``org.apache.spark.internal.Logging``), its log4j
console appender (:data:`~mirrorspark.spark_session.LOG4J_CONFIG`), and the Python workers' stderr
(Spark copies it to the JVM's): a clean stop's ``ERROR Executor: … Python worker exited
unexpectedly (crashed)`` and the worker's ``EOFError`` traceback, seen when a copy task's worker
finds its socket closed.

:func:`launch_gateway_quietly` launches the JVM the same way, with its stdout and stderr on a pipe
that :class:`JvmOutput` drains on a thread: into the log file of :func:`spark_log_path` when there is
one (``mirrorspark -v …``, or :data:`SPARK_LOG_ENV`), and always into the last :data:`TAIL_LINES`
lines kept in memory, named in the error when the JVM exits before it answered (a missing Java, say).
mirrorspark reports what matters of Spark itself (a failed job, the JVM's death) as its own errors.

The JVM also gets a session (and process group) of its own: a signal sent to mirrorspark's process
group (``kill -TERM -- -<pgid>``, a terminal's hang-up) reaches mirrorspark alone, which stops its copy
tasks cleanly and then Spark, instead of killing the JVM and its Python workers under running copy
tasks (``SPARK_DRIVER_LOST``, exit 9, and the executors' ``Python worker exited unexpectedly`` errors).
The JVM still ends with this process: PySpark's gateway exits when its stdin, a pipe from this
process, closes.
"""

from __future__ import annotations

import collections
import logging
import os
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any, Final

from mirrorspark.errors import SparkDriverLostError

log = logging.getLogger(__name__)

SPARK_LOG_ENV: Final = "MIRRORSPARK_SPARK_LOG"
"""Environment variable: the file the Spark driver JVM's output is appended to (``off``: none, even with ``-v``)."""

TAIL_LINES: Final = 40
"""Lines of the JVM's output kept in memory (:attr:`JvmOutput.tail`), for the error of a JVM that did not start."""

START_UP_LINES: Final = (
    "WARNING: Using incubator modules:",
    "Setting default log level to",
    "To adjust logging level use sc.setLogLevel",
)
"""How the lines every start prints begin: never named as a dead JVM's last words (:meth:`JvmOutput.last_words`)."""

DRAIN_WAIT_S: Final = 2.0
"""Seconds :func:`launch_gateway_quietly` waits for a JVM's last output after it exited while starting."""


def spark_log_path(*, now: float | None = None) -> Path | None:
    """Where this process's Spark driver JVM output goes, or ``None``: nowhere (kept in memory only)."""
    env = os.environ.get(SPARK_LOG_ENV, "").strip()
    if env.lower() == "off":
        return None
    if env:
        return Path(env).expanduser()
    if not logging.getLogger("mirrorspark").isEnabledFor(logging.INFO):
        return None
    state = Path(os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state")
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(time.time() if now is None else now))
    return state / "mirrorspark" / f"spark-{stamp}-{os.getpid()}.log"


class JvmOutput:
    """A pipe for a JVM's stdout and stderr, drained on a daemon thread into a log file and a tail."""

    def __init__(self, path: Path | None, *, tail_lines: int = TAIL_LINES) -> None:
        self.path = path
        self._tail: collections.deque[str] = collections.deque(maxlen=tail_lines)
        self._read_fd, self.write_fd = os.pipe()
        self._file: IO[bytes] | None = None
        if path is not None:
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                self._file = path.open("ab", buffering=0)
            except OSError as e:
                log.warning("cannot write Spark's log to %s (%s): it is left out", path, e)
                self.path = None
        self._thread = threading.Thread(target=self._drain, name="mirrorspark-spark-output", daemon=True)

    def start(self) -> JvmOutput:
        """Close this process's copy of the write end (the JVM holds its own) and start draining; return ``self``."""
        os.close(self.write_fd)
        self._thread.start()
        if self.path is not None:
            log.info("Spark's own output (driver JVM, executors, Python workers) goes to %s", self.path)
        return self

    def _drain(self) -> None:
        with os.fdopen(self._read_fd, "rb") as pipe:
            for line in pipe:
                self._tail.append(line.decode(errors="replace").rstrip("\n"))
                if self._file is not None:
                    try:
                        self._file.write(line)
                    except OSError:
                        self._file = None
        if self._file is not None:
            self._file.close()

    def wait(self, timeout_s: float) -> None:
        """Wait up to ``timeout_s`` seconds for the end of the output (every writer closed the pipe)."""
        if self._thread.is_alive():
            self._thread.join(timeout_s)

    @property
    def tail(self) -> list[str]:
        """The last lines of the output so far, oldest first."""
        return list(self._tail)

    def last_words(self, *, wait_s: float = 0.5, lines: int = 1) -> str:
        """Say what the output of a JVM that died last held, for the error naming its death."""
        self.wait(wait_s)
        said = [line.strip() for line in self._tail]
        kept = [line for line in said if line and not line.startswith(START_UP_LINES)][-lines:]
        words = f"its last output: {' | '.join(kept)!r}" if kept else ""
        if self.path is not None:
            words = f"{words}; all of it in {self.path}" if words else f"its output is in {self.path}"
        return words


_current: JvmOutput | None = None


def current() -> JvmOutput | None:
    """Return the output of the Spark driver JVM this process launched last (:func:`launch_gateway_quietly`), if any."""
    return _current


def launch_gateway_quietly(options: Mapping[str, str]) -> Any:
    """Start the Spark driver JVM as PySpark does, in a session of its own, its output going to a :class:`JvmOutput`.

    Returns ``None`` when the process has or is given a gateway already. Raises SparkDriverLostError naming the JVM's
    last output line if it exits before answering (``JAVA_GATEWAY_EXITED``).
    """
    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway

    if getattr(SparkContext, "_gateway", None) is not None or "PYSPARK_GATEWAY_PORT" in os.environ:
        return None
    conf = SparkConf(loadDefaults=False)
    for key, value in options.items():
        conf.set(key, value)
    output = JvmOutput(spark_log_path())
    try:
        gateway = launch_gateway(  # type: ignore[no-untyped-call]
            conf, popen_kwargs={"stdout": output.write_fd, "stderr": output.write_fd, "start_new_session": True}
        )
    except Exception as e:
        output.start()
        words = output.last_words(wait_s=DRAIN_WAIT_S, lines=2)
        log.info("the Spark driver JVM exited while starting; its last output:\n%s", "\n".join(output.tail))
        raise SparkDriverLostError(
            f"the Spark driver JVM did not start ({words or e}): check JAVA_HOME (or java on PATH: Java 17 or "
            "newer) and the PySpark install; run with -v for its whole output"
        ) from e
    except BaseException:  # Ctrl-C while it starts
        output.start()
        raise
    output.start()
    global _current
    _current = output
    SparkContext._ensure_initialized(gateway=gateway)  # noqa: SLF001 (PySpark's way to hand it a gateway)
    return output


__all__ = [
    "DRAIN_WAIT_S",
    "SPARK_LOG_ENV",
    "START_UP_LINES",
    "TAIL_LINES",
    "JvmOutput",
    "current",
    "launch_gateway_quietly",
    "spark_log_path",
]
