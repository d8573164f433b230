"""Refusing flows that loop through an identity-style policy (policy.identity_cycle / check_identity_cycles)."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mirrorspark.config.model import MirrorConfig
from mirrorspark.config.parse import parse_config
from mirrorspark.config.properties import parse_properties
from mirrorspark.errors import ConfigError
from mirrorspark.mm2.policy import (
    BaseReplicationPolicy,
    DefaultReplicationPolicy,
    IdentityReplicationPolicy,
    ReplicationPolicy,
)
from mirrorspark.mm2.topology import check_identity_cycles, identity_cycle, is_identity_style
from mirrorspark.replication.driver import Replicator

pytestmark = pytest.mark.unit

DEFAULT = DefaultReplicationPolicy()
IDENTITY = IdentityReplicationPolicy()
IDENTITY_JAVA = "org.apache.kafka.connect.mirror.IdentityReplicationPolicy"


class KeepNames(BaseReplicationPolicy):
    """A custom identity-style policy (keeps every name) that is not IdentityReplicationPolicy."""

    def format_remote_topic(self, source_alias: str, topic: str) -> str:
        return topic

    def topic_source(self, topic: str) -> str | None:
        return None

    def upstream_topic(self, topic: str) -> str | None:
        return None


class Suffix(BaseReplicationPolicy):
    """A custom policy that marks remote topics with a suffix: not identity-style."""

    def format_remote_topic(self, source_alias: str, topic: str) -> str:
        return f"{topic}_{source_alias}"

    def topic_source(self, topic: str) -> str | None:
        return topic.rpartition("_")[2] if "_" in topic else None

    def upstream_topic(self, topic: str) -> str | None:
        return topic.rpartition("_")[0] if "_" in topic else None


class BlindSuffix(Suffix):
    """A suffixing policy that cannot read its own names back: its names carry no source for the cycle check."""

    def topic_source(self, topic: str) -> str | None:
        return None


def flows(spec: str, policy: ReplicationPolicy = IDENTITY) -> list[tuple[str, str, ReplicationPolicy]]:
    """``"A->B B->A"`` → flows with one policy."""
    out = []
    for edge in spec.split():
        s, t = edge.split("->")
        out.append((s, t, policy))
    return out


# -------------------------------------------------------------------------- is_identity_style


def test_identity_style_is_probed_by_name() -> None:
    assert is_identity_style(IDENTITY, "A")
    assert is_identity_style(KeepNames(), "A")
    assert not is_identity_style(DEFAULT, "A")
    assert not is_identity_style(DefaultReplicationPolicy(separator="__"), "A")
    assert not is_identity_style(Suffix(), "A")
    assert is_identity_style(BlindSuffix(), "A")


# -------------------------------------------------------------------------- identity_cycle


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("A->B B->A", (("A", "B"), ("B", "A"))),  # active/active
        ("A->B B->C C->A", (("A", "B"), ("B", "C"), ("C", "A"))),  # circle
        ("B->C C->A A->B", (("B", "C"), ("C", "A"), ("A", "B"))),  # starts at the first flow given
        ("A->B B->A A->C C->A", (("A", "B"), ("B", "A"))),  # two loops: the first shortest
        ("A->B B->C C->A C->B", (("B", "C"), ("C", "B"))),  # the shortest wins over the first
        ("A->C B->C", ()),  # fan-in
        ("A->B A->C", ()),  # fan-out
        ("A->B B->C", ()),  # chain
        ("A->B B->C A->C", ()),  # diamond without a way back
        ("", ()),
    ],
)
def test_identity_cycles_all_identity(spec: str, expected: tuple[tuple[str, str], ...]) -> None:
    assert identity_cycle(flows(spec)) == expected


def test_default_policy_cycles_are_fine() -> None:
    """MM2's cycle check stops default-named topics: active/active and circles are safe."""
    assert identity_cycle(flows("A->B B->A", DEFAULT)) == ()
    assert identity_cycle(flows("A->B B->C C->A", DEFAULT)) == ()
    assert identity_cycle(flows("A->B B->C C->A", Suffix())) == ()


