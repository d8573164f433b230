"""Every internal-record decoder and the config parser, fed random and mutated bytes: only the project's errors.

A decoder may return a value or raise a :class:`~mirrorspark.errors.MirrorsparkError` (e.g.
``CorruptRecordError``, ``ConfigError``); any other exception would reach a user as a traceback,
or make a reader stop (or skip) on one bad record.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mirrorspark.config.keys import CONFIG_KEYS
from mirrorspark.config.parse import parse_config
from mirrorspark.config.properties import parse_properties
from mirrorspark.core.control_state import ControlChange, ControlKey
from mirrorspark.core.gaps import GapEvent, decode_ledger_record, encode_gap, encode_topic_id
from mirrorspark.core.lease_claims import LeaseClaim, decode_claim, encode_claim
from mirrorspark.core.lifetime_totals import (
    FlowState,
    TopicTotals,
    decode_flow_state,
    decode_totals,
    encode_flow_state,
    encode_totals,
)
from mirrorspark.core.progress_records import PartitionReport, decode_report, encode_report
from mirrorspark.errors import MirrorsparkError
from mirrorspark.mm2.connect_offsets import (
    decode_source_offset,
    decode_topic_id_marker,
    source_offset_key,
    source_offset_value,
    topic_id_marker_key,
    topic_id_marker_value,
)
from mirrorspark.mm2.offset_syncs import CopiedSegment
from mirrorspark.mm2.records import Checkpoint, Heartbeat, OffsetSync

pytestmark = pytest.mark.unit

FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

Decoder = Callable[[bytes | None, bytes | None], object]

# A valid (key, value) of every kind, to mutate.
VALID: dict[str, tuple[bytes | None, bytes | None]] = {
    "heartbeat": (Heartbeat("A", "B", 5).key(), Heartbeat("A", "B", 5).value()),
    "checkpoint": (Checkpoint("g", "A.t", 3, 10, 11, "m").key(), Checkpoint("g", "A.t", 3, 10, 11, "m").value()),
    "offset sync": (OffsetSync("t", 0, 3, 4).key(), OffsetSync("t", 0, 3, 4).value()),
    "source offset": (source_offset_key("A", "t", 0), source_offset_value(41)),
    "topic id marker": (topic_id_marker_key("A", "t", 0), topic_id_marker_value("AAAAAAAAAHsAAAAAAAAByA")),
    "control": (
        ControlKey(flow="A->B", kind="topics", list="include", regex="x.*").encode(),
        b'{"op":"add","ts":1}',
    ),
    "progress": encode_totals("A->B", "t", TopicTotals(1, 2, 3, 4)),
    "gap": encode_gap(GapEvent("A->B", "t", 0, "deleted", 0, 9, 1)),
    "topic id": encode_topic_id("A->B", "t", "AAAAAAAAAHsAAAAAAAAByA"),
    "task progress": encode_report(
        PartitionReport(
            "A->B", "t", 0, 1, 2, 100, 10, 1000, 20, 50, 9, 3, (CopiedSegment(90, 7, 10),), 1_700_000_000_000
        )
    ),
    "flow state": encode_flow_state("A->B", FlowState("failed", "boom", 1)),
    "lease claim": encode_claim(LeaseClaim("A->B", "host:1", "m-1", 5)),
}

DECODERS: dict[str, Decoder] = {
    "heartbeat": Heartbeat.decode,
    "checkpoint": Checkpoint.decode,
    "offset sync": OffsetSync.decode,
    "source offset": lambda k, v: decode_source_offset(k or b"", v),
    "topic id marker": lambda k, v: decode_topic_id_marker(k or b"", v),
    "control": ControlChange.decode,
    "progress": decode_totals,
    "gap": decode_ledger_record,
    "task progress": decode_report,
    "flow state": decode_flow_state,
    "lease claim": decode_claim,
}


def _only_project_errors(decode: Decoder, key: bytes | None, value: bytes | None) -> None:
    with contextlib.suppress(MirrorsparkError):
        decode(key, value)


@st.composite
def mutated(draw: st.DrawFn, data: bytes | None) -> bytes | None:
    """``data`` with random bytes flipped, inserted, cut or appended (or ``None``)."""
    if data is None or draw(st.integers(0, 20)) == 0:
        return draw(st.one_of(st.none(), st.binary(max_size=64)))
    b = bytearray(data)
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(["flip", "insert", "cut", "append", "digit"]))
        i = draw(st.integers(0, max(0, len(b) - 1)))
        if op == "flip" and b:
            b[i] = draw(st.integers(0, 255))
        elif op == "insert":
            b[i:i] = draw(st.binary(min_size=1, max_size=8))
        elif op == "cut":
            del b[i : i + draw(st.integers(1, 8))]
        elif op == "append":
            b += draw(st.binary(min_size=1, max_size=8))
        else:  # numbers that no cluster can hold, where JSON has digits
            b[i:i] = draw(st.sampled_from([b"-", b"9" * 30, b"1e999", b"Infinity", b"NaN", b"-0", b"1.5"]))
    return bytes(b)


@pytest.mark.parametrize("kind", sorted(DECODERS))
@FUZZ
@given(data=st.data())
def test_decoders_raise_only_project_errors_on_mutated_records(kind: str, data: st.DataObject) -> None:
    # the gap ledger decoder also reads the topic-id records
    key, value = VALID[kind] if kind != "gap" or data.draw(st.booleans()) else VALID["topic id"]
    _only_project_errors(DECODERS[kind], data.draw(mutated(key)), data.draw(mutated(value)))


@pytest.mark.parametrize("kind", sorted(DECODERS))
@FUZZ
@given(key=st.one_of(st.none(), st.binary(max_size=128)), value=st.one_of(st.none(), st.binary(max_size=128)))
def test_decoders_raise_only_project_errors_on_random_bytes(kind: str, key: bytes | None, value: bytes | None) -> None:
    _only_project_errors(DECODERS[kind], key, value)


@pytest.mark.parametrize("kind", sorted(DECODERS))
@pytest.mark.parametrize(
    "bad",
    [b"[" * 100_000, b'{"a":' * 50_000, b'{"offset":1e999}', b'{"offset":Infinity}', b"\xed\xa0\x80"],
)
def test_decoders_survive_pathological_json(kind: str, bad: bytes) -> None:
    key, value = VALID[kind]
    _only_project_errors(DECODERS[kind], bad, value)
    _only_project_errors(DECODERS[kind], key, bad)


def test_progress_with_infinite_totals_is_not_a_progress_record() -> None:
    key, _ = VALID["progress"]
    assert decode_totals(key, b'{"records":Infinity,"value_bytes":1,"key_bytes":1,"timestamp":1}') is None
    assert decode_totals(key, b'{"records":-5,"value_bytes":1,"key_bytes":1,"timestamp":1}') is None


# --------------------------------------------------------------------------- the config parser

VALID_CONFIG = (
    "clusters = A, B\n"
    "A.bootstrap.servers = a:9092\n"
    "B.bootstrap.servers = b:9092\n"
    "A->B.enabled = true\n"
    "A->B.topics = orders.*\n"
    "replication.factor = 1\n"
    "mirrorspark.on.gap = stop\n"
)
KEY_NAMES = sorted({k.name for k in CONFIG_KEYS})


def _parse(text: str) -> None:
    with contextlib.suppress(MirrorsparkError):
        parse_config(parse_properties(text), env={})


@FUZZ
@given(data=st.data())
def test_config_parser_raises_only_config_errors_on_mutated_files(data: st.DataObject) -> None:
    raw = data.draw(mutated(VALID_CONFIG.encode()))
    _parse((raw or b"").decode("utf-8", errors="replace"))


@FUZZ
@given(st.text(max_size=300))
def test_config_parser_raises_only_config_errors_on_random_text(text: str) -> None:
    _parse(text)


@FUZZ
@given(
    st.dictionaries(
        st.one_of(st.sampled_from(KEY_NAMES), st.sampled_from([f"A.{k}" for k in KEY_NAMES]), st.text(max_size=20)),
        st.one_of(st.text(max_size=20), st.sampled_from(["-1", "0", "99999999999999999999", "true", "x", ""])),
        max_size=8,
    )
)
def test_config_parser_raises_only_config_errors_on_random_keys(extra: dict[str, str]) -> None:
    props: dict[str, Any] = {**parse_properties(VALID_CONFIG), **extra}
    with contextlib.suppress(MirrorsparkError):
        parse_config(props, env={})
