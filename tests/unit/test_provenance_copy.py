"""The copy loop with the provenance header (``produce.forward_run`` / ``forward``): stamps, skips, fails, or reads
nothing at all with the header off."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fakes import FakeMessage, FakeRecord
from mirrorspark.core import provenance as P
from mirrorspark.core.transforms import build_chain, parse_transforms
from mirrorspark.errors import ConfigError, ProvenanceError
from mirrorspark.replication.connector.provenance_ids import learn_cluster_ids
from mirrorspark.replication.task.partition import PartitionCopy
from mirrorspark.replication.task.produce import forward, forward_run
from mirrorspark.replication.task.spec import PartitionAssignment, ProvenanceSpec

pytestmark = pytest.mark.unit

SPEC = ProvenanceSpec("MkU3OEVBNTcwNTJENDM2Qg", "cluster-b")  # flow A->B
A, B = SPEC.hop.source, SPEC.hop.target
C = P.cluster_id_bytes("cluster-c")


class Recorder:
    """A producer that keeps what it was given."""

    def __init__(self) -> None:
        self.records: list[tuple[bytes | None, bytes | None, Any]] = []

    def produce(self, topic: str, value: bytes | None, key: bytes | None, *args: Any, **kwargs: Any) -> None:
        headers = args[4] if len(args) > 4 else kwargs.get("headers")  # forward_run: positional; forward: keyword
        self.records.append((key, value, headers))


def partition(header_on: bool = True, transforms: dict[str, str] | None = None) -> PartitionCopy:
    chain = build_chain(parse_transforms(transforms)).bind("orders") if transforms else None
    pc = PartitionCopy(PartitionAssignment("orders", 3, "orders", 0, transforms=chain))
    if header_on:
        pc.stamp_provenance("A", SPEC.hop)
    return pc


def header(origin: bytes, offset: int = 1, path: tuple[bytes, ...] = (), hops: int = 1) -> bytes:
    return P.encode(P.Provenance(hops, origin, P.fingerprint("X"), P.fingerprint("orders"), 0, offset, path))


def run(pc: PartitionCopy, rows: list[list[tuple[str, Any]] | None]) -> Recorder:
    msgs = [FakeMessage("orders", 3, 10 + o, FakeRecord(b"k", b"v%d" % o, 5, h)) for o, h in enumerate(rows)]
    producer = Recorder()
    i = 0
    while i < len(msgs):
        i = forward_run(producer, pc, msgs, i, 1.0)  # type: ignore[arg-type]
    return producer


def test_a_record_without_headers_gets_a_fresh_header() -> None:
    pc = partition()
    out = run(pc, [None, []])
    for n, (_, _, headers) in enumerate(out.records):
        ((name, value),) = headers
        assert name == P.HEADER_NAME
        assert P.decode(value) == P.Provenance(1, A, P.fingerprint("A"), P.fingerprint("orders"), 3, 10 + n)
    assert pc.upstream == [10, 11] and pc.dropped == 0 and pc.read_to == 12


def test_user_headers_stay_byte_for_byte_and_ours_goes_last() -> None:
    user = [("trace", b"\x00\x01"), (P.HEADER_NAME, header(C)), ("empty", None), ("trace", b"")]
    ((_, _, headers),) = run(partition(), [user]).records
    assert headers[:3] == [user[0], user[2], user[3]] and all(h is u for h, u in zip(headers, user[::2], strict=False))
    assert headers[3][0] == P.HEADER_NAME
    copied = P.decode(headers[3][1])
    assert (copied.origin, copied.hops, copied.path) == (C, 2, (A[:4],))


def test_a_record_that_was_on_the_target_is_dropped_as_a_transform_drops() -> None:
    pc = partition()
    pc.produced_n = 16  # the 17th record of the task is the next sampled
    back = [(P.HEADER_NAME, header(B))]
    passed = [("u", b"1"), (P.HEADER_NAME, header(C, path=(B[:4],), hops=2))]
    out = run(pc, [back, None, passed, back])
    assert [h[-1][0] for _, _, h in out.records] == [P.HEADER_NAME]
    assert pc.upstream == [11] and pc.dropped == 3 and pc.read_to == 14 and pc.produced_n == 17
    assert pc.age_n == 1  # the one produced record was the 17th: sampled, the dropped ones not counted


def test_a_corrupt_header_or_a_4th_hop_fails_naming_record_header_and_fix() -> None:
    for bad, what in (
        (b"\x02" + bytes(37), "is corrupt"),
        (header(C, path=(P.fingerprint("x"), P.fingerprint("y")), hops=3), "a copy would be hop 4"),
    ):
        with pytest.raises(ProvenanceError, match=what) as e:
            run(partition(), [[(P.HEADER_NAME, bad)]])
        msg = str(e.value)
        assert msg.startswith("record orders-3@10 (remote topic orders): header __mirrorspark.provenance")
        assert "provenance.header.enable = false" in msg and e.value.partition == "orders-3"


@settings(max_examples=40, deadline=None)
@given(st.lists(st.one_of(st.none(), st.lists(st.tuples(st.text(max_size=4), st.binary(max_size=6)))), max_size=8))
def test_header_off_reads_no_header(rows: list[list[tuple[str, bytes]] | None]) -> None:
    rows = [*rows, [(P.HEADER_NAME, b"not ours to read")]]
    out = run(partition(header_on=False), rows)  # type: ignore[arg-type]
    assert [h for _, _, h in out.records] == [r or None for r in rows]
    assert all(h is r for (_, _, h), r in zip(out.records, rows, strict=True) if r)


def test_with_transforms_the_header_is_last_and_a_skip_never_reaches_them() -> None:
    insert = {
        "transforms": "h",
        "transforms.h.type": "org.apache.kafka.connect.transforms.InsertHeader",
        "transforms.h.header": "added",
        "transforms.h.value.literal": "x",
    }
    pc = partition(transforms=insert)
    out = run(pc, [[("u", b"1"), (P.HEADER_NAME, header(C))], [(P.HEADER_NAME, header(B))]])
    ((_, _, headers),) = out.records
    assert [n for n, _ in headers] == ["u", "added", P.HEADER_NAME] and P.decode(headers[2][1]).hops == 2
    assert pc.dropped == 1 and pc.upstream == [10]
    m = FakeMessage("orders", 3, 20, FakeRecord(b"k", b"v", 5, None))
    producer = Recorder()
    forward(producer, pc, m, 20, 1.0)  # type: ignore[arg-type]
    assert [n for n, _ in producer.records[0][2]] == ["added", P.HEADER_NAME]


# -------------------------------------------------------------------------- the driver learns the clusters' ids


class Admin:
    """A cluster admin answering DescribeCluster with ``cluster_id`` (counting the calls)."""

    def __init__(self, cluster_id: str | None) -> None:
        self.cluster_id, self.calls, self.timeout_s = cluster_id, 0, 30.0

    def with_timeout(self, timeout_s: float) -> Admin:
        return self

    def describe_cluster(self) -> Any:
        self.calls += 1
        return SimpleNamespace(cluster_id=self.cluster_id, nodes=[])


def flow(source: str, target: str, admins: dict[str, Admin], on: bool = True) -> Any:
    cfg = SimpleNamespace(source=source, target=target, provenance_header_enable=on)
    sides = {"source_admin": admins[source], "target_admin": admins[target]}
    return SimpleNamespace(config=cfg, name=f"{source}->{target}", provenance=None, **sides)


def test_the_driver_learns_each_cluster_id_once() -> None:
    admins = {"A": Admin("MkU3OEVBNTcwNTJENDM2Qg"), "B": Admin("cluster-b"), "C": Admin("cluster-c")}
    flows = [flow("A", "B", admins), flow("B", "A", admins), flow("B", "C", admins, on=False)]
    learn_cluster_ids(flows)
    assert flows[0].provenance == SPEC and flows[1].provenance == ProvenanceSpec("cluster-b", SPEC.source_cluster_id)
    assert flows[2].provenance is None and admins["C"].calls == 0
    assert admins["A"].calls == admins["B"].calls == 1


def test_no_cluster_id_or_equal_fingerprints_refused() -> None:
    admins = {"A": Admin(None), "B": Admin("cluster-b")}
    with pytest.raises(ConfigError, match=r"flow A->B has provenance.header.enable.*cluster 'A'.*tells no id"):
        learn_cluster_ids([flow("A", "B", admins)])
    twin = "cluster-b"
    admins = {"A": Admin(twin), "B": Admin(twin)}
    with pytest.raises(ConfigError, match="same provenance fingerprint"):
        learn_cluster_ids([flow("A", "B", admins)])
