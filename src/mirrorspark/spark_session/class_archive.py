"""A class-data-sharing archive of the Spark driver JVM: ``mirrorspark run`` starts Spark in half the time.

A relaunch after ``kill -9`` copies again once Spark has started (the flows' lease wait runs
meanwhile), so Spark's start-up is what a crash costs. Most of it is the driver JVM loading and
verifying Spark's classes. A dynamic AppCDS archive (JEP 350, Java 13+) holds them already
parsed: the driver JVM maps it at start. Measured on the 2-core machine: the session started in
2.3-2.5 s instead of 4.8-5.4 s.

The archive is made once per machine, JDK and PySpark (:func:`create`: ``make test`` and ``make
demo`` run ``python -m mirrorspark.spark_session``): a Spark session started with
``-XX:ArchiveClassesAtExit`` runs one job and stops; its JVM writes the classes it loaded as it
exits. :func:`jvm_options` then adds it to the driver JVM of ``mirrorspark run``
(:func:`~mirrorspark.spark_session.build_spark_session` with ``quick_start``). An archive the JVM
cannot use (another JDK build, changed jars) is ignored by the JVM itself, silently (``-Xshare:auto``
with its CDS log off): the start is only slower.

Where: :data:`ARCHIVE_ENV` if set (``off``: none), else ``$XDG_CACHE_HOME/mirrorspark`` (default
``~/.cache/mirrorspark``), named by the PySpark version and a hash of the Java binary and
PySpark's location.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Final

ARCHIVE_ENV: Final = "MIRRORSPARK_SPARK_CLASS_ARCHIVE"
"""Environment variable naming the archive's path; ``off`` turns it off."""

CREATE_TIMEOUT_S: Final = 300.0
"""Seconds :func:`create` waits for the archiving Spark session and its JVM's exit."""

_DUMP_FLAG: Final = "--dump"


def _java() -> Path | None:
    """Return the ``java`` PySpark starts (``JAVA_HOME/bin/java``, else the one on ``PATH``), resolved, or ``None``."""
    home = os.environ.get("JAVA_HOME")
    found = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    return Path(found).resolve() if found and Path(found).exists() else None


def archive_path() -> Path | None:
    """Where the archive of this JDK and PySpark is (or would be) kept; ``None`` when turned off or no Java."""
    env = os.environ.get(ARCHIVE_ENV, "").strip()
    if env.lower() == "off":
        return None
    if env:
        return Path(env)
    java = _java()
    if java is None:
        return None
    import pyspark

    st = java.stat()
    ident = f"{java}|{st.st_size}|{st.st_mtime_ns}|{Path(pyspark.__file__).resolve().parent}"
    digest = hashlib.sha256(ident.encode()).hexdigest()[:12]
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "mirrorspark" / f"spark-driver-{pyspark.__version__}-{digest}.jsa"


def jvm_options() -> str:
    """JVM flags that map the archive, if it exists; ``""`` otherwise."""
    path = archive_path()
    if path is None or not path.is_file():
        return ""
    return f"-XX:SharedArchiveFile={path} -Xshare:auto -Xlog:cds=off -Xlog:cds+dynamic=off"


def create(path: Path | None = None, *, timeout_s: float = CREATE_TIMEOUT_S) -> Path:
    """Make the archive: a Spark session started with ``-XX:ArchiveClassesAtExit`` runs one job and stops.

    Written under a temporary name and renamed once the JVM exited. Raises RuntimeError without Java, with the archive
    turned off, or when the archiving session failed.
    """
    from mirrorspark.kafka.local.brokers import pid_alive

    target = path or archive_path()
    if target is None:
        raise RuntimeError(f"no archive to make: no Java found, or {ARCHIVE_ENV}=off")
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    tmp.unlink(missing_ok=True)
    deadline = time.monotonic() + timeout_s
    env = {**os.environ, ARCHIVE_ENV: "off"}
    done = subprocess.run(
        [sys.executable, "-m", "mirrorspark.spark_session", _DUMP_FLAG, str(tmp)],
        capture_output=True,
        text=True,
        timeout=timeout_s,
        env=env,
        check=False,
    )
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines or not lines[-1].isdigit():
        raise RuntimeError(f"the archiving Spark session failed ({done.returncode}): {(done.stderr or '')[-2000:]}")
    jvm = int(lines[-1])
    while pid_alive(jvm) and time.monotonic() < deadline:  # it writes the archive as it exits
        time.sleep(0.2)
    if not tmp.is_file() or tmp.stat().st_size == 0:
        tmp.unlink(missing_ok=True)
        raise RuntimeError(f"the Spark driver JVM {jvm} wrote no archive to {tmp}")
    os.replace(tmp, target)
    return target


def _dump(tmp: Path) -> None:
    """In the archiving process: start a session whose JVM archives its classes at exit, run a job, print its pid."""
    from mirrorspark.spark_session import LOG4J_CONFIG, QUICK_START_JVM_OPTIONS, build_spark_session

    opts = f"-Dlog4j.configurationFile=file:{LOG4J_CONFIG} -Dlog4j2.configurationFile=file:{LOG4J_CONFIG}"
    opts += f" {QUICK_START_JVM_OPTIONS} -XX:ArchiveClassesAtExit={tmp} -Xlog:cds=off -Xlog:cds+dynamic=off"
    spark = build_spark_session(app_name="mirrorspark-class-archive", conf={"spark.driver.extraJavaOptions": opts})
    spark.sparkContext.parallelize(range(2), 2).map(lambda x: x + 1).collect()
    jvm: Any = getattr(spark.sparkContext, "_jvm", None)
    pid = jvm.java.lang.ProcessHandle.current().pid()
    spark.stop()
    print(pid, flush=True)


def main(argv: list[str] | None = None) -> int:
    """``python -m mirrorspark.spark_session``: make the archive unless it exists; print its path."""
    p = argparse.ArgumentParser(
        prog="python -m mirrorspark.spark_session", description="Make the Spark driver JVM's class archive."
    )
    p.add_argument("--force", action="store_true", help="make it again even if it exists")
    p.add_argument(_DUMP_FLAG, type=Path, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.dump is not None:
        _dump(args.dump)
        return 0
    path = archive_path()
    if path is None:
        print(f"no Spark class archive: no Java found, or {ARCHIVE_ENV}=off", file=sys.stderr)
        return 1
    if path.is_file() and not args.force:
        print(f"{path} (exists)")
        return 0
    began = time.monotonic()
    try:
        create(path)
    except (RuntimeError, OSError, subprocess.TimeoutExpired) as e:
        print(f"making the Spark class archive {path} failed: {e}; mirrorspark runs without it", file=sys.stderr)
        return 1
    print(f"{path} (made in {time.monotonic() - began:.0f} s)")
    return 0


__all__ = ["ARCHIVE_ENV", "CREATE_TIMEOUT_S", "archive_path", "create", "jvm_options", "main"]
