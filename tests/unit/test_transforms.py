"""Single Message Transforms: parsing MM2's syntax, the chain's semantics, and what drops do to offset translation."""

from __future__ import annotations

import logging
import pickle
import re
import sys
import types
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mirrorspark.config.parse import parse_config
from mirrorspark.core.transforms import (
    DROP_HEADERS,
    FILTER,
    HAS_HEADER_KEY,
    INSERT_HEADER,
    REGEX_ROUTER,
    ConnectRecord,
    RoutedReplicationPolicy,
    TransformChain,
    build_chain,
    java_replacement,
    parse_transforms,
    routers,
)
from mirrorspark.errors import ConfigError, TransformConfigError
from mirrorspark.mm2.offset_syncs import SyncState, flush_delayed, fold_acknowledged
from mirrorspark.mm2.policy import DefaultReplicationPolicy
from mirrorspark.mm2.records import OffsetSync
from mirrorspark.mm2.sync_store import OffsetSyncStore
from mirrorspark.mm2.topology import is_identity_style
from mirrorspark.mm2.translation import CopiedRanges, translate

pytestmark = pytest.mark.unit

T = "org.apache.kafka.connect.transforms."
P = "org.apache.kafka.connect.transforms.predicates."


def chain(**props: str) -> TransformChain:
    return build_chain(parse_transforms(props))


def rec(topic: str = "A.orders", value: bytes | None = b"v", headers: tuple[tuple[str, bytes | None], ...] = ()) -> Any:
    return ConnectRecord(topic, 0, b"k", value, headers, 1000)


# ----------------------------------------------------------------------------------------- parsing


def test_the_kafka_documentation_filter_example_parses() -> None:
    # Connect's documentation: "Filter ... with a predicate" (Kafka docs, connect_predicates)
    cfg = parse_transforms(
        {
            "transforms": "Filter",
            "transforms.Filter.type": "org.apache.kafka.connect.transforms.Filter",
            "transforms.Filter.predicate": "IsFoo",
            "predicates": "IsFoo",
            "predicates.IsFoo.type": "org.apache.kafka.connect.transforms.predicates.TopicNameMatches",
            "predicates.IsFoo.pattern": "foo",
        }
    )
    assert [t.type for t in cfg.transforms] == [FILTER]
    c = build_chain(cfg)
    assert c.apply(rec("foo")) is None
    assert c.apply(rec("bar")) == rec("bar")


def test_short_names_are_connect_plugin_aliases() -> None:
    cfg = parse_transforms({"transforms": "f", "transforms.f.type": "Filter"})
    assert cfg.transforms[0].type == FILTER


def test_no_transforms_is_an_empty_falsy_config() -> None:
    assert not parse_transforms({})
    assert not parse_transforms({"transforms": ""})
    assert not build_chain(parse_transforms({}))


@pytest.mark.parametrize(
    ("props", "words"),
    [
        ({"transforms": "a"}, ["transforms.a.type", "is not set"]),
        ({"transforms": "a, a", "transforms.a.type": "Filter"}, ["lists 'a' twice"]),
        ({"transforms": "a", "transforms.a.type": "Filter", "transforms.a.predicate": "p"}, ["not listed"]),
        (
            {"transforms": "a", "transforms.a.type": "Filter", "transforms.a.negate": "yes"},
            ["transforms.a.negate", "true or false"],
        ),
        ({"transforms": "a", "transforms.a.type": "InsertHeader"}, ["transforms.a.header"]),
        (
            {"transforms": "a", "transforms.a.type": "InsertHeader", "transforms.a.header": "h"},
            ["transforms.a.value.literal"],
        ),
        ({"transforms": "a", "transforms.a.type": "DropHeaders"}, ["transforms.a.headers"]),
        ({"transforms": "a", "transforms.a.type": "RegexRouter", "transforms.a.regex": "("}, ["does not compile"]),
        ({"transforms": "a", "transforms.a.type": "RegexRouter", "transforms.a.regex": "x"}, ["replacement"]),
        (
            {
                "transforms": "a",
                "transforms.a.type": "RegexRouter",
                "transforms.a.regex": "x",
                "transforms.a.replacement": "$",
            },
            ["replacement", "group number"],
        ),
        ({"predicates": "p"}, ["predicates.p.type"]),
        ({"predicates": "p", "predicates.p.type": "TopicNameMatches"}, ["predicates.p.pattern"]),
        ({"predicates": "p", "predicates.p.type": "HasHeaderKey"}, ["predicates.p.name"]),
        ({"predicates": "p", "predicates.p.type": "com.acme.Whatever"}, ["not a predicate", "TopicNameMatches"]),
        ({"transforms": "a", "transforms.a.type": "com.acme.MyTransform"}, ["Java classes cannot be loaded"]),
    ],
)
def test_bad_transform_config_names_the_key(props: dict[str, str], words: list[str]) -> None:
    with pytest.raises(TransformConfigError) as e:
        parse_transforms(props)
    for w in words:
        assert w in str(e.value)
    assert isinstance(e.value, ConfigError) and e.value.code == "CONFIG_TRANSFORM"


