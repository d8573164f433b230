"""``mirrorspark placement plan|apply|status|finish``: replica placement of a cluster's existing topics.

Confluent's ``confluent-rebalancer execute --replica-placement-only --throttle N`` / ``status`` /
``finish``, on Apache Kafka's reassignment (see :mod:`mirrorspark.regions.placement_tool`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer

from mirrorspark.cli.common import (
    ConfigArgument,
    JsonOption,
    TimeoutOption,
    check_reachable,
    err_console,
    parse_duration,
    text_table,
)
from mirrorspark.cli.conventions import ConventionGroup

T = TypeVar("T")

placement_app = typer.Typer(
    help="Place a cluster's replicas by rack with Confluent's placement JSON, on Apache Kafka's reassignment "
    "(confluent-rebalancer --replica-placement-only): plan, apply (with a throttle), status, finish.",
    no_args_is_help=True,
    cls=ConventionGroup,
)

ClusterOption = Annotated[str, typer.Option("--cluster", help="Alias of the cluster whose topics are placed.")]
PlacementOption = Annotated[
    Path,
    typer.Option(
        "--placement",
        help='Confluent placement JSON file: {"version": 1, "replicas": [{"count": N, "constraints": {"rack": R}}]}, '
        'or a list [{"topics": REGEX, "placement": {...}}] (first match wins).',
    ),
]
TopicsOption = Annotated[
    str | None,
    typer.Option(
        "--topic-regex",
        help="Only topics whose whole name matches this regex (--topics elsewhere lists topic names).",
        show_default=False,
    ),
]


def _ids(ids: tuple[int, ...] | list[int]) -> str:
    return ",".join(str(b) for b in ids) or "-"


def _with_tool(
    config: Path, cluster: str, placement: Path, topics: str | None, timeout: float | None, action: Callable[[Any], T]
) -> T:
    """Run ``action`` on a :class:`~mirrorspark.regions.placement_tool.PlacementTool` (errors: the one error line)."""
    from mirrorspark.config.parse import load_config
    from mirrorspark.regions.placement_tool import PlacementTool, load_placement_file

    rules = load_placement_file(placement)  # before anything connects
    for note in rules.notes:
        err_console.print(f"[yellow]warning[/]: {placement}: {note}", highlight=False)
    cfg = load_config(config)
    check_reachable(cfg, [cluster], timeout)  # its address and the fix, within --timeout
    with PlacementTool(cfg, cluster, rules, topics=topics, timeout_s=timeout) as tool:
        return action(tool)


def _print_plan(plan: Any) -> None:
    racks = ", ".join(f"{b}={r or '-'}" for b, r in sorted(plan.brokers.items()))
    print(
        f"cluster {plan.cluster} (brokers: {racks}): {len(plan.topics)} placed topic(s), {plan.partitions} "
        f"partition(s), {len(plan.moves)} to move"
    )
    if plan.in_progress:
        print(f"{len(plan.in_progress)} partition(s) already being reassigned: see `mirrorspark placement status`")
    if plan.moves:
        rows: list[list[object]] = [
            [
                m.topic,
                m.partition,
                _ids(m.current),
                _ids(m.target),
                _ids(m.adding),
                _ids(m.removing),
                "; ".join(m.reasons),
            ]
            for m in plan.moves
        ]
        print(text_table(["topic", "partition", "replicas", "target", "adding", "removing", "why"], rows), end="")


@placement_app.command("plan")
def placement_plan(
    config: ConfigArgument,
    cluster: ClusterOption,
    placement: PlacementOption,
    topics: TopicsOption = None,
    json_out: JsonOption = False,
    timeout: TimeoutOption = None,
) -> None:
    """Show the reassignments that would put CLUSTER's topics in their placement (only partitions out of it)."""
    plan = _with_tool(config, cluster, placement, topics, timeout, lambda tool: tool.plan())
    if json_out:
        print(json.dumps(plan.to_json(), indent=2))
        return
    _print_plan(plan)


