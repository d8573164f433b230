"""A real flow run from each shape of connector configs (issue #25): ``mirrorspark run CONFIG --until-caught-up``.

The examples of ``docs/examples/connect`` are run as they are, with the local clusters' addresses and this
test's own topic put in.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from helpers import consume_all, create_topic, produce, unique_name

from mirrorspark.kafka.local.model import LocalClusters

pytestmark = pytest.mark.integration

EXAMPLES = Path(__file__).resolve().parents[2] / "docs" / "examples" / "connect"


def _copy(src: Path, dst: Path, replacements: dict[str, str]) -> None:
    text = src.read_text()
    for old, new in replacements.items():
        text = text.replace(old, new)
    dst.write_text(text)


@pytest.mark.parametrize(
    "example",
    [
        "strimzi-connectors.yaml",
        "strimzi-mirror-maker2.yaml",
        "rest-connectors.json",
        "rest-expand-info.json",
        "rest-folder",
    ],
)
def test_a_flow_runs_from_connector_configs(local_clusters: LocalClusters, tmp_path: Path, example: str) -> None:
    p, b = local_clusters.bootstrap("primary"), local_clusters.bootstrap("backup")
    topic = unique_name("connect")
    create_topic(p, topic, partitions=2)
    produce(p, topic, [{"value": f"v{i}".encode(), "partition": i % 2} for i in range(20)])
    replacements = {"localhost:9092": p, "localhost:9093": b, "orders.*, payments": topic}
    src = EXAMPLES / example
    config = tmp_path / example
    if src.is_dir():
        config.mkdir()
        for f in src.iterdir():
            _copy(f, config / f.name, replacements)
    else:
        _copy(src, config, replacements)
    r = subprocess.run(
        [sys.executable, "-m", "mirrorspark", "run", str(config), "--until-caught-up", "--quiet"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    assert sorted(rec["value"] for rec in consume_all(b, f"primary.{topic}")) == sorted(
        f"v{i}".encode() for i in range(20)
    )
