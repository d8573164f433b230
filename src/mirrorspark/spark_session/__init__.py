"""The one SparkSession of a mirrorspark process: local master sized for the copy tasks, secrets redacted.

Also the watch on the session's Spark driver JVM (:class:`DriverJvmWatch`): a JVM that dies under
a running driver is named within a fraction of a second, instead of surfacing as Py4J's
``Connection refused`` at every Spark call.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mirrorspark.errors import SparkDriverLostError
from mirrorspark.spark_session import class_archive, jvm_output

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger(__name__)

JVM_WATCH_INTERVAL_S = 0.2
"""Seconds between two checks of :class:`DriverJvmWatch` whether the Spark driver JVM still runs."""

RESTART_ADVICE = (
    "the copy tasks ended without committing (what they copied since their last commit is copied again at "
    "the next start); start mirrorspark run again, and if the JVM keeps dying check its memory "
    "(spark.driver.memory, MIRRORSPARK_DRIVER_MEMORY) and the kernel's OOM killer (dmesg)"
)
"""How every :class:`~mirrorspark.errors.SparkDriverLostError` message ends: what happened to the copy, the fix."""


PACKAGE_DIR = Path(__file__).resolve().parent.parent
"""The installed ``mirrorspark`` package: what :func:`build_spark_session` ships to a cluster's executors."""

LOG4J_CONFIG = PACKAGE_DIR / "resources" / "log4j2-spark.properties"
"""The Spark JVMs' log4j2 configuration (driver and executors): errors only, to stderr (never the ``--json`` stdout)."""

REDACTION_REGEX = (
    "(?i)secret|password|passphrase|token|access[.]?key|jaas|credential|private|ssl[.]key|keystore[.]key|api[.]?key"
)
"""Spark's redaction regexes for the session: Spark's default plus the Kafka client secrets' names (``is_secret``)."""


QUICK_START_JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
"""JVM flags of a replicator's Spark driver JVM (and of Spark's launcher JVM) for a quicker start.

C1 only and the serial collector: records never pass through the driver JVM; issue #23 measured 16-17.5 s instead
of 27-33 s to a session. Not for the metrics service, whose aggregation runs in the JVM.
"""


def build_spark_session(
    *,
    master: str | None = None,
    app_name: str = "mirrorspark",
    ui: bool = True,
    conf: Mapping[str, str] | None = None,
    task_slots: int = 0,
    quick_start: bool = False,
    daemon_module: str | None = None,
) -> SparkSession:
    """Create (or get) the one SparkSession of a mirrorspark process.

    Kafka credentials never enter the Spark configuration (they travel in the pickled tasks); with no master, the local
    one gets ``max(cores, 2 * task_slots, 8)`` slots (the copy tasks wait on I/O). ``daemon_module``: the PySpark
    daemon's module (``spark.python.daemon.module``) with a local master only (:func:`local_daemon_conf`).
    """
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    java_opts = f"-Dlog4j.configurationFile=file:{LOG4J_CONFIG} -Dlog4j2.configurationFile=file:{LOG4J_CONFIG}"
    driver_opts = f"{java_opts} {QUICK_START_JVM_OPTIONS} {class_archive.jvm_options()}" if quick_start else java_opts
    if quick_start:
        os.environ.setdefault("SPARK_LAUNCHER_OPTS", QUICK_START_JVM_OPTIONS)  # spark-class's launcher JVM
    options = {"spark.app.name": app_name}
    if master is not None:
        options["spark.master"] = master
    elif "spark.master" not in os.environ.get("PYSPARK_SUBMIT_ARGS", "") and not os.environ.get("SPARK_ENV_LOADED"):
        options["spark.master"] = f"local[{max(os.cpu_count() or 1, 2 * task_slots, 8)}]"
    options |= {
        "spark.ui.enabled": "true" if ui else "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.shuffle.partitions": "4",
        "spark.python.worker.reuse": "true",
        "spark.driver.memory": os.environ.get("MIRRORSPARK_DRIVER_MEMORY", "1g"),
        "spark.driver.extraJavaOptions": driver_opts,
        "spark.executor.extraJavaOptions": java_opts,
        "spark.redaction.regex": REDACTION_REGEX,
        "spark.sql.redaction.options.regex": f"(?i)url|{REDACTION_REGEX[4:]}",
    }
    options |= local_daemon_conf(options.get("spark.master"), daemon_module)
    options |= dict(conf or {})
    b = SparkSession.builder
    for key, value in options.items():
        b = b.config(key, value)
    jvm_output.launch_gateway_quietly(options)  # the JVM's own lines never reach the terminal
    spark = b.getOrCreate()
    spark.sparkContext.setLogLevel(os.environ.get("MIRRORSPARK_SPARK_LOG_LEVEL", "ERROR"))
    _quiet_accumulator_server(spark)
    if not (spark.sparkContext.master or "").startswith("local["):
        # Executors of a real cluster (or local-cluster) need this package: ship it as a zip.
        spark.sparkContext.addPyFile(str(_package_zip()))
    return spark


def local_daemon_conf(master: str | None, daemon_module: str | None) -> dict[str, str]:
    """Return ``spark.python.daemon.module`` set to ``daemon_module`` for a local ``master``, else nothing.

    A cluster's executors start their daemon with their own Python, where mirrorspark may not be importable.
    """
    if daemon_module is None or master is None or not (master == "local" or master.startswith("local[")):
        return {}
    return {"spark.python.daemon.module": daemon_module}


