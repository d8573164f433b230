"""A running flow's throttle in effect: ``replication.throttled.rate``, or the last ``mirrorspark control throttle``.

:class:`LiveThrottle` tails the flow's control topic every :data:`THROTTLE_POLL_S` (its own job, apart
from the topic and group refresh, so a change takes effect within seconds); the flow's supervisor sends
each copy task its share of :attr:`LiveThrottle.limit` over the grant link.

Cost when no throttle is ever set: one ``ListOffsets`` request to the target per poll (a ``Metadata``
request while the control topic does not exist yet), no consumer; records are fetched only when new.
"""

from __future__ import annotations

import logging

from mirrorspark.client.context import FlowContext
from mirrorspark.client.control_store import ControlTail
from mirrorspark.errors import ClusterError
from mirrorspark.replication.connector.scheduler import PeriodicJob

log = logging.getLogger(__name__)

THROTTLE_POLL_S = 1.0
"""Seconds between two reads of the control topic for throttle changes: a change takes effect within about 2 s."""

POLL_TIMEOUT_S = 5.0
"""Longest read of the control topic of one poll (s), at most ``admin.timeout.ms``."""


class LiveThrottle:
    """A running flow's throttle in effect (:attr:`limit`, bytes/s, 0: no limit), following its control topic."""

    def __init__(self, context: FlowContext, *, purpose: str = "control-throttle-consumer") -> None:
        self.flow_config = context.flow_config
        self.name = self.flow_config.name
        self.limit = self.flow_config.throttled_rate
        self._tail = ControlTail(
            self.flow_config,
            context.internal_topics.control,
            client_id=context.client_id(purpose),
            clients=context.clients,
        )

    def jobs(self) -> list[PeriodicJob]:
        """Declare ``follow throttle S->T``, every :data:`THROTTLE_POLL_S`."""
        return [PeriodicJob(f"follow throttle {self.name}", THROTTLE_POLL_S, self.poll)]

    def poll(self) -> int:
        """Read new control records and return the throttle in effect (a failed read keeps it, with a warning)."""
        try:
            self._tail.poll(timeout_s=min(POLL_TIMEOUT_S, self.flow_config.admin_timeout_s))
        except ClusterError as e:
            log.warning(
                "%s: reading control topic '%s' failed (%s); throttle unchanged", self.name, self._tail.topic, e
            )
            return self.limit
        limit = self._tail.state.throttle_limit(self.flow_config.throttled_rate)
        if limit != self.limit:
            log.info("%s: throttle now %s", self.name, f"{limit} bytes/s" if limit else "off (no limit)")
            self.limit = limit
        return limit

    def close(self) -> None:
        """Close the consumer."""
        self._tail.close()


__all__ = ["POLL_TIMEOUT_S", "THROTTLE_POLL_S", "LiveThrottle"]
