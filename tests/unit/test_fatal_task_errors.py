"""Which copy-task errors fail a flow at once: decided on the error's class and Kafka code, never its text."""

from __future__ import annotations

import pytest

from mirrorspark.errors import (
    ClusterError,
    DataPathError,
    RecordTooLargeError,
    TransactionCoordinatorError,
    error_from_info,
)
from mirrorspark.replication.worker.supervisor import fatal_task_error

pytestmark = pytest.mark.unit

NO_COORDINATOR = TransactionCoordinatorError(
    "flow A->B: no transaction coordinator: cluster 'B' did not initialise transactional id "
    "'A-mm2-MirrorSourceConnector-0' within 60 s",
    kafka_code="_TIMED_OUT",
    retriable=True,
)


@pytest.mark.parametrize("first_start", [True, False])
def test_authorization_failures_and_oversized_records_are_fatal(first_start: bool) -> None:
    denied = ClusterError("flow A->B: may not use transactional id", kafka_code="TRANSACTIONAL_ID_AUTHORIZATION_FAILED")
    assert fatal_task_error(denied, first_start=first_start)
    write = DataPathError("writing 'A.t' failed", kafka_code="TOPIC_AUTHORIZATION_FAILED")
    assert fatal_task_error(write, first_start=first_start)
    assert fatal_task_error(RecordTooLargeError("flow A->B: a record of 2 MB"), first_start=first_start)


def test_a_missing_transaction_coordinator_is_fatal_only_at_the_first_start() -> None:
    assert fatal_task_error(NO_COORDINATOR, first_start=True)
    assert not fatal_task_error(NO_COORDINATOR, first_start=False)  # a coordinator moving: retried


def test_other_errors_are_retried() -> None:
    lost = DataPathError("flow A->B: copy task 0 was lost with its Spark executor or Python worker")
    assert not fatal_task_error(lost, first_start=True)


def test_the_text_decides_nothing() -> None:
    """A message that merely mentions authorization is no authorization failure (the old text rule said it was)."""
    said = DataPathError("reading t-0 failed: the AUTHORIZATION service was slow", kafka_code="REQUEST_TIMED_OUT")
    assert not fatal_task_error(said, first_start=True)
    coordinator = ClusterError("flow A->B: no transaction coordinator (only in the text)")
    assert not fatal_task_error(coordinator, first_start=True)


@pytest.mark.parametrize("error", [NO_COORDINATOR, RecordTooLargeError("too big", kafka_code="MSG_SIZE_TOO_LARGE")])
def test_fatality_survives_the_trip_across_spark(error: Exception) -> None:
    assert isinstance(error, (TransactionCoordinatorError, RecordTooLargeError))
    back = error_from_info(error.info(flow="A->B", task=0))
    assert type(back) is type(error)
    assert fatal_task_error(back, first_start=True)
