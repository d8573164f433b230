"""RegistryClient against a real Apicurio Registry 3.3.3 (``/apis/ccompat/v7``): Confluent's semantics hold.

One registry for the module (a JVM on Java 21+, in-memory, ready in a few seconds); subjects are unique per test.
(a)-(e) are the questions of ``mirrorspark.registry.client``'s notes. A client caches registrations and schemas,
so what the registry itself answers is read through a fresh client (:func:`fresh`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient
from helpers import unique_name

from mirrorspark.config.schema_registry import SchemaRegistrySettings
from mirrorspark.core.schemas.registry import SchemaReference, SchemaText, SubjectVersion
from mirrorspark.errors import SchemaRegistryError, SchemaSubjectConflictError
from mirrorspark.kafka.local.model import LocalSchemaRegistry
from mirrorspark.kafka.local.registry import start_registries, stop_registries
from mirrorspark.registry import RegistryClient

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalSchemaRegistry]:
    """One running Apicurio Registry."""
    base_dir: Path = tmp_path_factory.mktemp("registry")
    started = start_registries(["sr"], base_dir=base_dir)
    try:
        yield started["sr"]
    finally:
        stop_registries(started.values())


def fresh(registry: LocalSchemaRegistry) -> RegistryClient:
    """A new client (no cache) of ``registry``."""
    return RegistryClient.from_settings(SchemaRegistrySettings(urls=(registry.url,), properties={}), alias="sr")


@pytest.fixture
def client(registry: LocalSchemaRegistry) -> Iterator[RegistryClient]:
    c = fresh(registry)
    yield c
    c.close()


def compact(schema: SchemaText) -> SchemaText:
    """``schema`` (JSON text) without whitespace, as Apicurio gives back an Avro schema without references."""
    text = json.dumps(json.loads(schema.schema), separators=(",", ":"))
    return SchemaText(text, schema.schema_type, schema.references)


def record(name: str, *fields: str, namespace: str = "ex") -> SchemaText:
    """An Avro record schema with ``fields`` (strings, with defaults, so that each version is compatible)."""
    body = [{"name": f, "type": "string", "default": ""} for f in fields]
    return SchemaText(json.dumps({"type": "record", "name": name, "namespace": namespace, "fields": body}))


def test_a_re_registered_version_1_keeps_its_id_and_adds_no_version(registry: LocalSchemaRegistry) -> None:  # (a)
    subject = unique_name("orders") + "-value"
    v1, v2 = record("Order", "a"), record("Order", "a", "b")
    with fresh(registry) as first:
        id1, id2 = first.register(subject, v1), first.register(subject, v2)
    with fresh(registry) as again:
        assert again.register(subject, v1) == id1
        assert again.versions(subject) == [1, 2]
        assert again.lookup(subject, v1) == (id1, 1)
        assert again.version(subject, 2) == (id2, compact(v2))  # Avro without references: compacted
        assert again.register(subject, v2) == id2
        assert again.versions(subject) == [1, 2]


def test_the_versions_of_an_id_and_the_same_schema_under_two_subjects(client: RegistryClient) -> None:  # (b), (e)
    a, b = unique_name("a") + "-value", unique_name("b") + "-value"
    schema = record(unique_name("Shared").replace("-", "_"), "x")
    schema_id = client.register(a, schema)
    assert client.versions_of(schema_id) == [SubjectVersion(a, 1)]
    assert client.register(b, schema) == schema_id
    assert sorted(client.versions_of(schema_id)) == [SubjectVersion(a, 1), SubjectVersion(b, 1)]
    assert client.schema(schema_id) == compact(schema)
    spaced = SchemaText(json.dumps(json.loads(schema.schema), indent=2))
    assert client.register(a, spaced) == schema_id  # the subject holds it: the same schema
    assert client.versions(a) == [1]
    assert client.register(unique_name("c"), spaced) != schema_id  # elsewhere: Apicurio's content id of the text
    assert a in client.subjects() and b in client.subjects()


def test_unknown_ids_and_subjects_are_normal_outcomes(client: RegistryClient) -> None:
    subject = unique_name("nothing")
    assert client.schema(987_654) is None
    assert client.versions_of(987_654) == []
    assert client.versions(subject) == []
    assert client.lookup(subject, record("X")) is None
    assert client.compatibility(subject) is None
    with pytest.raises(SchemaRegistryError, match=f"version 1 of subject '{subject}'"):
        client.version(subject, 1)


def test_compatibility_is_the_subjects_own_level(registry: LocalSchemaRegistry, client: RegistryClient) -> None:  # (c)
    unset, full, none = (unique_name(n) + "-value" for n in ("unset", "full", "none"))
    for subject in (unset, full, none):
        client.register(subject, record("C", "x"))
    client.set_compatibility(full, "FULL")
    client.set_compatibility(none, "NONE")
    admin = SchemaRegistryClient({"url": registry.url})
    admin.set_compatibility(level="BACKWARD")  # the global level
    try:
        assert client.compatibility(unset) is None  # Apicurio answers NONE, not its global BACKWARD
        assert client.compatibility(full) == "FULL"
        assert client.compatibility(none) == "NONE"
    finally:
        admin.set_compatibility(level="NONE")  # Apicurio's default
        admin.close()
    assert client.compatibility(unset) == "NONE"  # unset under a global NONE: the level in force


def test_an_incompatible_version_is_a_subject_conflict(client: RegistryClient) -> None:
    subject = unique_name("strict") + "-value"
    client.register(subject, record("S", "x"))
    client.set_compatibility(subject, "BACKWARD")
    incompatible = SchemaText(
        json.dumps({"type": "record", "name": "S", "namespace": "ex", "fields": [{"name": "y", "type": "int"}]})
    )
    with pytest.raises(SchemaSubjectConflictError, match=f"subject '{subject}'") as e:
        client.register(subject, incompatible)
    assert client.name in str(e.value)
    assert client.versions(subject) == [1]


def test_avro_protobuf_and_json_schema_references(registry: LocalSchemaRegistry) -> None:  # (d), (e)
    tag = unique_name("r").replace("-", "_")
    address = SchemaText(
        json.dumps(
            {"type": "record", "name": "Address", "namespace": tag, "fields": [{"name": "city", "type": "string"}]}
        )
    )
    money_file = f"{tag}/money.proto"
    money = SchemaText(f'syntax = "proto3";\npackage {tag};\nmessage Money {{ int64 cents = 1; }}\n', "PROTOBUF")
    amount = SchemaText(json.dumps({"type": "object", "properties": {"cents": {"type": "integer"}}}), "JSON")
    with fresh(registry) as writer:
        writer.register(f"{tag}.Address", address)
        writer.register(money_file, money)
        writer.register(f"{tag}-amount.json", amount)
        schemas = {
            f"{tag}-people-value": SchemaText(
                json.dumps(
                    {
                        "type": "record",
                        "name": "Person",
                        "namespace": tag,
                        "fields": [{"name": "home", "type": f"{tag}.Address"}],
                    }
                ),
                "AVRO",
                (SchemaReference(f"{tag}.Address", f"{tag}.Address", 1),),
            ),
            f"{tag}-orders-value": SchemaText(
                f'syntax = "proto3";\npackage {tag};\nimport "{money_file}";\nmessage Order {{ Money total = 1; }}\n',
                "PROTOBUF",
                (SchemaReference(money_file, money_file, 1),),
            ),
            f"{tag}-payments-value": SchemaText(
                json.dumps({"type": "object", "properties": {"total": {"$ref": f"{tag}-amount.json"}}}),
                "JSON",
                (SchemaReference(f"{tag}-amount.json", f"{tag}-amount.json", 1),),
            ),
        }
        ids = {subject: writer.register(subject, schema) for subject, schema in schemas.items()}
    with fresh(registry) as reader:
        for subject, schema in schemas.items():
            assert reader.schema(ids[subject]) == schema, subject
            assert reader.version(subject, 1) == (ids[subject], schema), subject
            assert reader.lookup(subject, schema) == (ids[subject], 1), subject
            copy = subject.replace("-value", "-copy-value")
            assert reader.register(copy, schema) == ids[subject], subject  # (e) with references
            assert reader.versions_of(ids[subject]) == [SubjectVersion(copy, 1), SubjectVersion(subject, 1)]
        people = schemas[f"{tag}-people-value"]
        reader.register(f"{tag}.Address", record("Address", "city", "zip", namespace=tag))
        newer = SchemaText(people.schema, "AVRO", (SchemaReference(f"{tag}.Address", f"{tag}.Address", 2),))
        assert reader.register(f"{tag}-people-value", newer) != ids[f"{tag}-people-value"]  # other references
        assert reader.versions(f"{tag}-people-value") == [1, 2]
        without = SchemaText(people.schema)  # the same text, no references
        with pytest.raises(SchemaRegistryError):
            reader.register(f"{tag}-loose-value", without)  # Apicurio cannot resolve the named type
