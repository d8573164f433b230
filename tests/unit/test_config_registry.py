"""The key registry: each key declared once, every key used or deliberately accepted, and what that fixes."""

from __future__ import annotations

import ast
import dataclasses
from collections import Counter
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from mirrorspark.cli.app import config_reference
from mirrorspark.client.context import FlowContext
from mirrorspark.config.keys import ACCEPTED_NOTE, CONFIG_KEYS, ConfigKey
from mirrorspark.config.model import DataPathConfig, FlowConfig, MirrorConfig, PolicyConfig, ServiceConfig
from mirrorspark.config.parse import parse_config
from mirrorspark.mm2 import filters
from mirrorspark.mm2.internal_topics import CONTROL_PREFIX, TOTALS_PREFIX, connect_offsets_topic, mirrorspark_topic
from mirrorspark.mm2.policy import DefaultReplicationPolicy
from mirrorspark.replication.connector.acl_sync import TopicAclSync
from mirrorspark.replication.connector.checkpoint_emitter import CheckpointEmitter
from mirrorspark.replication.connector.scheduler import Scheduler

pytestmark = pytest.mark.unit

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "mirrorspark"

# Fields no single key fills: the flow's aliases, the herder rule's result is `enabled` (filled by the
# `enabled` key), the policy object, the composed client settings and the rest of the merge.
STRUCTURAL_FLOW_FIELDS = {
    "source",
    "target",
    "policy",
    "source_consumer",
    "source_admin",
    "source_producer",
    "target_producer",
    "target_admin",
    "target_consumer",
    "extra",
    "connector_clients",
    # schema replication: from sync.schemas.* and both clusters' <alias>.schema.registry.url (config/schema_sync.py)
    "sync_schemas_enabled",
    "sync_schemas_unknown_ids",
    "sync_schemas_interval_s",
}
HOLDERS: dict[str, type[Any]] = {
    "flow": FlowConfig,
    "policy": PolicyConfig,
    "data_path": DataPathConfig,
    "service": ServiceConfig,
}


CLUSTERS = {"clusters": "A, B", "A.bootstrap.servers": "a:9092", "B.bootstrap.servers": "b:9092"}


def flow_config(**props: str) -> FlowConfig:
    return parse_config({**CLUSTERS, **props}).flow("A", "B")


def test_every_field_of_the_typed_config_is_filled_by_exactly_one_key() -> None:
    filled = Counter((k.holder, k.field) for k in CONFIG_KEYS if k.field is not None)
    twice = [f"{holder}.{name}" for (holder, name), n in filled.items() if n > 1]
    assert not twice, f"fields filled by more than one key: {twice}"
    for holder, cls in HOLDERS.items():
        names = {f.name for f in dataclasses.fields(cls)}
        by_keys = {name for (h, name) in filled if h == holder}
        assert by_keys <= names, f"keys name fields {holder} does not have: {sorted(by_keys - names)}"
        structural = STRUCTURAL_FLOW_FIELDS if cls is FlowConfig else set()
        missing = names - by_keys - structural
        assert not missing, f"{cls.__name__} fields no key fills: {sorted(missing)}"
        assert not (by_keys & structural)
    # MirrorConfig keeps a few connector keys' top-level values (for the tools that serve no flow)
    top_level = Counter(k.top_level_field for k in CONFIG_KEYS if k.top_level_field is not None)
    assert all(n == 1 for n in top_level.values()), top_level
    mirror_fields = {f.name: f for f in dataclasses.fields(MirrorConfig)}
    assert set(top_level) <= set(mirror_fields)
    parsed = parse_config({"clusters": "A", "A.bootstrap.servers": "a:9092"})
    for k in CONFIG_KEYS:
        if k.top_level_field is not None:
            assert k.scope == "connector", k.name
            assert mirror_fields[k.top_level_field].default == getattr(parsed, k.top_level_field), k.name


def test_registry_shapes() -> None:
    names = {k.name for k in CONFIG_KEYS}
    for k in CONFIG_KEYS:
        if k.replaced_by is not None:
            assert k.replaced_by in names and k.field is None, k.name
        if k.negative_disables is not None:
            flag = next(f for f in CONFIG_KEYS if f.name == k.negative_disables)
            assert flag.type == "boolean" and flag.field is not None and k.unit == "s", k.name
        if k.scope == "mirrorspark":
            assert k.holder in ("data_path", "service"), k.name
        if k.retired is not None:
            assert k.field is None and k.effect == "accepted", k.name
        if k.holder in ("data_path", "service"):
            assert k.scope == "mirrorspark", k.name


def _attribute_reads(root: Path) -> set[str]:
    """Names ``x`` of every ``<expr>.x`` read in the package, outside mirrorspark/config/ but for the run's checks."""
    reads: set[str] = set()
    for path in root.rglob("*.py"):
        parts = path.relative_to(root).parts
        if parts[0] == "config" and parts != ("config", "runnable.py"):  # runnable.py: what a run may start with
            continue
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
                reads.add(node.attr)
    return reads


