"""A flow's ``transforms*`` and ``predicates*`` keys, read and validated once (Connect's ``ConnectorConfig``)."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final

from mirrorspark.core.transforms.records import (
    DROP_HEADERS,
    FILTER,
    HAS_HEADER_KEY,
    INSERT_HEADER,
    PREDICATES_PACKAGE,
    RECORD_IS_TOMBSTONE,
    REGEX_ROUTER,
    SCHEMA_TRANSFORMS,
    TOPIC_NAME_MATCHES,
    TRANSFORMS_PACKAGE,
)
from mirrorspark.errors import TransformConfigError


@dataclass(frozen=True, slots=True)
class PredicateSpec:
    """One ``predicates.<alias>.*`` entry, validated."""

    alias: str
    type: str
    props: Mapping[str, str]


@dataclass(frozen=True, slots=True)
class TransformSpec:
    """One ``transforms.<alias>.*`` entry, validated."""

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
    """A flow's transforms and predicates as configured (``transforms``, ``predicates`` and their keys)."""

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


def split_list(value: str) -> list[str]:
    """Return the items of a comma-separated list, stripped, empty ones left out."""
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

    Raises ValueError for a ``$`` not followed by a group number or ``{name}``, or a trailing ``\``.
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

    Mirrors Connect's ``ConnectorConfig`` validation and refuses what cannot run on MM2's byte-array
    records; raises TransformConfigError naming the key and the fix.
    """
    w = written or (lambda k: k)
    aliases = split_list(props.get("transforms", ""))
    pred_aliases = split_list(props.get("predicates", ""))
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
        if not split_list(_required(sub, "headers", prefix + "headers", w, "trace-id, debug")):
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
    if short in SCHEMA_TRANSFORMS:
        return (
            f"'{tkey}' = {raw!r} is refused: {short} reads or writes fields of a key or value with a schema "
            "(a Struct or Map), but MM2's records are byte arrays (ByteArrayConverter), so it would fail on "
            "every record, in MM2 too; remove it, or write a user transform ('package.module:ClassName', "
            "docs/transforms.md) that parses the bytes itself"
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


__all__ = [
    "NO_TRANSFORMS",
    "PredicateSpec",
    "TransformSpec",
    "TransformsConfig",
    "java_replacement",
    "parse_transforms",
    "split_list",
]
