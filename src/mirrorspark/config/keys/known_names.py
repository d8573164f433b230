"""The names Kafka's Java clients, librdkafka, MM2 and Kafka Connect know, read from committed lists.

The lists (``data/``) were generated once from the libraries mirrorspark runs with, and are reviewed
like code: ``kafka-4.3.1.txt`` from Kafka's ``ConfigDef`` objects (``ProducerConfig``, ``ConsumerConfig``,
``AdminClientConfig``; MM2's ``MirrorMakerConfig``, ``MirrorSourceConfig``, ``MirrorCheckpointConfig``,
``MirrorHeartbeatConfig``; Connect's ``SourceConnectorConfig`` and ``DistributedConfig``) by
``tools/config_names/Dump.java``, ``librdkafka-2.16.0.txt`` from librdkafka's CONFIGURATION.md property
table by ``tools/config_names/librdkafka_names.py``. Regenerate them when Kafka or confluent-kafka is upgraded.
"""

from __future__ import annotations

from importlib.resources import files
from typing import Final

_DATA: Final = files("mirrorspark.config.keys").joinpath("data")
_KAFKA_LIST: Final = "kafka-4.3.1.txt"
_LIBRDKAFKA_LIST: Final = "librdkafka-2.16.0.txt"
_CLIENT_KINDS: Final = frozenset({"producer", "consumer", "admin"})


def _lines(name: str) -> list[str]:
    """Return the non-comment, non-blank lines of the list ``name``."""
    text = _DATA.joinpath(name).read_text(encoding="utf-8")
    return [line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#")]


def _kafka_names() -> tuple[frozenset[str], frozenset[str]]:
    """``(Java client names, MM2 and Connect names)`` of the Kafka list."""
    clients: set[str] = set()
    connect: set[str] = set()
    for line in _lines(_KAFKA_LIST):
        kind, _, name = line.partition(" ")
        (clients if kind in _CLIENT_KINDS else connect).add(name)
    return frozenset(clients), frozenset(connect)


JAVA_CLIENT_NAMES, CONNECT_NAMES = _kafka_names()
"""Kafka's Java producer, consumer and admin client config names; MM2's and Kafka Connect's config names."""

LIBRDKAFKA_NAMES: Final[frozenset[str]] = frozenset(_lines(_LIBRDKAFKA_LIST))
"""librdkafka's configuration properties (global and topic), as confluent-kafka accepts them."""

CLIENT_PROPERTY_NAMES: Final[frozenset[str]] = JAVA_CLIENT_NAMES | LIBRDKAFKA_NAMES
"""Every client property a config file may set for a client: a Java client name or a librdkafka one."""


def is_client_property(name: str) -> bool:
    """Whether ``name`` is a Kafka Java client property or a librdkafka property."""
    return name in CLIENT_PROPERTY_NAMES


__all__ = ["CLIENT_PROPERTY_NAMES", "CONNECT_NAMES", "JAVA_CLIENT_NAMES", "LIBRDKAFKA_NAMES", "is_client_property"]
