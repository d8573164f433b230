"""Translating a consumer group's offsets through a flow's offset syncs (MM2 ``OffsetSyncStore`` + failback).

Shared by the checkpoint emitter and the consumer-migration tools; the rule itself is pure
(:func:`~mirrorspark.mm2.checkpoint_rules.translate_group_offset`).
"""

from __future__ import annotations

from collections.abc import Callable

from mirrorspark.client.checkpoint_reader import OffsetSyncReader
from mirrorspark.client.context import FlowContext
from mirrorspark.core.identical_names import clamp_group_offset, keeps_name_both_ways
from mirrorspark.errors import ClusterError
from mirrorspark.mm2.checkpoint_rules import GroupOffset, is_failback, translate_group_offset
from mirrorspark.mm2.translation import CopiedRanges


class OffsetTranslator:
    """A flow's offset syncs (and its reverse flow's), and the translation of group offsets through them.

    Forward: exact ``copied`` ranges when given, else MM2's rule over the offset syncs (at most about
    ``offset.lag.max`` re-reads); a topic both flows keep the name of is then clamped to what ``T->S``
    copied of T's own records (:mod:`mirrorspark.core.identical_names`). Failback (a topic that came from
    T): in reverse through the flow ``T->S`` (``reverse``, ``reverse_copied``; beyond MM2). Creates nothing.
    :meth:`load_syncs` publishes both readers at once (no thread sees a half-read store); otherwise not thread-safe.
    """

    def __init__(
        self,
        context: FlowContext,
        *,
        reverse: FlowContext | None,
        copied: CopiedRanges | None = None,
        reverse_copied: CopiedRanges | None = None,
    ) -> None:
        self.context = context
        self.reverse = reverse
        self.config = context.config
        self.flow_config = context.flow_config
        self.policy = context.policy
        self.copied = copied
        self.reverse_copied = reverse_copied
        self.syncs: OffsetSyncReader | None = None
        self.reverse_syncs: OffsetSyncReader | None = None

    def load_syncs(self, *, read_to_end_required: bool = False, cancelled: Callable[[], bool] | None = None) -> bool:
        """Read this flow's offset syncs (and the reverse flow's, if it emits them) to the end.

        Then :meth:`translate` works; again re-reads from the beginning. ``read_to_end_required`` is MM2's
        ``initializationMustReadToEnd``. Returns ``False`` when ``cancelled`` (checked between polls): nothing
        published, the readers closed.

        Raises
        ------
        ClusterError
            An offset-syncs topic cannot be read to its end (its cluster named).
        """
        f = self.flow_config
        for old in (self.syncs, self.reverse_syncs):
            if old is not None:
                old.close()
        self.syncs = self.reverse_syncs = None
        # Read into locals and publish both at the end: a background read must never expose a
        # half-read store to a translation.
        syncs = OffsetSyncReader(
            self.config,
            f,
            self.context.internal_topics,
            read_to_end_required=read_to_end_required,
            client_id=self.context.client_id("offset-syncs-consumer"),
            clients=self.context.clients,
        )
        reverse_syncs: OffsetSyncReader | None = None
        published = False
        try:
            done = syncs.load(cancelled=cancelled)
            reverse = self.reverse
            if done and reverse is not None and reverse.flow_config.emit_offset_syncs_enabled:
                reverse_syncs = OffsetSyncReader(
                    self.config,
                    reverse.flow_config,
                    reverse.internal_topics,
                    read_to_end_required=False,
                    client_id=self.context.client_id("reverse-offset-syncs-consumer"),
                    clients=self.context.clients,
                )
                done = reverse_syncs.load(cancelled=cancelled)
            if done:
                self.syncs, self.reverse_syncs = syncs, reverse_syncs
                published = True
        finally:
            if not published:  # failed or cancelled: nothing half-read stays open
                for r in (syncs, reverse_syncs):
                    if r is not None:
                        r.close()
        return published

    def poll(self) -> int:
        """Read the offset syncs written since the last read (both flows); return how many (0 before loading)."""
        n = 0
        for r in (self.syncs, self.reverse_syncs):
            if r is not None:
                n += r.poll()
        return n

    def translate(
        self, group: str, topic: str, partition: int, upstream_offset: int, metadata: str = ""
    ) -> GroupOffset:
        """Translate one committed source offset of a group into a checkpoint (MM2 ``MirrorCheckpointTask``).

        Returns
        -------
        GroupOffset
            The checkpoint (topic named as on T; ``None`` when not translatable yet) and the re-reads it costs
            (0 when exact, ``-1`` when unknown).

        Raises
        ------
        ClusterError
            A forward translation is asked before :meth:`load_syncs`.
        """
        f = self.flow_config
        syncs, reverse_syncs = self.syncs, self.reverse_syncs
        if syncs is None and not is_failback(self.policy, f.target, topic):
            raise ClusterError(f"{f.name}: offsets translated before the offset syncs were read (load_syncs())")
        go = translate_group_offset(
            self.policy,
            f.source,
            f.target,
            group,
            topic,
            partition,
            upstream_offset,
            metadata,
            syncs=syncs.store if syncs is not None else None,
            copied=self.copied,
            reverse_syncs=reverse_syncs.store if reverse_syncs is not None else None,
            reverse_copied=self.reverse_copied,
        )
        if self.shares_name(topic):
            go, _ = clamp_group_offset(
                go, reverse_syncs.store if reverse_syncs is not None else None, self.reverse_copied
            )
        return go

    def shares_name(self, topic: str) -> bool:
        """Whether ``topic`` keeps its name both ways, so its checkpoints are clamped by the reverse flow's copies."""
        f = self.flow_config
        return self.reverse is not None and keeps_name_both_ways(
            self.policy, self.reverse.policy, f.source, f.target, topic
        )

    def close(self) -> None:
        """Close the offset-sync consumers."""
        for r in (self.syncs, self.reverse_syncs):
            if r is not None:
                r.close()


__all__ = ["OffsetTranslator"]