def _quiet_accumulator_server(spark: SparkSession) -> None:
    """Log the accumulator server's connection errors at DEBUG instead of printing a traceback to stderr."""
    server = getattr(spark.sparkContext, "_accumulatorServer", None)
    if server is None:
        return

    def handle_error(_request: Any, client_address: Any) -> None:
        log.debug("Spark's accumulator server: a connection from %s ended: %s", client_address, sys.exc_info()[1])

    server.handle_error = handle_error


def _package_zip() -> Path:
    """Zip the installed ``mirrorspark`` package (Python files and resources) for ``addPyFile``."""
    import atexit
    import shutil
    import tempfile
    import zipfile

    root = PACKAGE_DIR
    tmp = tempfile.mkdtemp(prefix="mirrorspark-pyfiles-")
    atexit.register(shutil.rmtree, tmp, ignore_errors=True)
    out = Path(tmp) / "mirrorspark.zip"
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        for f in sorted(root.rglob("*")):
            if f.is_file() and "__pycache__" not in f.parts:
                z.write(f, Path("mirrorspark") / f.relative_to(root))
    return out


def is_gateway_error(error: BaseException) -> bool:
    """Tell whether ``error`` (raised by a PySpark call) says the Spark driver JVM cannot be reached."""
    from py4j.protocol import Py4JNetworkError  # type: ignore[import-untyped]

    seen: set[int] = set()
    e: BaseException | None = error
    while e is not None and id(e) not in seen:
        if isinstance(e, (Py4JNetworkError, ConnectionError)):
            return True
        seen.add(id(e))
        e = e.__cause__ or e.__context__
    return False


def describe_exit(code: int) -> str:
    """Say how a process ended from its ``Popen.returncode`` (``-N``: killed by signal N)."""
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"killed by {name}"
    return f"exited with status {code}"


class DriverJvmWatch:
    """Watches the Spark driver JVM of this process from a thread; names its death at once."""

    def __init__(self, probe: Callable[[], str | None], *, interval_s: float = JVM_WATCH_INTERVAL_S) -> None:
        self._probe = probe
        self.interval_s = interval_s
        self._lock = threading.Lock()
        self._callbacks: list[Callable[[SparkDriverLostError], None]] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.lost: SparkDriverLostError | None = None

    @classmethod
    def of(cls, spark: SparkSession, *, interval_s: float = JVM_WATCH_INTERVAL_S) -> DriverJvmWatch | None:
        """Build the watch of ``spark``'s driver JVM (not started); ``None`` when nothing can be watched."""
        from pyspark import SparkContext

        gateway: Any = getattr(SparkContext, "_gateway", None)
        proc = getattr(gateway, "proc", None)
        if proc is not None:
            return cls(popen_probe(proc, jvm_output.current()), interval_s=interval_s)
        if os.environ.get("SPARK_ENV_LOADED") or "PYSPARK_GATEWAY_PORT" in os.environ:
            parent = os.getppid()
            if parent > 1:
                return cls(parent_probe(parent), interval_s=interval_s)
        return None

    def on_lost(self, callback: Callable[[SparkDriverLostError], None]) -> None:
        """Call ``callback(error)`` once when the JVM is found dead (at once if it already was)."""
        with self._lock:
            lost = self.lost
            if lost is None:
                self._callbacks.append(callback)
        if lost is not None:
            callback(lost)

    def check(self) -> SparkDriverLostError | None:
        """Probe the JVM now; return the error naming its death (and run the callbacks once), or ``None``."""
        if self.lost is not None:
            return self.lost
        what = self._probe()
        if what is None:
            return None
        with self._lock:
            if self.lost is not None:
                return self.lost
            self.lost = error = SparkDriverLostError(f"{what}: {RESTART_ADVICE}")
            callbacks, self._callbacks = self._callbacks, []
        log.debug("%s", error)
        for callback in callbacks:
            try:
                callback(error)
            except Exception as e:  # the watch must name the death whatever a callback does
                log.warning("reacting to the Spark driver JVM's death failed: %s", e)
        return error

    def start(self) -> DriverJvmWatch:
        """Start the watch thread (a daemon); return ``self``."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="mirrorspark-jvm-watch", daemon=True)
            self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            if self.check() is not None:
                return

    def close(self) -> None:
        """Stop the watch thread (idempotent; never waits long: one probe at most)."""
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(max(1.0, 2 * self.interval_s))


def popen_probe(proc: Any, output: jvm_output.JvmOutput | None = None) -> Callable[[], str | None]:
    """Return a :class:`DriverJvmWatch` probe of a JVM launched as ``proc`` (a ``subprocess.Popen``)."""

    def probe() -> str | None:
        code = proc.poll()
        if code is None:
            return None
        words = output.last_words() if output is not None else ""
        return f"the Spark driver JVM (pid {proc.pid}) died ({describe_exit(code)}{'; ' + words if words else ''})"

    return probe


def parent_probe(parent: int) -> Callable[[], str | None]:
    """Return a :class:`DriverJvmWatch` probe of the ``spark-submit`` JVM (pid ``parent``) that launched us."""

    def probe() -> str | None:
        if os.getppid() == parent:
            return None
        return f"the Spark driver JVM (pid {parent}, the spark-submit that launched this process) is gone"

    return probe


__all__ = [
    "JVM_WATCH_INTERVAL_S",
    "LOG4J_CONFIG",
    "PACKAGE_DIR",
    "QUICK_START_JVM_OPTIONS",
    "REDACTION_REGEX",
    "RESTART_ADVICE",
    "DriverJvmWatch",
    "build_spark_session",
    "describe_exit",
    "is_gateway_error",
    "local_daemon_conf",
    "parent_probe",
    "popen_probe",
]