@pytest.mark.parametrize(
    "cls",
    [
        T + "ReplaceField$Value",
        T + "Cast$Key",
        T + "HeaderFrom$Value",
        T + "HeaderFrom$Key",
        T + "MaskField$Value",
        T + "InsertField$Value",
        T + "ExtractField$Key",
        T + "Flatten$Value",
        T + "TimestampConverter$Value",
        T + "ValueToKey",
        "ReplaceField$Value",
    ],
)
def test_transforms_needing_schemas_are_refused_saying_why(cls: str) -> None:
    with pytest.raises(TransformConfigError, match="byte arrays") as e:
        parse_transforms({"transforms": "x", "transforms.x.type": cls})
    assert "'transforms.x.type'" in str(e.value) and "package.module:ClassName" in str(e.value)


def test_timestamp_router_is_refused_as_per_record_routing() -> None:
    with pytest.raises(TransformConfigError, match="same partition of one remote topic"):
        parse_transforms({"transforms": "x", "transforms.x.type": T + "TimestampRouter"})


def test_regex_router_with_a_record_predicate_is_refused() -> None:
    with pytest.raises(TransformConfigError, match="TopicNameMatches"):
        parse_transforms(
            {
                "transforms": "r",
                "transforms.r.type": REGEX_ROUTER,
                "transforms.r.regex": "(.*)",
                "transforms.r.replacement": "x-$1",
                "transforms.r.predicate": "p",
                "predicates": "p",
                "predicates.p.type": P + "RecordIsTombstone",
            }
        )


# ----------------------------------------------------------------------------------------- the transforms


def test_insert_header_appends_utf8_literal_and_keeps_existing() -> None:
    c = chain(
        **{
            "transforms": "h",
            "transforms.h.type": INSERT_HEADER,
            "transforms.h.header": "by",
            "transforms.h.value.literal": "spärk",
        }
    )
    out = c.apply(rec(headers=(("by", b"x"),)))
    assert out is not None and out.headers == (("by", b"x"), ("by", "spärk".encode()))


def test_drop_headers_drops_every_header_of_those_names() -> None:
    c = chain(**{"transforms": "d", "transforms.d.type": DROP_HEADERS, "transforms.d.headers": "a, b"})
    out = c.apply(rec(headers=(("a", b"1"), ("c", None), ("b", b"2"), ("a", b"3"))))
    assert out is not None and out.headers == (("c", None),)


def test_predicates_and_negate() -> None:
    base = {
        "transforms": "f",
        "transforms.f.type": FILTER,
        "transforms.f.predicate": "p",
        "predicates": "p",
        "predicates.p.type": HAS_HEADER_KEY,
        "predicates.p.name": "debug",
    }
    keep_debug_only = chain(**base, **{"transforms.f.negate": "true"})
    drop_debug = chain(**base)
    debug = rec(headers=(("debug", None),))
    plain = rec()
    assert drop_debug.apply(debug) is None and drop_debug.apply(plain) == plain
    assert keep_debug_only.apply(plain) is None and keep_debug_only.apply(debug) == debug
    tomb = chain(
        **{"transforms": "f", "transforms.f.type": FILTER, "transforms.f.predicate": "t", "predicates": "t"},
        **{"predicates.t.type": "RecordIsTombstone"},
    )
    assert tomb.apply(rec(value=None)) is None and tomb.apply(rec(value=b"")) is not None


