"""Secret values: which keys hold one (:func:`is_secret`) and how they are shown (never: :data:`MASK`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

_SECRET_MARKERS: Final = (
    "password",  # sasl.password, ssl.key.password, ssl.keystore.password, ssl.truststore.password
    "passphrase",
    "secret",  # sasl.oauthbearer.client.secret
    "sasl.jaas.config",
    "sasl.oauthbearer.config",
    "ssl.key",  # ssl.key.pem, ssl.key.location's password siblings
    "keystore.key",  # ssl.keystore.key (PEM private key)
    "private",
    "token",
    "basic.auth.user.info",
    "credential",
    "apikey",
    "api.key",
)
_MASK: Final = "******"
MASK: Final = _MASK
"""What replaces a secret value in every ``repr``, message and log line."""


def is_secret(key: str) -> bool:
    """Tell whether values of ``key`` must never be shown (passwords, JAAS configs, private keys, tokens)."""
    low = key.lower()
    return any(marker in low for marker in _SECRET_MARKERS)


def show(key: str, value: str) -> str:
    """``repr`` of ``value`` for messages, or the mask when ``key`` holds a secret."""
    return _MASK if is_secret(key) else repr(value)


def masked(conf: Mapping[str, Any]) -> dict[str, Any]:
    """Return a copy of a client configuration with every secret value replaced by :data:`MASK`."""
    return {k: MASK if isinstance(k, str) and is_secret(k) else v for k, v in conf.items()}


__all__ = ["MASK", "is_secret", "masked", "show"]
