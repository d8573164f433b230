"""replication.task.schema_ids: a copy task's keys and values get the target's schema ids (fake registries)."""

from __future__ import annotations

import json

import pytest

from fakes import FakeRegistry
from mirrorspark.core.schemas.copier import ReplicatedTopics, SchemaCopier, SubjectNaming
from mirrorspark.core.schemas.registry import SchemaText
from mirrorspark.errors import SchemaIdUnknownError, SchemaRegistryError
from mirrorspark.mm2.filters import DefaultTopicFilter
from mirrorspark.mm2.policy import DefaultReplicationPolicy
from mirrorspark.replication.task.partition import PartitionCopy
from mirrorspark.replication.task.schema_ids import SchemaIdTranslator
from mirrorspark.replication.task.spec import PartitionAssignment

pytestmark = pytest.mark.unit

ORDER = SchemaText(json.dumps({"type": "record", "name": "Order", "fields": [{"name": "id", "type": "long"}]}))


def setup(*, copy_unknown: bool = False) -> tuple[FakeRegistry, FakeRegistry, SchemaIdTranslator, PartitionCopy]:
    source, target = FakeRegistry("source"), FakeRegistry("target", first_id=300)
    naming = SubjectNaming("east", DefaultReplicationPolicy(), ReplicatedTopics(DefaultTopicFilter()))
    translator = SchemaIdTranslator(SchemaCopier(source, target, naming), flow="east->west", copy_unknown=copy_unknown)
    return source, target, translator, PartitionCopy(PartitionAssignment("orders", 3, "east.orders", 0))


def framed(schema_id: int, payload: bytes) -> bytes:
    return b"\0" + schema_id.to_bytes(4, "big") + payload


def test_keys_and_values_get_the_targets_id_and_keep_every_other_byte() -> None:
    source, target, translator, pc = setup()
    key_id = source.register("orders-key", SchemaText('"string"'))
    value_id = source.register("orders-value", ORDER)
    key, value = translator.translated(pc, framed(key_id, b"\x02k"), framed(value_id, b"\x00\x02payload"), 10)
    assert key is not None and value is not None
    t_key, t_value = (
        target.lookup(s, x)[0] for s, x in (("east.orders-key", SchemaText('"string"')), ("east.orders-value", ORDER))
    )  # type: ignore[index]
    assert key == framed(t_key, b"\x02k") and value == framed(t_value, b"\x00\x02payload")
    assert (pc.schema_hits, pc.schema_misses, pc.schema_unknown) == (0, 2, 0)
    translator.translated(pc, None, framed(value_id, b"x"), 11)
    assert (pc.schema_hits, pc.schema_misses) == (1, 2)


@pytest.mark.parametrize("data", [None, b"", b"\0\0\0", b"\x01\0\0\0\x07abc", b"plain text"])
def test_what_is_not_in_wire_format_passes_unchanged_and_uncounted(data: bytes | None) -> None:
    _, _, translator, pc = setup()
    assert translator.translated(pc, data, data, 5) == (data, data)
    assert (pc.schema_hits, pc.schema_misses, pc.schema_unknown) == (0, 0, 0)


def test_an_unknown_id_stops_the_task_naming_topic_partition_offset_and_id() -> None:
    _, _, translator, pc = setup()
    with pytest.raises(SchemaIdUnknownError) as e:
        translator.translated(pc, None, framed(77, b"x"), 1234)
    message = str(e.value)
    assert "orders-3@1234" in message and "schema id 77" in message
    assert "east->west.sync.schemas.unknown.ids = copy" in message


def test_an_unknown_id_is_copied_unchanged_and_counted_when_asked() -> None:
    _, target, translator, pc = setup(copy_unknown=True)
    for offset in range(3):
        assert translator.translated(pc, None, framed(77, b"x"), offset) == (None, framed(77, b"x"))
    assert pc.schema_unknown == 3 and target.subjects() == []


def test_a_registry_down_names_the_record_and_nothing_is_produced() -> None:
    source, _, translator, pc = setup()
    value_id = source.register("orders-value", ORDER)
    source.down = True
    with pytest.raises(SchemaRegistryError, match="record orders-3@9"):
        translator.translated(pc, None, framed(value_id, b"x"), 9)
