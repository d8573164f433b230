"""The provenance header's codec and rules (core/provenance.py's P1..P7), its key and the cycles it allows."""

from __future__ import annotations

import base64
import hashlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mirrorspark.config.keys import CONFIG_KEYS
from mirrorspark.config.model import MirrorConfig
from mirrorspark.config.parse import parse_config
from mirrorspark.config.properties import parse_properties
from mirrorspark.core import provenance as P
from mirrorspark.errors import ConfigError, DataPathError, ProvenanceError
from mirrorspark.mm2.policy import IdentityReplicationPolicy
from mirrorspark.mm2.topology import check_identity_cycles

pytestmark = pytest.mark.unit

A_ID = "MkU3OEVBNTcwNTJENDM2Qg"  # a Kafka cluster id: 22 characters of base64url, 16 bytes
A, B, C = (P.cluster_id_bytes(i) for i in (A_ID, "cluster-b", "cluster-c"))
IDENTITY = IdentityReplicationPolicy()

ids16 = st.binary(min_size=16, max_size=16)
fp4 = st.binary(min_size=4, max_size=4)
provenances = st.builds(
    P.Provenance,
    hops=st.integers(1, 255),
    origin=ids16,
    alias=fp4,
    topic=fp4,
    partition=st.integers(0, 2**31 - 1),
    offset=st.integers(0, 2**63 - 1),
    path=st.lists(fp4, max_size=P.MAX_PATH).map(tuple),
)


def fresh(origin: bytes = A, offset: int = 7, topic: str = "orders", partition: int = 2) -> bytes:
    return P.fresh_prefix(origin, "A", topic, partition) + offset.to_bytes(8, "big")


# -------------------------------------------------------------------------- P1, P2, P7: the codec


@given(provenances)
def test_p1_p2_round_trip_within_48_bytes(p: P.Provenance) -> None:
    value = P.encode(p)
    assert value[0] == P.VERSION and len(value) == P.FIXED_SIZE + 4 * len(p.path) <= P.MAX_SIZE <= 48
    assert P.decode(value) == p


@pytest.mark.parametrize(
    "value",
    [None, b"", b"\x01" * 37, b"\x01" * 39, b"\x01" * 50, b"\x02" + bytes(37), b"\x00" + bytes(41)],
)
def test_p2_a_corrupt_value_raises(value: bytes | None) -> None:
    with pytest.raises(ProvenanceError, match=r"__mirrorspark\.provenance is corrupt") as e:
        P.decode(value)
    assert isinstance(e.value, DataPathError) and e.value.fatal


def test_p7_cluster_ids() -> None:
    assert base64.urlsafe_b64decode(A_ID + "==") == A and len(A) == 16
    assert hashlib.sha256(b"cluster-b").digest()[:16] == B
    assert P.cluster_id_bytes("!" * 22) == hashlib.sha256(b"!" * 22).digest()[:16]
    assert P.fingerprint("orders") == hashlib.sha256(b"orders").digest()[:4]


# -------------------------------------------------------------------------- P3..P5: decide


def test_p3_a_fresh_header() -> None:
    p = P.decode(fresh(offset=2**40 + 3))
    assert p == P.Provenance(1, A, P.fingerprint("A"), P.fingerprint("orders"), 2, 2**40 + 3, ())
    assert len(P.fresh_prefix(A, "A", "orders", 2)) == 30


def test_p4_skipped_back_to_the_origin_or_a_cluster_passed() -> None:
    assert P.decide(fresh(origin=B), P.Hop(A, B)) is None  # B->A's copy back to A... seen by A->B
    two = P.decide(fresh(origin=A), P.Hop(B, C))  # A's record, on B, to C
    assert two is not None and P.decode(two).path == (B[:4],)
    assert P.decide(two, P.Hop(C, B)) is None  # B on the path
    assert P.decide(two, P.Hop(C, A)) is None  # A the origin


def test_p5_hops_and_path() -> None:
    one = P.decide(fresh(origin=A), P.Hop(A, B))  # a record re-copied by its origin's flow: no path entry
    assert one is not None and P.decode(one).hops == 2 and P.decode(one).path == ()
    D = P.cluster_id_bytes("cluster-d")
    E = P.cluster_id_bytes("cluster-e")
    three = P.decide(P.decide(fresh(origin=A), P.Hop(B, C)), P.Hop(C, D))  # type: ignore[arg-type]
    assert three is not None and P.decode(three).hops == 3 and P.decode(three).path == (B[:4], C[:4])
    assert len(three) == P.MAX_SIZE
    with pytest.raises(ProvenanceError, match="a copy would be hop 4, more than 3"):
        P.decide(three, P.Hop(D, E))


# -------------------------------------------------------------------------- P6: restamped


