r"""Live allow and deny lists of a flow (Cloudera SRM's ``srm-control topics|groups``).

Operators change a flow's topic and group lists while it runs by writing **control changes** to a
compacted internal topic on the flow's target, ``mm2-control<isep><S><isep>internal`` (1 partition,
created by the first change, replication factor ``checkpoints.topic.replication.factor``; missing =
no changes). One record per change of one list entry:

* key: compact sorted JSON, ``{"flow":"A->B","kind":"topics","list":"allow","regex":"orders\..*"}``
  (``kind``: ``topics``/``groups``; ``list``: ``allow``/``deny``);
* value: ``{"op":"add","ts":1700000000000}`` (``op``: ``add``/``remove``, ``ts`` in epoch ms); a
  tombstone forgets the entry.

A flow's throttle (``replication.throttled.rate``, bytes/s) is set the same way, by one record per flow
with key ``{"flow":"A->B","kind":"throttle"}`` and value ``{"op":"set","rate":1000000,"ts":…}``
(0: no limit; a tombstone: the config file's limit again).

Folded in offset order, the last per key wins; the lists in effect are the config file's with the
changes on top (:mod:`mirrorspark.core.control_state`, no I/O)::

    allow = (config topics          | added allow) - removed allow
    deny  = (config topics.exclude  | added deny)  - removed deny      (groups alike)

Running flows tail the topic on every topic and group refresh
(:class:`~mirrorspark.replication.connector.live_filters.LiveFilters`) and every second for the throttle
(:class:`~mirrorspark.replication.connector.live_throttle.LiveThrottle`); :class:`ControlStore` is the
operator side (``mirrorspark control``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from typing import cast

from confluent_kafka import KafkaError, Producer

from mirrorspark.client.context import FlowContext, Side
from mirrorspark.config.model import FlowConfig, MirrorConfig
from mirrorspark.core.control_state import (
    KINDS,
    ControlChange,
    ControlKey,
    ControlState,
    EffectiveLists,
    Kind,
    ListName,
    Op,
    ThrottleChange,
    decode_control,
    effective_lists,
    fold,
    validate_regex,
)
from mirrorspark.errors import BadRegexError, ClusterError, ConfigError, CorruptRecordError
from mirrorspark.kafka.admin import ClusterAdmin
from mirrorspark.kafka.factory import LIBRDKAFKA_LOGGER, ClientFactory
from mirrorspark.kafka.reader import TopicReader
from mirrorspark.mm2.filters import DefaultGroupFilter, DefaultTopicFilter, should_replicate_topic

log = logging.getLogger(__name__)


def _config_lists(flow: FlowConfig, kind: Kind) -> tuple[tuple[str, ...], tuple[str, ...]]:
    return (flow.topics, flow.topics_exclude) if kind == "topics" else (flow.groups, flow.groups_exclude)


def lists_of(flow: FlowConfig, state: ControlState, kind: Kind) -> EffectiveLists:
    """Return the lists of ``kind`` in effect: the config file's with the folded control changes on top."""
    allow, deny = _config_lists(flow, kind)
    return effective_lists(state, kind, config_allow=allow, config_deny=deny)


def topic_filter_of(flow: FlowConfig, state: ControlState) -> DefaultTopicFilter:
    """Return the topic filter (MM2's ``DefaultTopicFilter``) of the lists in effect; BadRegexError if one fails."""
    allow, deny = lists_of(flow, state, "topics").patterns()
    return DefaultTopicFilter(topics=allow, topics_exclude=deny, key_prefix=f"{flow.name}.")


def group_filter_of(flow: FlowConfig, state: ControlState) -> DefaultGroupFilter:
    """Return the group filter (MM2's ``DefaultGroupFilter``) of the lists in effect; BadRegexError if one fails."""
    allow, deny = lists_of(flow, state, "groups").patterns()
    return DefaultGroupFilter(groups=allow, groups_exclude=deny, key_prefix=f"{flow.name}.")


# --------------------------------------------------------------------------- I/O


