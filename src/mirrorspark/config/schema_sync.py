"""Each cluster's Schema Registry (``<alias>.schema.registry.*``) and each flow's schema replication, read and checked.

A cluster's registry keys are checked as confluent-kafka's ``SchemaRegistryClient`` would check them when it is
built (so a mistake stops the start, not the first record): a URL for every other key, ``http(s)://`` URLs,
``user:password`` credentials given once, a client certificate for a client key, each bearer source's keys. A
flow replicates schemas when ``sync.schemas.enabled`` says so, by default when both its clusters name a registry.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from mirrorspark.config.keys import (
    KEYS,
    SCHEMA_REGISTRY_PREFIX,
    SYNC_SCHEMAS_ENABLED,
    SYNC_SCHEMAS_INTERVAL,
    SYNC_SCHEMAS_UNKNOWN_IDS,
)
from mirrorspark.config.raw import RawConfig, strip_prefix
from mirrorspark.config.schema_registry import SchemaRegistrySettings, redact_url
from mirrorspark.config.values import split_list, to_value, validate
from mirrorspark.errors import ConfigError

URL_KEY: Final = SCHEMA_REGISTRY_PREFIX + "url"
# Keys each bearer credentials source needs (confluent-kafka's _FieldProviderBuilder), besides the logical cluster.
_BEARER_NEEDS: Final = {
    "STATIC_TOKEN": ("bearer.auth.token",),
    "OAUTHBEARER": (
        "bearer.auth.client.id",
        "bearer.auth.client.secret",
        "bearer.auth.scope",
        "bearer.auth.issuer.endpoint.url",
    ),
    "OAUTHBEARER_AZURE_IMDS": (),
}


def registry_url(raw: RawConfig, alias: str) -> str:
    """Return ``<alias>.schema.registry.url`` as written (trimmed), ``""`` if the cluster names no registry."""
    return raw.cluster_raw[alias].get(URL_KEY, "").strip()


def cluster_registry(raw: RawConfig, alias: str) -> SchemaRegistrySettings | None:
    """Read the Schema Registry of cluster ``alias``, ``None`` if it has no ``<alias>.schema.registry.*`` key.

    Raises ConfigError naming the key as written: an invalid value, a key without ``<alias>.schema.registry.url``,
    a URL that is not ``http(s)://``, credentials given twice or malformed, a client key without a certificate, a
    bearer source without its keys (messages never hold a secret).
    """
    props = {
        k: v.strip()
        for k, v in strip_prefix(raw.cluster_raw[alias], SCHEMA_REGISTRY_PREFIX).items()
        if SCHEMA_REGISTRY_PREFIX + k in KEYS  # others were refused, or warned about in lenient mode
    }
    if not props:
        return None
    key = f"{alias}.{SCHEMA_REGISTRY_PREFIX}"
    for name, value in props.items():
        validate(KEYS[SCHEMA_REGISTRY_PREFIX + name], value, key + name, raw.where(key + name))
    urls = tuple(u for u in split_list(props.pop("url", "")) if u)
    others = ", ".join(f"'{key}{n}'" for n, v in props.items() if v)
    if not urls and not others:
        return None  # an empty URL names no registry, as an unset one
    if not urls:
        raise ConfigError(f"{raw.src}: {others} set but not '{key}url': set the cluster's registry URL or remove them")
    for url in urls:
        if not url.lower().startswith(("http://", "https://")):
            raise ConfigError(
                f"{raw.where(key + 'url')}: '{key}url' holds {redact_url(url)!r}, which is not an http:// or "
                "https:// URL; write each registry URL in full, comma-separated"
            )
    props = {n: v for n, v in props.items() if v}
    _check_basic_auth(raw, key, urls, props)
    _check_tls(raw, key, props)
    _check_bearer(raw, key, props)
    return SchemaRegistrySettings(urls=urls, properties=props)


def _check_basic_auth(raw: RawConfig, key: str, urls: tuple[str, ...], props: Mapping[str, str]) -> None:
    in_url = any(redact_url(u) != u for u in urls)
    info = props.get("basic.auth.user.info")
    source = props.get("basic.auth.credentials.source")
    if info is not None and ":" not in info:
        raise ConfigError(f"{raw.src}: '{key}basic.auth.user.info' must be user:password (the value is not shown)")
    if info is not None and (in_url or source == "URL"):
        where = f"'{key}url' holds user:password@" if in_url else f"'{key}basic.auth.credentials.source' = URL"
        raise ConfigError(f"{raw.src}: '{key}basic.auth.user.info' is set and {where}: give the credentials once")
    if source == "USER_INFO" and info is None:
        raise ConfigError(
            f"{raw.src}: '{key}basic.auth.credentials.source' = USER_INFO needs '{key}basic.auth.user.info' "
            "(user:password)"
        )


def _check_tls(raw: RawConfig, key: str, props: Mapping[str, str]) -> None:
    if "ssl.certificate.location" in props:
        return
    for name in ("ssl.key.location", "ssl.key.password"):
        if name in props:
            raise ConfigError(
                f"{raw.src}: '{key}{name}' needs '{key}ssl.certificate.location' (the client certificate, PEM)"
            )


def _check_bearer(raw: RawConfig, key: str, props: Mapping[str, str]) -> None:
    source = props.get("bearer.auth.credentials.source")
    if source is None:
        bearer = [f"'{key}{n}'" for n in props if n.startswith("bearer.auth.")]
        if bearer:
            raise ConfigError(
                f"{raw.src}: {', '.join(bearer)} set but not '{key}bearer.auth.credentials.source': set it "
                "(STATIC_TOKEN, OAUTHBEARER or OAUTHBEARER_AZURE_IMDS) or remove them"
            )
        return
    needed = ("bearer.auth.logical.cluster", *_BEARER_NEEDS[source])
    missing = [f"'{key}{n}'" for n in needed if n not in props]
    if source == "OAUTHBEARER_AZURE_IMDS" and not {
        "bearer.auth.issuer.endpoint.query",
        "bearer.auth.issuer.endpoint.url",
    } & set(props):
        missing.append(f"'{key}bearer.auth.issuer.endpoint.query' (or '.url')")
    if missing:
        raise ConfigError(f"{raw.src}: '{key}bearer.auth.credentials.source' = {source} needs {', '.join(missing)}")


def flow_schema_sync(
    raw: RawConfig, s: str, t: str, merged: Mapping[str, str], written: Mapping[str, str], *, enabled: bool
) -> dict[str, Any]:
    """Read flow ``S->T``'s schema replication fields: ``sync_schemas_enabled``, ``_unknown_ids``, ``_interval_s``.

    Unset, replication is on iff both clusters name a registry. Raises ConfigError if ``sync.schemas.enabled`` is
    true for the flow (``S->T.``, or top level for an enabled flow) and a cluster names no registry (the message
    names the missing ``<alias>.schema.registry.url``), or a value does not convert.
    """
    both = bool(registry_url(raw, s)) and bool(registry_url(raw, t))
    on = both
    if SYNC_SCHEMAS_ENABLED in merged:
        where = written[SYNC_SCHEMAS_ENABLED]
        on = bool(to_value(KEYS[SYNC_SCHEMAS_ENABLED], merged[SYNC_SCHEMAS_ENABLED], where, raw.src))
        if on and not both and (enabled or where.startswith(f"{s}->{t}.")):
            missing = " and ".join(f"'{a}.{URL_KEY}'" for a in (s, t) if not registry_url(raw, a))
            raise ConfigError(
                f"{raw.src}: '{where}' = true, but flow {s}->{t} has no Schema Registry on both sides: set "
                f"{missing}, or set '{s}->{t}.{SYNC_SCHEMAS_ENABLED} = false'"
            )
        on = on and both
    out: dict[str, Any] = {"sync_schemas_enabled": on}
    for field, name in (
        ("sync_schemas_unknown_ids", SYNC_SCHEMAS_UNKNOWN_IDS),
        ("sync_schemas_interval_s", SYNC_SCHEMAS_INTERVAL),
    ):
        ck = KEYS[name]
        value, where = (merged[name], written[name]) if name in merged else (ck.default or "", f"{name} (default)")
        out[field] = to_value(ck, value, where, raw.src)
    return out


FLOW_KEYS: Final = frozenset({SYNC_SCHEMAS_ENABLED, SYNC_SCHEMAS_UNKNOWN_IDS, SYNC_SCHEMAS_INTERVAL})
"""The merged flow keys :func:`flow_schema_sync` reads (not :attr:`FlowConfig.extra`)."""


__all__ = ["FLOW_KEYS", "URL_KEY", "cluster_registry", "flow_schema_sync", "registry_url"]
