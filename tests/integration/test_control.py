"""Live control of a running flow's lists: ``mirrorspark control topics|groups`` as operators run it.

A flow ``primary->backup`` runs in-process (:func:`test_replication.running`) while the
command runs as a subprocess against the same mm2.properties; the changes go to
``mm2-control.primary.internal`` on ``backup`` and the running flow picks them up at its
next topic (or group) refresh, every second here. Regexes and group names are unique per
test, and every test takes its changes back at the end, so the flows of other tests
(which read the same control topic) are not affected.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import Bootstrap, assert_eventually, consume_all, create_topic, end_offsets, produce, unique_name
from helpers import commit_offsets as commit
from pyspark.sql import SparkSession
from test_replication import running, topic_config, topics_of, values_if_exists

from mirrorspark.client.control_store import ControlStore
from mirrorspark.config.model import MirrorConfig
from mirrorspark.config.parse import parse_config
from mirrorspark.config.properties import parse_properties
from mirrorspark.core.control_state import ControlChange, ControlKey
from mirrorspark.kafka.local.model import LocalClusters
from mirrorspark.mm2.records import Checkpoint

pytestmark = [pytest.mark.integration, pytest.mark.spark]

CLI = [sys.executable, "-m", "mirrorspark"]
CONTROL_TOPIC = "mm2-control.primary.internal"
FLOW = "primary->backup"


class Setup:
    """An mm2.properties file for the session clusters (flow primary->backup) and its parsed config."""

    def __init__(self, clusters: LocalClusters, path: Path, **extra: str) -> None:
        text = clusters.mm2_properties(
            [("primary", "backup")],
            extra={
                "refresh.topics.interval.seconds": "1",
                "refresh.groups.interval.seconds": "1",
                "emit.checkpoints.interval.seconds": "1",
                "emit.heartbeats.interval.seconds": "1",
                "tasks.max": "2",
                "offset.lag.max": "10",
                **extra,
            },
        )
        path.write_text(text)
        self.props = path
        self.config: MirrorConfig = parse_config(parse_properties(text))
        self._undo: list[tuple[str, dict[str, list[str]]]] = []

    def control(self, kind: str, *args: str, source: str = "primary") -> subprocess.CompletedProcess[str]:
        """Run ``mirrorspark control KIND --config ... --source primary --target backup ARGS``."""
        argv = [*CLI, "control", kind, "--config", str(self.props), "--source", source, "--target", "backup", *args]
        return subprocess.run(argv, capture_output=True, text=True, timeout=120)

    def undo_later(self, kind: str, **changes: list[str]) -> None:
        """Changes that take this test's control entries back (applied by :meth:`undo`)."""
        self._undo.append((kind, changes))

    def undo(self) -> None:
        with ControlStore(self.config, "primary", "backup") as store:
            for kind, changes in self._undo:
                store.apply(kind, **changes)  # type: ignore[arg-type]


@pytest.fixture
def setup_factory(local_clusters: LocalClusters, tmp_path: Path) -> Iterator[list[Setup]]:
    made: list[Setup] = []
    yield made
    for s in made:
        s.undo()


def make_setup(made: list[Setup], clusters: LocalClusters, tmp_path: Path, **extra: str) -> Setup:
    s = Setup(clusters, tmp_path / f"mm2-{len(made)}.properties", **extra)
    made.append(s)
    return s


