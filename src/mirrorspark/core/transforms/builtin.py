"""Connect's built-in transforms and predicates that run on MM2's byte-array records."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from mirrorspark.core.transforms.records import ConnectRecord


@dataclass(frozen=True, slots=True)
class Filter:
    """``org.apache.kafka.connect.transforms.Filter``: drops every record it is applied to."""

    def apply(self, record: ConnectRecord) -> ConnectRecord | None:
        """Drop the record (``None``)."""
        return None


@dataclass(frozen=True, slots=True)
class InsertHeader:
    """``org.apache.kafka.connect.transforms.InsertHeader``: appends one header with a literal value."""

    header: str
    value: bytes

    def apply(self, record: ConnectRecord) -> ConnectRecord | None:
        """Return the record with ``(header, value)`` appended to its headers (existing ones kept, as Connect)."""
        r = record
        headers = (*r.headers, (self.header, self.value))
        return ConnectRecord(r.topic, r.partition, r.key, r.value, headers, r.timestamp_ms)


@dataclass(frozen=True, slots=True)
class DropHeaders:
    """``org.apache.kafka.connect.transforms.DropHeaders``: removes every header with one of ``names``."""

    names: frozenset[str]

    def apply(self, record: ConnectRecord) -> ConnectRecord | None:
        """Return the record without the named headers."""
        if not any(name in self.names for name, _ in record.headers):
            return record
        r = record
        kept = tuple(h for h in r.headers if h[0] not in self.names)
        return ConnectRecord(r.topic, r.partition, r.key, r.value, kept, r.timestamp_ms)


@dataclass(frozen=True, slots=True)
class RegexRouter:
    """``org.apache.kafka.connect.transforms.RegexRouter``: renames the topic when ``regex`` matches it whole."""

    regex: re.Pattern[str]
    replacement: str

    def rename(self, topic: str) -> str:
        """Return the new topic name (``topic`` itself when ``regex`` does not match the whole name)."""
        m = self.regex.fullmatch(topic)
        return m.expand(self.replacement) if m is not None else topic

    def apply(self, record: ConnectRecord) -> ConnectRecord | None:
        """Return the record with its topic renamed."""
        topic = self.rename(record.topic)
        return record if topic == record.topic else replace(record, topic=topic)


# --------------------------------------------------------------------------- built-in predicates


@dataclass(frozen=True, slots=True)
class TopicNameMatches:
    """``...predicates.TopicNameMatches``: the (remote) topic name matches ``pattern`` whole."""

    pattern: re.Pattern[str]

    def test(self, record: ConnectRecord) -> bool:
        """Whether the record's topic matches."""
        return self.pattern.fullmatch(record.topic) is not None


@dataclass(frozen=True, slots=True)
class HasHeaderKey:
    """``...predicates.HasHeaderKey``: the record has at least one header named ``name``."""

    name: str

    def test(self, record: ConnectRecord) -> bool:
        """Whether a header with that name is present (whatever its value)."""
        name = self.name
        for h in record.headers:  # noqa: SIM110 - a loop, not any() over a generator: once per record
            if h[0] == name:
                return True
        return False


@dataclass(frozen=True, slots=True)
class RecordIsTombstone:
    """``...predicates.RecordIsTombstone``: the record's value is null."""

    def test(self, record: ConnectRecord) -> bool:
        """Whether the value is ``None``."""
        return record.value is None


__all__ = [
    "DropHeaders",
    "Filter",
    "HasHeaderKey",
    "InsertHeader",
    "RecordIsTombstone",
    "RegexRouter",
    "TopicNameMatches",
]
