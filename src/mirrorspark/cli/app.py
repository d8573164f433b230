"""The ``mirrorspark`` command line.

A :class:`~mirrorspark.errors.MirrorsparkError` out of any command becomes one line on
stderr (``error [CODE]: message``) and the error's exit code, in one place
(:class:`~mirrorspark.cli.conventions.CommandLineGroup`); the domain never prints.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from enum import StrEnum
from types import FrameType
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer
from rich.console import Console
from rich.live import Live
from rich.table import Table

from mirrorspark import __version__
from mirrorspark.cli.common import (
    ConfigArgument,
    JsonOption,
    StartTimeoutOption,
    as_dict,
    check_reachable,
    err_console,
    fail,
    list_option,
    out_console,
    text_table,
)
from mirrorspark.cli.config_commands import config_app, config_reference
from mirrorspark.cli.control import control_app
from mirrorspark.cli.conventions import CommandLineGroup
from mirrorspark.cli.drill import drill
from mirrorspark.cli.local import local_app
from mirrorspark.cli.migration import checkpoints_app, failover, offsets_app
from mirrorspark.cli.placement import placement_app
from mirrorspark.cli.plan import plan
from mirrorspark.cli.regions import REPLICA_STATUS_CONTEXT, elect, replica_status
from mirrorspark.cli.service import service
from mirrorspark.cli.verify import verify
from mirrorspark.errors import MirrorsparkError

if TYPE_CHECKING:
    from mirrorspark.client.context import ReplicationContext
    from mirrorspark.client.status import FlowStatus

EXIT_CODES = (
    "Exit codes: 0 done; 1 placement finish: still in progress; 2 bad config or usage; 3 cluster error or "
    "unreachable; 4 data path; 5 corrupt record; 6 control (unknown group, flow running); 7 local clusters; "
    "8 service; 9 Spark driver lost; 10 plan: a run would change something; 130 second Ctrl-C."
)
CONVENTIONS = (
    "Every command takes CONFIG as an argument or as --config FILE; list options take --x A --x B, --x A B "
    "or --x A,B; --timeout takes 500ms, 5s or 2m (a bare number is seconds; 1000 or more needs a unit); "
    "commands that write offsets preview unless --execute is given."
)

app = typer.Typer(
    name="mirrorspark",
    help=f"MirrorMaker 2-compatible Kafka replication on Apache Spark.\n\n{CONVENTIONS}\n\n{EXIT_CODES}",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    cls=CommandLineGroup,
)
app.add_typer(local_app, name="local")
app.add_typer(offsets_app, name="offsets")
app.add_typer(checkpoints_app, name="checkpoints")
app.add_typer(control_app, name="control")
app.add_typer(placement_app, name="placement")
app.add_typer(config_app, name="config")

F = TypeVar("F", bound=Callable[..., Any])

CONNECT_DEFAULTS_ENV = (
    "MIRRORSPARK_CONNECT_DEFAULTS"  # = mirrorspark.config.parse.CONNECT_DEFAULTS_ENV (imported lazily)
)


class ConnectDefaultsChoice(StrEnum):
    """Values of ``--connect-defaults``."""

    apache = "apache"
    csm = "csm"


class _WarningLines(logging.Handler):
    """Log records as ``warning: <message>`` lines (``info:`` with ``-v``) on the current ``sys.stderr``."""

    def emit(self, record: logging.LogRecord) -> None:
        sys.stderr.write(f"{record.levelname.lower()}: {record.getMessage()}\n")


def _setup_logging(verbose: bool) -> None:
    logging.basicConfig(
        level=logging.INFO if verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    logging.getLogger("py4j").setLevel(logging.WARNING)
    # the configuration's warnings (unknown keys in lenient mode, keys MM2 ignores): one line each, one format
    config_log = logging.getLogger("mirrorspark.config")
    if not any(isinstance(h, _WarningLines) for h in config_log.handlers):
        config_log.addHandler(_WarningLines())
    config_log.propagate = False

    # librdkafka's lines for the operator tools' clients: a failure is reported once, as the error
    logging.getLogger("mirrorspark.librdkafka").setLevel(logging.DEBUG if verbose else logging.CRITICAL)
    # standby, takeover and task restarts are what an operator of several instances must see; the
    # start-up steps with their seconds (flows, Spark, workers) say where a slow start goes
    for name in (
        "mirrorspark.replication.worker.lease",
        "mirrorspark.replication.worker.supervisor",
        "mirrorspark.start-up",
    ):
        logging.getLogger(name).setLevel(logging.INFO)


def _print_version(value: bool) -> None:
    if value:
        out_console.print(__version__)
        raise typer.Exit(0)


@app.callback()
def _root(
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Log what happens (INFO).")] = False,
    version: Annotated[
        bool,
        typer.Option("--version", callback=_print_version, is_eager=True, help="Print mirrorspark's version and exit."),
    ] = False,
    connect_defaults: Annotated[
        ConnectDefaultsChoice | None,
        typer.Option(
            "--connect-defaults",
            envvar=CONNECT_DEFAULTS_ENV,
            help="Whose defaults connector configs (KafkaConnector, KafkaMirrorMaker2, Connect REST JSON) are read "
            "with: apache (Apache Kafka's) or csm (Cloudera CSM Operator's: sync.group.offsets.enabled=true). "
            "mm2.properties files ignore it.",
        ),
    ] = None,
) -> None:
    _setup_logging(verbose)
    if connect_defaults is not None:  # every command's load_config (and its child processes) reads it from there
        os.environ[CONNECT_DEFAULTS_ENV] = connect_defaults.value


@app.command()
def version() -> None:
    """Print mirrorspark's version."""
    out_console.print(__version__)


