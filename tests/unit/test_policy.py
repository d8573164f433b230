"""Replication policies: every example of mm2.md §3 and §13, plus round-trip properties."""

from __future__ import annotations

import sys
import types
from collections.abc import Iterator, Mapping

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from mirrorspark.errors import ConfigError
from mirrorspark.mm2.policy import (
    BaseReplicationPolicy,
    DefaultReplicationPolicy,
    IdentityReplicationPolicy,
    ReplicationPolicy,
    load_policy,
)
from mirrorspark.mm2.topology import (
    checkpoint_topics,
    heartbeat_topics,
    is_cycle,
    remote_topics,
    replication_hops,
    upstream_clusters,
)

pytestmark = pytest.mark.unit

DEFAULT = DefaultReplicationPolicy()


# --------------------------------------------------------------------------- DefaultReplicationPolicy


@pytest.mark.parametrize(
    ("topic", "source", "upstream", "original"),
    [
        ("us-west.topic1", "us-west", "topic1", "topic1"),
        ("a.b.c", "a", "b.c", "c"),
        ("heartbeats", None, None, "heartbeats"),
        ("my.topic", "my", "topic", "topic"),
        ("us-west.", None, None, "us-west."),
        (".b", "", "b", "b"),
        ("a..b", "a", ".b", "b"),
        ("a.b.", "a", "b.", "b."),
        ("..", None, None, ".."),
        (".", None, None, "."),
        ("", None, None, ""),
        ("topic1", None, None, "topic1"),
    ],
)
def test_default_policy_splits_like_java(topic: str, source: str | None, upstream: str | None, original: str) -> None:
    assert DEFAULT.topic_source(topic) == source
    assert DEFAULT.upstream_topic(topic) == upstream
    assert DEFAULT.original_topic(topic) == original


def test_default_policy_format_remote_topic() -> None:
    assert DEFAULT.format_remote_topic("us-west", "topic1") == "us-west.topic1"
    assert DefaultReplicationPolicy(separator="__").format_remote_topic("A", "t") == "A__t"


def test_default_policy_internal_topic_names() -> None:
    assert DEFAULT.heartbeats_topic() == "heartbeats"
    assert DEFAULT.offset_syncs_topic("B") == "mm2-offset-syncs.B.internal"
    assert DEFAULT.checkpoints_topic("A") == "A.checkpoints.internal"


def test_separator_with_internal_separator_enabled() -> None:
    policy = DefaultReplicationPolicy(separator="__", internal_topic_separator_enabled=True)
    assert policy.offset_syncs_topic("CLUSTER") == "mm2-offset-syncs__CLUSTER__internal"
    assert policy.checkpoints_topic("CLUSTER") == "CLUSTER__checkpoints__internal"
    assert policy.heartbeats_topic() == "heartbeats"
    assert policy.is_checkpoints_topic("CLUSTER__checkpoints__internal")
    assert not policy.is_checkpoints_topic("CLUSTER.checkpoints.internal")
    assert policy.is_mm2_internal_topic("mm2-offset-syncs__CLUSTER__internal")
    # Connect's own topics always use ".", so with "__" they are not MM2-internal (as in MM2).
    assert not policy.is_mm2_internal_topic("mm2-offsets.CLUSTER.internal")
    assert policy.topic_source("A__t") == "A"
    assert policy.upstream_topic("A__t") == "t"
    assert policy.topic_source("A.t") is None


def test_separator_with_internal_separator_disabled() -> None:
    policy = DefaultReplicationPolicy(separator="__", internal_topic_separator_enabled=False)
    assert policy.offset_syncs_topic("CLUSTER") == "mm2-offset-syncs.CLUSTER.internal"
    assert policy.checkpoints_topic("CLUSTER") == "CLUSTER.checkpoints.internal"
    assert policy.heartbeats_topic() == "heartbeats"
    assert policy.is_checkpoints_topic("CLUSTER.checkpoints.internal")
    assert policy.is_mm2_internal_topic("mm2-offsets.CLUSTER.internal")
    # The remote-topic separator is still "__".
    assert policy.format_remote_topic("A", "t") == "A__t"


def test_multi_character_separator_splits_left_to_right() -> None:
    policy = DefaultReplicationPolicy(separator="__")
    assert policy.topic_source("a___b") == "a"
    assert policy.upstream_topic("a___b") == "_b"
    assert policy.topic_source("a____") is None  # "a", "", "" -> trailing empties dropped


