"""Renaming rules (core.rename_rules, core.renaming): the policy, its exact inverse, the refusals, the keys."""

from __future__ import annotations

import logging
import string
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mirrorspark.config.keys import KEYS
from mirrorspark.config.model import MirrorConfig
from mirrorspark.config.parse import parse_config
from mirrorspark.config.properties import parse_properties
from mirrorspark.config.runnable import flow_policy
from mirrorspark.core.rename_rules import RenameRule, RenamingConfig
from mirrorspark.core.renaming import RENAMING_POLICY_NAMES, RenamingReplicationPolicy
from mirrorspark.errors import ConfigError
from mirrorspark.mm2.checkpoint_rules import rename_topic, upstream_topic_of
from mirrorspark.mm2.policy import ReplicationPolicy, load_policy
from mirrorspark.mm2.topology import is_cycle, is_identity_style
from mirrorspark.replication.connector.topic_sync import TopicSync

pytestmark = pytest.mark.unit

TOPIC_CHARS = string.ascii_letters + string.digits + "._-"


def policy(fmt: str | None, *rules: tuple[str, str, str], alias: str = "A") -> RenamingReplicationPolicy:
    renaming = RenamingConfig(fmt, tuple(RenameRule(*r) for r in rules))
    return RenamingReplicationPolicy(renaming=renaming, source_cluster_alias=alias)


DR = policy(
    "${topic}.dr",
    ("orders", r"^orders\.(.*)$", "dr-orders-$1.replica"),
    ("pair", r"^([a-z][a-z])-([a-z]+)-v(\d+)$", "$2.v$3.$1-copy"),
)
KEEP = policy(None, ("orders", r"^orders\.(.*)$", "orders.dr.$1"))
SAMPLES = ("orders.", "orders.x", "orders.dr", "eu-", "us-pay-v1", "foo", "dr-orders-", ".replica", "x.dr")


def names() -> st.SearchStrategy[str]:
    """Random topic names, biased towards the rules' prefixes and suffixes."""
    core = st.text(alphabet=TOPIC_CHARS, min_size=0, max_size=14)
    affix = st.sampled_from(["", "orders.", "dr-orders-", "eu-", "us-", "orders.dr.", "x-"])
    tail = st.sampled_from(["", ".dr", ".replica", "-v1", "-copy", "heartbeats", ".dr.dr"])
    return st.builds(lambda a, c, t: a + c + t, affix, core, tail).filter(bool)


@pytest.mark.parametrize("p", [DR, KEEP], ids=["format+rules", "rules-only"])
@settings(max_examples=100, deadline=None, database=None)
@given(batch=st.lists(names(), min_size=100, max_size=100))
def test_the_reverse_mapping_is_exact(p: RenamingReplicationPolicy, batch: list[str]) -> None:
    """10 000 random names per policy: every produced name maps back to its topic, and only produced names do."""
    for name in batch:
        remote = p.format_remote_topic("A", name)
        assert p.upstream_topic(remote) == name
        assert p.topic_source(remote) == "A"
        upstream = p.upstream_topic(name)
        if upstream is not None:  # a heartbeats topic maps back to the alias its name carries
            assert p.format_remote_topic(p.topic_source(name) or "", upstream) == name
        else:
            assert p.topic_source(name) is None


def test_rules_then_format() -> None:
    assert DR.format_remote_topic("A", "orders.eu") == "dr-orders-eu.replica"
    assert DR.format_remote_topic("A", "eu-pay-v12") == "pay.v12.eu-copy"
    assert DR.format_remote_topic("A", "payments") == "payments.dr"
    assert DR.upstream_topic("pay.v12.eu-copy") == "eu-pay-v12"
    assert DR.upstream_topic("payments") is None  # a local topic of the target
    assert DR.topic_source("payments") is None
    assert KEEP.format_remote_topic("A", "payments") == "payments"  # no rule, no format: the name is kept
    assert KEEP.format_remote_topic("A", "orders.eu") == "orders.dr.eu"
    assert KEEP.upstream_topic("orders.eu") is None  # a name the rule reads, never one it writes


def test_heartbeats_and_internal_topics_follow_mm2() -> None:
    assert DR.format_remote_topic("A", "heartbeats") == "A.heartbeats"
    assert DR.format_remote_topic("B", "A.heartbeats") == "B.A.heartbeats"
    assert DR.topic_source("B.A.heartbeats") == "B"
    assert DR.is_heartbeats_topic("B.A.heartbeats")
    assert DR.checkpoints_topic("A") == "A.checkpoints.internal"
    assert DR.offset_syncs_topic("B") == "mm2-offset-syncs.B.internal"
    assert DR.is_internal_topic("__consumer_offsets")


