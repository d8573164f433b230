"""core.schemas.copier on two in-memory registries (tests/fakes.py FakeRegistry): invariants S1-S5."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from fakes import FakeRegistry
from mirrorspark.core.schemas.copier import ReplicatedTopics, SchemaCopier, SubjectNaming
from mirrorspark.core.schemas.registry import SchemaReference, SchemaText
from mirrorspark.errors import SchemaReferenceCycleError, SchemaSubjectConflictError
from mirrorspark.mm2.filters import DefaultTopicFilter
from mirrorspark.mm2.policy import DefaultReplicationPolicy

pytestmark = pytest.mark.unit


def avro(name: str, *fields: str) -> SchemaText:
    return SchemaText(
        json.dumps({"type": "record", "name": name, "fields": [{"name": f, "type": "int"} for f in fields]})
    )


def pair(*, first_target_id: int = 500) -> tuple[FakeRegistry, FakeRegistry, SchemaCopier]:
    source, target = FakeRegistry("source"), FakeRegistry("target", first_id=first_target_id)
    naming = SubjectNaming("east", DefaultReplicationPolicy(), ReplicatedTopics(DefaultTopicFilter(topics=["orders"])))
    return source, target, SchemaCopier(source, target, naming)


def test_s1_versions_are_registered_in_the_sources_order_before_the_one_asked_for() -> None:
    source, target, copier = pair()
    ids = [source.register("orders-value", avro("Order", *[f"f{j}" for j in range(i + 1)])) for i in range(4)]
    # a record carries version 3's id first: versions 1 and 2 go before it, 4 is not needed yet
    t3 = copier.target_id(ids[2], "east.orders-value")
    assert target.versions("east.orders-value") == [1, 2, 3]
    assert target.version("east.orders-value", 3) == (t3, source.version("orders-value", 3)[1])
    assert [target.version("east.orders-value", v)[1] for v in (1, 2)] == [
        source.version("orders-value", v)[1] for v in (1, 2)
    ]
    copied = copier.copy_subject("orders-value")
    assert copied is not None and copied.target_subject == "east.orders-value" and copied.registered == 1
    assert target.versions("east.orders-value") == [1, 2, 3, 4]


def test_s1_references_are_registered_first_under_their_target_names() -> None:
    source, target, copier = pair()
    source.register("com.acme.Address", avro("com.acme.Address", "zip"))
    order = SchemaText(
        json.dumps({"type": "record", "name": "Order", "fields": [{"name": "a", "type": "com.acme.Address"}]}),
        references=(SchemaReference("com.acme.Address", "com.acme.Address", 1),),
    )
    sid = source.register("orders-value", order)
    tid = copier.target_id(sid, "east.orders-value")
    assert tid is not None
    held = target.schema(tid)
    assert held is not None and held.references == (SchemaReference("com.acme.Address", "com.acme.Address", 1),)
    assert target.versions("com.acme.Address") == [1]


def test_s2_an_id_is_returned_only_once_the_target_holds_the_schema() -> None:
    source, target, copier = pair()
    sid = source.register("orders-value", avro("Order", "id"))
    tid = copier.target_id(sid, "east.orders-value")
    assert tid is not None and tid != sid
    assert target.schema(tid) == source.schema(sid)
    calls = sum(source.calls.values()) + sum(target.calls.values())
    assert copier.target_id(sid, "east.orders-value") == tid  # cached: no registry call
    assert sum(source.calls.values()) + sum(target.calls.values()) == calls


def test_s2_a_registry_down_raises_and_nothing_is_cached() -> None:
    source, target, copier = pair()
    sid = source.register("orders-value", avro("Order", "id"))
    target.down = True
    with pytest.raises(Exception, match="cannot be reached"):
        copier.target_id(sid, "east.orders-value")
    target.down = False
    assert copier.target_id(sid, "east.orders-value") is not None


def test_s3_a_target_subject_with_versions_of_its_own_is_never_written() -> None:
    source, target, copier = pair()
    target.register("east.orders-value", avro("Foreign", "x"))
    sid = source.register("orders-value", avro("Order", "id"))
    with pytest.raises(SchemaSubjectConflictError, match=r"east\.orders-value") as e:
        copier.target_id(sid, "east.orders-value")
    assert "orders-value" in str(e.value) and "DELETE /subjects/east.orders-value" in str(e.value)
    assert target.versions("east.orders-value") == [1]


def test_s3_a_version_the_target_refuses_is_a_conflict_naming_both_subjects() -> None:
    source, target, copier = pair()
    target.refuse = lambda subject, schema: "f1" in schema.schema
    source.register("orders-value", avro("Order", "f0"))
    source.register("orders-value", avro("Order", "f0", "f1"))
    with pytest.raises(SchemaSubjectConflictError, match="version 2 of source subject 'orders-value'"):
        copier.copy_subject("orders-value")
    assert target.versions("east.orders-value") == [1]


def test_s4_a_second_copier_registers_nothing_the_target_holds() -> None:
    source, target, copier = pair()
    ids = [source.register("orders-value", avro("Order", *[f"f{j}" for j in range(i + 1)])) for i in range(3)]
    copier.copy_subject("orders-value")
    again = SchemaCopier(source, target, copier.naming)  # a task started later, or the driver's next run
    assert [again.target_id(i, "east.orders-value") for i in ids] == [copier.target_id(i, "x") for i in ids]
    assert again.registered == 0 and target.versions("east.orders-value") == [1, 2, 3]
    assert again.copy_subject("orders-value") == copier.copy_subject("orders-value")


def test_s5_an_unknown_id_is_none_and_registers_nothing() -> None:
    _, target, copier = pair()
    assert copier.target_id(4242, "east.orders-value") is None
    assert target.subjects() == [] and copier.registered == 0


def test_subjects_follow_the_policy_and_levels_are_carried() -> None:
    source, target, copier = pair()
    source.register("orders-key", SchemaText('"string"'))
    source.register("orders-com.acme.Order", avro("com.acme.Order", "id"))
    source.register("com.acme.Shared", avro("com.acme.Shared", "id"))
    source.register("billing-value", avro("Bill", "id"))  # a topic the flow does not replicate
    source.set_compatibility("orders-key", "FULL")
    names = {s: copier.copy_subject(s) for s in source.subjects()}
    assert {s: c.target_subject for s, c in names.items() if c} == {
        "orders-key": "east.orders-key",
        "orders-com.acme.Order": "east.orders-com.acme.Order",
        "com.acme.Shared": "com.acme.Shared",
    }
    assert names["billing-value"] is None
    assert target.compatibility("east.orders-key") == "FULL"


def test_an_id_under_no_copied_subject_goes_under_the_records_own_subject() -> None:
    source, target, copier = pair()
    sid = source.register("billing-value", avro("Bill", "id"))  # not a replicated topic's: kept by name
    tid = copier.target_id(sid, "east.orders-value")
    assert tid is not None and target.versions("billing-value") == [1]


def test_references_in_a_cycle_are_an_error_naming_them() -> None:
    source, _, copier = pair()
    a = SchemaText("a", references=(SchemaReference("B", "com.B", 1),))
    source.by_id[90] = a  # the fake refuses a reference it does not hold, so the cycle is written directly
    source.subject_ids["com.A"] = [90]
    source.ids[a] = 90
    b = SchemaText("b", references=(SchemaReference("A", "com.A", 1),))
    source.by_id[91] = b
    source.subject_ids["com.B"] = [91]
    source.ids[b] = 91
    with pytest.raises(SchemaReferenceCycleError, match=r"com\.A version 1"):
        copier.copy_subject("com.A")


def test_s1_the_next_version_of_a_held_subject_is_one_registration() -> None:
    source, target, copier = pair()
    first = source.register("orders-value", avro("Order", "a"))
    copier.target_id(first, "east.orders-value")
    second = source.register("orders-value", avro("Order", "a", "b"))
    before = Counter(target.calls)
    tid = copier.target_id(second, "east.orders-value")
    assert Counter(target.calls) - before == Counter({"register": 1})  # no lookup, no walk of the subject
    assert target.versions("east.orders-value") == [1, 2] and target.version("east.orders-value", 2)[0] == tid
