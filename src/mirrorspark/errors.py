"""The one exception tree of mirrorspark.

Every error mirrorspark raises on purpose derives from :class:`MirrorsparkError`.
Each class carries a stable upper-snake ``code`` that the CLI prints and maps to
an exit status, and that the REST service reports::

    MirrorsparkError                 MIRRORSPARK_ERROR      exit 1
    ├── ConfigError (ValueError)     CONFIG_INVALID         exit 2
    │   ├── UnknownAliasError        CONFIG_UNKNOWN_ALIAS
    │   ├── BadRegexError            CONFIG_BAD_REGEX
    │   ├── PlacementError           CONFIG_PLACEMENT
    │   ├── SourceOffsetsRequestError CONFIG_SOURCE_OFFSETS
    │   └── TransformConfigError     CONFIG_TRANSFORM
    ├── ClusterError                 CLUSTER_ERROR          exit 3
    │   └── ClusterUnreachableError  CLUSTER_UNREACHABLE
    ├── DataPathError                DATA_PATH_ERROR        exit 4
    │   ├── RecordTooLargeError      RECORD_TOO_LARGE
    │   └── DataGapError             DATA_GAP
    ├── CorruptRecordError           RECORD_CORRUPT         exit 5
    ├── ControlError                 CONTROL_ERROR          exit 6
    │   └── FlowRunningError         FLOW_RUNNING
    ├── LocalClusterError            LOCAL_CLUSTER_ERROR    exit 7
    └── ServiceError                 SERVICE_ERROR          exit 8

Third-party errors (confluent-kafka, py4j, OS errors) are translated at the
boundary with ``raise ... from e`` and the flow, topic-partition or group
attached to the message. Normal outcomes are not exceptions: an offset that
cannot be translated yet is ``None``.

Messages name the problem *and* the fix, and never contain secrets.
"""

from __future__ import annotations


class MirrorsparkError(Exception):
    """Root of every error mirrorspark raises on purpose.

    Parameters
    ----------
    message:
        What went wrong and how to fix it, in one or two sentences.
    """

    code = "MIRRORSPARK_ERROR"
    exit_code = 1

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


class ConfigError(MirrorsparkError, ValueError):
    """An mm2.properties file (or a CLI option) is malformed or inconsistent.

    Raised while parsing, before anything connects to a cluster.
    """

    code = "CONFIG_INVALID"
    exit_code = 2


class UnknownAliasError(ConfigError):
    """A flow, option or command names a cluster alias not listed in ``clusters``."""

    code = "CONFIG_UNKNOWN_ALIAS"


class BadRegexError(ConfigError):
    """A topic, group or config-property list holds a regex that does not compile."""

    code = "CONFIG_BAD_REGEX"


class PlacementError(ConfigError):
    """A replica placement (Confluent's placement JSON) is malformed, impossible or does not fit the racks.

    Impossible on Apache Kafka: observers. Not fitting: a rack with fewer brokers than its ``count``.
    """

    code = "CONFIG_PLACEMENT"


class SourceOffsetsRequestError(ConfigError):
    """A ``mirrorspark offsets source`` request names no valid partition or position.

    An unknown or not replicated topic, a partition out of range, an offset outside the source
    partition, an unreadable ``--to-datetime``, or a flow that has never stored source offsets.
    """

    code = "CONFIG_SOURCE_OFFSETS"


class TransformConfigError(ConfigError):
    """A Single Message Transform (``transforms.*``, ``predicates.*``) cannot run on MM2's byte-array records.

    Also: a required transform setting missing, an unknown predicate alias, a user transform
    (``package.module:Class``) that cannot be loaded.
    """

    code = "CONFIG_TRANSFORM"


class ClusterError(MirrorsparkError):
    """A Kafka cluster answered with an error, or an admin call failed.

    Parameters
    ----------
    message:
        What failed, with the cluster alias.
    kafka_code:
        Kafka's error name (e.g. ``"TOPIC_AUTHORIZATION_FAILED"``), if any.
    retriable:
        Whether Kafka marks the error retriable.
    """

    code = "CLUSTER_ERROR"
    exit_code = 3

    def __init__(self, message: str, *, kafka_code: str | None = None, retriable: bool = False) -> None:
        super().__init__(message)
        self.kafka_code = kafka_code
        self.retriable = retriable


class ClusterUnreachableError(ClusterError):
    """No broker of a cluster answered within the timeout."""

    code = "CLUSTER_UNREACHABLE"


class DataPathError(MirrorsparkError):
    """Copying records failed in a way that a retry of the batch cannot fix."""

    code = "DATA_PATH_ERROR"
    exit_code = 4


class RecordTooLargeError(DataPathError):
    """A source record is larger than the target accepts (``max.message.bytes`` / ``message.max.bytes``)."""

    code = "RECORD_TOO_LARGE"


class DataGapError(DataPathError):
    """Source records a flow had not copied are gone, and ``mirrorspark.on.gap=stop`` halted the flow."""

    code = "DATA_GAP"


class CorruptRecordError(MirrorsparkError):
    """An internal record (heartbeat, checkpoint, offset sync, source offset) does not decode."""

    code = "RECORD_CORRUPT"
    exit_code = 5


class ControlError(MirrorsparkError):
    """A control command (``mirrorspark control``, failover, offsets) cannot be carried out."""

    code = "CONTROL_ERROR"
    exit_code = 6


class FlowRunningError(ControlError):
    """A flow's source offsets cannot be changed because the flow is running (mirrorspark's or MM2's).

    Raised when the flow's lease group (``mirrorspark-lease-<source>-><target>``) or MM2's Connect
    worker group (``<source>-mm2``) has active members on the target; nothing was written.
    """

    code = "FLOW_RUNNING"


class LocalClusterError(MirrorsparkError):
    """The local cluster launcher could not start, find or stop a cluster."""

    code = "LOCAL_CLUSTER_ERROR"
    exit_code = 7


class ServiceError(MirrorsparkError):
    """The metrics service (``mirrorspark service``) could not start or its Spark job failed."""

    code = "SERVICE_ERROR"
    exit_code = 8


__all__ = [
    "BadRegexError",
    "ClusterError",
    "ClusterUnreachableError",
    "ConfigError",
    "ControlError",
    "CorruptRecordError",
    "DataGapError",
    "DataPathError",
    "FlowRunningError",
    "LocalClusterError",
    "MirrorsparkError",
    "PlacementError",
    "RecordTooLargeError",
    "ServiceError",
    "SourceOffsetsRequestError",
    "TransformConfigError",
    "UnknownAliasError",
]
