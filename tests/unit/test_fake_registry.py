"""FakeRegistry keeps Confluent's semantics: content ids shared by subjects, idempotent registration, levels."""

from __future__ import annotations

import pytest

from fakes import FakeRegistry
from mirrorspark.core.schemas.registry import SchemaReference, SchemaText, SubjectVersion
from mirrorspark.errors import SchemaRegistryError, SchemaSubjectConflictError

pytestmark = pytest.mark.unit

V1 = SchemaText('{"type":"record","name":"A","fields":[]}')
V2 = SchemaText('{"type":"record","name":"A","fields":[{"name":"x","type":"int","default":0}]}')


def test_ids_are_content_ids_shared_by_subjects() -> None:
    registry = FakeRegistry(first_id=100)
    assert registry.register("a-value", V1) == 100
    assert registry.register("b-value", V1) == 100
    assert registry.register("a-value", V2) == 101
    assert registry.register("c-value", SchemaText(V1.schema, "JSON")) == 102  # another type: another schema
    assert registry.versions_of(100) == [SubjectVersion("a-value", 1), SubjectVersion("b-value", 1)]
    assert registry.schema(101) == V2
    assert registry.schema(7) is None
    assert registry.versions_of(7) == []


def test_register_is_idempotent_and_versions_count_from_1() -> None:
    registry = FakeRegistry()
    first, second = registry.register("s", V1), registry.register("s", V2)
    assert registry.register("s", V1) == first  # version 1 again after version 2: no new version
    assert registry.versions("s") == [1, 2]
    assert registry.version("s", 2) == (second, V2)
    assert registry.lookup("s", V1) == (first, 1)
    assert registry.lookup("s", SchemaText('"string"')) is None
    assert registry.lookup("other", V1) is None
    assert registry.versions("other") == []
    assert registry.subjects() == ["s"]
    with pytest.raises(SchemaRegistryError, match="no version 3 of subject 's'"):
        registry.version("s", 3)


def test_references_must_be_held_and_are_part_of_the_schema() -> None:
    registry = FakeRegistry()
    ref = SchemaReference("ex.Address", "ex.Address", 1)
    person = SchemaText('{"type":"record","name":"P","fields":[{"name":"a","type":"ex.Address"}]}', "AVRO", (ref,))
    with pytest.raises(SchemaRegistryError, match=r"version 1 of subject 'ex\.Address'"):
        registry.register("p-value", person)
    registry.register("ex.Address", SchemaText('{"type":"record","name":"Address","fields":[]}'))
    person_id = registry.register("p-value", person)
    assert registry.schema(person_id) == person
    assert registry.register("p-value", SchemaText(person.schema)) != person_id  # same text, no references


def test_compatibility_is_none_until_set() -> None:
    registry = FakeRegistry()
    assert registry.compatibility("s") is None
    registry.set_compatibility("s", "FULL")
    assert registry.compatibility("s") == "FULL"


def test_refuse_makes_register_a_conflict_and_down_makes_every_call_fail() -> None:
    registry = FakeRegistry(refuse=lambda subject, schema: subject == "locked")
    with pytest.raises(SchemaSubjectConflictError, match="'locked'"):
        registry.register("locked", V1)
    assert registry.versions("locked") == []
    registry.register("open", V1)
    registry.down = True
    with pytest.raises(SchemaRegistryError) as e:
        registry.subjects()
    assert e.value.retriable


def test_calls_are_counted_per_method() -> None:
    registry = FakeRegistry()
    registry.register("s", V1)
    registry.register("s", V1)
    registry.schema(1)
    assert registry.calls == {"register": 2, "schema": 1}
    assert registry.name == "http://fake-registry"
