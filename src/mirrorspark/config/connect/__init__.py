"""Kafka Connect-based MM2 deployments: connector configs read, checked and converted to and from mm2.properties.

Teams running MM2's connectors on Kafka Connect (Strimzi ``KafkaConnector`` resources, a Strimzi
``KafkaMirrorMaker2``, or connectors posted to Connect's REST API) point mirrorspark at those configs:
:mod:`~mirrorspark.config.connect.read` detects the shape by content, :mod:`~mirrorspark.config.connect.checks`
refuses what would run differently, :mod:`~mirrorspark.config.connect.to_properties` converts them into the
flat mm2.properties map :func:`~mirrorspark.config.parse.parse_config` takes, and
:mod:`~mirrorspark.config.connect.to_connectors` converts an mm2.properties file back into connectors.
"""

from mirrorspark.config.connect.model import CONNECTOR_CLASSES, Connector, ConnectorKind, kind_of_class
from mirrorspark.config.connect.read import read_connect
from mirrorspark.config.connect.shapes import ACCEPTED_SHAPES, ConnectInput
from mirrorspark.config.connect.to_properties import (
    DEFAULTS,
    ConnectDefaults,
    ConvertedProperties,
    connectors_to_properties,
)

__all__ = [
    "ACCEPTED_SHAPES",
    "CONNECTOR_CLASSES",
    "DEFAULTS",
    "ConnectDefaults",
    "ConnectInput",
    "Connector",
    "ConnectorKind",
    "ConvertedProperties",
    "connectors_to_properties",
    "kind_of_class",
    "read_connect",
]
