"""A flow's schema replication on the driver: the registries checked at start, the flow's subjects copied each interval.

What is copied (``core.schemas.copier``): every subject of the source registry the flow's subject naming keeps
(TopicNameStrategy and TopicRecordNameStrategy subjects of the topics the flow's topic filter passes, renamed as
the policy renames the topic; RecordNameStrategy subjects under their own name), every version in order with its
references first, and the subject's own compatibility level. The copy tasks copy what their records need on their
own (the schema before the record); this job keeps the rest in step, like Redpanda's shadow links' polling.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable

from mirrorspark.client.context import FlowContext
from mirrorspark.core.schemas.copier import ReplicatedTopics, SchemaCopier, SubjectNaming
from mirrorspark.core.schemas.figures import SchemaSyncFigures
from mirrorspark.errors import MirrorsparkError
from mirrorspark.mm2.filters import TopicFilter
from mirrorspark.replication.connector.scheduler import PeriodicJob
from mirrorspark.replication.task.spec import SchemaIdsSpec

log = logging.getLogger(__name__)


class SchemaSync:
    """Flow ``S->T``'s schema replication, driver side: the first copy at start, then a periodic job."""

    def __init__(self, context: FlowContext, topic_filter: Callable[[], TopicFilter]) -> None:
        cfg = context.flow_config
        source, target = context.cluster("source").schema_registry, context.cluster("target").schema_registry
        if source is None or target is None:  # config/ turns sync.schemas.enabled off without both registries
            raise ValueError(f"flow {cfg.name}: schema replication needs both clusters' registries")
        self.flow = cfg.name
        self.source_alias = cfg.source
        self.policy = context.policy
        self.interval_s = float(cfg.sync_schemas_interval_s)
        self.copy_unknown = cfg.sync_schemas_unknown_ids == "copy"
        self._settings = (source, target)
        self._context = context
        self._topic_filter = topic_filter
        self._copier: SchemaCopier | None = None
        self._figures = SchemaSyncFigures()

    @classmethod
    def for_flow(cls, context: FlowContext, topic_filter: Callable[[], TopicFilter]) -> SchemaSync | None:
        """Return the flow's schema sync, ``None`` when it copies records as they are (``sync.schemas.enabled``)."""
        return cls(context, topic_filter) if context.flow_config.sync_schemas_enabled else None

    def naming(self) -> SubjectNaming:
        """Return the flow's subject naming now (the topic filter in effect: live lists change it)."""
        return SubjectNaming(self.source_alias, self.policy, ReplicatedTopics(self._topic_filter()))

    def task_spec(self) -> SchemaIdsSpec:
        """Return what the flow's copy tasks need to translate schema ids, with the translations synced so far."""
        known = tuple(sorted(self._copier.known_ids().items())) if self._copier is not None else ()
        return SchemaIdsSpec(*self._settings, self.naming(), self.copy_unknown, known)

    def start(self) -> None:
        """Connect to both registries and copy every subject once, before any copy task starts.

        Raises SchemaRegistryError (a registry unreachable), SchemaSubjectConflictError (a target subject
        holding versions of its own) or SchemaReferenceCycleError, each naming the registry or subject.
        """
        self._copier = SchemaCopier(
            self._context.schema_registry("source"), self._context.schema_registry("target"), self.naming()
        )
        self.sync()

    def sync(self) -> SchemaSyncFigures:
        """Copy every subject the naming keeps that the target lacks in part; return (and keep) the figures.

        Raises as :meth:`start`; subjects after a failing one are still copied, the first error raised at the end.
        """
        copier = self._copier
        if copier is None:
            return self._figures
        copier.naming = self.naming()
        subjects = versions = 0
        first: MirrorsparkError | None = None
        for subject in copier.source.subjects():
            try:
                done = copier.copy_subject(subject)
            except MirrorsparkError as e:
                log.error("flow %s: schema subject %r not copied: %s", self.flow, subject, e)
                first = first or e
                continue
            if done is not None:
                subjects += 1
                versions += done.versions
        now_ms = int(time.time() * 1000)
        self._figures = SchemaSyncFigures(subjects, versions, copier.registered, now_ms, str(first) if first else None)
        if first is not None:
            raise first
        return self._figures

    def run(self) -> None:
        """Run :meth:`sync` as the periodic job: its error logged and kept in the figures (the next pass retries)."""
        try:
            self.sync()
        except MirrorsparkError as e:
            self._figures = dataclasses.replace(self._figures, error=str(e))

    def figures(self) -> SchemaSyncFigures:
        """Return the figures of the last pass (all 0 before the first)."""
        return self._figures

    def jobs(self) -> list[PeriodicJob]:
        """Declare ``sync schemas S->T`` every ``sync.schemas.interval.seconds``, first one interval in."""
        every = self.interval_s
        return [PeriodicJob(f"sync schemas {self.flow}", every, self.run, initial_delay_s=every)]

    def close(self) -> None:
        """Release the registry clients."""
        if self._copier is not None:
            self._copier.close()
            self._copier = None


__all__ = ["SchemaSync"]
