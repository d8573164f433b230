"""The Schema Registry adapter: confluent-kafka's ``SchemaRegistryClient`` as :class:`SchemaRegistryLike`.

Errors are translated at this boundary: a missing id, subject or level is a normal outcome (``None`` or ``[]``),
HTTP 409 on register is :class:`~mirrorspark.errors.SchemaSubjectConflictError`, anything else is
:class:`~mirrorspark.errors.SchemaRegistryError` naming the registry (URL credentials masked), the call and the
fix; no message holds a secret. confluent-kafka's client retries a refused connection, a timeout and HTTP 408,
429 and 5xx itself (``max.retries``, ``retries.wait.ms``, ``retries.max.wait.ms``); this adapter only makes
those retries short and gives every request a timeout when the configuration leaves them unset
(:data:`CLIENT_DEFAULTS`), and marks such errors retriable.

Apicurio Registry 3.3.3 (``/apis/ccompat/v7``) against Confluent's semantics, as
``tests/integration/test_registry_client.py`` checks them:

(a) Re-registering under a subject a schema that is its version 1 after it has version 2 returns version 1's
    id and adds no version, as Confluent does; the same text with other references is a new schema (new id,
    new version), as on Confluent.
(b) ``GET /schemas/ids/{id}/versions`` works: every (subject, version) with the id (soft-deleted ones left out).
(c) ``GET /config/{subject}`` for a subject with no level of its own answers 200 ``NONE``, neither Confluent's
    404 40408 nor the global level (``?defaultToGlobal=true`` gives the global one; an unknown subject is 404
    40401). :meth:`RegistryClient.compatibility` therefore asks again with ``defaultToGlobal=true`` when the
    answer is ``NONE``: a different answer means "no level of its own" (``None``). When the global level is
    ``NONE`` too, an unset level and an explicit ``NONE`` cannot be told apart: ``"NONE"`` is returned, the
    level in force either way. Apicurio's global default is ``NONE`` (Confluent's: ``BACKWARD``).
(d) References work for the three types: an Avro schema naming another subject's record, a Protobuf schema
    importing another subject's file and a JSON Schema with a ``$ref`` to another subject register, and
    ``GET /schemas/ids/{id}`` and ``GET /subjects/{s}/versions/{v}`` give them back with their references
    (name, subject, version); a schema whose references are left out is refused (422). The text comes back as
    registered, except an Avro schema without references: compacted (no whitespace), as Confluent's canonical
    form is. Apicurio leaves ``schemaType`` out for Avro.
(e) The same schema (type, text, references) under two subjects gets the same id, and
    ``GET /schemas/ids/{id}/versions`` lists both, as on Confluent. But Apicurio's ids are content ids of the
    text as written: the same Avro schema with other whitespace gets a new id under another subject (Confluent
    parses it: the same id), while under a subject that holds it, it is found (its id, no new version). Ids
    are not dense: Apicurio skips some.

Also: an incompatible schema is 409 with ``error_code`` 409 (as Confluent); an invalid one 422 42201; a
missing version 404 40402; a schema not in a subject 404 40403 on lookup; a soft-deleted subject is left out of
``GET /subjects`` and re-registering its schema continues its version numbers (2 after a deleted 1).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, Final, NoReturn, TypeVar
from urllib.parse import quote, urlsplit

from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry import SchemaReference as ConfluentReference
from confluent_kafka.schema_registry.error import SchemaRegistryError as ConfluentRegistryError

from mirrorspark.config.keys import KEYS, MASK, SCHEMA_REGISTRY_PREFIX, is_secret
from mirrorspark.config.schema_registry import SchemaRegistrySettings, redact_url
from mirrorspark.core.schemas.registry import SchemaReference, SchemaText, SubjectVersion
from mirrorspark.errors import SchemaRegistryError, SchemaSubjectConflictError

VERSIONS_PAGE: Final = 500
"""Most versions Apicurio's ``GET /subjects/{s}/versions`` lists (Confluent's lists all): a list this long is
completed up to ``/versions/latest``."""

CLIENT_DEFAULTS: Final[Mapping[str, int]] = MappingProxyType(
    {
        name: int(KEYS[SCHEMA_REGISTRY_PREFIX + name].default or 0)
        for name in ("timeout", "max.retries", "retries.wait.ms", "retries.max.wait.ms")
    }
)
"""What the adapter sets when ``<alias>.schema.registry.*`` leaves it unset: the keys' declared defaults, a 10 s
timeout per request (confluent-kafka's is none) and 3 retries after 0-100, 0-200, 0-400 ms (full jitter;
confluent-kafka's own wait up to 1, 2, 4 s), so that a registry that is down fails a call within a second."""

SUBJECT_NOT_FOUND: Final = 40401
SCHEMA_NOT_FOUND: Final = 40403
SUBJECT_LEVEL_NOT_CONFIGURED: Final = 40408
_RETRIABLE_STATUS: Final = frozenset({408, 429})
_URL_CREDENTIALS: Final = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*://)[^/?#@\s]*@")
_T = TypeVar("_T")


class RegistryClient:
    """One Schema Registry (Confluent's REST API; Apicurio's ``/apis/ccompat/v7`` too) as :class:`SchemaRegistryLike`.

    Parameters
    ----------
    settings:
        The cluster's registry (``<alias>.schema.registry.*``); :data:`CLIENT_DEFAULTS` fill what it leaves unset.
    alias:
        The cluster's alias, to name ``<alias>.schema.registry.url`` in messages; ``None``: named generically.
    client:
        confluent-kafka's client to use instead of one built from ``settings`` (tests).

    Cheap to build: confluent-kafka's client (an HTTP session, about 20 ms) is built at the first call, so a
    copy task builds its own from the settings it receives; pickling carries only ``settings`` and ``alias``.
    Thread-safe as confluent-kafka's client is. confluent-kafka caches schemas by id and registrations by
    (subject, schema) for the client's life. :meth:`close` (or leaving ``with``) ends the HTTP session.
    """

    def __init__(
        self,
        settings: SchemaRegistrySettings,
        *,
        alias: str | None = None,
        client: SchemaRegistryClient | None = None,
    ) -> None:
        self._settings = settings
        self._alias = alias
        self._client = client
        self._name = ",".join(redact_url(u) for u in settings.urls)
        self._url_key = f"{alias or '<alias>'}.schema.registry.url"

    @classmethod
    def from_settings(cls, settings: SchemaRegistrySettings, *, alias: str | None = None) -> RegistryClient:
        """Return a client of the registry ``settings`` name (nothing is contacted until the first call)."""
        return cls(settings, alias=alias)

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (self._settings, self._alias))

    def __repr__(self) -> str:
        return f"RegistryClient({self._name!r})"

    def __enter__(self) -> RegistryClient:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    @property
    def name(self) -> str:
        """The registry's URL(s), comma-separated, credentials masked."""
        return self._name

    def close(self) -> None:
        """End the HTTP session (idempotent); a later call opens a new one."""
        client, self._client = self._client, None
        if client is not None:
            client.close()

    def schema(self, schema_id: int) -> SchemaText | None:
        """``GET /schemas/ids/{id}``: the schema with this id, ``None`` if the registry has no such id."""
        what = f"reading schema id {schema_id}"
        return self._ask(what, lambda: _text(self._sr().get_schema(schema_id)), missing=(SCHEMA_NOT_FOUND,))

    def versions_of(self, schema_id: int) -> list[SubjectVersion]:
        """``GET /schemas/ids/{id}/versions``: every (subject, version) registered with this id (``[]``: none)."""
        what = f"reading the subjects and versions of schema id {schema_id}"
        found = self._ask(
            what,
            lambda: [
                SubjectVersion(str(p.subject), _num(p.version)) for p in self._sr().get_schema_versions(schema_id)
            ],
            missing=(SCHEMA_NOT_FOUND,),
        )
        return found or []

    def subjects(self) -> list[str]:
        """``GET /subjects``: the registry's subjects (soft-deleted ones left out)."""
        return [str(s) for s in self._must("listing its subjects", lambda: self._sr().get_subjects())]

    def versions(self, subject: str) -> list[int]:
        """``GET /subjects/{s}/versions``: the subject's versions in ascending order (``[]``: no such subject)."""
        what = f"reading the versions of subject '{subject}'"
        found = self._ask(what, lambda: self._sr().get_versions(subject), missing=(SUBJECT_NOT_FOUND,))
        versions = sorted(int(v) for v in found or ())
        if len(versions) >= VERSIONS_PAGE:  # Apicurio lists 500 at most: the rest up to the latest
            latest = self._must(what, lambda: self._sr().get_version(subject, "latest"))
            versions.extend(range(versions[-1] + 1, _num(latest.version) + 1))
        return versions

    def version(self, subject: str, version: int) -> tuple[int, SchemaText]:
        """``GET /subjects/{s}/versions/{v}``: the version's schema id and schema.

        Raises SchemaRegistryError when the registry has no such subject or version (or cannot be asked).
        """

        def ask() -> tuple[int, SchemaText]:
            registered = self._sr().get_version(subject, version)
            return _num(registered.schema_id), _text(registered.schema)

        return self._must(f"reading version {version} of subject '{subject}'", ask)

    def lookup(self, subject: str, schema: SchemaText) -> tuple[int, int] | None:
        """``POST /subjects/{s}``: ``(id, version)`` if ``subject`` holds ``schema``, else ``None``."""
        what = f"looking up a schema ({schema.schema_type}) in subject '{subject}'"

        def ask() -> tuple[int, int]:
            registered = self._sr().lookup_schema(subject, _schema(schema))
            return _num(registered.schema_id), _num(registered.version)

        return self._ask(what, ask, missing=(SUBJECT_NOT_FOUND, SCHEMA_NOT_FOUND))

    def register(self, subject: str, schema: SchemaText) -> int:
        """``POST /subjects/{s}/versions``: register ``schema`` under ``subject``, return its id (idempotent).

        A schema the subject already holds (any version) gives that version's id and no new version.

        Raises SchemaSubjectConflictError (HTTP 409) when the subject's compatibility level refuses it.
        """
        what = f"registering a schema ({schema.schema_type}) under subject '{subject}'"
        return int(self._must(what, lambda: self._sr().register_schema(subject, _schema(schema)), subject=subject))

    def compatibility(self, subject: str) -> str | None:
        """``GET /config/{s}``: the subject's own compatibility level (``"BACKWARD"``, ...), ``None`` if unset.

        On Apicurio, whose answer for a subject without a level is ``NONE``, a ``NONE`` is checked against
        ``?defaultToGlobal=true`` (see the module's notes): ``None`` when they differ.
        """
        what = f"reading the compatibility level of subject '{subject}'"
        missing = (SUBJECT_NOT_FOUND, SUBJECT_LEVEL_NOT_CONFIGURED)
        level = self._ask(what, lambda: str(self._sr().get_compatibility(subject)), missing=missing)
        if level != "NONE":
            return level
        rest = self._sr()._rest_client  # noqa: SLF001 - the public get_compatibility takes no query
        path = f"config/{quote(subject, safe='')}"
        in_force = self._must(what, lambda: str(rest.get(path, {"defaultToGlobal": "true"})["compatibilityLevel"]))
        return level if in_force == level else None

    def set_compatibility(self, subject: str, level: str) -> None:
        """``PUT /config/{s}``: set the subject's compatibility level."""
        what = f"setting the compatibility level of subject '{subject}' to {level}"
        self._must(what, lambda: self._sr().set_compatibility(subject, level))

    def _sr(self) -> SchemaRegistryClient:
        """confluent-kafka's client, built at the first call."""
        if self._client is None:
            self._client = SchemaRegistryClient({**CLIENT_DEFAULTS, **self._settings.to_client_config()})
        return self._client

    def _ask(self, what: str, call: Callable[[], _T], *, missing: tuple[int, ...]) -> _T | None:
        """Return ``call()``, ``None`` when the registry answers 404 with an error code in ``missing``."""
        try:
            return call()
        except Exception as e:
            if isinstance(e, ConfluentRegistryError) and e.http_status_code == 404 and e.error_code in missing:
                return None
            self._fail(e, what, None)

    def _must(self, what: str, call: Callable[[], _T], *, subject: str | None = None) -> _T:
        """Return ``call()``; a failure raises SchemaRegistryError (409: SchemaSubjectConflictError if ``subject``)."""
        try:
            return call()
        except Exception as e:
            self._fail(e, what, subject)

    def _fail(self, e: Exception, what: str, subject: str | None) -> NoReturn:
        """Raise the error of ``e``, a failure of the request for ``what``."""
        if not isinstance(e, ConfluentRegistryError):
            reason = f"{type(e).__name__}: {self._scrub(str(e)) or 'no detail'}"
            raise SchemaRegistryError(
                f"Schema Registry {self._name}: {what} got no answer ({reason}); is the registry running and "
                f"reachable, and is '{self._url_key}' right (Apicurio's Confluent API is <base>/apis/ccompat/v7)?",
                retriable=isinstance(e, _transport_errors()),
            ) from None
        status, code = e.http_status_code, e.error_code
        detail = self._scrub(str(e.error_message or ""))
        answer = f"HTTP {status}" + (f", error code {code}" if code not in (None, -1) else "") + f": {detail}"
        if status == 409 and subject is not None:
            raise SchemaSubjectConflictError(
                f"Schema Registry {self._name} refused {what} as incompatible with the subject's versions "
                f"({answer}): the subject's compatibility level (GET /config/{subject}) does not allow it"
            ) from None
        retriable = status >= 500 or status in _RETRIABLE_STATUS
        raise SchemaRegistryError(
            f"Schema Registry {self._name}: {what} failed ({answer}); {self._fix(status, code)}", retriable=retriable
        ) from None

    def _fix(self, status: int, code: int | None) -> str:
        """Return what to check after an HTTP error answer ``status`` with the registry's error ``code``."""
        key = self._url_key.removesuffix("url")
        if status in (401, 403):
            return f"check the registry's credentials ('{key}basic.auth.user.info' or '{key}bearer.auth.*')"
        if status == 404 and code is not None and code >= 40400:
            return "the registry does not hold it (never registered there, or deleted)"
        if status == 404:
            return f"check that '{self._url_key}' is the registry's API base (Apicurio's: <base>/apis/ccompat/v7)"
        if status >= 500 or status in _RETRIABLE_STATUS:
            return "the registry is failing or overloaded: check its log; the call is retried later"
        return "the registry refused the request: check the schema and the registry's log"

    def _scrub(self, text: str) -> str:
        """``text`` without any secret of the settings (credentials, tokens, key passwords) or of a URL."""
        text = _URL_CREDENTIALS.sub(lambda m: f"{m.group(1)}{MASK}@", text)
        for secret in _secrets(self._settings):
            text = text.replace(secret, MASK)
        return text