def test_one_identity_flow_in_a_cycle_is_enough() -> None:
    """A->B identity + B->A default: `t` of A reaches B as `t`, comes back to A as `B.t`, goes to B as
    `B.t` (identity), back to A as `B.B.t`, ... B->A's cycle check never sees A in the name."""
    mixed = [("A", "B", IDENTITY), ("B", "A", DEFAULT)]
    assert identity_cycle(mixed) == (("A", "B"), ("B", "A"))
    circle = [("A", "B", DEFAULT), ("B", "C", DEFAULT), ("C", "A", KeepNames())]
    assert identity_cycle(circle) == (("C", "A"), ("A", "B"), ("B", "C"))


def test_identity_flows_outside_the_cycle_do_not_count() -> None:
    """A default-policy loop A<->B plus an identity fan-out to C: no identity flow is on a cycle."""
    mixed = [("A", "B", DEFAULT), ("B", "A", DEFAULT), ("A", "C", IDENTITY), ("B", "C", IDENTITY)]
    assert identity_cycle(mixed) == ()


@st.composite
def graphs(draw: st.DrawFn) -> list[tuple[str, str, ReplicationPolicy]]:
    nodes = "ABCDE"
    pairs = [(s, t) for s in nodes for t in nodes if s != t]
    chosen = draw(st.lists(st.sampled_from(pairs), unique=True, max_size=12))
    return [(s, t, IDENTITY if draw(st.booleans()) else DEFAULT) for s, t in chosen]


def _reachable(edges: Sequence[tuple[str, str]], start: str) -> set[str]:
    seen, todo = {start}, [start]
    while todo:
        node = todo.pop()
        for s, t in edges:
            if s == node and t not in seen:
                seen.add(t)
                todo.append(t)
    return seen


@given(graphs())
def test_identity_cycle_is_a_real_cycle_and_found_iff_one_exists(
    g: list[tuple[str, str, ReplicationPolicy]],
) -> None:
    edges = [(s, t) for s, t, _ in g]
    ident = [(s, t) for s, t, p in g if p is IDENTITY]
    cycle = identity_cycle(g)
    # an identity flow S->T lies on a directed cycle iff S is reachable from T
    exists = any(s in _reachable(edges, t) for s, t in ident)
    assert bool(cycle) == exists
    if cycle:
        assert cycle[0] in ident
        assert all(e in edges for e in cycle)
        assert all(a[1] == b[0] for a, b in zip(cycle, cycle[1:] + cycle[:1], strict=True))
        assert len({s for s, _ in cycle}) == len(cycle)  # simple: no cluster twice


# -------------------------------------------------------------------------- check_identity_cycles


def test_refusal_names_the_flows_and_the_fixes() -> None:
    with pytest.raises(ConfigError) as e:
        check_identity_cycles(flows("A->B B->C C->A"), where="mm2.properties")
    msg = str(e.value)
    assert msg.startswith("mm2.properties: the enabled flows A->B, B->C, C->A form a replication cycle")
    assert "A->B, B->C, C->A keep topic names" in msg
    assert "DefaultReplicationPolicy" in msg
    assert "'mirrorspark.identity.allow.cycles = true'" in msg
    assert ".topics" in msg
    assert e.value.exit_code == 2


def test_refusal_of_a_mixed_cycle_names_the_identity_flow() -> None:
    with pytest.raises(ConfigError, match=r"flows A->B, B->A form a replication cycle and A->B keeps topic names"):
        check_identity_cycles([("A", "B", IDENTITY), ("B", "A", DEFAULT)])