def test_custom_separator_changes_what_counts_as_heartbeats() -> None:
    policy = DefaultReplicationPolicy(separator="__")
    assert policy.is_heartbeats_topic("A__heartbeats")
    assert not policy.is_heartbeats_topic("A.heartbeats")
    assert DEFAULT.is_heartbeats_topic("A.heartbeats")


def test_empty_separator_is_rejected() -> None:
    with pytest.raises(ConfigError, match=r"replication\.policy\.separator"):
        DefaultReplicationPolicy(separator="")


@pytest.mark.parametrize(
    ("topic", "expected"),
    [
        ("heartbeats", True),
        ("source1.heartbeats", True),
        ("source2.source1.heartbeats", True),
        ("heartbeats.x", False),
        ("myheartbeats", False),
        ("x.myheartbeats", False),
    ],
)
def test_is_heartbeats_topic(topic: str, expected: bool) -> None:
    assert DEFAULT.is_heartbeats_topic(topic) is expected


@pytest.mark.parametrize(
    ("topic", "checkpoints", "mm2_internal", "internal"),
    [
        ("A.checkpoints.internal", True, True, True),
        ("checkpoints.internal", False, False, False),
        ("mm2-offset-syncs.B.internal", False, True, True),
        ("mm2-offsets.A.internal", False, True, True),
        ("mm2-configs.A.internal", False, True, True),
        ("mm2-status.A.internal", False, True, True),
        ("__consumer_offsets", False, False, True),
        (".hidden", False, False, True),
        # KAFKA-17200 (Kafka 4.0): user topics that merely look internal are replicable.
        ("foo.internal", False, False, False),
        ("foo-internal", False, False, False),
        ("mm2-foo-internal", False, False, False),
        ("topic1", False, False, False),
        ("heartbeats", False, False, False),
    ],
)
def test_internal_topics_kafka4_rules(topic: str, checkpoints: bool, mm2_internal: bool, internal: bool) -> None:
    for policy in (DEFAULT, IdentityReplicationPolicy(source_cluster_alias="A"), _PrefixPolicy()):
        assert policy.is_checkpoints_topic(topic) is checkpoints
        assert policy.is_mm2_internal_topic(topic) is mm2_internal
        assert policy.is_internal_topic(topic) is internal


def test_configure_follows_mm2_configurable() -> None:
    policy = DefaultReplicationPolicy()
    policy.configure({"replication.policy.internal.topic.separator.enabled": "false"})
    # The flag alone is ignored: it is only consulted together with a separator.
    assert policy.internal_topic_separator_enabled is True
    policy.configure(
        {"replication.policy.separator": "_", "replication.policy.internal.topic.separator.enabled": "FALSE"}
    )
    assert policy.separator == "_"
    assert policy.internal_topic_separator_enabled is False
    assert policy.checkpoints_topic("A") == "A.checkpoints.internal"
    policy.configure(
        {"replication.policy.separator": "-", "replication.policy.internal.topic.separator.enabled": "yes"}
    )
    assert policy.internal_topic_separator_enabled is False  # Boolean.parseBoolean("yes") is false
    assert "separator='-'" in repr(policy)


# --------------------------------------------------------------------------- IdentityReplicationPolicy


def test_identity_policy_ordinary_topics() -> None:
    policy = IdentityReplicationPolicy(source_cluster_alias="primary")
    assert policy.format_remote_topic("primary", "topic1") == "topic1"
    assert policy.topic_source("topic1") == "primary"
    assert policy.upstream_topic("topic1") == "topic1"
    assert policy.original_topic("topic1") == "topic1"
    assert policy.topic_source("a.b") == "primary"
    assert IdentityReplicationPolicy().topic_source("topic1") is None


def test_identity_policy_heartbeats_behave_like_default() -> None:
    policy = IdentityReplicationPolicy(source_cluster_alias="primary")
    assert policy.format_remote_topic("backup", "heartbeats") == "backup.heartbeats"
    assert policy.topic_source("backup.heartbeats") == "backup"
    assert policy.upstream_topic("backup.heartbeats") == "heartbeats"
    assert policy.original_topic("a.b.heartbeats") == "heartbeats"
    assert policy.topic_source("heartbeats") is None
    assert policy.is_heartbeats_topic("heartbeats")
    assert policy.is_heartbeats_topic("backup.heartbeats")
    # Quirk: anything ending in "heartbeats" is formatted like a heartbeat topic.
    assert policy.format_remote_topic("backup", "myheartbeats") == "backup.myheartbeats"
    assert not policy.is_heartbeats_topic("myheartbeats")


