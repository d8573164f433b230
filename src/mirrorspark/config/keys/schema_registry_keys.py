"""Schema Registry keys (mirrorspark's own: MM2 has none): each cluster's registry and each flow's schema replication.

A cluster's registry is ``<alias>.schema.registry.url`` plus the client's auth and TLS settings under the same
prefix, each named as confluent-kafka's ``SchemaRegistryClient`` names it (``<alias>.schema.registry.<name>``);
a flow's schema replication is ``sync.schemas.enabled`` and ``sync.schemas.unknown.ids`` (top level or ``S->T.``).
"""

from __future__ import annotations

from typing import Final

from mirrorspark.config.keys.config_key import ConfigKey, KeyType

SCHEMA_REGISTRY_PREFIX: Final = "schema.registry."
"""The prefix of a cluster's registry keys (``<alias>.schema.registry.<client name>``)."""
SYNC_SCHEMAS_ENABLED: Final = "sync.schemas.enabled"
SYNC_SCHEMAS_UNKNOWN_IDS: Final = "sync.schemas.unknown.ids"
SYNC_SCHEMAS_INTERVAL: Final = "sync.schemas.interval.seconds"
_SECRET: Final = " A secret: masked in every message; write it as ${file:...} or ${env:...}."


def _registry(
    name: str,
    type_: KeyType,
    default: str | None,
    doc: str,
    unit: str | None = None,
    *,
    choices: tuple[str, ...] = (),
    minimum: int | None = None,
) -> ConfigKey:
    """Declare ``schema.registry.<name>``, read per cluster only (``<alias>.schema.registry.<name>``)."""
    name = SCHEMA_REGISTRY_PREFIX + name
    return ConfigKey(name, type_, default, doc, unit, scope="cluster", choices=choices, minimum=minimum)


_BEARER_NEEDS = "; needs bearer.auth.credentials.source"

