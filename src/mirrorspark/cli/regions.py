"""Multi-region commands on one cluster: ``replica-status`` (as ``kafka-replica-status``) and ``elect``."""

from __future__ import annotations

import json
from enum import StrEnum
from typing import TYPE_CHECKING, Annotated, Final

import typer

from mirrorspark.cli.common import (
    ConfigArgument,
    JsonOption,
    TimeoutOption,
    check_reachable,
    fail,
    list_option,
    text_table,
)
from mirrorspark.errors import ConfigError

if TYPE_CHECKING:
    from mirrorspark.core.replica_rows import ElectionOutcome
    from mirrorspark.regions.replica_status import ReplicaStatus

ClusterOption = Annotated[str, typer.Option("--cluster", help="The cluster alias (from 'clusters' in CONFIG).")]

_TABLE = [
    "Topic",
    "Partition",
    "Replica",
    "Rack",
    "IsLeader",
    "IsInIsr",
    "IsCaughtUp",
    "LogStartOffset",
    "LogEndOffset",
]
_VERBOSE = ["IsObserver", "IsIsrEligible", "LastCaughtUpLagMs", "LastFetchLagMs"]


def _flag(value: bool) -> str:
    return "true" if value else "false"


REPLICA_STATUS_CONTEXT: Final = {"allow_extra_args": True, "ignore_unknown_options": True}
"""Click settings of ``replica-status``: ``--leaders [exclude]`` has an optional value, which Typer cannot declare."""


def _leaders_mode(extra: list[str]) -> str:
    """Read ``--leaders [exclude]`` from the arguments Typer left over; ConfigError for anything else."""
    if not extra:
        return "all"
    if extra == ["--leaders"]:
        return "only"
    if extra == ["--leaders", "exclude"]:
        return "exclude"
    raise ConfigError(
        f"unexpected arguments {' '.join(extra)!r}: --leaders (leaders only) or --leaders exclude (followers only), "
        "after CONFIG"
    )


def replica_status(
    ctx: typer.Context,
    config: ConfigArgument,
    cluster: ClusterOption,
    topics: Annotated[list[str] | None, list_option("--topics", help="Topic names (default: every topic).")] = None,
    partitions: Annotated[
        str | None, typer.Option("--partitions", help="Partition ids and ranges, e.g. 0,5-7 (default: all).")
    ] = None,
    exclude_internal: Annotated[
        bool, typer.Option("--exclude-internal", help="Leave out Kafka's and MM2's internal topics.")
    ] = False,
    remote: Annotated[
        bool,
        typer.Option(
            "--remote",
            help="Also show per partition the remote copies that enabled flows keep in other clusters "
            "(position, lag in records and seconds).",
        ),
    ] = False,
    json_out: Annotated[
        bool, typer.Option("--json", help="Print a JSON list of objects keyed as kafka-replica-status does.")
    ] = False,
    verbose: Annotated[
        bool, typer.Option("--verbose", help="Also print IsObserver, IsIsrEligible and the lag columns.")
    ] = False,
    timeout: TimeoutOption = None,
) -> None:
    """Show every replica of CLUSTER's partitions, one row each, as Confluent's kafka-replica-status does.

    --leaders shows leaders only, --leaders exclude followers only.
    Columns Apache Kafka cannot give are -1 (see the legend printed below the table); Apache Kafka has no
    observers: --remote shows mirrorspark's asynchronous copies in other clusters instead.
    """
    from mirrorspark.config.parse import load_config
    from mirrorspark.core.replica_rows import LeadersMode, parse_partitions
    from mirrorspark.regions.replica_status import replica_status as compute

    modes: dict[str, LeadersMode] = {"all": "all", "only": "only", "exclude": "exclude"}
    leaders = _leaders_mode(list(ctx.args))
    wanted = parse_partitions(partitions) if partitions is not None else None
    names = list(dict.fromkeys(topics)) if topics else None
    cfg = load_config(config)
    check_reachable(cfg, [cluster], timeout)  # its address and the fix, within --timeout
    status = compute(
        cfg,
        cluster,
        topics=names,
        partitions=wanted,
        leaders=modes[leaders],
        exclude_internal=exclude_internal,
        remote=remote,
        timeout_s=timeout,
    )
    if json_out:
        _print_replica_json(status, remote)
        return
    _print_replica_table(status, cluster, verbose=verbose, remote=remote)


def _print_replica_json(status: ReplicaStatus, remote: bool) -> None:
    """Print ``replica-status --json``: one object per replica, with its remote copies under ``--remote``."""
    doc = []
    for r in status.rows:
        obj = r.to_json()
        if remote:
            obj["remote"] = [c.to_json() for c in status.remote.get((r.topic, r.partition), [])]
        doc.append(obj)
    print(json.dumps(doc, indent=2))


