"""The client layer imports without PySpark and confluent-kafka (like MM2's ``mirror-client``)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

SRC = Path(__file__).resolve().parents[2] / "src"


def _modules(package: str) -> tuple[str, ...]:
    """Every module of a sub-package of ``src/mirrorspark``, found on disk (so a new module is covered too)."""
    root = SRC.joinpath(*package.split("."))
    found = []
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(SRC).with_suffix("").parts
        found.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return tuple(found)


CLIENT_MODULES = ("mirrorspark.errors", *_modules("mirrorspark.mm2"))
"""The MM2 core (policies, filters, records, translation): neither Spark nor a Kafka client."""

KAFKA_CLIENT_MODULES = (
    *_modules("mirrorspark.config"),
    *_modules("mirrorspark.kafka"),
    *_modules("mirrorspark.client"),
    *_modules("mirrorspark.migration"),
    "mirrorspark.replication.connector.acl_sync",
    "mirrorspark.replication.connector.checkpoint_emitter",
    "mirrorspark.replication.connector.live_filters",
)
"""The MirrorClient API (RemoteClusterUtils), its config and Kafka adapters, the migration tools and the
control jobs: Kafka clients, but no Spark (like MM2's ``mirror-client``)."""


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
