"""``mirrorspark service``: the feed, the Spark aggregation job and the HTTP server of one served cluster.

:class:`MetricsService` starts, in order: the aggregates topic on the served cluster (compacted,
``retention.ms`` :data:`~mirrorspark.service.aggregates.RETENTION_MS`), the :class:`~mirrorspark.service.feed.Feed`,
the SparkSession (``local[2]`` unless a master is given) and its aggregation query, then uvicorn
on a thread. :meth:`MetricsService.stop` undoes it in reverse: the HTTP server, the query (it
finishes its micro-batch; its checkpoint keeps offsets and window state), Spark, the feed.

Several instances may serve one cluster (each reads every raw record; each needs its own
checkpoint location); an instance reports the flows **into** its cluster.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import TYPE_CHECKING, Any

from mirrorspark.client.context import ReplicationContext
from mirrorspark.config.model import MirrorConfig
from mirrorspark.errors import MirrorsparkError, ServiceError
from mirrorspark.service.aggregates import RETENTION_MS
from mirrorspark.service.feed import Feed, Store

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.streaming import StreamingQuery

log = logging.getLogger(__name__)

START_TIMEOUT_S = 120.0
"""Seconds :meth:`MetricsService.start` waits for the HTTP server and the feed's first listing."""


class MetricsService:
    """One metrics service instance for the served ``cluster``; raises UnknownAliasError if it is not configured.

    ``port`` 0 = a free port; ``checkpoint`` defaults to ``mirrorspark.service.checkpoint.location``, else
    ``.mirrorspark/service/<cluster>/checkpoint``; ``master`` defaults to ``local[2]``.
    """

    def __init__(
        self,
        config: MirrorConfig,
        cluster: str,
        *,
        host: str = "127.0.0.1",
        port: int = 8080,
        checkpoint: str | None = None,
        master: str | None = None,
    ) -> None:
        from mirrorspark.service.aggregation import default_checkpoint

        self.config = config
        self.cluster_config = config.cluster(cluster)
        self.cluster = cluster
        self.host = host
        self.port = port
        svc = config.service
        self.checkpoint = checkpoint or svc.checkpoint_location or default_checkpoint(cluster)
        self.master = master or "local[2]"
        self.store = Store(cluster)
        self.feed = Feed(config, cluster, self.store, metrics_topic=svc.metrics_topic)
        self.spark: SparkSession | None = None
        self.query: StreamingQuery | None = None
        self._server: Any = None
        self._thread: threading.Thread | None = None
        self._query_error: str | None = None

    @property
    def url(self) -> str:
        """The served base URL, ``http://host:port/``."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/"

    def aggregation_status(self) -> tuple[str, str | None, int | None]:
        """Return the Spark job's ``(state, error, last micro-batch epoch ms)`` for the health check."""
        q = self.query
        if q is None:
            return "stopped", self._query_error, None
        try:
            if q.isActive:
                progress = q.lastProgress
                last = _epoch_ms(progress.get("timestamp")) if progress else None
                return "active", None, last
            err = q.exception()
            if err is not None:
                text = str(err)
                return "failed", text.splitlines()[0] if text else type(err).__name__, None
            return "stopped", None, None
        except Exception as e:  # the JVM is gone (stopping): say so rather than fail the health check
            return "stopped", type(e).__name__, None

    def start(self) -> None:
        """Start the feed, the Spark job and the HTTP server; return once the URL serves.

        Raises ClusterUnreachableError, ClusterError (the aggregates topic cannot be created) or ServiceError
        (the server cannot listen, or the Spark job does not start).
        """
        admin = ReplicationContext(self.config).cluster_admin(
            self.cluster, "service-admin", client_id=f"mirrorspark-service|{self.cluster}|admin"
        )
        admin.check_reachable()
        admin.ensure_topic(
            self.config.service.metrics_topic,
            partitions=1,
            replication_factor=-1,
            config={"cleanup.policy": "compact,delete", "retention.ms": str(RETENTION_MS), "segment.ms": "3600000"},
        )
        self.feed.start()
        self._start_spark()
        self._start_http()
        deadline = time.monotonic() + START_TIMEOUT_S
        while not self.feed.ready.is_set() and time.monotonic() < deadline:
            self.feed.ready.wait(0.2)

    def _start_spark(self) -> None:
        from mirrorspark.service.aggregation import service_spark_conf, start_aggregation
        from mirrorspark.spark_session import build_spark_session

        try:
            self.spark = build_spark_session(
                master=self.master, app_name=f"mirrorspark-service-{self.cluster}", ui=False, conf=service_spark_conf()
            )
            c = self.cluster_config
            self.query = start_aggregation(
                self.spark,
                read_options=c.consumer.to_spark_options(),
                write_options=c.producer.to_spark_options(),
                metrics_topic=self.config.service.metrics_topic,
                checkpoint=self.checkpoint,
                trigger_ms=self.config.service.trigger_interval_ms,
            )
        except MirrorsparkError:
            raise
        except Exception as e:
            raise ServiceError(
                f"the metrics aggregation job did not start: {str(e).splitlines()[0] if str(e) else type(e).__name__}"
            ) from e

    def _start_http(self) -> None:
        import uvicorn

        from mirrorspark.service.api import create_app
        from mirrorspark.service.replica_metrics import ReplicaCollector

        app = create_app(
            self.store,
            self.config,
            token=self.config.service.auth_token,
            aggregation=self.aggregation_status,
            collectors=[ReplicaCollector(self.config, self.cluster)],
        )
        cfg = uvicorn.Config(app, host=self.host, port=self.port, log_level="warning", access_log=False, lifespan="off")
        server = uvicorn.Server(cfg)
        self._server = server
        # on a thread: uvicorn installs no signal handlers there; the command handles Ctrl-C and SIGTERM
        self._thread = threading.Thread(target=server.run, name="mirrorspark-service-http", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + START_TIMEOUT_S
        while not server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise ServiceError(f"the HTTP server could not listen on {self.host}:{self.port}: is the port free?")
            time.sleep(0.05)
        if self.port == 0:
            self.port = int(server.servers[0].sockets[0].getsockname()[1])

    def failed(self) -> str | None:
        """Why the service cannot go on (its HTTP server or Spark job ended), else ``None``."""
        if self._thread is not None and not self._thread.is_alive():
            return "the HTTP server stopped"
        state, error, _ = self.aggregation_status()
        if state == "failed":
            return f"the metrics aggregation job failed: {error}"
        return None

    def stop(self) -> None:
        """Stop the HTTP server, the Spark job, Spark and the feed (each bounded; never raises)."""
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(10)
        if self.query is not None:
            try:
                deadline = time.monotonic() + 15
                while self.query.isActive and self.query.status.get("isTriggerActive") and time.monotonic() < deadline:
                    time.sleep(0.1)  # let the running micro-batch finish: its write is not aborted
                self.query.stop()
            except Exception as e:  # stopping must go on
                log.warning("stopping the aggregation query: %s", e)
        if self.spark is not None:
            try:
                self.spark.stop()
            except Exception as e:
                log.warning("stopping Spark: %s", e)
        self.feed.stop()


def _epoch_ms(iso: str | None) -> int | None:
    if not iso:
        return None
    from datetime import datetime

    try:
        return int(datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp() * 1000)
    except ValueError:
        return None


__all__ = ["START_TIMEOUT_S", "MetricsService"]
