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
    │   └── SparkDriverLostError     SPARK_DRIVER_LOST      exit 9
    ├── CorruptRecordError           RECORD_CORRUPT         exit 5
    ├── ControlError                 CONTROL_ERROR          exit 6
    │   └── FlowRunningError         FLOW_RUNNING
    ├── LocalClusterError            LOCAL_CLUSTER_ERROR    exit 7
    └── ServiceError                 SERVICE_ERROR          exit 8

Third-party errors (confluent-kafka, py4j, OS errors) are translated at the
boundary with ``raise ... from e`` and the flow, topic-partition or group
attached to the message; Kafka's error name travels along as ``kafka_code``.
Normal outcomes are not exceptions: an offset that cannot be translated yet is
``None``.

Across Spark an error travels as data: a copy task turns its error into an
:class:`ErrorInfo` (:meth:`MirrorsparkError.info`: class code, Kafka code,
retriable, fatal, flow, task, partition) inside its result, and the driver
rebuilds the same class from it (:func:`error_from_info`); no message is ever
parsed.

Messages name the problem *and* the fix, and never contain secrets.
"""

from __future__ import annotations

from dataclasses import dataclass

_AUTHORIZATION_SUFFIX = "_AUTHORIZATION_FAILED"


@dataclass(frozen=True, slots=True)
class ErrorInfo:
    """A :class:`MirrorsparkError` as plain data: what a copy task's result carries back to the driver.

    Attributes
    ----------
    code:
        The error class's stable code (``MirrorsparkError.code``), e.g. ``"RECORD_TOO_LARGE"``.
    message:
        The error's message (names the problem and the fix; never a secret).
    kafka_code:
        Kafka's error name, e.g. ``"TOPIC_AUTHORIZATION_FAILED"``; ``None`` when no Kafka error is behind it.
    retriable:
        Whether a retry may succeed (Kafka's retriable flag, or a timeout).
    fatal:
        Whether no retry can fix it: a record too large, an authorization failure
        (:attr:`MirrorsparkError.fatal`).
    flow, task, partition:
        Where it happened: ``"S->T"``, the copy task's index, ``"<topic>-<partition>"``; ``None`` when not known.
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
        """Return the error as data, with where it happened (what crosses the Spark boundary).

        Parameters
        ----------
        flow, task, partition:
            ``"S->T"``, the copy task's index and ``"<topic>-<partition>"``, when known.

        Returns
        -------
        ErrorInfo
            Rebuilt into the same class by :func:`error_from_info`.
        """
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
    """Rebuild the error a copy task reported (:meth:`MirrorsparkError.info`) as its own class.

    Parameters
    ----------
    info:
        The error as data.

    Returns
    -------
    MirrorsparkError
        An instance of the class whose ``code`` is ``info.code`` (the root class for an unknown code),
        with the message, ``kafka_code`` and ``retriable`` of ``info``.
    """
    cls = next((c for c in _classes(MirrorsparkError) if c.code == info.code), MirrorsparkError)
    error = cls(info.message, kafka_code=info.kafka_code, retriable=info.retriable)
    error.partition = info.partition
    return error


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


class SourceConnectorNameError(ConfigError):
    """A flow's source offsets are stored under another connector name than its configured one; it does not start.

    Raised at a flow's start (after connecting) when ``mm2-offsets.<source>.internal`` holds no
    offset of the flow's topics under ``mirrorspark.source.connector.name`` (or the Connect
    connector's ``name``) but holds some for its source alias under other names: starting would
    copy everything again (``auto.offset.reset=earliest``) or skip the backlog (``latest``). The fix:
    ``mirrorspark offsets source move``, or the old name set back.
    """

    code = "CONFIG_SOURCE_CONNECTOR_NAME"


class TransformConfigError(ConfigError):
    """A Single Message Transform (``transforms.*``, ``predicates.*``) cannot run on MM2's byte-array records.

    Also: a required transform setting missing, an unknown predicate alias, a user transform
    (``package.module:Class``) that cannot be loaded.
    """

    code = "CONFIG_TRANSFORM"


class ClusterError(MirrorsparkError):
    """A Kafka cluster answered with an error, or an admin call failed.

    The message names the cluster alias; ``kafka_code`` and ``retriable`` say what Kafka answered.
    """

    code = "CLUSTER_ERROR"
    exit_code = 3


class ClusterUnreachableError(ClusterError):
    """No broker of a cluster answered within the timeout."""

    code = "CLUSTER_UNREACHABLE"


class TransactionCoordinatorError(ClusterError):
    """A copy task's ``init_transactions`` found no transaction coordinator on the target in time (exactly-once).

    Transactions are unsupported or unavailable there (e.g. ``__transaction_state`` cannot be created
    with its replication factor). At a flow's first start no retry can fix it; later, a coordinator
    moving between brokers is retried like any failure.
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


class SparkDriverLostError(DataPathError):
    """The Spark driver JVM of this process died (or cannot be reached): no copy task can run any more.

    Raised by the driver (never by a copy task) when the JVM that PySpark launched for the
    SparkSession exits, e.g. killed by the OOM killer, or when its gateway stops answering (Py4J's
    connection refused or closed). Never retried: every copy task of every flow ends without
    committing (the driver stops granting and aborts them), and ``mirrorspark run`` exits with
    this error's own status, 9, so that a service manager can tell "restart me" from a data-path
    error no restart fixes (exit 4). MM2 has no counterpart: a Connect worker is one JVM.
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
    "ErrorInfo",
    "FlowRunningError",
    "LocalClusterError",
    "MirrorsparkError",
    "PlacementError",
    "RecordTooLargeError",
    "ServiceError",
    "SourceConnectorNameError",
    "SourceOffsetsRequestError",
    "SparkDriverLostError",
    "TransactionCoordinatorError",
    "TransformConfigError",
    "UnknownAliasError",
    "error_from_info",
]
