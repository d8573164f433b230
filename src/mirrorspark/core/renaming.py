"""``RenamingReplicationPolicy``: remote topics renamed by ordered regex rules, else by ``topic.rename.format``.

mirrorspark's own policy (Confluent Replicator's ``topic.rename.format``, Lenses K2K's pattern routing): a topic
is renamed by the first rule (:mod:`~mirrorspark.core.rename_rules`) whose regex matches it whole; a topic no rule
matches by ``topic.rename.format`` (``${topic}`` stands for its name; unset: ``${topic}``, the name is kept, as
Replicator's default). Heartbeats and internal topics follow MM2 (``IdentityReplicationPolicy``'s rules), so
heartbeat cycles are still seen. Every name the policy produces maps back to exactly one topic
(:meth:`RenamingReplicationPolicy.upstream_topic`): rules that could give two topics one name, or give a
heartbeats or internal topic's name, are refused when the policy is built (:func:`check_renaming`).
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Mapping
from typing import Final

from mirrorspark.core.name_languages import (
    TOPIC_CHARS,
    Concat,
    Inter,
    Lang,
    Not,
    Piece,
    Seq,
    Union,
    anything,
    literal,
    witness,
)
from mirrorspark.core.rename_rules import (
    FORMAT_KEY,
    NO_RENAMING,
    RULES_PREFIX,
    TOPIC_PLACEHOLDER,
    CompiledRule,
    RenamingConfig,
    compile_rule,
    parse_renaming,
)
from mirrorspark.errors import ConfigError
from mirrorspark.mm2 import internal_topics as names
from mirrorspark.mm2.policy import DEFAULT_SEPARATOR, DefaultReplicationPolicy, IdentityReplicationPolicy

RENAMING_POLICY_NAMES: Final = frozenset(
    {
        "RenamingReplicationPolicy",
        "mirrorspark.core.renaming:RenamingReplicationPolicy",
        "mirrorspark:RenamingReplicationPolicy",
        "mirrorspark.RenamingReplicationPolicy",
    }
)
"""The ``replication.policy.class`` values naming this policy."""


def _split_format(fmt: str | None) -> tuple[str, str]:
    """``topic.rename.format`` as (text before, text after) ``${topic}``; ConfigError unless it holds one."""
    if fmt is None:
        return "", ""
    before, found, after = fmt.partition(TOPIC_PLACEHOLDER)
    if not found or TOPIC_PLACEHOLDER in after:
        raise ConfigError(
            f"{FORMAT_KEY} = {fmt!r} must hold '{TOPIC_PLACEHOLDER}' exactly once (every topic would get one "
            "name otherwise), e.g. '${topic}.replica' or 'dr-${topic}'"
        )
    bad = {c for c in before + after if c not in TOPIC_CHARS}
    if bad:
        raise ConfigError(f"{FORMAT_KEY} = {fmt!r} holds {''.join(sorted(bad))!r}, never in a topic name: remove it")
    return before, after


def _internal(isep: str) -> Lang:
    """Names kept internal: ``__*``, ``.*``, ``mm2*<isep>internal``, ``*<isep>checkpoints<isep>internal``."""
    return Union(
        Seq(literal("__") + anything()),
        Seq(literal(".") + anything()),
        Seq(literal(names.MM2_PREFIX) + anything() + literal(names.internal_suffix(isep))),
        Seq(anything() + literal(names.checkpoints_suffix(isep))),
    )


def _heartbeat_like(prefix: str = "") -> Lang:
    """Names ending with ``heartbeats`` (after ``prefix``), which MM2's identity policy names by the default rule."""
    return Seq(literal(prefix) + anything() + literal(names.HEARTBEATS_TOPIC))


def _fall_through(rules: tuple[CompiledRule, ...], before: str, after: str, reserved: Lang) -> Lang:
    """Return the names topics no rule matches get: ``before + t + after`` for every such ``t``."""
    unmatched = Not(Union(*(Seq(r.domain) for r in rules), reserved, Seq(())))  # a topic name is never empty
    return Concat(Seq(literal(before)), Concat(unmatched, Seq(literal(after))))


