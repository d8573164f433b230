"""The copy loop's fast path for cached schema ids (``produce.forward_run``): the same bytes and counts as
``SchemaIdTranslator.translated`` record by record; and a task's cache started with the driver's translations."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fakes import FakeMessage, FakeRecord, FakeRegistry
from mirrorspark.core.schemas.copier import ReplicatedTopics, SchemaCopier, SubjectNaming
from mirrorspark.core.schemas.registry import SchemaText
from mirrorspark.mm2.filters import DefaultTopicFilter
from mirrorspark.mm2.policy import DefaultReplicationPolicy
from mirrorspark.replication.task.partition import PartitionCopy
from mirrorspark.replication.task.produce import forward_run
from mirrorspark.replication.task.schema_ids import SchemaIdTranslator
from mirrorspark.replication.task.spec import PartitionAssignment

pytestmark = pytest.mark.unit


class Recorder:
    """A producer that keeps what it was given."""

    def __init__(self) -> None:
        self.records: list[tuple[bytes | None, bytes | None]] = []

    def produce(self, topic: str, value: bytes | None, key: bytes | None, *args: Any, **kwargs: Any) -> None:
        self.records.append((key, value))


def copier() -> tuple[SchemaCopier, list[int]]:
    source, target = FakeRegistry("source"), FakeRegistry("target", first_id=300)
    naming = SubjectNaming("east", DefaultReplicationPolicy(), ReplicatedTopics(DefaultTopicFilter()))
    ids = [
        source.register("orders-value", SchemaText(json.dumps({"type": "record", "name": f"V{n}", "fields": []})))
        for n in range(3)
    ]
    return SchemaCopier(source, target, naming), ids


def pc_with(translator: SchemaIdTranslator) -> PartitionCopy:
    pc = PartitionCopy(PartitionAssignment("orders", 3, "east.orders", 0))
    pc.schema_ids = translator
    return pc


data = st.one_of(
    st.none(),
    # not in wire format (an unknown id in wire format stops the task: test_schema_id_translation's business)
    st.binary(max_size=8).filter(lambda b: len(b) < 5 or b[0] != 0),
    st.tuples(st.integers(0, 2), st.binary(max_size=12)).map(lambda t: ("id", t[0], t[1])),  # type: ignore[arg-type]
)


@settings(max_examples=60, deadline=None)
@given(records=st.lists(st.tuples(data, data), max_size=30))
def test_the_fast_path_keeps_every_byte_but_the_id_and_counts_as_the_translator_does(
    records: list[tuple[Any, Any]],
) -> None:
    shared, ids = copier()  # both translators share the registries: the same target ids

    def concrete(d: Any) -> bytes | None:
        return b"\0" + ids[d[1]].to_bytes(4, "big") + d[2] if isinstance(d, tuple) else d

    rows = [(concrete(k), concrete(v)) for k, v in records]
    msgs = [FakeMessage("orders", 3, o, FakeRecord(k, v, 1)) for o, (k, v) in enumerate(rows)]
    fast, slow = pc_with(SchemaIdTranslator(shared, flow="f", copy_unknown=False)), None
    producer = Recorder()
    i = 0
    while i < len(msgs):
        i = forward_run(producer, fast, msgs, i, 1.0)  # type: ignore[arg-type]
    slow = pc_with(SchemaIdTranslator(shared, flow="f", copy_unknown=False))
    expected = [slow.schema_ids.translated(slow, k, v, o) for o, (k, v) in enumerate(rows)]  # type: ignore[union-attr]
    assert producer.records == expected
    assert (fast.schema_hits, fast.schema_misses, fast.schema_unknown) == (
        slow.schema_hits,
        slow.schema_misses,
        slow.schema_unknown,
    )


def test_a_task_starts_with_the_translations_the_drivers_sync_found_and_asks_no_registry_for_them() -> None:
    driver, ids = copier()
    driver.copy_subject("orders-value")  # the sync at flow start
    known = driver.known_ids()
    assert sorted(known) == sorted(ids) and all(known[i] != i for i in ids)
    fresh, _ = copier()  # the same schemas on other registries: the same ids
    assert {i: fresh.target_id(i, "east.orders-value") for i in ids} == known
    task, _ = copier()
    task.source.down = task.target.down = True  # type: ignore[attr-defined]
    translator = SchemaIdTranslator(task, flow="f", copy_unknown=False, known=tuple(known.items()))
    pc = pc_with(translator)
    value = b"\0" + ids[1].to_bytes(4, "big") + b"payload"
    producer = Recorder()
    forward_run(producer, pc, [FakeMessage("orders", 3, 0, FakeRecord(None, value, 1))], 0, 1.0)  # type: ignore[arg-type]
    assert producer.records == [(None, b"\0" + known[ids[1]].to_bytes(4, "big") + b"payload")]
    assert translator.translated(pc, None, value, 1)[1] == producer.records[0][1]
    assert (pc.schema_hits, pc.schema_misses, pc.schema_unknown) == (2, 0, 0)
