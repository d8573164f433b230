"""The curated public API of ``mirrorspark`` (issue 9): a sorted ``__all__``, every name resolvable, lazy imports."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

import mirrorspark

pytestmark = pytest.mark.unit


def test_all_is_sorted_and_unique() -> None:
    assert list(mirrorspark.__all__) == sorted(set(mirrorspark.__all__))


@pytest.mark.parametrize("name", mirrorspark.__all__)
def test_every_public_name_resolves(name: str) -> None:
    assert getattr(mirrorspark, name) is not None
    assert name in dir(mirrorspark)


def test_public_names_are_the_defining_objects() -> None:
    from mirrorspark.client.control_store import ControlStore
    from mirrorspark.client.mirror_client import MirrorClient, translate_offsets
    from mirrorspark.config.parse import load_config
    from mirrorspark.errors import MirrorsparkError
    from mirrorspark.mm2.policy import BaseReplicationPolicy

    assert mirrorspark.MirrorClient is MirrorClient
    assert mirrorspark.translate_offsets is translate_offsets
    assert mirrorspark.load_config is load_config
    assert mirrorspark.MirrorsparkError is MirrorsparkError
    assert mirrorspark.BaseReplicationPolicy is BaseReplicationPolicy
    assert mirrorspark.ControlStore is ControlStore


def test_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'DataPath'"):
        _ = mirrorspark.DataPath  # type: ignore[attr-defined]


def test_import_mirrorspark_loads_neither_kafka_nor_spark() -> None:
    script = textwrap.dedent(
        """
        import sys
        import mirrorspark
        mirrorspark.load_config
        mirrorspark.BaseReplicationPolicy
        leaked = sorted(m for m in sys.modules if m.partition(".")[0] in {"pyspark", "py4j", "confluent_kafka"})
        print(leaked)
        """
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
