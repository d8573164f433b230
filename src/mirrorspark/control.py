"""Live allow and deny lists of a flow (Cloudera SRM's ``srm-control topics|groups``).

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
  ``{"flow":"A->B","kind":"topics","list":"allow","regex":"orders\\..*"}``
  (``kind`` is ``topics`` or ``groups``, ``list`` is ``allow`` or ``deny``);
* value: compact JSON ``{"op":"add","ts":1700000000000}`` (``op`` is ``add`` or
  ``remove``, ``ts`` the epoch ms of the change); a tombstone (null value) forgets the
  entry, as if it had never been changed.

Records are folded in offset order, the last per key wins (:func:`fold`). The lists in
effect are the config file's with the changes on top (:func:`effective_lists`)::

    allow = (config topics          | added allow) - removed allow
    deny  = (config topics.exclude  | added deny)  - removed deny      (groups alike)

Running flows tail the topic (:class:`LiveFilters`) on every topic refresh
(``refresh.topics.interval.seconds``) and group refresh
(``refresh.groups.interval.seconds``). :class:`ControlStore` is the operator side
(``mirrorspark control``). The folding and the list arithmetic do no I/O.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, cast

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

from .checkpoints import TopicReader
from .clients import LIBRDKAFKA_LOGGER, admin_client, check_reachable, ensure_topic, list_topics, producer
from .config import FlowConfig, MirrorConfig
from .errors import BadRegexError, ClusterError, CorruptRecordError
from .filters import DefaultGroupFilter, DefaultTopicFilter, compile_list, should_replicate_topic
from .policy import ReplicationPolicy, load_policy

__all__ = [
    "KINDS",
    "ControlChange",
    "ControlKey",
    "ControlState",
    "ControlStore",
    "EffectiveLists",
    "ListEntry",
    "LiveFilters",
    "control_topic",
    "effective_lists",
    "fold",
    "validate_regex",
]

log = logging.getLogger(__name__)

Kind = Literal["topics", "groups"]
"""What a list filters: source topics or consumer groups."""

ListName = Literal["allow", "deny"]
"""Which list: ``allow`` (``topics`` / ``groups``) or ``deny`` (``topics.exclude`` / ``groups.exclude``)."""

Op = Literal["add", "remove"]
"""What a change does to its list entry."""

KINDS: tuple[Kind, ...] = ("topics", "groups")
_LISTS: tuple[ListName, ...] = ("allow", "deny")
_OPS: tuple[Op, ...] = ("add", "remove")
_CONTROL_PREFIX = "mm2-control"
_OFFSET_SYNCS_PREFIX = "mm2-offset-syncs"


def control_topic(policy: ReplicationPolicy, source_alias: str) -> str:
    """Name of the control topic of flows from ``source_alias`` (it lives on the flow's target).

    Built like :meth:`~mirrorspark.policy.ReplicationPolicy.offset_syncs_topic`, with the
    policy's internal separator, so the policy sees it as an MM2 internal topic.

    Parameters
    ----------
    policy:
        The flow's replication policy.
    source_alias:
        The flow's source cluster alias.

    Returns
    -------
    str
        ``mm2-control<isep><source_alias><isep>internal``, e.g. ``mm2-control.primary.internal``;
        ``mm2-control.<source_alias>.internal`` for a policy whose offset-syncs topic does not
        start with ``mm2-offset-syncs``.
    """
    syncs = policy.offset_syncs_topic(source_alias)
    if syncs.startswith(_OFFSET_SYNCS_PREFIX):
        name = _CONTROL_PREFIX + syncs[len(_OFFSET_SYNCS_PREFIX) :]
        if policy.is_internal_topic(name):
            return name
    return f"{_CONTROL_PREFIX}.{source_alias}.internal"


def validate_regex(regex: str, *, option: str) -> str:
    """Check one list entry before anything is written; return it trimmed.

    Parameters
    ----------
    regex:
        A Java-style regex matched against whole names (as the config file's list items).
    option:
        Where it came from, for the message (e.g. ``"--add"``).

    Returns
    -------
    str
        ``regex`` without surrounding whitespace (config list items are trimmed too).

    Raises
    ------
    BadRegexError
        If it is empty or does not compile; the message names the regex.
    """
    item = regex.strip()
    if not item:
        raise BadRegexError(f"{option}: an empty regex matches no name; give one such as 'orders\\..*'")
    try:
        compile_list([item], key=option)
    except BadRegexError as e:
        raise BadRegexError(f"{e.message}; nothing was changed") from e
    return item


# --------------------------------------------------------------------------- records


def _json(obj: Mapping[str, object]) -> bytes:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


@dataclass(frozen=True, order=True)
class ControlKey:
    """The list entry a control record is about (the record key).

    Attributes
    ----------
    flow:
        The flow's name, ``"<source>-><target>"``.
    kind:
        ``"topics"`` or ``"groups"``.
    list:
        ``"allow"`` or ``"deny"``.
    regex:
        The entry, a regex matched against whole names.
    """

    flow: str
    kind: Kind
    list: ListName
    regex: str

    def encode(self) -> bytes:
        """``{"flow":…,"kind":…,"list":…,"regex":…}``: compact JSON, sorted keys, UTF-8."""
        return _json({"flow": self.flow, "kind": self.kind, "list": self.list, "regex": self.regex})

    @classmethod
    def decode(cls, key: bytes | None) -> ControlKey:
        """Parse a record key.

        Raises
        ------
        CorruptRecordError
            If it is not such a JSON object or names an unknown kind or list.
        """
        doc = _load(key, "key")
        flow, kind, lst, regex = (doc.get(k) for k in ("flow", "kind", "list", "regex"))
        if not isinstance(flow, str) or not isinstance(regex, str):
            raise CorruptRecordError(f"control record key {key!r}: 'flow' and 'regex' must be strings")
        if kind not in KINDS or lst not in _LISTS:
            raise CorruptRecordError(f"control record key {key!r}: unknown kind {kind!r} or list {lst!r}")
        return cls(flow=flow, kind=cast(Kind, kind), list=cast(ListName, lst), regex=regex)


@dataclass(frozen=True)
class ControlChange:
    """One control record: add or remove one list entry (``op`` ``None`` = a tombstone).

    Attributes
    ----------
    key:
        The list entry.
    op:
        ``"add"``, ``"remove"``, or ``None`` for a tombstone (forget the entry).
    ts_ms:
        When the change was made, epoch ms (``-1`` for a tombstone).
    """

    key: ControlKey
    op: Op | None
    ts_ms: int = -1

    def encode_value(self) -> bytes | None:
        """``{"op":…,"ts":…}`` as compact JSON, or ``None`` for a tombstone."""
        if self.op is None:
            return None
        return _json({"op": self.op, "ts": self.ts_ms})

    @classmethod
    def decode(cls, key: bytes | None, value: bytes | None) -> ControlChange:
        """Parse a record.

        Raises
        ------
        CorruptRecordError
            If the key or value is malformed.
        """
        k = ControlKey.decode(key)
        if value is None:
            return cls(key=k, op=None)
        doc = _load(value, "value")
        op, ts = doc.get("op"), doc.get("ts")
        if op not in _OPS or not isinstance(ts, int) or isinstance(ts, bool):
            raise CorruptRecordError(f"control record value {value!r}: expected {{'op': 'add'|'remove', 'ts': <ms>}}")
        return cls(key=k, op=cast(Op, op), ts_ms=ts)


def _load(raw: bytes | None, what: str) -> dict[str, Any]:
    if raw is None:
        raise CorruptRecordError(f"control record {what} is null")
    try:
        doc = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise CorruptRecordError(f"control record {what} {raw!r} is not UTF-8 JSON: {e}") from e
    if not isinstance(doc, dict):
        raise CorruptRecordError(f"control record {what} {raw!r} is not a JSON object")
    return doc


# --------------------------------------------------------------------------- state (pure)


@dataclass(frozen=True)
class ControlState:
    """The folded control changes of one flow: the last change per list entry.

    Attributes
    ----------
    flow:
        The flow's name.
    changes:
        ``{(kind, list, regex): last change}`` in the order of each entry's last record.
    records:
        Records folded so far (including other flows' and tombstones).
    """

    flow: str
    changes: Mapping[tuple[Kind, ListName, str], ControlChange] = field(default_factory=dict)
    records: int = 0

    def entries(self, kind: Kind, lst: ListName, op: Op) -> tuple[str, ...]:
        """Regexes whose last change on ``kind``'s ``lst`` list is ``op``, in record order."""
        return tuple(r for (k, li, r), c in self.changes.items() if k == kind and li == lst and c.op == op)


def fold(changes: Iterable[ControlChange], state: ControlState) -> ControlState:
    """Apply control records, in order, to a state; the last record per entry wins.

    Pure: ``state`` is not modified. Records of other flows are counted and ignored; a
    tombstone forgets its entry.

    Parameters
    ----------
    changes:
        Records in offset order.
    state:
        The state before them (``ControlState(flow=...)`` for an empty topic).

    Returns
    -------
    ControlState
        The state after them.
    """
    out = dict(state.changes)
    n = state.records
    for c in changes:
        n += 1
        if c.key.flow != state.flow:
            continue
        slot = (c.key.kind, c.key.list, c.key.regex)
        out.pop(slot, None)  # re-insert: order = each entry's last change
        if c.op is not None:
            out[slot] = c
    return ControlState(flow=state.flow, changes=out, records=n)


@dataclass(frozen=True)
class ListEntry:
    """One regex of an effective list and where it comes from.

    Attributes
    ----------
    regex:
        The regex.
    origin:
        ``"config"`` (the config file's list) or ``"control"`` (added by a control change).
    """

    regex: str
    origin: Literal["config", "control"]


@dataclass(frozen=True)
class EffectiveLists:
    """The allow and deny lists of one kind in effect for a flow.

    Attributes
    ----------
    kind:
        ``"topics"`` or ``"groups"``.
    allow, deny:
        The lists in effect: config entries first (config order), then control-added ones.
    removed_allow, removed_deny:
        Config entries taken out by control changes (not in effect).
    """

    kind: Kind
    allow: tuple[ListEntry, ...]
    deny: tuple[ListEntry, ...]
    removed_allow: tuple[str, ...] = ()
    removed_deny: tuple[str, ...] = ()

    def patterns(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """``(allow regexes, deny regexes)``."""
        return tuple(e.regex for e in self.allow), tuple(e.regex for e in self.deny)


def _combine(
    config: Sequence[str], added: Sequence[str], removed: Sequence[str]
) -> tuple[tuple[ListEntry, ...], tuple[str, ...]]:
    gone = set(removed)
    out: list[ListEntry] = []
    seen: set[str] = set()
    for regex, origin in [*((r, "config") for r in config), *((r, "control") for r in added)]:
        if regex in gone or regex in seen:
            continue
        seen.add(regex)
        out.append(ListEntry(regex, cast(Literal["config", "control"], origin)))
    removed_config = tuple(dict.fromkeys(r for r in config if r in gone))
    return tuple(out), removed_config


def effective_lists(
    state: ControlState, kind: Kind, *, config_allow: Sequence[str], config_deny: Sequence[str]
) -> EffectiveLists:
    """The lists in effect: the config file's, with the control changes on top. Pure.

    ``allow = (config_allow | added allow) - removed allow`` and
    ``deny = (config_deny | added deny) - removed deny``.

    Parameters
    ----------
    state:
        The folded control changes.
    kind:
        ``"topics"`` or ``"groups"``.
    config_allow, config_deny:
        The config file's lists (``topics`` / ``topics.exclude`` or ``groups`` / ``groups.exclude``).

    Returns
    -------
    EffectiveLists
        Config entries first, in config order, then added ones in the order of their last change;
        no duplicates.
    """
    allow, removed_allow = _combine(
        config_allow, state.entries(kind, "allow", "add"), state.entries(kind, "allow", "remove")
    )
    deny, removed_deny = _combine(
        config_deny, state.entries(kind, "deny", "add"), state.entries(kind, "deny", "remove")
    )
    return EffectiveLists(kind=kind, allow=allow, deny=deny, removed_allow=removed_allow, removed_deny=removed_deny)


def _config_lists(flow: FlowConfig, kind: Kind) -> tuple[tuple[str, ...], tuple[str, ...]]:
    return (flow.topics, flow.topics_exclude) if kind == "topics" else (flow.groups, flow.groups_exclude)


def _lists_of(flow: FlowConfig, state: ControlState, kind: Kind) -> EffectiveLists:
    allow, deny = _config_lists(flow, kind)
    return effective_lists(state, kind, config_allow=allow, config_deny=deny)


def _topic_filter(flow: FlowConfig, state: ControlState) -> DefaultTopicFilter:
    allow, deny = _lists_of(flow, state, "topics").patterns()
    return DefaultTopicFilter(topics=allow, topics_exclude=deny, key_prefix=f"{flow.name}.")


def _group_filter(flow: FlowConfig, state: ControlState) -> DefaultGroupFilter:
    allow, deny = _lists_of(flow, state, "groups").patterns()
    return DefaultGroupFilter(groups=allow, groups_exclude=deny, key_prefix=f"{flow.name}.")


def _policy(flow: FlowConfig) -> ReplicationPolicy:
    return load_policy(
        flow.policy.class_name,
        separator=flow.policy.separator,
        internal_topic_separator_enabled=flow.policy.internal_topic_separator_enabled,
        source_cluster_alias=flow.source,
    )


# --------------------------------------------------------------------------- I/O


class _Tail:
    """Tails the control topic on the target and keeps the folded state (missing topic = empty)."""

    def __init__(self, flow: FlowConfig, topic: str, *, client_id: str) -> None:
        self.state = ControlState(flow=flow.name)
        self.topic = topic
        self._flow = flow
        self._client_id = client_id
        self._reader: TopicReader | None = None
        self._position = 0  # next offset to read

    def poll(self, *, timeout_s: float = 30.0) -> int:
        """Fold the records written since the last call; return how many were read."""
        if self._reader is None:  # created at first use, released by close()
            f = self._flow
            self._reader = TopicReader(
                f.target_consumer, f.target_admin, f.target, self.topic, client_id=self._client_id
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


class LiveFilters:
    """A running flow's topic and group filters, kept in step with its control topic.

    :meth:`poll` reads the control records written since the last call (a missing topic
    reads as no changes); :meth:`topic_filter` and :meth:`group_filter` build the filters
    of the lists in effect. If the control topic cannot be read, or the lists in effect do
    not compile, the last good filter stays (with a warning) and the next refresh tries
    again.

    Parameters
    ----------
    flow:
        The flow's configuration (its lists are the base).
    policy:
        The flow's replication policy (names the control topic).
    client_id:
        ``client.id`` of the consumer, e.g. ``"A->B|mirrorspark|control-target-consumer"``.

    Notes
    -----
    Not thread-safe: the flow's refresh job calls it.
    """

    def __init__(self, flow: FlowConfig, policy: ReplicationPolicy, *, client_id: str) -> None:
        self.flow = flow
        self.topic = control_topic(policy, flow.source)
        self._tail = _Tail(flow, self.topic, client_id=client_id)
        self._topic_filter: tuple[int, DefaultTopicFilter] | None = None
        self._group_filter: tuple[int, DefaultGroupFilter] | None = None

    @property
    def state(self) -> ControlState:
        """The control changes folded so far."""
        return self._tail.state

    def poll(self) -> None:
        """Read new control records; on failure keep the state and log a warning."""
        try:
            self._tail.poll()
        except ClusterError as e:
            log.warning("%s: reading control topic '%s' failed (%s); lists unchanged", self.flow.name, self.topic, e)

    def topic_filter(self, current: DefaultTopicFilter) -> DefaultTopicFilter:
        """The topic filter of the lists in effect (``current`` if they do not compile or did not change)."""
        n = self._tail.state.records
        if self._topic_filter is not None and self._topic_filter[0] == n:
            return self._topic_filter[1]
        try:
            new = _topic_filter(self.flow, self._tail.state)
        except BadRegexError as e:
            log.warning("%s: control topic lists do not compile (%s); keeping the previous ones", self.flow.name, e)
            return current
        if n:
            log.info("%s: topic lists in effect: %r", self.flow.name, new)
        self._topic_filter = (n, new)
        return new

    def group_filter(self, current: DefaultGroupFilter) -> DefaultGroupFilter:
        """The group filter of the lists in effect (``current`` if they do not compile or did not change)."""
        n = self._tail.state.records
        if self._group_filter is not None and self._group_filter[0] == n:
            return self._group_filter[1]
        try:
            new = _group_filter(self.flow, self._tail.state)
        except BadRegexError as e:
            log.warning("%s: control group lists do not compile (%s); keeping the previous ones", self.flow.name, e)
            return current
        if n:
            log.info("%s: group lists in effect: %r", self.flow.name, new)
        self._group_filter = (n, new)
        return new

    def close(self) -> None:
        """Close the consumer."""
        self._tail.close()


class ControlStore:
    """Read and change the live allow/deny lists of the flow ``source->target`` (``mirrorspark control``).

    Changes are written to :func:`control_topic` on ``target`` (created by the first
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
    ) -> None:
        self.flow = config.flow(source, target)
        self.source = source
        self.target = target
        self.timeout_s = timeout_s
        self.policy = _policy(self.flow)
        self.topic = control_topic(self.policy, source)
        self._bootstrap = {
            source: config.cluster(source).bootstrap_servers,
            target: config.cluster(target).bootstrap_servers,
        }
        self._clock_ms = clock_ms
        self._cid = f"{self.flow.name}|mirrorspark"
        self._admins: dict[str, AdminClient] = {}
        self._tail: _Tail | None = None
        self._producer: Any = None

    def __enter__(self) -> ControlStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _admin(self, alias: str) -> AdminClient:
        """The source or target admin client, checked reachable at first use."""
        if alias not in self._admins:
            side = "source" if alias == self.source else "target"
            admin = admin_client(
                self.flow.source_admin if side == "source" else self.flow.target_admin,
                client_id=f"{self._cid}|control-{side}-admin",
                overrides={"logger": logging.getLogger(LIBRDKAFKA_LOGGER)},
            )
            check_reachable(admin, alias, self._bootstrap[alias], timeout_s=min(10.0, self.timeout_s))
            self._admins[alias] = admin
        return self._admins[alias]

    def read(self) -> ControlState:
        """The control changes of the flow, read to the topic's current end.

        Raises
        ------
        ClusterUnreachableError
            If the target does not answer.
        ClusterError
            If the topic cannot be read to its end within ``timeout_s``.
        """
        self._admin(self.target)
        if self._tail is None:
            self._tail = _Tail(self.flow, self.topic, client_id=f"{self._cid}|control-target-consumer")
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
        changes = [ControlChange(ControlKey(self.flow.name, kind, lst, regex), op, now) for lst, op, regex in planned]
        after = fold(changes, state)
        try:
            (_topic_filter if kind == "topics" else _group_filter)(self.flow, after)
        except BadRegexError as e:
            raise BadRegexError(f"{e.message}; nothing was changed") from e
        self._write(changes)
        return self.read()

    def _write(self, changes: Sequence[ControlChange]) -> None:
        ensure_topic(
            self._admin(self.target),
            self.target,
            self.topic,
            partitions=1,
            replication_factor=self.flow.checkpoints_topic_replication_factor,
            config={"cleanup.policy": "compact"},
            timeout_s=self.timeout_s,
        )
        if self._producer is None:
            self._producer = producer(
                self.flow.target_producer,
                client_id=f"{self._cid}|control-target-producer",
                overrides={
                    "enable.idempotence": True,
                    "linger.ms": 0,
                    "logger": logging.getLogger(LIBRDKAFKA_LOGGER),
                },
            )
        errors: list[str] = []

        def on_delivery(err: Any, _msg: Any) -> None:
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
        """The lists of ``kind`` in effect now, with the origin of every entry (reads the topic)."""
        return _lists_of(self.flow, self.read(), kind)

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
        topic_filter = _topic_filter(self.flow, self.read())
        topics = list_topics(self._admin(self.source), self.source, timeout_s=self.timeout_s)
        return sorted(
            t
            for t, n in topics.items()
            if n > 0
            and should_replicate_topic(
                t,
                topic_filter=topic_filter,
                policy=self.policy,
                target_alias=self.target,
                heartbeats_replication_enabled=self.flow.heartbeats_replication_enabled,
            )
        )

    def remote_topic(self, topic: str) -> str:
        """The name of ``topic``'s remote topic on the target."""
        return self.policy.format_remote_topic(self.source, topic)

    def matching_groups(self) -> list[str]:
        """Source consumer groups the flow checkpoints under the lists in effect now.

        Raises
        ------
        ClusterUnreachableError, ClusterError
            If the source or target does not answer, or listing groups fails.
        """
        group_filter = _group_filter(self.flow, self.read())
        admin = self._admin(self.source)
        try:
            result = admin.list_consumer_groups(request_timeout=self.timeout_s).result(timeout=self.timeout_s)
        except KafkaException as e:
            raise ClusterError(f"listing consumer groups of cluster '{self.source}' failed: {e}") from e
        return sorted({g.group_id for g in result.valid if group_filter.should_replicate_group(g.group_id)})

    def close(self) -> None:
        """Flush the producer and close the consumer (admin clients close when collected)."""
        if self._producer is not None:
            self._producer.flush(10)
            self._producer = None
        if self._tail is not None:
            self._tail.close()
            self._tail = None