@functools.lru_cache(maxsize=64)
def check_renaming(
    config: RenamingConfig, heartbeats_prefix: str | None = None, isep: str = DEFAULT_SEPARATOR
) -> tuple[tuple[CompiledRule, ...], str, str]:
    """Compile ``config`` and prove every name it produces maps back to one topic; return rules, prefix, suffix.

    Refused (ConfigError naming the rule, the example name and the fix): a rule outside the grammar of
    :func:`~mirrorspark.core.rename_rules.compile_rule`; two rules, or a rule and the fall-through, that can produce
    one name; a name a heartbeats topic gets (``heartbeats_prefix``: ``<source alias><separator>``, ``None``
    unknown) or an internal topic's name (``isep``: the internal separator). Topics ending with ``heartbeats``,
    internal ones and the empty name are never renamed by the rules or the format. Cached: a file's flows share it.
    """
    rules = tuple(compile_rule(r) for r in config.rules)
    before, after = _split_format(config.format)
    internal = _internal(isep)
    heartbeats = Seq((Piece(frozenset()),)) if heartbeats_prefix is None else _heartbeat_like(heartbeats_prefix)
    reserved = Union(_heartbeat_like(), internal)
    fall = _fall_through(rules, before, after, reserved)
    for i, rule in enumerate(rules):
        image = Seq(rule.image)
        found = witness(Inter(image, heartbeats))
        if found is not None:
            raise _collision(rule, f"can produce {found!r}, a remote heartbeats topic's name", "change its replacement")
        if _internal_ends(rule, isep):
            raise _collision(
                rule, "produces internal topic names ('__*', '.*', '*.internal')", "change its replacement"
            )
        for later in rules[i + 1 :]:
            found = witness(Inter(image, Seq(later.image)))
            if found is not None:
                raise _collision(
                    rule,
                    f"and rule '{later.rule.name}' can both produce {found!r} (from topics "
                    f"{rule.reverse(found)!r} and {later.reverse(found)!r})",
                    "give the two replacements different literal prefixes or suffixes",
                )
        found = witness(Inter(image, fall))
        if found is not None:
            kept = found[len(before) : len(found) - len(after)]
            how = f"renamed by {FORMAT_KEY} = {config.format!r}" if config.format is not None else "kept as it is"
            raise _collision(
                rule,
                f"can produce {found!r} from topic {rule.reverse(found)!r}, and topic {kept!r}, which no rule "
                f"matches, lands there too ({how})",
                f"make the rule's names ones a rule matches, or ones {FORMAT_KEY} cannot produce "
                "(another prefix or suffix)",
            )
    found = witness(Inter(fall, Union(heartbeats, internal)))
    if found is not None:
        raise ConfigError(
            f"{FORMAT_KEY} = {config.format!r} can produce {found!r}, a heartbeats or internal topic's name: "
            "give it another prefix or suffix"
        )
    return rules, before, after


def _internal_ends(rule: CompiledRule, isep: str) -> bool:
    """Whether the replacement's literal start or end makes internal names (sources never are: they stay put)."""
    parts = rule.target_parts
    head = "".join(str(p) for p in itertools.takewhile(lambda p: isinstance(p, str), parts))
    tail = "".join(str(p) for p in itertools.takewhile(lambda p: isinstance(p, str), reversed(parts)))[::-1]
    return head.startswith(("__", ".")) or tail.endswith(names.internal_suffix(isep))


def _collision(rule: CompiledRule, what: str, fix: str) -> ConfigError:
    r = rule.rule
    return ConfigError(f"renaming rule '{r.name}' (regex {r.regex!r}, replacement {r.replacement!r}) {what}: {fix}")