def ok(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 0, f"exit {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    return proc.stdout


def values(bootstrap: Bootstrap, topic: str) -> list[bytes | None]:
    return [v for _, v in values_if_exists(bootstrap, topic)]


def control_end(bootstrap: Bootstrap) -> int | None:
    """End offset of the control topic, ``None`` while it does not exist."""
    if CONTROL_TOPIC not in topics_of(bootstrap):
        return None
    return end_offsets(bootstrap, CONTROL_TOPIC)[0][1]


def test_allow_list_changes_take_effect_without_restart(
    local_clusters: LocalClusters, spark: SparkSession, tmp_path: Path, setup_factory: list[Setup]
) -> None:
    """--add starts replicating a topic, --remove stops it (its remote topic stays), --add again resumes it."""
    p, b = local_clusters.bootstrap("primary"), local_clusters.bootstrap("backup")
    prefix = unique_name("ctl-allow")
    a, bt = f"{prefix}.a", f"{prefix}.b"
    ra, rb = f"primary.{a}", f"primary.{bt}"
    ra_re, rb_re = rf"{prefix}\.a", rf"{prefix}\.b"
    for t in (a, bt):
        create_topic(p, t)
        produce(p, t, [{"value": f"{t[-1]}{i}".encode()} for i in range(5)])
    s = make_setup(setup_factory, local_clusters, tmp_path, topics=ra_re)
    s.undo_later("topics", remove=[ra_re, rb_re])

    with running(s.config, spark) as r:
        flow = r.flows[0]
        assert_eventually(lambda: values(b, ra) == [b"a0", b"a1", b"a2", b"a3", b"a4"], timeout_s=60)
        assert rb not in topics_of(b)

        # (a) allow b while the flow runs
        out = ok(s.control("topics", "--add", rb_re))
        assert f"allow  {rb_re}" in out and "control" in out
        assert_eventually(
            lambda: values(b, rb) == [b"b0", b"b1", b"b2", b"b3", b"b4"],
            timeout_s=60,
            message=f"{rb} did not appear on backup with its records",
        )

        # the change is a record of the compacted internal topic on the target
        key = ControlKey(FLOW, "topics", "allow", rb_re)
        mine = [r for r in consume_all(b, CONTROL_TOPIC) if r["key"] == key.encode()]
        assert mine and json.loads(mine[-1]["value"])["op"] == "add"
        assert ControlChange.decode(mine[-1]["key"], mine[-1]["value"]).op == "add"
        assert topic_config(b, CONTROL_TOPIC)["cleanup.policy"] == "compact"
        assert len(end_offsets(b, CONTROL_TOPIC)) == 1
        assert CONTROL_TOPIC not in {t for t in topics_of(p) if t.startswith("backup.")}

        # (b) remove a (a config-file entry): the flow stops replicating it at its next refresh
        ok(s.control("topics", "--remove", ra_re))
        assert_eventually(
            lambda: a not in flow.topic_partitions and r.assignment_applied(),
            timeout_s=30,
            message=f"{a} still replicated",
        )
        produce(p, a, [{"value": f"a{i}".encode()} for i in range(5, 10)])
        produce(p, bt, [{"value": f"b{i}".encode()} for i in range(5, 10)])
        assert_eventually(lambda: values(b, rb) == [f"b{i}".encode() for i in range(10)], timeout_s=60)
        assert values(b, ra) == [b"a0", b"a1", b"a2", b"a3", b"a4"], "records of a removed topic were copied"
        assert ra in topics_of(b), "the remote topic of a removed topic must be kept"

        # allowing it again resumes where it stopped: the gap is copied, nothing twice
        ok(s.control("topics", "--add", ra_re))
        assert_eventually(lambda: values(b, ra) == [f"a{i}".encode() for i in range(10)], timeout_s=60)


def test_deny_list_change_stops_a_topic(
    local_clusters: LocalClusters, spark: SparkSession, tmp_path: Path, setup_factory: list[Setup]
) -> None:
    """(c) --add-deny stops a topic the allow list matches; the other keeps flowing."""
    deny_list_scenario(local_clusters, spark, tmp_path, setup_factory)


def deny_list_scenario(clusters: LocalClusters, spark: SparkSession, tmp_path: Path, made: list[Setup]) -> None:
    """``control topics --add-deny`` (a CLI subprocess) stops one topic of a running flow; the other flows on.

    ``made`` collects the :class:`Setup` whose changes the caller undoes. Shared with the TLS / SASL_SSL
    clusters (test_security).
    """
    p, b = clusters.cluster("primary").client_config(), clusters.cluster("backup").client_config()
    prefix = unique_name("ctl-deny")
    keep, deny = f"{prefix}.keep", f"{prefix}.deny"
    deny_re = rf"{prefix}\.deny"
    for t in (keep, deny):
        create_topic(p, t)
        produce(p, t, [{"value": b"0"}])
    s = make_setup(made, clusters, tmp_path, topics=rf"{prefix}\..*")
    s.undo_later("topics", remove_deny=[deny_re])

    with running(s.config, spark) as r:
        flow = r.flows[0]
        for t in (keep, deny):
            assert_eventually(lambda t=t: values(b, f"primary.{t}") == [b"0"], timeout_s=60)  # type: ignore[misc]
        out = ok(s.control("topics", "--add-deny", deny_re))
        assert f"deny   {deny_re}" in out
        assert_eventually(
            lambda: deny not in flow.topic_partitions and r.assignment_applied(),
            timeout_s=30,
            message=f"{deny} still replicated",
        )
        assert keep in flow.topic_partitions
        produce(p, deny, [{"value": b"1"}])
        produce(p, keep, [{"value": b"1"}])
        assert_eventually(lambda: values(b, f"primary.{keep}") == [b"0", b"1"], timeout_s=60)
        assert values(b, f"primary.{deny}") == [b"0"]
        assert f"primary.{deny}" in topics_of(b)


def latest_checkpoints(bootstrap: str, groups: set[str]) -> dict[str, int]:
    """Upstream offset of the newest checkpoint of each group (partition 0 of one topic)."""
    out: dict[str, int] = {}
    for rec in consume_all(bootstrap, "primary.checkpoints.internal"):
        cp = Checkpoint.decode(rec["key"], rec["value"])
        if cp.consumer_group_id in groups:
            out[cp.consumer_group_id] = cp.upstream_offset
    return out


def test_group_deny_stops_checkpoints(
    local_clusters: LocalClusters, spark: SparkSession, tmp_path: Path, setup_factory: list[Setup]
) -> None:
    """(d) ``control groups --add-deny <group>`` stops checkpoints for that group only."""
    p, b = local_clusters.bootstrap("primary"), local_clusters.bootstrap("backup")
    prefix = unique_name("ctl-groups")
    topic, g1, g2 = f"{prefix}.t", f"{prefix}-g1", f"{prefix}-g2"
    create_topic(p, topic)
    produce(p, topic, [{"value": str(i).encode()} for i in range(20)])
    for g in (g1, g2):
        commit(p, g, {(topic, 0): 5})
    s = make_setup(setup_factory, local_clusters, tmp_path, topics=rf"{prefix}\..*", groups=f"{prefix}-.*")
    s.undo_later("groups", remove_deny=[g1])

    with running(s.config, spark) as r:
        emitter = r.checkpoints[0]
        assert_eventually(lambda: latest_checkpoints(b, {g1, g2}) == {g1: 5, g2: 5}, timeout_s=60)
        ok(s.control("groups", "--add-deny", g1))
        assert_eventually(
            lambda: g1 not in emitter.state.groups and g2 in emitter.state.groups,
            timeout_s=30,
            message=f"{g1} still checkpointed",
        )
        for g in (g1, g2):
            commit(p, g, {(topic, 0): 15})
        assert_eventually(lambda: latest_checkpoints(b, {g2}) == {g2: 15}, timeout_s=60)
        assert latest_checkpoints(b, {g1}) == {g1: 5}, "a denied group was checkpointed"


def test_bad_regex_unknown_alias_and_unreachable_cluster_change_nothing(
    local_clusters: LocalClusters, tmp_path: Path, setup_factory: list[Setup]
) -> None:
    """(e) clear errors, exit codes 2 and 3, and the control topic unchanged (or still absent)."""
    b = local_clusters.bootstrap("backup")
    s = make_setup(setup_factory, local_clusters, tmp_path)
    before = control_end(b)

    bad = s.control("topics", "--add", "ok-topic", "--add-deny", "orders(")
    assert bad.returncode == 2, bad.stderr
    assert "CONFIG_BAD_REGEX" in bad.stderr and "'orders('" in bad.stderr and "nothing was changed" in bad.stderr
    bad_group = s.control("groups", "--remove", "[unclosed")
    assert bad_group.returncode == 2 and "'[unclosed'" in bad_group.stderr

    unknown = s.control("topics", "--add", "x", source="nowhere")
    assert unknown.returncode == 2, unknown.stderr
    assert "CONFIG_UNKNOWN_ALIAS" in unknown.stderr and "'nowhere'" in unknown.stderr
    assert "known: primary, backup" in unknown.stderr

    assert control_end(b) == before

    down = tmp_path / "down.properties"
    down.write_text(s.props.read_text().replace(b, "127.0.0.1:1"))
    argv = [*CLI, "control", "topics", "--config", str(down), "--source", "primary", "--target", "backup"]
    unreachable = subprocess.run([*argv, "--add", "x", "--timeout", "2"], capture_output=True, text=True, timeout=60)
    assert unreachable.returncode == 3, unreachable.stderr
    assert "CLUSTER_UNREACHABLE" in unreachable.stderr and "'backup'" in unreachable.stderr
    assert control_end(b) == before


def test_list_shows_lists_origins_and_matches(
    local_clusters: LocalClusters, tmp_path: Path, setup_factory: list[Setup]
) -> None:
    """(f) --list: the lists in effect, which entries come from the config file or control, and what they match."""
    p = local_clusters.bootstrap("primary")
    prefix = unique_name("ctl-list")
    x, y, z = (f"{prefix}.{n}" for n in "xyz")
    x_re, y_re, z_re = (rf"{prefix}\.{n}" for n in "xyz")
    for t in (x, y, z):
        create_topic(p, t)
    g1, g2 = f"{prefix}-g1", f"{prefix}-g2"
    for g in (g1, g2):
        commit(p, g, {(x, 0): 0})
    s = make_setup(setup_factory, local_clusters, tmp_path, topics=f"{x_re},{z_re}", groups=g1)
    s.undo_later("topics", remove=[y_re], remove_deny=[z_re])
    s.undo_later("groups", remove=[g2])

    ok(s.control("topics", "--add", y_re, "--add-deny", z_re))
    doc = json.loads(ok(s.control("topics", "--list", "--json")))
    assert doc["flow"] == FLOW and doc["control_topic"] == CONTROL_TOPIC and doc["cluster"] == "backup"
    assert {"regex": x_re, "from": "config"} in doc["allow"] and {"regex": y_re, "from": "control"} in doc["allow"]
    assert {"regex": z_re, "from": "config"} in doc["allow"] and {"regex": z_re, "from": "control"} in doc["deny"]
    assert {"regex": "__.*", "from": "config"} in doc["deny"]  # MM2's default topics.exclude
    mine = [m for m in doc["matching"] if m["topic"].startswith(prefix)]
    assert mine == [{"topic": x, "remote_topic": f"primary.{x}"}, {"topic": y, "remote_topic": f"primary.{y}"}]

    text = ok(s.control("topics", "--list"))
    assert f"allow  {x_re}" in text and f"allow  {y_re}" in text
    line = next(ln for ln in text.splitlines() if ln.startswith(f"allow  {y_re}"))
    assert line.split()[-1] == "control"
    line = next(ln for ln in text.splitlines() if ln.startswith(f"allow  {x_re}"))
    assert line.split()[-1] == "config"
    assert f"primary.{y}" in text and f"primary.{z}" not in text

    ok(s.control("groups", "--add", g2))
    groups = json.loads(ok(s.control("groups", "--list", "--json")))
    assert [m for m in groups["matching"] if m.startswith(prefix)] == [g1, g2]
    assert {"regex": g2, "from": "control"} in groups["allow"]
    ok(s.control("groups", "--remove", g1))
    text = ok(s.control("groups", "--list"))
    assert f"removed from the config file's allow list by control: {g1}" in text
    assert g2 in text and f"\n{g1}\n" not in text
