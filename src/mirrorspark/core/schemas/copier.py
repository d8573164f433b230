"""Copying a flow's schemas to the target registry and translating their ids, over two injected registries.

Invariants (named by the tests that guard them, ``test_s<n>_...``):

S1. A source version is registered on the target only after every earlier version of its subject that the
    target lacks (so the target numbers a subject's versions in the source's order) and after every version
    it references (under their target names).
S2. A target id is returned (and cached) only once the target registry holds the schema under its subject:
    a record carrying it is produced after its schema is registered, never before.
S3. A target subject that holds a version the source subject does not hold is never written to: the copy
    stops with SchemaSubjectConflictError naming both subjects, as it does when the target refuses a version.
S4. Registration is idempotent: a version the target already holds is never added again (found by lookup,
    or registered again, which gives its id and adds no version), so a copier restarted, or running beside
    another (the driver's sync beside the tasks'), adds none.
S5. An id the source registry does not know translates to ``None`` (the caller fails the record or copies it
    unchanged); it is never registered anywhere.
"""

from __future__ import annotations

from collections.abc import Container
from dataclasses import dataclass

from mirrorspark.core.schemas.failures import reference_cycle, subject_conflict
from mirrorspark.core.schemas.registry import SchemaReference, SchemaRegistryLike, SchemaText, SubjectVersion
from mirrorspark.core.schemas.subject_naming import UnmatchedSubjects, target_subject
from mirrorspark.errors import SchemaSubjectConflictError
from mirrorspark.mm2.filters import TopicFilter
from mirrorspark.mm2.policy import ReplicationPolicy


class ReplicatedTopics(Container[str]):
    """The topics a flow's topic filter passes, as a container (``t in topics``), for naming subjects."""

    __slots__ = ("_filter",)

    def __init__(self, topic_filter: TopicFilter) -> None:
        self._filter = topic_filter

    def __contains__(self, topic: object) -> bool:
        return isinstance(topic, str) and self._filter.should_replicate_topic(topic)

    def __reduce__(self) -> tuple[object, ...]:
        return (ReplicatedTopics, (self._filter,))


@dataclass(frozen=True, slots=True)
class SubjectNaming:
    """A flow's rule for subject names on the target (``subject_naming``'s rule with the flow's policy and topics)."""

    source_alias: str
    policy: ReplicationPolicy
    topics: Container[str]

    def target(self, subject: str, unmatched: UnmatchedSubjects = UnmatchedSubjects.SKIP) -> str | None:
        """Return ``subject``'s name on the target, ``None`` if it is not copied (``unmatched`` subjects skipped)."""
        return target_subject(
            subject, topics=self.topics, source_alias=self.source_alias, policy=self.policy, unmatched=unmatched
        )


@dataclass(frozen=True, slots=True)
class _Copied:
    """A source version as the target holds it: its target subject, target id and the schema as registered there."""

    subject: str
    schema_id: int
    schema: SchemaText


@dataclass(frozen=True, slots=True)
class SubjectCopy:
    """What one subject's copy found: its target name, how many source versions it has, how many were registered."""

    target_subject: str
    versions: int
    registered: int


