"""What the Makefile asks of a fresh machine (ux-review finding 5): `make demo` needs Python, Java and Maven only."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
MAKE = shutil.which("make") or "make"


def dry_run(target: str) -> str:
    """The commands ``make TARGET`` would run on a fresh machine (``-n -B``: every rule, nothing executed)."""
    return subprocess.run([MAKE, "-n", "-B", target], cwd=ROOT, capture_output=True, text=True, check=True).stdout


def test_make_demo_installs_no_browser_and_make_test_does() -> None:
    """Before, ``install`` (so ``demo``) ran ``apt-get install chromium``, which only the dashboard test needs."""
    demo = dry_run("demo")
    assert "apt-get" not in demo and "chromium" not in demo, demo
    assert "mirrorspark.cli.demo" in demo
    assert "chromium" in dry_run("test")


def test_a_missing_browser_that_cannot_be_installed_is_one_clear_error(tmp_path: Path) -> None:
    """No chromium and no apt-get (or no root): ``make test`` stops with what to install, or ``make test-unit``."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "id").symlink_to(shutil.which("id") or "/usr/bin/id")  # nothing else: no chromium, no apt-get
    r = subprocess.run(
        [MAKE, "-s", "chromium"], cwd=ROOT, capture_output=True, text=True, env={**os.environ, "PATH": str(bin_dir)}
    )
    assert r.returncode != 0
    assert "chromium" in r.stderr and "cannot be installed here" in r.stderr and "make test-unit" in r.stderr
