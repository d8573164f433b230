"""Topic ACL sync, MM2's way (``MirrorSourceConnector.syncTopicAcls``, mm2.md §9.5).

Every ``sync.topic.acls.interval.seconds`` (first run right after start, as MM2),
for a flow ``S->T``:

1. describe every TOPIC ACL binding on S (any pattern type);
2. map them with MM2's rule (:func:`target_acl_bindings`, pure):

   * keep only resource type TOPIC with pattern type LITERAL (prefixed ACLs are
     not copied);
   * drop ALLOW WRITE (a remote topic is written by the replicator only);
   * keep only topics the flow replicates (``shouldReplicateTopic``);
   * rename the resource to the remote topic name (still LITERAL);
   * ALLOW ALL becomes ALLOW READ; DENY entries (DENY ALL included) and every other
     operation are copied unchanged; principal and host are unchanged;

3. create on T the mapped bindings T does not have yet. ACLs are only ever
   added on the target, never deleted (a binding removed on S stays on T).

A source without an authorizer (``SECURITY_DISABLED``) is skipped: the first time
at info level with the hint to set ``sync.topic.acls.enabled=false``, later at
debug level (MM2 does the same). A target without an authorizer is skipped
likewise, with a warning the first time.

The replication principal needs DESCRIBE on S's cluster resource (DescribeAcls)
and ALTER on T's cluster resource (CreateAcls; ALTER implies DESCRIBE).

**librdkafka drops DescribeAcls errors.** librdkafka (2.16.1 and earlier) ignores
the error code of a DescribeAcls response: a cluster without an authorizer
(``SECURITY_DISABLED``) and a principal without DESCRIBE on the cluster
(``CLUSTER_AUTHORIZATION_FAILED``) both come back as an *empty* list, no error.
So when S lists no topic ACLs, the job asks why, with calls that do report
errors: the principal's authorized cluster operations (DescribeCluster, KIP-430;
without DESCRIBE the job fails, naming the permission) and the broker's
``authorizer.class.name`` (DescribeConfigs: empty = no authorizer; an
authorization error proves there is one). On T, CreateAcls reports
``SECURITY_DISABLED`` and ``CLUSTER_AUTHORIZATION_FAILED`` per binding.

Quirk kept from MM2: a literal ``*`` topic ACL passes the default topic filter
and is copied as a literal ACL on the topic ``S.*`` (not a wildcard).
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
    """What an ACL sync reads of its :class:`~mirrorspark.replication.connector.flow.Flow` (which declares the job)."""

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
    """Map source topic ACL bindings to the bindings of their remote topics (MM2's rule, pure).

    Parameters
    ----------
    bindings:
        ACL bindings described on the source cluster (any resource and pattern type).
    should_replicate:
        Whether the flow replicates a source topic (MM2 ``shouldReplicateTopic``), e.g.
        :meth:`~mirrorspark.replication.connector.flow.Flow.should_replicate`.
    remote_topic:
        Source topic name -> remote topic name on the target (the replication policy's
        ``format_remote_topic`` for the flow's source alias).

    Returns
    -------
    list[AclBinding]
        The target bindings, sorted and without duplicates (e.g. ALLOW ALL and ALLOW READ of
        one principal on one topic both map to one ALLOW READ): resource type TOPIC, pattern
        type LITERAL, resource name the remote topic; principal and host unchanged; ALLOW ALL
        becomes ALLOW READ; ALLOW WRITE is dropped; every other entry (DENY included) is
        copied unchanged. Empty when nothing is to be copied.
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
    """The ACL-sync job of one flow (MM2 ``syncTopicAcls``); see the module docstring.

    Parameters
    ----------
    name:
        The flow's name, ``"S->T"`` (for messages).
    source, target:
        The cluster aliases.
    admins:
        Returns the admin wrappers ``(source, target)`` (each call bounded by its ``admin.timeout.ms``);
        called at every :meth:`sync`, so that this object does not keep a flow's clients alive after
        the flow closed them.
    should_replicate:
        Whether the flow replicates a source topic.
    remote_topic:
        Source topic -> remote topic name.

    Not thread-safe: one scheduler job calls :meth:`sync`.
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
        """Build the ACL sync of a :class:`~mirrorspark.replication.connector.flow.Flow`: its admin wrappers and rules.

        Parameters
        ----------
        flow:
            The flow ``S->T``: its admin wrappers (taken at every :meth:`sync`; each call bounded by
            the flow's ``admin.timeout.ms``), topic filter and replication policy.

        Returns
        -------
        TopicAclSync
            A new job object; it creates nothing until :meth:`sync`.
        """
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
        """Copy the source's topic ACLs to the remote topics; return how many bindings were created.

        Returns
        -------
        int
            Bindings created on the target by this call (0 when the target already has every
            mapped binding, or when the source or target has no authorizer).

        Raises
        ------
        ClusterError
            Describing ACLs on the source or target, or creating them on the target, failed
            (e.g. ``CLUSTER_AUTHORIZATION_FAILED``: the message names the permission needed).
            Bindings created before the failure stay created.
        ClusterUnreachableError
            An admin call timed out.
        """
        source_admin, target_admin = self._admins()
        source_bindings = self._describe(source_admin, _SOURCE_TOPIC_ACLS)
        if not source_bindings:
            self._explain_empty_source(source_admin)
            return 0
        wanted = target_acl_bindings(
            source_bindings, should_replicate=self._should_replicate, remote_topic=self._remote_topic
        )
        if not wanted:
            return 0
        have = set(self._describe(target_admin, _TARGET_TOPIC_ACLS))
        missing = [b for b in wanted if b not in have]
        if not missing:
            return 0
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

    def _describe(self, admin: ClusterAdmin, flt: AclBindingFilter) -> list[AclBinding]:
        """Describe ACLs (``[]`` without an authorizer); librdkafka reports no error today (module docstring)."""
        try:
            return admin.describe_acls(flt)
        except ClusterError as e:
            raise self._explained(e, admin.alias) from e

    def _explain_empty_source(self, admin: ClusterAdmin) -> None:
        """Explain why the source listed no topic ACLs: it has none, or no authorizer (told once), or we may not look.

        Raises
        ------
        ClusterError
            The principal may not describe the source's ACLs (no DESCRIBE on its cluster resource).
        """
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
    """Run one ACL sync for a flow now; return how many bindings were created on its target.

    A one-shot :meth:`TopicAclSync.sync` (the driver's scheduled job keeps one
    :class:`TopicAclSync` per flow, so that "no authorizer" is logged only once).

    Raises
    ------
    ClusterError
        As :meth:`TopicAclSync.sync`.
    """
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
