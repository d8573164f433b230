"""Schema replication's errors (#39) name what failed and the fix, and cross Spark as data like every error."""

from __future__ import annotations

import pickle

import pytest

from mirrorspark.core.schemas import UNKNOWN_IDS_KEY, subject_conflict, unknown_schema_id
from mirrorspark.errors import (
    DataPathError,
    SchemaIdUnknownError,
    SchemaRegistryError,
    SchemaSubjectConflictError,
    error_from_info,
)
from mirrorspark.replication.worker.restart_policy import fatal_task_error

pytestmark = pytest.mark.unit


def test_an_unknown_id_names_topic_partition_offset_id_and_the_key() -> None:
    error = unknown_schema_id(topic="orders", partition=3, offset=41, schema_id=1234, is_key=False, flow="A->B")
    assert isinstance(error, SchemaIdUnknownError) and isinstance(error, DataPathError)
    message = str(error)
    for part in ("orders-3@41", "value", "schema id 1234", "'A->B.sync.schemas.unknown.ids = copy'"):
        assert part in message
    assert error.partition == "orders-3"
    assert error.exit_code == 4 and error.fatal


def test_an_unknown_key_id_without_a_flow_names_the_plain_key() -> None:
    message = str(unknown_schema_id(topic="t", partition=0, offset=0, schema_id=7, is_key=True))
    assert "its key" in message and f"'{UNKNOWN_IDS_KEY} = copy'" in message


def test_a_subject_conflict_names_the_subject_and_the_fix() -> None:
    error = subject_conflict(
        source_subject="orders-value", target_subject="east.orders-value", version=3, detail="409: incompatible"
    )
    assert isinstance(error, SchemaSubjectConflictError) and isinstance(error, SchemaRegistryError)
    message = str(error)
    assert "'east.orders-value'" in message and "'orders-value'" in message and "version 3" in message
    assert "DELETE /subjects/east.orders-value" in message and "409: incompatible" in message
    assert error.fatal


@pytest.mark.parametrize(
    "error",
    [
        unknown_schema_id(topic="orders", partition=3, offset=41, schema_id=1234, is_key=False),
        subject_conflict(source_subject="s", target_subject="t", version=1, detail="d"),
    ],
)
def test_they_cross_spark_as_data_and_fail_the_flow_at_once(error: SchemaRegistryError) -> None:
    back = error_from_info(pickle.loads(pickle.dumps(error.info(flow="A->B", task=0))))
    assert type(back) is type(error) and back.message == error.message and back.partition == error.partition
    assert fatal_task_error(back, first_start=False)
