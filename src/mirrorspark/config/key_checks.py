"""The keys as written, checked: unknown ones refused, values validated; misplaced or retired ones warned about.

MM2 validates its keys when its connectors start (``ConfigDef`` parsing) and ignores what it does not
know; mirrorspark refuses keys nobody knows (:mod:`~mirrorspark.config.key_names`; only warned about in
lenient mode), validates every known key of the file at once and warns, once per key, where MM2 would
ignore one, read it elsewhere or no longer knows it.
"""

from __future__ import annotations

from mirrorspark.config.key_names import check_client_values, report_unknown_keys, unknown_keys
from mirrorspark.config.keys import KEYS, WORKER_PREFIXES, ConfigKey, is_client_key
from mirrorspark.config.raw import RawConfig
from mirrorspark.config.values import split_list, validate
from mirrorspark.errors import ConfigError


def check_keys(raw: RawConfig, *, lenient: bool = False) -> None:
    """Refuse unknown keys, validate known ones, warn about misplaced ones (warnings: :meth:`RawConfig.warn`).

    Raises ConfigError for unknown keys (unless ``lenient``: one error, each with its line and a suggestion), an
    invalid value (naming the key as written) or a cluster key (``schema.registry.*``) without its ``<alias>.``;
    BadRegexError for an invalid regex.
    """
    report_unknown_keys(raw, unknown_keys(raw), lenient=lenient)
    check_client_values(raw)
    _check_top_level(raw)
    _check_transforms(raw)
    for s in raw.aliases:
        for t in raw.aliases:
            if s != t:
                _check_flow_level(raw, s, t)


def _check_top_level(raw: RawConfig) -> None:
    """Validate known top-level keys, warn about ignored or deprecated ones."""
    for key, value in raw.top_all.items():
        ck = KEYS.get(key)
        if ck is not None:
            _check_known(raw, ck, key, value, key, flow_level=False)


def _check_known(raw: RawConfig, ck: ConfigKey, key: str, value: str, written: str, *, flow_level: bool) -> None:
    if ck.scope == "cluster":
        raise ConfigError(
            f"{raw.where(written)}: '{written}' names no cluster: each cluster names its own Schema Registry, "
            f"set it as '<alias>.{key}'"
        )
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


def _check_flow_level(raw: RawConfig, s: str, t: str) -> None:
    """Validate known ``S->T.*`` keys, warn about ones without effect per flow."""
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
