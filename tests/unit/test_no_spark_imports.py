"""The client layer imports without PySpark and confluent-kafka (like MM2's ``mirror-client``)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

SRC = Path(__file__).resolve().parents[2] / "src"

CLIENT_MODULES = ("mirrorspark.errors", "mirrorspark.mm2.policy", "mirrorspark.mm2.filters", "mirrorspark.mm2.records")

KAFKA_CLIENT_MODULES = (
    "mirrorspark.replication.acls",
    "mirrorspark.client.mirror_client",
    "mirrorspark.replication.checkpoints",
)
"""The RemoteClusterUtils-style API and checkpoints: Kafka clients, but no Spark."""

_SCRIPT = textwrap.dedent(
    """
    import importlib
    import sys

    BLOCKED = set(sys.argv[2].split(","))

    class Blocker:
        def find_spec(self, name, path=None, target=None):
            if name.partition(".")[0] in BLOCKED:
                raise ImportError(f"{name} is blocked: the client layer must not import it")
            return None

    sys.meta_path.insert(0, Blocker())
    sys.path.insert(0, sys.argv[1])
    for module in sys.argv[3:]:
        importlib.import_module(module)
    leaked = sorted(m for m in sys.modules if m.partition(".")[0] in BLOCKED)
    if leaked:
        raise SystemExit(f"imported: {leaked}")
    print("ok")
    """
)


def test_blocker_really_blocks() -> None:
    result = subprocess.run(
        [sys.executable, "-c", _SCRIPT, str(SRC), "pyspark,py4j", "pyspark"], capture_output=True, text=True, timeout=60
    )
    assert result.returncode != 0
    assert "blocked" in result.stderr


def test_client_layer_imports_without_spark_or_confluent_kafka() -> None:
    result = subprocess.run(
        [sys.executable, "-c", _SCRIPT, str(SRC), "pyspark,py4j,confluent_kafka", *CLIENT_MODULES],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr + result.stdout
    assert result.stdout.strip() == "ok"


def test_client_api_imports_without_spark() -> None:
    result = subprocess.run(
        [sys.executable, "-c", _SCRIPT, str(SRC), "pyspark,py4j", *KAFKA_CLIENT_MODULES],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr + result.stdout
    assert result.stdout.strip() == "ok"
