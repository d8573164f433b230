"""Real Schema Registries (Apicurio Registry on Java 21+): ``mirrorspark local up --schema-registry`` as users run
it, and the ``schema_registries`` / ``start_registry`` fixtures other tests use (``registry_support``)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import urllib.request
from collections.abc import Callable
from pathlib import Path

import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient, topic_subject_name_strategy
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from helpers import unique_name

from mirrorspark.kafka.local.clusters import load_clusters
from mirrorspark.kafka.local.model import LocalSchemaRegistry
from mirrorspark.kafka.local.registry import REGISTRY_JAVA_ENV, is_our_registry
from registry_support import RegistryPair

pytestmark = pytest.mark.integration

CLI = [sys.executable, "-m", "mirrorspark"]

ORDER = {
    "type": "record",
    "name": "Order",
    "namespace": "shop",
    "fields": [{"name": "id", "type": "long"}, {"name": "item", "type": "string"}],
}


def run_cli(*args: str, env: dict[str, str] | None = None, timeout_s: float = 240) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, *args], capture_output=True, text=True, timeout=timeout_s, env={**os.environ, **(env or {})}
    )


def subjects(url: str) -> list[str]:
    with urllib.request.urlopen(f"{url}/subjects", timeout=10) as response:
        assert response.status == 200
        return list(json.loads(response.read()))


def avro_round_trip(url: str, topic: str) -> int:
    """Serialize an Avro record with the stock serializer (auto-registering ``<topic>-value``), read it back."""
    # TopicNameStrategy named (confluent-kafka 2.16's default asks Apicurio for /associations first, whose 404
    # can leave the client waiting for ever) and every request bounded
    client = SchemaRegistryClient({"url": url, "timeout": 30})
    serializer = AvroSerializer(client, json.dumps(ORDER), conf={"subject.name.strategy": topic_subject_name_strategy})
    context = SerializationContext(topic, MessageField.VALUE)
    payload = serializer({"id": 7, "item": "tea"}, context)
    assert payload is not None and payload[0] == 0  # Confluent's wire format: magic byte, then the schema id
    schema_id = int.from_bytes(payload[1:5], "big")
    assert AvroDeserializer(client)(payload, context) == {"id": 7, "item": "tea"}
    assert client.get_latest_version(f"{topic}-value").schema_id == schema_id
    return schema_id


# --- mirrorspark local up --schema-registry -----------------------------------------------------------


def test_local_up_with_schema_registries_then_down(tmp_path: Path) -> None:
    d = tmp_path / "local"
    up = run_cli("local", "up", "--clusters", "east,west", "--schema-registry", "--dir", str(d))
    try:
        assert up.returncode == 0, up.stderr
        printed = dict(re.findall(r"^(\w+): bootstrap\.servers=\S+ schema\.registry\.url=(\S+)$", up.stdout, re.M))
        assert set(printed) == {"east", "west"} and printed["east"] != printed["west"]
        for url in printed.values():
            assert re.fullmatch(r"http://127\.0\.0\.1:\d+/apis/ccompat/v7", url)
            assert subjects(url) == []
        mm2 = (d / "mm2.properties").read_text()
        for alias, url in printed.items():
            assert f"\n{alias}.schema.registry.url = {url}\n" in mm2
        state = load_clusters(d)
        assert {a: c["schema.registry.url"] for a, c in state.to_json().items()} == printed  # what --json prints
        topic = unique_name("orders")
        avro_round_trip(printed["east"], topic)
        assert subjects(printed["east"]) == [f"{topic}-value"]
        assert subjects(printed["west"]) == []  # one registry per cluster
        registries = [c.schema_registry for c in state.clusters.values()]
        assert all(r is not None and is_our_registry(r) for r in registries)
    finally:
        down = run_cli("local", "down", "--dir", str(d))
    assert down.returncode == 0, down.stderr
    assert "east" in down.stdout
    assert not any(r is not None and is_our_registry(r) for r in registries), "local down left a registry running"


def test_local_up_without_java_21_says_what_to_install_and_starts_nothing(tmp_path: Path) -> None:
    d = tmp_path / "local"
    r = run_cli("local", "up", "--schema-registry", "--dir", str(d), env={REGISTRY_JAVA_ENV: str(tmp_path / "java")})
    assert r.returncode == 7, r.stderr
    assert "[LOCAL_CLUSTER_ERROR]" in r.stderr and "Java 21+" in r.stderr and REGISTRY_JAVA_ENV in r.stderr
    assert "Traceback" not in r.stderr
    assert not (d / "clusters.json").exists()


# --- the fixtures -----------------------------------------------------------------------------------


def test_schema_registries_are_two_independent_registries(schema_registries: RegistryPair) -> None:
    source_url, target_url = schema_registries
    assert source_url != target_url
    topic = unique_name("fixture-pair")
    avro_round_trip(source_url, topic)
    assert f"{topic}-value" in subjects(source_url)
    assert f"{topic}-value" not in subjects(target_url)
    assert schema_registries.mm2_properties() == {
        "primary.schema.registry.url": source_url,
        "backup.schema.registry.url": target_url,
    }


def test_start_registry_gives_a_fresh_registry(start_registry: Callable[..., dict[str, LocalSchemaRegistry]]) -> None:
    fresh = start_registry("fresh")["fresh"]
    assert subjects(fresh.url) == []
    assert avro_round_trip(fresh.url, unique_name("fixture-fresh")) == 1  # a fresh registry's ids start at 1
    assert is_our_registry(fresh)
