"""A flow's internal topic names, built once (``InternalTopics``): byte for byte the names MM2 and earlier runs used."""

from __future__ import annotations

import dataclasses

import pytest

from mirrorspark.client.context import FlowContext, flow_policy
from mirrorspark.config.internal_topics import InternalTopics
from mirrorspark.config.model import FlowConfig, MirrorConfig
from mirrorspark.config.parse import parse_config
from mirrorspark.core.drills import DRILLS_PREFIX
from mirrorspark.core.gaps import GAPS_PREFIX
from mirrorspark.core.lease_claims import LEASE_PREFIX
from mirrorspark.core.verify.history import VERIFY_PREFIX
from mirrorspark.mm2.internal_topics import (
    CONTROL_PREFIX,
    TASK_PROGRESS_PREFIX,
    TOTALS_PREFIX,
    connect_configs_topic,
    connect_offsets_topic,
    connect_status_topic,
    mirrorspark_topic,
)

pytestmark = pytest.mark.unit


def config(**props: str) -> MirrorConfig:
    return parse_config({"clusters": "A, B", "A.bootstrap.servers": "a:9092", "B.bootstrap.servers": "b:9092", **props})


def topics_of(**props: str) -> InternalTopics:
    cfg = config(**props)
    return FlowContext.build(cfg, cfg.flow("A", "B")).internal_topics


DEFAULT = InternalTopics(
    offsets="mm2-offsets.A.internal",
    connect_configs="mm2-configs.A.internal",
    connect_status="mm2-status.A.internal",
    offset_syncs="mm2-offset-syncs.B.internal",
    checkpoints="A.checkpoints.internal",
    heartbeats="heartbeats",
    progress_channel="mm2-task-progress.A.internal",
    totals="mm2-progress.A.internal",
    control="mm2-control.A.internal",
    gaps="mm2-gaps.A.internal",
    lease="mm2-lease.A.internal",
    drills="mm2-drills.A.internal",
    verifications="mm2-verify.A.internal",
)

UNDERSCORES = dataclasses.replace(
    DEFAULT,  # Connect's own topics and the heartbeats never take the separator (MM2's workerConfig, KIP-949)
    offset_syncs="mm2-offset-syncs__B__internal",
    checkpoints="A__checkpoints__internal",
    progress_channel="mm2-task-progress__A__internal",
    totals="mm2-progress__A__internal",
    control="mm2-control__A__internal",
    gaps="mm2-gaps__A__internal",
    lease="mm2-lease__A__internal",
    drills="mm2-drills__A__internal",
    verifications="mm2-verify__A__internal",
)


@pytest.mark.parametrize(
    ("props", "expected"),
    [
        ({}, DEFAULT),
        ({"replication.policy.class": "IdentityReplicationPolicy"}, DEFAULT),
        ({"replication.policy.separator": "__"}, UNDERSCORES),
        (
            {"replication.policy.separator": "__", "replication.policy.internal.topic.separator.enabled": "false"},
            DEFAULT,
        ),
        (
            {"offset-syncs.topic.location": "target"},
            dataclasses.replace(DEFAULT, offset_syncs="mm2-offset-syncs.A.internal"),
        ),
        (
            {"B.offset.storage.topic": "my-offsets", "B.config.storage.topic": "my-configs"},
            dataclasses.replace(DEFAULT, offsets="my-offsets", connect_configs="my-configs"),
        ),
        (
            {
                "transforms": "r",
                "transforms.r.type": "RegexRouter",
                "transforms.r.regex": r"A\.(.*)",
                "transforms.r.replacement": "$1",
            },
            DEFAULT,  # a RegexRouter renames remote topics only
        ),
    ],
    ids=["default", "identity", "separator", "separator-not-internal", "syncs-on-target", "connect-keys", "routed"],
)
def test_every_internal_topic_of_a_flow_is_named_as_before(props: dict[str, str], expected: InternalTopics) -> None:
    assert topics_of(**props) == expected


@pytest.mark.parametrize(
    "props",
    [
        {},
        {"replication.policy.class": "IdentityReplicationPolicy"},
        {"replication.policy.separator": "__"},
        {"replication.policy.separator": "__", "replication.policy.internal.topic.separator.enabled": "false"},
        {"offset-syncs.topic.location": "target", "replication.policy.separator": "-"},
    ],
)
def test_the_names_are_the_naming_rules_applied_to_the_flow(props: dict[str, str]) -> None:
    cfg = config(**props)
    flow = cfg.flow("A", "B")
    policy = flow_policy(flow)
    own = {
        "progress_channel": TASK_PROGRESS_PREFIX,
        "totals": TOTALS_PREFIX,
        "control": CONTROL_PREFIX,
        "gaps": GAPS_PREFIX,
        "lease": LEASE_PREFIX,
        "drills": DRILLS_PREFIX,
        "verifications": VERIFY_PREFIX,
    }
    syncs_alias = "B" if flow.offset_syncs_topic_location == "source" else "A"
    assert topics_of(**props) == InternalTopics(
        offsets=connect_offsets_topic("A"),
        connect_configs=connect_configs_topic("A"),
        connect_status=connect_status_topic("A"),
        offset_syncs=policy.offset_syncs_topic(syncs_alias),
        checkpoints=policy.checkpoints_topic("A"),
        heartbeats=policy.heartbeats_topic(),
        **{field: mirrorspark_topic(prefix, policy, "A") for field, prefix in own.items()},
    )
    names = topics_of(**props)
    # never replicated: the flow's policy sees every name it builds as internal (Connect's are '.'-named, as in MM2)
    for field in ("offset_syncs", "checkpoints", *own):
        assert policy.is_internal_topic(getattr(names, field)), field


class _CustomNames:
    """A policy naming its offset syncs its own way: mirrorspark's own topics fall back to ``.`` names."""

    def offset_syncs_topic(self, cluster_alias: str) -> str:
        return f"syncs-{cluster_alias}"

    def checkpoints_topic(self, cluster_alias: str) -> str:
        return f"checkpoints-{cluster_alias}"

    def heartbeats_topic(self) -> str:
        return "beats"

    def is_internal_topic(self, topic: str) -> bool:
        return True


def test_a_custom_policy_names_mm2_topics_and_mirrorspark_keeps_its_own_dot_names() -> None:
    flow: FlowConfig = config().flow("A", "B")
    names = InternalTopics.of(flow, _CustomNames())
    assert (names.offset_syncs, names.checkpoints, names.heartbeats) == ("syncs-B", "checkpoints-A", "beats")
    assert (names.control, names.lease, names.progress_channel) == (
        "mm2-control.A.internal",
        "mm2-lease.A.internal",
        "mm2-task-progress.A.internal",
    )


def test_the_names_are_built_once_per_flow_context() -> None:
    cfg = config()
    ctx = FlowContext.build(cfg, cfg.flow("A", "B"))
    assert ctx.for_connector("checkpoint").internal_topics is ctx.internal_topics
    assert FlowContext.build(cfg, cfg.flow("B", "A")).internal_topics.offsets == "mm2-offsets.B.internal"
