"""Schema-id translation on the data path: a record's key and value get the target registry's id for their schema.

A key or value in Confluent's wire format (``core.schemas.wire_format``) has its 4 id bytes replaced by the
target's id for the same schema, every other byte kept; anything else passes unchanged. A translation is cached
per task (the 4 source bytes to the 4 target bytes); a miss copies the schema to the target registry first
(``SchemaCopier``, invariant S2: the schema is registered before the record is produced). Records of heartbeat
topics are never translated (their keys are MM2's structs, which may start with a zero byte).
"""

from __future__ import annotations

from typing import Final, Protocol

from mirrorspark.core.schemas import HEADER_SIZE, KEY_SUFFIX, MAGIC_BYTE, VALUE_SUFFIX, unknown_schema_id
from mirrorspark.core.schemas.copier import SchemaCopier
from mirrorspark.errors import SchemaRegistryError
from mirrorspark.replication.task.failures import at
from mirrorspark.replication.task.spec import PartitionAssignment, SchemaIdsSpec

_MAGIC: Final = bytes([MAGIC_BYTE])


class PartitionCopy(Protocol):
    """What translation reads and counts of a copy task's partition (``partition.PartitionCopy``)."""

    assignment: PartitionAssignment
    partition: int
    target_topic: str
    schema_hits: int
    schema_misses: int
    schema_unknown: int

    @property
    def name(self) -> str:
        """``"<source topic>-<partition>"``."""
        ...


class SchemaIdTranslator:
    """Translates the schema ids of one copy task's records (not thread-safe: the task's thread only)."""

    def __init__(
        self, copier: SchemaCopier, *, flow: str, copy_unknown: bool, known: tuple[tuple[int, int], ...] = ()
    ) -> None:
        self.copier = copier
        self.flow = flow
        self.copy_unknown = copy_unknown
        self._ids: dict[bytes, bytes] = {}  # 4 source id bytes -> 4 target id bytes
        self.heads: dict[bytes, bytes] = {}
        """The cache as 5-byte wire-format headers (magic byte + id), source to target: the hot loop's fast path
        (``produce.forward_run``) looks a value's first 5 bytes up here and counts its hits itself."""
        for source_id, target_id in known:  # the driver's sync found them: the target holds each (S2)
            source, target = source_id.to_bytes(4, "big"), target_id.to_bytes(4, "big")
            self.heads[_MAGIC + source] = _MAGIC + target
        self._unknown: set[bytes] = set()  # source ids the source registry does not know (copy_unknown only)

    @classmethod
    def for_task(cls, spec: SchemaIdsSpec, flow: str) -> SchemaIdTranslator:
        """Build a task's translator with its own registry clients, its cache started with the driver's ``known``."""
        # here, not at the top: confluent-kafka's registry client (httpx, authlib) is a third of the copy task's
        # imports, which every Python worker's daemon loads before forking (replication.task.daemon)
        from mirrorspark.registry.client import RegistryClient

        copier = SchemaCopier(
            RegistryClient.from_settings(spec.source), RegistryClient.from_settings(spec.target), spec.naming
        )
        return cls(copier, flow=flow, copy_unknown=spec.copy_unknown, known=spec.known)

    def translated(
        self, pc: PartitionCopy, key: bytes | None, value: bytes | None, offset: int
    ) -> tuple[bytes | None, bytes | None]:
        """Return ``(key, value)`` of record ``offset`` of ``pc``'s partition with target ids (counted in ``pc``).

        Raises SchemaIdUnknownError (an unknown id, unless ``copy_unknown``) and SchemaRegistryError, both
        naming the record.
        """
        if value is not None and len(value) >= HEADER_SIZE and value[0] == MAGIC_BYTE:
            value = self._one(pc, value, offset, is_key=False)
        if key is not None and len(key) >= HEADER_SIZE and key[0] == MAGIC_BYTE:
            key = self._one(pc, key, offset, is_key=True)
        return key, value

    def _one(self, pc: PartitionCopy, data: bytes, offset: int, *, is_key: bool) -> bytes:
        head = self.heads.get(data[:HEADER_SIZE])
        if head is None:
            head = self._resolve(pc, data[1:HEADER_SIZE], offset, is_key=is_key)
            if head is None:
                return data
        else:
            pc.schema_hits += 1
        if head == data[:HEADER_SIZE]:
            return data
        return b"".join((head, memoryview(data)[HEADER_SIZE:]))

    def _resolve(self, pc: PartitionCopy, source: bytes, offset: int, *, is_key: bool) -> bytes | None:
        """Ask the registries for a source id's target header (a miss); ``None``: unknown and copied unchanged."""
        if source in self._unknown:
            pc.schema_unknown += 1
            return None
        source_id = int.from_bytes(source, "big")
        topic = pc.assignment.source_topic
        fallback = pc.target_topic + (KEY_SUFFIX if is_key else VALUE_SUFFIX)
        try:
            found = self.copier.target_id(source_id, fallback)
        except SchemaRegistryError as e:
            raise at(type(e)(f"flow {self.flow}: record {pc.name}@{offset}: {e}"), pc.name) from e
        if found is None:
            if not self.copy_unknown:
                raise unknown_schema_id(
                    topic=topic,
                    partition=pc.partition,
                    offset=offset,
                    schema_id=source_id,
                    is_key=is_key,
                    flow=self.flow,
                )
            self._unknown.add(source)
            pc.schema_unknown += 1
            return None
        pc.schema_misses += 1
        head = self.heads[_MAGIC + source] = _MAGIC + found.to_bytes(4, "big")
        return head

    def close(self) -> None:
        """Release the registry clients."""
        self.copier.close()


__all__ = ["SchemaIdTranslator"]
