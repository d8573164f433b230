"""A cluster's Schema Registry settings (``<alias>.schema.registry.*``), frozen, secrets masked in ``repr``."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Final

from mirrorspark.config.keys import MASK, show

NUMERIC_NAMES: Final = frozenset(
    {"timeout", "cache.capacity", "cache.latest.ttl.sec", "max.retries", "retries.wait.ms", "retries.max.wait.ms"}
)
"""Client settings confluent-kafka takes as numbers (the rest are strings)."""
_NOT_CLIENT: Final = frozenset({"basic.auth.credentials.source"})  # Java's name, checked at parse, not the client's


_USER_INFO: Final = re.compile(r"^((?:[A-Za-z][A-Za-z0-9+.-]*://)?)[^?#]*@")  # over-masks a path with @, never leaks


def redact_url(url: str) -> str:
    """``url`` with its ``user:password@`` (if any, even without a scheme) replaced by :data:`MASK`."""
    return _USER_INFO.sub(lambda m: f"{m.group(1)}{MASK}@", url, count=1)


@dataclass(frozen=True, kw_only=True, repr=False)
class SchemaRegistrySettings:
    """One cluster's Schema Registry: its URLs and the client's auth and TLS settings.

    Parameters
    ----------
    urls:
        ``<alias>.schema.registry.url``, split: one or more ``http(s)://`` base URLs, tried in turn.
    properties:
        Every other ``<alias>.schema.registry.<name>`` as ``{name: value}``, named as confluent-kafka's
        ``SchemaRegistryClient`` names it (``basic.auth.user.info``, ``ssl.ca.location``, ``bearer.auth.*``,
        ``timeout`` in seconds, ...); read-only.

    Immutable, hashable, picklable; secrets (and credentials in a URL) masked in ``repr`` and ``str``.
    """

    urls: tuple[str, ...]
    properties: Mapping[str, str]

    def __post_init__(self) -> None:
        object.__setattr__(self, "urls", tuple(self.urls))
        object.__setattr__(self, "properties", MappingProxyType(dict(self.properties)))

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (self.urls, dict(self.properties)))

    def __hash__(self) -> int:
        return hash((self.urls, frozenset(self.properties.items())))

    def __repr__(self) -> str:
        urls = ", ".join(repr(redact_url(u)) for u in self.urls)
        props = ", ".join(f"{k!r}: {show(k, v)}" for k, v in self.properties.items())
        return f"SchemaRegistrySettings(urls=({urls}{',' if len(self.urls) == 1 else ''}), properties={{{props}}})"

    def __str__(self) -> str:
        return repr(self)

    def to_client_config(self) -> dict[str, Any]:
        """Return the configuration of confluent-kafka's ``SchemaRegistryClient`` (the one place it is made).

        ``url`` is the URLs joined by commas; numbers (:data:`NUMERIC_NAMES`) become ``int``; Java's
        ``basic.auth.credentials.source`` (already checked) is left out. Holds secrets: never log it.
        """
        config: dict[str, Any] = {"url": ",".join(self.urls)}
        for name, value in self.properties.items():
            if name not in _NOT_CLIENT:
                config[name] = int(value) if name in NUMERIC_NAMES else value
        return config


def _rebuild(urls: tuple[str, ...], properties: dict[str, str]) -> SchemaRegistrySettings:
    """Pickle helper: rebuild the settings."""
    return SchemaRegistrySettings(urls=urls, properties=properties)


__all__ = ["NUMERIC_NAMES", "SchemaRegistrySettings", "redact_url"]
