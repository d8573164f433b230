"""Topic ACL sync, MM2's way (``MirrorSourceConnector.syncTopicAcls``, mm2.md §9.5).

Every ``sync.topic.acls.interval.seconds`` (first right after start) the source's TOPIC ACL bindings
are mapped by MM2's rule (:func:`target_acl_bindings`) and those the target lacks are created there;
ACLs are only ever added, never deleted. A source or target without an authorizer is skipped (told
once, as MM2). The principal needs DESCRIBE on S's cluster and ALTER on T's.

librdkafka (2.16.1 and earlier) ignores DescribeAcls error codes: no authorizer and no DESCRIBE both
come back as an empty list. So an empty source listing is explained by calls that do report errors
(the principal's authorized cluster operations, KIP-430, and ``authorizer.class.name``).

Quirk kept from MM2: a literal ``*`` topic ACL is copied as a literal ACL on the topic ``S.*``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Protocol

from confluent_kafka import KafkaError
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    ResourcePatternType,
    ResourceType,
)

from mirrorspark.errors import ClusterError, ClusterUnreachableError
from mirrorspark.kafka.admin import ClusterAdmin

if TYPE_CHECKING:
    from mirrorspark.config.model import FlowConfig
    from mirrorspark.mm2.policy import ReplicationPolicy

log = logging.getLogger(__name__)


class AclFlow(Protocol):
    """What an ACL sync reads of its :class:`~mirrorspark.replication.connector.flow.Flow`."""

    @property
    def name(self) -> str: ...
    @property
    def config(self) -> FlowConfig: ...
    @property
    def policy(self) -> ReplicationPolicy: ...
    @property
    def source_admin(self) -> ClusterAdmin: ...
    @property
    def target_admin(self) -> ClusterAdmin: ...
    def should_replicate(self, topic: str) -> bool: ...


_SOURCE_TOPIC_ACLS = AclBindingFilter(  # None matches any name, principal, host (the stubs say str)
    ResourceType.TOPIC,
    None,  # type: ignore[arg-type]
    ResourcePatternType.ANY,
    None,  # type: ignore[arg-type]
    None,  # type: ignore[arg-type]
    AclOperation.ANY,
    AclPermissionType.ANY,
)
"""MM2's ``ANY_TOPIC_ACL``: every TOPIC binding, any pattern type, principal, host, operation, permission."""

_TARGET_TOPIC_ACLS = AclBindingFilter(  # None matches any name, principal, host (the stubs say str)
    ResourceType.TOPIC,
    None,  # type: ignore[arg-type]
    ResourcePatternType.LITERAL,
    None,  # type: ignore[arg-type]
    None,  # type: ignore[arg-type]
    AclOperation.ANY,
    AclPermissionType.ANY,
)
"""Every literal TOPIC binding (the only kind the sync creates)."""


def target_acl_bindings(
    bindings: Iterable[AclBinding],
    *,
    should_replicate: Callable[[str], bool],
    remote_topic: Callable[[str], str],
) -> list[AclBinding]:
    """Map source topic ACL bindings to their remote topics' (MM2's rule, pure); sorted, without duplicates.

    Only LITERAL TOPIC bindings of replicated topics, renamed by ``remote_topic``; ALLOW WRITE dropped,
    ALLOW ALL becomes ALLOW READ, everything else (DENY included) copied unchanged.
    """
    out: set[AclBinding] = set()
    for b in bindings:
        if b.restype != ResourceType.TOPIC or b.resource_pattern_type != ResourcePatternType.LITERAL:
            continue
        allow = b.permission_type == AclPermissionType.ALLOW
        if allow and b.operation == AclOperation.WRITE:
            continue
        if not should_replicate(b.name):
            continue
        operation = AclOperation.READ if allow and b.operation == AclOperation.ALL else b.operation
        out.add(
            AclBinding(
                ResourceType.TOPIC,
                remote_topic(b.name),
                ResourcePatternType.LITERAL,
                b.principal,
                b.host,
                operation,
                b.permission_type,
            )
        )
    return sorted(out)


