"""The internal topics of one flow, named once at its start from its config and policy.

MM2 names its internal topics on the ``ReplicationPolicy`` (``offsetSyncsTopic``, ``checkpointsTopic``,
``heartbeatsTopic``) and Kafka Connect's in ``MirrorMakerConfig.workerConfig``; mirrorspark's own are
named like the offset-syncs topic (:func:`~mirrorspark.mm2.internal_topics.mirrorspark_topic`). The
rules live in :mod:`mirrorspark.mm2.internal_topics` (and the prefixes of mirrorspark's own records in
:mod:`mirrorspark.core`); :class:`InternalTopics` applies them once per flow
(:meth:`~mirrorspark.client.context.FlowContext.build`), and every component reads its name there.
"""

from __future__ import annotations

from dataclasses import dataclass

from mirrorspark.config.model import FlowConfig
from mirrorspark.core.drills import DRILLS_PREFIX
from mirrorspark.core.gaps import GAPS_PREFIX
from mirrorspark.core.lease_claims import LEASE_PREFIX
from mirrorspark.core.verify.history import VERIFY_PREFIX
from mirrorspark.mm2.internal_topics import (
    CONTROL_PREFIX,
    TASK_PROGRESS_PREFIX,
    TOTALS_PREFIX,
    NamingPolicy,
    connect_status_topic,
    mirrorspark_topic,
)


@dataclass(frozen=True, kw_only=True)
class InternalTopics:
    """Every internal topic of one flow ``S->T``; all on T except the offset syncs when located on S.

    Attributes
    ----------
    offsets, connect_configs, connect_status:
        Kafka Connect's (``offset.storage.topic``, ``config.storage.topic``, ``mm2-status.S.internal``).
    offset_syncs, checkpoints, heartbeats:
        MM2's; the offset syncs are named after the cluster they are not on.
    progress_channel, totals:
        The copy tasks' reports to the driver; lifetime copy totals and flow states.
    control, gaps, lease, drills, verifications:
        Live allow/deny list changes, the gap ledger, the lease claims of the flows from S, drill history, verify
        history.
    """

    offsets: str
    connect_configs: str
    connect_status: str
    offset_syncs: str
    checkpoints: str
    heartbeats: str
    progress_channel: str
    totals: str
    control: str
    gaps: str
    lease: str
    drills: str
    verifications: str

    @classmethod
    def of(cls, flow: FlowConfig, policy: NamingPolicy) -> InternalTopics:
        """Name the internal topics of ``flow`` with its replication ``policy`` (``source.cluster.alias`` = S)."""
        s = flow.source

        def own(prefix: str) -> str:
            return mirrorspark_topic(prefix, policy, s)

        return cls(
            offsets=flow.offset_storage_topic,
            connect_configs=flow.config_storage_topic,
            connect_status=connect_status_topic(s),
            offset_syncs=policy.offset_syncs_topic(flow.target if flow.offset_syncs_topic_location == "source" else s),
            checkpoints=policy.checkpoints_topic(s),
            heartbeats=policy.heartbeats_topic(),
            progress_channel=own(TASK_PROGRESS_PREFIX),
            totals=own(TOTALS_PREFIX),
            control=own(CONTROL_PREFIX),
            gaps=own(GAPS_PREFIX),
            lease=own(LEASE_PREFIX),
            drills=own(DRILLS_PREFIX),
            verifications=own(VERIFY_PREFIX),
        )


__all__ = ["InternalTopics"]
