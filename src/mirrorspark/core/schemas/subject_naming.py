"""Subjects on the target registry named as the replication policy names topics.

Confluent's subject name strategies (``io.confluent.kafka.serializers.subject``; docs.confluent.io, "Subject
name strategy"; the serializers' ``key/value.subject.name.strategy``) name a schema's subject from the topic
and the record's fully-qualified name:

* ``TopicNameStrategy`` (the default): ``<topic>-key`` and ``<topic>-value``;
* ``TopicRecordNameStrategy``: ``<topic>-<fully-qualified record name>``, for keys and values alike;
* ``RecordNameStrategy``: ``<fully-qualified record name>``, no topic in it.

Confluent Replicator does the same renaming: with ``topic.rename.format = ${topic}.replica`` and
``schema.subject.translator.class = io.confluent.connect.replicator.schemas.DefaultSubjectTranslator``, source
subject ``testTopic-value`` arrives as ``testTopic.replica-value`` (Confluent's "Replicator Schema Translation
Example", whose text says the translator renames subjects as ``topic.rename.format`` renames topics); the key
has no default (``null``), and how ``DefaultSubjectTranslator`` treats subjects of the other strategies is not
documented there.

The rule here, for a subject of the source registry and the set of topics the flow replicates, first match wins:

1. ``<T>-key`` or ``<T>-value`` with ``T`` a replicated topic: TopicNameStrategy, renamed
   ``<remote T>-key|value``, ``remote T`` being the policy's ``format_remote_topic(source alias, T)``;
2. ``<T>-<N>`` with ``T`` a replicated topic (split at the last ``-``) and ``N`` a fully-qualified name:
   TopicRecordNameStrategy, renamed ``<remote T>-<N>``;
3. a fully-qualified name ``N`` alone: RecordNameStrategy, kept as it is (the same record on every topic);
4. anything else (a subject of a topic the flow does not replicate, a name of another form, a subject in a
   Confluent context ``:.ctx:...``): other, kept as it is or skipped as the caller says (:class:`UnmatchedSubjects`).

A fully-qualified name is Avro's (and Protobuf's) grammar: dot-separated identifiers ``[A-Za-z_][A-Za-z0-9_]*``.
It holds no ``-``, so the split in rule 2 is unique; a JSON Schema title with other characters makes the subject
"other". Rule 1 goes first: ``orders-key`` is the key subject of ``orders``, never a record named ``key``.
Under ``IdentityReplicationPolicy`` remote topics keep their names, so every subject keeps its name.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Container
from dataclasses import dataclass
from typing import Final

from mirrorspark.mm2.policy import ReplicationPolicy

KEY_SUFFIX: Final = "-key"
"""TopicNameStrategy's suffix of a key subject."""

VALUE_SUFFIX: Final = "-value"
"""TopicNameStrategy's suffix of a value subject."""

_FULLNAME: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")


class SubjectNameStrategy(enum.Enum):
    """The subject name strategy a subject's name shows (or ``OTHER``)."""

    TOPIC_NAME = "TopicNameStrategy"
    TOPIC_RECORD_NAME = "TopicRecordNameStrategy"
    RECORD_NAME = "RecordNameStrategy"
    OTHER = "other"


class UnmatchedSubjects(enum.Enum):
    """What becomes of a subject of the ``OTHER`` kind: copied under its own name, or not copied."""

    KEEP = "keep"
    SKIP = "skip"


@dataclass(frozen=True, slots=True)
class SubjectName:
    """A source subject as classified: its ``strategy``, ``topic`` (strategies with a topic) and ``tail``.

    ``tail`` is what follows ``<topic>`` (``"-value"``, ``"-com.acme.Order"``), ``""`` for the other kinds.
    """

    subject: str
    strategy: SubjectNameStrategy
    topic: str | None = None
    tail: str = ""


def is_fullname(name: str) -> bool:
    """Whether ``name`` is a fully-qualified record name (dot-separated identifiers, Avro's grammar)."""
    return _FULLNAME.fullmatch(name) is not None


def classify_subject(subject: str, topics: Container[str]) -> SubjectName:
    """Classify a source subject by the module's rule against the replicated ``topics`` (tested with ``in`` only)."""
    for suffix in (KEY_SUFFIX, VALUE_SUFFIX):
        if subject.endswith(suffix) and subject[: -len(suffix)] in topics:
            return SubjectName(subject, SubjectNameStrategy.TOPIC_NAME, subject[: -len(suffix)], suffix)
    topic, dash, record = subject.rpartition("-")
    if dash and topic in topics and is_fullname(record):
        return SubjectName(subject, SubjectNameStrategy.TOPIC_RECORD_NAME, topic, f"-{record}")
    if is_fullname(subject):
        return SubjectName(subject, SubjectNameStrategy.RECORD_NAME)
    return SubjectName(subject, SubjectNameStrategy.OTHER)


def remote_subject(name: SubjectName, *, source_alias: str, policy: ReplicationPolicy) -> str:
    """Return the target's name of a classified subject: its topic part renamed by ``policy``, else unchanged."""
    if name.topic is None:
        return name.subject
    return policy.format_remote_topic(source_alias, name.topic) + name.tail


def target_subject(
    subject: str,
    *,
    topics: Container[str],
    source_alias: str,
    policy: ReplicationPolicy,
    unmatched: UnmatchedSubjects = UnmatchedSubjects.SKIP,
) -> str | None:
    """Return the target's name of source ``subject``, or ``None`` when it is not copied.

    Parameters
    ----------
    subject:
        A subject of the source registry.
    topics:
        The source topics the flow replicates (a record's own topic, or all of them).
    source_alias, policy:
        The flow's source cluster alias and replication policy (``format_remote_topic``).
    unmatched:
        What becomes of a subject of none of the three strategies: by default skipped (``None``), since copied
        under its own name it may collide with the target's own subjects.
    """
    name = classify_subject(subject, topics)
    if name.strategy is SubjectNameStrategy.OTHER and unmatched is UnmatchedSubjects.SKIP:
        return None
    return remote_subject(name, source_alias=source_alias, policy=policy)


__all__ = [
    "KEY_SUFFIX",
    "VALUE_SUFFIX",
    "SubjectName",
    "SubjectNameStrategy",
    "UnmatchedSubjects",
    "classify_subject",
    "is_fullname",
    "remote_subject",
    "target_subject",
]
