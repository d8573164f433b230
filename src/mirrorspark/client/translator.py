"""Translating a consumer group's offsets through a flow's offset syncs (MM2 ``OffsetSyncStore`` + failback).

The shared translator of the checkpoint emitter (the runtime) and the
consumer-migration tools (operator commands): one :class:`OffsetTranslator`
per flow ``S->T`` reads the flow's offset syncs, and those of the opposite
flow ``T->S`` for failback, and turns a group's committed offset on S into a
:class:`~mirrorspark.mm2.checkpoint_rules.GroupOffset` with
:func:`~mirrorspark.mm2.checkpoint_rules.translate_group_offset` (pure).
"""

from __future__ import annotations

from collections.abc import Callable

from mirrorspark.client.checkpoint_reader import OffsetSyncReader
from mirrorspark.client.context import FlowContext
from mirrorspark.errors import ClusterError
from mirrorspark.mm2.checkpoint_rules import GroupOffset, is_failback, translate_group_offset
from mirrorspark.mm2.translation import CopiedRanges


class OffsetTranslator:
    """A flow's offset syncs (and its reverse flow's), and the translation of group offsets through them.

    Forward (a topic of S or of a third cluster): exact copied ranges of this
    flow when given, else MM2's rule over this flow's offset syncs (mm2.md §7.1,
    at most about ``offset.lag.max`` re-reads). Failback (a topic that came from
    T, e.g. ``T.topic1`` on S): in reverse through the copied ranges or offset
    syncs of the flow ``T->S`` (beyond MM2).

    Parameters
    ----------
    context:
        The flow ``S->T``: its configuration, policy (with ``source.cluster.alias`` = S)
        and Kafka client factory.
    reverse:
        The context of the reverse flow ``T->S`` (failback), or ``None`` for none.
    copied:
        Exact copied ranges of this flow (from its running data path), or ``None``.
    reverse_copied:
        Exact copied ranges of the reverse flow ``T->S`` if it runs in this process.

    Notes
    -----
    Creates nothing on any cluster. :meth:`load_syncs` publishes both readers
    at once, so another thread never sees a half-read store; otherwise not
    thread-safe.
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
        self.flow_config = context.flow
        self.policy = context.policy
        self.copied = copied
        self.reverse_copied = reverse_copied
        self.syncs: OffsetSyncReader | None = None
        self.reverse_syncs: OffsetSyncReader | None = None

    def load_syncs(self, *, read_to_end_required: bool = False, cancelled: Callable[[], bool] | None = None) -> bool:
        """Read this flow's offset syncs (and the reverse flow's, for failback) to the end.

        After this, :meth:`translate` works. Calling it again re-reads from the
        beginning. The reverse flow's syncs are read only if it emits them
        (``emit.offset-syncs.enabled``).

        Parameters
        ----------
        read_to_end_required:
            MM2's ``initializationMustReadToEnd`` for this flow's sync store
            (see :class:`~mirrorspark.mm2.sync_store.OffsetSyncStore`); default
            ``False``: the full retained history is usable.
        cancelled:
            Checked between two polls of each read; once true the reads stop, nothing is published
            and the readers are closed (a closing checkpoint emitter's background read).

        Returns
        -------
        bool
            ``False`` when cancelled (the previous readers are closed, none replaces them).

        Raises
        ------
        ClusterError
            If an offset-syncs topic cannot be read to its end (its cluster is
            named in the message).
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
            if done and reverse is not None and reverse.flow.emit_offset_syncs_enabled:
                reverse_syncs = OffsetSyncReader(
                    self.config,
                    reverse.flow,
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
        """Read the offset syncs written since the last read (both flows); return how many.

        Returns
        -------
        int
            Offset-sync records read from both topics (0 before :meth:`load_syncs`).

        Raises
        ------
        ClusterError
            If a read fails.
        """
        n = 0
        for r in (self.syncs, self.reverse_syncs):
            if r is not None:
                n += r.poll()
        return n

    def translate(
        self, group: str, topic: str, partition: int, upstream_offset: int, metadata: str = ""
    ) -> GroupOffset:
        """Translate one committed source offset of a group into a checkpoint (MM2 ``MirrorCheckpointTask``).

        Parameters
        ----------
        group:
            The consumer group on S.
        topic, partition:
            The topic-partition it committed (its name on S).
        upstream_offset:
            The committed offset on S (next offset to read).
        metadata:
            The commit's metadata, copied into the checkpoint.

        Returns
        -------
        GroupOffset
            The checkpoint (topic named as on T; ``None`` when it cannot be translated yet)
            and the re-reads it costs (0 when exact, ``-1`` when unknown).

        Raises
        ------
        ClusterError
            If a forward translation is asked before :meth:`load_syncs`.
        """
        f = self.flow_config
        syncs, reverse_syncs = self.syncs, self.reverse_syncs
        if syncs is None and not is_failback(self.policy, f.target, topic):
            raise ClusterError(f"{f.name}: offsets translated before the offset syncs were read (load_syncs())")
        return translate_group_offset(
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

    def close(self) -> None:
        """Close the offset-sync consumers."""
        for r in (self.syncs, self.reverse_syncs):
            if r is not None:
                r.close()


__all__ = ["OffsetTranslator"]
