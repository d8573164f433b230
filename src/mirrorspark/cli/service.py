"""``mirrorspark service``: the metrics service of one cluster (REST API, Prometheus, Spark aggregation)."""

from __future__ import annotations

import signal
import threading
from types import FrameType
from typing import Annotated

import typer

from mirrorspark.cli.common import (
    ConfigArgument,
    StartTimeoutOption,
    check_port_free,
    check_reachable,
    err_console,
)


def service(
    config: ConfigArgument,
    cluster: Annotated[str, typer.Option("--cluster", help="The served cluster: flows into it are reported.")],
    host: Annotated[str, typer.Option("--host", help="Address the HTTP server listens on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", min=0, max=65535, help="Port (0 = a free one).")] = 8080,
    checkpoint: Annotated[
        str | None,
        typer.Option(
            "--checkpoint",
            help="Checkpoint location of the Spark aggregation job (default: mirrorspark.service.checkpoint.location, "
            "else .mirrorspark/service/<cluster>/checkpoint); any Hadoop-compatible URI, e.g. hdfs://... "
            "for durability.",
        ),
    ] = None,
    master: Annotated[
        str | None, typer.Option("--master", help="Spark master URL of the aggregation job (default local[2]).")
    ] = None,
    timeout: StartTimeoutOption = None,
) -> None:
    """Serve the replication metrics of the flows into CLUSTER: REST API (/docs), /metrics, aggregated on Spark.

    Prints the URL once it serves; Ctrl-C or SIGTERM stops it cleanly (exit 0). A port in use or an
    unreachable CLUSTER fails at once (exit 8, exit 3), before Spark starts or anything is created.
    """
    from mirrorspark.config.parse import load_config
    from mirrorspark.service.server import MetricsService

    stop = threading.Event()

    def on_signal(_sig: int, _frame: FrameType | None) -> None:
        stop.set()

    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    svc: MetricsService | None = None
    try:
        cfg = load_config(config)
        cfg.cluster(cluster)  # an unknown alias before anything else
        check_port_free(host, port)  # before Spark starts, the metrics topic or the checkpoint folder is created
        check_reachable(cfg, [cluster], timeout)
        svc = MetricsService(cfg, cluster, host=host, port=port, checkpoint=checkpoint, master=master)
        svc.start()
        print(f"mirrorspark service: serving cluster {cluster} at {svc.url} (API docs: {svc.url}docs)", flush=True)
        while not stop.wait(1.0):
            why = svc.failed()
            if why is not None:
                from mirrorspark.errors import ServiceError

                raise ServiceError(f"{why}; stopping")
        err_console.print("stopping…", highlight=False)
    finally:
        if svc is not None:
            svc.stop()
        for s, h in previous.items():
            signal.signal(s, h)


__all__ = ["service"]