def test_identity_policy_configure_reads_source_alias() -> None:
    policy = IdentityReplicationPolicy()
    policy.configure({"source.cluster.alias": "east"})
    assert policy.source_cluster_alias == "east"
    assert policy.topic_source("orders") == "east"
    assert "source_cluster_alias='east'" in repr(policy)


def test_identity_policy_custom_separator_for_heartbeats() -> None:
    policy = IdentityReplicationPolicy(source_cluster_alias="A", separator="__")
    assert policy.format_remote_topic("B", "heartbeats") == "B__heartbeats"
    assert policy.topic_source("B__heartbeats") == "B"


# --------------------------------------------------------------------------- is_cycle


@pytest.mark.parametrize(
    ("topic", "expected"),
    [
        ("target.topic1", True),
        ("target.source.topic1", True),
        ("source.target.topic1", True),
        ("target.source.target.topic1", True),
        ("source.target.source.topic1", True),
        ("topic1", False),
        ("source.topic1", False),
        ("other.source.topic1", False),
        ("target.heartbeats", True),
        ("source.heartbeats", False),
    ],
)
def test_is_cycle_default(topic: str, expected: bool) -> None:
    assert is_cycle(DEFAULT, topic, "target") is expected


def test_is_cycle_identity_policy() -> None:
    policy = IdentityReplicationPolicy(source_cluster_alias="source")
    assert not is_cycle(policy, "topic1", "target")
    assert not is_cycle(policy, "target.topic1", "target")  # identity cannot see cycles
    assert is_cycle(policy, "target.heartbeats", "target")  # but heartbeat cycles are detected
    # A topic whose configured source is the target itself counts as a cycle.
    assert is_cycle(IdentityReplicationPolicy(source_cluster_alias="target"), "topic1", "target")


class _LoopingPolicy(BaseReplicationPolicy):
    """A broken policy whose upstream topics go round in a circle a -> b -> a."""

    def format_remote_topic(self, source_alias: str, topic: str) -> str:
        return topic

    def topic_source(self, topic: str) -> str | None:
        return "x"

    def upstream_topic(self, topic: str) -> str | None:
        return "b" if topic == "a" else "a"


def test_looping_custom_policy_terminates() -> None:
    policy = _LoopingPolicy()
    assert not is_cycle(policy, "a", "target")
    with pytest.raises(ConfigError, match="loop"):
        policy.original_topic("a")


class _SelfUpstreamPolicy(BaseReplicationPolicy):
    """Identity-like: every topic comes from cluster ``x`` and is its own upstream topic."""

    def format_remote_topic(self, source_alias: str, topic: str) -> str:
        return topic

    def topic_source(self, topic: str) -> str | None:
        return "x"

    def upstream_topic(self, topic: str) -> str | None:
        return topic


def test_mirror_client_helpers_guard_against_identity_loops() -> None:
    policy = _SelfUpstreamPolicy()
    assert policy.is_heartbeats_topic("heartbeats")
    assert replication_hops(policy, ["heartbeats"], "y") == -1
    assert replication_hops(policy, ["heartbeats"], "x") == 1
    assert upstream_clusters(policy, ["heartbeats"]) == {"x"}


# --------------------------------------------------------------------------- MirrorClient helpers


def test_replication_hops() -> None:
    topics = ["heartbeats", "source1.heartbeats", "source1.source2.heartbeats", "source3.source2.heartbeats"]
    assert replication_hops(DEFAULT, topics, "source1") == 1
    assert replication_hops(DEFAULT, topics, "source2") == 2
    assert replication_hops(DEFAULT, topics, "source3") == 1
    assert replication_hops(DEFAULT, topics, "source4") == -1
    assert replication_hops(DEFAULT, [], "source1") == -1
    # Only heartbeat topics count.
    assert replication_hops(DEFAULT, ["source9.topic1"], "source9") == -1


def test_heartbeat_topics() -> None:
    topics = ["heartbeats", "source1.heartbeats", "source2.source1.heartbeats", "topic1", "heartbeats.x"]
    assert heartbeat_topics(DEFAULT, topics) == {
        "heartbeats",
        "source1.heartbeats",
        "source2.source1.heartbeats",
    }