class ControlTail:
    """Tails a flow's control topic on its target and keeps the folded state (a missing topic: no changes)."""

    def __init__(self, flow: FlowConfig, topic: str, *, client_id: str, clients: ClientFactory) -> None:
        self.state = ControlState(flow=flow.name)
        self.topic = topic
        self._flow = flow
        self._client_id = client_id
        self._clients = clients
        self._reader: TopicReader | None = None
        self._position = 0  # next offset to read

    @property
    def position(self) -> int:
        """Next offset to read: a topic whose end offset is not past it has nothing new."""
        return self._position

    def poll(self, *, timeout_s: float = 30.0) -> int:
        """Fold the records written since the last call; return how many were read."""
        if self._reader is None:  # created at first use, released by close()
            f = self._flow
            self._reader = TopicReader(
                f.target_consumer,
                f.target_admin,
                f.target,
                self.topic,
                client_id=self._client_id,
                clients=self._clients,
            )
            self._reader.position = self._position
        batch: list[ControlChange | ThrottleChange] = []

        def on_record(key: bytes | None, value: bytes | None) -> None:
            try:
                batch.append(decode_control(key, value))
            except CorruptRecordError as e:
                log.warning("skipping a corrupt control record in %s: %s", self.topic, e)

        try:
            n = self._reader.read(on_record, timeout_s=timeout_s)
        finally:
            self._position = self._reader.position
            if batch:
                self.state = fold(batch, self.state)
        return n

    def close(self) -> None:
        """Close the consumer and release the clients (a later :meth:`poll` continues where this one stopped)."""
        if self._reader is not None:
            self._reader.close()
            self._reader = None


