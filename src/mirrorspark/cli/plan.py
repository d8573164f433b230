"""``mirrorspark plan``: what a run would do now, per enabled flow, with nothing written (exit 10: changes)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Annotated, Final

import typer
from rich.markup import escape

from mirrorspark.cli.common import (
    ConfigArgument,
    JsonOption,
    StartTimeoutOption,
    as_dict,
    check_reachable,
    list_option,
    out_console,
    text_table,
)

if TYPE_CHECKING:
    from mirrorspark.replication.connector.plan import FlowPlan, RunPlan

CHANGES_EXIT_CODE: Final = 10
"""``mirrorspark plan``'s exit status when a run would change something or lacks a permission (0: nothing to do)."""


def plan(
    config: ConfigArgument,
    clusters: Annotated[
        list[str] | None,
        list_option("--clusters", help="Plan only flows whose target is one of these aliases (as run's --clusters)."),
    ] = None,
    json_out: JsonOption = False,
    timeout: StartTimeoutOption = None,
) -> None:
    """Show what a run of CONFIG would do now, writing nothing: topics, configs, ACLs, group offsets, permissions.

    Per enabled flow: remote topics to create (partitions, configs) or change, topic ACLs to add, group
    offsets group sync would write (from -> to) and groups it would skip as active; the internal topics
    to create; the operations each cluster's principal lacks. Exit status: 0 nothing to do, 10 changes
    (or a missing permission), an error's own code otherwise.
    """
    from mirrorspark.client.context import ReplicationContext
    from mirrorspark.config.parse import load_config
    from mirrorspark.config.runnable import runnable_flows
    from mirrorspark.replication.connector.plan import plan_run

    cfg = load_config(config, clusters=clusters)
    flows = runnable_flows(cfg, clusters or None)
    context = ReplicationContext(cfg)
    check_reachable(cfg, (), timeout, flows=flows, context=context)
    result = plan_run(context, clusters or None)
    if json_out:
        print(json.dumps({"changes": result.changes, **as_dict(result)}, indent=2))
    else:
        print_plan(result)
    if result.changes:
        raise typer.Exit(CHANGES_EXIT_CODE)


def print_plan(p: RunPlan) -> None:
    """Print a plan for a person: each flow's changes, the internal topics, what principals lack."""
    for f in p.flows:
        _print_flow(f)
    if p.internal_topics:
        out_console.print("[bold]internal topics to create[/]")
        rows: list[list[object]] = [
            [t.cluster, t.topic, t.role, t.partitions, _rf(t.replication_factor), _configs(t.config)]
            for t in p.internal_topics
        ]
        print(text_table(["cluster", "topic", "role", "partitions", "replication", "configs"], rows))
    if p.lacks:
        out_console.print("[bold red]what the principals lack[/]")
        rows = [[x.cluster, x.operation, x.resource, x.needed_for] for x in p.lacks]
        print(text_table(["cluster", "operation", "on", "needed for"], rows))
    for problem in p.problems:
        out_console.print(f"note: {problem}", highlight=False, markup=False)
    verdict = "changes: a run would write the above" if p.changes else "nothing to do"
    out_console.print(f"[bold]{verdict}[/]", highlight=False)


def _print_flow(f: FlowPlan) -> None:
    verdict = "changes" if f.changes else "nothing to do"
    out_console.print(f"[bold]flow {escape(f.flow)}[/]: {verdict}", highlight=False)
    if f.topics_to_create:
        rows: list[list[object]] = [
            [t.topic, t.source_topic, t.partitions, _rf(t.replication_factor), _configs(t.config)]
            for t in f.topics_to_create
        ]
        print(text_table(["topic to create", "from", "partitions", "replication", "configs"], rows))
    if f.topics_to_change:
        rows = [
            [
                t.topic,
                "-" if t.partitions is None else f"{t.partitions[0]} -> {t.partitions[1]}",
                ", ".join(f"{k}: {_v(x, DEFAULT)} -> {_v(y, DEFAULT)}" for k, (x, y) in sorted(t.configs.items()))
                or "-",
            ]
            for t in f.topics_to_change
        ]
        print(text_table(["topic to change", "partitions", "configs"], rows))
    if f.acls_to_add:
        rows = [[a.topic, a.principal, a.host, a.operation, a.permission] for a in f.acls_to_add]
        print(text_table(["ACL to add on topic", "principal", "host", "operation", "permission"], rows))
    if f.group_offsets:
        rows = [[g.group, g.topic, g.partition, _v(g.before), g.after] for g in f.group_offsets]
        print(text_table(["group offset to write", "topic", "partition", "from", "to"], rows))
    if f.skipped_groups:
        rows = [[g.group, g.state or "-", g.reason] for g in f.skipped_groups]
        print(text_table(["group skipped", "state", "why"], rows))
    for problem in f.problems:
        out_console.print(f"note: {problem}", highlight=False, markup=False)


DEFAULT = "(default)"


def _rf(n: int) -> str:
    return "broker default" if n < 0 else str(n)


def _v(value: object, unset: str = "(none)") -> str:
    return unset if value is None else str(value)


def _configs(config: dict[str, str]) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted(config.items())) or "-"


__all__ = ["CHANGES_EXIT_CODE", "plan", "print_plan"]