def test_checkpoints_and_group_offsets_name_the_renamed_topic() -> None:
    assert rename_topic(DR, "A", "B", "orders.eu") == "dr-orders-eu.replica"
    assert upstream_topic_of(DR, "A", "B", "dr-orders-eu.replica") == "orders.eu"
    assert upstream_topic_of(DR, "A", "B", "payments.dr") == "payments"


def test_a_renaming_policy_counts_as_identity_style_for_cycles() -> None:
    assert is_identity_style(DR, "A")
    assert is_identity_style(KEEP, "A")
    assert not is_cycle(DR, "payments.dr", "B")  # the names cannot show where a topic came from


@pytest.mark.parametrize(
    ("rules", "fmt", "message"),
    [
        ([("o", r"^orders.(.*)$", "x-$1")], "${topic}.dr", "'.' outside a group is not a literal"),
        ([("o", r"^orders\.(a|b)$", "x-$1")], None, "one rule per alternative"),
        ([("o", r"^(.*)\.(.*)$", "x-$1")], None, "group $2 is not used"),
        ([("o", r"^o\.(.*)$", "$1-$1.z")], None, "group $1 is used more than once"),
        ([("o", r"^(.*)\.(.*)$", "z.$1-$2")], None, "$1 is followed by '-', which $1 can itself contain"),
        ([("o", r"^orders\.(.*)$", "dr-orders-$1")], "${topic}.dr", "'dr-orders-.dr' from topic 'orders..dr'"),
        ([("o", r"^orders\.(.*)$", "dr-orders-$1")], None, "topic 'dr-orders-', which no rule matches"),
        ([("a", r"^a-(.*)$", "c-$1"), ("b", r"^b-(.*)$", "c-$1")], "${topic}.x", "rule 'b' can both produce"),
        ([("o", r"^o-(.*)$", "__$1.x")], "${topic}.x", "internal topic names"),
        ([("o", r"^o-(.*)$", "A.$1")], "${topic}.x", "'A.heartbeats', a remote heartbeats topic's name"),
        ([], "dr", "must hold '${topic}' exactly once"),
        ([], "__${topic}", "a heartbeats or internal topic's name"),
        ([], "${topic}!", "never in a topic name"),
    ],
)
def test_rules_that_cannot_be_mapped_back_are_refused(
    rules: list[tuple[str, str, str]], fmt: str | None, message: str
) -> None:
    with pytest.raises(ConfigError, match=None) as e:
        policy(fmt, *rules)
    assert message in e.value.message


@settings(max_examples=25, deadline=None, database=None)
@given(
    groups=st.lists(st.sampled_from(["(.*)", "([^-]+)", "([a-z]*)", r"(\d+)", "(eu)"]), min_size=1, max_size=2),
    seps=st.lists(st.sampled_from(["", "-", ".", "x"]), min_size=3, max_size=3),
    order=st.booleans(),
    fmt=st.sampled_from([None, "${topic}.dr", "dr-${topic}"]),
    data=st.data(),
)
def test_every_accepted_rule_is_injective(
    groups: list[str], seps: list[str], order: bool, fmt: str | None, data: st.DataObject
) -> None:
    """Random rules: those the checks accept never give two topics one name (sampled), and map back exactly."""
    regex = "^" + "".join(s.replace(".", "\\.") + g for s, g in zip(seps, groups, strict=False)) + "$"
    refs = [f"${i}" for i in range(1, len(groups) + 1)]
    if order:
        refs.reverse()
    replacement = "r-" + "-".join(refs) + ".z"
    try:
        p = policy(fmt, ("r", regex, replacement))
    except ConfigError:
        return
    seen: dict[str, str] = {}
    for name in data.draw(st.lists(names(), min_size=30, max_size=30)):
        remote = p.format_remote_topic("A", name)
        assert seen.setdefault(remote, name) == name
        assert p.upstream_topic(remote) == name


# -------------------------------------------------------------------------- the configuration


BASE = "clusters = A, B\nA.bootstrap.servers = a:9092\nB.bootstrap.servers = b:9092\nA->B.enabled = true\n"


def config(text: str) -> MirrorConfig:
    return parse_config(parse_properties(BASE + text), env={})


