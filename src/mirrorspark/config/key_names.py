"""Every key of the file checked by name: an unknown key stops the start, or is warned about in lenient mode.

A key is known when mirrorspark's registry (:data:`~mirrorspark.config.keys.KEYS`), MM2 or Kafka Connect
(:data:`~mirrorspark.config.keys.known_names.CONNECT_NAMES`) knows it at its place, or it lies in a
namespace whose names belong to a plugin (``transforms.<t>.*``, ``config.providers.<p>.*``, converter and
replication policy settings, REST listeners). Where a client property goes (``<alias>.<p>``,
``<alias>.<role>.<p>``, ``[S->T.]<side>.<role>.<p>``, ``[S->T.]<role>.<p>``, ``<role>.override.<p>``,
``S->T.<side>.cluster.<p>``, and those of the flow under ``S->T.mirrorspark.<checkpoint|heartbeat>.``) ``<p>``
must be a Kafka Java client property or a librdkafka property.

MM2 ignores keys it does not know; mirrorspark refuses them (a misspelt ``S->T.topcs`` would otherwise
replicate every topic), each named with its ``file:line`` and the closest valid key
(:func:`difflib.get_close_matches`), all in one :class:`~mirrorspark.errors.ConfigError`.
``mirrorspark.config.lenient = true`` (or ``lenient=True`` of :func:`~mirrorspark.config.parse.parse_config`)
turns them into warnings. The values of enumerated client properties (``security.protocol``) are checked here too.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Iterator
from typing import Final

from mirrorspark.config.keys import (
    CONFIG_KEYS,
    CONNECTOR_CLIENT_PREFIXES,
    FLOW_CLIENT_PREFIXES,
    KEYS,
    MIRRORSPARK_PREFIX,
    ROLE_PREFIXES,
    ROLES,
    SCHEMA_REGISTRY_PREFIX,
    SIDE_ROLE_PREFIXES,
    SIDES,
    is_client_key,
)
from mirrorspark.config.keys.known_names import CLIENT_PROPERTY_NAMES, CONNECT_NAMES
from mirrorspark.config.raw import RawConfig
from mirrorspark.errors import ConfigError

# Namespaces whose names belong to a plugin or a listener (a transform's, a config provider's, a converter's,
# a custom replication policy's settings, Connect's REST listeners): every name under them is accepted.
OPEN_NAMESPACES: Final = (
    "transforms.",
    "predicates.",
    "config.providers.",
    "replication.policy.",
    "key.converter.",
    "value.converter.",
    "header.converter.",
    "metrics.context.",
    "topic.creation.",
    "rest.",
    "listeners.",
    "admin.listeners.",
    "plugin.",
    "topic.rename.rules.",  # checked by name when the flow's renaming is read (core.rename_rules)
)
_OVERRIDE_PREFIXES: Final = tuple(f"{role}.override." for role in ROLES)
# S->T.mirrorspark.<checkpoint|heartbeat>.<flow client key>: a connector's own clients (client_chain.flow_clients)
_CONNECTOR_CLIENT_PREFIXES: Final = tuple(c + p for c in CONNECTOR_CLIENT_PREFIXES for p in FLOW_CLIENT_PREFIXES)
_FLOW_PREFIXES: Final = FLOW_CLIENT_PREFIXES + _OVERRIDE_PREFIXES + _CONNECTOR_CLIENT_PREFIXES
_PLAIN_NAMES: Final = frozenset(KEYS) | CONNECT_NAMES | CLIENT_PROPERTY_NAMES
_MIRRORSPARK_NAMES: Final = tuple(k.name for k in CONFIG_KEYS if k.name.startswith(MIRRORSPARK_PREFIX))
_REGISTRY_NAMES: Final = tuple(k.name for k in CONFIG_KEYS if k.name.startswith(SCHEMA_REGISTRY_PREFIX))
_CUTOFF: Final = 0.8  # difflib ratio: 'topcs' ~ 'topics' 0.91, 'max.poll.recordz' ~ 'max.poll.records' 0.94


def _client_prefix(name: str, prefixes: tuple[str, ...]) -> str | None:
    """Return the longest of ``prefixes`` that ``name`` starts with (a client property follows it), else ``None``."""
    found = [p for p in prefixes if name.startswith(p)]
    return max(found, key=len) if found else None


def _is_known(name: str, client_prefixes: tuple[str, ...]) -> bool:
    """Whether ``name`` (a key without its ``<alias>.`` or ``S->T.`` prefix) is known where it is."""
    if name in _PLAIN_NAMES or name.startswith(OPEN_NAMESPACES):
        return True
    prefix = _client_prefix(name, client_prefixes)
    return prefix is not None and name[len(prefix) :] in CLIENT_PROPERTY_NAMES


def _suggest(name: str, client_prefixes: tuple[str, ...]) -> str | None:
    """Return the valid name closest to ``name`` at its place, by :func:`difflib.get_close_matches`, or ``None``."""
    if name.startswith(MIRRORSPARK_PREFIX):
        return next(iter(difflib.get_close_matches(name, _MIRRORSPARK_NAMES, 1, _CUTOFF)), None)
    if name.startswith(SCHEMA_REGISTRY_PREFIX):  # confluent-kafka's SchemaRegistryClient names, under the prefix
        return next(iter(difflib.get_close_matches(name, _REGISTRY_NAMES, 1, 0.6)), None)
    prefix = _client_prefix(name, client_prefixes)
    if prefix is not None:
        best = difflib.get_close_matches(name[len(prefix) :], CLIENT_PROPERTY_NAMES, 1, _CUTOFF)
        if best:
            return prefix + best[0]
    return next(iter(difflib.get_close_matches(name, _PLAIN_NAMES, 1, _CUTOFF)), None)


def _keys_by_place(raw: RawConfig) -> Iterator[tuple[str, str, str, tuple[str, ...]]]:
    """Every key as ``(written, prefix, name, client prefixes of its place)``: top level, cluster, flow."""
    top_prefixes = ROLE_PREFIXES + SIDE_ROLE_PREFIXES + _OVERRIDE_PREFIXES
    for key in raw.top:
        yield key, "", key, top_prefixes
    for alias, props in raw.cluster_raw.items():
        for name in props:
            yield f"{alias}.{name}", f"{alias}.", name, ROLE_PREFIXES + _OVERRIDE_PREFIXES
    for (s, t), props in raw.flow_raw.items():
        for name in props:
            yield f"{s}->{t}.{name}", f"{s}->{t}.", name, _FLOW_PREFIXES


def _hint(written: str, prefix: str, name: str, client_prefixes: tuple[str, ...]) -> str:
    """Say what follows ``unknown key '<written>'``: the closest valid key, or a missing alias."""
    head, dot, rest = written.partition(".")
    shaped = is_client_key(rest) or rest.startswith(ROLE_PREFIXES)
    if not prefix and dot and "->" not in head and head not in ROLES + SIDES and shaped:
        return f" (is '{head}' missing from 'clusters'?)"
    best = _suggest(name, client_prefixes)
    return f"; did you mean '{prefix}{best}'?" if best else ""


def unknown_keys(raw: RawConfig) -> list[tuple[int | None, str]]:
    """Describe each key of the file nobody knows at its place, in file order."""
    found = [
        (raw.lines.get(written), f"unknown key '{written}'{_hint(written, prefix, name, client_prefixes)}")
        for written, prefix, name, client_prefixes in _keys_by_place(raw)
        if not _is_known(name, client_prefixes)
    ]
    return sorted(found, key=lambda item: item[0] or 0)


def report_unknown_keys(raw: RawConfig, found: Iterable[tuple[int | None, str]], *, lenient: bool) -> None:
    """Refuse the unknown keys in one error, or (``lenient``) warn about each once.

    Raises ConfigError with one ``<file>:<line>: unknown key ...`` line per key unless ``lenient``.
    """
    found = list(found)
    if lenient:
        for line, text in found:
            raw.warn(("" if line is None else f"line {line}: ") + f"{text} (accepted in lenient mode)")
        return
    if found:
        raise ConfigError(
            f"{raw.src}: {len(found)} unknown key{'s' if len(found) > 1 else ''} (fix them, or set "
            "'mirrorspark.config.lenient = true' to only warn about keys mirrorspark does not know):\n"
            + "\n".join(f"{raw.src}{'' if line is None else f':{line}'}: {text}" for line, text in found)
        )


def check_client_values(raw: RawConfig) -> None:
    """Validate the enumerated client properties (``security.protocol``) wherever a client property goes.

    Raises ConfigError naming the key and its ``file:line`` for a value not among the choices (case-insensitive, as
    Kafka's ``SecurityProtocol.forName``).
    """
    for written, _, name, client_prefixes in _keys_by_place(raw):
        prefix = _client_prefix(name, client_prefixes) or ""
        ck = KEYS.get(name[len(prefix) :])
        if ck is None or ck.scope != "client" or not ck.choices:
            continue
        value = raw.props[written].strip()
        if value.upper() not in ck.choices:
            raise ConfigError(
                f"{raw.where(written)}: invalid value {value!r} for '{written}': expected one of "
                f"{', '.join(ck.choices)}; fix '{written}'"
            )


__all__ = ["OPEN_NAMESPACES", "check_client_values", "report_unknown_keys", "unknown_keys"]
