"""Replica placement (issue #14): Confluent's placement JSON, assignments over racks, minimal repairs."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mirrorspark.config.parse import parse_config
from mirrorspark.core.placement_rules import (
    Move,
    Ongoing,
    Placement,
    RackReplicas,
    assign_replicas,
    parse_placement,
    parse_placement_rules,
    parse_reassignment_list,
    plan_moves,
    reassignment_json,
    repair,
    violations,
)
from mirrorspark.errors import ConfigError, PlacementError

pytestmark = pytest.mark.unit

TWO_RACKS = {0: "east", 1: "east", 2: "west", 3: "west", 4: "west"}
EAST2_WEST1 = {
    "version": 1,
    "replicas": [{"count": 2, "constraints": {"rack": "east"}}, {"count": 1, "constraints": {"rack": "west"}}],
}


def placement(*racks: tuple[str, int], version: int = 1) -> Placement:
    return Placement(version, tuple(RackReplicas(r, n) for r, n in racks))


# ---------------------------------------------------------------------------- parsing


def test_confluent_examples_parse() -> None:
    p = parse_placement(EAST2_WEST1)
    assert p.version == 1 and p.racks == ("east", "west") and p.replication_factor == 3
    assert p.to_json() == EAST2_WEST1
    v2 = parse_placement({**EAST2_WEST1, "version": 2, "observers": [], "observerPromotionPolicy": "under-min-isr"})
    assert v2.observer_promotion_policy == "under-min-isr"
    assert "no effect" in v2.notes[0] and "observers" in v2.notes[0]
    assert p.notes == ()


def test_observers_are_refused_naming_the_alternative() -> None:
    doc = {**EAST2_WEST1, "observers": [{"count": 1, "constraints": {"rack": "west"}}]}
    with pytest.raises(PlacementError) as e:
        parse_placement(doc)
    assert "observers" in e.value.message and "replication flow to a cluster in that region" in e.value.message
    assert isinstance(e.value, ConfigError) and e.value.exit_code == 2


@pytest.mark.parametrize(
    ("doc", "says"),
    [
        ([], "JSON object"),
        ({"replicas": EAST2_WEST1["replicas"]}, "'version' must be 1 or 2"),
        ({**EAST2_WEST1, "version": 3}, "'version' must be 1 or 2"),
        ({**EAST2_WEST1, "version": True}, "'version' must be 1 or 2"),
        ({"version": 1, "replicas": []}, "non-empty list"),
        ({"version": 1, "replicas": [{"count": 0, "constraints": {"rack": "a"}}]}, "'count' must be an integer >= 1"),
        ({"version": 1, "replicas": [{"count": 1, "constraints": {"zone": "a"}}]}, "only rack constraints"),
        ({"version": 1, "replicas": [{"count": 1, "constraints": {"rack": ""}}]}, "non-empty string"),
        (
            {
                "version": 1,
                "replicas": [{"count": 1, "constraints": {"rack": "a"}}, {"count": 2, "constraints": {"rack": "a"}}],
            },
            "rack 'a' more than once",
        ),
        ({**EAST2_WEST1, "observerPromotionPolicy": "under-min-isr"}, "needs placement version 2"),
        ({**EAST2_WEST1, "version": 2, "observerPromotionPolicy": "always"}, "must be one of"),
        ({**EAST2_WEST1, "replica": []}, "unknown key(s) 'replica'"),
    ],
)
def test_bad_placements_say_what_is_wrong(doc: object, says: str) -> None:
    with pytest.raises(PlacementError) as e:
        parse_placement(doc)
    assert says in e.value.message


def test_rules_by_topic_regex_first_match_wins() -> None:
    west = {"version": 1, "replicas": [{"count": 1, "constraints": {"rack": "west"}}]}
    rules = parse_placement_rules(
        json.dumps([{"topics": r"A\.orders.*", "placement": west}, {"topics": "A\\..*", "placement": EAST2_WEST1}])
    )
    orders, rest = (r.placement for r in rules.rules)
    assert rules.for_topic("A.orders-eu") == orders
    assert rules.for_topic("A.payments") == rest
    assert rules.for_topic("B.payments") is None
    assert parse_placement_rules(json.dumps(EAST2_WEST1)).for_topic("anything") == parse_placement(EAST2_WEST1)


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("{", "not valid JSON"),
        ("[]", "non-empty list"),
        ('[{"topics": "(", "placement": {}}]', "rule 0"),
        (json.dumps([{"topics": "(", "placement": EAST2_WEST1}]), "not a valid regular expression"),
        (json.dumps([{"placement": EAST2_WEST1}]), "'topics' must be a regular expression"),
    ],
)
def test_bad_rule_documents(text: str, says: str) -> None:
    with pytest.raises(PlacementError) as e:
        parse_placement_rules(text)
    assert says in e.value.message


# ---------------------------------------------------------------------------- config


def flow_with(tmp_path: Path, value: str, key: str = "A->B.mirrorspark.replica.placement") -> object:
    cfg = parse_config(
        {"clusters": "A, B", "A.bootstrap.servers": "a:9092", "B.bootstrap.servers": "b:9092", key: value}
    )
    return cfg.flow("A", "B").replica_placement, cfg


def test_config_key_takes_a_file_or_inline_json_per_flow(tmp_path: Path) -> None:
    f = tmp_path / "placement.json"
    f.write_text(json.dumps(EAST2_WEST1))
    rules, cfg = flow_with(tmp_path, str(f))
    assert rules is not None and rules.for_topic("A.t").racks == ("east", "west")  # type: ignore[attr-defined]
    assert cfg.flow("B", "A").replica_placement is None  # type: ignore[attr-defined]
    inline, _ = flow_with(tmp_path, json.dumps(EAST2_WEST1), key="mirrorspark.replica.placement")
    assert inline == rules


def test_config_refuses_observers_and_missing_files_at_load(tmp_path: Path) -> None:
    doc = {**EAST2_WEST1, "observers": [{"count": 1, "constraints": {"rack": "west"}}]}
    with pytest.raises(PlacementError) as e:
        flow_with(tmp_path, json.dumps(doc))
    assert "'A->B.mirrorspark.replica.placement'" in e.value.message and "observers" in e.value.message
    with pytest.raises(ConfigError) as e2:
        flow_with(tmp_path, str(tmp_path / "missing.json"))
    assert "cannot be read" in e2.value.message


def test_config_warns_that_the_promotion_policy_has_no_effect(tmp_path: Path) -> None:
    _, cfg = flow_with(
        tmp_path, json.dumps({**EAST2_WEST1, "version": 2, "observerPromotionPolicy": "under-replicated"})
    )
    assert any("observerPromotionPolicy 'under-replicated' has no effect" in w for w in cfg.warnings)  # type: ignore[attr-defined]


# ---------------------------------------------------------------------------- assignments


def test_assignment_puts_leaders_in_the_first_rack_round_robin() -> None:
    p = parse_placement(EAST2_WEST1)
    a = assign_replicas(p, 6, TWO_RACKS, topic="t")
    assert all(not violations(p, r, TWO_RACKS) for r in a)
    assert Counter(r[0] for r in a) == {0: 3, 1: 3}
    assert a == assign_replicas(p, 6, TWO_RACKS, topic="t")  # stable
    assert assign_replicas(p, 2, TWO_RACKS, topic="t", first_partition=4) == a[4:]


def test_assignment_refuses_racks_without_enough_brokers() -> None:
    with pytest.raises(PlacementError) as e:
        assign_replicas(placement(("east", 3)), 1, TWO_RACKS, cluster="backup")
    assert "rack 'east' has only 2 broker(s) on cluster 'backup'" in e.value.message
    assert "east (2), west (3)" in e.value.message
    with pytest.raises(PlacementError, match="rack 'north' has no broker"):
        assign_replicas(placement(("north", 1)), 1, TWO_RACKS)


def test_violations_name_each_problem() -> None:
    p = parse_placement(EAST2_WEST1)
    assert violations(p, (0, 1, 2), TWO_RACKS) == ()
    assert violations(p, (2, 0, 1), TWO_RACKS) == ("preferred leader 2 is not in the first rack 'east'",)
    assert violations(p, (0, 2, 3), TWO_RACKS) == (
        "1 replica(s) in rack 'east', placement wants 2",
        "2 replica(s) in rack 'west', placement wants 1",
    )
    assert "outside the placement" in violations(p, (0, 1, 2, 9), TWO_RACKS)[0]


def test_repair_keeps_replicas_in_the_right_racks() -> None:
    p = parse_placement(EAST2_WEST1)
    assert repair(p, (0, 2, 3), TWO_RACKS, {}) == (0, 1, 2)  # keeps 0 and 2, adds 1, drops 3
    assert repair(p, (2, 1, 0), TWO_RACKS, {}) == (1, 0, 2)  # a reorder only: no data moves
    assert repair(p, (0, 1, 2), TWO_RACKS, {}) == (0, 1, 2)
    assert repair(p, (0, 1), TWO_RACKS, {2: 5, 3: 1, 4: 1}) == (0, 1, 3)  # least loaded, lowest id


def test_plan_moves_only_non_conforming_partitions() -> None:
    p = parse_placement(EAST2_WEST1)
    topics = {"ok": [(0, 1, 2), (1, 0, 3)], "bad": [(0, 1, 2), (2, 3, 4)], "other": [(2, 3, 4)]}
    moves = plan_moves(topics, {"ok": p, "bad": p, "missing": p}, TWO_RACKS)
    assert [(m.topic, m.partition) for m in moves] == [("bad", 1)]
    m = moves[0]
    assert m.current == (2, 3, 4) and m.target[2] == 2 and set(m.target[:2]) == {0, 1}
    assert m.adding == m.target[:2] and m.removing == (3, 4)
    assert reassignment_json(moves) == {
        "version": 1,
        "partitions": [{"topic": "bad", "partition": 1, "replicas": list(m.target)}],
    }


brokers_st = st.dictionaries(st.integers(0, 11), st.sampled_from(["a", "b", "c"]), min_size=1, max_size=12)


@settings(max_examples=200, deadline=None)
@given(
    brokers=brokers_st,
    counts=st.lists(st.integers(1, 3), min_size=1, max_size=3),
    current=st.lists(st.lists(st.integers(0, 11), min_size=1, max_size=4, unique=True), min_size=1, max_size=6),
)
def test_plans_always_satisfy_the_placement(
    brokers: dict[int, str], counts: list[int], current: list[list[int]]
) -> None:
    p = placement(*zip(["a", "b", "c"], counts, strict=False))
    per_rack = Counter(brokers.values())
    if any(per_rack[r.rack] < r.count for r in p.replicas):
        with pytest.raises(PlacementError):
            plan_moves({"t": current}, {"t": p}, brokers)
        return
    moves = {m.partition: m for m in plan_moves({"t": current}, {"t": p}, brokers)}
    for i, replicas in enumerate(current):
        target = moves[i].target if i in moves else tuple(replicas)
        assert violations(p, target, brokers) == ()
        assert len(set(target)) == len(target) == p.replication_factor
        if i in moves:  # every replica already in a rack it may stay in is kept (up to the count)
            for r in p.replicas:
                kept = [b for b in replicas if brokers.get(b) == r.rack][: r.count]
                assert set(kept) <= set(target)
        else:
            assert violations(p, replicas, brokers) == ()
    for replicas in assign_replicas(p, len(current), brokers, topic="t"):
        assert violations(p, replicas, brokers) == ()


# ---------------------------------------------------------------------------- the tool's --list


def test_reassignment_list_output_is_read() -> None:
    text = (
        "Current partition reassignments:\n"
        "orders-eu-0: replicas: 0,2,3. adding: 0. removing: 3.\n"
        "x-12: replicas: 1,2. adding: . removing: .\n"
    )
    got = parse_reassignment_list(text)
    assert got == {("orders-eu", 0): Ongoing((0, 2, 3), (0,), (3,)), ("x", 12): Ongoing((1, 2), (), ())}
    assert got[("orders-eu", 0)].target == (0, 2)
    assert parse_reassignment_list("No partition reassignments found.\n") == {}


def test_move_properties() -> None:
    m = Move("t", 0, (1, 2), (2, 3))
    assert m.adding == (3,) and m.removing == (1,)
