"""A running flow's throttle in effect: ``replication.throttled.rate``, or the last ``mirrorspark control throttle``.

:class:`LiveThrottle` tails the flow's control topic every :data:`THROTTLE_POLL_S` (its own job, apart
from the topic and group refresh, so a change takes effect within seconds); the flow's supervisor sends
each copy task its share of :attr:`LiveThrottle.limit` over the grant link.

The flows to one target cluster are followed by one job, :class:`ThrottleFollowers` (``follow throttle
S->T`` for one flow): each poll sends one ``Metadata`` request while a control topic does not exist yet and
one ``ListOffsets`` request for every existing one, and reads a flow's control topic (its consumer) only
when its end offset moved past what the flow read. Cost when no throttle is ever set: one ``Metadata``
request to the target per poll, whatever the number of flows (issue #44), no consumer.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence

from mirrorspark.client.context import FlowContext
from mirrorspark.client.control_store import ControlTail
from mirrorspark.errors import ClusterError
from mirrorspark.kafka.admin import ClusterAdmin
from mirrorspark.kafka.factory import ClientFactory
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
        self.clients: ClientFactory = context.clients
        self.admin_client_id = context.client_id("control-throttle-admin")
        self._tail = ControlTail(
            self.flow_config,
            context.internal_topics.control,
            client_id=context.client_id(purpose),
            clients=context.clients,
        )

    def jobs(self) -> list[PeriodicJob]:
        """Declare ``follow throttle S->T``, every :data:`THROTTLE_POLL_S`."""
        return [PeriodicJob(f"follow throttle {self.name}", THROTTLE_POLL_S, self.poll)]

    @property
    def topic(self) -> str:
        """The flow's control topic, on its target."""
        return self._tail.topic

    @property
    def position(self) -> int:
        """Next offset of the control topic to read."""
        return self._tail.position

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


class ThrottleFollowers:
    """The throttles of the flows to one target cluster, followed by one job (``follow throttle S->T`` for one flow).

    Each poll describes the missing control topics alone (never lists the target's topics: thousands of remote
    topics there, every second, were most of an idle driver's CPU), then the end offsets of
    every existing one in one request, and has a flow read its control topic (:meth:`LiveThrottle.poll`)
    only when the end moved past its position: the same effect as every flow's own poll, a request or
    two per poll instead of one or two per flow.
    """

    def __init__(self, throttles: Sequence[LiveThrottle]) -> None:
        self.throttles = list(throttles)
        first = self.throttles[0].flow_config
        self.target = first.target
        self.timeout_s = min(POLL_TIMEOUT_S, first.admin_timeout_s)
        self.name = (
            self.throttles[0].name if len(self.throttles) == 1 else f"{len(self.throttles)} flows ->{self.target}"
        )
        self._client_id = self.throttles[0].admin_client_id
        self._clients = self.throttles[0].clients
        self._admin: ClusterAdmin | None = None
        self._present: set[str] = set()  # control topics listed: no Metadata request until one is missing

    @staticmethod
    def of(throttles: Iterable[LiveThrottle]) -> list[ThrottleFollowers]:
        """Group ``throttles`` by target cluster (alias and admin settings), in flow order."""
        groups: dict[tuple[str, object], list[LiveThrottle]] = {}
        for t in throttles:
            groups.setdefault((t.flow_config.target, t.flow_config.target_admin), []).append(t)
        return [ThrottleFollowers(g) for g in groups.values()]

    def jobs(self) -> list[PeriodicJob]:
        """Declare ``follow throttle <flow>`` (or ``<n> flows ->T``), every :data:`THROTTLE_POLL_S`."""
        return [PeriodicJob(f"follow throttle {self.name}", THROTTLE_POLL_S, self.poll)]

    def _ends(self) -> dict[str, int]:
        """End offset of every existing control topic (partition 0), in one or two requests to the target."""
        if self._admin is None:
            settings = self.throttles[0].flow_config.target_admin
            client = self._clients.admin(settings, client_id=self._client_id)
            self._admin = ClusterAdmin(client, self.target, bootstrap_servers=settings.bootstrap_servers)
        admin = self._admin.with_timeout(self.timeout_s)
        missing = sorted({t.topic for t in self.throttles} - self._present)
        if missing:
            self._present |= set(admin.describe_topics(missing, hidden_as_missing=True))
        ends = admin.end_offsets([(t, 0) for t in sorted(self._present)])
        self._present = {t for t, _ in ends}  # one deleted meanwhile is left out: listed again next poll
        return {t: e for (t, _), e in ends.items()}

    def poll(self) -> int:
        """Have each flow whose control topic has new records read them; return how many flows read (0 on failure)."""
        try:
            ends = self._ends()
        except ClusterError as e:
            self._present = set()
            log.warning("reading the control topics on '%s' failed (%s); throttles unchanged", self.target, e)
            return 0
        moved = [t for t in self.throttles if ends.get(t.topic, 0) > t.position]
        for t in moved:
            t.poll()
        return len(moved)

    def close(self) -> None:
        """Serve the admin client's last log lines (each flow closes its own throttle)."""
        if self._admin is not None:
            self._admin.close()
            self._admin = None


__all__ = ["POLL_TIMEOUT_S", "THROTTLE_POLL_S", "LiveThrottle", "ThrottleFollowers"]
