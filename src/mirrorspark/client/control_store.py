r"""Live allow and deny lists of a flow (Cloudera SRM's ``srm-control topics|groups``).

The config file gives a flow ``S->T`` its topic and group lists (``topics`` /
``topics.exclude``, ``groups`` / ``groups.exclude``). Operators change them while
the flow runs, without a restart, by writing **control changes** to a compacted
internal topic on the flow's *target* cluster::

    mm2-control<isep><S><isep>internal      (1 partition, cleanup.policy=compact)

named like the offset-syncs topic (``isep`` = the policy's internal separator), so it
is one of MM2's internal topics (``mm2*.internal``) and never replicated. Its replication
factor is the flow's ``checkpoints.topic.replication.factor``. It is created when the
first change is written; a missing topic means "no changes".

Record layout, one record per change of one list entry:

* key: compact JSON with sorted keys, UTF-8:
  ``{"flow":"A->B","kind":"topics","list":"allow","regex":"orders\..*"}``
  (``kind`` is ``topics`` or ``groups``, ``list`` is ``allow`` or ``deny``);
* value: compact JSON ``{"op":"add","ts":1700000000000}`` (``op`` is ``add`` or
  ``remove``, ``ts`` the epoch ms of the change); a tombstone (null value) forgets the
  entry, as if it had never been changed.

Records are folded in offset order, the last per key wins (:func:`fold`). The lists in
effect are the config file's with the changes on top (:func:`effective_lists`)::

    allow = (config topics          | added allow) - removed allow
    deny  = (config topics.exclude  | added deny)  - removed deny      (groups alike)

Running flows tail the topic (:class:`~mirrorspark.replication.connector.live_filters.LiveFilters`) on
every topic refresh (``refresh.topics.interval.seconds``) and group refresh
(``refresh.groups.interval.seconds``). :class:`ControlStore` is the operator side
(``mirrorspark control``). The folding and the list arithmetic
(:mod:`mirrorspark.core.control_state`) do no I/O.
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
    effective_lists,
    fold,
    validate_regex,
)
from mirrorspark.errors import BadRegexError, ClusterError, CorruptRecordError
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
    """Return the topic filter of the lists in effect (MM2's ``DefaultTopicFilter`` over them).

    Raises
    ------
    BadRegexError
        A regex of the lists in effect does not compile.
    """
    allow, deny = lists_of(flow, state, "topics").patterns()
    return DefaultTopicFilter(topics=allow, topics_exclude=deny, key_prefix=f"{flow.name}.")


def group_filter_of(flow: FlowConfig, state: ControlState) -> DefaultGroupFilter:
    """Return the group filter of the lists in effect (MM2's ``DefaultGroupFilter`` over them).

    Raises
    ------
    BadRegexError
        A regex of the lists in effect does not compile.
    """
    allow, deny = lists_of(flow, state, "groups").patterns()
    return DefaultGroupFilter(groups=allow, groups_exclude=deny, key_prefix=f"{flow.name}.")


# --------------------------------------------------------------------------- I/O


class ControlTail:
    """Tails a flow's control topic on its target and keeps the folded state (a missing topic: no changes).

    Parameters
    ----------
    flow:
        The flow's configuration (its target's client settings).
    topic:
        The control topic.
    client_id:
        The consumer's ``client.id``.
    clients:
        Where the consumer comes from.
    """

    def __init__(self, flow: FlowConfig, topic: str, *, client_id: str, clients: ClientFactory) -> None:
        self.state = ControlState(flow=flow.name)
        self.topic = topic
        self._flow = flow
        self._client_id = client_id
        self._clients = clients
        self._reader: TopicReader | None = None
        self._position = 0  # next offset to read

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
        batch: list[ControlChange] = []

        def on_record(key: bytes | None, value: bytes | None) -> None:
            try:
                batch.append(ControlChange.decode(key, value))
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
    """Read and change the live allow/deny lists of the flow ``source->target`` (``mirrorspark control``).

    Changes are written to the flow's control topic on ``target`` (created by the first
    change). Every regex is validated before anything connects or is written.

    Parameters
    ----------
    config:
        The whole configuration (the config file's lists are the base).
    source, target:
        Aliases of the flow.
    timeout_s:
        Seconds for each cluster call and for reading the control topic (default 30);
        reachability is checked within ``min(10, timeout_s)``.
    clock_ms:
        Epoch ms, the ``ts`` of written changes.
    context:
        The flow's context (policy, client factory); default: one built for the flow.

    Raises
    ------
    UnknownAliasError
        If an alias is not in ``clusters`` (before anything connects).
    ConfigError
        If ``source == target``.

    Notes
    -----
    Not thread-safe. Use as a context manager or call :meth:`close`.
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
            If the target does not answer.
        ClusterError
            If the topic cannot be read to its end within ``timeout_s``.
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
        """Write changes to ``kind``'s lists (all or nothing) and return the state after them.

        Parameters
        ----------
        kind:
            ``"topics"`` or ``"groups"``.
        add, remove:
            Regexes to add to / remove from the allow list (``topics`` / ``groups``).
        add_deny, remove_deny:
            Regexes to add to / remove from the deny list (``topics.exclude`` / ``groups.exclude``).

        Returns
        -------
        ControlState
            Read back to the end after writing (so it includes concurrent changes).

        Raises
        ------
        BadRegexError
            If a regex is empty or does not compile, or the resulting lists do not compile
            together; nothing is written.
        ClusterUnreachableError, ClusterError
            If the target does not answer or does not acknowledge the changes.
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

    def _write(self, changes: Sequence[ControlChange]) -> None:
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
            self._producer.produce(self.topic, c.encode_value(), c.key.encode(), partition=0, on_delivery=on_delivery)
        left = self._producer.flush(self.timeout_s)
        if left or errors:
            raise ClusterError(
                f"writing control changes to '{self.topic}' on cluster '{self.target}' failed "
                f"({errors[0] if errors else f'{left} not acknowledged within {self.timeout_s:.0f} s'}); "
                "read the lists back with --list to see what took effect"
            )

    def lists(self, kind: Kind) -> EffectiveLists:
        """Return the lists of ``kind`` in effect now, with the origin of every entry (reads the topic).

        Parameters
        ----------
        kind:
            ``"topics"`` or ``"groups"``.

        Returns
        -------
        EffectiveLists
            The allow and deny lists: the config file's, with the control topic's changes on top.

        Raises
        ------
        ClusterUnreachableError, ClusterError
            As :meth:`read`.
        """
        return lists_of(self.flow_config, self.read(), kind)

    def effective(self, kind: Kind) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """``(allow regexes, deny regexes)`` of ``kind`` in effect now (reads the topic)."""
        return self.lists(kind).patterns()

    def matching_topics(self) -> list[str]:
        """Source topics the flow replicates under the lists in effect now (MM2's ``shouldReplicateTopic``).

        Includes heartbeat topics (replicated whatever the lists say, unless
        ``heartbeats.replication.enabled=false``); never internal topics or cycles.

        Raises
        ------
        ClusterUnreachableError
            If the source or target does not answer.
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
        """Return the name of ``topic``'s remote topic on the target (the policy's ``formatRemoteTopic``).

        Parameters
        ----------
        topic:
            A source topic name.

        Returns
        -------
        str
            E.g. ``"A.orders"`` for ``"orders"`` under MM2's ``DefaultReplicationPolicy``.
        """
        return self.policy.format_remote_topic(self.source, topic)

    def matching_groups(self) -> list[str]:
        """Source consumer groups the flow checkpoints under the lists in effect now.

        Raises
        ------
        ClusterUnreachableError, ClusterError
            If the source or target does not answer, or listing groups fails.
        """
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
