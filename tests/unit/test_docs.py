"""Docs generated from code stay in step with it."""

from __future__ import annotations

from pathlib import Path

import pytest

from mirrorspark.cli.app import config_reference

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]


def test_config_reference_is_up_to_date() -> None:
    assert (ROOT / "docs" / "config.md").read_text() == config_reference(), (
        "docs/config.md is stale: run `mirrorspark config-reference > docs/config.md`"
    )
