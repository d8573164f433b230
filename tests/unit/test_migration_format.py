"""Pure parts of the consumer-migration tooling: reset plans, re-read counts, names, tables, alias errors."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mirrorspark.cli.app import app, text_table
from mirrorspark.client.mirror_client import cluster_policy
from mirrorspark.config.parse import parse_config
from mirrorspark.config.properties import parse_properties
from mirrorspark.migration.plans import FailoverOffset, FailoverPlan, reset_plan_csv
from mirrorspark.mm2.checkpoint_rules import rename_topic, rereads_at, upstream_topic_of
from mirrorspark.mm2.policy import DefaultReplicationPolicy, IdentityReplicationPolicy

pytestmark = pytest.mark.unit


# --------------------------------------------------------------------------- reset plans (ConsumerGroupCommand)


def test_reset_plan_for_one_group_has_three_columns() -> None:
    plan = {"g": {("primary.t", 1): 30, ("primary.t", 0): 50, ("primary.a", 0): 7}}
    assert reset_plan_csv(plan, with_group=False) == "primary.a,0,7\nprimary.t,0,50\nprimary.t,1,30\n"


def test_reset_plan_for_several_groups_has_a_group_column() -> None:
    plan = {"g2": {("t", 0): 1}, "g1": {("t", 0): 5, ("t", 1): 6}}
    assert reset_plan_csv(plan, with_group=True) == "g1,t,0,5\ng1,t,1,6\ng2,t,0,1\n"


def test_reset_plan_quotes_group_ids_as_jackson_csv_reads_them() -> None:
    plan = {'a,b "c"': {("t", 0): 1}}
    text = reset_plan_csv(plan, with_group=True)
    assert text == '"a,b ""c""",t,0,1\n'
    assert list(csv.reader(io.StringIO(text))) == [['a,b "c"', "t", "0", "1"]]


def test_reset_plan_edge_cases() -> None:
    assert reset_plan_csv({}, with_group=True) == ""
    assert reset_plan_csv({"g": {}}, with_group=False) == ""
    with pytest.raises(ValueError, match="one group"):
        reset_plan_csv({"a": {("t", 0): 1}, "b": {("t", 0): 1}}, with_group=False)


# --------------------------------------------------------------------------- re-reads


@pytest.mark.parametrize(
    ("downstream", "live_downstream", "live_rereads", "expected"),
    [
        (50, 45, 5, 0),  # an exact checkpoint skips every re-read of the live translation
        (48, 45, 5, 2),  # part of them
        (45, 45, 5, 5),  # the same offset: the same re-reads
        (40, 45, 5, 10),  # an older checkpoint re-reads more
        (60, 45, 5, 0),  # never negative
        (7, 7, 0, 0),
    ],
)
def test_rereads_at(downstream: int, live_downstream: int, live_rereads: int, expected: int) -> None:
    assert rereads_at(downstream, live_downstream, live_rereads) == expected


def test_failover_plan_totals() -> None:
    def offset(rereads: int | None) -> FailoverOffset:
        return FailoverOffset("t", 0, 1, 1, "", None, rereads)

    plan = FailoverPlan("g", "A", "B", (offset(3), offset(None), offset(4)), applied=False, source_members=None)
    assert (plan.total_rereads, plan.unknown_rereads) == (7, 1)


# --------------------------------------------------------------------------- names


@pytest.mark.parametrize(
    ("upstream", "renamed"),
    [
        ("t", "A.t"),
        ("C.t", "A.C.t"),  # multi-hop
        ("B.t", "t"),  # failback: B's topic on A checkpoints as the original name
    ],
)
def test_upstream_topic_of_inverts_rename_topic(upstream: str, renamed: str) -> None:
    policy = DefaultReplicationPolicy()
    assert rename_topic(policy, "A", "B", upstream) == renamed
    assert upstream_topic_of(policy, "A", "B", renamed) == upstream


def test_upstream_topic_of_with_identity_and_custom_separator() -> None:
    identity = IdentityReplicationPolicy(source_cluster_alias="A")
    assert rename_topic(identity, "A", "B", "orders") == "orders"
    assert upstream_topic_of(identity, "A", "B", "orders") == "orders"
    underscore = DefaultReplicationPolicy(separator="__")
    assert upstream_topic_of(underscore, "A", "B", "A__t") == "t"
    assert upstream_topic_of(underscore, "A", "B", "t") == "B__t"


def test_cluster_policy_is_that_of_the_flows_into_the_cluster() -> None:
    cfg = parse_config(
        parse_properties(
            "clusters = A, B, C\nA.bootstrap.servers = a:1\nB.bootstrap.servers = b:1\nC.bootstrap.servers = c:1\n"
            "A->B.enabled = true\nA->B.replication.policy.separator = _\n"
            "C->A.replication.policy.class = IdentityReplicationPolicy\n"
        )
    )
    b = cluster_policy(cfg, "B")
    assert isinstance(b, DefaultReplicationPolicy) and b.format_remote_topic("A", "t") == "A_t"
    assert isinstance(cluster_policy(cfg, "A"), DefaultReplicationPolicy)  # B->A comes first and is default
    assert cluster_policy(cfg, "C").format_remote_topic("A", "t") == "A.t"


# --------------------------------------------------------------------------- tables


def test_text_table_aligns_columns_and_shows_none_as_dash() -> None:
    out = text_table(["topic", "partition", "offset"], [["primary.orders", 0, 50], ["t", 12, None]])
    assert out == "topic           partition  offset\nprimary.orders  0          50\nt               12         -\n"


def test_text_table_never_reads_markup() -> None:
    assert text_table(["group"], [["[bold]g[/]"]]) == "group\n[bold]g[/]\n"


# --------------------------------------------------------------------------- CLI input errors (no cluster needed)

CONFIG = "clusters = A, B\nA.bootstrap.servers = 127.0.0.1:1\nB.bootstrap.servers = 127.0.0.1:2\nA->B.enabled = true\n"


@pytest.mark.parametrize(
    "args",
    [
        ["offsets", "export", "--source", "A", "--target", "Z"],
        ["offsets", "translate", "--source", "Z", "--target", "B", "--group", "g"],
        ["failover", "--source", "A", "--target", "Z", "--group", "g"],
        ["checkpoints", "read", "--cluster", "Z", "--source", "A"],
    ],
)
def test_unknown_alias_exits_2_before_connecting(tmp_path: Path, args: list[str]) -> None:
    props = tmp_path / "mm2.properties"
    props.write_text(CONFIG)
    r = CliRunner().invoke(app, [*args, "--config", str(props)])
    assert r.exit_code == 2, r.output
    assert "CONFIG_UNKNOWN_ALIAS" in r.output and "'Z'" in r.output


def test_same_source_and_target_is_a_config_error(tmp_path: Path) -> None:
    props = tmp_path / "mm2.properties"
    props.write_text(CONFIG)
    r = CliRunner().invoke(app, ["offsets", "export", "--source", "A", "--target", "A", "--config", str(props)])
    assert r.exit_code == 2 and "CONFIG_INVALID" in r.output


def test_export_format_is_checked() -> None:
    r = CliRunner().invoke(
        app, ["offsets", "export", "--source", "A", "--target", "B", "--config", "x", "--format", "x"]
    )
    assert r.exit_code == 2