def test_checkpoint_topics() -> None:
    topics = ["source1.checkpoints.internal", "checkpoints.internal", "topic1", "a.b.checkpoints.internal"]
    assert checkpoint_topics(DEFAULT, topics) == {"source1.checkpoints.internal", "a.b.checkpoints.internal"}


def test_upstream_clusters() -> None:
    topics = ["heartbeats", "source1.heartbeats", "source3.source4.source5.heartbeats", "source9.topic1"]
    assert upstream_clusters(DEFAULT, topics) == {"source1", "source3", "source4", "source5"}
    assert upstream_clusters(DEFAULT, ["heartbeats"]) == set()


def test_upstream_clusters_stops_at_repeated_alias() -> None:
    assert upstream_clusters(DEFAULT, ["a.b.a.heartbeats"]) == {"a", "b"}


def test_remote_topics() -> None:
    topics = [
        "source1.topic1",
        "source2.topic2",
        "source1.source2.topic3",
        "topic4",
        "source1.checkpoints.internal",
        "mm2-offset-syncs.x.internal",
        "__consumer_offsets",
        "heartbeats",
        "source1.heartbeats",
    ]
    assert remote_topics(DEFAULT, topics) == {
        "source1.topic1",
        "source2.topic2",
        "source1.source2.topic3",
        "source1.heartbeats",
    }
    assert remote_topics(DEFAULT, topics, "source1") == {
        "source1.topic1",
        "source1.source2.topic3",
        "source1.heartbeats",
    }
    assert remote_topics(DEFAULT, topics, "source3") == set()


# --------------------------------------------------------------------------- load_policy


class _PrefixPolicy(BaseReplicationPolicy):
    """A user policy: remote topics are ``<alias>.<topic>`` with '.' only (never configured)."""

    def format_remote_topic(self, source_alias: str, topic: str) -> str:
        return f"{source_alias}.{topic}"

    def topic_source(self, topic: str) -> str | None:
        head, dot, _ = topic.partition(".")
        return head if dot else None

    def upstream_topic(self, topic: str) -> str | None:
        _, dot, rest = topic.partition(".")
        return rest if dot else None


class _ConfigurablePolicy(DefaultReplicationPolicy):
    """A user policy that records the properties it was configured with."""

    def __init__(self) -> None:
        super().__init__()
        self.props: dict[str, str] = {}

    def configure(self, props: Mapping[str, str]) -> None:
        self.props = dict(props)
        super().configure(props)


class _NeedsArgs(DefaultReplicationPolicy):
    def __init__(self, required: str) -> None:
        super().__init__()


class _BadConfigure(DefaultReplicationPolicy):
    def configure(self, props: Mapping[str, str]) -> None:
        raise RuntimeError("boom")


class _NotAPolicy:
    pass


@pytest.fixture
def user_module() -> Iterator[str]:
    name = "mirrorspark_test_user_policies"
    module = types.ModuleType(name)
    module.PrefixPolicy = _PrefixPolicy  # type: ignore[attr-defined]
    module.ConfigurablePolicy = _ConfigurablePolicy  # type: ignore[attr-defined]
    module.NeedsArgs = _NeedsArgs  # type: ignore[attr-defined]
    module.BadConfigure = _BadConfigure  # type: ignore[attr-defined]
    module.NotAPolicy = _NotAPolicy  # type: ignore[attr-defined]
    module.not_a_class = 42  # type: ignore[attr-defined]
    sys.modules[name] = module
    yield name
    del sys.modules[name]


@pytest.mark.parametrize(
    "name",
    [
        "org.apache.kafka.connect.mirror.DefaultReplicationPolicy",
        "DefaultReplicationPolicy",
        " DefaultReplicationPolicy ",
    ],
)
def test_load_default_policy(name: str) -> None:
    policy = load_policy(name, separator="__", internal_topic_separator_enabled=False)
    assert type(policy) is DefaultReplicationPolicy
    assert policy.format_remote_topic("A", "t") == "A__t"
    assert policy.checkpoints_topic("A") == "A.checkpoints.internal"


@pytest.mark.parametrize(
    "name", ["org.apache.kafka.connect.mirror.IdentityReplicationPolicy", "IdentityReplicationPolicy"]
)
def test_load_identity_policy(name: str) -> None:
    policy = load_policy(name, source_cluster_alias="primary")
    assert type(policy) is IdentityReplicationPolicy
    assert policy.topic_source("topic1") == "primary"


