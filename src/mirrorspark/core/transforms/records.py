"""What a transform sees and what it is: Connect's record under MM2's ``ByteArrayConverter``, the class names."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Protocol, runtime_checkable

Header = tuple[str, bytes | None]
"""One record header: name and value bytes (``None`` = a null header value), as confluent-kafka gives it."""

TRANSFORMS_PACKAGE: Final = "org.apache.kafka.connect.transforms."
PREDICATES_PACKAGE: Final = "org.apache.kafka.connect.transforms.predicates."

FILTER: Final = TRANSFORMS_PACKAGE + "Filter"
INSERT_HEADER: Final = TRANSFORMS_PACKAGE + "InsertHeader"
DROP_HEADERS: Final = TRANSFORMS_PACKAGE + "DropHeaders"
REGEX_ROUTER: Final = TRANSFORMS_PACKAGE + "RegexRouter"
TOPIC_NAME_MATCHES: Final = PREDICATES_PACKAGE + "TopicNameMatches"
HAS_HEADER_KEY: Final = PREDICATES_PACKAGE + "HasHeaderKey"
RECORD_IS_TOMBSTONE: Final = PREDICATES_PACKAGE + "RecordIsTombstone"

SCHEMA_TRANSFORMS: Final = (
    "Cast",
    "ExtractField",
    "Flatten",
    "HeaderFrom",
    "HoistField",
    "InsertField",
    "MaskField",
    "ReplaceField",
    "SetSchemaMetadata",
    "TimestampConverter",
    "ValueToKey",
)
"""Connect transforms that need a key or value with a schema (or a map): impossible on byte arrays."""


@dataclass(slots=True)
class ConnectRecord:
    """A record as a transform sees it (Connect's ``SourceRecord`` under MM2's ``ByteArrayConverter``).

    A new instance per record, never shared: a transform may return it changed, or a new one
    (``dataclasses.replace``). Not frozen, because it is made for every record a flow with
    transforms copies (a frozen dataclass costs four times as much to make).

    Attributes
    ----------
    topic:
        The **remote** topic name (the replication policy already named it), as in MM2.
    partition:
        The partition (the source partition, which is also the remote one).
    key, value:
        The raw bytes; ``None`` for a null key or value (a tombstone has ``value=None``).
    headers:
        The headers in order, names as ``str``, values as bytes (or ``None``).
    timestamp_ms:
        The record's timestamp (epoch ms); ``0`` when the source record has none.
    """

    topic: str
    partition: int
    key: bytes | None
    value: bytes | None
    headers: tuple[Header, ...] = ()
    timestamp_ms: int = 0


@runtime_checkable
class Transformation(Protocol):
    """A user transform (Connect's ``Transformation``), loaded from ``transforms.<t>.type = package.module:Class``.

    The class is instantiated with no arguments on the driver at start; if it has
    ``configure(props)``, that is called with its ``transforms.<t>.*`` keys (prefix removed, ``type``,
    ``predicate`` and ``negate`` left out), as Connect's ``Configurable``. The object is then pickled to
    the Spark executors, so it must be picklable and its module importable there.
    """

    def apply(self, record: ConnectRecord) -> ConnectRecord | None:
        """Return the transformed record, or ``None`` to drop it.

        The result may change ``key``, ``value``, ``headers`` and ``timestamp_ms``; a changed
        ``topic`` or ``partition`` fails the copy task (records are copied to the same partition of
        the remote topic the policy and any ``RegexRouter`` named at start).
        """
        ...


@runtime_checkable
class Predicate(Protocol):
    """A condition of a transform (Connect's ``Predicate``)."""

    def test(self, record: ConnectRecord) -> bool:
        """Whether the record matches."""
        ...


__all__ = [
    "DROP_HEADERS",
    "FILTER",
    "HAS_HEADER_KEY",
    "INSERT_HEADER",
    "PREDICATES_PACKAGE",
    "RECORD_IS_TOMBSTONE",
    "REGEX_ROUTER",
    "SCHEMA_TRANSFORMS",
    "TOPIC_NAME_MATCHES",
    "TRANSFORMS_PACKAGE",
    "ConnectRecord",
    "Header",
    "Predicate",
    "Transformation",
]
