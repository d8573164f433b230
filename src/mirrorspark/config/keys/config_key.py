"""One configuration key, declared once: :class:`ConfigKey` and the vocabulary of its attributes."""

from __future__ import annotations

from dataclasses import KW_ONLY, dataclass
from typing import Final, Literal

KeyType = Literal["boolean", "int", "long", "short", "string", "list", "class"]
"""Value types of :class:`ConfigKey`, named as in Kafka's ``ConfigDef``."""

KeyHolder = Literal["flow", "policy", "data_path", "service"]
"""Which typed object a key's :attr:`ConfigKey.field` belongs to: :class:`FlowConfig` (``flow``),
:class:`PolicyConfig` (``policy``, i.e. ``FlowConfig.policy``), :class:`DataPathConfig`
(``data_path``, i.e. ``MirrorConfig.data_path``) or :class:`ServiceConfig` (``service``, i.e.
``MirrorConfig.service``: the metrics service, ``mirrorspark service``)."""

KeyEffect = Literal["used", "accepted"]
"""What mirrorspark does with a key's value:

``used``
    the value changes what mirrorspark does;
``accepted``
    accepted (and validated) for MM2 compatibility, no effect: mirrorspark has nothing the key
    could configure (a REST server, Java plugins, Connect's transactions, ...).
"""

ACCEPTED_NOTE: Final = "accepted for MM2 compatibility, no effect"
"""How ``config-reference`` marks keys whose :attr:`ConfigKey.effect` is ``accepted``."""

KeyScope = Literal["driver", "client", "connector", "flow", "worker", "mirrorspark"]
"""Where a key is read:

``driver``
    top level only (``MirrorMakerConfig``'s own keys, e.g. ``clusters``);
``client``
    Kafka client keys: top level, ``<alias>.``, ``<role>.`` and ``<side>.<role>.`` prefixes;
``connector``
    MM2 connector keys: top level (default for every flow) or ``S->T.`` (override);
``flow``
    connector keys that MM2 reads from ``S->T.`` only (top-level ones are dropped by MM2's driver);
``worker``
    Kafka Connect worker keys of the target cluster: ``<T>.<key>``, or top level for keys
    starting with ``offset.storage`` (MM2's ``workerConfig``);
``mirrorspark``
    mirrorspark's own keys, top level only.
"""


# --------------------------------------------------------------------------------------
# Key registry
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ConfigKey:
    """One configuration key mirrorspark knows, declared once (docs/config.md is generated from these).

    Parameters
    ----------
    name:
        The key as written at top level, e.g. ``"refresh.topics.interval.seconds"``.
    type:
        Value type, named as in Kafka's ``ConfigDef``: ``boolean`` (``true``/``false``,
        case-insensitive), ``int`` (32-bit), ``long`` (64-bit), ``short`` (16-bit), ``string``,
        ``list`` (comma-separated, items trimmed; empty value = empty list) or ``class``
        (a Java class name).
    default:
        MM2's default in its textual form, parsed like a user value; ``None`` when there is no
        default (required key, or unset means "not configured").
    doc:
        One-sentence meaning, including the meaning of sentinels (e.g. ``-1``).
    unit:
        Unit of numeric values (``"ms"``, ``"s"``, ``"records"``, ``"tasks"``,
        ``"partitions"``, ``"replicas"``), or ``None``.
    scope:
        Where the key is read, see :data:`KeyScope`. Keyword-only.
    choices:
        Allowed values of a ``string`` key (matched case-sensitively, as MM2 does); empty = any.
    removed_choices:
        Values a ``string`` key once allowed and no longer does, each with why it was removed:
        ``(value, reason)`` pairs; such a value is a :class:`~mirrorspark.errors.ConfigError`
        whose message gives the reason and the choices left.
    minimum:
        Smallest allowed integer value, or ``None``.
    nonzero:
        Whether ``0`` is rejected even if ``minimum`` allows it (e.g. replication factors,
        where ``-1`` means "broker default").
    regex:
        Whether the items of a ``list`` key are regular expressions (validated at parse time).
    replaced_by:
        For a deprecated MM2 3.x alias (e.g. ``topics.blacklist``): the key that replaces it.
    removed_in:
        Kafka version that removed the key, if any (accepted for compatibility, with a warning).
    field:
        Name of the dataclass field the parsed value fills (in the object named by ``holder``),
        or ``None`` for keys the parser consumes itself (``clusters``, client keys), deprecated
        aliases (they fill the field of ``replaced_by``) and keys that fill nothing. A value in
        seconds (``unit="s"``) is stored as a ``float``.
    holder:
        The object holding ``field``, see :data:`KeyHolder`.
    top_level_field:
        For a ``connector`` key: the :class:`MirrorConfig` field its top-level value (the default of
        every flow, else the key's default) also fills, for the tools that serve no flow; ``None`` for most.
    effect:
        ``"used"``, or ``"accepted"`` for keys accepted for MM2 compatibility with no effect;
        see :data:`KeyEffect`.
    negative_disables:
        For a job's ``<job>.interval.seconds``: the ``<job>.enabled`` key a negative value turns
        off (MM2's scheduler skips jobs with a negative interval).
    retired:
        For a mirrorspark key that no longer has any effect: why (accepted and validated, with a
        warning naming the reason, so that files setting it still load).

    Notes
    -----
    Mirrors one ``ConfigDef.define(...)`` call of MM2's ``MirrorSourceConfig``,
    ``MirrorCheckpointConfig``, ``MirrorHeartbeatConfig``, ``MirrorConnectorConfig``,
    ``MirrorMakerConfig`` or Kafka Connect's ``DistributedConfig``.
    """

    name: str
    type: KeyType
    default: str | None
    doc: str
    unit: str | None = None
    _: KW_ONLY
    scope: KeyScope = "connector"
    choices: tuple[str, ...] = ()
    removed_choices: tuple[tuple[str, str], ...] = ()
    minimum: int | None = None
    nonzero: bool = False
    regex: bool = False
    replaced_by: str | None = None
    removed_in: str | None = None
    field: str | None = None
    holder: KeyHolder = "flow"
    top_level_field: str | None = None
    effect: KeyEffect = "used"
    negative_disables: str | None = None
    retired: str | None = None


__all__ = ["ACCEPTED_NOTE", "ConfigKey", "KeyEffect", "KeyHolder", "KeyScope", "KeyType"]
