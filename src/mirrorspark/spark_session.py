"""The one SparkSession of a mirrorspark process: local master sized for the copy tasks, secrets redacted."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


PACKAGE_DIR = Path(__file__).resolve().parent
"""The installed ``mirrorspark`` package: what :func:`build_spark_session` ships to a cluster's executors."""

LOG4J_CONFIG = PACKAGE_DIR / "resources" / "log4j2-spark.properties"
"""The Spark JVMs' log4j2 configuration (driver and executors): errors only, to stderr (never the ``--json`` stdout)."""

REDACTION_REGEX = (
    "(?i)secret|password|passphrase|token|access[.]?key|jaas|credential|private|ssl[.]key|keystore[.]key|api[.]?key"
)
"""``spark.redaction.regex`` and ``spark.sql.redaction.options.regex`` of mirrorspark's session: Spark's default
(``secret|password|token|access[.]?key``) plus the other names of Kafka client secrets
(:func:`~mirrorspark.config.keys.is_secret`), e.g. ``kafka.sasl.jaas.config``, whose values Spark then shows as
``*********(redacted)`` in its UI, event log and plans."""


QUICK_START_JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
"""JVM flags of a replicator's Spark driver JVM (and of Spark's launcher JVM) for a quicker start.

The JIT's first tier only and the serial collector: the driver JVM of ``mirrorspark run`` schedules
long-running copy tasks and answers py4j calls (the records never pass through it: the tasks copy in
Python workers), so it has no hot Java code worth the optimising compiler's start-up work. Measured on
the 2-core machine under load (issue #23): the session started in 16.0-17.5 s instead of 27.1-32.6 s,
the first Spark job after it alike; restarts after a crash wait for it. Not for the metrics
service, whose aggregation runs in the JVM."""


def build_spark_session(
    *,
    master: str | None = None,
    app_name: str = "mirrorspark",
    ui: bool = True,
    conf: Mapping[str, str] | None = None,
    task_slots: int = 0,
    quick_start: bool = False,
) -> SparkSession:
    """Create (or get) the one SparkSession of a mirrorspark process.

    Kafka credentials never enter the Spark configuration: they travel inside the pickled
    tasks (see README, "Security": with a non-local master, turn on Spark's RPC
    authentication and encryption, ``spark.authenticate`` and ``spark.network.crypto.enabled``,
    e.g. through ``conf``). Option values whose names look secret are redacted in Spark's
    UI, event log and plans (:data:`REDACTION_REGEX`).

    Parameters
    ----------
    master:
        Spark master URL; ``None`` keeps what ``spark-submit`` set, else ``local[*]``.
    ui:
        Whether to start the Spark UI.
    conf:
        More Spark properties (``mirrorspark run --conf KEY=VALUE``), set last: they win.
    task_slots:
        Copy tasks the flows run at once (continuous engine: each keeps one slot busy). With no
        master given, the local master gets ``max(cores, 2 * task_slots, 8)`` slots: the tasks wait
        on I/O, not CPU, and the headroom covers topics and partitions found later.
    quick_start:
        Start the driver JVM (and Spark's launcher) with :data:`QUICK_START_JVM_OPTIONS`: for a
        replicator, whose restart after a crash waits for Spark (``mirrorspark run``). A
        ``spark.driver.extraJavaOptions`` in ``conf`` replaces them.
    """
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    java_opts = f"-Dlog4j.configurationFile=file:{LOG4J_CONFIG} -Dlog4j2.configurationFile=file:{LOG4J_CONFIG}"
    driver_opts = f"{java_opts} {QUICK_START_JVM_OPTIONS}" if quick_start else java_opts
    if quick_start:
        os.environ.setdefault("SPARK_LAUNCHER_OPTS", QUICK_START_JVM_OPTIONS)  # spark-class's launcher JVM
    b = SparkSession.builder.appName(app_name)
    if master is not None:
        b = b.master(master)
    elif "spark.master" not in os.environ.get("PYSPARK_SUBMIT_ARGS", "") and not os.environ.get("SPARK_ENV_LOADED"):
        b = b.master(f"local[{max(os.cpu_count() or 1, 2 * task_slots, 8)}]")
    b = (
        b.config("spark.ui.enabled", "true" if ui else "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.python.worker.reuse", "true")
        .config("spark.driver.memory", os.environ.get("MIRRORSPARK_DRIVER_MEMORY", "1g"))
        .config("spark.driver.extraJavaOptions", driver_opts)
        .config("spark.executor.extraJavaOptions", java_opts)
        .config("spark.redaction.regex", REDACTION_REGEX)
        .config("spark.sql.redaction.options.regex", f"(?i)url|{REDACTION_REGEX[4:]}")
    )
    for key, value in (conf or {}).items():
        b = b.config(key, value)
    spark = b.getOrCreate()
    spark.sparkContext.setLogLevel(os.environ.get("MIRRORSPARK_SPARK_LOG_LEVEL", "ERROR"))
    if not (spark.sparkContext.master or "").startswith("local["):
        # Executors of a real cluster (or local-cluster) need this package: ship it as a zip.
        spark.sparkContext.addPyFile(str(_package_zip()))
    return spark


def _package_zip() -> Path:
    """Zip the installed ``mirrorspark`` package (Python files and resources) for ``addPyFile``.

    The zip lives in a temporary directory removed when the process exits (the driver serves
    the file to executors from there for the application's lifetime).
    """
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


__all__ = ["LOG4J_CONFIG", "PACKAGE_DIR", "QUICK_START_JVM_OPTIONS", "REDACTION_REGEX", "build_spark_session"]