@pytest.mark.parametrize(
    ("java", "topic", "expected"),
    [
        ("$1", "A.orders", "orders"),
        ("${t}-copy", "A.orders", "orders-copy"),
        ("\\$1-$1", "A.orders", "$1-orders"),
        ("x\\\\y", "A.orders", "x\\y"),
    ],
)
def test_regex_router_java_replacements(java: str, topic: str, expected: str) -> None:
    regex = r"A\.(?P<t>.*)" if "{t}" in java else r"A\.(.*)"
    c = chain(
        **{
            "transforms": "r",
            "transforms.r.type": REGEX_ROUTER,
            "transforms.r.regex": regex,
            "transforms.r.replacement": java,
        }
    )
    assert c.route(topic) == expected
    assert c.route("B.orders") == "B.orders"  # matches only the whole name
    assert java_replacement("$0") == "\\g<0>"


def test_routing_makes_a_prefix_stripping_flow_name_keeping() -> None:
    c = chain(
        **{
            "transforms": "r",
            "transforms.r.type": REGEX_ROUTER,
            "transforms.r.regex": r"A\.(.*)",
            "transforms.r.replacement": "$1",
        }
    )
    policy = RoutedReplicationPolicy(DefaultReplicationPolicy(), c)
    assert policy.format_remote_topic("A", "orders") == "orders"
    assert policy.topic_source("A.orders") == "A" and policy.topic_source("orders") is None
    assert policy.offset_syncs_topic("B") == "mm2-offset-syncs.B.internal"
    # the identity cycle check now sees the flow as keeping names: A->B plus B->A is refused
    assert is_identity_style(policy, "A") and not is_identity_style(DefaultReplicationPolicy(), "A")


# ----------------------------------------------------------------------------------------- binding


CHAIN_PROPS = {
    "transforms": "r, dropDbg, tag, strip, onlyOrders",
    "transforms.r.type": REGEX_ROUTER,
    "transforms.r.regex": r"A\.(.*)",
    "transforms.r.replacement": "mirror.$1",
    "transforms.r.predicate": "isA",
    "transforms.dropDbg.type": FILTER,
    "transforms.dropDbg.predicate": "dbg",
    "transforms.tag.type": INSERT_HEADER,
    "transforms.tag.header": "via",
    "transforms.tag.value.literal": "ms",
    "transforms.tag.predicate": "tomb",
    "transforms.tag.negate": "true",
    "transforms.strip.type": DROP_HEADERS,
    "transforms.strip.headers": "secret",
    "transforms.onlyOrders.type": FILTER,
    "transforms.onlyOrders.predicate": "orders",
    "transforms.onlyOrders.negate": "true",
    "predicates": "isA, dbg, tomb, orders",
    "predicates.isA.type": P + "TopicNameMatches",
    "predicates.isA.pattern": r"A\..*",
    "predicates.dbg.type": HAS_HEADER_KEY,
    "predicates.dbg.name": "debug",
    "predicates.tomb.type": P + "RecordIsTombstone",
    "predicates.orders.type": P + "TopicNameMatches",
    "predicates.orders.pattern": r"mirror\.orders.*|B\..*",
}

names = st.sampled_from(["debug", "secret", "via", "x"])
headers = st.lists(st.tuples(names, st.one_of(st.none(), st.binary(max_size=3))), max_size=4).map(tuple)


