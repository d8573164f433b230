"""Fixtures of the fault suite: scenarios that kill, pause and cut what mirrorspark depends on.

Every test here is marked ``faults`` and ``integration``; each starts the clusters it breaks
(never the session's shared ones). The integration tier's helpers (``helpers``, ``test_replication``'s
config builders, ``standalone``) are importable from here.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration"))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test of ``tests/faults/`` as ``faults`` and ``integration``."""
    here = Path(__file__).resolve().parent
    for item in items:
        if here in Path(str(item.fspath)).resolve().parents:
            item.add_marker(pytest.mark.faults)
            item.add_marker(pytest.mark.integration)
