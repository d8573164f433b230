"""Where the JVM jars live, and which ``java`` runs them.

mirrorspark never downloads jars at run time: ``make install`` resolves every JVM
artifact once with Maven into ``<repo>/build/jars/<set>/`` (see ``pom.xml``), one
directory per jar set:

``kafka``
    The Apache Kafka broker (KRaft), ``kafka-tools`` and a log4j2 binding; used by
    :mod:`mirrorspark.kafka.local` to run test clusters.
``spark``
    The Spark Kafka connector for the pinned PySpark.
``mm2``
    MirrorMaker 2 (``connect-mirror``), for comparison and compatibility tests.

The base directory ``<repo>/build/jars`` is found from the package location (an
editable or source checkout) and can be overridden with the environment variable
``MIRRORSPARK_JARS_DIR`` (which then holds ``kafka/``, ``spark/`` and ``mm2/``).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Final, Literal

from mirrorspark.errors import LocalClusterError

JarSet = Literal["kafka", "spark", "mm2"]
"""The names of the jar sets that ``make install`` resolves."""

JAR_SETS: Final[tuple[str, ...]] = ("kafka", "mm2", "spark")
"""Every known jar set name, sorted."""

JARS_DIR_ENV: Final = "MIRRORSPARK_JARS_DIR"
"""Environment variable overriding the base directory of the jar sets."""


def _default_jars_base() -> Path:
    # src/mirrorspark/jars.py -> parents[0] = package, [1] = src, [2] = repository root.
    return Path(__file__).resolve().parents[3] / "build" / "jars"


def jars_base_dir() -> Path:
    """Return the directory that holds one sub-directory per jar set."""
    override = os.environ.get(JARS_DIR_ENV, "").strip()
    if override:
        return Path(override).expanduser().resolve()
    return _default_jars_base()


def jar_dir(name: str) -> Path:
    """Return the directory of one resolved jar set.

    Raises LocalClusterError if ``name`` is not a known jar set, or the directory is missing or holds no jar (the
    message says to run ``make install``).
    """
    if name not in JAR_SETS:
        raise LocalClusterError(f"unknown jar set {name!r}: expected one of {', '.join(JAR_SETS)}")
    directory = jars_base_dir() / name
    if not directory.is_dir() or not any(directory.glob("*.jar")):
        raise LocalClusterError(
            f"{name} jars not found in {directory}: run `make install` to resolve the JVM jars with Maven"
            f" (or point {JARS_DIR_ENV} at a directory holding {name}/*.jar)"
        )
    return directory


def classpath(name: str) -> str:
    """Return a JVM class path holding every jar of one jar set.

    Raises LocalClusterError if the jar set is unknown or not resolved (see :func:`jar_dir`).
    """
    return f"{jar_dir(name)}{os.sep}*"


def java_executable() -> str:
    """Return the ``java`` launcher to run the jars with.

    Raises LocalClusterError if ``JAVA_HOME`` is set but holds no executable ``bin/java``, or it is unset and no
    ``java`` is on ``PATH``.
    """
    java_home = os.environ.get("JAVA_HOME", "").strip()
    if java_home:
        candidate = Path(java_home).expanduser() / "bin" / "java"
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
        raise LocalClusterError(
            f"JAVA_HOME={java_home} holds no executable bin/java: point JAVA_HOME at a JDK 17+"
            " or unset it to use the `java` on PATH"
        )
    found = shutil.which("java")
    if found is None:
        raise LocalClusterError("java not found: install a JDK 17+ and put `java` on PATH, or set JAVA_HOME")
    return str(Path(found).resolve()) if not os.path.isabs(found) else found


__all__ = ["JARS_DIR_ENV", "JAR_SETS", "JarSet", "classpath", "jar_dir", "jars_base_dir", "java_executable"]