def _bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GiB"


def stats_table(stats: list[Any], *, elapsed_s: float) -> Table:
    """Render flows' stats (records, bytes, lag, rate) as a Rich table."""
    t = Table(title=f"mirrorspark — {elapsed_s:.0f} s", expand=False)
    for col in ("flow", "topic → remote topic", "records", "bytes", "lag", "records/s", "latency avg ms"):
        t.add_column(col, justify="right" if col not in ("flow", "topic → remote topic") else "left")
    for f in stats:
        rate = f.records / elapsed_s if elapsed_s > 0 else 0.0
        t.add_row(
            f"[bold]{f.flow}[/]",
            f"({f.state})",
            f"{f.records:,}",
            _bytes(f.value_bytes),
            f"{f.lag:,}",
            f"{rate:,.0f}",
            "",
        )
        for ts in f.topics:
            t.add_row(
                "",
                f"{ts.topic} → {ts.remote_topic}",
                f"{ts.records:,}",
                _bytes(ts.value_bytes),
                f"{ts.lag:,}",
                "",
                f"{ts.latency_ms_avg:,.0f}",
            )
    return t


@app.command("config-reference")
def config_reference_cmd() -> None:
    """Print the reference of every configuration key (Markdown); also ``mirrorspark config reference``."""
    print(config_reference(), end="")


@app.command()
def run(
    config: ConfigArgument,
    clusters: Annotated[
        list[str] | None,
        list_option("--clusters", help="Run only flows whose target is one of these aliases (MM2's --clusters)."),
    ] = None,
    master: Annotated[
        str | None, typer.Option("--master", help="Spark master URL (default: local, with a slot per copy task).")
    ] = None,
    until_caught_up: Annotated[
        bool,
        typer.Option(
            "--until-caught-up",
            help="Exit 0 once every partition is copied up to the end offsets seen at start.",
        ),
    ] = False,
    json_out: Annotated[
        bool,
        typer.Option("--json", help="Print the final stats as JSON on stdout; the live view goes to stderr."),
    ] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No live view of the stats.")] = False,
    timeout: StartTimeoutOption = None,
    spark_conf: Annotated[
        list[str] | None,
        typer.Option(
            "--conf",
            help="A Spark property KEY=VALUE (repeatable), as spark-submit's --conf; e.g. spark.authenticate=true "
            "and spark.network.crypto.enabled=true with a non-local --master (see docs/security.md).",
        ),
    ] = None,
) -> None:
    """Replicate every enabled flow of CONFIG on Spark (Ctrl-C stops cleanly: every copy task commits first).

    Exits 9 (SPARK_DRIVER_LOST) within seconds if the Spark driver JVM dies: every copy task ends
    without committing; start the run again.
    """
    from mirrorspark.client.context import ReplicationContext
    from mirrorspark.config.parse import load_config
    from mirrorspark.config.runnable import most_task_slots, runnable_flows

    extra_conf = _spark_conf(spark_conf or [])
    cfg = load_config(config, clusters=clusters)
    if clusters:
        for alias in clusters:
            cfg.cluster(alias)
    flows = cfg.enabled_flows(clusters or None)
    context = ReplicationContext(cfg)  # the run's one: built here, handed to the Replicator
    # an unreachable cluster: one error line within --timeout, before Spark prints anything
    check_reachable(cfg, (), timeout, flows=flows, context=context)
    # Spark starts now, before the replication runtime is imported (0.3-0.7 s) and while the flows start (offsets
    # read, topics synced, leases joined): a restart after a crash waits for the longer of the two, not for both.
    # Sized for the most copy tasks the flows may run.
    spark_start = _SparkStart(master, extra_conf, task_slots=most_task_slots(runnable_flows(cfg, clusters)))
    console = err_console if json_out else None
    stats = _run(context, clusters, spark_start, until_caught_up, quiet, console=console)
    if json_out:
        print(json.dumps([as_dict(s) for s in stats], indent=2))


