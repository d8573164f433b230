"""The PySpark daemon of a local Spark master, with the copy task's modules loaded before it forks a worker.

Spark starts one daemon (``spark.python.daemon.module``, default ``pyspark.daemon``) and forks every
Python worker from it. Run as this module (:data:`DAEMON_MODULE`), the daemon imports the copy task's
modules (confluent-kafka, the task's code: 0.3-0.5 s of CPU on the 2-core machine) once, before its
first fork: every worker, the first copy tasks' and a restarted task's, starts with them loaded
instead of importing them itself. Only imports: no client, no thread exists before a fork. An import
that fails is logged to stderr and ignored (the workers then import what they need, as before).

Set by :func:`~mirrorspark.spark_session.build_spark_session` (``daemon_module``) for a local master
only: a cluster's executors may not have mirrorspark on the daemon's path (it reaches them as a zip
that only the workers add).
"""

from __future__ import annotations

import sys
from typing import Final

DAEMON_MODULE: Final = "mirrorspark.replication.task.daemon"
"""This module's name, as ``spark.python.daemon.module`` names it."""

DAEMON_MODULES: Final = ("pyspark.daemon", DAEMON_MODULE)
"""The modules a PySpark daemon runs as (in its command line, and its forked workers'): PySpark's own, this one."""

PRELOADED: Final = ("mirrorspark.replication.task.job",)
"""Modules the daemon imports before it forks: the copy task's (and so confluent-kafka and the task's code)."""


def preload(modules: tuple[str, ...] = PRELOADED) -> list[str]:
    """Import ``modules``; return those that failed (each said on stderr, never raised)."""
    import importlib

    failed = []
    for name in modules:
        try:
            importlib.import_module(name)
        except Exception as e:  # only an optimisation: the workers import what they need themselves
            print(f"mirrorspark: the Python daemon could not preload {name}: {e!r}", file=sys.stderr, flush=True)
            failed.append(name)
    return failed


def main() -> None:
    """Preload, then serve as PySpark's daemon (``pyspark.daemon.manager``; the worker module is its argument)."""
    preload()
    from pyspark.daemon import manager

    manager()  # type: ignore[no-untyped-call]


def is_daemon_command(cmdline: list[str]) -> bool:
    """Whether ``cmdline`` (a process's) is a PySpark daemon's, or a Python worker's forked from one."""
    return any(module in cmdline for module in DAEMON_MODULES)


__all__ = ["DAEMON_MODULE", "DAEMON_MODULES", "PRELOADED", "is_daemon_command", "main", "preload"]


if __name__ == "__main__":
    main()