def test_load_user_policy(user_module: str) -> None:
    policy = load_policy(f"{user_module}:PrefixPolicy")
    assert isinstance(policy, _PrefixPolicy)
    assert isinstance(policy, ReplicationPolicy)
    assert policy.original_topic("a.b.c") == "c"


def test_load_user_policy_is_configured_like_mm2(user_module: str) -> None:
    policy = load_policy(
        f"{user_module}:ConfigurablePolicy",
        separator="_",
        internal_topic_separator_enabled=False,
        source_cluster_alias="east",
    )
    assert isinstance(policy, _ConfigurablePolicy)
    assert policy.props == {
        "replication.policy.separator": "_",
        "replication.policy.internal.topic.separator.enabled": "false",
        "source.cluster.alias": "east",
    }
    assert policy.format_remote_topic("A", "t") == "A_t"
    assert policy.checkpoints_topic("A") == "A.checkpoints.internal"
    configured = load_policy(f"{user_module}:ConfigurablePolicy")
    assert isinstance(configured, _ConfigurablePolicy)
    assert "source.cluster.alias" not in configured.props
    assert configured.props["replication.policy.internal.topic.separator.enabled"] == "true"


@pytest.mark.parametrize(
    ("suffix", "match"),
    [
        (":NotAPolicy", "not a replication policy"),
        (":not_a_class", "not a class"),
        (":Missing", "has no 'Missing'"),
        (":NeedsArgs", "no arguments"),
        (":BadConfigure", "configure"),
    ],
)
def test_load_user_policy_errors(user_module: str, suffix: str, match: str) -> None:
    with pytest.raises(ConfigError, match=match) as info:
        load_policy(f"{user_module}{suffix}")
    assert user_module in str(info.value)


@pytest.mark.parametrize(
    "name",
    ["com.example.MyPolicy", "NoSuchPolicy", "mirrorspark_no_such_module_xyz:Policy", ":Policy", "module:"],
)
def test_load_unknown_policy(name: str) -> None:
    with pytest.raises(ConfigError, match=r"replication\.policy\.class") as info:
        load_policy(name)
    assert name in str(info.value)
    assert "package.module:ClassName" in str(info.value)


# --------------------------------------------------------------------------- properties

_ALIASES = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-", max_size=12)
_TOPIC_CHARS = "abcxyz09-_."


@given(
    source=_ALIASES,
    topic=st.text(alphabet=_TOPIC_CHARS, max_size=20),
    separator=st.sampled_from([".", "_", "__"]),
)
def test_default_round_trip(source: str, topic: str, separator: str) -> None:
    policy = DefaultReplicationPolicy(separator=separator)
    remote = policy.format_remote_topic(source, topic)
    assert remote == source + separator + topic
    if any(topic.split(separator)):
        assert policy.topic_source(remote) == source
        assert policy.upstream_topic(remote) == topic
    else:  # the topic is empty or only separators: MM2 cannot see the remote name as remote
        assert policy.topic_source(remote) is None
        assert policy.upstream_topic(remote) is None


@given(
    aliases=st.lists(st.text(alphabet="abcdefgh", min_size=1, max_size=5), max_size=5),
    topic=st.text(alphabet="xyz0-", min_size=1, max_size=10),
)
def test_default_multi_hop(aliases: list[str], topic: str) -> None:
    name = topic
    for alias in aliases:
        name = DEFAULT.format_remote_topic(alias, name)
    assert DEFAULT.original_topic(name) == topic
    sources = []
    current = name
    while (source := DEFAULT.topic_source(current)) is not None:
        sources.append(source)
        upstream = DEFAULT.upstream_topic(current)
        assert upstream is not None
        current = upstream
    assert sources == list(reversed(aliases))
    assert current == topic
    assert is_cycle(DEFAULT, name, "target") is ("target" in aliases)
    assert is_cycle(DEFAULT, DEFAULT.format_remote_topic("target", name), "target")


@given(source=_ALIASES, topic=st.text(alphabet=_TOPIC_CHARS, min_size=1, max_size=20))
def test_identity_round_trip(source: str, topic: str) -> None:
    assume(not topic.endswith("heartbeats"))
    policy = IdentityReplicationPolicy(source_cluster_alias=source)
    remote = policy.format_remote_topic(source, topic)
    assert remote == topic
    assert policy.topic_source(remote) == source
    assert policy.upstream_topic(remote) == topic
    assert policy.original_topic(remote) == topic
