"""The verify job on Spark: one Spark task per verify unit, its results collected (``mirrorspark verify``)."""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import SparkSession

from mirrorspark.replication.task.verify_spec import VerifyTaskResult, VerifyTaskSpec


def run_verify_job(spark: SparkSession, specs: Sequence[VerifyTaskSpec], *, description: str) -> list[VerifyTaskResult]:
    """Run one Spark task per unit on the executors; return their results in ``specs``' order.

    A failed unit comes back with its ``error`` set; raises MirrorsparkError when the job itself fails.
    """
    raise NotImplementedError("run_verify_job: being built (#42)")


__all__ = ["run_verify_job"]
