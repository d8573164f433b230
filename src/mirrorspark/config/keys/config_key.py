"""One configuration key, declared once: :class:`ConfigKey` and the vocabulary of its attributes."""

from __future__ import annotations

from dataclasses import KW_ONLY, dataclass
from typing import Final, Literal

KeyType = Literal["boolean", "int", "long", "short", "string", "list", "class"]
"""Value types of :class:`ConfigKey`, named as in Kafka's ``ConfigDef``."""

KeyHolder = Literal["flow", "policy", "data_path", "service"]
"""Which object holds a key's :attr:`ConfigKey.field`: ``FlowConfig``, its ``policy``, or ``MirrorConfig``'s."""

KeyEffect = Literal["used", "accepted"]
"""What a key's value does: ``used`` changes behaviour; ``accepted`` is validated for MM2 compatibility, no effect."""

ACCEPTED_NOTE: Final = "accepted for MM2 compatibility, no effect"
"""How ``config-reference`` marks keys whose :attr:`ConfigKey.effect` is ``accepted``."""

KeyScope = Literal["driver", "client", "cluster", "connector", "flow", "worker", "mirrorspark"]
"""Where a key is read.

``driver``: top level only (``clusters``); ``client``: top level, ``<alias>.``, ``<role>.``, ``<side>.<role>.``;
``cluster``: ``<alias>.<key>`` only (a cluster's Schema Registry); ``connector``: top level or ``S->T.``; ``flow``:
``S->T.`` only; ``worker``: ``<T>.<key>`` (``offset.storage*`` also
top level, MM2's ``workerConfig``); ``mirrorspark``: mirrorspark's own, top level only.
"""


# --------------------------------------------------------------------------------------
# Key registry
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ConfigKey:
    """One configuration key mirrorspark knows, declared once (docs/config.md is generated from these).

    Parameters
    ----------
    type:
        As Kafka's ``ConfigDef``: ``int`` 32-bit, ``long`` 64-bit, ``short`` 16-bit, ``list`` comma-separated.
    default:
        MM2's default as text, parsed like a user value; ``None``: required, or unset means "not configured".
    doc:
        One sentence, with the meaning of sentinels (e.g. ``-1``).
    unit:
        ``"ms"``, ``"s"``, ``"bytes/s"``, ``"records"``, ``"tasks"``, ``"partitions"``, ``"replicas"`` or ``None``.
    removed_choices:
        ``(value, reason)`` pairs: such a value is a ``ConfigError`` giving the reason.
    nonzero:
        Whether ``0`` is refused even if ``minimum`` allows it (replication factors: ``-1`` = broker default).
    field:
        The field of ``holder`` the value fills (seconds, ``unit="s"``, as ``float``); ``None``: consumed by the
        parser, a deprecated alias (fills ``replaced_by``'s) or nothing.
    top_level_field:
        The :class:`MirrorConfig` field a ``connector`` key's top-level value also fills (tools serving no flow).
    negative_disables:
        The ``<job>.enabled`` key a negative ``<job>.interval.seconds`` turns off (as MM2's scheduler).
    retired:
        Why a mirrorspark key no longer has an effect (accepted with a warning).

    Notes
    -----
    One ``ConfigDef.define(...)`` of MM2's ``Mirror*Config`` classes or Connect's ``DistributedConfig``.
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
