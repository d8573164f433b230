"""A flow's transformation chain, built once at start (Connect's ``TransformationChain``), and bound per partition."""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from mirrorspark.core.transforms.builtin import (
    DropHeaders,
    Filter,
    HasHeaderKey,
    InsertHeader,
    RecordIsTombstone,
    RegexRouter,
    TopicNameMatches,
)
from mirrorspark.core.transforms.config import (
    PredicateSpec,
    TransformsConfig,
    TransformSpec,
    java_replacement,
    split_list,
)
from mirrorspark.core.transforms.records import (
    DROP_HEADERS,
    FILTER,
    HAS_HEADER_KEY,
    INSERT_HEADER,
    REGEX_ROUTER,
    TOPIC_NAME_MATCHES,
    ConnectRecord,
    Predicate,
    Transformation,
)
from mirrorspark.errors import TransformConfigError


@dataclass(frozen=True, slots=True)
class Step:
    """One transform of a chain with its condition."""

    alias: str
    transform: Transformation
    predicate: Predicate | None = None
    negate: bool = False

    def applies(self, record: ConnectRecord) -> bool:
        """Whether the step applies to ``record`` (Connect's ``TransformationStage``)."""
        return self.predicate is None or self.predicate.test(record) != self.negate


class TransformChain:
    """A flow's transformation chain (Connect's ``TransformationChain``), built once at start.

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
        """Run the record through every step; ``None`` when one drops it."""
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
        """Fix the chain for one remote topic: evaluate topic predicates and routers once."""
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
    """The per-record part of a :class:`TransformChain` for one remote topic (:meth:`TransformChain.bind`)."""

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


def _load_user(spec: TransformSpec, written: Callable[[str], str]) -> Transformation:
    key = written(f"transforms.{spec.alias}.type")
    module_name, _, attr = spec.type.partition(":")
    fix = (
        "make the module importable by mirrorspark (and its executors) and the class a Transformation "
        "(docs/transforms.md)"
    )
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
            f"'{key}' = {spec.type!r} is not a transform: give it apply(record) -> record or None (docs/transforms.md)"
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
        return DropHeaders(frozenset(split_list(spec.props["headers"])))
    return RegexRouter(re.compile(spec.props["regex"], re.ASCII), java_replacement(spec.props["replacement"]))


def routers(config: TransformsConfig) -> TransformsConfig:
    """Return only the ``RegexRouter`` transforms of ``config`` (what names remote topics), with their predicates."""
    return TransformsConfig(tuple(t for t in config.transforms if t.type == REGEX_ROUTER), config.predicates)


def build_chain(config: TransformsConfig, written: Callable[[str], str] | None = None) -> TransformChain:
    """Build a flow's :class:`TransformChain` (empty, falsy, when none is configured) once, at start.

    Raises TransformConfigError if a user transform cannot be imported, instantiated or configured, or is
    not a :class:`Transformation`.
    """
    w = written or (lambda k: k)
    predicates = {alias: _build_predicate(p) for alias, p in config.predicates.items()}
    return TransformChain(
        [
            Step(t.alias, _build_transform(t, w), predicates[t.predicate] if t.predicate else None, t.negate)
            for t in config.transforms
        ]
    )


__all__ = ["BoundChain", "Step", "TransformChain", "build_chain", "routers"]