class SchemaCopier:
    """Copies schemas from ``source`` to ``target`` under ``naming``'s subject names and translates ids (module S1-S5).

    Not thread-safe: one per copy task, one for the driver's sync. ``registered`` counts the versions this copier
    registered on the target.
    """

    def __init__(self, source: SchemaRegistryLike, target: SchemaRegistryLike, naming: SubjectNaming) -> None:
        self.source = source
        self.target = target
        self.naming = naming
        self.registered = 0
        self._ids: dict[int, int] = {}  # source id -> target id (S2: only after the target holds it)
        self._copied: dict[SubjectVersion, _Copied] = {}
        self._checked: set[str] = set()  # target subjects checked for versions of their own (S3)
        self._versions: dict[str, list[int]] = {}  # the source subjects' versions as last read
        self._target_versions: dict[_Copied, int] = {}

    def target_id(self, source_id: int, fallback_subject: str) -> int | None:
        """Return the target's id of the schema with ``source_id`` on the source, copying it first if needed.

        The schema is copied under every subject the source registers it in (renamed by the flow's naming; a
        subject of no strategy keeps its name); under ``fallback_subject`` (a record's own target subject) only
        when the source lists none. ``None``: the source registry does not know ``source_id`` (S5).

        Raises SchemaSubjectConflictError (S3), SchemaReferenceCycleError, SchemaRegistryError.
        """
        found = self._ids.get(source_id)
        if found is not None:
            return found
        schema = self.source.schema(source_id)
        if schema is None:
            return None
        placed = sorted(self.source.versions_of(source_id))
        target_id = None
        for sv in placed:
            subject = self.naming.target(sv.subject, UnmatchedSubjects.KEEP)
            if subject is None:
                continue
            if SubjectVersion(sv.subject, sv.version - 1) in self._copied:  # the next version of a subject held
                target_id = self._register_next(sv, subject, source_id, schema)
            else:
                target_id = self._copy_through(sv.subject, sv.version, subject, ()).schema_id
        if target_id is None:
            target_id = self.target.register(fallback_subject, self._on_target(schema, ()))
            self.registered += 1
        self._ids[source_id] = target_id
        return target_id

    def _register_next(self, sv: SubjectVersion, name: str, source_id: int, schema: SchemaText) -> int:
        """Register version ``sv``, the one after a version the target holds (S1), with no lookup first (S4).

        A schema evolving while records flow takes this path: one registration, not a walk of the subject.
        """
        return self._register(sv, name, self._on_target(schema, (sv,)), source_id)

    def _register(self, key: SubjectVersion, name: str, on_target: SchemaText, source_id: int) -> int:
        """Register source version ``key`` as ``name`` on the target; a refusal is a conflict naming both (S3)."""
        try:
            target_id = self.target.register(name, on_target)
        except SchemaSubjectConflictError as e:
            raise subject_conflict(
                source_subject=key.subject, target_subject=name, version=key.version, detail=str(e)
            ) from e
        self._remember(key, name, target_id, on_target, source_id)
        return target_id

    def close(self) -> None:
        """Release both registry clients (those that hold anything to release)."""
        for client in (self.source, self.target):
            close = getattr(client, "close", None)
            if close is not None:
                close()

    def known_ids(self) -> dict[int, int]:
        """Return the translations found so far, source id to target id (each one held by the target: S2)."""
        return dict(self._ids)

    def copy_subject(self, subject: str, unmatched: UnmatchedSubjects = UnmatchedSubjects.SKIP) -> SubjectCopy | None:
        """Copy every version of source ``subject`` the target lacks, in order, and its compatibility level.

        ``None``: the naming skips the subject, or the source no longer has it. Raises as :meth:`target_id`.
        """
        name = self.naming.target(subject, unmatched)
        if name is None:
            return None
        versions = self._source_versions(subject, refresh=True)
        if not versions:
            return None
        before = self.registered
        self._copy_through(subject, versions[-1], name, ())
        self._copy_compatibility(subject, name)
        return SubjectCopy(name, len(versions), self.registered - before)

    def _source_versions(self, subject: str, *, refresh: bool = False, needed: int | None = None) -> list[int]:
        versions = self._versions.get(subject)
        if versions is None or refresh or (needed is not None and needed not in versions):
            versions = self._versions[subject] = self.source.versions(subject)
        return versions

    def _copy_through(self, subject: str, version: int, name: str, referencing: tuple[SubjectVersion, ...]) -> _Copied:
        """Make the target hold ``subject``'s versions up to ``version`` as ``name`` (S1, S4); return ``version``'s."""
        done = self._copied.get(SubjectVersion(subject, version))
        if done is not None:
            return done
        pending: list[tuple[SubjectVersion, int, SchemaText]] = []
        earlier = sorted({v for v in self._source_versions(subject, needed=version) if v < version} | {version})
        for v in reversed(earlier):  # newest first, down to the newest version the target already holds
            key = SubjectVersion(subject, v)
            if key in self._copied:
                break
            source_id, schema = self.source.version(subject, v)
            on_target = self._on_target(schema, (*referencing, key))
            held = self.target.lookup(name, on_target)
            if held is not None:
                self._remember(key, name, held[0], on_target, source_id)
                break
            pending.append((key, source_id, on_target))
        if pending:
            self._check_own_versions(subject, name)
        for key, source_id, on_target in reversed(pending):
            self._register(key, name, on_target, source_id)
            self.registered += 1  # found missing by lookup: a version added (the next-version path may re-register)
        return self._copied[SubjectVersion(subject, version)]

    def _remember(self, key: SubjectVersion, name: str, target_id: int, schema: SchemaText, source_id: int) -> None:
        self._copied[key] = _Copied(name, target_id, schema)
        self._ids[source_id] = target_id

    def _on_target(self, schema: SchemaText, referencing: tuple[SubjectVersion, ...]) -> SchemaText:
        """Return ``schema`` with its references copied first and renamed to their target subjects and versions."""
        if not schema.references:
            return schema
        refs = []
        for ref in schema.references:
            key = SubjectVersion(ref.subject, ref.version)
            if key in referencing:
                raise reference_cycle([*referencing[referencing.index(key) :]])
            name = self.naming.target(ref.subject, UnmatchedSubjects.KEEP) or ref.subject
            copied = self._copy_through(ref.subject, ref.version, name, referencing)
            refs.append(SchemaReference(ref.name, copied.subject, self._target_version(copied)))
        return SchemaText(schema.schema, schema.schema_type, tuple(refs))

    def _target_version(self, copied: _Copied) -> int:
        """Return the target's version number of a copied version (asked once)."""
        found = self._target_versions.get(copied)
        if found is not None:
            return found
        held = self.target.lookup(copied.subject, copied.schema)
        if held is None:
            raise subject_conflict(
                source_subject=copied.subject,
                target_subject=copied.subject,
                version=0,
                detail="a referenced schema registered there is no longer found",
            )
        self._target_versions[copied] = held[1]
        return held[1]

    def _check_own_versions(self, subject: str, name: str) -> None:
        """Refuse to write to target subject ``name`` if its latest version is not one of the source's (S3)."""
        if name in self._checked:
            return
        versions = self.target.versions(name)
        if versions:
            _, latest = self.target.version(name, versions[-1])
            if self.source.lookup(subject, self._as_source(latest)) is None:
                raise subject_conflict(
                    source_subject=subject,
                    target_subject=name,
                    version=versions[-1],
                    detail=f"its version {versions[-1]} is no version of '{subject}' on the source",
                )
        self._checked.add(name)

    def _as_source(self, schema: SchemaText) -> SchemaText:
        """Return a target schema with its references named back as on the source (for a lookup there)."""
        if not schema.references:
            return schema
        refs = []
        for r in schema.references:
            back = [
                k for k, c in self._copied.items() if c.subject == r.subject and self._target_version(c) == r.version
            ]
            refs.append(SchemaReference(r.name, *(back[0] if back else (r.subject, r.version))))
        return SchemaText(schema.schema, schema.schema_type, tuple(refs))

    def _copy_compatibility(self, subject: str, name: str) -> None:
        level = self.source.compatibility(subject)
        if level is not None and self.target.compatibility(name) != level:
            self.target.set_compatibility(name, level)


__all__ = ["ReplicatedTopics", "SchemaCopier", "SubjectCopy", "SubjectNaming"]