# Keys without a field whose value the parser itself consumes: the cluster list, the declared config
# providers (placeholders are resolved with them), the client keys (they go into ClientSettings), the
# cluster keys (a cluster's Schema Registry: they go into SchemaRegistrySettings), the switch of the
# unknown-key check, the schema replication keys (resolved with both clusters' registries) and the renaming
# format (read with topic.rename.rules into FlowConfig.renaming).
PARSER_CONSUMED = {
    "topic.rename.format",
    "clusters",
    "config.providers",
    "predicates",
    "mirrorspark.config.lenient",
    "sync.schemas.enabled",
    "sync.schemas.unknown.ids",
    "sync.schemas.interval.seconds",
}


def _used_without_field(k: ConfigKey) -> bool:
    """Whether the parser uses ``k`` itself; deprecated aliases fill their replacement's field."""
    return k.name in PARSER_CONSUMED or k.scope in ("client", "cluster") or k.replaced_by is not None


def test_every_key_is_used_or_deliberately_accepted() -> None:
    reads = _attribute_reads(PACKAGE)
    unused = []
    for k in CONFIG_KEYS:
        if k.effect == "accepted":
            continue
        if k.field is None:
            if not _used_without_field(k):
                unused.append(f"{k.name} (fills no field)")
        elif k.field not in reads and not (k.field.endswith("_ms") and f"{k.field[:-3]}_s" in reads):  # or in seconds
            unused.append(f"{k.name} (.{k.field} is never read outside mirrorspark/config/)")
    assert not unused, (
        "keys parsed but never used; use them, or mark them effect='accepted' (accepted for MM2 "
        f"compatibility, no effect) with the reason in their doc: {unused}"
    )


def test_accepted_keys_are_marked_in_the_reference() -> None:
    accepted = {k.name for k in CONFIG_KEYS if k.effect == "accepted"}
    assert {
        "dedicated.mode.enable.internal.rest",
        "listeners",
        "admin.listeners",
        "forwarding.admin.class",
        "tasks.max.enforce",
        "metric.reporters",
        "auto.include.jmx.reporter",
        "consumer.poll.timeout.ms",
    } <= accepted
    rows = {line.split("|")[1].strip(" `"): line for line in config_reference().splitlines() if line.startswith("| `")}
    retired = {k.name: k.retired for k in CONFIG_KEYS if k.retired is not None}
    assert set(retired) == {
        "mirrorspark.engine",
        "mirrorspark.batch.max.records.per.partition",
        "mirrorspark.batch.idle.interval.ms",
        "mirrorspark.batch.follow.ms",
    }
    for name in accepted:
        note = f"Retired, no effect: {retired[name]}" if name in retired else ACCEPTED_NOTE.capitalize()
        assert "| accepted |" in rows[name] and note in rows[name], name
    assert "| used |" in rows["admin.timeout.ms"] and ACCEPTED_NOTE.capitalize() not in rows["admin.timeout.ms"]


def test_default_filter_lists_come_from_the_filters() -> None:
    defaults = {k.name: k.default for k in CONFIG_KEYS}
    assert defaults["topics.exclude"] == ", ".join(filters.DEFAULT_TOPICS_EXCLUDE)
    assert defaults["groups.exclude"] == ", ".join(filters.DEFAULT_GROUPS_EXCLUDE)
    assert defaults["config.properties.exclude"] == ", ".join(filters.DEFAULT_CONFIG_PROPERTIES_EXCLUDE)
    f = flow_config()
    assert f.topics_exclude == filters.DEFAULT_TOPICS_EXCLUDE
    assert f.groups_exclude == filters.DEFAULT_GROUPS_EXCLUDE
    assert f.config_properties_exclude == filters.DEFAULT_CONFIG_PROPERTIES_EXCLUDE


def test_internal_topic_names() -> None:
    default = DefaultReplicationPolicy()
    assert connect_offsets_topic("A") == "mm2-offsets.A.internal" == flow_config().offset_storage_topic
    assert (
        mirrorspark_topic(TOTALS_PREFIX, None, "A")
        == mirrorspark_topic(TOTALS_PREFIX, default, "A")
        == "mm2-progress.A.internal"
    )
    assert default.offset_syncs_topic("B") == "mm2-offset-syncs.B.internal"
    assert default.checkpoints_topic("A") == "A.checkpoints.internal"
    sep = DefaultReplicationPolicy(separator="__")
    # mirrorspark's own topics follow the policy's internal separator, like MM2's, so the policy keeps them internal
    assert mirrorspark_topic(TOTALS_PREFIX, sep, "A") == "mm2-progress__A__internal"
    assert mirrorspark_topic(CONTROL_PREFIX, sep, "A") == "mm2-control__A__internal"
    assert sep.is_internal_topic(mirrorspark_topic(TOTALS_PREFIX, sep, "A"))
    assert not sep.is_internal_topic("mm2-progress.A.internal")
    # the Connect offsets topic stays '.'-separated whatever the separator, as in MM2
    assert flow_config(**{"replication.policy.separator": "__"}).offset_storage_topic == "mm2-offsets.A.internal"


