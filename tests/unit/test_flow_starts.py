"""The driver starts its flows a few at a time; the first failure in flow order surfaces once none is starting (#44)."""

from __future__ import annotations

import threading

import pytest

from fakes import two_clusters
from mirrorspark.errors import ClusterError
from mirrorspark.replication.driver import Replicator

pytestmark = pytest.mark.unit


def replicator() -> Replicator:
    cfg, _, _, clients = two_clusters("B->A.enabled = true\n")
    r = Replicator(cfg, clients=clients)
    assert [f.name for f in r.flows] == ["A->B", "B->A"]
    return r


def test_flows_start_at_once() -> None:
    r = replicator()
    both = threading.Barrier(2, timeout=30)  # one flow at a time: the first waits for the second in vain
    started: list[str] = []
    for f in r.flows:
        f.start = lambda f=f: (both.wait(), started.append(f.name))  # type: ignore[method-assign]
    r._start_flows()
    assert sorted(started) == ["A->B", "B->A"]


def test_the_first_failure_in_flow_order_surfaces_once_every_start_ended() -> None:
    r = replicator()
    second_failed, ended = threading.Event(), []

    def first() -> None:  # slower than the second, which fails meanwhile
        assert second_failed.wait(30)
        ended.append("A->B")
        raise ClusterError("A->B: the first failure")

    def second() -> None:
        second_failed.set()
        raise ClusterError("B->A: a later one")

    r.flows[0].start, r.flows[1].start = first, second  # type: ignore[method-assign]
    with pytest.raises(ClusterError, match=r"^A->B: the first failure$"):
        r._start_flows()
    assert ended == ["A->B"]


def test_a_later_failure_surfaces_after_the_earlier_flows_started() -> None:
    r = replicator()
    first_done = threading.Event()

    def first() -> None:
        first_done.wait(0.2)
        first_done.set()

    def second() -> None:
        raise ClusterError("B->A: cannot create")

    r.flows[0].start, r.flows[1].start = first, second  # type: ignore[method-assign]
    with pytest.raises(ClusterError, match="B->A: cannot create"):
        r._start_flows()
    assert first_done.is_set()  # nothing still starting when the error surfaces
