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
    │   ├── SourceConnectorNameError CONFIG_SOURCE_CONNECTOR_NAME
    │   └── TransformConfigError     CONFIG_TRANSFORM
    ├── ClusterError                 CLUSTER_ERROR          exit 3
    │   ├── ClusterUnreachableError  CLUSTER_UNREACHABLE
    │   └── TransactionCoordinatorError NO_TRANSACTION_COORDINATOR
    ├── DataPathError                DATA_PATH_ERROR        exit 4
    │   ├── RecordTooLargeError      RECORD_TOO_LARGE
    │   ├── DataGapError             DATA_GAP
    │   ├── ProvenanceError          PROVENANCE_HEADER
    │   ├── SchemaRegistryError      SCHEMA_REGISTRY_ERROR
    │   │   ├── SchemaIdUnknownError SCHEMA_ID_UNKNOWN
    │   │   ├── SchemaSubjectConflictError SCHEMA_SUBJECT_CONFLICT
    │   │   └── SchemaReferenceCycleError SCHEMA_REFERENCE_CYCLE
    │   └── SparkDriverLostError     SPARK_DRIVER_LOST      exit 9
    ├── CorruptRecordError           RECORD_CORRUPT         exit 5
    ├── ControlError                 CONTROL_ERROR          exit 6
    │   └── FlowRunningError         FLOW_RUNNING
    ├── LocalClusterError            LOCAL_CLUSTER_ERROR    exit 7
    └── ServiceError                 SERVICE_ERROR          exit 8