class TopicAclSync:
    """The ACL-sync job of one flow (MM2 ``syncTopicAcls``); not thread-safe.

    ``admins`` returns the ``(source, target)`` admin wrappers at every :meth:`sync`, so this object keeps
    no closed flow's clients alive.
    """

    def __init__(
        self,
        *,
        name: str,
        source: str,
        target: str,
        admins: Callable[[], tuple[ClusterAdmin, ClusterAdmin]],
        should_replicate: Callable[[str], bool],
        remote_topic: Callable[[str], str],
    ) -> None:
        self.name = name
        self.source = source
        self.target = target
        self._admins = admins
        self._should_replicate = should_replicate
        self._remote_topic = remote_topic
        self._told_no_authorizer: set[str] = set()
        self.created = 0
        """Bindings created on the target by this object so far."""

    @classmethod
    def for_flow(cls, flow: AclFlow) -> TopicAclSync:
        """Build a flow's ACL sync (its admin wrappers, filter and policy); it creates nothing until :meth:`sync`."""
        source = flow.config.source
        return cls(
            name=flow.name,
            source=source,
            target=flow.config.target,
            admins=lambda: (flow.source_admin, flow.target_admin),
            should_replicate=flow.should_replicate,
            remote_topic=lambda topic: flow.policy.format_remote_topic(source, topic),
        )

    def sync(self) -> int:
        """Copy the source's topic ACLs to the remote topics; return how many bindings this call created.

        Raises ``ClusterError`` when describing or creating ACLs fails (naming the permission needed; bindings
        created before stay) and ``ClusterUnreachableError`` when an admin call timed out.
        """
        missing = self.missing()
        if not missing:
            return 0
        _, target_admin = self._admins()
        try:
            outcomes = target_admin.create_acls(missing)
        except ClusterError as e:
            raise self._explained(e, self.target) from e
        failures = [(binding, err) for binding, err in outcomes.items() if err is not None]
        created = len(outcomes) - len(failures)
        self.created += created
        if created:
            log.info("%s: created %d topic ACL bindings on %s", self.name, created, self.target)
        if not failures:
            return created
        binding, err = failures[0]
        assert err is not None
        if err.code() == KafkaError.SECURITY_DISABLED and not created:
            self._no_authorizer(self.target, "target")
            return 0
        hint = ""
        if err.code() == KafkaError.CLUSTER_AUTHORIZATION_FAILED:
            hint = f"; the replication principal needs ALTER on the cluster resource of '{self.target}'"
        raise ClusterError(
            f"{self.name}: creating {len(failures)} of {len(missing)} topic ACL bindings on cluster "
            f"'{self.target}' failed, e.g. {_describe_binding(binding)}: {_reason(err)}{hint}",
            kafka_code=err.name(),
            retriable=bool(err.retriable()),
        )

    def missing(self) -> list[AclBinding]:
        """Return the target bindings the source's topic ACLs map to that the target lacks, writing nothing.

        Raises ``ClusterError`` when ACLs cannot be described (naming the permission needed) and
        ``ClusterUnreachableError`` when an admin call timed out.
        """
        source_admin, target_admin = self._admins()
        source_bindings = self._describe(source_admin, _SOURCE_TOPIC_ACLS)
        if not source_bindings:
            self._explain_empty_source(source_admin)
            return []
        wanted = target_acl_bindings(
            source_bindings, should_replicate=self._should_replicate, remote_topic=self._remote_topic
        )
        if not wanted:
            return []
        have = set(self._describe(target_admin, _TARGET_TOPIC_ACLS))
        return [b for b in wanted if b not in have]

    def _describe(self, admin: ClusterAdmin, flt: AclBindingFilter) -> list[AclBinding]:
        """Describe ACLs (``[]`` without an authorizer; librdkafka reports no error, see the module notes)."""
        try:
            return admin.describe_acls(flt)
        except ClusterError as e:
            raise self._explained(e, admin.alias) from e

    def _explain_empty_source(self, admin: ClusterAdmin) -> None:
        """Explain an empty source ACL listing: none, no authorizer (told once), or no DESCRIBE (``ClusterError``)."""
        try:
            cluster = admin.describe_cluster(include_authorized_operations=True)
        except ClusterError as e:
            raise self._explained(e, self.source) from e
        ops = cluster.authorized_operations or []  # without an authorizer: every cluster operation
        if AclOperation.DESCRIBE not in ops:
            raise ClusterError(
                f"{self.name}: cannot describe the topic ACLs of cluster '{self.source}': the replication "
                f"principal needs DESCRIBE on the cluster resource of '{self.source}' (or set "
                "sync.topic.acls.enabled=false)",
                kafka_code="CLUSTER_AUTHORIZATION_FAILED",
            )
        if not cluster.nodes:
            return
        try:
            entries = admin.broker_config(cluster.nodes[0].id)
        except ClusterUnreachableError:
            raise
        except ClusterError:
            return  # e.g. CLUSTER_AUTHORIZATION_FAILED: only an authorizer refuses
        if "authorizer.class.name" in entries and not entries["authorizer.class.name"]:
            self._no_authorizer(self.source, "source")

    def _explained(self, e: ClusterError, alias: str) -> ClusterError:
        """Name the flow in the admin wrapper's error and, for a missing cluster permission, which one to grant."""
        hint = ""
        if e.kafka_code == "CLUSTER_AUTHORIZATION_FAILED":
            op = "DESCRIBE" if alias == self.source else "ALTER"
            hint = (
                f"; the replication principal needs {op} on the cluster resource of '{alias}' "
                "(or set sync.topic.acls.enabled=false)"
            )
        return type(e)(f"{self.name}: {e.message}{hint}", kafka_code=e.kafka_code, retriable=e.retriable)

    def _no_authorizer(self, alias: str, side: str) -> None:
        if alias in self._told_no_authorizer:
            log.debug("%s: ACL sync skipped: cluster '%s' has no authorizer", self.name, alias)
            return
        self._told_no_authorizer.add(alias)
        if side == "source":
            log.info(
                "%s: cluster '%s' has no authorizer, so there are no topic ACLs to sync; "
                "consider setting sync.topic.acls.enabled=false",
                self.name,
                alias,
            )
        else:
            log.warning(
                "%s: the source has topic ACLs but target cluster '%s' has no authorizer, so they are not "
                "copied; set sync.topic.acls.enabled=false to stop trying",
                self.name,
                alias,
            )


def sync_topic_acls(flow: AclFlow) -> int:
    """Run one ACL sync for a flow now; return how many bindings were created (raises as :meth:`TopicAclSync.sync`)."""
    return TopicAclSync.for_flow(flow).sync()


def _reason(err: KafkaError) -> str:
    """Describe a Kafka error for a message: its name, and its text when that is short (some brokers send a page)."""
    text = err.str()
    return f"{text} ({err.name()})" if len(text) <= 200 else err.name()


def _describe_binding(b: AclBinding) -> str:
    return (
        f"{b.permission_type.name} {b.operation.name} on topic '{b.name}' "  # type: ignore[union-attr]
        f"for {b.principal}@{b.host}"
    )


__all__ = ["TopicAclSync", "sync_topic_acls", "target_acl_bindings"]
