"""Kafka clients built from client settings: the one ``client.id`` rule, the one builder, librdkafka's log.

Every confluent-kafka client mirrorspark creates on the driver is built by :func:`create` from a
:class:`~mirrorspark.config.model.ClientSettings`, with a ``client.id`` that says who it is,
MM2's way: ``<source>-><target>|mirrorspark|<purpose>`` (:func:`client_conf`, the one rule;
a user's ``client.id`` is kept as prefix). Control classes get their clients through a
:class:`ClientFactory` (the seam unit tests fill with in-memory fakes); the real one,
:class:`KafkaClients`, translates each distinct settings object to librdkafka once and calls
:func:`create`. librdkafka's own log lines go to Python logging (:class:`LibrdkafkaLog`).
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, Final, Literal, Protocol, overload

from confluent_kafka import (
    Consumer,
    KafkaError,
    KafkaException,
    Producer,
)
from confluent_kafka.admin import (
    AdminClient,
)

from mirrorspark.config.keys import show
from mirrorspark.config.model import ClientSettings
from mirrorspark.errors import ConfigError

LIBRDKAFKA_LOGGER = "mirrorspark.librdkafka"
"""Python logger of librdkafka's lines from every client mirrorspark creates, never stderr (CLI: ``--verbose``)."""


class LibrdkafkaLog:
    """librdkafka's log of one client, summarised into the :data:`LIBRDKAFKA_LOGGER` Python logger.

    Each distinct line (digits ignored) is logged once at librdkafka's level (at most WARNING), repeats at DEBUG.
    Not picklable (a lock): Spark tasks create their own.
    """

    MAX_DISTINCT = 1000
    """Distinct lines remembered per client; past that the memory starts over."""

    def __init__(self, client_id: str, logger: logging.Logger | None = None) -> None:
        self.client_id = client_id
        self.logger = logger if logger is not None else logging.getLogger(LIBRDKAFKA_LOGGER)
        self._seen: dict[str, int] = {}
        self._lock = threading.Lock()

    def log(self, level: int, msg: str, *args: Any) -> None:
        """Log one librdkafka line (the method confluent-kafka calls: ``log(level, fmt, *args)``)."""
        text = msg % args if args else msg
        key = _DIGITS.sub("#", text)
        with self._lock:
            if len(self._seen) >= self.MAX_DISTINCT and key not in self._seen:
                self._seen.clear()
            n = self._seen.get(key, 0) + 1
            self._seen[key] = n
        if n == 1:  # librdkafka names the client by its client.id in the line already
            self.logger.log(min(level, logging.WARNING), "%s", text)
        elif self.logger.isEnabledFor(logging.DEBUG):
            self.logger.debug("%s (%d times)", text, n)


_DIGITS = re.compile(r"\d+")


def with_logger(conf: dict[str, Any], client_id: str) -> dict[str, Any]:
    """Give a client configuration a :class:`LibrdkafkaLog` as ``logger``, unless it has a logger already."""
    conf.setdefault("logger", LibrdkafkaLog(client_id))
    return conf


def serve_logs(client: object) -> None:
    """Hand the log lines librdkafka queued for ``client`` to Python logging (``poll(0)``; no-op without it)."""
    poll = getattr(client, "poll", None)
    if poll is not None:
        poll(0)