Third-party errors are translated at the boundary (``raise ... from e``), Kafka's error name kept as
``kafka_code``; normal outcomes are not exceptions. Across Spark an error travels as data
(:class:`ErrorInfo`), never as a parsed message. Messages name the problem and the fix, never a secret.
"""

from __future__ import annotations

from dataclasses import dataclass

_AUTHORIZATION_SUFFIX = "_AUTHORIZATION_FAILED"


@dataclass(frozen=True, slots=True)
class ErrorInfo:
    """A :class:`MirrorsparkError` as plain data: what a copy task's result carries back to the driver.

    ``flow``, ``task``, ``partition``: ``"S->T"``, the copy task's index, ``"<topic>-<partition>"``, or ``None``.
    """

    code: str
    message: str
    kafka_code: str | None = None
    retriable: bool = False
    fatal: bool = False
    flow: str | None = None
    task: int | None = None
    partition: str | None = None


class MirrorsparkError(Exception):
    """Root of every error mirrorspark raises on purpose.

    Parameters
    ----------
    message:
        What went wrong and how to fix it, in one or two sentences.
    kafka_code:
        Kafka's error name behind it (e.g. ``"TOPIC_AUTHORIZATION_FAILED"``), if any.
    retriable:
        Whether Kafka marks the error retriable (or it is a timeout).
    """

    code = "MIRRORSPARK_ERROR"
    exit_code = 1
    always_fatal = False
    """Whether every error of the class is one no retry can fix (:attr:`fatal`)."""
    partition: str | None = None
    """The source partition it concerns, ``"<topic>-<partition>"``, when a copy task knows it."""

    def __init__(self, message: str, *, kafka_code: str | None = None, retriable: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.kafka_code = kafka_code
        self.retriable = retriable

    def __str__(self) -> str:
        return self.message

    def __reduce__(self) -> tuple[object, ...]:
        return (_rebuild, (type(self), self.message, self.kafka_code, self.retriable))

    @property
    def fatal(self) -> bool:
        """Whether no retry can fix it: the class says so (a record too large) or Kafka refused authorization."""
        return self.always_fatal or (self.kafka_code or "").endswith(_AUTHORIZATION_SUFFIX)

    def info(self, *, flow: str | None = None, task: int | None = None, partition: str | None = None) -> ErrorInfo:
        """Return the error as data, with where it happened (what crosses the Spark boundary)."""
        where = partition if partition is not None else self.partition
        return ErrorInfo(self.code, self.message, self.kafka_code, self.retriable, self.fatal, flow, task, where)


def _rebuild(cls: type[MirrorsparkError], message: str, kafka_code: str | None, retriable: bool) -> MirrorsparkError:
    return cls(message, kafka_code=kafka_code, retriable=retriable)


def _classes(root: type[MirrorsparkError]) -> list[type[MirrorsparkError]]:
    out = [root]
    for sub in root.__subclasses__():
        out.extend(_classes(sub))
    return out


def error_from_info(info: ErrorInfo) -> MirrorsparkError:
    """Rebuild the error a copy task reported (:meth:`MirrorsparkError.info`) as its own class (root if unknown)."""
    cls = next((c for c in _classes(MirrorsparkError) if c.code == info.code), MirrorsparkError)
    error = cls(info.message, kafka_code=info.kafka_code, retriable=info.retriable)
    error.partition = info.partition
    return error


class ConfigError(MirrorsparkError, ValueError):
    """An mm2.properties file (or a CLI option) is malformed or inconsistent; raised before anything connects."""

    code = "CONFIG_INVALID"
    exit_code = 2


class UnknownAliasError(ConfigError):
    """A flow, option or command names a cluster alias not listed in ``clusters``."""

    code = "CONFIG_UNKNOWN_ALIAS"


class BadRegexError(ConfigError):
    """A topic, group or config-property list holds a regex that does not compile."""

    code = "CONFIG_BAD_REGEX"


class PlacementError(ConfigError):
    """A replica placement (Confluent's JSON) is malformed, impossible (observers) or does not fit the racks."""

    code = "CONFIG_PLACEMENT"


class SourceOffsetsRequestError(ConfigError):
    """A ``mirrorspark offsets source`` request names no valid partition or position."""

    code = "CONFIG_SOURCE_OFFSETS"


class SourceConnectorNameError(ConfigError):
    """A flow's source offsets are stored under another connector name than its configured one; it does not start.

    Starting would copy everything again or skip the backlog; the fix is ``mirrorspark offsets source move``.
    """

    code = "CONFIG_SOURCE_CONNECTOR_NAME"


class TransformConfigError(ConfigError):
    """A Single Message Transform (``transforms.*``, ``predicates.*``) is misconfigured or cannot run on bytes."""

    code = "CONFIG_TRANSFORM"


class ClusterError(MirrorsparkError):
    """A Kafka cluster answered with an error, or an admin call failed (``kafka_code``, ``retriable``: Kafka's)."""

    code = "CLUSTER_ERROR"
    exit_code = 3


class ClusterUnreachableError(ClusterError):
    """No broker of a cluster answered within the timeout."""

    code = "CLUSTER_UNREACHABLE"


class TransactionCoordinatorError(ClusterError):
    """A copy task's ``init_transactions`` found no transaction coordinator on the target in time (exactly-once).

    Fatal at a flow's first start; later (a coordinator moving) retried like any failure.
    """

    code = "NO_TRANSACTION_COORDINATOR"


class DataPathError(MirrorsparkError):
    """Copying records failed: a produce, delivery, read or commit of a copy task (the task is restarted)."""

    code = "DATA_PATH_ERROR"
    exit_code = 4


class RecordTooLargeError(DataPathError):
    """A source record is larger than the target accepts (``max.message.bytes`` / ``message.max.bytes``)."""

    code = "RECORD_TOO_LARGE"
    always_fatal = True


class DataGapError(DataPathError):
    """Source records a flow had not copied are gone, and ``mirrorspark.on.gap=stop`` halted the flow."""

    code = "DATA_GAP"


class ProvenanceError(DataPathError):
    """A record's provenance header (``__mirrorspark.provenance``) does not decode, or a copy would exceed its hops.

    Never a silent drop or copy: no retry can fix it; the message names the record, the header and the fix.
    """

    code = "PROVENANCE_HEADER"
    always_fatal = True


class SchemaRegistryError(DataPathError):
    """A flow's schema replication failed: a Schema Registry call, or what the registries hold, stops its records."""

    code = "SCHEMA_REGISTRY_ERROR"


class SchemaIdUnknownError(SchemaRegistryError):
    """A record's key or value in Confluent's wire format carries a schema id the source registry does not know.

    No retry can fix it; the message names topic, partition, offset and id, and the key that copies such records
    unchanged instead.
    """

    code = "SCHEMA_ID_UNKNOWN"
    always_fatal = True


class SchemaSubjectConflictError(SchemaRegistryError):
    """A subject on the target registry holds versions incompatible with the source's; never skipped silently."""

    code = "SCHEMA_SUBJECT_CONFLICT"
    always_fatal = True


class SchemaReferenceCycleError(SchemaRegistryError):
    """Schemas of the source registry reference each other in a cycle, so no registration order exists."""

    code = "SCHEMA_REFERENCE_CYCLE"
    always_fatal = True


class SparkDriverLostError(DataPathError):
    """The Spark driver JVM of this process died (or cannot be reached): no copy task can run any more.

    Never retried; no task commits, and ``run`` exits 9 so that a service manager can tell "restart me" from exit 4.
    """

    code = "SPARK_DRIVER_LOST"
    exit_code = 9
    always_fatal = True


class CorruptRecordError(MirrorsparkError):
    """An internal record (heartbeat, checkpoint, offset sync, source offset) does not decode."""

    code = "RECORD_CORRUPT"
    exit_code = 5


class ControlError(MirrorsparkError):
    """A control command (``mirrorspark control``, failover, offsets) cannot be carried out."""

    code = "CONTROL_ERROR"
    exit_code = 6


class FlowRunningError(ControlError):
    """A flow's source offsets cannot be changed: its lease group or MM2's ``<source>-mm2`` group has members."""

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
    "ErrorInfo",
    "FlowRunningError",
    "LocalClusterError",
    "MirrorsparkError",
    "PlacementError",
    "ProvenanceError",
    "RecordTooLargeError",
    "SchemaIdUnknownError",
    "SchemaReferenceCycleError",
    "SchemaRegistryError",
    "SchemaSubjectConflictError",
    "ServiceError",
    "SourceConnectorNameError",
    "SourceOffsetsRequestError",
    "SparkDriverLostError",
    "TransactionCoordinatorError",
    "TransformConfigError",
    "UnknownAliasError",
    "error_from_info",
]
