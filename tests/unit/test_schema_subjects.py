"""Subjects follow the replication policy (#39): topic subjects renamed as their topic, record-name subjects kept."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mirrorspark.core.schemas import (
    SubjectName,
    SubjectNameStrategy,
    UnmatchedSubjects,
    classify_subject,
    is_fullname,
    target_subject,
)
from mirrorspark.mm2.policy import DefaultReplicationPolicy, IdentityReplicationPolicy, ReplicationPolicy

pytestmark = pytest.mark.unit

TOPICS = {"orders", "my-orders", "payments.eu", "foo-key"}
DEFAULT = DefaultReplicationPolicy()
IDENTITY = IdentityReplicationPolicy(source_cluster_alias="east")
S = SubjectNameStrategy


def target(subject: str, policy: ReplicationPolicy = DEFAULT, **kw: object) -> str | None:
    return target_subject(subject, topics=TOPICS, source_alias="east", policy=policy, **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("subject", "expected"),
    [
        ("orders-value", SubjectName("orders-value", S.TOPIC_NAME, "orders", "-value")),
        ("orders-key", SubjectName("orders-key", S.TOPIC_NAME, "orders", "-key")),
        ("my-orders-value", SubjectName("my-orders-value", S.TOPIC_NAME, "my-orders", "-value")),
        ("foo-key-value", SubjectName("foo-key-value", S.TOPIC_NAME, "foo-key", "-value")),
        ("payments.eu-key", SubjectName("payments.eu-key", S.TOPIC_NAME, "payments.eu", "-key")),
        (
            "orders-com.acme.Order",
            SubjectName("orders-com.acme.Order", S.TOPIC_RECORD_NAME, "orders", "-com.acme.Order"),
        ),
        ("my-orders-Order", SubjectName("my-orders-Order", S.TOPIC_RECORD_NAME, "my-orders", "-Order")),
        ("com.acme.Order", SubjectName("com.acme.Order", S.RECORD_NAME)),
        ("Order", SubjectName("Order", S.RECORD_NAME)),
        ("invoices-value", SubjectName("invoices-value", S.OTHER)),  # a topic the flow does not replicate
        ("invoices-com.acme.Invoice", SubjectName("invoices-com.acme.Invoice", S.OTHER)),
        ("orders-v2-value", SubjectName("orders-v2-value", S.OTHER)),  # topic orders-v2 is not replicated
        ("orders-My Title", SubjectName("orders-My Title", S.OTHER)),  # a JSON Schema title is no full name
        (":.ctx:orders-value", SubjectName(":.ctx:orders-value", S.OTHER)),  # a Confluent context
        ("orders", SubjectName("orders", S.RECORD_NAME)),  # a record named like the topic
    ],
)
def test_classification(subject: str, expected: SubjectName) -> None:
    assert classify_subject(subject, TOPICS) == expected


def test_a_key_or_value_suffix_is_topic_name_strategy_never_a_record_named_key() -> None:
    assert classify_subject("orders-key", {"orders"}).strategy is S.TOPIC_NAME
    assert classify_subject("orders-value", {"orders"}).strategy is S.TOPIC_NAME


@pytest.mark.parametrize(
    ("subject", "expected"),
    [
        ("orders-value", "east.orders-value"),
        ("orders-key", "east.orders-key"),
        ("my-orders-value", "east.my-orders-value"),
        ("payments.eu-value", "east.payments.eu-value"),
        ("orders-com.acme.Order", "east.orders-com.acme.Order"),
        ("com.acme.Order", "com.acme.Order"),
        ("invoices-value", None),
    ],
)
def test_default_policy_prefixes_topic_subjects(subject: str, expected: str | None) -> None:
    assert target(subject) == expected


@pytest.mark.parametrize("subject", ["orders-value", "orders-key", "orders-com.acme.Order", "com.acme.Order"])
def test_identity_policy_keeps_every_subject_name(subject: str) -> None:
    assert target(subject, IDENTITY) == subject


@pytest.mark.parametrize(
    ("separator", "expected"), [("_", "east_orders-value"), ("__", "east__orders-value"), ("-", "east-orders-value")]
)
def test_a_custom_separator_names_subjects_as_it_names_topics(separator: str, expected: str) -> None:
    policy = DefaultReplicationPolicy(separator=separator)
    assert target("orders-value", policy) == expected
    assert target("orders-com.acme.Order", policy) == expected.replace("-value", "-com.acme.Order")
    assert target("com.acme.Order", policy) == "com.acme.Order"


def test_a_topic_replicated_twice_gets_both_aliases() -> None:
    assert (
        target_subject("west.orders-value", topics={"west.orders"}, source_alias="east", policy=DEFAULT)
        == "east.west.orders-value"
    )


def test_a_heartbeats_subject_follows_the_identity_policy_exception() -> None:
    assert target_subject("heartbeats-value", topics={"heartbeats"}, source_alias="east", policy=IDENTITY) == (
        "east.heartbeats-value"
    )


def test_subjects_of_no_strategy_are_kept_or_skipped_as_asked() -> None:
    assert target("invoices-value") is None
    assert target("invoices-value", unmatched=UnmatchedSubjects.SKIP) is None
    assert target("invoices-value", unmatched=UnmatchedSubjects.KEEP) == "invoices-value"
    assert target("com.acme.Order", unmatched=UnmatchedSubjects.SKIP) == "com.acme.Order"  # RecordNameStrategy


def test_the_records_own_topic_is_enough() -> None:
    assert (
        target_subject("orders-value", topics=("orders",), source_alias="east", policy=DEFAULT) == "east.orders-value"
    )
    assert target_subject("orders-value", topics=("payments",), source_alias="east", policy=DEFAULT) is None


@pytest.mark.parametrize("name", ["a", "_a", "A1", "com.acme.Order", "a.b_c.D9", "Outer.Inner"])
def test_full_names(name: str) -> None:
    assert is_fullname(name)


@pytest.mark.parametrize("name", ["", "1a", "a.", ".a", "a..b", "a-b", "a b", "a.1b", "é"])
def test_not_full_names(name: str) -> None:
    assert not is_fullname(name)


TOPIC = st.from_regex(r"[A-Za-z0-9._-]{1,20}", fullmatch=True)
FULLNAME = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,8}(\.[A-Za-z_][A-Za-z0-9_]{0,8}){0,3}", fullmatch=True)


@given(topic=TOPIC, suffix=st.sampled_from(["-key", "-value"]), separator=st.sampled_from([".", "_", "--"]))
def test_topic_name_subjects_are_renamed_as_their_topic(topic: str, suffix: str, separator: str) -> None:
    policy = DefaultReplicationPolicy(separator=separator)
    remote = policy.format_remote_topic("east", topic)
    assert target_subject(topic + suffix, topics={topic}, source_alias="east", policy=policy) == remote + suffix


@given(topic=TOPIC, record=FULLNAME)
def test_topic_record_name_subjects_are_renamed_as_their_topic(topic: str, record: str) -> None:
    subject = f"{topic}-{record}"
    name = classify_subject(subject, {topic})
    if record in ("key", "value"):
        assert name.strategy is S.TOPIC_NAME
    else:
        assert name == SubjectName(subject, S.TOPIC_RECORD_NAME, topic, f"-{record}")
    assert target_subject(subject, topics={topic}, source_alias="east", policy=DEFAULT) == f"east.{topic}-{record}"


@given(record=FULLNAME, topics=st.sets(TOPIC, max_size=5))
def test_record_name_subjects_are_kept(record: str, topics: set[str]) -> None:
    assert target_subject(record, topics=topics, source_alias="east", policy=DEFAULT) == record


@given(subject=st.text(max_size=30), topics=st.sets(TOPIC, max_size=5))
def test_the_identity_policy_never_renames(subject: str, topics: set[str]) -> None:
    out = target_subject(subject, topics=topics, source_alias="east", policy=IDENTITY, unmatched=UnmatchedSubjects.KEEP)
    assert out == subject or "heartbeats" in subject