@settings(max_examples=300, deadline=None)
@given(
    topic=st.sampled_from(["A.orders", "A.payments", "B.orders", "A.orders-eu", "orders"]),
    value=st.one_of(st.none(), st.binary(max_size=4)),
    hs=headers,
)
def test_a_bound_chain_does_what_the_whole_chain_does(topic: str, value: bytes | None, hs: Any) -> None:
    c = build_chain(parse_transforms(CHAIN_PROPS))
    whole = c.apply(ConnectRecord(topic, 3, b"k", value, hs, 7))
    bound = c.bind(topic)
    routed = c.route(topic)
    record = ConnectRecord(routed, 3, b"k", value, hs, 7)
    part = record if bound is None else bound.apply(record)
    assert whole == part
    if bound is not None:
        assert bound.topic == routed
    assert pickle.loads(pickle.dumps(c)).apply(ConnectRecord(topic, 3, b"k", value, hs, 7)) == whole


def test_bind_evaluates_topic_predicates_once() -> None:
    c = build_chain(parse_transforms(CHAIN_PROPS))
    bound = c.bind("B.orders")  # not routed; onlyOrders keeps B.*
    assert bound is not None and [s.alias for s in bound.steps] == ["dropDbg", "tag", "strip"]
    bound = c.bind("A.payments")  # routed to mirror.payments, which onlyOrders drops (unconditionally)
    assert bound is not None and bound.topic == "mirror.payments"
    assert bound.steps[-1].alias == "onlyOrders" and bound.steps[-1].predicate is None
    assert c.route("A.payments") == "mirror.payments" and routers(parse_transforms(CHAIN_PROPS)).routes
    assert (
        build_chain(
            parse_transforms(
                {
                    "transforms": "f",
                    "transforms.f.type": FILTER,
                    "transforms.f.predicate": "p",
                    "predicates": "p",
                    "predicates.p.type": "TopicNameMatches",
                    "predicates.p.pattern": "x",
                }
            )
        ).bind("y")
        is None
    )


# ----------------------------------------------------------------------------------------- user transforms


class Upper:
    """A user transform: upper-cases values, drops records whose value is 'drop'."""

    suffix = b""

    def configure(self, props: dict[str, str]) -> None:
        self.suffix = props.get("suffix", "").encode()

    def apply(self, record: ConnectRecord) -> ConnectRecord | None:
        if record.value == b"drop":
            return None
        return ConnectRecord(
            record.topic, record.partition, record.key, (record.value or b"").upper() + self.suffix, record.headers, 0
        )


@pytest.fixture
def user_module() -> Any:
    mod = types.ModuleType("smt_user_mod")
    mod.Upper = Upper  # type: ignore[attr-defined]
    mod.NotATransform = type("NotATransform", (), {})  # type: ignore[attr-defined]
    sys.modules["smt_user_mod"] = mod
    yield mod
    del sys.modules["smt_user_mod"]


def test_a_user_transform_loads_from_module_colon_class(user_module: Any) -> None:
    c = chain(**{"transforms": "u", "transforms.u.type": "smt_user_mod:Upper", "transforms.u.suffix": "!"})
    out = c.apply(rec(value=b"abc"))
    assert out is not None and out.value == b"ABC!"
    assert c.apply(rec(value=b"drop")) is None


@pytest.mark.parametrize(
    ("cls", "words"),
    [
        ("no_such_module_xyz:Upper", "cannot import module"),
        ("smt_user_mod:Nope", "has no 'Nope'"),
        ("smt_user_mod:NotATransform", "apply(record)"),
    ],
)
def test_a_user_transform_that_cannot_load_is_a_config_error(user_module: Any, cls: str, words: str) -> None:
    cfg = parse_transforms({"transforms": "u", "transforms.u.type": cls})
    with pytest.raises(TransformConfigError, match=re.escape(words)):
        build_chain(cfg)


# ----------------------------------------------------------------------------------------- the config file


BASE = {"clusters": "A, B", "A.bootstrap.servers": "a:9092", "B.bootstrap.servers": "b:9092", "A->B.enabled": "true"}