def _spark_driver_lost(e: Exception) -> MirrorsparkError | None:
    """Translate a Py4J error saying the Spark driver JVM is gone (a ``SparkDriverLostError``); else ``None``."""
    from mirrorspark.errors import SparkDriverLostError
    from mirrorspark.spark_session import RESTART_ADVICE, is_gateway_error

    if isinstance(e, MirrorsparkError) or not is_gateway_error(e):
        return None
    text = str(e).splitlines()[0] if str(e) else type(e).__name__
    return SparkDriverLostError(f"the Spark driver JVM cannot be reached ({text}): {RESTART_ADVICE}")


def _spark_conf(items: list[str]) -> dict[str, str]:
    """Parse ``--conf KEY=VALUE`` options into Spark properties; ConfigError for an item without ``=`` or key."""
    from mirrorspark.errors import ConfigError

    out: dict[str, str] = {}
    for item in items:
        key, eq, value = item.partition("=")
        if not eq or not key.strip():
            raise ConfigError(
                f"--conf {item.split('=', 1)[0]!r}: expected KEY=VALUE, e.g. --conf spark.authenticate=true"
            )
        out[key.strip()] = value
    return out


def _run(
    context: ReplicationContext,
    clusters: list[str] | None,
    spark_start: _SparkStart,
    until_caught_up: bool,
    quiet: bool,
    *,
    console: Console | None = None,
) -> list[Any]:
    from mirrorspark.replication.driver import Replicator

    view = out_console if console is None else console  # --json: stdout holds the JSON alone

    started = time.monotonic()
    live: Live | None = None
    last_print = [0.0]

    def on_stats(stats: list[Any]) -> None:
        elapsed = time.monotonic() - started
        if live is not None:
            live.update(stats_table(stats, elapsed_s=elapsed))
        elif not quiet and time.monotonic() - last_print[0] >= 5.0:
            last_print[0] = time.monotonic()
            for f in stats:
                err_console.print(
                    f"{f.flow}: {f.records:,} records, {_bytes(f.value_bytes)}, lag {f.lag:,}",
                    highlight=False,
                )

    # not at INFO: a run that cannot connect prints its one error line alone; "flows started in N s" says when
    logging.getLogger("mirrorspark.start-up").debug("starting (config loaded)")
    replicator = Replicator(context.config, targets=clusters, on_stats=on_stats, context=context)

    def on_sigint(_sig: int, _frame: FrameType | None) -> None:
        if replicator.stopping:
            raise KeyboardInterrupt
        err_console.print("stopping: committing what was copied (Ctrl-C again to abort)…")
        replicator.request_stop()

    # from the start: a SIGTERM while the flows or Spark start (a standby stopped early) is a clean stop too
    previous = {s: signal.signal(s, on_sigint) for s in (signal.SIGINT, signal.SIGTERM)}
    spark: Any = None
    deadline = _JvmDeathDeadline()
    try:
        replicator.start()  # connects, creates topics and joins the leases: fails fast on an unreachable cluster
        spark = spark_start.result()
        replicator.spark = spark
        replicator.jvm = deadline.watch(spark)
        if not quiet and view.is_terminal:
            # transient: the live frame is erased at the end, and the final table printed once below
            with Live(console=view, refresh_per_second=2, transient=True) as live_view:
                live = live_view
                stats = replicator.run(until_caught_up=until_caught_up)
        else:
            stats = replicator.run(until_caught_up=until_caught_up)
    except KeyboardInterrupt:
        if spark is not None:
            with contextlib.suppress(Exception):  # the JVM may be gone already: nothing left to cancel
                spark.sparkContext.cancelAllJobs()
        err_console.print("aborted: what was copied since the copy tasks' last commit will be copied again")
        raise typer.Exit(130) from None
    except Exception as e:  # a Spark call of the driver (e.g. the slot check) that found the JVM gone
        lost = _spark_driver_lost(e)
        if lost is None:
            raise
        raise lost from None
    finally:
        deadline.settled.set()
        for s, handler in previous.items():
            signal.signal(s, handler)
    if not quiet:
        view.print(stats_table(stats, elapsed_s=time.monotonic() - started))
    return stats


