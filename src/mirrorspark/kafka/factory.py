"""Kafka clients built from client settings: the one ``client.id`` rule, the client factories, librdkafka's log.

Every confluent-kafka client mirrorspark creates is built here from a
:class:`~mirrorspark.config.model.ClientSettings`, with a ``client.id`` that says who it is,
MM2's way: ``<source>-><target>|mirrorspark|<role>`` (:func:`client_conf`, the one rule;
a user's ``client.id`` is kept as prefix). Control classes get their clients through a
:class:`ClientFactory` (the seam unit tests fill with in-memory fakes); the real one,
:class:`KafkaClients`, translates each distinct settings object to librdkafka once.
librdkafka's own log lines go to Python logging (:class:`LibrdkafkaLog`).
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, Protocol, TypeVar

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

T = TypeVar("T")


LIBRDKAFKA_LOGGER = "mirrorspark.librdkafka"
"""Python logger for librdkafka's own log lines: every client mirrorspark creates (driver and Spark
tasks) logs there through a :class:`LibrdkafkaLog`, never to stderr; the CLI shows it only with
``--verbose`` (its own one-line errors report what failed)."""


class LibrdkafkaLog:
    """librdkafka's log of one client, summarised into the :data:`LIBRDKAFKA_LOGGER` Python logger.

    Given as confluent-kafka's ``logger`` setting, so that librdkafka's lines (``%3|...|FAIL|...``
    on stderr otherwise) become Python log records. The first occurrence of each distinct line
    (digits ignored: the same failure with another duration or port is the same line) is logged
    at librdkafka's level, at most WARNING; repeats are logged at DEBUG with their count. With one
    unreachable cluster librdkafka repeats its connection failure several times a second: a
    Python application at WARNING sees it once per client.

    Parameters
    ----------
    client_id:
        The client's ``client.id`` (who it is: flow and role); librdkafka's lines name the client
        by it already.
    logger:
        Where to log (default: :data:`LIBRDKAFKA_LOGGER`).

    Notes
    -----
    librdkafka queues its lines until the client is polled (``poll``/``consume``/``flush``; the
    admin helpers of this module poll their client). Not picklable (it holds a lock): Spark tasks
    create their own (``logger`` is set where the client is created, never in a task's configuration).
    """

    MAX_DISTINCT = 1000
    """Distinct lines remembered per client; past that the memory starts over."""

    def __init__(self, client_id: str, logger: logging.Logger | None = None) -> None:
        self.client_id = client_id
        self.logger = logger if logger is not None else logging.getLogger(LIBRDKAFKA_LOGGER)
        self._seen: dict[str, int] = {}
        self._lock = threading.Lock()

    def log(self, level: int, msg: str, *args: Any) -> None:
        """Log one librdkafka line (the method confluent-kafka calls: ``log(level, fmt, *args)``).

        Parameters
        ----------
        level:
            Python level confluent-kafka mapped librdkafka's syslog level to.
        msg, args:
            ``%``-format and arguments (facility, client instance name, text).
        """
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
    """Give a client configuration a :class:`LibrdkafkaLog` as ``logger``, unless it has a logger already.

    Parameters
    ----------
    conf:
        A librdkafka configuration (changed in place).
    client_id:
        Who the client is.

    Returns
    -------
    dict[str, Any]
        ``conf``.
    """
    conf.setdefault("logger", LibrdkafkaLog(client_id))
    return conf


def serve_logs(client: Any) -> None:
    """Hand the log lines librdkafka queued for ``client`` to Python logging (``poll(0)``; no-op without it).

    Parameters
    ----------
    client:
        An admin client, producer or anything with ``poll``.
    """
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

    The rule (MM2's, ``<source>-><target>|<component>|<role>``): ``client_id`` says who the
    client is, e.g. ``"A->B|mirrorspark|replication-producer"``; a ``client.id`` the user set
    in the role's settings is kept as a prefix, ``"<user id>|A->B|mirrorspark|..."``, so that
    broker quotas and logs keyed on it still match. Every client mirrorspark creates, on the
    driver and in the Spark tasks, gets its ``client.id`` from here.

    Parameters
    ----------
    translated:
        The role's settings already translated to librdkafka
        (:meth:`~mirrorspark.config.ClientSettings.to_librdkafka`).
    client_id:
        Who the client is (see above).
    defaults:
        librdkafka settings the user's settings may override (e.g. ``linger.ms``).
    overrides:
        librdkafka settings that win over the user's settings (e.g. ``enable.idempotence``).

    Returns
    -------
    dict[str, Any]
        A new dict; librdkafka logs errors only (``log_level=3``) unless the settings say otherwise.
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


def _conf(settings: ClientSettings, client_id: str, overrides: Mapping[str, Any] | None) -> dict[str, Any]:
    return client_conf(settings.to_librdkafka(), client_id, overrides=overrides)


def _consumer_conf(conf: dict[str, Any], client_id: str) -> dict[str, Any]:
    conf.setdefault("group.id", "mirrorspark-" + client_id.split("|", 1)[0])
    conf["enable.auto.commit"] = False
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
"""Stands for the cluster alias in a :func:`create_client` error message until a caller that knows it
(:class:`~mirrorspark.client.context.FlowContext`) fills it in."""


def create_client(
    kind: str, cls: Callable[[dict[str, Any]], T], conf: dict[str, Any], settings: ClientSettings, client_id: str
) -> T:
    """Create a confluent-kafka client; a property librdkafka rejects becomes a :class:`ConfigError`.

    librdkafka checks every property when the client is created (``KafkaException``
    ``_INVALID_ARG``: unknown property, invalid value; ``ValueError``/``TypeError`` from
    confluent-kafka): the message names the property as the config file has it (value masked
    when secret), the client and where to fix it.

    Parameters
    ----------
    kind:
        ``"admin"``, ``"producer"`` or ``"consumer"``: the client role whose settings hold the property.
    cls:
        ``AdminClient``, ``Producer`` or ``Consumer``.
    conf:
        The librdkafka configuration.
    settings:
        The Java settings it was translated from (to name the property as written).
    client_id:
        Who the client is (``client.id`` rule), e.g. ``"A->B|mirrorspark|replication-source-admin"``.

    Returns
    -------
    T
        The client.

    Raises
    ------
    ConfigError
        librdkafka rejected a property, e.g. ``invalid admin client property 'linger.ms' = 'x' ...:
        fix or remove '<alias>.admin.linger.ms' or '<alias>.linger.ms'`` (:data:`CLUSTER_ALIAS_PLACEHOLDER`
        stands for the cluster alias).
    """
    try:
        return cls(conf)
    except (KafkaException, ValueError, TypeError) as e:
        err = e.args[0] if e.args else None
        reason = err.str() if isinstance(err, KafkaError) else str(e)
        raise ConfigError(_client_config_message(kind, reason, settings, client_id)) from None


def _client_config_message(kind: str, reason: str, settings: ClientSettings, client_id: str) -> str:
    quoted = re.findall(r'"([^"]+)"', reason) or re.findall(r"property:? ([\w.]+)", reason)
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


def admin_client(
    settings: ClientSettings, *, client_id: str, overrides: Mapping[str, Any] | None = None
) -> AdminClient:
    """Create an admin client.

    Parameters
    ----------
    settings:
        The role's client settings (e.g. ``FlowConfig.source_admin``).
    client_id:
        Who this client is, e.g. ``"A->B|mirrorspark|replication-source-admin"`` (see :func:`client_conf`).
    overrides:
        librdkafka settings that win over the settings (e.g. ``{"logger": ...}``).
    """
    return create_client(
        "admin", AdminClient, with_logger(_conf(settings, client_id, overrides), client_id), settings, client_id
    )


def producer(settings: ClientSettings, *, client_id: str, overrides: Mapping[str, Any] | None = None) -> Producer:
    """Create a producer; ``overrides`` win over the settings (e.g. ``enable.idempotence``)."""
    return create_client(
        "producer", Producer, with_logger(_conf(settings, client_id, overrides), client_id), settings, client_id
    )


def consumer(settings: ClientSettings, *, client_id: str, overrides: Mapping[str, Any] | None = None) -> Consumer:
    """Create a consumer that only ever uses ``assign()`` (no group membership, no commits).

    librdkafka requires a ``group.id``; when the settings have none, one derived
    from ``client_id`` is set, which is never joined nor committed to.
    """
    conf = with_logger(_consumer_conf(_conf(settings, client_id, overrides), client_id), client_id)
    return create_client("consumer", Consumer, conf, settings, client_id)


class ClientFactory(Protocol):
    """Creates the Kafka clients of mirrorspark's control classes (the seam unit tests replace).

    Every control class (``Flow``, ``CheckpointEmitter``, ``HeartbeatEmitter``, ``LiveFilters``,
    ``ControlStore``, ``TopicAclSync``, ``TotalsPublisher``, ``ConsumerMigration``, the topic
    readers) gets its clients from one of these instead of constructing confluent-kafka clients
    itself. :class:`KafkaClients` is the real one; ``tests/fakes.py`` has an in-memory one.
    The returned objects need only offer the confluent-kafka methods mirrorspark calls.
    """

    def librdkafka(self, settings: ClientSettings) -> Mapping[str, Any]:
        """Return ``settings`` translated to librdkafka (read-only; translated once per distinct settings).

        Parameters
        ----------
        settings:
            A role's Java client settings.

        Returns
        -------
        Mapping[str, Any]
            The librdkafka configuration, without the ``client.id`` rule; callers must not change it.

        Raises
        ------
        ConfigError
            As :meth:`~mirrorspark.config.ClientSettings.to_librdkafka`.
        """
        ...

    def admin(
        self, settings: ClientSettings, *, client_id: str, overrides: Mapping[str, Any] | None = None
    ) -> AdminClient:
        """Create an admin client for ``settings`` (see :func:`admin_client`).

        Parameters
        ----------
        settings:
            The role's Java client settings (e.g. ``FlowConfig.source_admin``).
        client_id:
            Who the client is, e.g. ``"A->B|mirrorspark|replication-source-admin"``
            (:func:`client_conf` applies the ``client.id`` rule).
        overrides:
            librdkafka settings that win over the settings (e.g. ``{"logger": ...}``).

        Returns
        -------
        AdminClient
            A new client, or an object offering the ``AdminClient`` methods mirrorspark calls.

        Raises
        ------
        ConfigError
            As :meth:`~mirrorspark.config.ClientSettings.to_librdkafka`.
        """
        ...

    def producer(
        self, settings: ClientSettings, *, client_id: str, overrides: Mapping[str, Any] | None = None
    ) -> Producer:
        """Create a producer for ``settings`` (see :func:`producer`).

        Parameters
        ----------
        settings:
            The role's Java client settings (e.g. ``FlowConfig.target_producer``).
        client_id:
            Who the client is, e.g. ``"A->B|mirrorspark|heartbeats-target-producer"``
            (:func:`client_conf` applies the ``client.id`` rule).
        overrides:
            librdkafka settings that win over the settings (e.g. ``{"enable.idempotence": True}``).

        Returns
        -------
        Producer
            A new client, or an object offering the ``Producer`` methods mirrorspark calls.

        Raises
        ------
        ConfigError
            As :meth:`~mirrorspark.config.ClientSettings.to_librdkafka`.
        """
        ...

    def consumer(
        self, settings: ClientSettings, *, client_id: str, overrides: Mapping[str, Any] | None = None
    ) -> Consumer:
        """Create an assign-only consumer for ``settings`` (see :func:`consumer`).

        Parameters
        ----------
        settings:
            The role's Java client settings (e.g. ``FlowConfig.target_consumer``).
        client_id:
            Who the client is, e.g. ``"A->B|mirrorspark|checkpoints-target-consumer"``
            (:func:`client_conf` applies the ``client.id`` rule).
        overrides:
            librdkafka settings that win over the settings.

        Returns
        -------
        Consumer
            A new client that never joins nor commits to its ``group.id``, or an object offering
            the ``Consumer`` methods mirrorspark calls.

        Raises
        ------
        ConfigError
            As :meth:`~mirrorspark.config.ClientSettings.to_librdkafka`.
        """
        ...


class KafkaClients:
    """The real :class:`ClientFactory`: confluent-kafka clients, settings translated once.

    :meth:`~mirrorspark.config.ClientSettings.to_librdkafka` can open trust and key stores
    to sniff their format, so its result is kept per distinct :class:`ClientSettings` for the
    factory's lifetime: a process creating clients (and Spark task configurations) again and
    again translates each role's settings once. Thread-safe.

    Notes
    -----
    The counterpart of the client construction in MM2's ``MirrorUtils``/``MirrorConnectorConfig``
    (one ``Map`` of client properties per role, built when the connector starts).
    """

    def __init__(self) -> None:
        self._translated: dict[ClientSettings, Mapping[str, Any]] = {}
        self._lock = threading.Lock()

    def librdkafka(self, settings: ClientSettings) -> Mapping[str, Any]:
        """Return ``settings`` translated to librdkafka, once per distinct settings (read-only mapping).

        Parameters
        ----------
        settings:
            A role's Java client settings (equal settings share one translation).

        Returns
        -------
        Mapping[str, Any]
            A read-only ``MappingProxyType``, without the ``client.id`` rule.

        Raises
        ------
        ConfigError
            As :meth:`~mirrorspark.config.ClientSettings.to_librdkafka` (not remembered: the
            next call translates again).
        """
        with self._lock:
            done = self._translated.get(settings)
        if done is None:
            done = MappingProxyType(settings.to_librdkafka())
            with self._lock:
                done = self._translated.setdefault(settings, done)
        return done

    def conf(
        self, settings: ClientSettings, client_id: str, overrides: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        """Build the librdkafka configuration of one client of ``settings`` (:func:`client_conf`).

        Parameters
        ----------
        settings:
            The role's Java client settings.
        client_id:
            Who the client is (the ``client.id`` rule of :func:`client_conf`).
        overrides:
            librdkafka settings that win over the settings.

        Returns
        -------
        dict[str, Any]
            A new dict the caller may change.

        Raises
        ------
        ConfigError
            As :meth:`~mirrorspark.config.ClientSettings.to_librdkafka`.
        """
        return client_conf(self.librdkafka(settings), client_id, overrides=overrides)

    def admin(
        self, settings: ClientSettings, *, client_id: str, overrides: Mapping[str, Any] | None = None
    ) -> AdminClient:
        """Create an admin client (see :func:`admin_client`).

        Parameters
        ----------
        settings:
            The role's Java client settings (e.g. ``FlowConfig.source_admin``).
        client_id:
            Who the client is, e.g. ``"A->B|mirrorspark|replication-source-admin"``
            (:func:`client_conf` applies the ``client.id`` rule).
        overrides:
            librdkafka settings that win over the settings (e.g. ``{"logger": ...}``).

        Returns
        -------
        AdminClient
            A new confluent-kafka admin client.

        Raises
        ------
        ConfigError
            As :meth:`~mirrorspark.config.ClientSettings.to_librdkafka`.
        """
        conf = with_logger(self.conf(settings, client_id, overrides), client_id)
        return create_client("admin", AdminClient, conf, settings, client_id)

    def producer(
        self, settings: ClientSettings, *, client_id: str, overrides: Mapping[str, Any] | None = None
    ) -> Producer:
        """Create a producer (see :func:`producer`).

        Parameters
        ----------
        settings:
            The role's Java client settings (e.g. ``FlowConfig.target_producer``).
        client_id:
            Who the client is, e.g. ``"A->B|mirrorspark|heartbeats-target-producer"``
            (:func:`client_conf` applies the ``client.id`` rule).
        overrides:
            librdkafka settings that win over the settings (e.g. ``{"enable.idempotence": True}``).

        Returns
        -------
        Producer
            A new confluent-kafka producer.

        Raises
        ------
        ConfigError
            As :meth:`~mirrorspark.config.ClientSettings.to_librdkafka`.
        """
        conf = with_logger(self.conf(settings, client_id, overrides), client_id)
        return create_client("producer", Producer, conf, settings, client_id)

    def consumer(
        self, settings: ClientSettings, *, client_id: str, overrides: Mapping[str, Any] | None = None
    ) -> Consumer:
        """Create an assign-only consumer (see :func:`consumer`).

        Parameters
        ----------
        settings:
            The role's Java client settings (e.g. ``FlowConfig.target_consumer``).
        client_id:
            Who the client is, e.g. ``"A->B|mirrorspark|checkpoints-target-consumer"``
            (:func:`client_conf` applies the ``client.id`` rule).
        overrides:
            librdkafka settings that win over the settings.

        Returns
        -------
        Consumer
            A new confluent-kafka consumer; when the settings have no ``group.id``, one derived
            from ``client_id`` is set, which is never joined nor committed to.

        Raises
        ------
        ConfigError
            As :meth:`~mirrorspark.config.ClientSettings.to_librdkafka`.
        """
        conf = with_logger(_consumer_conf(self.conf(settings, client_id, overrides), client_id), client_id)
        return create_client("consumer", Consumer, conf, settings, client_id)


__all__ = [
    "CLUSTER_ALIAS_PLACEHOLDER",
    "LIBRDKAFKA_LOGGER",
    "ClientFactory",
    "KafkaClients",
    "LibrdkafkaLog",
    "admin_client",
    "client_conf",
    "consumer",
    "create_client",
    "producer",
    "serve_logs",
    "with_logger",
]
