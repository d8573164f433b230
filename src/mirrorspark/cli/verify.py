"""``mirrorspark verify``: prove on Spark that a flow's target holds what its source holds, record by record."""

from __future__ import annotations

import datetime
import json
import re
from typing import TYPE_CHECKING, Annotated, Any

import typer

from mirrorspark.cli.common import ConfigArgument, JsonOption, TimeoutOption, fail, parse_iso_duration, text_table
from mirrorspark.core.verify.report import DIVERGENCE_EXIT_CODE, FINDING_KINDS, PartitionReport, VerifyReport
from mirrorspark.errors import BadRegexError, ConfigError, error_from_info

if TYPE_CHECKING:
    from mirrorspark.replication.worker.verifier import Verification

FINDINGS_SHOWN = 20
"""Most findings the human output lists (``--json`` lists every one)."""

_RELATIVE = re.compile(r"^\s*(\d+(?:\.\d*)?)\s*(ms|s|m|h|d)\s*$", re.IGNORECASE)
_UNIT_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}


def parse_since(value: str, *, now_ms: int) -> int:
    """Return ``--since`` as epoch ms: an ISO 8601 time (no zone = UTC), an ISO duration (``PT30M``) or ``30m``-style.

    A duration means that long before ``now_ms``. Raises ConfigError for anything else.
    """
    text = value.strip()
    m = _RELATIVE.match(text)
    if m is not None:
        return now_ms - int(float(m.group(1)) * _UNIT_MS[m.group(2).lower()])
    if text.upper().startswith("P"):
        try:
            return now_ms - int(parse_iso_duration(text).total_seconds() * 1000)
        except ConfigError:
            pass
    else:
        try:
            at = datetime.datetime.fromisoformat(text)
        except ValueError:
            pass
        else:
            if at.tzinfo is None:
                at = at.replace(tzinfo=datetime.UTC)
            return int(at.timestamp() * 1000)
    raise ConfigError(
        f"--since {value!r}: give an ISO 8601 time (2026-11-30T08:00:00Z; no zone = UTC), an ISO 8601 duration "
        "(PT30M, P1D) or a duration such as 30m, 2h or 1d: verification starts at the first record at or after it"
    )