JVM_EXIT_GRACE_S = 3.0
"""Seconds ``mirrorspark run`` gives its driver loop to end after the Spark driver JVM died, before it exits anyway."""


class _JvmDeathDeadline:
    """Ends ``mirrorspark run`` within ``grace_s`` seconds of its Spark driver JVM's death (issue #23 item 3).

    A control job blocked on an unreachable cluster can hold the driver loop up for its whole timeout,
    though nothing can copy any more: past the grace the error line is printed and the process exits
    (``exit``, ``os._exit`` by default), the flows' clean-up left undone (the leases expire with their sessions).
    """

    def __init__(self, *, grace_s: float = JVM_EXIT_GRACE_S, exit: Callable[[int], Any] = os._exit) -> None:
        self.grace_s = grace_s
        self._exit = exit
        self.settled = threading.Event()  # the run returned or raised: the command ends by itself

    def watch(self, spark: Any) -> Any:
        """Build the watch of ``spark``'s driver JVM (``None`` when it cannot be watched) with this deadline on it."""
        from mirrorspark.spark_session import DriverJvmWatch

        jvm = DriverJvmWatch.of(spark)
        if jvm is not None:
            jvm.on_lost(self.on_lost)
        return jvm

    def on_lost(self, error: MirrorsparkError) -> None:
        """Start the grace (on the watch's thread: never blocks it)."""
        threading.Thread(target=self._expire, args=(error,), name="mirrorspark-jvm-deadline", daemon=True).start()

    def _expire(self, error: MirrorsparkError) -> None:
        if self.settled.wait(self.grace_s):
            return
        fail(error)  # the one error line, as the command prints it
        with contextlib.suppress(Exception):
            sys.stderr.flush()
            sys.stdout.flush()
        self._exit(error.exit_code)


class _SparkStart:
    """The SparkSession of ``mirrorspark run``, built on a daemon thread (an exit never waits for it)."""

    def __init__(self, master: str | None, conf: dict[str, str] | None, *, task_slots: int) -> None:
        self._args = (master, conf, task_slots)
        self._spark: Any = None
        self._error: BaseException | None = None
        self._began = time.monotonic()
        self._thread = threading.Thread(target=self._build, name="mirrorspark-spark-start", daemon=True)
        self._thread.start()

    def _build(self) -> None:
        from mirrorspark.replication.task.daemon import DAEMON_MODULE
        from mirrorspark.spark_session import build_spark_session

        master, conf, task_slots = self._args
        try:
            self._spark = build_spark_session(
                master=master, conf=conf, task_slots=task_slots, quick_start=True, daemon_module=DAEMON_MODULE
            )
        except BaseException as e:  # raised again on the caller's thread
            self._error = e
            return
        logging.getLogger("mirrorspark.start-up").info(
            "Spark session started in %.1f s", time.monotonic() - self._began
        )
        from mirrorspark.replication.worker.task_launcher import start_daemon

        start_daemon(self._spark)  # its daemon loads the copy task while the flows may still be starting

    def result(self) -> Any:
        """Wait for the session and return it; raise what building it raised."""
        waited = time.monotonic()
        self._thread.join()
        if self._error is not None:
            raise self._error
        logging.getLogger("mirrorspark.start-up").info(
            "waited %.1f s for Spark after the flows started", time.monotonic() - waited
        )
        return self._spark


# --------------------------------------------------------------------------- status


