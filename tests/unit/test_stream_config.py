"""The copy task's settings derived from Java client properties (pure)."""

from __future__ import annotations

import pytest

from mirrorspark.errors import ConfigError
from mirrorspark.replication.connector.task_configs import init_transactions_timeout_s

pytestmark = pytest.mark.unit


def test_init_transactions_waits_javas_default_max_block_ms_when_unset() -> None:
    assert init_transactions_timeout_s({}) == 60.0
    assert init_transactions_timeout_s({"max.block.ms": " "}) == 60.0


def test_init_transactions_waits_the_target_producers_max_block_ms() -> None:
    assert init_transactions_timeout_s({"max.block.ms": "10000"}) == 10.0
    assert init_transactions_timeout_s({"max.block.ms": "250"}) == 0.25


@pytest.mark.parametrize("bad", ["0", "-5", "ten", "1.5"])
def test_a_bad_max_block_ms_names_the_key_and_the_fix(bad: str) -> None:
    with pytest.raises(ConfigError, match=r"max\.block\.ms of the target producer .* whole number of milliseconds"):
        init_transactions_timeout_s({"max.block.ms": bad})
