"""Single Message Transforms (Kafka Connect SMTs) on MM2's byte-array records, as pure code.

MM2 runs every record of ``MirrorSourceConnector`` through the connector's transformation
chain (Connect's ``TransformationChain``) *after* the replication policy named its remote
topic: a transform sees the record with the remote topic name (``primary.orders``), the
source partition, key, value and headers as bytes (MM2's ``ByteArrayConverter``) and the
source timestamp. This module is that chain for mirrorspark, in MM2's configuration syntax::

    transforms = dropDebug, tag
    transforms.dropDebug.type = org.apache.kafka.connect.transforms.Filter
    transforms.dropDebug.predicate = isDebug
    transforms.tag.type = org.apache.kafka.connect.transforms.InsertHeader
    transforms.tag.header = replicated-by
    transforms.tag.value.literal = mirrorspark
    predicates = isDebug
    predicates.isDebug.type = org.apache.kafka.connect.transforms.predicates.HasHeaderKey
    predicates.isDebug.name = debug

Three steps, each once:

1. :func:`parse_transforms` (the config layer, at load) reads the ``transforms*`` and
   ``predicates*`` keys into :class:`TransformsConfig`, refusing what cannot run on byte arrays
   (:class:`~mirrorspark.errors.TransformConfigError`, naming the key and the fix);
2. :func:`build_chain` (once per flow at start) makes the :class:`TransformChain`, loading user
   transforms (``package.module:Class``, :class:`Transformation`);
3. :meth:`TransformChain.bind` (once per copied partition) evaluates what depends only on the
   topic (``TopicNameMatches``, ``RegexRouter``), leaving a :class:`BoundChain` of per-record
   steps for the data path.

Supported, by Connect class name (the short name works too, as Connect's plugin aliases):

* ``org.apache.kafka.connect.transforms.Filter`` — drops the record (with a predicate: the matching ones);
* ``...InsertHeader`` (``header``, ``value.literal``) — adds a header whose value is the literal's UTF-8
  bytes (what MM2 writes with ``header.converter = ...StringConverter``; with MM2's default
  ``ByteArrayConverter`` MM2 itself fails on this transform);
* ``...DropHeaders`` (``headers``) — removes every header with one of those names;
* ``...RegexRouter`` (``regex``, ``replacement``) — renames the remote topic; applied when the remote
  topic is named (:meth:`TransformChain.route`), so only with no predicate or ``TopicNameMatches``;
* predicates ``org.apache.kafka.connect.transforms.predicates.TopicNameMatches`` (``pattern``, matched
  against the whole remote topic name), ``HasHeaderKey`` (``name``), ``RecordIsTombstone`` (null value);
  ``transforms.<t>.negate = true`` inverts one.

Refused at load: transforms that read or write fields of a key or value with a schema (``Cast``,
``ReplaceField``, ``HeaderFrom``, ...) — MM2's records are byte arrays, so they fail on every record in
MM2 too — and those that route per record (``TimestampRouter``).
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Final, Protocol, runtime_checkable

from mirrorspark.errors import TransformConfigError
from mirrorspark.mm2.policy import ReplicationPolicy

Header = tuple[str, bytes | None]
"""One record header: name and value bytes (``None`` = a null header value), as confluent-kafka gives it."""

TRANSFORMS_PACKAGE: Final = "org.apache.kafka.connect.transforms."
PREDICATES_PACKAGE: Final = "org.apache.kafka.connect.transforms.predicates."

FILTER: Final = TRANSFORMS_PACKAGE + "Filter"
INSERT_HEADER: Final = TRANSFORMS_PACKAGE + "InsertHeader"
DROP_HEADERS: Final = TRANSFORMS_PACKAGE + "DropHeaders"
REGEX_ROUTER: Final = TRANSFORMS_PACKAGE + "RegexRouter"
TOPIC_NAME_MATCHES: Final = PREDICATES_PACKAGE + "TopicNameMatches"
HAS_HEADER_KEY: Final = PREDICATES_PACKAGE + "HasHeaderKey"
RECORD_IS_TOMBSTONE: Final = PREDICATES_PACKAGE + "RecordIsTombstone"

_SCHEMA_TRANSFORMS: Final = (
    "Cast",
    "ExtractField",
    "Flatten",
    "HeaderFrom",
    "HoistField",
    "InsertField",
    "MaskField",
    "ReplaceField",
    "SetSchemaMetadata",
    "TimestampConverter",
    "ValueToKey",
)
"""Connect transforms that need a key or value with a schema (or a map): impossible on byte arrays."""


@dataclass(slots=True)
class ConnectRecord:
    """A record as a transform sees it (Connect's ``SourceRecord`` under MM2's ``ByteArrayConverter``).

    A new instance per record, never shared: a transform may return it changed, or a new one
    (``dataclasses.replace``). Not frozen, because it is made for every record a flow with
    transforms copies (a frozen dataclass costs four times as much to make).

    Attributes
    ----------
    topic:
        The **remote** topic name (the replication policy already named it), as in MM2.
    partition:
        The partition (the source partition, which is also the remote one).
    key, value:
        The raw bytes; ``None`` for a null key or value (a tombstone has ``value=None``).
    headers:
        The headers in order, names as ``str``, values as bytes (or ``None``).
    timestamp_ms:
        The record's timestamp (epoch ms); ``0`` when the source record has none.
    """

    topic: str
    partition: int
    key: bytes | None
    value: bytes | None
    headers: tuple[Header, ...] = ()
    timestamp_ms: int = 0


@runtime_checkable
class Transformation(Protocol):
    """A user transform (Connect's ``Transformation``), loaded from ``transforms.<t>.type = package.module:Class``.

    The class is instantiated with no arguments on the driver at start; if it has
    ``configure(props)``, that is called with its ``transforms.<t>.*`` keys (prefix removed, ``type``,
    ``predicate`` and ``negate`` left out), as Connect's ``Configurable``. The object is then pickled to
    the Spark executors, so it must be picklable and its module importable there.
    """

    def apply(self, record: ConnectRecord) -> ConnectRecord | None:
        """Return the transformed record, or ``None`` to drop it.

        The result may change ``key``, ``value``, ``headers`` and ``timestamp_ms``; a changed
        ``topic`` or ``partition`` fails the copy task (records are copied to the same partition of
        the remote topic the policy and any ``RegexRouter`` named at start).
        """
        ...


@runtime_checkable
class Predicate(Protocol):
    """A condition of a transform (Connect's ``Predicate``)."""

    def test(self, record: ConnectRecord) -> bool:
        """Whether the record matches."""
        ...


# --------------------------------------------------------------------------- built-in transforms


@dataclass(frozen=True, slots=True)
class Filter:
    """``org.apache.kafka.connect.transforms.Filter``: drops every record it is applied to."""

    def apply(self, record: ConnectRecord) -> ConnectRecord | None:
        """Drop the record (``None``)."""
        return None


@dataclass(frozen=True, slots=True)
class InsertHeader:
    """``org.apache.kafka.connect.transforms.InsertHeader``: appends one header with a literal value.

    Attributes
    ----------
    header:
        The header name (``header``).
    value:
        ``value.literal`` encoded as UTF-8.
    """

    header: str
    value: bytes

    def apply(self, record: ConnectRecord) -> ConnectRecord | None:
        """Return the record with ``(header, value)`` appended to its headers (existing ones kept, as Connect)."""
        r = record
        headers = (*r.headers, (self.header, self.value))
        return ConnectRecord(r.topic, r.partition, r.key, r.value, headers, r.timestamp_ms)


@dataclass(frozen=True, slots=True)
class DropHeaders:
    """``org.apache.kafka.connect.transforms.DropHeaders``: removes every header with one of ``names``."""

    names: frozenset[str]

    def apply(self, record: ConnectRecord) -> ConnectRecord | None:
        """Return the record without the named headers."""
        if not any(name in self.names for name, _ in record.headers):
            return record
        r = record
        kept = tuple(h for h in r.headers if h[0] not in self.names)
        return ConnectRecord(r.topic, r.partition, r.key, r.value, kept, r.timestamp_ms)


@dataclass(frozen=True, slots=True)
class RegexRouter:
    """``org.apache.kafka.connect.transforms.RegexRouter``: renames the topic when ``regex`` matches it whole.

    Attributes
    ----------
    regex:
        The compiled ``regex``.
    replacement:
        ``replacement`` in Python's ``Match.expand`` syntax (Java's ``$1`` / ``${name}`` converted).
    """

    regex: re.Pattern[str]
    replacement: str

    def rename(self, topic: str) -> str:
        """Return the new topic name (``topic`` itself when ``regex`` does not match the whole name)."""
        m = self.regex.fullmatch(topic)
        return m.expand(self.replacement) if m is not None else topic

    def apply(self, record: ConnectRecord) -> ConnectRecord | None:
        """Return the record with its topic renamed."""
        topic = self.rename(record.topic)
        return record if topic == record.topic else replace(record, topic=topic)


# --------------------------------------------------------------------------- built-in predicates


@dataclass(frozen=True, slots=True)
class TopicNameMatches:
    """``...predicates.TopicNameMatches``: the (remote) topic name matches ``pattern`` whole."""

    pattern: re.Pattern[str]

    def test(self, record: ConnectRecord) -> bool:
        """Whether the record's topic matches."""
        return self.pattern.fullmatch(record.topic) is not None


@dataclass(frozen=True, slots=True)
class HasHeaderKey:
    """``...predicates.HasHeaderKey``: the record has at least one header named ``name``."""

    name: str

    def test(self, record: ConnectRecord) -> bool:
        """Whether a header with that name is present (whatever its value)."""
        name = self.name
        for h in record.headers:  # noqa: SIM110 - a loop, not any() over a generator: once per record
            if h[0] == name:
                return True
        return False


@dataclass(frozen=True, slots=True)
class RecordIsTombstone:
    """``...predicates.RecordIsTombstone``: the record's value is null."""

    def test(self, record: ConnectRecord) -> bool:
        """Whether the value is ``None``."""
        return record.value is None


# --------------------------------------------------------------------------- configuration (parsed once)


@dataclass(frozen=True, slots=True)
class PredicateSpec:
    """One ``predicates.<alias>.*`` entry, validated.

    Attributes
    ----------
    alias:
        The name listed in ``predicates``.
    type:
        The Connect class name, normalised to the full name.
    props:
        Its other ``predicates.<alias>.*`` keys, prefix removed.
    """

    alias: str
    type: str
    props: Mapping[str, str]


@dataclass(frozen=True, slots=True)
class TransformSpec:
    """One ``transforms.<alias>.*`` entry, validated.

    Attributes
    ----------
    alias:
        The name listed in ``transforms``.
    type:
        The Connect class name normalised to the full name, or ``package.module:Class``.
    props:
        Its other ``transforms.<alias>.*`` keys, prefix removed (no ``type``, ``predicate``, ``negate``).
    predicate:
        The alias of its predicate (``transforms.<alias>.predicate``), or ``None``.
    negate:
        ``transforms.<alias>.negate``: apply where the predicate does *not* match.
    """

    alias: str
    type: str
    props: Mapping[str, str]
    predicate: str | None = None
    negate: bool = False

    @property
    def user(self) -> bool:
        """Whether this is a user transform (``package.module:Class``)."""
        return ":" in self.type


@dataclass(frozen=True, slots=True)
class TransformsConfig:
    """A flow's transforms and predicates as configured (``transforms``, ``predicates`` and their keys).

    Attributes
    ----------
    transforms:
        In chain order.
    predicates:
        By alias.
    """

    transforms: tuple[TransformSpec, ...] = ()
    predicates: Mapping[str, PredicateSpec] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.transforms)

    @property
    def routes(self) -> bool:
        """Whether a ``RegexRouter`` renames remote topics."""
        return any(t.type == REGEX_ROUTER for t in self.transforms)


NO_TRANSFORMS: Final = TransformsConfig()
"""A flow without transforms (records copied unchanged)."""


def _split(value: str) -> list[str]:
    return [item.strip() for item in value.split(",") if item.strip()]


def _full_name(raw: str, package: str, known: Sequence[str]) -> str | None:
    """Return Connect's class name for ``raw`` (full or short name), or ``None`` if it is not one of ``known``."""
    name = raw.strip()
    for short in known:
        if name in (short, package + short):
            return package + short
    return None


def java_replacement(replacement: str) -> str:
    r"""Convert a Java ``Matcher`` replacement (``$1``, ``${name}``, ``\$``) to Python's ``Match.expand`` syntax.

    Parameters
    ----------
    replacement:
        ``RegexRouter``'s ``replacement`` as written.

    Returns
    -------
    str
        The same replacement for :meth:`re.Match.expand`.

    Raises
    ------
    ValueError
        A ``$`` not followed by a group number or ``{name}``, or a trailing ``\``.
    """
    out: list[str] = []
    i = 0
    while i < len(replacement):
        c = replacement[i]
        if c == "\\":
            if i + 1 >= len(replacement):
                raise ValueError("a trailing '\\' escapes nothing")
            nxt = replacement[i + 1]
            out.append("\\\\" if nxt == "\\" else nxt)
            i += 2
        elif c == "$":
            m = re.match(r"\$(?:(\d+)|\{([A-Za-z][A-Za-z0-9]*)\})", replacement[i:])
            if m is None:
                raise ValueError("'$' must be followed by a group number or '{name}' (write '\\$' for a literal '$')")
            out.append(f"\\g<{m.group(1) or m.group(2)}>")
            i += m.end()
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _compile(pattern: str, written: str, fix: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern, re.ASCII)
    except re.error as e:
        raise TransformConfigError(f"'{written}' = {pattern!r} does not compile ({e}); {fix}") from e


def parse_transforms(props: Mapping[str, str], written: Callable[[str], str] | None = None) -> TransformsConfig:
    """Read and validate the ``transforms*`` and ``predicates*`` keys of one flow.

    Mirrors Connect's ``ConnectorConfig`` validation (every listed alias has a ``type``, a
    predicate named by a transform is listed in ``predicates``, no alias twice) and refuses what
    cannot run on MM2's byte-array records.

    Parameters
    ----------
    props:
        The flow's connector keys (``transforms``, ``transforms.<t>.*``, ``predicates``,
        ``predicates.<p>.*``; other keys are ignored), top-level ones already overridden by the
        flow's ``S->T.`` ones.
    written:
        Maps a key to how the user wrote it (e.g. ``"A->B.transforms.f.type"``), for messages;
        default: the key itself.

    Returns
    -------
    TransformsConfig
        Empty when ``transforms`` is absent or empty.

    Raises
    ------
    TransformConfigError
        A missing ``type`` or required setting, an unknown or refused class, a bad regex, an
        unknown predicate alias, a ``RegexRouter`` with a per-record predicate; the message names
        the key and the fix.
    """
    w = written or (lambda k: k)
    aliases = _split(props.get("transforms", ""))
    pred_aliases = _split(props.get("predicates", ""))
    for key, listed in (("transforms", aliases), ("predicates", pred_aliases)):
        dup = next((a for i, a in enumerate(listed) if a in listed[:i]), None)
        if dup is not None:
            raise TransformConfigError(f"'{w(key)}' lists {dup!r} twice; list each alias once")
    predicates = {p: _predicate(p, props, w) for p in pred_aliases}
    transforms = tuple(_transform(t, props, predicates, w) for t in aliases)
    return TransformsConfig(transforms, predicates)


def _sub(props: Mapping[str, str], prefix: str, skip: tuple[str, ...]) -> dict[str, str]:
    n = len(prefix)
    return {k[n:]: v for k, v in props.items() if k.startswith(prefix) and k[n:] not in skip}


def _required(spec_props: Mapping[str, str], name: str, key: str, w: Callable[[str], str], example: str) -> str:
    value = spec_props.get(name, "")
    if not value.strip():
        raise TransformConfigError(f"'{w(key)}' is missing or empty: it is required, e.g. '{key} = {example}'")
    return value


def _predicate(alias: str, props: Mapping[str, str], w: Callable[[str], str]) -> PredicateSpec:
    prefix = f"predicates.{alias}."
    raw = props.get(prefix + "type", "").strip()
    if not raw:
        raise TransformConfigError(
            f"'{w('predicates')}' lists {alias!r} but '{w(prefix + 'type')}' is not set: give its class, "
            f"e.g. '{prefix}type = {TOPIC_NAME_MATCHES}'"
        )
    kind = _full_name(raw, PREDICATES_PACKAGE, ("TopicNameMatches", "HasHeaderKey", "RecordIsTombstone"))
    if kind is None:
        raise TransformConfigError(
            f"'{w(prefix + 'type')}' = {raw!r} is not a predicate mirrorspark runs (Java classes cannot be "
            f"loaded): use {TOPIC_NAME_MATCHES}, {HAS_HEADER_KEY} or {RECORD_IS_TOMBSTONE}"
        )
    sub = _sub(props, prefix, ("type",))
    if kind == TOPIC_NAME_MATCHES:
        _compile(
            _required(sub, "pattern", prefix + "pattern", w, "primary\\\\.orders.*"),
            w(prefix + "pattern"),
            "fix the regex (matched against the whole remote topic name)",
        )
    elif kind == HAS_HEADER_KEY:
        _required(sub, "name", prefix + "name", w, "debug")
    return PredicateSpec(alias, kind, sub)


def _transform(
    alias: str, props: Mapping[str, str], predicates: Mapping[str, PredicateSpec], w: Callable[[str], str]
) -> TransformSpec:
    prefix = f"transforms.{alias}."
    raw = props.get(prefix + "type", "").strip()
    tkey = w(prefix + "type")
    if not raw:
        raise TransformConfigError(
            f"'{w('transforms')}' lists {alias!r} but '{tkey}' is not set: give its class, "
            f"e.g. '{prefix}type = {FILTER}'"
        )
    sub = _sub(props, prefix, ("type", "predicate", "negate"))
    pred = props.get(prefix + "predicate", "").strip() or None
    negate_raw = props.get(prefix + "negate", "false").strip().lower()
    if negate_raw not in ("true", "false"):
        raise TransformConfigError(f"'{w(prefix + 'negate')}' = {negate_raw!r}: use true or false")
    negate = negate_raw == "true"
    if pred is not None and pred not in predicates:
        raise TransformConfigError(
            f"'{w(prefix + 'predicate')}' = {pred!r}, which is not listed in '{w('predicates')}': "
            f"add it there with its 'predicates.{pred}.type'"
        )
    if ":" in raw:
        module, _, attr = raw.partition(":")
        if not module or not attr:
            raise TransformConfigError(f"'{tkey}' = {raw!r}: a user transform is named 'package.module:ClassName'")
        return TransformSpec(alias, raw, sub, pred, negate)
    kind = _full_name(raw, TRANSFORMS_PACKAGE, ("Filter", "InsertHeader", "DropHeaders", "RegexRouter"))
    if kind is None:
        raise TransformConfigError(_refusal(raw, tkey))
    if kind == INSERT_HEADER:
        _required(sub, "header", prefix + "header", w, "replicated-by")
        if "value.literal" not in sub:
            raise TransformConfigError(
                f"'{w(prefix + 'value.literal')}' is not set: InsertHeader needs the header's value, "
                f"e.g. '{prefix}value.literal = mirrorspark' (written as its UTF-8 bytes)"
            )
    elif kind == DROP_HEADERS:
        if not _split(_required(sub, "headers", prefix + "headers", w, "trace-id, debug")):
            raise TransformConfigError(f"'{w(prefix + 'headers')}' is empty: list the header names to drop")
    elif kind == REGEX_ROUTER:
        _compile(
            _required(sub, "regex", prefix + "regex", w, "primary\\\\.(.*)"),
            w(prefix + "regex"),
            "fix the regex (matched against the whole remote topic name)",
        )
        if "replacement" not in sub:
            raise TransformConfigError(f"'{w(prefix + 'replacement')}' is not set: RegexRouter needs it, e.g. '$1'")
        try:
            java_replacement(sub["replacement"])
        except ValueError as e:
            raise TransformConfigError(f"'{w(prefix + 'replacement')}' = {sub['replacement']!r}: {e}") from e
        if pred is not None and predicates[pred].type != TOPIC_NAME_MATCHES:
            raise TransformConfigError(
                f"'{w(prefix + 'predicate')}' = {pred!r} is a {predicates[pred].type.rsplit('.', 1)[1]}: "
                "mirrorspark applies RegexRouter when it names a remote topic, for all its records, so its "
                "predicate may only be TopicNameMatches; remove the predicate or use TopicNameMatches"
            )
    return TransformSpec(alias, kind, sub, pred, negate)


def _refusal(raw: str, tkey: str) -> str:
    """Return the message refusing transform class ``raw``, saying why."""
    short = raw.rsplit(".", 1)[-1].split("$", 1)[0]
    if short in _SCHEMA_TRANSFORMS:
        return (
            f"'{tkey}' = {raw!r} is refused: {short} reads or writes fields of a key or value with a schema "
            "(a Struct or Map), but MM2's records are byte arrays (ByteArrayConverter), so it would fail on "
            "every record, in MM2 too; remove it, or write a user transform ('package.module:ClassName', "
            "README: Transforms) that parses the bytes itself"
        )
    if short == "TimestampRouter":
        return (
            f"'{tkey}' = {raw!r} is refused: it routes each record by its timestamp, but a flow copies every "
            "record to the same partition of one remote topic (offset syncs and checkpoints depend on it); "
            "remove it"
        )
    return (
        f"'{tkey}' = {raw!r} is not a transform mirrorspark runs (Java classes cannot be loaded): use "
        f"{FILTER}, {INSERT_HEADER}, {DROP_HEADERS}, {REGEX_ROUTER}, or a Python class as 'package.module:ClassName'"
    )


# --------------------------------------------------------------------------- the chain (built once per flow)


@dataclass(frozen=True, slots=True)
class Step:
    """One transform of a chain with its condition.

    Attributes
    ----------
    alias:
        ``transforms`` alias.
    transform:
        What it does.
    predicate:
        Its predicate, or ``None`` (always applied).
    negate:
        Apply where the predicate does not match.
    """

    alias: str
    transform: Transformation
    predicate: Predicate | None = None
    negate: bool = False

    def applies(self, record: ConnectRecord) -> bool:
        """Whether the step applies to ``record`` (Connect's ``TransformationStage``)."""
        return self.predicate is None or self.predicate.test(record) != self.negate


class TransformChain:
    """A flow's transformation chain (Connect's ``TransformationChain``), built once at start.

    Parameters
    ----------
    steps:
        In order.

    Notes
    -----
    Immutable and picklable when its user transforms are; shared by every copy task of the flow.
    """

    __slots__ = ("steps",)

    def __init__(self, steps: Sequence[Step]) -> None:
        self.steps: tuple[Step, ...] = tuple(steps)

    def __bool__(self) -> bool:
        return bool(self.steps)

    def __reduce__(self) -> tuple[Any, ...]:
        return (TransformChain, (self.steps,))

    def apply(self, record: ConnectRecord) -> ConnectRecord | None:
        """Run the record through every step; ``None`` when one drops it.

        Parameters
        ----------
        record:
            The record with the policy's remote topic name.

        Returns
        -------
        ConnectRecord or None
            The transformed record (a ``RegexRouter`` renames its topic), or ``None`` (dropped).
        """
        out: ConnectRecord | None = record
        for step in self.steps:
            if out is None:
                return None
            if step.applies(out):
                out = step.transform.apply(out)
        return out

    def route(self, topic: str) -> str:
        """Name the remote topic as the chain's ``RegexRouter`` steps rename ``topic`` (the policy's name).

        Only routers apply here: their predicates are ``TopicNameMatches`` or none (checked at load),
        so the result depends on the topic alone.
        """
        for step in self.steps:
            t = step.transform
            if isinstance(t, RegexRouter) and step.applies(ConnectRecord(topic, 0, None, None)):
                topic = t.rename(topic)
        return topic

    def bind(self, topic: str) -> BoundChain | None:
        """Fix the chain for one remote topic: evaluate topic predicates and routers once.

        Parameters
        ----------
        topic:
            The remote topic as the policy names it (before any ``RegexRouter``).

        Returns
        -------
        BoundChain or None
            The per-record steps left, or ``None`` when none applies to this topic (records are
            copied unchanged at no cost).
        """
        steps: list[Step] = []
        for step in self.steps:
            probe = ConnectRecord(topic, 0, None, None)
            pred = step.predicate
            if isinstance(step.transform, RegexRouter):
                if step.applies(probe):
                    topic = step.transform.rename(topic)
                continue
            if isinstance(pred, TopicNameMatches):
                if not step.applies(probe):
                    continue
                step = Step(step.alias, step.transform)
            steps.append(step)
        return BoundChain(topic, tuple(steps)) if steps else None


@dataclass(frozen=True, slots=True)
class BoundChain:
    """The per-record part of a :class:`TransformChain` for one remote topic (:meth:`TransformChain.bind`).

    Attributes
    ----------
    topic:
        The remote topic after routing, the topic every record has.
    steps:
        Steps whose transform is not a router and whose predicate depends on the record.
    """

    topic: str
    steps: tuple[Step, ...]

    def apply(self, record: ConnectRecord) -> ConnectRecord | None:
        """Run the record through the steps; ``None`` when one drops it."""
        out = record
        for step in self.steps:
            if step.predicate is None or step.predicate.test(out) != step.negate:
                res = step.transform.apply(out)
                if res is None:
                    return None
                out = res
        return out


class RoutedReplicationPolicy:
    """A flow's replication policy with its ``RegexRouter`` transforms applied to remote topic names.

    MM2 renames the record's topic *after* the policy named it, so with MM2 the remote topic the
    policy names is created (empty) and the records land in the routed topic, which checkpoints
    never name. mirrorspark makes the routed name *the* remote topic of the flow instead: it is
    created, config-synced, written, checkpointed and reported under that name. Everything else
    (``topic_source``, internal topics, heartbeats topic) is the wrapped policy's, so a routed name
    that drops the source alias reads as a local topic on the target: the identity cycle check
    (:func:`~mirrorspark.mm2.topology.check_identity_cycles`) then treats the flow as name-keeping.

    Parameters
    ----------
    inner:
        The flow's ``replication.policy.class``.
    chain:
        The flow's transforms (only their routers matter here).
    """

    def __init__(self, inner: ReplicationPolicy, chain: TransformChain) -> None:
        self.inner = inner
        self.chain = chain

    def format_remote_topic(self, source_alias: str, topic: str) -> str:
        """Return the policy's remote topic name, renamed by the chain's routers."""
        return self.chain.route(self.inner.format_remote_topic(source_alias, topic))

    def topic_source(self, topic: str) -> str | None:
        """As the wrapped policy."""
        return self.inner.topic_source(topic)

    def upstream_topic(self, topic: str) -> str | None:
        """As the wrapped policy."""
        return self.inner.upstream_topic(topic)

    def original_topic(self, topic: str) -> str:
        """As the wrapped policy."""
        return self.inner.original_topic(topic)

    def heartbeats_topic(self) -> str:
        """As the wrapped policy."""
        return self.inner.heartbeats_topic()

    def offset_syncs_topic(self, cluster_alias: str) -> str:
        """As the wrapped policy."""
        return self.inner.offset_syncs_topic(cluster_alias)

    def checkpoints_topic(self, cluster_alias: str) -> str:
        """As the wrapped policy."""
        return self.inner.checkpoints_topic(cluster_alias)

    def is_heartbeats_topic(self, topic: str) -> bool:
        """As the wrapped policy."""
        return self.inner.is_heartbeats_topic(topic)

    def is_checkpoints_topic(self, topic: str) -> bool:
        """As the wrapped policy."""
        return self.inner.is_checkpoints_topic(topic)

    def is_mm2_internal_topic(self, topic: str) -> bool:
        """As the wrapped policy."""
        return self.inner.is_mm2_internal_topic(topic)

    def is_internal_topic(self, topic: str) -> bool:
        """As the wrapped policy."""
        return self.inner.is_internal_topic(topic)


def _load_user(spec: TransformSpec, written: Callable[[str], str]) -> Transformation:
    key = written(f"transforms.{spec.alias}.type")
    module_name, _, attr = spec.type.partition(":")
    fix = "make the module importable by mirrorspark (and its executors) and the class a Transformation (README)"
    try:
        obj: Any = importlib.import_module(module_name)
    except Exception as e:
        raise TransformConfigError(f"'{key}' = {spec.type!r}: cannot import module {module_name!r} ({e}); {fix}") from e
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError as e:
            raise TransformConfigError(f"'{key}' = {spec.type!r}: module {module_name!r} has no {attr!r}; {fix}") from e
    if not isinstance(obj, type):
        raise TransformConfigError(f"'{key}' = {spec.type!r} is not a class; {fix}")
    try:
        instance = obj()
    except Exception as e:
        raise TransformConfigError(
            f"'{key}' = {spec.type!r} cannot be instantiated with no arguments ({e}); read settings in configure(props)"
        ) from e
    if not isinstance(instance, Transformation):
        raise TransformConfigError(
            f"'{key}' = {spec.type!r} is not a transform: give it apply(record) -> record or None (README: Transforms)"
        )
    configure = getattr(instance, "configure", None)
    if callable(configure):
        try:
            configure(dict(spec.props))
        except Exception as e:
            raise TransformConfigError(
                f"'{key}' = {spec.type!r}: configure() failed ({e}); check its transforms.{spec.alias}.* settings"
            ) from e
    return instance


def _build_predicate(spec: PredicateSpec) -> Predicate:
    if spec.type == TOPIC_NAME_MATCHES:
        return TopicNameMatches(re.compile(spec.props["pattern"], re.ASCII))
    if spec.type == HAS_HEADER_KEY:
        return HasHeaderKey(spec.props["name"])
    return RecordIsTombstone()


def _build_transform(spec: TransformSpec, written: Callable[[str], str]) -> Transformation:
    if spec.user:
        return _load_user(spec, written)
    if spec.type == FILTER:
        return Filter()
    if spec.type == INSERT_HEADER:
        return InsertHeader(spec.props["header"].strip(), spec.props["value.literal"].encode("utf-8"))
    if spec.type == DROP_HEADERS:
        return DropHeaders(frozenset(_split(spec.props["headers"])))
    return RegexRouter(re.compile(spec.props["regex"], re.ASCII), java_replacement(spec.props["replacement"]))


def routers(config: TransformsConfig) -> TransformsConfig:
    """Return only the ``RegexRouter`` transforms of ``config`` (what names remote topics), with their predicates."""
    return TransformsConfig(tuple(t for t in config.transforms if t.type == REGEX_ROUTER), config.predicates)


def build_chain(config: TransformsConfig, written: Callable[[str], str] | None = None) -> TransformChain:
    """Build a flow's :class:`TransformChain` from its validated configuration (once, at start).

    Parameters
    ----------
    config:
        From :func:`parse_transforms`.
    written:
        Maps a key to how the user wrote it, for messages; default: the key itself.

    Returns
    -------
    TransformChain
        Empty (falsy) when no transform is configured.

    Raises
    ------
    TransformConfigError
        A user transform cannot be imported, instantiated or configured, or is not a :class:`Transformation`.
    """
    w = written or (lambda k: k)
    predicates = {alias: _build_predicate(p) for alias, p in config.predicates.items()}
    return TransformChain(
        [
            Step(t.alias, _build_transform(t, w), predicates[t.predicate] if t.predicate else None, t.negate)
            for t in config.transforms
        ]
    )


__all__ = [
    "DROP_HEADERS",
    "FILTER",
    "HAS_HEADER_KEY",
    "INSERT_HEADER",
    "NO_TRANSFORMS",
    "RECORD_IS_TOMBSTONE",
    "REGEX_ROUTER",
    "TOPIC_NAME_MATCHES",
    "BoundChain",
    "ConnectRecord",
    "DropHeaders",
    "Filter",
    "HasHeaderKey",
    "Header",
    "InsertHeader",
    "Predicate",
    "PredicateSpec",
    "RecordIsTombstone",
    "RegexRouter",
    "RoutedReplicationPolicy",
    "Step",
    "TopicNameMatches",
    "TransformChain",
    "TransformSpec",
    "Transformation",
    "TransformsConfig",
    "build_chain",
    "java_replacement",
    "parse_transforms",
    "routers",
]
