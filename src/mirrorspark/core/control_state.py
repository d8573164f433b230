"""Live control of a flow as pure data: control records, their fold, the lists and the throttle in effect.

Two kinds of record share the control topic: list changes (:class:`ControlChange`, key kinds
``topics``/``groups``) and throttle changes (:class:`ThrottleChange`, key kind ``throttle``);
:func:`decode_control` reads either, and :func:`fold` applies both, the last record per key winning.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, cast

from mirrorspark.errors import BadRegexError, CorruptRecordError
from mirrorspark.mm2.filters import compile_list

Kind = Literal["topics", "groups"]
"""What a list filters: source topics or consumer groups."""

ListName = Literal["allow", "deny"]
"""Which list: ``allow`` (``topics`` / ``groups``) or ``deny`` (``topics.exclude`` / ``groups.exclude``)."""

Op = Literal["add", "remove"]
"""What a change does to its list entry."""

KINDS: tuple[Kind, ...] = ("topics", "groups")
_LISTS: tuple[ListName, ...] = ("allow", "deny")
_OPS: tuple[Op, ...] = ("add", "remove")


def validate_regex(regex: str, *, option: str) -> str:
    """Check one list entry before anything is written; return it trimmed.

    Raises BadRegexError, naming the regex, if it is empty or does not compile.
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
    """The list entry a control record is about (the record key)."""

    flow: str
    kind: Kind
    list: ListName
    regex: str

    def encode(self) -> bytes:
        """``{"flow":…,"kind":…,"list":…,"regex":…}``: compact JSON, sorted keys, UTF-8."""
        return _json({"flow": self.flow, "kind": self.kind, "list": self.list, "regex": self.regex})

    @classmethod
    def decode(cls, key: bytes | None) -> ControlKey:
        """Parse a record key; raises CorruptRecordError if not such a JSON object or of an unknown kind or list."""
        doc = _load(key, "key")
        flow, kind, lst, regex = (doc.get(k) for k in ("flow", "kind", "list", "regex"))
        if not isinstance(flow, str) or not isinstance(regex, str):
            raise CorruptRecordError(f"control record key {key!r}: 'flow' and 'regex' must be strings")
        if kind not in KINDS or lst not in _LISTS:
            raise CorruptRecordError(f"control record key {key!r}: unknown kind {kind!r} or list {lst!r}")
        return cls(flow=flow, kind=cast(Kind, kind), list=cast(ListName, lst), regex=regex)


THROTTLE = "throttle"
"""The key kind of a throttle record."""


@dataclass(frozen=True)
class ThrottleChange:
    """One throttle record of a flow: ``rate`` bytes/s (0: no limit) in effect, or ``None``: the config's again.

    Key ``{"flow":…,"kind":"throttle"}``; value ``{"op":"set","rate":<bytes/s>,"ts":<ms>}``, or a tombstone
    (the config file's ``replication.throttled.rate`` again).
    """

    flow: str
    rate: int | None
    ts_ms: int = -1

    def encode_key(self) -> bytes:
        """``{"flow":…,"kind":"throttle"}``: compact JSON, sorted keys, UTF-8."""
        return _json({"flow": self.flow, "kind": THROTTLE})

    def encode_value(self) -> bytes | None:
        """``{"op":"set","rate":…,"ts":…}`` as compact JSON, or ``None`` (a tombstone) to go back to the config's."""
        if self.rate is None:
            return None
        return _json({"op": "set", "rate": self.rate, "ts": self.ts_ms})

    @classmethod
    def decode(cls, flow: str, value: bytes | None) -> ThrottleChange:
        """Parse a throttle record's value; raises CorruptRecordError if it is not ``{"op":"set","rate":n,"ts":ms}``."""
        if value is None:
            return cls(flow=flow, rate=None)
        doc = _load(value, "value")
        op, rate, ts = doc.get("op"), doc.get("rate"), doc.get("ts")
        if (
            op != "set"
            or not isinstance(rate, int)
            or isinstance(rate, bool)
            or rate < 0
            or not isinstance(ts, int)
            or isinstance(ts, bool)
        ):
            raise CorruptRecordError(
                f"control record value {value!r}: expected {{'op': 'set', 'rate': <bytes/s, >= 0>, 'ts': <ms>}}"
            )
        return cls(flow=flow, rate=rate, ts_ms=ts)