class RenamingReplicationPolicy(IdentityReplicationPolicy):
    """Remote topics renamed by rules, else by ``topic.rename.format`` (see the module notes).

    Parameters
    ----------
    renaming:
        The rules and format (:class:`~mirrorspark.core.rename_rules.RenamingConfig`); default none: names are
        kept, as :class:`IdentityReplicationPolicy`.
    source_cluster_alias, separator, internal_topic_separator_enabled:
        As :class:`IdentityReplicationPolicy`.

    Raises ConfigError as :func:`check_renaming`. ``topic_source`` is ``source_cluster_alias`` for exactly the names
    the policy produces, ``upstream_topic`` their topic; thread-safe once configured.
    """

    def __init__(
        self,
        *,
        renaming: RenamingConfig = NO_RENAMING,
        source_cluster_alias: str | None = None,
        separator: str = DEFAULT_SEPARATOR,
        internal_topic_separator_enabled: bool = True,
    ) -> None:
        super().__init__(
            source_cluster_alias=source_cluster_alias,
            separator=separator,
            internal_topic_separator_enabled=internal_topic_separator_enabled,
        )
        self._set_renaming(renaming)

    def _set_renaming(self, renaming: RenamingConfig) -> None:
        alias = self.source_cluster_alias
        prefix = None if alias is None else f"{alias}{self.separator}"
        self._rules, self._before, self._after = check_renaming(renaming, prefix, self._internal_separator())
        self.renaming = renaming

    def configure(self, props: Mapping[str, str]) -> None:
        """Apply MM2 properties: those of the identity policy, then any ``topic.rename.*``; ConfigError as there."""
        super().configure(props)
        keys = {k: v for k, v in props.items() if k == FORMAT_KEY or k.startswith(RULES_PREFIX[:-1])}
        if keys:
            self._set_renaming(parse_renaming(keys))

    def __repr__(self) -> str:
        return f"{type(self).__name__}(renaming={self.renaming!r}, source_cluster_alias={self.source_cluster_alias!r})"

    def _rename(self, topic: str) -> str:
        for rule in self._rules:
            renamed = rule.apply(topic)
            if renamed is not None:
                return renamed
        return f"{self._before}{topic}{self._after}"

    def _reverse(self, name: str) -> str | None:
        """Return the topic renamed to ``name``, or ``None`` (every candidate checked by renaming it again)."""
        candidates = [rule.reverse(name) for rule in self._rules]
        if (
            len(name) >= len(self._before) + len(self._after)
            and name.startswith(self._before)
            and name.endswith(self._after)
        ):
            candidates.append(name[len(self._before) : len(name) - len(self._after)])
        for topic in candidates:
            if topic is not None and not self._looks_like_heartbeat(topic) and self._rename(topic) == name:
                return topic
        return None

    def format_remote_topic(self, source_alias: str, topic: str) -> str:
        """``topic`` renamed by the first matching rule, else by the format; heartbeats: ``source_alias.topic``."""
        if self._looks_like_heartbeat(topic):
            return DefaultReplicationPolicy.format_remote_topic(self, source_alias, topic)
        return self._rename(topic)

    def topic_source(self, topic: str) -> str | None:
        """``source.cluster.alias`` if the rules or format produce ``topic``, else as heartbeats, or ``None``."""
        if self._reverse(topic) is not None:
            return self.source_cluster_alias
        if self._looks_like_heartbeat(topic):
            return DefaultReplicationPolicy.topic_source(self, topic)
        return None

    def upstream_topic(self, topic: str) -> str | None:
        """Return the topic the rules or format rename to ``topic`` (exact inverse), else as heartbeats, or ``None``."""
        upstream = self._reverse(topic)
        if upstream is None and self._looks_like_heartbeat(topic):
            return DefaultReplicationPolicy.upstream_topic(self, topic)
        return upstream

    def original_topic(self, topic: str) -> str:
        """:meth:`upstream_topic` followed until it ends or comes back to a name already seen."""
        seen = {topic}
        current = topic
        while (upstream := self.upstream_topic(current)) is not None and upstream not in seen:
            seen.add(upstream)
            current = upstream
        return current


__all__ = ["RENAMING_POLICY_NAMES", "RenamingReplicationPolicy", "check_renaming"]
