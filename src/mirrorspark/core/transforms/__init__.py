"""Single Message Transforms (Kafka Connect SMTs) on MM2's byte-array records, as pure code.

MM2 runs every record of ``MirrorSourceConnector`` through the connector's transformation
chain (Connect's ``TransformationChain``) *after* the replication policy named its remote
topic: a transform sees the record with the remote topic name (``primary.orders``), the
source partition, key, value and headers as bytes (MM2's ``ByteArrayConverter``) and the
source timestamp. This module is that chain for mirrorspark, in MM2's configuration syntax::

    transforms = dropDebug, tag
    transforms.dropDebug.type = org.apache.kafka.connect.transforms.Filter
    transforms.dropDebug.predicate = isDebug
    transforms.tag.type = org.apache.kafka.connect.transforms.InsertHeader
    transforms.tag.header = replicated-by
    transforms.tag.value.literal = mirrorspark
    predicates = isDebug
    predicates.isDebug.type = org.apache.kafka.connect.transforms.predicates.HasHeaderKey
    predicates.isDebug.name = debug

The package's rooms: ``records`` (what a transform sees), ``builtin`` (Connect's transforms and
predicates), ``config`` (the keys, parsed once), ``chain`` (the chain, built once per flow and
bound per partition) and ``routing`` (the policy that names remote topics through ``RegexRouter``).

Three steps, each once:

1. :func:`parse_transforms` (the config layer, at load) reads the ``transforms*`` and
   ``predicates*`` keys into :class:`TransformsConfig`, refusing what cannot run on byte arrays
   (:class:`~mirrorspark.errors.TransformConfigError`, naming the key and the fix);
2. :func:`build_chain` (once per flow at start) makes the :class:`TransformChain`, loading user
   transforms (``package.module:Class``, :class:`Transformation`);
3. :meth:`TransformChain.bind` (once per copied partition) evaluates what depends only on the
   topic (``TopicNameMatches``, ``RegexRouter``), leaving a :class:`BoundChain` of per-record
   steps for the data path.

Supported, by Connect class name (the short name works too, as Connect's plugin aliases):

* ``org.apache.kafka.connect.transforms.Filter`` — drops the record (with a predicate: the matching ones);
* ``...InsertHeader`` (``header``, ``value.literal``) — adds a header whose value is the literal's UTF-8
  bytes (what MM2 writes with ``header.converter = ...StringConverter``; with MM2's default
  ``ByteArrayConverter`` MM2 itself fails on this transform);
* ``...DropHeaders`` (``headers``) — removes every header with one of those names;
* ``...RegexRouter`` (``regex``, ``replacement``) — renames the remote topic; applied when the remote
  topic is named (:meth:`TransformChain.route`), so only with no predicate or ``TopicNameMatches``;
* predicates ``org.apache.kafka.connect.transforms.predicates.TopicNameMatches`` (``pattern``, matched
  against the whole remote topic name), ``HasHeaderKey`` (``name``), ``RecordIsTombstone`` (null value);
  ``transforms.<t>.negate = true`` inverts one.

Refused at load: transforms that read or write fields of a key or value with a schema (``Cast``,
``ReplaceField``, ``HeaderFrom``, ...) — MM2's records are byte arrays, so they fail on every record in
MM2 too — and those that route per record (``TimestampRouter``).
"""

from mirrorspark.core.transforms.builtin import (
    DropHeaders,
    Filter,
    HasHeaderKey,
    InsertHeader,
    RecordIsTombstone,
    RegexRouter,
    TopicNameMatches,
)
from mirrorspark.core.transforms.chain import BoundChain, Step, TransformChain, build_chain, routers
from mirrorspark.core.transforms.config import (
    NO_TRANSFORMS,
    PredicateSpec,
    TransformsConfig,
    TransformSpec,
    java_replacement,
    parse_transforms,
)
from mirrorspark.core.transforms.records import (
    DROP_HEADERS,
    FILTER,
    HAS_HEADER_KEY,
    INSERT_HEADER,
    RECORD_IS_TOMBSTONE,
    REGEX_ROUTER,
    TOPIC_NAME_MATCHES,
    ConnectRecord,
    Header,
    Predicate,
    Transformation,
)
from mirrorspark.core.transforms.routing import RoutedReplicationPolicy

__all__ = [
    "DROP_HEADERS",
    "FILTER",
    "HAS_HEADER_KEY",
    "INSERT_HEADER",
    "NO_TRANSFORMS",
    "RECORD_IS_TOMBSTONE",
    "REGEX_ROUTER",
    "TOPIC_NAME_MATCHES",
    "BoundChain",
    "ConnectRecord",
    "DropHeaders",
    "Filter",
    "HasHeaderKey",
    "Header",
    "InsertHeader",
    "Predicate",
    "PredicateSpec",
    "RecordIsTombstone",
    "RegexRouter",
    "RoutedReplicationPolicy",
    "Step",
    "TopicNameMatches",
    "TransformChain",
    "TransformSpec",
    "Transformation",
    "TransformsConfig",
    "build_chain",
    "java_replacement",
    "parse_transforms",
    "routers",
]