class ControlStore:
    """Read and change the live lists and throttle of the flow ``source->target`` (``mirrorspark control``).

    Every regex is validated before anything connects or is written. ``timeout_s``: seconds for each
    cluster call and for reading the control topic (default 30); ``clock_ms``: epoch ms, the ``ts`` of
    written changes. A context manager; not thread-safe.

    Raises
    ------
    UnknownAliasError
        An alias is not in ``clusters`` (before anything connects).
    ConfigError
        ``source == target``.
    """

    def __init__(
        self,
        config: MirrorConfig,
        source: str,
        target: str,
        *,
        timeout_s: float = 30.0,
        clock_ms: Callable[[], int] = lambda: int(time.time() * 1000),
        context: FlowContext | None = None,
    ) -> None:
        self.flow_config = config.flow(source, target)
        self.source = source
        self.target = target
        self.timeout_s = timeout_s
        self.context = context if context is not None else FlowContext.build(config, self.flow_config)
        self.policy = self.context.policy
        self.topic = self.context.internal_topics.control
        self._clock_ms = clock_ms
        self._admins: dict[str, ClusterAdmin] = {}
        self._tail: ControlTail | None = None
        self._producer: Producer | None = None

    def __enter__(self) -> ControlStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _admin(self, alias: str) -> ClusterAdmin:
        """Return the source or target admin wrapper (bounded by ``timeout_s``), checked reachable at first use."""
        if alias not in self._admins:
            side: Side = "source" if alias == self.source else "target"
            admin = self.context.cluster_admin(
                side, f"control-{side}-admin", overrides={"logger": logging.getLogger(LIBRDKAFKA_LOGGER)}
            ).with_timeout(self.timeout_s, setting="--timeout")
            admin.check_reachable(timeout_s=min(10.0, self.timeout_s))
            self._admins[alias] = admin
        return self._admins[alias]

    def read(self) -> ControlState:
        """Read the control changes of the flow to the topic's current end.

        Raises
        ------
        ClusterUnreachableError
            The target does not answer.
        ClusterError
            The topic cannot be read to its end within ``timeout_s``.
        """
        self._admin(self.target)
        if self._tail is None:
            self._tail = ControlTail(
                self.flow_config,
                self.topic,
                client_id=self.context.client_id("control-target-consumer"),
                clients=self.context.clients,
            )
        self._tail.poll(timeout_s=self.timeout_s)
        return self._tail.state

    def apply(
        self,
        kind: Kind,
        add: Sequence[str] = (),
        remove: Sequence[str] = (),
        add_deny: Sequence[str] = (),
        remove_deny: Sequence[str] = (),
    ) -> ControlState:
        """Write changes to ``kind``'s allow (``add``/``remove``) and deny lists, all or nothing.

        Returns
        -------
        ControlState
            Read back to the end after writing (so it includes concurrent changes).

        Raises
        ------
        BadRegexError
            A regex is empty or does not compile, alone or with the resulting lists; nothing is written.
        ClusterUnreachableError, ClusterError
            The target does not answer or does not acknowledge the changes.
        """
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
        planned: list[tuple[ListName, Op, str]] = []
        for option, lst, op, regexes in (
            ("--add", "allow", "add", add),
            ("--remove", "allow", "remove", remove),
            ("--add-deny", "deny", "add", add_deny),
            ("--remove-deny", "deny", "remove", remove_deny),
        ):
            if isinstance(regexes, str):
                raise TypeError(f"{option}: expected a sequence of regexes, got the string {regexes!r}")
            for regex in regexes:
                planned.append((cast(ListName, lst), cast(Op, op), validate_regex(regex, option=option)))
        state = self.read()
        if not planned:
            return state
        now = self._clock_ms()
        changes = [
            ControlChange(ControlKey(self.flow_config.name, kind, lst, regex), op, now) for lst, op, regex in planned
        ]
        after = fold(changes, state)
        try:
            (topic_filter_of if kind == "topics" else group_filter_of)(self.flow_config, after)
        except BadRegexError as e:
            raise BadRegexError(f"{e.message}; nothing was changed") from e
        self._write(changes)
        return self.read()

    def throttle(self) -> tuple[int, str]:
        """Return the flow's throttle in effect, bytes/s (0: no limit), and its origin (``control``/``config``)."""
        state = self.read()
        origin = "config" if state.throttle is None or state.throttle.rate is None else "control"
        return state.throttle_limit(self.flow_config.throttled_rate), origin

    def set_throttle(self, rate: int | None) -> tuple[int, str]:
        """Set the flow's throttle to ``rate`` bytes/s (0: no limit; ``None``: the config file's again).

        Returns the throttle in effect read back (as :meth:`throttle`). Raises ConfigError for a negative
        rate (nothing written), ClusterUnreachableError or ClusterError as :meth:`apply`.
        """
        if rate is not None and (isinstance(rate, bool) or not isinstance(rate, int) or rate < 0):
            raise ConfigError(f"a throttle rate is a whole number of bytes/s >= 0 (0: no limit), got {rate!r}")
        self.read()
        self._write([ThrottleChange(self.flow_config.name, rate, self._clock_ms())])
        return self.throttle()

    def _write(self, changes: Sequence[ControlChange | ThrottleChange]) -> None:
        self._admin(self.target).ensure_topic(
            self.topic,
            partitions=1,
            replication_factor=self.flow_config.checkpoints_topic_replication_factor,
            config={"cleanup.policy": "compact"},
        )
        if self._producer is None:
            self._producer = self.context.producer(
                "target",
                "control-target-producer",
                overrides={
                    "enable.idempotence": True,
                    "linger.ms": 0,
                    "logger": logging.getLogger(LIBRDKAFKA_LOGGER),
                },
            )
        errors: list[str] = []

        def on_delivery(err: KafkaError | None, _msg: object) -> None:
            if err is not None:
                errors.append(err.str())

        for c in changes:
            key = c.encode_key() if isinstance(c, ThrottleChange) else c.key.encode()
            self._producer.produce(self.topic, c.encode_value(), key, partition=0, on_delivery=on_delivery)
        left = self._producer.flush(self.timeout_s)
        if left or errors:
            raise ClusterError(
                f"writing control changes to '{self.topic}' on cluster '{self.target}' failed "
                f"({errors[0] if errors else f'{left} not acknowledged within {self.timeout_s:.0f} s'}); "
                "read the lists back with --list to see what took effect"
            )

    def lists(self, kind: Kind) -> EffectiveLists:
        """Return the lists of ``kind`` in effect now, with the origin of every entry; raises as :meth:`read`."""
        return lists_of(self.flow_config, self.read(), kind)

    def effective(self, kind: Kind) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """``(allow regexes, deny regexes)`` of ``kind`` in effect now (reads the topic)."""
        return self.lists(kind).patterns()

    def matching_topics(self) -> list[str]:
        """Source topics the flow replicates under the lists in effect now (MM2's ``shouldReplicateTopic``).

        Heartbeat topics included (unless ``heartbeats.replication.enabled=false``); never internal topics or
        cycles. Raises ClusterUnreachableError if the source or target does not answer.
        """
        topic_filter = topic_filter_of(self.flow_config, self.read())
        topics = self._admin(self.source).list_topics()
        return sorted(
            t
            for t, n in topics.items()
            if n > 0
            and should_replicate_topic(
                t,
                topic_filter=topic_filter,
                policy=self.policy,
                target_alias=self.target,
                heartbeats_replication_enabled=self.flow_config.heartbeats_replication_enabled,
            )
        )

    def remote_topic(self, topic: str) -> str:
        """Return ``topic``'s remote topic on the target, e.g. ``"A.orders"`` (the policy's ``formatRemoteTopic``)."""
        return self.policy.format_remote_topic(self.source, topic)

    def matching_groups(self) -> list[str]:
        """Source consumer groups the flow checkpoints under the lists in effect now; ClusterError if listing fails."""
        group_filter = group_filter_of(self.flow_config, self.read())
        return sorted(g for g in self._admin(self.source).list_groups() if group_filter.should_replicate_group(g))

    def close(self) -> None:
        """Flush the producer and close the consumer (admin clients close when collected)."""
        if self._producer is not None:
            self._producer.flush(10)
            self._producer = None
        if self._tail is not None:
            self._tail.close()
            self._tail = None


__all__ = ["ControlStore", "ControlTail", "group_filter_of", "lists_of", "topic_filter_of"]