def test_per_flow_keys_override_top_level_ones_key_by_key(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        cfg = parse_config(
            {
                **BASE,
                "transforms": "f",
                "transforms.f.type": FILTER,
                "A->B.transforms": "f, h",
                "A->B.transforms.h.type": INSERT_HEADER,
                "A->B.transforms.h.header": "x",
                "A->B.transforms.h.value.literal": "y",
                "header.converter": "org.apache.kafka.connect.storage.StringConverter",
            }
        )
    assert [t.alias for t in cfg.flow("A", "B").transforms.transforms] == ["f", "h"]
    assert [t.alias for t in cfg.flow("B", "A").transforms.transforms] == ["f"]
    assert any("MM2 drops top-level" in r.getMessage() for r in caplog.records)
    assert not any("header.converter" in r.getMessage() for r in caplog.records)  # StringConverter: as MM2


def test_top_level_definitions_used_by_a_flow_list_warn_too(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        cfg = parse_config({**BASE, "A->B.transforms": "f", "transforms.f.type": FILTER})
    assert [t.type for t in cfg.flow("A", "B").transforms.transforms] == [FILTER]
    assert any("MM2 drops top-level" in r.getMessage() for r in caplog.records)


def test_insert_header_warns_about_mm2s_byte_array_header_converter(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        parse_config(
            {
                **BASE,
                "A->B.transforms": "h",
                "A->B.transforms.h.type": INSERT_HEADER,
                "A->B.transforms.h.header": "x",
                "A->B.transforms.h.value.literal": "y",
            }
        )
    assert any("StringConverter" in r.getMessage() for r in caplog.records)
    assert not any("MM2 drops top-level" in r.getMessage() for r in caplog.records)


def test_a_refused_transform_fails_the_load_naming_the_flow_key() -> None:
    with pytest.raises(TransformConfigError, match=r"'A->B\.transforms\.c\.type'.*Cast.*byte arrays"):
        parse_config({**BASE, "A->B.transforms": "c", "A->B.transforms.c.type": T + "Cast$Value"})


# ----------------------------------------------------------------------------------------- drops and translation


@settings(max_examples=400, deadline=None)
@given(
    drops=st.lists(st.booleans(), min_size=1, max_size=60),
    cuts=st.lists(st.integers(min_value=1, max_value=60), max_size=6),
    lag_max=st.integers(min_value=0, max_value=5),
    d0=st.integers(min_value=0, max_value=1000),
)
def test_dropped_records_never_make_a_failover_skip_a_record(
    drops: list[bool], cuts: list[int], lag_max: int, d0: int
) -> None:
    """Copy upstream 0..n-1, dropping some, committing in batches (the copy task's fold); then for every
    source position U a consumer could have committed, translation lands at or before the copy of the first
    copied record at or after U (never skipping it), and the exact translation lands exactly there."""
    n = len(drops)
    copies: dict[int, int] = {}
    d = d0
    for u in range(n):
        if not drops[u]:
            copies[u] = d
            d += 1
    end_downstream = d
    bounds = sorted({c for c in cuts if c < n} | {n})
    state, store, ranges, start = SyncState(), OffsetSyncStore(), CopiedRanges(), 0
    store.mark_initialized()
    for b in bounds:
        ups = [u for u in range(start, b) if u in copies]
        state, due, segments = fold_acknowledged(state, ups, [copies[u] for u in ups], lag_max)
        state, delayed = flush_delayed(state)
        if delayed is not None:
            due.append(delayed)
        for u, dd in due:
            store.update(OffsetSync("t", 0, u, dd))
        ranges.add("t", 0, segments)
        start = b
    for u_pos in range(n + 1):
        first = next((copies[u] for u in range(u_pos, n) if u in copies), end_downstream)
        mm2 = translate(store, None, "t", 0, u_pos)
        if mm2 is not None:
            assert mm2.downstream_offset <= first, (u_pos, mm2, first)
        exact = translate(store, ranges, "t", 0, u_pos)
        if exact is not None:
            assert exact.downstream_offset <= first
            if exact.exact:
                assert exact.downstream_offset == first
    if copies:  # the newest position translates (the delayed sync of the last copy was promoted)
        last = translate(store, None, "t", 0, n)
        assert last is not None and last.downstream_offset == end_downstream
