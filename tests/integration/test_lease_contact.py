"""The lease holder's contact checks against real brokers: answered while connected, grants capped by them."""

from __future__ import annotations

import time

import pytest
from helpers import assert_eventually, unique_name

from mirrorspark.client.context import FlowContext
from mirrorspark.config.parse import parse_config
from mirrorspark.config.properties import parse_properties
from mirrorspark.kafka.local.model import LocalClusters
from mirrorspark.replication.worker.lease import SESSION_TIMEOUT_MS, FlowLease
from mirrorspark.replication.worker.lease_window import CONTACT_MARGIN_MS

pytestmark = pytest.mark.integration


def test_the_coordinator_answers_the_holders_contact_checks_also_while_a_standby_joins(
    local_clusters: LocalClusters,
) -> None:
    """L2 and L3 (``worker/lease.py``): real answers carry the check's tag (commit metadata), so contact moves."""
    cfg = parse_config(parse_properties(local_clusters.mm2_properties([("primary", "backup")])))
    ctx = FlowContext.build(cfg, cfg.flow("primary", "backup"))
    group = unique_name("lease-contact")
    holder = FlowLease(ctx, group_id=group, holder="holder")
    standby = FlowLease(ctx, group_id=group, holder="standby")
    try:
        holder.start()
        assert holder.wait_acquired(60)
        epoch, claimed = holder.epoch, holder.contact_at
        assert claimed > 0  # the claim's commit is the first contact
        assert_eventually(lambda: holder.contact_at > claimed, timeout_s=30, message="no contact check answered")
        standby.start()  # a rebalance: the holder keeps the lease (cooperative-sticky) and its contact
        assert_eventually(lambda: standby.standby, timeout_s=60, message="the standby never joined")
        seen = holder.contact_at
        assert_eventually(lambda: holder.contact_at > seen, timeout_s=30, message="contact lost after the join")
        now = time.monotonic()
        deadline = holder.grant(epoch, 60.0)
        assert deadline is not None
        assert deadline <= holder.contact_at + (SESSION_TIMEOUT_MS - CONTACT_MARGIN_MS) / 1000
        assert deadline > now
        assert holder.grant(epoch + 1, 60.0) is None
    finally:
        standby.close()
        holder.close()