def test_keys_are_declared_once_and_in_the_reference() -> None:
    from mirrorspark.cli.config_commands import config_reference

    assert KEYS["topic.rename.format"].scope == "connector"
    assert KEYS["topic.rename.rules"].type == "list"
    reference = config_reference()
    assert "`topic.rename.format`" in reference
    assert "`topic.rename.rules`" in reference


def test_flow_level_and_global_keys() -> None:
    c = config(
        "topic.rename.format = ${topic}.dr\n"
        "A->B.topic.rename.rules = orders\n"
        "A->B.topic.rename.rules.orders.regex = ^orders\\\\.(.*)$\n"
        "A->B.topic.rename.rules.orders.replacement = dr-orders-$1.replica\n"
    )
    p = flow_policy(c.flow("A", "B"))
    assert isinstance(p, RenamingReplicationPolicy)
    assert p.format_remote_topic("A", "orders.eu") == "dr-orders-eu.replica"
    assert p.format_remote_topic("A", "x") == "x.dr"


def test_the_policy_is_loaded_by_class_name() -> None:
    for name in sorted(RENAMING_POLICY_NAMES):
        c = config(f"replication.policy.class = {name}\ntopic.rename.format = dr-${{topic}}\n")
        assert flow_policy(c.flow("A", "B")).format_remote_topic("A", "x") == "dr-x"
    generic: ReplicationPolicy = load_policy("mirrorspark:RenamingReplicationPolicy")  # the public API's
    assert isinstance(generic, RenamingReplicationPolicy)
    generic.configure({"topic.rename.format": "${topic}-copy"})  # MM2's Configurable
    assert generic.format_remote_topic("A", "x") == "x-copy"


def test_renaming_beside_another_explicit_policy_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"'A->B.topic.rename.format' renames.*'replication.policy.class'"):
        config("replication.policy.class = DefaultReplicationPolicy\nA->B.topic.rename.format = ${topic}.dr\n")


def test_bad_rules_are_refused_when_the_file_loads() -> None:
    with pytest.raises(ConfigError, match=r"renaming rule 'o'.*no rule matches"):
        config("topic.rename.rules = o\ntopic.rename.rules.o.regex = o-(.*)\ntopic.rename.rules.o.replacement = p-$1\n")
    with pytest.raises(ConfigError, match="needs both"):
        config("topic.rename.rules = o\ntopic.rename.rules.o.regex = o-(.*)\n")
    with pytest.raises(ConfigError, match="is no renaming rule key"):
        config("topic.rename.rules = o\ntopic.rename.rules.p.regex = o-(.*)\n")


def test_a_renaming_cycle_is_refused() -> None:
    with pytest.raises(ConfigError, match="form a replication cycle"):
        config("B->A.enabled = true\ntopic.rename.format = ${topic}.dr\n")


def test_two_source_topics_on_one_remote_topic_are_refused_naming_both(caplog: pytest.LogCaptureFixture) -> None:
    sync = object.__new__(TopicSync)
    route = {"a": "merged", "b": "merged", "c": "c"}
    sync.context = SimpleNamespace(policy=SimpleNamespace(format_remote_topic=lambda _s, t: route[t]))  # type: ignore[assignment]
    sync.config = SimpleNamespace(source="A", name="A->B")  # type: ignore[assignment]
    sync.topic_partitions = {}
    sync.collisions = {}
    with caplog.at_level(logging.ERROR):
        assert sync._without_collisions({"a": 1, "b": 1, "c": 1}) == {"c": 1}
    assert "'a' and 'b' would all be replicated to remote topic 'merged'" in caplog.text
    sync.topic_partitions = {"a": 1}  # one the flow already copies keeps its remote topic
    assert sync._without_collisions({"a": 1, "b": 1}) == {"a": 1}
    assert sync.collisions == {"merged": ("a", "b")}


def test_topic_acls_are_copied_to_the_renamed_topics() -> None:
    from confluent_kafka.admin import AclBinding, AclOperation, AclPermissionType, ResourcePatternType, ResourceType

    from mirrorspark.replication.connector.acl_sync import target_acl_bindings

    def read(name: str) -> AclBinding:
        return AclBinding(
            ResourceType.TOPIC,
            name,
            ResourcePatternType.LITERAL,
            "User:alice",
            "*",
            AclOperation.READ,
            AclPermissionType.ALLOW,
        )

    out = target_acl_bindings(
        [read("orders.eu"), read("payments")],
        should_replicate=lambda _t: True,
        remote_topic=lambda t: DR.format_remote_topic("A", t),
    )
    assert [b.name for b in out] == ["dr-orders-eu.replica", "payments.dr"]