@app.command()
def status(
    config: ConfigArgument,
    json_out: JsonOption = False,
    timeout: StartTimeoutOption = None,
) -> None:
    """Show every enabled flow's state, topics, records, lag, last heartbeat and gaps, and each cluster's upstreams.

    Read from the clusters alone (offsets topics, remote topics, heartbeats, the gap ledger),
    so it works whether mirrorspark, MM2 or nothing is running. A gap is a range of source
    records lost before they were copied (deleted, truncated, or a re-created topic).
    """
    import dataclasses

    from mirrorspark.client.status import status as compute
    from mirrorspark.config.parse import load_config

    cfg = load_config(config)
    # a dead cluster: its address and the fix, within --timeout
    check_reachable(cfg, cfg.clusters, timeout, flows=cfg.enabled_flows())
    flows, clusters = compute(cfg)
    if json_out:
        doc = {
            "flows": [
                {
                    **dataclasses.asdict(f),
                    "partitions": f.partitions,
                    "records": f.records,
                    "lag": f.lag,
                    "dropped_records": f.dropped_records,
                }
                for f in flows
            ],
            "clusters": [dataclasses.asdict(c) for c in clusters],
            "gaps": [dataclasses.asdict(g) for f in flows for g in f.gaps],
        }
        print(json.dumps(doc, indent=2))
        return
    for f in flows:
        _print_flow_status(f)
    rows: list[list[object]] = [
        [
            c.cluster,
            ",".join(c.upstream_clusters) or "-",
            " ".join(f"{a}={h}" for a, h in sorted(c.replication_hops.items())),
        ]
        for c in clusters
    ]
    print(text_table(["cluster", "upstream clusters", "replication hops"], rows), end="")


def _print_flow_status(f: FlowStatus) -> None:
    """Print one flow's line of ``status``, its notices, its topics' table and its gaps' table."""
    import datetime

    hb = (
        datetime.datetime.fromtimestamp(f.last_heartbeat_ms / 1000, tz=datetime.UTC).isoformat(timespec="seconds")
        if f.last_heartbeat_ms
        else "-"
    )
    print(
        f"flow {f.flow}: {f.state}, {len(f.topics)} topics, {f.partitions} partitions, "
        f"{f.records} records on the target, lag {f.lag}, last heartbeat {hb}"
    )
    if f.dropped_records:
        print(f"flow {f.flow}: {f.dropped_records} records dropped by transforms (read, not copied)")
    if f.error:
        print(f"flow {f.flow}: failed: {f.error}")
    if f.failover is not None:
        from mirrorspark.core.failover_policy import event_summary

        print(event_summary(f.failover))
    if f.schemas is not None:
        print(f.schemas.summary(f.flow))
    if f.throttle is not None:
        print(f.throttle.summary(f.flow))
    if f.dropped_records:  # a column only for flows whose transforms dropped records
        rows: list[list[object]] = [
            [t.topic, t.remote_topic, t.partitions, t.records, t.lag, t.dropped_records] for t in f.topics
        ]
        print(text_table(["topic", "remote topic", "partitions", "records", "lag", "dropped"], rows))
    else:
        rows = [[t.topic, t.remote_topic, t.partitions, t.records, t.lag] for t in f.topics]
        print(text_table(["topic", "remote topic", "partitions", "records", "lag"], rows))
    if f.group_offset_sync:
        rows = [[g, c.synced, c.skipped_active, c.skipped_unknown] for g, c in f.group_offset_sync.items()]
        print(text_table(["group (offset sync)", "synced", "skipped: active", "skipped: unknown"], rows))
    if f.gaps:
        print(f"flow {f.flow}: {len(f.gaps)} gap(s): source records lost before they were copied")
        rows = [
            [
                datetime.datetime.fromtimestamp(g.at / 1000, tz=datetime.UTC).isoformat(timespec="seconds"),
                f"{g.topic}-{g.partition}",
                g.reason,
                g.first_lost,
                g.last_lost if g.last_lost is not None or g.old_topic_id is None else "its end",
                g.lost if g.first_lost is not None and g.last_lost is not None else None,
                f"{g.old_topic_id} -> {g.new_topic_id or 'deleted'}" if g.old_topic_id is not None else None,
            ]
            for g in f.gaps
        ]
        print(text_table(["at", "partition", "reason", "first lost", "last lost", "records", "topic id"], rows))


# What a run would do now, written nowhere (Terraform's plan, kcp's --dry-run).
app.command()(plan)
# The consumer migration command at the top level, as MM2 users know it from SRM (``srm-control``).
app.command()(failover)
# Disaster-recovery drills: what a failover would lose, re-read and skip, measured before it is needed.
app.command()(drill)
# Record-by-record proof that a flow's target holds what its source holds (issue #42).
app.command()(verify)
# The metrics service (SRM Service's role).
app.command()(service)
# Multi-region: replicas of one cluster (Confluent's kafka-replica-status) and leader elections.
app.command("replica-status", context_settings=REPLICA_STATUS_CONTEXT)(replica_status)
app.command()(elect)


def main() -> None:
    """Console-script entry point (errors become one line and an exit code in :class:`CommandLineGroup`)."""
    app()


__all__ = ["app", "main"]
