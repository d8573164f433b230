"""Live allow/deny lists: the record codec, folding and the lists in effect (no I/O)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mirrorspark.client.control_store import ControlStore
from mirrorspark.config.model import MirrorConfig
from mirrorspark.config.parse import parse_config
from mirrorspark.config.properties import parse_properties
from mirrorspark.core.control_state import (
    ControlChange,
    ControlKey,
    ControlState,
    EffectiveLists,
    ListEntry,
    effective_lists,
    fold,
    validate_regex,
)
from mirrorspark.errors import BadRegexError, ConfigError, CorruptRecordError, UnknownAliasError
from mirrorspark.mm2.internal_topics import CONTROL_PREFIX, mirrorspark_topic
from mirrorspark.mm2.policy import DefaultReplicationPolicy, IdentityReplicationPolicy

pytestmark = pytest.mark.unit

FLOW = "A->B"


def change(kind: str, lst: str, regex: str, op: str | None, ts: int = 1, flow: str = FLOW) -> ControlChange:
    return ControlChange(ControlKey(flow, kind, lst, regex), op, ts if op is not None else -1)  # type: ignore[arg-type]


def lists(
    changes: Sequence[ControlChange], kind: str = "topics", allow: Sequence[str] = (".*",), deny: Sequence[str] = ()
) -> EffectiveLists:
    return effective_lists(fold(changes, ControlState(flow=FLOW)), kind, config_allow=allow, config_deny=deny)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- naming


def test_control_topic_is_internal_on_the_target_and_follows_the_internal_separator() -> None:
    default = DefaultReplicationPolicy()
    assert mirrorspark_topic(CONTROL_PREFIX, default, "primary") == "mm2-control.primary.internal"
    assert default.is_mm2_internal_topic("mm2-control.primary.internal")
    sep = DefaultReplicationPolicy(separator="__")
    assert mirrorspark_topic(CONTROL_PREFIX, sep, "primary") == "mm2-control__primary__internal"
    assert sep.is_internal_topic(mirrorspark_topic(CONTROL_PREFIX, sep, "primary"))
    no_isep = DefaultReplicationPolicy(separator="__", internal_topic_separator_enabled=False)
    assert mirrorspark_topic(CONTROL_PREFIX, no_isep, "primary") == "mm2-control.primary.internal"
    identity = IdentityReplicationPolicy(source_cluster_alias="primary")
    assert mirrorspark_topic(CONTROL_PREFIX, identity, "primary") == "mm2-control.primary.internal"
    assert identity.is_internal_topic("mm2-control.primary.internal")


# --------------------------------------------------------------------------- codec


def test_record_layout() -> None:
    c = change("topics", "allow", r"orders\..*", "add", ts=1_700_000_000_000)
    assert c.key.encode() == b'{"flow":"A->B","kind":"topics","list":"allow","regex":"orders\\\\..*"}'
    assert json.loads(c.key.encode()) == {"flow": "A->B", "kind": "topics", "list": "allow", "regex": r"orders\..*"}
    assert c.encode_value() == b'{"op":"add","ts":1700000000000}'
    assert ControlChange.decode(c.key.encode(), c.encode_value()) == c


def test_keys_are_utf8_and_byte_stable() -> None:
    k = ControlKey(FLOW, "groups", "deny", "größe-.*")
    assert k.encode() == '{"flow":"A->B","kind":"groups","list":"deny","regex":"größe-.*"}'.encode()
    # the same entry written twice has the same key bytes, so compaction keeps only the last
    assert ControlKey(FLOW, "groups", "deny", "größe-.*").encode() == k.encode()


def test_tombstone_decodes() -> None:
    key = ControlKey(FLOW, "topics", "deny", "x").encode()
    assert ControlChange.decode(key, None) == ControlChange(ControlKey(FLOW, "topics", "deny", "x"), None)
    assert ControlChange(ControlKey(FLOW, "topics", "deny", "x"), None).encode_value() is None


@given(
    kind=st.sampled_from(["topics", "groups"]),
    lst=st.sampled_from(["allow", "deny"]),
    regex=st.text(),
    flow=st.text(min_size=1),
    op=st.sampled_from(["add", "remove"]),
    ts=st.integers(min_value=0, max_value=2**62),
)
def test_codec_round_trips(kind: str, lst: str, regex: str, flow: str, op: str, ts: int) -> None:
    c = ControlChange(ControlKey(flow, kind, lst, regex), op, ts)  # type: ignore[arg-type]
    assert ControlChange.decode(c.key.encode(), c.encode_value()) == c


@pytest.mark.parametrize(
    ("key", "value"),
    [
        (None, b'{"op":"add","ts":1}'),
        (b"not json", b'{"op":"add","ts":1}'),
        (b"\xff", b'{"op":"add","ts":1}'),
        (b"[]", b'{"op":"add","ts":1}'),
        (b'{"flow":"A->B","kind":"acls","list":"allow","regex":"x"}', b'{"op":"add","ts":1}'),
        (b'{"flow":"A->B","kind":"topics","list":"maybe","regex":"x"}', b'{"op":"add","ts":1}'),
        (b'{"flow":"A->B","kind":"topics","list":"allow"}', b'{"op":"add","ts":1}'),
        (b'{"flow":"A->B","kind":"topics","list":"allow","regex":"x"}', b'{"op":"toggle","ts":1}'),
        (b'{"flow":"A->B","kind":"topics","list":"allow","regex":"x"}', b'{"op":"add","ts":"now"}'),
        (b'{"flow":"A->B","kind":"topics","list":"allow","regex":"x"}', b'{"op":"add","ts":true}'),
        (b'{"flow":"A->B","kind":"topics","list":"allow","regex":"x"}', b"{}"),
    ],
)
def test_malformed_records_are_corrupt(key: bytes | None, value: bytes | None) -> None:
    with pytest.raises(CorruptRecordError):
        ControlChange.decode(key, value)


# --------------------------------------------------------------------------- folding


def test_last_change_per_entry_wins() -> None:
    state = fold(
        [
            change("topics", "allow", "a", "add", 1),
            change("topics", "allow", "b", "add", 2),
            change("topics", "allow", "a", "remove", 3),
            change("topics", "deny", "a", "add", 4),
            change("groups", "allow", "a", "add", 5),
        ],
        ControlState(flow=FLOW),
    )
    assert state.entries("topics", "allow", "add") == ("b",)
    assert state.entries("topics", "allow", "remove") == ("a",)
    assert state.entries("topics", "deny", "add") == ("a",)
    assert state.entries("groups", "allow", "add") == ("a",)
    assert state.records == 5


def test_fold_is_pure_and_incremental() -> None:
    records = [change("topics", "allow", f"t{i}", "add" if i % 3 else "remove", i) for i in range(10)]
    empty = ControlState(flow=FLOW)
    whole = fold(records, empty)
    assert empty.changes == {} and empty.records == 0  # untouched
    assert fold(records[4:], fold(records[:4], empty)) == whole


def test_other_flows_are_ignored_and_tombstones_forget() -> None:
    state = fold(
        [
            change("topics", "allow", "a", "add", flow="B->A"),
            change("topics", "allow", "b", "add"),
            change("topics", "allow", "c", "remove"),
            change("topics", "allow", "c", None),
        ],
        ControlState(flow=FLOW),
    )
    assert state.entries("topics", "allow", "add") == ("b",)
    assert state.entries("topics", "allow", "remove") == ()
    assert state.records == 4


def test_order_is_each_entrys_last_change() -> None:
    state = fold(
        [
            change("topics", "allow", "a", "add"),
            change("topics", "allow", "b", "add"),
            change("topics", "allow", "a", "add"),
        ],
        ControlState(flow=FLOW),
    )
    assert state.entries("topics", "allow", "add") == ("b", "a")


@given(st.lists(st.tuples(st.sampled_from(["x", "y", "z"]), st.sampled_from(["add", "remove"])), max_size=30))
def test_fold_equals_the_last_op_per_regex(ops: list[tuple[str, str]]) -> None:
    state = fold([change("groups", "deny", r, op) for r, op in ops], ControlState(flow=FLOW))
    last = dict(ops)
    assert set(state.entries("groups", "deny", "add")) == {r for r, op in last.items() if op == "add"}
    assert set(state.entries("groups", "deny", "remove")) == {r for r, op in last.items() if op == "remove"}


# --------------------------------------------------------------------------- lists in effect


def test_no_changes_means_the_config_file() -> None:
    got = lists([], allow=("a", "b"), deny=("c",))
    assert got.allow == (ListEntry("a", "config"), ListEntry("b", "config"))
    assert got.deny == (ListEntry("c", "config"),)
    assert got.patterns() == (("a", "b"), ("c",))
    assert got.removed_allow == got.removed_deny == ()


def test_added_entries_extend_the_config_file() -> None:
    got = lists(
        [change("topics", "allow", r"p\.b", "add"), change("topics", "deny", "secret.*", "add")], allow=[r"p\.a"]
    )
    assert got.allow == (ListEntry(r"p\.a", "config"), ListEntry(r"p\.b", "control"))
    assert got.deny == (ListEntry("secret.*", "control"),)


def test_removed_entries_leave_the_config_file_and_control_lists() -> None:
    got = lists(
        [
            change("topics", "allow", "b", "add"),
            change("topics", "allow", "a", "remove"),
            change("topics", "allow", "b", "remove"),
            change("topics", "deny", "c", "remove"),
        ],
        allow=("a", "x"),
        deny=("c", "d"),
    )
    assert got.patterns() == (("x",), ("d",))
    assert got.removed_allow == ("a",)  # config entries taken out (b was only ever a control entry)
    assert got.removed_deny == ("c",)


def test_removing_then_adding_a_config_entry_restores_it() -> None:
    got = lists([change("topics", "allow", "a", "remove"), change("topics", "allow", "a", "add")], allow=("a",))
    assert got.allow == (ListEntry("a", "config"),)  # still the config file's, not duplicated
    assert got.removed_allow == ()


def test_kinds_are_independent() -> None:
    changes = [change("groups", "allow", "g", "add"), change("topics", "deny", "t", "add")]
    topics = lists(changes, "topics", allow=("t.*",), deny=())
    groups = lists(changes, "groups", allow=(), deny=("__.*",))
    assert topics.patterns() == (("t.*",), ("t",))
    assert groups.patterns() == (("g",), ("__.*",))


def test_removing_everything_leaves_an_empty_allow_list() -> None:
    got = lists([change("topics", "allow", ".*", "remove")], allow=(".*",))
    assert got.allow == ()


@given(
    config=st.lists(st.sampled_from("abcdef"), max_size=4, unique=True),
    ops=st.lists(st.tuples(st.sampled_from("abcdefg"), st.sampled_from(["add", "remove"])), max_size=20),
)
def test_effective_allow_is_config_plus_added_minus_removed(config: list[str], ops: list[tuple[str, str]]) -> None:
    got = lists([change("topics", "allow", r, op) for r, op in ops], allow=config)
    last = dict(ops)
    added = {r for r, op in last.items() if op == "add"}
    removed = {r for r, op in last.items() if op == "remove"}
    assert set(got.patterns()[0]) == (set(config) | added) - removed
    assert len(got.patterns()[0]) == len(set(got.patterns()[0]))


# --------------------------------------------------------------------------- validation, before any I/O


@pytest.mark.parametrize("bad", ["(", "a[", "*x", "  ", ""])
def test_bad_regexes_are_refused(bad: str) -> None:
    with pytest.raises(BadRegexError) as e:
        validate_regex(bad, option="--add")
    assert "--add" in e.value.message
    assert e.value.exit_code == 2


def test_good_regexes_are_trimmed() -> None:
    assert validate_regex(r"  orders\..* ", option="--add") == r"orders\..*"


def _config() -> MirrorConfig:
    return parse_config(
        parse_properties(
            "clusters = A, B\nA.bootstrap.servers = 127.0.0.1:1\nB.bootstrap.servers = 127.0.0.1:1\n"
            "A->B.enabled = true\n"
        )
    )


def test_unknown_alias_fails_before_connecting() -> None:
    with pytest.raises(UnknownAliasError) as e:
        ControlStore(_config(), "A", "C")
    assert "'C'" in e.value.message
    with pytest.raises(ConfigError):
        ControlStore(_config(), "A", "A")


def test_bad_regex_fails_before_connecting() -> None:
    store = ControlStore(_config(), "A", "B", timeout_s=1)
    with pytest.raises(BadRegexError) as e:
        store.apply("topics", add=["ok"], add_deny=["(unclosed"])  # the cluster is unreachable: no I/O happened
    assert "(unclosed" in e.value.message
    assert "nothing was changed" in e.value.message
    assert store.topic == "mm2-control.A.internal"


def test_control_imports_without_spark() -> None:
    """The control API is client layer: Kafka clients, no Spark (as ``replication.connector.checkpoint_emitter``)."""
    from test_no_spark_imports import _SCRIPT, SRC

    result = subprocess.run(
        [sys.executable, "-c", _SCRIPT, str(SRC), "pyspark,py4j", "mirrorspark.replication.connector.live_filters"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr + result.stdout
