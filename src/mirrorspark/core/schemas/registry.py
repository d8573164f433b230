"""What schema replication needs of a Schema Registry (Confluent's REST API), as a Protocol and plain values.

The adapter over a real registry is :class:`mirrorspark.registry.RegistryClient`; ``tests/fakes.py`` has an
in-memory one. Ids and versions are the registry's own (ids from 1, versions from 1 per subject).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from mirrorspark.core.schemas.references import SubjectVersion


@dataclass(frozen=True, slots=True)
class SchemaReference:
    """A reference of a schema to another subject's version: ``name`` as the schema text names it."""

    name: str
    subject: str
    version: int


@dataclass(frozen=True, slots=True)
class SchemaText:
    """A schema as registered: its text, ``schema_type`` (``"AVRO"``, ``"PROTOBUF"``, ``"JSON"``) and references."""

    schema: str
    schema_type: str = "AVRO"
    references: tuple[SchemaReference, ...] = ()


class SchemaRegistryLike(Protocol):
    """The calls schema replication makes of one registry (Confluent's REST API).

    Every method raises :class:`~mirrorspark.errors.SchemaRegistryError` naming the registry (credentials
    masked) when it cannot be reached or answers with an unexpected error.
    """

    @property
    def name(self) -> str:
        """The registry's URL without credentials, for messages."""
        ...

    def schema(self, schema_id: int) -> SchemaText | None:
        """``GET /schemas/ids/{id}``: the schema with this id, ``None`` if the registry has no such id."""
        ...

    def versions_of(self, schema_id: int) -> list[SubjectVersion]:
        """``GET /schemas/ids/{id}/versions``: every (subject, version) registered with this id (``[]``: none)."""
        ...

    def subjects(self) -> list[str]:
        """``GET /subjects``: the registry's subjects (soft-deleted ones left out)."""
        ...

    def versions(self, subject: str) -> list[int]:
        """``GET /subjects/{s}/versions``: the subject's versions in ascending order (``[]``: no such subject)."""
        ...

    def version(self, subject: str, version: int) -> tuple[int, SchemaText]:
        """``GET /subjects/{s}/versions/{v}``: the version's schema id and schema."""
        ...

    def lookup(self, subject: str, schema: SchemaText) -> tuple[int, int] | None:
        """``POST /subjects/{s}``: ``(id, version)`` if ``subject`` holds ``schema``, else ``None``."""
        ...

    def register(self, subject: str, schema: SchemaText) -> int:
        """``POST /subjects/{s}/versions``: register ``schema`` under ``subject``, return its id (idempotent).

        Raises SchemaSubjectConflictError (HTTP 409) when the subject's compatibility level refuses it.
        """
        ...

    def compatibility(self, subject: str) -> str | None:
        """``GET /config/{s}``: the subject's own compatibility level (``"BACKWARD"``, ...), ``None`` if unset."""
        ...

    def set_compatibility(self, subject: str, level: str) -> None:
        """``PUT /config/{s}``: set the subject's compatibility level."""
        ...


__all__ = ["SchemaReference", "SchemaRegistryLike", "SchemaText", "SubjectVersion"]
