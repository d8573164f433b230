"""The keys as written, checked: values validated, unknown, misplaced, deprecated and retired keys warned about.

MM2 validates its keys when its connectors start (``ConfigDef`` parsing) and ignores what it does not
know; mirrorspark validates every known key of the file at once and warns, once per key, where MM2 would
ignore one, read it elsewhere or no longer knows it. Unknown keys are never an error.
"""

from __future__ import annotations

from mirrorspark.config.keys import (
    CONFIG_KEYS,
    CONNECT_PREFIXES,
    CONNECTOR_PREFIXES,
    FLOW_CLIENT_PREFIXES,
    KEYS,
    MIRRORSPARK_PREFIX,
    REST_PREFIXES,
    ROLE_PREFIXES,
    SIDE_ROLE_PREFIXES,
    WORKER_PREFIXES,
    ConfigKey,
    is_client_key,
)
from mirrorspark.config.raw import RawConfig
from mirrorspark.config.values import split_list, validate


def check_keys(raw: RawConfig) -> None:
    """Validate the known keys of the file and warn about the others (warnings go to :meth:`RawConfig.warn`).

    Parameters
    ----------
    raw:
        The file's properties, sorted.

    Raises
    ------
    ConfigError
        A known key's value is invalid (the message names the key as written, the value and the expected type).
    BadRegexError
        A regex list key holds an invalid regex.
    """
    _check_top_level(raw)
    _check_transforms(raw)
    for s in raw.aliases:
        for t in raw.aliases:
            if s != t:
                _check_flow_level(raw, s, t)


def _check_top_level(raw: RawConfig) -> None:
    """Validate known top-level keys, warn about unknown, ignored or deprecated ones."""
    for key, value in raw.top_all.items():
        ck = KEYS.get(key)
        if ck is not None:
            _check_known(raw, ck, key, value, key, flow_level=False)
        elif key in raw.top:
            _check_unknown_top(raw, key)


def _check_known(raw: RawConfig, ck: ConfigKey, key: str, value: str, written: str, *, flow_level: bool) -> None:
    if not flow_level and ck.scope == "flow":
        raw.warn(f"'{key}' is ignored at top level: MM2 reads it per flow only; set it as '<source>-><target>.{key}'")
        return
    if not flow_level and ck.scope == "worker" and not key.startswith(WORKER_PREFIXES):
        raw.warn(f"'{key}' is ignored at top level, as in MM2: set it per target cluster as '<alias>.{key}'")
        return
    if flow_level and ck.scope in ("driver", "mirrorspark", "worker"):
        where = f"set it per target cluster as '<alias>.{key}'" if ck.scope == "worker" else "set it at top level"
        raw.warn(f"'{written}' has no effect at flow level: {where}")
        return
    if ck.scope == "client":
        return
    validate(ck, value, written, raw.src)
    if ck.replaced_by is not None:
        raw.warn(f"'{written}' is deprecated and was removed in Kafka {ck.removed_in}: rename it to '{ck.replaced_by}'")
    elif ck.removed_in is not None:
        raw.warn(f"'{written}' was removed in Kafka {ck.removed_in} and is ignored")
    elif ck.retired is not None:
        raw.warn(f"'{written}' has no effect: {ck.retired}; delete it")


def _check_unknown_top(raw: RawConfig, key: str) -> None:
    if key.startswith(MIRRORSPARK_PREFIX):
        known = ", ".join(k.name for k in CONFIG_KEYS if k.scope == "mirrorspark")
        raw.warn(f"unknown key '{key}' is ignored (mirrorspark's keys are: {known})")
        return
    accepted = is_client_key(key) or key.startswith(
        ROLE_PREFIXES + SIDE_ROLE_PREFIXES + WORKER_PREFIXES + CONNECTOR_PREFIXES + REST_PREFIXES + CONNECT_PREFIXES
    )
    if accepted:
        return
    head, dot, rest = key.partition(".")
    hint = ""
    if dot and (is_client_key(rest) or rest.startswith(ROLE_PREFIXES)):
        hint = f" (is '{head}' missing from 'clusters'?)"
    raw.warn(f"unknown key '{key}' is ignored{hint}")


def _check_flow_level(raw: RawConfig, s: str, t: str) -> None:
    """Validate known ``S->T.*`` keys, warn about unknown ones and ones without effect per flow."""
    for key, value in raw.flow_raw.get((s, t), {}).items():
        written = f"{s}->{t}.{key}"
        ck = KEYS.get(key)
        if is_client_key(key):
            raw.warn(
                f"'{written}' has no effect on clients (as in MM2): use "
                f"'{s}->{t}.source.consumer.{key}', '{s}->{t}.target.producer.{key}' and the like, "
                f"or '<alias>.{key}'"
            )
        elif ck is not None:
            _check_known(raw, ck, key, value, written, flow_level=True)
        elif key.startswith(MIRRORSPARK_PREFIX):
            raw.warn(f"'{written}' has no effect: mirrorspark.* keys are read at top level only")
        elif not key.startswith(FLOW_CLIENT_PREFIXES + CONNECTOR_PREFIXES):
            raw.warn(f"unknown key '{written}' is ignored")


def _check_transforms(raw: RawConfig) -> None:
    """Warn where mirrorspark runs transforms MM2 would not, or would run differently."""
    top = [k for k in raw.top if k.startswith(("transforms.", "predicates."))]
    if top or split_list(raw.top.get("transforms", "")) or split_list(raw.top.get("predicates", "")):
        raw.warn(
            "top-level 'transforms' and 'transforms.<t>.*' apply to every flow in mirrorspark, but MM2 drops "
            "top-level 'transforms.<t>.*' keys from its connectors: for a file MM2 runs the same way, set "
            "them per flow ('<source>-><target>.transforms', '<source>-><target>.transforms.<t>.type', ...)"
        )


__all__ = ["check_keys"]