class FakeCheckpoints(CheckpointEmitter):
    """The checkpoint emitter of one flow whose jobs count their calls (no Kafka involved)."""

    def __init__(self, flow: FlowConfig) -> None:
        super().__init__(FlowContext.build(parse_config(CLUSTERS), flow), reverse=None)
        self.calls: Counter[str] = Counter()

    def emit(self) -> list[Any]:
        self.calls["emit"] += 1
        return []

    def refresh_groups(self) -> list[str]:
        self.calls["refresh_groups"] += 1
        return []

    def sync_group_offsets(self) -> dict[str, int]:
        self.calls["sync_group_offsets"] += 1
        return {}


def run_for(scheduler: Scheduler, clock: list[float], seconds: int) -> None:
    for _ in range(seconds):
        clock[0] += 1.0
        scheduler.run_pending()


def test_refresh_groups_is_a_job_of_its_own_at_its_interval() -> None:
    flow = flow_config(**{"refresh.groups.interval.seconds": "5", "emit.checkpoints.interval.seconds": "2"})
    clock = [0.0]
    scheduler = Scheduler(clock=lambda: clock[0])
    cp = FakeCheckpoints(flow)
    jobs = scheduler.add_jobs(cp)
    assert [j.name for j in jobs] == ["checkpoints A->B", "refresh groups A->B"]
    run_for(scheduler, clock, 20)
    assert cp.calls == {"emit": 10, "refresh_groups": 4}


@pytest.mark.parametrize(
    "props",
    [{"refresh.groups.enabled": "false"}, {"refresh.groups.interval.seconds": "-1"}],
    ids=["enabled=false", "negative interval"],
)
def test_disabled_group_refresh_never_runs(props: dict[str, str]) -> None:
    flow = flow_config(**props, **{"emit.checkpoints.interval.seconds": "1"})
    assert not flow.refresh_groups_enabled
    clock = [0.0]
    scheduler = Scheduler(clock=lambda: clock[0])
    cp = FakeCheckpoints(flow)
    assert [j.name for j in scheduler.add_jobs(cp)] == ["checkpoints A->B"]
    run_for(scheduler, clock, 30)
    assert cp.calls == {"emit": 30}


def test_sync_group_offsets_job_only_when_enabled() -> None:
    clock = [0.0]
    on = FakeCheckpoints(flow_config(**{"sync.group.offsets.enabled": "true"}))
    names = [j.name for j in Scheduler(clock=lambda: clock[0]).add_jobs(on)]
    assert names == ["checkpoints A->B", "refresh groups A->B", "sync group offsets A->B"]


def test_admin_timeout_reaches_the_control_jobs() -> None:
    """Every admin call of a flow's control jobs waits admin.timeout.ms: the flow's admin wrappers carry it."""
    from fakes import two_clusters
    from mirrorspark.client.context import FlowContext, ReplicationContext
    from mirrorspark.replication.connector.checkpoint_emitter import CheckpointEmitter
    from mirrorspark.replication.connector.flow import Flow

    assert flow_config(**{"admin.timeout.ms": "1234"}).admin_timeout_ms == 1234
    assert flow_config().admin_timeout_ms == 60_000
    cfg, _, _, clients = two_clusters("admin.timeout.ms = 1234\n")
    flow = Flow(FlowContext.build(cfg, cfg.flow("A", "B"), clients=clients), cfg.data_path)
    assert flow.source_admin.timeout_s == flow.target_admin.timeout_s == pytest.approx(1.234)
    assert TopicAclSync.for_flow(flow)._admins() == (flow.source_admin, flow.target_admin)
    contexts = ReplicationContext(cfg, clients)
    emitter = CheckpointEmitter(contexts.flow("A", "B"), reverse=None)
    assert emitter._src_admin.timeout_s == emitter._tgt_admin.timeout_s == pytest.approx(1.234)


def test_emit_lists_groups_only_when_they_were_never_listed(monkeypatch: pytest.MonkeyPatch) -> None:
    """The old bug: with refresh.groups disabled (negative interval) every checkpoint cycle listed groups."""
    from mirrorspark.client.context import ReplicationContext
    from mirrorspark.replication.connector.checkpoint_emitter import CheckpointEmitter

    props = {"clusters": "A, B", "A.bootstrap.servers": "a:9092", "B.bootstrap.servers": "b:9092"}
    config = parse_config({**props, "refresh.groups.interval.seconds": "-1"})
    contexts = ReplicationContext(config)
    cp = CheckpointEmitter(contexts.flow("A", "B"), reverse=contexts.flow("B", "A"))
    listed: list[int] = []

    def refresh_groups() -> list[str]:
        listed.append(1)
        cp.state.groups_refreshed_at = float(len(listed))
        return []

    monkeypatch.setattr(cp, "refresh_groups", refresh_groups)
    cp._producer = SimpleNamespace(produce=None, flush=lambda timeout: 0)
    cp.syncs = SimpleNamespace(poll=lambda: 0)  # type: ignore[assignment]
    for _ in range(5):
        assert cp.emit() == []
    assert len(listed) == 1