def _print_replica_table(status: ReplicaStatus, cluster: str, *, verbose: bool, remote: bool) -> None:
    """Print ``replica-status``'s table, the remote copies under ``--remote``, then the legend."""
    from mirrorspark.core.replica_rows import LEGEND

    headers = _TABLE + (_VERBOSE if verbose else [])
    rows: list[list[object]] = []
    for r in status.rows:
        row: list[object] = [
            r.topic,
            r.partition,
            r.replica,
            r.rack,
            _flag(r.is_leader),
            _flag(r.is_in_isr),
            _flag(r.is_caught_up),
            r.log_start_offset,
            r.log_end_offset,
        ]
        if verbose:
            row += [_flag(r.is_observer), _flag(r.is_isr_eligible), r.last_caught_up_lag_ms, r.last_fetch_lag_ms]
        rows.append(row)
    print(text_table(headers, rows), end="")
    if remote:
        copies = [c for s in status.partitions for c in status.remote.get((s.topic, s.partition), [])]
        print(f"\nRemote copies of {cluster}'s partitions (enabled flows from {cluster}):")
        print(
            text_table(
                ["Topic", "Partition", "Cluster", "RemoteTopic", "Position", "LagRecords", "LagSeconds"],
                [
                    [c.topic, c.partition, c.cluster, c.remote_topic, c.position, c.lag_records, f"{c.lag_s:g}"]
                    for c in copies
                ],
            ),
            end="",
        )
        if not copies:
            print("(no enabled flow from this cluster replicates these topics)")
    print(f"\n{LEGEND}")


class ElectionTypeChoice(StrEnum):
    """``--type`` of ``elect`` (``kafka-leader-election --election-type``)."""

    PREFERRED = "preferred"
    UNCLEAN = "unclean"


def elect(
    config: ConfigArgument,
    cluster: ClusterOption,
    type_: Annotated[
        ElectionTypeChoice,
        typer.Option(
            "--type",
            case_sensitive=False,
            help="preferred: make each partition's first replica the leader again (fail back); unclean: elect "
            "any live replica of a partition that has no in-sync replica left (may lose records).",
        ),
    ],
    topic: Annotated[str | None, typer.Option("--topic", help="The topic (with --partition: one partition).")] = None,
    partition: Annotated[
        int | None, typer.Option("--partition", min=0, help="The partition of --topic (default: all of them).")
    ] = None,
    all_: Annotated[bool, typer.Option("--all", help="Every partition of the cluster.")] = False,
    yes_lose_data: Annotated[
        bool,
        typer.Option(
            "--yes-i-may-lose-data",
            help="Confirm an unclean election: records the new leader lacks are lost, flows record a gap.",
        ),
    ] = False,
    json_out: JsonOption = False,
    timeout: TimeoutOption = None,
) -> None:
    """Run a leader election on CLUSTER (as kafka-leader-election) and print leaders and end offsets before and after.

    An unclean election may truncate a partition: the end offset after is then below the offset before (or
    below what flows copied, when the partition had no leader before), and every flow reading it records a
    'truncated' gap (see `mirrorspark status`). Exit 3 when an election failed for some partition.
    """
    import dataclasses

    from mirrorspark.config.parse import load_config
    from mirrorspark.core.replica_rows import election_failures
    from mirrorspark.errors import ClusterError
    from mirrorspark.regions.replica_status import elect as run_election

    if all_ == (topic is not None):
        raise ConfigError("elect needs either --topic T [--partition P] or --all")
    if partition is not None and topic is None:
        raise ConfigError("--partition needs --topic")
    if type_ is ElectionTypeChoice.UNCLEAN and not yes_lose_data:
        raise ConfigError(
            "an unclean election elects a replica that may lack records the old leader had (they are lost, "
            "and flows reading the partition record a gap): add --yes-i-may-lose-data to go ahead"
        )
    cfg = load_config(config)
    check_reachable(cfg, [cluster], timeout)  # its address and the fix, within --timeout
    targets = None
    if topic is not None:
        if partition is not None:
            targets = [(topic, partition)]
        else:
            from mirrorspark.regions.replica_status import replica_status as compute

            states = compute(cfg, cluster, topics=[topic], timeout_s=timeout).partitions
            targets = [(s.topic, s.partition) for s in states]
    outcomes = run_election(cfg, cluster, type_.value, targets, timeout_s=timeout)
    failed = election_failures(outcomes)
    if json_out:
        print(json.dumps([{**dataclasses.asdict(o), "truncated": o.truncated} for o in outcomes], indent=2))
    else:
        _print_election_table(outcomes)
    if failed:
        o = failed[0]
        raise fail(
            ClusterError(
                f"the {type_.value} election failed for {len(failed)} partition(s), "
                f"e.g. {o.topic}-{o.partition}: {o.error}"
            )
        )


def _print_election_table(outcomes: list[ElectionOutcome]) -> None:
    """Print ``elect``'s table of leaders and end offsets before and after, and a truncation notice."""
    rows: list[list[object]] = [
        [
            o.topic,
            o.partition,
            o.leader_before,
            o.leader_after,
            o.end_before,
            o.end_after,
            o.truncated,
            o.error or "ok",
        ]
        for o in outcomes
    ]
    print(
        text_table(
            ["Topic", "Partition", "LeaderBefore", "LeaderAfter", "EndBefore", "EndAfter", "Truncated", "Result"],
            rows,
        ),
        end="",
    )
    print("(-1: no leader, so no end offset; end offsets are high watermarks)")
    if any(o.truncated for o in outcomes):
        print("records were truncated: flows reading these partitions record a 'truncated' gap")


__all__ = ["REPLICA_STATUS_CONTEXT", "elect", "replica_status"]
