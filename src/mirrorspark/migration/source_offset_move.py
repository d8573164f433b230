"""A flow's source offsets moved to another connector name: ``mirrorspark offsets source move``.

Connect keys source offsets by connector name and KIP-875 has no rename: this writes the newest offset
of each partition under the old name again under the new one, so mirrorspark and MM2 resume there. The
old name's records are left as they are.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from mirrorspark.client.source_offset_reader import read_source_offset_history
from mirrorspark.errors import SourceOffsetsRequestError
from mirrorspark.kafka.admin import PartitionKey
from mirrorspark.kafka.delivery import Outgoing, deliver
from mirrorspark.migration.source_offset_tools import FlowSourceOffsets
from mirrorspark.mm2.connect_offsets import TOPIC_ID_MARKER, default_partition, source_offset_key, source_offset_value

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class MovedOffset:
    """One partition's offset as ``move`` writes it; ``offset`` is the last copied record (resume at ``offset + 1``)."""

    topic: str
    partition: int
    offset: int
    existing: int | None
    key: bytes
    value: bytes

    @property
    def position(self) -> int:
        """The next source offset the flow copies from this offset."""
        return self.offset + 1


@dataclass(frozen=True)
class SourceOffsetsMove:
    """What ``move`` writes (or would write, in a preview); ``running`` says why the flow looks running, or ``None``."""

    flow: str
    offsets_topic: str
    from_connector: str
    to_connector: str
    moves: tuple[MovedOffset, ...]
    applied: bool
    running: str | None
    configured: str

    @property
    def overwrites(self) -> tuple[MovedOffset, ...]:
        """The moves that replace another offset already stored under the new name (a repeated move replaces none)."""
        return tuple(m for m in self.moves if m.existing is not None and m.existing != m.offset)


def move_source_offsets(
    so: FlowSourceOffsets,
    *,
    from_connector: str,
    to_connector: str | None = None,
    topic: str | None = None,
    overwrite: bool = False,
    dry_run: bool = True,
) -> SourceOffsetsMove:
    """Write the source offsets stored under ``from_connector`` again under ``to_connector`` (engine-audit-2 N3).

    ``to_connector`` defaults to the flow's connector name; ``topic`` narrows to one source topic;
    ``overwrite`` replaces other offsets under the new name. Raises SourceOffsetsRequestError for bad names,
    no offsets or a conflict; FlowRunningError when writing while the flow runs (nothing written).
    """
    flow = so.flow_config
    new = to_connector if to_connector is not None else flow.source_connector_name
    _check_names(from_connector, new)
    so.require_offsets_topic()
    others: dict[str, dict[PartitionKey, int]] = {}
    under_new = read_source_offset_history(
        flow.target_consumer,
        flow.target_admin,
        flow.target,
        so.internal_topics.offsets,
        flow.source,
        client_id=so.ctx.client_id("offsets-target-consumer"),
        timeout_s=so.timeout_s,
        clients=so.ctx.clients,
        connector_name=new,
        others=others,
    )
    stored = {
        k: o
        for k, o in others.get(from_connector, {}).items()
        if (k[0] == topic if topic is not None else so.ctx.replicates_topic(k[0]))
    }
    if not stored:
        raise _nothing_stored(so, from_connector, new, topic, others, has_new=bool(under_new))
    moves = tuple(
        MovedOffset(
            t,
            p,
            o,
            under_new[(t, p)].last if (t, p) in under_new else None,
            source_offset_key(flow.source, t, p, connector_name=new),
            source_offset_value(o),
        )
        for (t, p), o in sorted(stored.items())
    )
    running = so.running([from_connector, new]) if dry_run else None
    plan = SourceOffsetsMove(
        flow.name,
        so.internal_topics.offsets,
        from_connector,
        new,
        moves,
        not dry_run,
        running,
        flow.source_connector_name,
    )
    if not dry_run:
        _write(so, plan, overwrite=overwrite)
    return plan


def _check_names(old: str, new: str) -> None:
    if not old.strip() or not new.strip():
        raise SourceOffsetsRequestError("--from-connector and --to-connector need a connector name")
    if old == new:
        raise SourceOffsetsRequestError(
            f"--from-connector and --to-connector are both '{old}': name the connector the offsets are stored "
            "under now and the one to move them to (default: the flow's mirrorspark.source.connector.name)"
        )
    if TOPIC_ID_MARKER in (old, new):
        raise SourceOffsetsRequestError(
            f"'{TOPIC_ID_MARKER}' is mirrorspark's topic-id marker, not a connector: name a source connector"
        )


def _nothing_stored(
    so: FlowSourceOffsets,
    old: str,
    new: str,
    topic: str | None,
    others: dict[str, dict[PartitionKey, int]],
    *,
    has_new: bool,
) -> SourceOffsetsRequestError:
    """Return the error of an old name with no offset of the flow's source: the names that have some."""
    names = [f"'{n}' ({len(kept)} partition(s))" for n, kept in sorted(others.items())]
    if has_new:
        names.append(f"'{new}' (the new name)")
    found = f"names with offsets of cluster '{so.source}' there: {', '.join(names)}" if names else "no name has any"
    which = f" for topic '{topic}'" if topic is not None else ""
    return SourceOffsetsRequestError(
        f"no source offsets of cluster '{so.source}'{which} are stored under connector name '{old}' in "
        f"'{so.internal_topics.offsets}' on cluster '{so.target}' ({found}): check --from-connector, --source and "
        "--topic"
    )


def _write(so: FlowSourceOffsets, plan: SourceOffsetsMove, *, overwrite: bool) -> None:
    """Write ``plan``'s records (refused while the flow runs, or over offsets without ``overwrite``)."""
    if plan.overwrites and not overwrite:
        shown = ", ".join(f"{m.topic}-{m.partition} at {m.existing}" for m in plan.overwrites[:5])
        more = f" and {len(plan.overwrites) - 5} more" if len(plan.overwrites) > 5 else ""
        raise SourceOffsetsRequestError(
            f"connector name '{plan.to_connector}' already has source offsets for {len(plan.overwrites)} of these "
            f"partition(s) in '{plan.offsets_topic}' ({shown}{more}); nothing was written: add --overwrite to replace "
            "them with the old name's, or move only other partitions (--topic)"
        )
    so.require_stopped([plan.from_connector, plan.to_connector])
    partitions = so.offsets_partitions() or so.flow_config.offset_storage_partitions
    producer = so.ctx.producer(
        "target", "offsets-target-producer", overrides={"enable.idempotence": True, "linger.ms": 0}
    )
    deliver(
        producer,
        [
            Outgoing(plan.offsets_topic, m.key, m.value, partition=default_partition(m.key, partitions))
            for m in plan.moves
        ],
        what=f"flow {plan.flow}: source offsets (move to '{plan.to_connector}')",
        alias=so.target,
        hint="some partitions may be moved, others not: run the command again",
    )
    log.info(
        "flow %s: %d source offset(s) moved from connector name '%s' to '%s'",
        plan.flow,
        len(plan.moves),
        plan.from_connector,
        plan.to_connector,
    )


__all__ = ["MovedOffset", "SourceOffsetsMove", "move_source_offsets"]
