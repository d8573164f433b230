"""Schema Registry replication as pure code: the wire format, subject names, id translations, registration order.

The package's rooms: ``wire_format`` (Confluent's framing of a key or value: magic byte 0, the 4-byte schema id,
the payload; the id read and replaced, every other byte kept), ``subject_naming`` (a source subject's name on
the target under the flow's replication policy, and the rule that classifies subjects), ``id_cache`` (a flow's
source id -> target id translations with hit, miss and unknown counters), ``references`` (the order that
registers every referenced schema before the schema naming it) and ``failures`` (the errors' messages).
No registry client and no I/O here.
"""

from mirrorspark.core.schemas.failures import UNKNOWN_IDS_COPY, UNKNOWN_IDS_KEY, subject_conflict, unknown_schema_id
from mirrorspark.core.schemas.id_cache import UNKNOWN, IdCacheStats, SchemaIdCache
from mirrorspark.core.schemas.references import SubjectVersion, registration_order
from mirrorspark.core.schemas.subject_naming import (
    KEY_SUFFIX,
    VALUE_SUFFIX,
    SubjectName,
    SubjectNameStrategy,
    UnmatchedSubjects,
    classify_subject,
    is_fullname,
    remote_subject,
    target_subject,
)
from mirrorspark.core.schemas.wire_format import (
    HEADER_SIZE,
    MAGIC_BYTE,
    MAX_SCHEMA_ID,
    SchemaIdLookup,
    WireFormat,
    parse,
    replace_schema_id,
    schema_id,
    with_schema_id,
)

__all__ = [
    "HEADER_SIZE",
    "KEY_SUFFIX",
    "MAGIC_BYTE",
    "MAX_SCHEMA_ID",
    "UNKNOWN",
    "UNKNOWN_IDS_COPY",
    "UNKNOWN_IDS_KEY",
    "VALUE_SUFFIX",
    "IdCacheStats",
    "SchemaIdCache",
    "SchemaIdLookup",
    "SubjectName",
    "SubjectNameStrategy",
    "SubjectVersion",
    "UnmatchedSubjects",
    "WireFormat",
    "classify_subject",
    "is_fullname",
    "parse",
    "registration_order",
    "remote_subject",
    "replace_schema_id",
    "schema_id",
    "subject_conflict",
    "target_subject",
    "unknown_schema_id",
    "with_schema_id",
]
