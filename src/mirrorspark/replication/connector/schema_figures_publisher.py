"""Publishing a flow's schema sync figures to its progress channel (``status``, the service, Prometheus).

Format: the ``schemas`` record of :mod:`mirrorspark.core.progress_records`; readers:
:func:`~mirrorspark.client.status.read_driver_records` and the metrics service's feed.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from mirrorspark.core.progress_records import FlowSchemas, encode_flow_schemas
from mirrorspark.core.schemas.figures import SchemaSyncFigures
from mirrorspark.errors import ClusterError
from mirrorspark.kafka.delivery import Outgoing, deliver
from mirrorspark.replication.connector.scheduler import PeriodicJob

if TYPE_CHECKING:
    from mirrorspark.replication.connector.flow import Flow

log = logging.getLogger(__name__)

PUBLISH_TIMEOUT_S = 10.0
"""Seconds one :meth:`SchemaFiguresPublisher.publish` waits for its write to be acknowledged (retries included)."""

PUBLISH_INTERVAL_S = 5.0
"""Seconds between two looks at a flow's schema sync figures (job ``publish schema figures S->T``)."""


def no_figures() -> SchemaSyncFigures | None:
    """Return ``None``: a flow whose schema sync exposes no figures publishes none."""
    return None


class SchemaFiguresPublisher:
    """Writes a flow's newest :class:`SchemaSyncFigures` to its progress channel when they change.

    ``figures`` returns the flow's schema sync's latest figures, ``None`` when the flow replicates no schemas
    (nothing is written then); the driver sets it (a constructor argument or the attribute) before the jobs run.
    The job is declared only for a flow with ``sync.schemas.enabled``. ``clock_ms`` in epoch ms. Not
    thread-safe: its job runs under the flow's lock.
    """

    def __init__(
        self,
        flow: Flow,
        *,
        figures: Callable[[], SchemaSyncFigures | None] = no_figures,
        clock_ms: Callable[[], int] = lambda: int(time.time() * 1000),
    ) -> None:
        self.flow = flow
        self.figures = figures
        self._clock_ms = clock_ms
        self._producer: Any = None
        self._last: SchemaSyncFigures | None = None  # the last figures acknowledged

    def jobs(self) -> list[PeriodicJob]:
        """Declare ``publish schema figures S->T`` (a flow that replicates schemas only), one interval in."""
        if not self.flow.config.sync_schemas_enabled:
            return []
        every = PUBLISH_INTERVAL_S
        return [PeriodicJob(f"publish schema figures {self.flow.name}", every, self.publish, initial_delay_s=every)]

    def publish(self) -> bool:
        """Write the figures if they changed since the last acknowledged write; tell whether one was acknowledged.

        A failed write is logged (WARNING) and made again at the next call.
        """
        figures = self.figures()
        if figures is None or figures == self._last:
            return False
        if self._producer is None:
            self._producer = self.flow.context.producer("target", "schemas-producer", overrides={"linger.ms": 0})
        record = FlowSchemas(self.flow.name, self._clock_ms(), figures)
        try:
            deliver(
                self._producer,
                [Outgoing(self.flow.progress_topic, *encode_flow_schemas(record), partition=0)],
                what=f"flow {self.flow.name}: schema sync figures",
                alias=self.flow.config.target,
                timeout_s=PUBLISH_TIMEOUT_S,
            )
        except ClusterError as e:
            log.warning("%s; they are written again at the next publication", e)
            return False
        self._last = figures
        return True

    def close(self) -> None:
        """Publish the final figures (if any changed); release the producer."""
        try:
            if self.flow.config.sync_schemas_enabled:
                self.publish()
        finally:
            self._producer = None


__all__ = ["PUBLISH_INTERVAL_S", "PUBLISH_TIMEOUT_S", "SchemaFiguresPublisher", "no_figures"]
