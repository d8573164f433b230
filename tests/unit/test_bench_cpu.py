"""The benchmark's CPU accounting: its own measuring threads are never charged to an in-process replicator."""

from __future__ import annotations

import os
import sys
import threading
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root: the bench package

from bench import cpu  # noqa: E402


def _spin(seconds: float) -> None:
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


def test_a_measuring_threads_cpu_is_not_this_processs() -> None:
    before = cpu.snapshot(os.getpid())

    def measure() -> None:
        with cpu.measuring_thread():
            _spin(0.4)

    t = threading.Thread(target=measure)
    t.start()
    t.join()
    spent = cpu.delta(before, cpu.snapshot(os.getpid())).total_s
    assert cpu.measuring_cpu_s() >= 0.4
    assert spent < 0.3, f"the measuring thread's 0.4 s were charged to the tree: {spent:.2f} s"


def test_other_threads_cpu_is_this_processs() -> None:
    before = cpu.snapshot(os.getpid())
    t = threading.Thread(target=_spin, args=(0.3,))
    t.start()
    t.join()
    assert cpu.delta(before, cpu.snapshot(os.getpid())).total_s >= 0.25