def test_p6_user_headers_kept_ours_last() -> None:
    user = [("k", b"\x00\xff"), ("k", None), ("e", b"")]
    out = P.restamped(user, fresh(), P.Hop(A, B))
    assert out is not None and out[:3] == user and all(a is b for a, b in zip(out, user, strict=False))
    assert out[3] == (P.HEADER_NAME, fresh())
    moved = P.restamped([user[0], (P.HEADER_NAME, fresh(origin=C)), *user[1:]], fresh(), P.Hop(A, B))
    assert moved is not None and moved[:3] == user and moved[3][0] == P.HEADER_NAME
    assert P.decode(moved[3][1]).origin == C and P.decode(moved[3][1]).hops == 2
    assert P.restamped([(P.HEADER_NAME, fresh(origin=B)), *user], fresh(), P.Hop(A, B)) is None
    with pytest.raises(ProvenanceError, match="carries 2 headers"):
        P.restamped([(P.HEADER_NAME, fresh(origin=C))] * 2, fresh(), P.Hop(A, B))


# -------------------------------------------------------------------------- config: the key, cycles, hops


def config(text: str) -> MirrorConfig:
    base = "clusters = A, B, C, D, E\n" + "".join(f"{c}.bootstrap.servers = {c.lower()}:9092\n" for c in "ABCDE")
    return parse_config(parse_properties(base + text), env={})


def test_the_key_is_declared_once_and_parsed() -> None:
    assert [k.name for k in CONFIG_KEYS].count("provenance.header.enable") == 1
    c = config("A->B.enabled = true\nB->A.enabled = true\nB->A.provenance.header.enable = true\n")
    assert c.flow("A", "B").provenance_header_enable is False and c.flow("B", "A").provenance_header_enable
    assert config("provenance.header.enable = true\nA->B.enabled = true\n").flow("A", "B").provenance_header_enable
    with pytest.raises(ConfigError, match=r"provenance\.header\.enable"):
        config("A->B.enabled = true\nA->B.provenance.header.enable = yes please\n")


IDENTITY_KEY = "replication.policy.class = org.apache.kafka.connect.mirror.IdentityReplicationPolicy\n"


def test_an_identity_cycle_runs_with_the_header_on_every_flow() -> None:
    both = "A->B.enabled = true\nB->A.enabled = true\n"
    config(IDENTITY_KEY + both + "provenance.header.enable = true\n")
    ring = "A->B.enabled = true\nB->C.enabled = true\nC->A.enabled = true\n"
    config(IDENTITY_KEY + ring + "provenance.header.enable = true\n")
    with pytest.raises(ConfigError, match=r"flows A->B, B->C, C->A form a replication cycle.*provenance.header"):
        config(IDENTITY_KEY + ring + "provenance.header.enable = true\nB->C.provenance.header.enable = false\n")
    with pytest.raises(ConfigError, match=r"'provenance.header.enable = true' on every flow of the cycle"):
        config(IDENTITY_KEY + both + "A->B.provenance.header.enable = true\n")


def test_the_header_does_not_make_a_cycle_of_renaming_flows_safe() -> None:
    both = "A->B.enabled = true\nB->A.enabled = true\nprovenance.header.enable = true\n"
    with pytest.raises(ConfigError, match=r"A->B, B->A rename topics without their source alias.*orders\.dr\.dr"):
        config(both + "topic.rename.format = ${topic}.dr\n")
    with pytest.raises(ConfigError, match=r"B->A rename topics.*IdentityReplicationPolicy"):
        config(both + "B->A.topic.rename.format = ${topic}.dr\n")  # A->B keeps names (DefaultReplicationPolicy)
    config(both + "A->B.topic.rename.format = ${topic}.dr\nB->A.enabled = false\n")  # no cycle


def test_identity_cycle_rule_needs_every_flow_of_the_cycle() -> None:
    flows = [(s, t, IDENTITY) for s, t in (("A", "B"), ("B", "A"), ("B", "C"), ("C", "B"))]
    check_identity_cycles(flows, headed={(s, t) for s, t, _ in flows})
    with pytest.raises(ConfigError, match=r"flows (B->C, C->B|C->B, B->C) form"):
        check_identity_cycles(flows, headed={("A", "B"), ("B", "A"), ("B", "C")})


def test_more_than_three_hops_refused() -> None:
    config("provenance.header.enable = true\n" + "".join(f"{p}.enabled = true\n" for p in ("A->B", "B->C", "C->D")))
    chain = "".join(f"{p}.enabled = true\n" for p in ("A->B", "B->C", "C->D", "D->E"))
    with pytest.raises(ConfigError, match=r"could travel the flows A->B, B->C, C->D, D->E: 4 hops"):
        config("provenance.header.enable = true\n" + chain)
    config(chain)  # header off: no bound
    four = "".join(f"{p}.enabled = true\n" for p in ("A->B", "B->C", "C->D", "D->A"))
    config(IDENTITY_KEY + "provenance.header.enable = true\n" + four)  # a ring of 4: 3 hops then home


def test_equal_fingerprints_refused() -> None:
    P.check_fingerprints({"A": A_ID, "B": "cluster-b"})
    twin = base64.urlsafe_b64encode(A[:4] + bytes(12)).decode().rstrip("=")
    with pytest.raises(ConfigError, match=r"clusters 'A' .* and 'B' .* same provenance fingerprint"):
        P.check_fingerprints({"A": A_ID, "B": twin})