def test_opt_in_and_safe_topologies_pass() -> None:
    check_identity_cycles(flows("A->B B->A"), allow_cycles=True)
    check_identity_cycles(flows("A->B B->A", DEFAULT))
    check_identity_cycles(flows("A->C B->C"))
    check_identity_cycles(flows("A->B A->C"))
    check_identity_cycles(iter(flows("A->B B->A", DEFAULT)))  # any iterable


# -------------------------------------------------------------------------- the configuration key and the driver


def config(text: str) -> MirrorConfig:
    base = (
        "clusters = A, B, C\nA.bootstrap.servers = a:9092\nB.bootstrap.servers = b:9092\nC.bootstrap.servers = c:9092\n"
    )
    return parse_config(parse_properties(base + text), env={})


def test_the_opt_in_key_is_parsed() -> None:
    assert config("").data_path.identity_allow_cycles is False
    assert config("mirrorspark.identity.allow.cycles = true\n").data_path.identity_allow_cycles is True
    assert config("mirrorspark.identity.allow.cycles = FALSE\n").data_path.identity_allow_cycles is False
    assert not [w for w in config("mirrorspark.identity.allow.cycles = true\n").warnings if "identity" in w]
    with pytest.raises(ConfigError, match=r"'mirrorspark.identity.allow.cycles'"):
        config("mirrorspark.identity.allow.cycles = yes\n")


def test_replicator_refuses_an_identity_loop_before_touching_a_cluster() -> None:
    """The check needs no broker: the bootstrap servers here do not exist."""
    loop = f"A->B.enabled = true\nB->A.enabled = true\nreplication.policy.class = {IDENTITY_JAVA}\n"
    with pytest.raises(ConfigError, match=r"<properties>: the enabled flows A->B, B->A form a replication cycle"):
        Replicator(config(loop))
    # every enabled flow of the file counts, also those another node serves (--clusters)
    with pytest.raises(ConfigError, match=r"A->B, B->A"):
        Replicator(config(loop), targets=["B"])
    # a per-flow policy is enough to close the loop
    mixed = f"A->B.enabled = true\nB->A.enabled = true\nA->B.replication.policy.class = {IDENTITY_JAVA}\n"
    with pytest.raises(ConfigError, match=r"and A->B keeps topic names"):
        Replicator(config(mixed))
    # the circle A->B->C->A
    circle = (
        f"A->B.enabled = true\nB->C.enabled = true\nC->A.enabled = true\nreplication.policy.class = {IDENTITY_JAVA}\n"
    )
    with pytest.raises(ConfigError, match=r"A->B, B->C, C->A"):
        Replicator(config(circle))


def test_the_check_looks_at_enabled_flows_only() -> None:
    """Fan-in to C plus A->B (B->A disabled): no cycle."""
    cfg = config(
        f"A->B.enabled = true\nB->A.enabled = false\nA->C.enabled = true\nB->C.enabled = true\n"
        f"replication.policy.class = {IDENTITY_JAVA}\n"
    )
    flows_ = [(f.source, f.target, IDENTITY) for f in cfg.flows if f.enabled]
    check_identity_cycles(flows_, allow_cycles=cfg.data_path.identity_allow_cycles)


def test_the_loop_is_refused_when_the_file_is_parsed_and_the_replicator_reuses_a_given_context() -> None:
    """The check runs once, in config/ (parse_config), before any Replicator; a run's context is built once."""
    from mirrorspark.client.context import ReplicationContext

    with pytest.raises(ConfigError, match=r"A->B, B->A form a replication cycle"):
        config(f"A->B.enabled = true\nB->A.enabled = true\nreplication.policy.class = {IDENTITY_JAVA}\n")
    cfg = config("A->B.enabled = true\n")
    context = ReplicationContext(cfg)
    replicator = Replicator(cfg, context=context)
    assert replicator.context is context and replicator.flows[0].context is context.of(cfg.flow("A", "B"))
    with pytest.raises(ConfigError, match=r"no replication flow is enabled in <properties> for target\(s\) A"):
        Replicator(cfg, targets=["A"])