def _secrets(settings: SchemaRegistrySettings) -> list[str]:
    """Return the secrets of ``settings``, longest first: secret keys' values, their passwords, URL credentials."""
    found: set[str] = set()
    for name, value in settings.properties.items():
        if is_secret(name) and value:
            found.add(value)
            if name == "basic.auth.user.info" and ":" in value:
                found.add(value.split(":", 1)[1])
    for url in settings.urls:
        userinfo = urlsplit(url).netloc.rpartition("@")[0]
        found.update(part for part in (userinfo, userinfo.partition(":")[2]) if part)
    return sorted((s for s in found if len(s) >= 3), key=len, reverse=True)


def _transport_errors() -> tuple[type[Exception], ...]:
    """Return the exception classes of a request that got no answer (the httpx confluent-kafka uses)."""
    from confluent_kafka.schema_registry.common._httpx_compat import httpx

    return (httpx.TransportError,)


def _num(value: int | None) -> int:
    """Return ``value``, a number the registry's answer must hold (ValueError if it does not)."""
    if value is None:
        raise ValueError("the answer lacks an id or a version number")
    return int(value)


def _text(schema: Schema) -> SchemaText:
    """Return confluent-kafka's ``schema`` as a :class:`SchemaText` (a missing type is Avro, as the API defines)."""
    refs = tuple(SchemaReference(str(r.name), str(r.subject), _num(r.version)) for r in schema.references or ())
    return SchemaText(str(schema.schema_str), schema.schema_type or "AVRO", refs)


def _schema(text: SchemaText) -> Schema:
    """Return ``text`` as confluent-kafka's ``Schema``."""
    refs = [ConfluentReference(r.name, r.subject, r.version) for r in text.references]
    return Schema(text.schema, text.schema_type, refs)


def _rebuild(settings: SchemaRegistrySettings, alias: str | None) -> RegistryClient:
    """Pickle helper: a new client of the same registry."""
    return RegistryClient(settings, alias=alias)


__all__ = ["CLIENT_DEFAULTS", "RegistryClient"]
