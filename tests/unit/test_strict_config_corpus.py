"""The keys the repository itself writes (README examples, the benchmark's runs, local clusters) pass strict parsing."""

from __future__ import annotations

import re
import sys
from collections.abc import Mapping
from pathlib import Path

import pytest

from mirrorspark.config.parse import parse_config
from mirrorspark.config.properties import parse_properties
from mirrorspark.kafka.local.model import LocalBroker, LocalCluster, LocalClusters
from mirrorspark.kafka.local.settings import SECURITY_PROTOCOLS

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # the repository root: the bench package

from bench.env import SOURCE, TARGET  # noqa: E402
from bench.latency import CONTENDERS, contender_properties  # noqa: E402
from bench.suite import TRANSFORMS_CONTENDERS, comparison_case, transforms_case  # noqa: E402
from bench.workload import Workload  # noqa: E402


def strict(props: Mapping[str, str], aliases: set[str], name: str) -> None:
    """Parse ``props`` strictly, with the clusters they name given bootstrap servers."""
    base = {"clusters": ", ".join(sorted(aliases))} | {f"{a}.bootstrap.servers": "h:9092" for a in aliases}
    env = {m: "secret" for v in props.values() for m in re.findall(r"\$\{env:([A-Za-z_][A-Za-z0-9_]*)\}", v)}
    parse_config({**base, **props}, env=env, source_name=name)


def aliases_of(props: Mapping[str, str]) -> set[str]:
    """The cluster aliases flow keys ``S->T.*`` and cluster keys ``A.client.rack`` name."""
    heads = {k.split(".", 1)[0] for k in props}
    flows = {a for h in heads if "->" in h for a in h.split("->")}
    return flows | {
        k.split(".", 1)[0] for k in props if k.split(".", 1)[1:] in (["client.rack"], ["consumer.client.rack"])
    }


@pytest.mark.parametrize("block", re.findall(r"```properties\n(.*?)```", (ROOT / "README.md").read_text(), re.DOTALL))
def test_readme_examples_pass_strict_parsing(block: str) -> None:
    props = parse_properties(block)
    strict(props, aliases_of(props) or {"A", "B"}, "README.md")


def test_benchmark_runs_pass_strict_parsing() -> None:
    w = Workload("compare", 100, 1024, 12)
    contenders = [
        *comparison_case(workload=w, runs=1, tasks_max=2).contenders,
        *transforms_case(records=100, runs=1, tasks_max=2, contenders=TRANSFORMS_CONTENDERS).contenders,
    ]
    for c in contenders:
        if hasattr(c, "properties"):
            strict(c.properties(w, "s3"), {"s3", TARGET}, c.name)
    for name in CONTENDERS:
        strict(contender_properties(name, "t.*", 2, {}), {SOURCE, TARGET}, name)


@pytest.mark.parametrize("security", SECURITY_PROTOCOLS)
def test_local_clusters_mm2_properties_pass_strict_parsing(security: str, tmp_path: Path) -> None:
    def cluster(alias: str, port: int) -> LocalCluster:
        broker = LocalBroker(node_id=0, port=port, controller_port=port + 1, rack=None, pid=0, log_path=tmp_path)
        return LocalCluster(
            alias=alias,
            bootstrap_servers=broker.address,
            data_dir=tmp_path,
            brokers=(broker,),
            security=security,  # type: ignore[arg-type]
            sasl_users={"admin": "admin-pw"} if security.startswith("sasl") else {},
            ca_location=tmp_path / "ca.pem" if "ssl" in security else None,
        )

    clusters = LocalClusters(base_dir=tmp_path, clusters={"a": cluster("a", 9093), "b": cluster("b", 9095)})
    text = clusters.mm2_properties(extra={"tasks.max": "4", "emit.heartbeats.interval.seconds": "1"})  # the demo's
    parse_config(parse_properties(text), env={}, source_name="local")
