"""Which copy-task errors fail a flow at once (pure: the supervisor's classification of an error's text)."""

from __future__ import annotations

import pytest

from mirrorspark.errors import ClusterError, DataPathError, RecordTooLargeError
from mirrorspark.replication.engine import fatal_task_error
from mirrorspark.replication.stream import NO_TRANSACTION_COORDINATOR

pytestmark = pytest.mark.unit

NO_COORDINATOR = ClusterError(
    f"flow A->B: {NO_TRANSACTION_COORDINATOR}: cluster 'B' did not initialise transactional id "
    "'A-mm2-MirrorSourceConnector-0' within 60 s (Timed out waiting for operation to finish)"
)


@pytest.mark.parametrize("first_start", [True, False])
def test_authorization_failures_and_oversized_records_are_fatal(first_start: bool) -> None:
    denied = ClusterError(
        "flow A->B: TRANSACTIONAL_ID_AUTHORIZATION_FAILED: the replication principal may not use transactional id "
        "'A-mm2-MirrorSourceConnector-1'"
    )
    assert fatal_task_error(denied, first_start=first_start)
    assert fatal_task_error(DataPathError("writing 'A.t': Broker: Topic authorization failed"), first_start=first_start)
    assert fatal_task_error(RecordTooLargeError("flow A->B: a record of 2 MB"), first_start=first_start)


def test_a_missing_transaction_coordinator_is_fatal_only_at_the_first_start() -> None:
    assert fatal_task_error(NO_COORDINATOR, first_start=True)
    assert not fatal_task_error(NO_COORDINATOR, first_start=False)  # a coordinator moving: retried


def test_other_errors_are_retried() -> None:
    lost = DataPathError("flow A->B: copy task 0 was lost with its Spark executor or Python worker")
    assert not fatal_task_error(lost, first_start=True)