def decode_control(key: bytes | None, value: bytes | None) -> ControlChange | ThrottleChange:
    """Parse any control record (a list or a throttle change); raises CorruptRecordError if malformed."""
    doc = _load(key, "key")
    if doc.get("kind") == THROTTLE:
        flow = doc.get("flow")
        if not isinstance(flow, str):
            raise CorruptRecordError(f"control record key {key!r}: 'flow' must be a string")
        return ThrottleChange.decode(flow, value)
    return ControlChange.decode(key, value)


@dataclass(frozen=True)
class ControlChange:
    """One control record: add or remove one list entry (``op`` ``None`` = a tombstone)."""

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
        """Parse a record; raises CorruptRecordError if the key or value is malformed."""
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
    except (UnicodeDecodeError, ValueError, RecursionError) as e:  # RecursionError: absurdly deep nesting
        raise CorruptRecordError(f"control record {what} {raw!r} is not UTF-8 JSON: {e}") from e
    if not isinstance(doc, dict):
        raise CorruptRecordError(f"control record {what} {raw!r} is not a JSON object")
    return doc


# --------------------------------------------------------------------------- state (pure)


@dataclass(frozen=True)
class ControlState:
    """The folded control changes of one flow: the last change per list entry, and the last throttle change.

    ``throttle``: the flow's limit set by control, bytes/s (0: no limit; ``None``: the config file's).
    """

    flow: str
    changes: Mapping[tuple[Kind, ListName, str], ControlChange] = field(default_factory=dict)
    records: int = 0
    throttle: ThrottleChange | None = None

    def throttle_limit(self, config_rate: int) -> int:
        """Return the throttle in effect, bytes/s (0: no limit): the last control change's, else ``config_rate``."""
        if self.throttle is None or self.throttle.rate is None:
            return config_rate
        return self.throttle.rate

    def entries(self, kind: Kind, lst: ListName, op: Op) -> tuple[str, ...]:
        """Regexes whose last change on ``kind``'s ``lst`` list is ``op``, in record order."""
        return tuple(r for (k, li, r), c in self.changes.items() if k == kind and li == lst and c.op == op)


def fold(changes: Iterable[ControlChange | ThrottleChange], state: ControlState) -> ControlState:
    """Apply control records, in order, to a state; the last record per entry (and per flow's throttle) wins.

    Pure: ``state`` is not modified. Records of other flows are counted and ignored; a
    tombstone forgets its entry (a throttle tombstone: the config file's limit again).
    """
    out = dict(state.changes)
    n = state.records
    throttle = state.throttle
    for c in changes:
        n += 1
        if isinstance(c, ThrottleChange):
            if c.flow == state.flow:
                throttle = c
            continue
        if c.key.flow != state.flow:
            continue
        slot = (c.key.kind, c.key.list, c.key.regex)
        out.pop(slot, None)  # re-insert: order = each entry's last change
        if c.op is not None:
            out[slot] = c
    return ControlState(flow=state.flow, changes=out, records=n, throttle=throttle)


@dataclass(frozen=True)
class ListEntry:
    """One regex of an effective list and where it comes from."""

    regex: str
    origin: Literal["config", "control"]


@dataclass(frozen=True)
class EffectiveLists:
    """The allow and deny lists of one kind in effect for a flow."""

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
    """Compute the lists in effect: the config file's, with the control changes on top (pure, no I/O).

    ``allow = (config_allow | added allow) - removed allow`` and
    ``deny = (config_deny | added deny) - removed deny``.
    """
    allow, removed_allow = _combine(
        config_allow, state.entries(kind, "allow", "add"), state.entries(kind, "allow", "remove")
    )
    deny, removed_deny = _combine(
        config_deny, state.entries(kind, "deny", "add"), state.entries(kind, "deny", "remove")
    )
    return EffectiveLists(kind=kind, allow=allow, deny=deny, removed_allow=removed_allow, removed_deny=removed_deny)


__all__ = [
    "KINDS",
    "THROTTLE",
    "ControlChange",
    "ControlKey",
    "ControlState",
    "EffectiveLists",
    "ListEntry",
    "ThrottleChange",
    "decode_control",
    "effective_lists",
    "fold",
    "validate_regex",
]
