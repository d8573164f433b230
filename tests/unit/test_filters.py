"""Filters and the source connector's topic rule: mm2.md §2.6 and §3.4."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mirrorspark.errors import BadRegexError, ConfigError
from mirrorspark.mm2.filters import (
    DEFAULT_CONFIG_PROPERTIES_EXCLUDE,
    DEFAULT_GROUPS_EXCLUDE,
    DEFAULT_TOPICS_EXCLUDE,
    ConfigPropertyFilter,
    DefaultConfigPropertyFilter,
    DefaultGroupFilter,
    DefaultTopicFilter,
    GroupFilter,
    TopicFilter,
    compile_list,
    should_replicate_topic,
)
from mirrorspark.mm2.policy import DefaultReplicationPolicy, IdentityReplicationPolicy

pytestmark = pytest.mark.unit

DEFAULT = DefaultReplicationPolicy()


def test_defaults_are_mm2s() -> None:
    assert DEFAULT_TOPICS_EXCLUDE == (r".*[\-\.]internal", r".*\.replica", "__.*")
    assert DEFAULT_GROUPS_EXCLUDE == ("console-consumer-.*", "connect-.*", "__.*")
    assert DEFAULT_CONFIG_PROPERTIES_EXCLUDE == (
        r"follower\.replication\.throttled\.replicas",
        r"leader\.replication\.throttled\.replicas",
        r"message\.timestamp\.difference\.max\.ms",
        r"message\.timestamp\.type",
        r"unclean\.leader\.election\.enable",
        r"min\.insync\.replicas",
    )


def test_filters_implement_protocols() -> None:
    assert isinstance(DefaultTopicFilter(), TopicFilter)
    assert isinstance(DefaultGroupFilter(), GroupFilter)
    assert isinstance(DefaultConfigPropertyFilter(), ConfigPropertyFilter)


# --------------------------------------------------------------------------- compile_list


def test_compile_list_joins_with_pipe() -> None:
    pattern = compile_list(["topic1", "app-.*"], key="topics")
    assert pattern is not None
    assert pattern.pattern == "topic1|app-.*"


def test_compile_list_empty_matches_nothing() -> None:
    assert compile_list([], key="topics") is None


def test_compile_list_items_may_share_a_group_across_commas() -> None:
    # MM2 compiles the joined string, so "(a" and "b)" together are the valid "(a|b)".
    pattern = compile_list(["(a", "b)"], key="topics")
    assert pattern is not None
    assert pattern.fullmatch("a")
    assert pattern.fullmatch("b")


def test_compile_list_bad_regex_names_key_and_item() -> None:
    with pytest.raises(BadRegexError) as info:
        compile_list(["good.*", "bad[", "also-good"], key="topics.exclude")
    message = str(info.value)
    assert "topics.exclude" in message
    assert "'bad['" in message
    assert "fix or remove it" in message
    assert info.value.code == "CONFIG_BAD_REGEX"
    assert isinstance(info.value, ConfigError)
    assert isinstance(info.value, ValueError)


def test_compile_list_rejects_a_plain_string() -> None:
    with pytest.raises(TypeError, match="topics"):
        compile_list("a,b", key="topics")


def test_java_style_possessive_and_atomic_work() -> None:
    pattern = compile_list(["a*+b", "(?>c|cd)e"], key="topics")
    assert pattern is not None
    assert pattern.fullmatch("aaab")
    assert pattern.fullmatch("ce")


def test_character_classes_are_ascii_like_java() -> None:
    pattern = compile_list([r"(?i)x", r"\w+"], key="groups")
    assert pattern is not None
    assert pattern.fullmatch("group_1")
    assert pattern.fullmatch("X")
    assert not pattern.fullmatch("grüppe")


def test_inline_flags_mid_list_get_a_hint() -> None:
    with pytest.raises(BadRegexError, match=r"scoped group"):
        compile_list([r"\w+", r"(?i)x"], key="groups")
    pattern = compile_list([r"a", r"(?i:x)"], key="groups")
    assert pattern is not None
    assert pattern.fullmatch("X")


# --------------------------------------------------------------------------- DefaultTopicFilter


@pytest.mark.parametrize(
    ("topic", "expected"),
    [
        ("topic1", True),
        ("heartbeats", True),
        ("source1.topic1", True),
        ("foo.internal", False),
        ("foo-internal", False),
        ("mm2-offsets.A.internal", False),
        ("x.replica", False),
        ("__consumer_offsets", False),
        ("_single", True),
        ("internal", True),
    ],
)
def test_default_topic_filter(topic: str, expected: bool) -> None:
    assert DefaultTopicFilter().should_replicate_topic(topic) is expected


def test_topic_filter_full_match() -> None:
    f = DefaultTopicFilter(topics=["topic1", "app-.*"])
    assert f.should_replicate_topic("topic1")
    assert f.should_replicate_topic("app-x")
    assert not f.should_replicate_topic("topic10")
    assert not f.should_replicate_topic("my-topic1")
    assert not f.should_replicate_topic("xapp-x")


def test_topic_filter_empty_lists() -> None:
    assert not DefaultTopicFilter(topics=[]).should_replicate_topic("topic1")
    everything = DefaultTopicFilter(topics_exclude=[])
    assert everything.should_replicate_topic("foo.internal")
    assert everything.should_replicate_topic("__consumer_offsets")


def test_topic_exclude_replaces_defaults() -> None:
    f = DefaultTopicFilter(topics_exclude=["secret.*"])
    assert not f.should_replicate_topic("secret-1")
    assert f.should_replicate_topic("foo.internal")


def test_topic_filter_bad_regex_names_prefixed_key() -> None:
    with pytest.raises(BadRegexError, match=r"A->B\.topics\.exclude") as info:
        DefaultTopicFilter(topics_exclude=["*"], key_prefix="A->B.")
    assert "'*'" in str(info.value)
    with pytest.raises(BadRegexError, match=r"^topics: "):
        DefaultTopicFilter(topics=["(unclosed"])


def test_topic_filter_repr() -> None:
    assert repr(DefaultTopicFilter(topics=["a"], topics_exclude=[])) == (
        "DefaultTopicFilter(topics=('a',), topics_exclude=())"
    )


# --------------------------------------------------------------------------- DefaultGroupFilter


@pytest.mark.parametrize(
    ("group", "expected"),
    [
        ("app-group", True),
        ("console-consumer-12345", False),
        ("connect-my-connector", False),
        ("__internal", False),
        ("my-console-consumer-1", True),
    ],
)
def test_default_group_filter(group: str, expected: bool) -> None:
    assert DefaultGroupFilter().should_replicate_group(group) is expected


def test_group_filter_lists() -> None:
    assert not DefaultGroupFilter(groups=[]).should_replicate_group("g")
    f = DefaultGroupFilter(groups=["app-.*"], groups_exclude=[])
    assert f.should_replicate_group("app-1")
    assert not f.should_replicate_group("other")
    with pytest.raises(BadRegexError, match=r"groups\.exclude"):
        DefaultGroupFilter(groups_exclude=["+x"])


# --------------------------------------------------------------------------- DefaultConfigPropertyFilter


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("retention.ms", True),
        ("cleanup.policy", True),
        ("min.insync.replicas", False),
        ("unclean.leader.election.enable", False),
        ("message.timestamp.type", False),
        ("message.timestamp.difference.max.ms", False),
        ("follower.replication.throttled.replicas", False),
        ("leader.replication.throttled.replicas", False),
        ("minXinsyncXreplicas", True),  # the dots are escaped
    ],
)
def test_default_config_property_filter(name: str, expected: bool) -> None:
    assert DefaultConfigPropertyFilter().should_replicate_config_property(name) is expected


def test_config_property_exclude_replaces_defaults() -> None:
    f = DefaultConfigPropertyFilter(exclude=[r"retention\..*"])
    assert not f.should_replicate_config_property("retention.ms")
    assert f.should_replicate_config_property("min.insync.replicas")
    assert DefaultConfigPropertyFilter(exclude=[]).should_replicate_config_property("min.insync.replicas")


def test_use_defaults_from() -> None:
    assert not DefaultConfigPropertyFilter().should_replicate_source_default("retention.ms")
    assert DefaultConfigPropertyFilter(use_defaults_from="source").should_replicate_source_default("x")
    assert not DefaultConfigPropertyFilter(use_defaults_from="target").should_replicate_source_default("x")
    with pytest.raises(ConfigError, match=r"use\.defaults\.from"):
        DefaultConfigPropertyFilter(use_defaults_from="Source")


def test_config_property_filter_bad_regex() -> None:
    with pytest.raises(BadRegexError, match=r"config\.properties\.exclude"):
        DefaultConfigPropertyFilter(exclude=["["])


# --------------------------------------------------------------------------- should_replicate_topic


def _replicates(
    topic: str,
    *,
    topic_filter: TopicFilter | None = None,
    policy: DefaultReplicationPolicy = DEFAULT,
    heartbeats: bool = True,
) -> bool:
    return should_replicate_topic(
        topic,
        topic_filter=topic_filter or DefaultTopicFilter(),
        policy=policy,
        target_alias="target",
        heartbeats_replication_enabled=heartbeats,
    )


def test_heartbeats_replicated_even_if_filter_rejects() -> None:
    only_orders = DefaultTopicFilter(topics=["orders"])
    assert _replicates("heartbeats", topic_filter=only_orders)
    assert _replicates("X.heartbeats", topic_filter=only_orders)
    assert _replicates("X.Y.heartbeats", topic_filter=only_orders)
    assert not _replicates("payments", topic_filter=only_orders)
    assert _replicates("orders", topic_filter=only_orders)


def test_heartbeats_replication_can_be_disabled() -> None:
    only_orders = DefaultTopicFilter(topics=["orders"])
    assert not _replicates("heartbeats", topic_filter=only_orders, heartbeats=False)
    # Still replicated when the filter itself accepts it.
    assert _replicates("heartbeats", heartbeats=False)


def test_custom_separator_decides_heartbeats() -> None:
    only_orders = DefaultTopicFilter(topics=["orders"])
    policy = DefaultReplicationPolicy(separator="__")
    assert _replicates("X__heartbeats", topic_filter=only_orders, policy=policy)
    assert not _replicates("X.heartbeats", topic_filter=only_orders, policy=policy)


def test_internal_topics_never_replicated() -> None:
    accept_all = DefaultTopicFilter(topics_exclude=[])
    for topic in (
        "__consumer_offsets",
        ".hidden",
        "mm2-offset-syncs.target.internal",
        "A.checkpoints.internal",
    ):
        assert not _replicates(topic, topic_filter=accept_all)
    # Kafka 4.x: user topics that only look internal pass when the filter allows them...
    assert _replicates("foo.internal", topic_filter=accept_all)
    assert _replicates("foo-internal", topic_filter=accept_all)
    # ...and the default topics.exclude still keeps them out.
    assert not _replicates("foo.internal")


@pytest.mark.parametrize(
    ("topic", "expected"),
    [
        ("target.topic1", False),
        ("target.source.topic1", False),
        ("source.target.topic1", False),
        ("target.source.target.topic1", False),
        ("source.target.source.topic1", False),
        ("topic1", True),
        ("source.topic1", True),
        ("target.heartbeats", False),
    ],
)
def test_cycles_never_replicated(topic: str, expected: bool) -> None:
    assert _replicates(topic) is expected


def test_identity_policy_heartbeat_cycle() -> None:
    policy = IdentityReplicationPolicy(source_cluster_alias="source")
    assert _replicates("topic1", policy=policy)
    assert _replicates("source.heartbeats", policy=policy)
    assert not _replicates("target.heartbeats", policy=policy)


@given(
    st.lists(st.from_regex(r"[a-z]{1,3}(\.\*)?", fullmatch=True), max_size=4),
    st.from_regex(r"[a-z.]{0,6}", fullmatch=True),
)
def test_filter_agrees_with_any_fullmatch(patterns: list[str], topic: str) -> None:
    f = DefaultTopicFilter(topics=patterns, topics_exclude=[])
    expected = any(re.fullmatch(p, topic) for p in patterns)
    assert f.should_replicate_topic(topic) is expected