def client_conf(
    translated: Mapping[str, Any],
    client_id: str,
    *,
    defaults: Mapping[str, Any] | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Build the librdkafka configuration of one client: the one place the ``client.id`` rule is applied.

    MM2's rule, ``<source>-><target>|<component>|<purpose>``; a ``client.id`` the user set stays as a prefix.
    """
    conf: dict[str, Any] = {"log_level": 3}  # librdkafka: errors only unless the user asks for more
    if defaults:
        conf.update(defaults)
    conf.update(translated)
    user_id = conf.get("client.id")
    conf["client.id"] = f"{user_id}|{client_id}" if user_id else client_id
    if overrides:
        conf.update(overrides)
    return conf


_LIBRDKAFKA_ALIASES = {
    # librdkafka reports a property under its canonical name; the names a config file may use for it
    "queue.buffering.max.ms": ("linger.ms",),
    "request.required.acks": ("acks",),
    "message.send.max.retries": ("retries",),
    "max.in.flight.requests.per.connection": ("max.in.flight",),
    "compression.codec": ("compression.type",),
    "socket.receive.buffer.bytes": ("receive.buffer.bytes",),
    "socket.send.buffer.bytes": ("send.buffer.bytes",),
    "message.timeout.ms": ("delivery.timeout.ms",),
    "fetch.wait.max.ms": ("fetch.max.wait.ms",),
    "message.max.bytes": ("max.request.size",),
    "ssl.key.pem": ("ssl.keystore.key",),
    "ssl.certificate.pem": ("ssl.keystore.certificate.chain",),
    "ssl.ca.pem": ("ssl.truststore.certificates",),
}

CLUSTER_ALIAS_PLACEHOLDER = "<alias>"
"""Stands for the cluster alias in a :func:`create` error message until a caller that knows it fills it in."""

ClientKind = Literal["admin", "producer", "consumer"]
"""Which confluent-kafka client: ``AdminClient``, ``Producer`` or ``Consumer``."""

_CLIENT_CLASSES: Final[Mapping[ClientKind, Callable[[dict[str, Any]], Any]]] = MappingProxyType(
    {"admin": AdminClient, "producer": Producer, "consumer": Consumer}
)


@overload
def create(
    kind: Literal["admin"],
    settings: ClientSettings,
    *,
    client_id: str,
    overrides: Mapping[str, Any] | None = None,
    translated: Mapping[str, Any] | None = None,
) -> AdminClient: ...
@overload
def create(
    kind: Literal["producer"],
    settings: ClientSettings,
    *,
    client_id: str,
    overrides: Mapping[str, Any] | None = None,
    translated: Mapping[str, Any] | None = None,
) -> Producer: ...
@overload
def create(
    kind: Literal["consumer"],
    settings: ClientSettings,
    *,
    client_id: str,
    overrides: Mapping[str, Any] | None = None,
    translated: Mapping[str, Any] | None = None,
) -> Consumer: ...
def create(
    kind: ClientKind,
    settings: ClientSettings,
    *,
    client_id: str,
    overrides: Mapping[str, Any] | None = None,
    translated: Mapping[str, Any] | None = None,
) -> AdminClient | Producer | Consumer:
    """Create a confluent-kafka client from client settings: the one place mirrorspark builds one.

    A consumer only ever uses ``assign()``: auto-commit is off and a derived ``group.id`` is never joined. Raises
    ConfigError when librdkafka rejects a property, naming it as the config file has it (secrets masked).
    """
    conf = client_conf(settings.to_librdkafka() if translated is None else translated, client_id, overrides=overrides)
    if kind == "consumer":
        conf.setdefault("group.id", "mirrorspark-" + client_id.split("|", 1)[0])
        conf["enable.auto.commit"] = False
    try:
        client: AdminClient | Producer | Consumer = _CLIENT_CLASSES[kind](with_logger(conf, client_id))
    except (KafkaException, ValueError, TypeError) as e:
        err = e.args[0] if e.args else None
        reason = err.str() if isinstance(err, KafkaError) else str(e)
        raise ConfigError(_client_config_message(kind, reason, settings, client_id)) from None
    return client


def _client_config_message(kind: str, reason: str, settings: ClientSettings, client_id: str) -> str:
    # librdkafka: 'Invalid value "SSLL" for configuration property "security.protocol"': the property, not the value
    quoted = re.findall(r'property:? "([^"]+)"', reason) or re.findall(r'"([^"]+)"', reason)
    quoted = quoted or re.findall(r"property:? ([\w.]+)", reason)
    lib_key = quoted[0] if quoted else None
    names = (lib_key, *_LIBRDKAFKA_ALIASES.get(lib_key, ())) if lib_key else ()
    java_key = next((k for k in settings.properties if k in names), lib_key)
    what = f"{kind} client property"
    if java_key is not None and java_key in settings.properties:
        what += f" {java_key!r} = {show(java_key, settings.properties[java_key])}"
    elif java_key is not None:
        what += f" {java_key!r}"
    a = CLUSTER_ALIAS_PLACEHOLDER
    fix = (
        f"fix or remove '{a}.{kind}.{java_key}' or '{a}.{java_key}' (or a flow-level '<source>-><target>.<source|"
        f"target>.{kind}.{java_key}') in the config file"
        if java_key
        else f"check the {kind} settings of cluster '{a}' in the config file"
    )
    return f"invalid {what} for client '{client_id}': librdkafka says: {reason}; {fix}"


class ClientFactory(Protocol):
    """Creates the Kafka clients of mirrorspark's control classes (the seam unit tests replace)."""

    def librdkafka(self, settings: ClientSettings) -> Mapping[str, Any]:
        """Return ``settings`` translated to librdkafka (read-only; translated once per distinct settings).

        Raises ConfigError (as :meth:`~mirrorspark.config.ClientSettings.to_librdkafka`).
        """
        ...

    def admin(
        self, settings: ClientSettings, *, client_id: str, overrides: Mapping[str, Any] | None = None
    ) -> AdminClient:
        """Create an admin client for ``settings``. Raises ConfigError (as :func:`create`)."""
        ...

    def producer(
        self, settings: ClientSettings, *, client_id: str, overrides: Mapping[str, Any] | None = None
    ) -> Producer:
        """Create a producer for ``settings``. Raises ConfigError (as :func:`create`)."""
        ...

    def consumer(
        self, settings: ClientSettings, *, client_id: str, overrides: Mapping[str, Any] | None = None
    ) -> Consumer:
        """Create an assign-only consumer for ``settings``. Raises ConfigError (as :func:`create`)."""
        ...


class KafkaClients:
    """The real :class:`ClientFactory`: confluent-kafka clients, each settings translated once; thread-safe."""

    def __init__(self) -> None:
        self._translated: dict[ClientSettings, Mapping[str, Any]] = {}
        self._lock = threading.Lock()

    def librdkafka(self, settings: ClientSettings) -> Mapping[str, Any]:
        """See :meth:`ClientFactory.librdkafka` (a ``MappingProxyType``; a failed translation is not remembered)."""
        with self._lock:
            done = self._translated.get(settings)
        if done is None:
            done = MappingProxyType(settings.to_librdkafka())
            with self._lock:
                done = self._translated.setdefault(settings, done)
        return done

    def admin(
        self, settings: ClientSettings, *, client_id: str, overrides: Mapping[str, Any] | None = None
    ) -> AdminClient:
        """See :meth:`ClientFactory.admin`."""
        return create("admin", settings, client_id=client_id, overrides=overrides, translated=self.librdkafka(settings))

    def producer(
        self, settings: ClientSettings, *, client_id: str, overrides: Mapping[str, Any] | None = None
    ) -> Producer:
        """See :meth:`ClientFactory.producer`."""
        return create(
            "producer", settings, client_id=client_id, overrides=overrides, translated=self.librdkafka(settings)
        )

    def consumer(
        self, settings: ClientSettings, *, client_id: str, overrides: Mapping[str, Any] | None = None
    ) -> Consumer:
        """See :meth:`ClientFactory.consumer`."""
        return create(
            "consumer", settings, client_id=client_id, overrides=overrides, translated=self.librdkafka(settings)
        )


__all__ = [
    "CLUSTER_ALIAS_PLACEHOLDER",
    "LIBRDKAFKA_LOGGER",
    "ClientFactory",
    "ClientKind",
    "KafkaClients",
    "LibrdkafkaLog",
    "client_conf",
    "create",
    "serve_logs",
    "with_logger",
]
