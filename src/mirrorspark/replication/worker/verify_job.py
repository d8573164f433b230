"""The verify job on Spark: one Spark task per verify unit, its results collected (``mirrorspark verify``).

Invariants (named by ``tests/unit/test_verify_job_unit.py`` and ``tests/integration/test_verify_job.py``):

- VJ1 one Spark task per unit (``parallelize(specs, len(specs))``: unit ``i`` is partition ``i``), all in one
  Spark job of its own job group (:data:`GROUP_PREFIX` and a counter), described by ``description`` only: no
  client setting reaches Spark's UI or logs (the specs travel pickled, their ``repr`` masks secrets).
- VJ2 results come back in ``specs``' order, one per unit; a unit that failed carries its ``error``
  (:func:`~mirrorspark.replication.task.verify_task.run_verify_task` never raises), so a task never fails and
  Spark never retries one for a unit's own failure; an executor lost mid-task is re-run by Spark (a read
  writes nothing: re-running a unit is safe).
- VJ3 the job's own failure (cancelled, the driver JVM gone) raises MirrorsparkError: SparkDriverLostError when
  the JVM cannot be reached, else DataPathError naming the job.

Slots: the job asks for one executor slot per unit, and gets what is free. Inside ``run`` each copy task holds a
slot for its lifetime, so a verify job there runs on the slots left (none free: its tasks wait until one is);
size ``spark.cores.max`` / the executors with one slot per copy task plus the units to run at once.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Final

from pyspark.sql import SparkSession

from mirrorspark.errors import DataPathError, MirrorsparkError, SparkDriverLostError
from mirrorspark.replication.task.verify_spec import VerifyTaskResult, VerifyTaskSpec
from mirrorspark.replication.task.verify_task import run_verify_task
from mirrorspark.spark_session import RESTART_ADVICE, is_gateway_error

GROUP_PREFIX: Final = "mirrorspark-verify"
"""Spark job group of a verify job: this, then ``-<n>`` (cancel one with ``cancelJobGroup``)."""

_jobs = itertools.count(1)


def run_verify_job(spark: SparkSession, specs: Sequence[VerifyTaskSpec], *, description: str) -> list[VerifyTaskResult]:
    """Run one Spark task per unit on the executors; return their results in ``specs``' order (VJ1, VJ2).

    A failed unit comes back with its ``error`` set; raises MirrorsparkError when the job itself fails (VJ3).
    ``description`` names the job in Spark's UI: no secret in it.
    """
    if not specs:
        return []
    sc = spark.sparkContext
    group = f"{GROUP_PREFIX}-{next(_jobs)}"
    try:
        sc.setJobGroup(group, description, interruptOnCancel=True)
        results: list[VerifyTaskResult] = sc.parallelize(list(specs), len(specs)).map(run_verify_task).collect()
    except Exception as e:  # the job itself failed (cancelled, the JVM gone): only its text is there
        raise job_error(e, description) from e
    finally:
        _clear_group(sc)
    if len(results) != len(specs):
        raise DataPathError(f"the verify job '{description}' returned {len(results)} results for {len(specs)} units")
    return results


def _clear_group(sc: object) -> None:
    """Leave the calling thread's later jobs out of the verify job's group (best effort: the JVM may be gone)."""
    try:
        sc.setLocalProperty("spark.jobGroup.id", None)  # type: ignore[attr-defined]
        sc.setLocalProperty("spark.job.description", None)  # type: ignore[attr-defined]
    except Exception:  # a Py4J error: the job's own failure is what counts
        return


def job_error(e: Exception, description: str) -> MirrorsparkError:
    """Translate a verify job's failure: the driver JVM out of reach, or the job failed (its first line)."""
    text = str(e).splitlines()[0] if str(e) else type(e).__name__
    if is_gateway_error(e):
        return SparkDriverLostError(f"the Spark driver JVM cannot be reached ({text}): {RESTART_ADVICE}")
    return DataPathError(f"the verify job '{description}' failed: {text}")


__all__ = ["GROUP_PREFIX", "job_error", "run_verify_job"]
