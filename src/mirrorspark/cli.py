"""The ``mirrorspark`` command line.

Every command turns a :class:`~mirrorspark.errors.MirrorsparkError` into one
line on stderr (``error [CODE]: message``) and the error's exit code; the
domain never prints.
"""

from __future__ import annotations

import json
import logging
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Annotated, Any, TypeVar

import typer
from rich.console import Console
from rich.live import Live
from rich.table import Table

from . import __version__
from .errors import MirrorsparkError

__all__ = ["app", "main"]

app = typer.Typer(
    name="mirrorspark",
    help="MirrorMaker 2-compatible Kafka replication on Apache Spark.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
local_app = typer.Typer(
    help="Start and stop local Apache Kafka clusters (KRaft) for trying mirrorspark out.",
    no_args_is_help=True,
)
app.add_typer(local_app, name="local")

err_console = Console(stderr=True)
out_console = Console()

F = TypeVar("F", bound=Callable[..., Any])

DEFAULT_LOCAL_DIR = Path(".mirrorspark/local")


def _fail(e: MirrorsparkError) -> typer.Exit:
    err_console.print(
        f"[bold red]error[/] [{e.code}]: {e.message}", markup=True, highlight=False, soft_wrap=True
    )
    return typer.Exit(e.exit_code)


def _setup_logging(verbose: bool) -> None:
    logging.basicConfig(
        level=logging.INFO if verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    logging.getLogger("py4j").setLevel(logging.WARNING)


@app.callback()
def _root(
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Log what happens (INFO).")] = False,
) -> None:
    _setup_logging(verbose)


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


def progress_table(stats: list[Any], *, elapsed_s: float) -> Table:
    """Render flows' progress (records, bytes, lag, rate) as a Rich table."""
    t = Table(title=f"mirrorspark — {elapsed_s:.0f} s", expand=False)
    for col in ("flow", "topic → remote topic", "records", "bytes", "lag", "records/s", "latency avg ms"):
        t.add_column(col, justify="right" if col not in ("flow", "topic → remote topic") else "left")
    for f in stats:
        rate = f.records / elapsed_s if elapsed_s > 0 else 0.0
        t.add_row(
            f"[bold]{f.flow}[/]",
            f"({f.state}, {f.batches} batches)",
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


@app.command()
def run(
    config: Annotated[Path, typer.Argument(help="An MM2 properties file (mm2.properties).")],
    clusters: Annotated[
        list[str] | None,
        typer.Option(
            "--clusters", help="Run only flows whose target is one of these aliases (MM2's --clusters)."
        ),
    ] = None,
    master: Annotated[
        str | None, typer.Option("--master", help="Spark master URL (default local[*]).")
    ] = None,
    until_caught_up: Annotated[
        bool,
        typer.Option(
            "--until-caught-up",
            help="Exit 0 once every partition is copied up to the end offsets seen at start.",
        ),
    ] = False,
    json_out: Annotated[
        bool, typer.Option("--json", help="Print the final stats as JSON on stdout.")
    ] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No live progress view.")] = False,
) -> None:
    """Replicate every enabled flow of CONFIG on Spark (Ctrl-C stops cleanly after the current batch)."""
    from .config import load_config

    try:
        cfg = load_config(config, clusters=clusters)
        for w in cfg.warnings:
            err_console.print(f"[yellow]warning[/]: {w}", highlight=False)
        if clusters:
            for alias in clusters:
                cfg.cluster(alias)
        stats = _run(cfg, clusters, master, until_caught_up, quiet)
    except MirrorsparkError as e:
        raise _fail(e) from None
    if json_out:
        out_console.print_json(json.dumps([_asdict(s) for s in stats]))


def _asdict(obj: Any) -> Any:
    from dataclasses import asdict

    return asdict(obj)


def _run(
    cfg: Any, clusters: list[str] | None, master: str | None, until_caught_up: bool, quiet: bool
) -> list[Any]:
    from .driver import Replicator
    from .spark import DataPath, build_spark_session

    started = time.monotonic()
    live: Live | None = None
    last_print = [0.0]

    def on_progress(stats: list[Any]) -> None:
        elapsed = time.monotonic() - started
        if live is not None:
            live.update(progress_table(stats, elapsed_s=elapsed))
        elif not quiet and time.monotonic() - last_print[0] >= 5.0:
            last_print[0] = time.monotonic()
            for f in stats:
                err_console.print(
                    f"{f.flow}: {f.records:,} records, {_bytes(f.value_bytes)}, lag {f.lag:,}",
                    highlight=False,
                )

    replicator = Replicator(cfg, targets=clusters, on_progress=on_progress)
    replicator.start()  # connects and creates topics: fails fast, before Spark starts
    spark = build_spark_session(master=master, read_mode=cfg.data_path.read_mode)
    replicator.data_path = DataPath(spark, read_mode=cfg.data_path.read_mode)

    def on_sigint(_sig: int, _frame: FrameType | None) -> None:
        if replicator.stopping:
            raise KeyboardInterrupt
        err_console.print("stopping after the current batch (Ctrl-C again to abort it)…")
        replicator.request_stop()

    previous = signal.signal(signal.SIGINT, on_sigint)
    signal.signal(signal.SIGTERM, on_sigint)
    try:
        if not quiet and out_console.is_terminal:
            with Live(console=out_console, refresh_per_second=2) as live_view:
                live = live_view
                stats = replicator.run(until_caught_up=until_caught_up)
        else:
            stats = replicator.run(until_caught_up=until_caught_up)
    except KeyboardInterrupt:
        spark.sparkContext.cancelAllJobs()
        err_console.print("aborted: the unfinished batch was not committed and will be copied again")
        raise typer.Exit(130) from None
    finally:
        signal.signal(signal.SIGINT, previous)
    if not quiet:
        out_console.print(progress_table(stats, elapsed_s=time.monotonic() - started))
    return stats


@local_app.command("up")
def local_up(
    clusters: Annotated[str, typer.Option("--clusters", help="Comma-separated aliases.")] = "primary,backup",
    brokers: Annotated[int, typer.Option("--brokers", min=1, max=3, help="Brokers per cluster.")] = 1,
    racks: Annotated[
        str | None,
        typer.Option("--racks", help="Comma-separated broker.rack per broker (as many as --brokers)."),
    ] = None,
    dir: Annotated[
        Path, typer.Option("--dir", help="Where the clusters keep their data and state.")
    ] = DEFAULT_LOCAL_DIR,
    json_out: Annotated[
        bool, typer.Option("--json", help="Print {alias: {bootstrap.servers: ...}} as JSON.")
    ] = False,
) -> None:
    """Start local Kafka clusters in the background; print their bootstrap servers and an mm2.properties."""
    from .local import start_clusters

    aliases = [a.strip() for a in clusters.split(",") if a.strip()]
    rack_list = [r.strip() for r in racks.split(",")] if racks else None
    try:
        started = start_clusters(aliases, base_dir=dir, brokers=brokers, racks=rack_list)
    except MirrorsparkError as e:
        raise _fail(e) from None
    if json_out:
        print(json.dumps(started.to_json()))
        return
    for alias, c in started.clusters.items():
        out_console.print(f"{alias}: bootstrap.servers={c.bootstrap_servers}", highlight=False)
    props = dir / "mm2.properties"
    props.write_text(started.mm2_properties())
    out_console.print(f"\n# {props} (stop with: mirrorspark local down --dir {dir})", highlight=False)
    out_console.print(started.mm2_properties(), highlight=False, markup=False)


@local_app.command("down")
def local_down(
    dir: Annotated[
        Path, typer.Option("--dir", help="The directory given to `local up`.")
    ] = DEFAULT_LOCAL_DIR,
) -> None:
    """Stop the local clusters started with `mirrorspark local up`."""
    from .local import stop_clusters

    try:
        stopped = stop_clusters(dir)
    except MirrorsparkError as e:
        raise _fail(e) from None
    out_console.print(f"stopped: {', '.join(stopped) if stopped else 'nothing was running'}", highlight=False)


def main() -> None:
    """Console-script entry point."""
    app()
