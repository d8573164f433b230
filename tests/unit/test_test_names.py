"""Every test module has a name of its own: pytest imports them by basename (no packages under tests/)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

TESTS = Path(__file__).resolve().parents[1]


def test_no_two_test_modules_share_a_basename() -> None:
    """Two ``test_x.py`` in two folders fail the whole run at collection ("import file mismatch")."""
    names = Counter(p.name for p in TESTS.rglob("test_*.py") if "__pycache__" not in p.parts)
    assert not [n for n, count in names.items() if count > 1]
