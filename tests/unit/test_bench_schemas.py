"""The schemas case of ``make bench`` (#39's target): its wire-format workload, its two contenders' keys, its report."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mirrorspark.config.parse import parse_config
from mirrorspark.core.schemas import HEADER_SIZE, MAGIC_BYTE

pytestmark = pytest.mark.unit

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root: the bench package

from bench import cli  # noqa: E402
from bench.schemas import (  # noqa: E402
    RATIO_LABEL,
    SCHEMAS_CONTENDERS,
    IdCounts,
    SchemasContender,
    avro_version,
    hit_ratio,
    result_line,
    schemas_case,
    schemas_line,
    schemas_markdown,
)
from bench.suite import CaseResult  # noqa: E402
from bench.workload import WIRE_HEADER_SIZE, LoadResult, Workload, wire_value  # noqa: E402

SRC, TGT = "http://127.0.0.1:1/apis/ccompat/v7", "http://127.0.0.1:2/apis/ccompat/v7"


@given(schema_id=st.integers(0, 2**31 - 1), payload=st.binary(max_size=64))
def test_a_framed_value_is_what_the_copy_task_reads_as_wire_format(schema_id: int, payload: bytes) -> None:
    value = wire_value(schema_id, payload)
    assert WIRE_HEADER_SIZE == HEADER_SIZE and len(value) == HEADER_SIZE + len(payload)
    assert value[0] == MAGIC_BYTE and int.from_bytes(value[1:HEADER_SIZE], "big") == schema_id
    assert value[HEADER_SIZE:] == payload


@given(records=st.integers(0, 300), partitions=st.integers(1, 24), n=st.integers(1, 25))
def test_each_partition_cycles_over_every_schema_id(records: int, partitions: int, n: int) -> None:
    ids = tuple(range(100, 100 + n))
    w = Workload("schemas", records, 100, partitions, schema_ids=ids)
    for p in range(partitions):
        mine = [w.schema_id(i) for i in range(records) if i % partitions == p]
        assert mine == [ids[k % n] for k in range(len(mine))]
    assert Workload("compare", records, 100, partitions).schema_id(0) is None


def test_a_wire_format_workload_has_a_topic_of_its_own_and_says_so() -> None:
    w = Workload("schemas", 1000, 1024, 12, schema_ids=(1, 2, 3))
    assert w.topic == "bench-schemas-1000x1024b-p12-wire" != Workload("schemas", 1000, 1024, 12).topic
    assert "wire format over 3 schema ids" in w.describe()
    assert w.payload_bytes == Workload("schemas", 1000, 1024, 12).payload_bytes  # the header is part of the value


def test_the_schema_versions_are_compatible_evolutions() -> None:
    first, second = json.loads(avro_version("V", 0)), json.loads(avro_version("V", 2))
    assert first["fields"] == [] and [f["name"] for f in second["fields"]] == ["f0", "f1"]
    assert all(f["default"] is None and f["type"][0] == "null" for f in second["fields"])


def _flow(props: dict[str, str]) -> object:
    cfg = parse_config(
        {
            "clusters": "s7, target",
            "s7.bootstrap.servers": "a:1",
            "target.bootstrap.servers": "b:1",
            "s7->target.enabled": "true",
            **props,
        },
        source_name="bench",
    )
    (flow,) = [f for f in cfg.flows if f.enabled]
    return flow


def test_only_the_schemas_contender_names_both_registries_so_only_its_flow_translates() -> None:
    w = Workload("schemas", 1000, 1024, 12, schema_ids=(1, 2))
    case = schemas_case(workload=w, runs=3, tasks_max=2, source_url=SRC, target_url=TGT)
    assert [c.name for c in case.contenders] == list(SCHEMAS_CONTENDERS)
    assert case.ratios == [(RATIO_LABEL, "mirrorspark-schemas", "mirrorspark")]
    plain, schemas = (c.properties(w, "s7") for c in case.contenders)  # type: ignore[attr-defined]
    assert schemas == {**plain, "s7.schema.registry.url": SRC, "target.schema.registry.url": TGT}
    assert not any("schema" in k for k in plain)
    assert _flow(plain).sync_schemas_enabled is False  # type: ignore[attr-defined]
    assert _flow(schemas).sync_schemas_enabled is True  # type: ignore[attr-defined]


def test_the_report_line_names_both_ratios() -> None:
    w = Workload("schemas", 1000, 100, 1)
    assert schemas_line(w, 0.9349, 0.99996) == (
        "schemas workload 100 B x 1: throughput ratio mirrorspark-schemas/mirrorspark 0.93; id cache hit ratio 1.0000"
    )
    assert schemas_line(w, None, None).endswith("mirrorspark-schemas/mirrorspark n/a; id cache hit ratio n/a")
    assert IdCounts(1, 0, 0, 0, "status").hit_ratio is None
    assert IdCounts(1, 199_960, 40, 0, "status").hit_ratio == pytest.approx(0.9998)


def test_the_hit_ratio_is_the_median_of_the_measured_runs_and_reaches_the_markdown() -> None:
    w = Workload("schemas", 1000, 1024, 12, schema_ids=(1, 2))
    case = schemas_case(workload=w, runs=3, tasks_max=2, source_url=SRC, target_url=TGT)
    contender = case.contenders[1]
    assert isinstance(contender, SchemasContender)
    contender.counts += [
        IdCounts(0, 0, 40, 0, "status"),  # the warm-up: left out
        IdCounts(1, 960, 40, 0, "status"),
        IdCounts(2, 980, 20, 0, "tasks"),
        IdCounts(3, 990, 10, 0, "status"),
    ]
    result = CaseResult(case, LoadResult(w.topic, 1000, 1.0), None, [], [], ratios={RATIO_LABEL: 0.95})
    assert hit_ratio(result) == pytest.approx(0.98)
    line = result_line(result)
    assert line == (
        "schemas workload 1024 B x 12: throughput ratio mirrorspark-schemas/mirrorspark 0.95; id cache hit ratio 0.9800"
    )
    md = schemas_markdown([result])
    assert f"`{line}`" in md and "| 1024 B x 12 | 1,000 (1 MB) |" in md
    assert "| 1,000 | 20 | 0.9800 | status, tasks |" in md


def test_the_schemas_case_is_part_of_every_run_and_has_a_readme_section_of_its_own() -> None:
    assert "schemas" in cli.CASES and "schemas" in cli._parser().parse_args([]).cases.split(",")
    assert "schemas" in cli.OWN_SECTIONS
    assert cli.SCHEMAS_QUICK_RECORDS == {1024: 200_000, 100: 400_000}
