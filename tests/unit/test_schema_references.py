"""Schemas are registered after the schemas they reference (#39): a topological order, a cycle named."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mirrorspark.core.schemas import SubjectVersion, registration_order
from mirrorspark.errors import SchemaReferenceCycleError

pytestmark = pytest.mark.unit

V = SubjectVersion


def test_references_go_first() -> None:
    order = registration_order(
        {
            V("orders-value", 1): [V("com.acme.Address", 1), V("com.acme.Money", 2)],
            V("com.acme.Address", 1): [V("com.acme.Country", 1)],
        }
    )
    assert order == [
        V("com.acme.Country", 1),
        V("com.acme.Address", 1),
        V("com.acme.Money", 2),
        V("orders-value", 1),
    ]


def test_a_subjects_versions_go_in_ascending_order() -> None:
    order = registration_order(
        {V("orders-value", 2): [V("money", 1)], V("orders-value", 1): [], V("money", 2): [V("orders-value", 1)]}
    )
    assert order.index(V("orders-value", 1)) < order.index(V("orders-value", 2))
    assert order.index(V("money", 1)) < order.index(V("money", 2))
    assert order.index(V("money", 1)) < order.index(V("orders-value", 2))
    assert order.index(V("orders-value", 1)) < order.index(V("money", 2))


def test_the_order_is_deterministic_and_sorted_where_free() -> None:
    refs = {V("b", 1): [], V("a", 1): [], V("c", 1): []}
    assert registration_order(refs) == [V("a", 1), V("b", 1), V("c", 1)]


def test_nothing_to_register() -> None:
    assert registration_order({}) == []


def test_a_self_reference_is_no_cycle() -> None:
    assert registration_order({V("a", 1): [V("a", 1)]}) == [V("a", 1)]


def test_a_cycle_names_its_subjects() -> None:
    refs = {
        V("a", 1): [V("b", 1)],
        V("b", 1): [V("c", 1)],
        V("c", 1): [V("a", 1)],
        V("d", 1): [V("a", 1)],  # blocked by the cycle, not in it
    }
    with pytest.raises(SchemaReferenceCycleError) as e:  # "->": needs
        registration_order(refs)
    message = str(e.value)
    assert "a version 1 -> b version 1 -> c version 1 -> a version 1" in message
    assert "4 versions cannot be registered" in message
    assert "d version 1" not in message
    assert e.value.code == "SCHEMA_REFERENCE_CYCLE" and e.value.fatal


def test_a_cycle_through_a_subjects_version_order_is_named_too() -> None:
    # a1 references b2, b1 references a2: b1 < b2 < a1 < a2 < b1, impossible in a real registry's history
    with pytest.raises(SchemaReferenceCycleError, match=r"a version 1 -> b version 2 -> b version 1 -> a version 2"):
        registration_order({V("a", 1): [V("b", 2)], V("b", 1): [V("a", 2)]})


NODES = st.tuples(st.sampled_from("abcdef"), st.integers(1, 4)).map(lambda t: V(*t))


@st.composite
def acyclic(draw: st.DrawFn) -> dict[SubjectVersion, list[SubjectVersion]]:
    """References as a registry makes them: each version references only versions registered before it."""
    history = draw(st.lists(NODES, unique=True, max_size=15))
    history.sort(key=lambda v: v.version)  # a subject's versions registered in order
    refs: dict[SubjectVersion, list[SubjectVersion]] = {}
    for i, version in enumerate(history):
        earlier = history[:i]
        refs[version] = draw(st.lists(st.sampled_from(earlier), unique=True, max_size=3)) if earlier else []
    return refs


@given(refs=acyclic())
def test_every_reference_and_earlier_version_comes_first(refs: dict[SubjectVersion, list[SubjectVersion]]) -> None:
    order = registration_order(refs)
    assert sorted(order) == sorted(refs)
    position = {v: i for i, v in enumerate(order)}
    for version, referenced in refs.items():
        assert all(position[r] < position[version] for r in referenced)
    for a in order:
        for b in order:
            if a.subject == b.subject and a.version < b.version:
                assert position[a] < position[b]