@placement_app.command("apply")
def placement_apply(
    config: ConfigArgument,
    cluster: ClusterOption,
    placement: PlacementOption,
    topics: TopicsOption = None,
    throttle: Annotated[
        int | None,
        typer.Option(
            "--throttle",
            min=1024,
            help="Replication throttle of the moving replicas, in bytes/s (kept until `placement finish`).",
            show_default=False,
        ),
    ] = None,
    json_out: JsonOption = False,
    timeout: TimeoutOption = None,
) -> None:
    """Start the reassignments that put CLUSTER's topics in their placement, with Kafka's reassignment tool.

    Follow with `mirrorspark placement status`; once done, `mirrorspark placement finish` removes the throttle.
    """

    def plan_and_apply(tool: Any) -> tuple[Any, str]:
        plan = tool.plan()
        return plan, tool.apply(plan, throttle=throttle)

    plan, rollback = _with_tool(config, cluster, placement, topics, timeout, plan_and_apply)
    if json_out:
        print(json.dumps({**plan.to_json(), "throttle": throttle, "started": len(plan.moves), "rollback": rollback}))
        return
    _print_plan(plan)
    if not plan.moves:
        print("nothing to move: every partition satisfies its placement")
        return
    limit = f"a replication throttle of {throttle} B/s" if throttle is not None else "no throttle"
    print(f"started {len(plan.moves)} reassignment(s) with {limit}")
    print(f"rollback (the replicas before the move): {rollback}")
    print("follow with `mirrorspark placement status`, then `mirrorspark placement finish` to remove the throttle")


@placement_app.command("status")
def placement_status(
    config: ConfigArgument,
    cluster: ClusterOption,
    placement: PlacementOption,
    topics: TopicsOption = None,
    json_out: JsonOption = False,
    timeout: TimeoutOption = None,
) -> None:
    """Show every partition of CLUSTER's placed topics (done, in progress, pending) and the throttles in force."""
    from dataclasses import asdict

    st = _with_tool(config, cluster, placement, topics, timeout, lambda tool: tool.status())
    if json_out:
        doc = {
            "cluster": st.cluster,
            "partitions": [asdict(p) for p in st.partitions],
            "throttles": {k: dict(v) for k, v in st.throttles.items()},
            "done": st.count("done"),
            "in_progress": st.count("in progress"),
            "pending": st.count("pending"),
        }
        print(json.dumps(doc, indent=2))
        return
    print(
        f"cluster {st.cluster}: {st.count('done')} partition(s) placed, {st.count('in progress')} in progress, "
        f"{st.count('pending')} pending"
    )
    rows: list[list[object]] = [
        [p.topic, p.partition, _ids(p.replicas), _ids(p.target), _ids(p.adding), _ids(p.removing), p.state]
        for p in st.partitions
    ]
    print(text_table(["topic", "partition", "replicas", "target", "adding", "removing", "state"], rows), end="")
    if st.throttles:
        print("throttles in force (removed by `mirrorspark placement finish`):")
        trows: list[list[object]] = [[where, k, v] for where, conf in st.throttles.items() for k, v in conf.items()]
        print(text_table(["where", "config", "value"], trows), end="")
    else:
        print("no throttle in force")


@placement_app.command("finish")
def placement_finish(
    config: ConfigArgument,
    cluster: ClusterOption,
    placement: PlacementOption,
    topics: TopicsOption = None,
    wait: Annotated[
        float,
        typer.Option(
            "--wait",
            parser=lambda v: 0.0 if v in ("0", 0) else parse_duration(v),
            metavar="DURATION",
            help="How long to wait for reassignments still in progress: 30s, 5m (a bare number is seconds).",
        ),
    ] = 0.0,
    json_out: JsonOption = False,
    timeout: TimeoutOption = None,
) -> None:
    """Once CLUSTER's placed topics are moved: remove the throttles and elect preferred leaders.

    Exits 1, changing nothing, while a partition of those topics is still being reassigned.
    """
    result = _with_tool(config, cluster, placement, topics, timeout, lambda tool: tool.finish(wait_s=wait))
    if json_out:
        print(
            json.dumps(
                {
                    "done": result.done,
                    "in_progress": [{"topic": t, "partition": p} for t, p in result.in_progress],
                    "removed": {k: list(v) for k, v in result.removed.items()},
                    "kept_broker_throttles": result.kept_broker_throttles,
                    "elected": [{"topic": t, "partition": p} for t, p in result.elected],
                }
            )
        )
    elif not result.done:
        parts = ", ".join(f"{t}-{p}" for t, p in result.in_progress[:10])
        print(
            f"still in progress: {len(result.in_progress)} partition(s) ({parts}); the throttle stays; "
            "run `mirrorspark placement finish` again later (or with --wait SECONDS)"
        )
    else:
        for where, names in result.removed.items():
            print(f"removed from {where}: {', '.join(names)}")
        if not result.removed:
            print("no throttle was set")
        if result.kept_broker_throttles:
            print("kept the brokers' throttle rates: other reassignments are still in progress")
        print(f"preferred leaders elected: {len(result.elected)} partition(s); placement finished")
    if not result.done:
        raise typer.Exit(1)


__all__ = ["placement_app"]