def _utc(ms: int) -> str:
    return datetime.datetime.fromtimestamp(ms / 1000, tz=datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _partition_row(p: PartitionReport) -> list[object]:
    kinds = p.by_kind()
    c = p.counts
    counts = [c.verified, c.skipped, c.gap_offsets, c.unverified_offsets]
    return [p.topic, p.partition, p.target_topic, *counts, *(kinds[k] for k in FINDING_KINDS)]


def _findings_rows(report: VerifyReport, limit: int) -> tuple[list[list[object]], int]:
    rows: list[list[object]] = []
    total = 0
    for p in report.partitions:
        total += p.divergent
        for f in p.findings:
            if len(rows) < limit:
                source_at, target_at = f"{p.topic}-{p.partition}", f"{p.target_topic}-{p.partition}"
                rows.append([f.kind, source_at, f.source_offset, target_at, f.target_offset, f.field, f.related_offset])
    return rows, total


def print_verification(v: Verification, *, recorded: str | None, target: str) -> None:
    """Print a verification for a person: per flow a table per partition, then the first findings."""
    for run in v.runs:
        r = run.report
        state = "clean" if r.clean else f"{run.divergent:,} divergent record(s)"
        print(
            f"verify of flow {run.flow} at {_utc(run.at)} ({run.duration_ms / 1000:.1f} s): {state}; "
            f"{run.verified:,} records verified"
        )
        headers = ["topic", "partition", "target topic", "verified", "skipped", "gap offsets", "unverified"]
        headers += [k.replace("_", " ") for k in FINDING_KINDS]
        print(text_table(headers, [_partition_row(p) for p in r.partitions]), end="")
        rows, total = _findings_rows(r, FINDINGS_SHOWN)
        if rows:
            print(f"findings ({len(rows)} of {total}; source offset -> target offset, first differing field):")
            cols = ["kind", "source", "offset", "target", "offset", "field", "related offset"]
            print(text_table(cols, rows), end="")
    print(f"records read: {v.records_read:,} ({v.bytes_read:,} bytes of keys, values and headers), both sides")
    for e in v.failures[:5]:
        print(f"unit failed ({e.partition or '-'}; its offsets count as unverified): [{e.code}] {e.message}")
    if recorded is not None:
        print(f"recorded in {recorded} on '{target}'")


def verify(
    config: ConfigArgument,
    source: Annotated[str, typer.Option("--source", help="Alias of the flow's source cluster.")],
    target: Annotated[str, typer.Option("--target", help="Alias of the flow's target cluster.")],
    topics: Annotated[
        str | None, typer.Option("--topics", help="Regex the verified source topics match in full (default: all).")
    ] = None,
    since: Annotated[
        str | None,
        typer.Option(
            "--since",
            help="Verify the records from this time on: ISO 8601 (no zone = UTC), PT30M, or 30m, 2h, 1d ago.",
        ),
    ] = None,
    last: Annotated[
        int | None, typer.Option("--last", min=1, help="Verify the last N copied records of each partition.")
    ] = None,
    json_out: JsonOption = False,
    no_record: Annotated[
        bool, typer.Option("--no-record", help="Do not append the result to the verify history on TARGET.")
    ] = False,
    timeout: TimeoutOption = None,
    master: Annotated[
        str | None, typer.Option("--master", help="Spark master URL (default: local, a slot per core).")
    ] = None,
) -> None:
    """Compare what SOURCE->TARGET copied with what SOURCE holds, record by record, on Spark.

    Per partition: records verified, skipped (dropped by the flow's transforms), gap offsets (in the gap ledger).

    Unverified offsets: not copied yet, or no longer on SOURCE.

    Each divergent record (missing, unexpected, different, duplicated, out of order) with its offsets on both sides.

    Every run is appended to mm2-verify.<source>.internal on TARGET unless --no-record.

    Exits 0 when clean, 11 when a record diverges; a unit that could not be read exits with its error's code.
    """
    from mirrorspark.cli.common import check_reachable
    from mirrorspark.client.context import ReplicationContext
    from mirrorspark.config.parse import load_config
    from mirrorspark.replication.connector.verify_plan import WindowRequest
    from mirrorspark.replication.worker.verifier import verify_flows
    from mirrorspark.spark_session import build_spark_session

    if since is not None and last is not None:
        raise fail(ConfigError("--since and --last choose the window two ways: give one of them"))
    try:
        pattern = re.compile(topics) if topics is not None else None
    except re.error as e:
        raise fail(BadRegexError(f"--topics {topics!r} is not a valid regex: {e}")) from None
    now_ms = int(datetime.datetime.now(tz=datetime.UTC).timestamp() * 1000)
    request = WindowRequest(pattern, parse_since(since, now_ms=now_ms) if since is not None else None, last)
    cfg = load_config(config)
    flow = cfg.flow(source, target)
    context = ReplicationContext(cfg)
    check_reachable(cfg, (), timeout, flows=[flow], context=context)
    ctx = context.flow(source, target)
    spark = build_spark_session(master=master, ui=False, quick_start=True)
    try:
        done = verify_flows(spark, [ctx], request, record=not no_record, timeout_s=timeout or 30.0)
    finally:
        spark.stop()
    recorded = None if no_record else ctx.internal_topics.verifications
    if json_out:
        print(json.dumps(verification_json(done, recorded=recorded), indent=2))
    else:
        print_verification(done, recorded=recorded, target=target)
    if not done.report.clean:
        raise typer.Exit(DIVERGENCE_EXIT_CODE)
    if done.failures:
        raise fail(error_from_info(done.failures[0]))


def verification_json(v: Verification, *, recorded: str | None) -> dict[str, Any]:
    """Return ``--json``'s document: :meth:`VerifyReport.to_json` plus what was read, failed units and the history."""
    return {
        **v.report.to_json(),
        "records_read": v.records_read,
        "bytes_read": v.bytes_read,
        "failures": [{"code": e.code, "message": e.message, "partition": e.partition} for e in v.failures],
        "recorded": recorded,
    }


__all__ = ["FINDINGS_SHOWN", "parse_since", "print_verification", "verification_json", "verify"]
