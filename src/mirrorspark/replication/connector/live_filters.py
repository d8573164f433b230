"""A running flow's live allow and deny lists: the config file's, with ``mirrorspark control``'s changes on top.

The flow tails its control topic (:class:`~mirrorspark.client.control_store.ControlStore`, SRM's
``srm-control``) at every topic and group refresh, without a restart.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TypeVar

from mirrorspark.client.context import FlowContext
from mirrorspark.client.control_store import ControlTail, group_filter_of, topic_filter_of
from mirrorspark.config.model import FlowConfig
from mirrorspark.core.control_state import ControlState, Kind
from mirrorspark.errors import BadRegexError, ClusterError
from mirrorspark.mm2.filters import DefaultGroupFilter, DefaultTopicFilter

log = logging.getLogger(__name__)

F = TypeVar("F", DefaultTopicFilter, DefaultGroupFilter)


class LiveFilters:
    """A running flow's topic and group filters, kept in step with its control topic; not thread-safe.

    If the control topic cannot be read or the lists do not compile, the last good filter stays (a warning).
    """

    def __init__(self, context: FlowContext, *, purpose: str = "control-target-consumer") -> None:
        self.flow_config = context.flow_config
        self.topic = context.internal_topics.control
        self.name = self.flow_config.name
        self._tail = ControlTail(
            self.flow_config, self.topic, client_id=context.client_id(purpose), clients=context.clients
        )
        self._built: dict[Kind, tuple[int, DefaultTopicFilter | DefaultGroupFilter]] = {}

    @property
    def state(self) -> ControlState:
        """The control changes folded so far."""
        return self._tail.state

    def poll(self) -> None:
        """Read new control records (within ``admin.timeout.ms``); on failure keep the state and log a warning."""
        try:
            self._tail.poll(timeout_s=self.flow_config.admin_timeout_s)
        except ClusterError as e:
            log.warning(
                "%s: reading control topic '%s' failed (%s); lists unchanged", self.flow_config.name, self.topic, e
            )

    def topic_filter(self, current: DefaultTopicFilter) -> DefaultTopicFilter:
        """Return the topic filter of the lists in effect (``current`` if they do not compile or did not change)."""
        return self._filter("topics", current, topic_filter_of)

    def group_filter(self, current: DefaultGroupFilter) -> DefaultGroupFilter:
        """Return the group filter of the lists in effect (as :meth:`topic_filter`, for ``groups``)."""
        return self._filter("groups", current, group_filter_of)

    def _filter(self, kind: Kind, current: F, build: Callable[[FlowConfig, ControlState], F]) -> F:
        n = self._tail.state.records
        built = self._built.get(kind)
        if built is not None and built[0] == n:
            return built[1]  # type: ignore[return-value]
        try:
            new = build(self.flow_config, self._tail.state)
        except BadRegexError as e:
            log.warning("%s: control %s lists do not compile (%s); keeping the previous ones", self.name, kind, e)
            return current
        if n:
            log.info("%s: %s lists in effect: %r", self.name, kind, new)
        self._built[kind] = (n, new)
        return new

    def close(self) -> None:
        """Close the consumer."""
        self._tail.close()


__all__ = ["LiveFilters"]