SCHEMA_REGISTRY_KEYS: Final[tuple[ConfigKey, ...]] = (
    _registry(
        "url",
        "list",
        None,
        "The cluster's Schema Registry, set as <alias>.schema.registry.url: one or more comma-separated http:// or "
        "https:// URLs, tried in turn (confluent-kafka's SchemaRegistryClient url; Apicurio's Confluent API is "
        "<base>/apis/ccompat/v7); user:password@ in a URL is masked in every message. Unset = no registry; a "
        "flow whose source and target both name one replicates schemas (sync.schemas.enabled). Every "
        "<alias>.schema.registry.* key below needs it. Connector configs write them source.cluster.schema.registry.* "
        "and target.cluster.schema.registry.*.",
    ),
    _registry(
        "basic.auth.user.info",
        "string",
        None,
        "HTTP basic credentials for the registry, user:password; not together with credentials in the URL." + _SECRET,
    ),
    _registry(
        "basic.auth.credentials.source",
        "string",
        None,
        "Where the basic credentials come from, as Confluent's Java serdes name it: USER_INFO "
        "(basic.auth.user.info, then required) or URL (the URL's user:password@); unset = either, as "
        "confluent-kafka reads them. SASL_INHERIT is not supported.",
        choices=("USER_INFO", "URL"),
    ),
    _registry(
        "ssl.ca.location",
        "string",
        None,
        "CA certificates (a PEM file or a directory) that verify the registry's TLS certificate; unset = "
        "SSL_CERT_FILE or SSL_CERT_DIR, else certifi's bundle.",
    ),
    _registry(
        "ssl.certificate.location",
        "string",
        None,
        "Client certificate (PEM file, which may hold the private key too) for mutual TLS with the registry.",
    ),
    _registry(
        "ssl.key.location",
        "string",
        None,
        "Client private key (PEM file) for mutual TLS; needs ssl.certificate.location.",
    ),
    _registry(
        "ssl.key.password",
        "string",
        None,
        "Password of the client private key; needs ssl.certificate.location." + _SECRET,
    ),
    _registry("proxy", "string", None, "HTTP proxy the registry is reached through (http://host:port); unset = none."),
    _registry(
        "timeout",
        "int",
        "10",
        "Timeout of one registry request (confluent-kafka's own default is none: a request may wait forever).",
        "s",
        minimum=1,
    ),
    _registry("cache.capacity", "int", "1000", "Entries the client's schema caches hold.", "schemas", minimum=1),
    _registry(
        "cache.latest.ttl.sec",
        "int",
        None,
        "How long the client caches a subject's latest version; unset = until evicted.",
        "s",
        minimum=0,
    ),
    _registry(
        "max.retries",
        "int",
        "3",
        "Retries of a registry request that got no answer or HTTP 408, 429 or 5xx.",
        minimum=0,
    ),
    _registry(
        "retries.wait.ms",
        "int",
        "100",
        "Wait before the first retry of a registry request, doubled each retry (with jitter).",
        "ms",
        minimum=0,
    ),
    _registry("retries.max.wait.ms", "int", "1000", "Longest wait between two retries.", "ms", minimum=0),
    _registry(
        "bearer.auth.credentials.source",
        "string",
        None,
        "Bearer-token auth for the registry: STATIC_TOKEN (bearer.auth.token), OAUTHBEARER (an OAuth client "
        "credentials grant: bearer.auth.client.id, .client.secret, .scope, .issuer.endpoint.url) or "
        "OAUTHBEARER_AZURE_IMDS (Azure's instance metadata: bearer.auth.issuer.endpoint.query or .url); each needs "
        "bearer.auth.logical.cluster. Unset = no bearer auth; CUSTOM (a Python function) cannot be set in a file.",
        choices=("STATIC_TOKEN", "OAUTHBEARER", "OAUTHBEARER_AZURE_IMDS"),
    ),
    _registry("bearer.auth.token", "string", None, "The static bearer token (STATIC_TOKEN)." + _SECRET),
    _registry(
        "bearer.auth.logical.cluster", "string", None, "The registry's logical cluster id (lsrc-...)" + _BEARER_NEEDS
    ),
    _registry(
        "bearer.auth.identity.pool.id",
        "string",
        None,
        "Identity pool id(s), comma-separated; unset = none" + _BEARER_NEEDS,
    ),
    _registry("bearer.auth.client.id", "string", None, "OAuth client id (OAUTHBEARER)" + _BEARER_NEEDS),
    _registry("bearer.auth.client.secret", "string", None, "OAuth client secret (OAUTHBEARER)." + _SECRET),
    _registry("bearer.auth.scope", "string", None, "OAuth scope (OAUTHBEARER)" + _BEARER_NEEDS),
    _registry(
        "bearer.auth.issuer.endpoint.url",
        "string",
        None,
        "Token endpoint (OAUTHBEARER; OAUTHBEARER_AZURE_IMDS: instead of Azure's default)" + _BEARER_NEEDS,
    ),
    _registry(
        "bearer.auth.issuer.endpoint.query",
        "string",
        None,
        "Query of Azure's token endpoint (OAUTHBEARER_AZURE_IMDS: resource, api-version, client_id)" + _BEARER_NEEDS,
    ),
    # --- per flow: top level = every flow, S->T.<key> = one flow ------------------------------
    ConfigKey(
        SYNC_SCHEMAS_ENABLED,
        "boolean",
        None,
        "Whether flow S->T replicates schemas: subjects copied from the source's Schema Registry to the target's "
        "under the replication policy's names (every version, compatibility levels) and the schema id of each "
        "record in Confluent's wire format rewritten to the target's. Unset = on when both <S>.schema.registry.url "
        "and <T>.schema.registry.url are set, else off; true without both is an error naming the missing key; "
        "false copies records byte for byte, as MM2. mirrorspark's own key (MM2 has no Schema Registry support), "
        "per flow (S->T.sync.schemas.enabled) or at top level for every flow.",
    ),
    ConfigKey(
        SYNC_SCHEMAS_UNKNOWN_IDS,
        "string",
        "fail",
        "With schema replication on: what a copy task does with a record in Confluent's wire format whose schema "
        "id the source registry does not know: fail stops the task with an error naming topic, partition, offset "
        "and id; copy copies the record unchanged and counts it. mirrorspark's own key, per flow or at top level.",
        choices=("fail", "copy"),
    ),
    ConfigKey(
        SYNC_SCHEMAS_INTERVAL,
        "int",
        "10",
        "With schema replication on: how often the driver copies every subject of the flow's topics (and every "
        "RecordNameStrategy subject) that gained versions or changed its compatibility level. A record's schema "
        "is registered on the target before the record in any case (the copy task copies what it meets first). "
        "Redpanda's shadow links poll the source registry every 10 s too. mirrorspark's own key, per flow or at "
        "top level.",
        unit="s",
        minimum=1,
    ),
)
"""The registry keys of a cluster (scope ``cluster``), then the schema replication keys of a flow."""


__all__ = [
    "SCHEMA_REGISTRY_KEYS",
    "SCHEMA_REGISTRY_PREFIX",
    "SYNC_SCHEMAS_ENABLED",
    "SYNC_SCHEMAS_INTERVAL",
    "SYNC_SCHEMAS_UNKNOWN_IDS",
]
