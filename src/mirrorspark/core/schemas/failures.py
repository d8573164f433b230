"""The errors of schema replication, their messages naming what failed and the fix."""

from __future__ import annotations

from typing import Final

from mirrorspark.core.schemas.references import SubjectVersion, cycle_error
from mirrorspark.errors import SchemaIdUnknownError, SchemaReferenceCycleError, SchemaSubjectConflictError

UNKNOWN_IDS_KEY: Final = "sync.schemas.unknown.ids"
"""The key whose value ``copy`` copies records with an unknown schema id unchanged (named by the error's message)."""

UNKNOWN_IDS_COPY: Final = "copy"
"""The value of :data:`UNKNOWN_IDS_KEY` that copies such records unchanged (counted as unknown ids)."""


def unknown_schema_id(
    *, topic: str, partition: int, offset: int, schema_id: int, is_key: bool, flow: str | None = None
) -> SchemaIdUnknownError:
    """Build the error of a record whose key or value carries ``schema_id``, unknown to the source registry."""
    where = f"{topic}-{partition}"
    part = "key" if is_key else "value"
    key = f"{flow}.{UNKNOWN_IDS_KEY}" if flow else UNKNOWN_IDS_KEY
    error = SchemaIdUnknownError(
        f"record {where}@{offset}: its {part} is in Confluent's wire format with schema id {schema_id}, which the "
        f"source registry does not know (not written through it, or its schema was deleted for good), so no target "
        f"id exists for it; set '{key} = {UNKNOWN_IDS_COPY}' to copy such records unchanged (counted as unknown "
        f"ids); nothing after offset {offset} was committed"
    )
    error.partition = where
    return error


def subject_conflict(
    *, source_subject: str, target_subject: str, version: int, detail: str
) -> SchemaSubjectConflictError:
    """Build the error of a target subject whose versions are incompatible with ``source_subject``'s ``version``."""
    return SchemaSubjectConflictError(
        f"subject '{target_subject}' on the target registry already holds versions incompatible with version "
        f"{version} of source subject '{source_subject}' ({detail}): it is not a copy of the source's, so its "
        f"records cannot get their schema there; delete it on the target (DELETE /subjects/{target_subject}, then "
        "again with ?permanent=true) if nothing on the target uses it, or replicate under other names (a "
        "replication policy that renames topics, such as DefaultReplicationPolicy, renames their subjects too)"
    )


def reference_cycle(cycle: list[SubjectVersion]) -> SchemaReferenceCycleError:
    """Build the error of versions that reference each other in ``cycle`` (each referencing the next)."""
    return cycle_error(cycle, len(cycle))


__all__ = ["UNKNOWN_IDS_COPY", "UNKNOWN_IDS_KEY", "reference_cycle", "subject_conflict", "unknown_schema_id"]
