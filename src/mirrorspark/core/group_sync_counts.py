"""What group offset sync did to each target group: writes, and writes skipped (no I/O)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class GroupSyncCounts:
    """Counts of one target group's offset-sync attempts since the flow started (each one write of a group).

    ``synced``: offsets committed; ``skipped_active``: not written because the group had members (its
    description said so, or the broker refused the write); ``skipped_unknown``: not written because the
    group's state or committed offsets could not be read.
    """

    synced: int = 0
    skipped_active: int = 0
    skipped_unknown: int = 0

    @property
    def attempts(self) -> int:
        """Every counted attempt."""
        return self.synced + self.skipped_active + self.skipped_unknown


__all__ = ["GroupSyncCounts"]
