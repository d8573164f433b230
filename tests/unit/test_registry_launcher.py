"""The local Schema Registries (:mod:`mirrorspark.kafka.local.registry`) without a JVM: the Java 21+ finder over
fake JDK folders, the command line, the state file and mm2.properties, and stopping by pid.

The real registries run in ``tests/integration/test_local_registry.py``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mirrorspark.config.parse import parse_config
from mirrorspark.config.properties import parse_properties
from mirrorspark.errors import LocalClusterError
from mirrorspark.kafka.local import registry
from mirrorspark.kafka.local.model import LocalBroker, LocalCluster, LocalClusters, LocalSchemaRegistry
from mirrorspark.kafka.local.registry import (
    REGISTRY_DIR_ENV,
    REGISTRY_JAVA_ENV,
    is_our_registry,
    java_version,
    registry_app_dir,
    registry_command,
    registry_java,
    stop_registries,
    wait_registries,
)
from mirrorspark.kafka.local.state import read_state, write_state

pytestmark = pytest.mark.unit


def fake_jdk(root: Path, name: str, version: str | None, *, java: bool = True) -> Path:
    """A JDK folder: ``release`` with ``JAVA_VERSION`` (none if ``version`` is None) and an executable bin/java."""
    home = root / name
    (home / "bin").mkdir(parents=True)
    if version is not None:
        (home / "release").write_text(f'IMPLEMENTOR="Test"\nJAVA_VERSION="{version}"\nOS_NAME="Linux"\n')
    if java:
        (home / "bin" / "java").write_text("#!/bin/sh\n")
        (home / "bin" / "java").chmod(0o755)
    return home


# --- the Java 21+ finder --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("version", "expected"),
    [("25.0.3", (25, 0, 3)), ("21", (21,)), ("17.0.15", (17, 0, 15)), ("1.8.0_292", (8, 0, 292)), (None, None)],
)
def test_java_version_reads_the_release_file(tmp_path: Path, version: str | None, expected: object) -> None:
    assert java_version(fake_jdk(tmp_path, "jdk", version)) == expected


def test_java_version_of_a_folder_without_release_is_none(tmp_path: Path) -> None:
    assert java_version(tmp_path / "nowhere") is None


def test_the_newest_21_plus_jdk_of_the_jvm_folder_wins(tmp_path: Path) -> None:
    jvm = tmp_path / "jvm"
    fake_jdk(jvm, "java-17-openjdk-amd64", "17.0.15")
    fake_jdk(jvm, "temurin-21-jdk-amd64", "21.0.9")
    newest = fake_jdk(jvm, "temurin-25-jdk-amd64", "25.0.3")
    fake_jdk(jvm, "temurin-26-jre-broken", "26.0.1", java=False)  # no bin/java: skipped
    fake_jdk(jvm, "mystery", None)  # no version: skipped
    (jvm / "default-java").symlink_to(jvm / "java-17-openjdk-amd64")
    assert registry_java(environ={}, jvm_dir=jvm) == str(newest / "bin" / "java")


def test_java_home_is_used_when_it_is_21_or_newer(tmp_path: Path) -> None:
    jvm = tmp_path / "jvm"
    fake_jdk(jvm, "temurin-25", "25.0.3")
    home = fake_jdk(tmp_path, "my-jdk-21", "21.0.2")
    assert registry_java(environ={"JAVA_HOME": str(home)}, jvm_dir=jvm) == str(home / "bin" / "java")


def test_java_home_17_falls_back_to_the_jvm_folder(tmp_path: Path) -> None:
    jvm = tmp_path / "jvm"
    newest = fake_jdk(jvm, "temurin-25", "25.0.3")
    home = fake_jdk(tmp_path, "jdk-17", "17.0.15")
    assert registry_java(environ={"JAVA_HOME": str(home)}, jvm_dir=jvm) == str(newest / "bin" / "java")


def test_the_environment_variable_wins_over_everything(tmp_path: Path) -> None:
    jvm = tmp_path / "jvm"
    fake_jdk(jvm, "temurin-25", "25.0.3")
    chosen = fake_jdk(tmp_path, "custom", None) / "bin" / "java"  # no release file: trusted
    env = {REGISTRY_JAVA_ENV: str(chosen), "JAVA_HOME": str(jvm / "temurin-25")}
    assert registry_java(environ=env, jvm_dir=jvm) == str(chosen)


def test_an_environment_variable_naming_java_17_is_refused(tmp_path: Path) -> None:
    java = fake_jdk(tmp_path, "jdk-17", "17.0.15") / "bin" / "java"
    with pytest.raises(LocalClusterError, match=r"is Java 17, and the Schema Registry needs Java 21\+"):
        registry_java(environ={REGISTRY_JAVA_ENV: str(java)}, jvm_dir=tmp_path / "none")


def test_an_environment_variable_naming_no_executable_is_refused(tmp_path: Path) -> None:
    with pytest.raises(LocalClusterError, match=f"{REGISTRY_JAVA_ENV}=.*not an executable file"):
        registry_java(environ={REGISTRY_JAVA_ENV: str(tmp_path / "java")}, jvm_dir=tmp_path)


def test_no_java_21_names_what_to_install(tmp_path: Path) -> None:
    jvm = tmp_path / "jvm"
    fake_jdk(jvm, "java-17-openjdk-amd64", "17.0.15")
    home = fake_jdk(tmp_path, "jdk-17", "17.0.15")
    with pytest.raises(LocalClusterError) as info:
        registry_java(environ={"JAVA_HOME": str(home)}, jvm_dir=jvm)
    message = str(info.value)
    assert "Java 21+" in message and str(jvm) in message and f"JAVA_HOME={home}" in message
    assert "Temurin 21 or newer" in message and "Debian 12 has no openjdk-21" in message
    assert REGISTRY_JAVA_ENV in message
    assert info.value.code == "LOCAL_CLUSTER_ERROR" and info.value.exit_code == 7


def test_a_missing_jvm_folder_is_no_java(tmp_path: Path) -> None:
    with pytest.raises(LocalClusterError, match="needs Java 21"):
        registry_java(environ={}, jvm_dir=tmp_path / "absent")


# --- the app and its command line -------------------------------------------------------------------


def test_the_app_folder_without_quarkus_run_jar_says_make_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(REGISTRY_DIR_ENV, str(tmp_path))
    with pytest.raises(LocalClusterError, match="make install"):
        registry_app_dir()
    (tmp_path / "quarkus-run.jar").write_bytes(b"PK")
    assert registry_app_dir() == tmp_path.resolve()


def test_the_command_line_binds_loopback_ports_and_keeps_storage_in_memory(tmp_path: Path) -> None:
    command = registry_command("/jdk/bin/java", tmp_path, port=18081, management_port=19081)
    assert command[0] == "/jdk/bin/java" and command[1] == "-Xmx384m"
    assert command[-2:] == ("-jar", str(tmp_path / "quarkus-run.jar"))
    flags = set(command[1:-2])
    assert {
        "-Dquarkus.http.host=127.0.0.1",
        "-Dquarkus.http.port=18081",
        "-Dquarkus.management.host=127.0.0.1",
        "-Dquarkus.management.port=19081",
        "-Dapicurio.storage.kind=sql",
        "-Dapicurio.storage.sql.kind=h2",
    } <= flags
    assert any(f.startswith("-Dapicurio.datasource.url=jdbc:h2:mem:") for f in flags)
    assert all(f.startswith("-") for f in flags), "no argument after -jar may precede it"


def test_the_heap_can_be_changed() -> None:
    command = registry_command("java", Path("/app"), port=1, management_port=2, heap="-Xms64m -Xmx256m")
    assert command[1:3] == ("-Xms64m", "-Xmx256m")


# --- the state file, mm2.properties and --json --------------------------------------------------


def two_clusters(base_dir: Path, *, with_registry: bool) -> LocalClusters:
    clusters = {}
    for i, alias in enumerate(("primary", "backup")):
        broker = LocalBroker(0, 9092 + i, 9192 + i, None, 100 + i, base_dir / alias / "kafka.log", controller=True)
        sr = LocalSchemaRegistry(port=18081 + i, management_port=19081 + i, pid=200 + i, log_path=base_dir / "sr.log")
        clusters[alias] = LocalCluster(
            alias,
            f"127.0.0.1:{9092 + i}",
            base_dir / alias,
            (broker,),
            cluster_id=f"id-{alias}",
            schema_registry=sr if with_registry else None,
        )
    return LocalClusters(base_dir=base_dir, clusters=clusters)


def test_registries_round_trip_through_the_state_file(tmp_path: Path) -> None:
    state = two_clusters(tmp_path, with_registry=True)
    write_state(state)
    doc = json.loads((tmp_path / "clusters.json").read_text())
    assert doc["clusters"]["backup"]["schema_registry"]["url"] == "http://127.0.0.1:18082/apis/ccompat/v7"
    read = read_state(tmp_path)
    assert read is not None and read.clusters == state.clusters


def test_a_state_without_registries_is_written_as_before(tmp_path: Path) -> None:
    write_state(two_clusters(tmp_path, with_registry=False))
    doc = json.loads((tmp_path / "clusters.json").read_text())
    assert all("schema_registry" not in c for c in doc["clusters"].values())
    read = read_state(tmp_path)
    assert read is not None and all(c.schema_registry is None for c in read.clusters.values())


def test_mm2_properties_and_json_carry_each_clusters_registry(tmp_path: Path) -> None:
    with_sr = two_clusters(tmp_path, with_registry=True)
    text = with_sr.mm2_properties()
    assert "primary.schema.registry.url = http://127.0.0.1:18081/apis/ccompat/v7\n" in text
    assert "backup.schema.registry.url = http://127.0.0.1:18082/apis/ccompat/v7\n" in text
    assert with_sr.to_json()["backup"] == {
        "bootstrap.servers": "127.0.0.1:9093",
        "schema.registry.url": "http://127.0.0.1:18082/apis/ccompat/v7",
    }
    without = two_clusters(tmp_path, with_registry=False)
    assert "schema.registry" not in without.mm2_properties()
    assert without.to_json()["primary"] == {"bootstrap.servers": "127.0.0.1:9092"}


# --- stopping, identity, readiness ----------------------------------------------------------------


def lookalike(port: int) -> subprocess.Popen[bytes]:
    """A process whose command line looks like a registry's on ``port`` (a sleeping Python, no JVM)."""
    code = "import time; time.sleep(60)"
    args = [sys.executable, "-c", code, f"-Dquarkus.http.port={port}", "-jar", "quarkus-run.jar"]
    proc = subprocess.Popen(args, start_new_session=True)
    deadline = time.monotonic() + 10.0
    cmdline = Path(f"/proc/{proc.pid}/cmdline")
    while b"-jar" not in cmdline.read_bytes().split(b"\0"):  # until exec replaced the forked copy of pytest
        assert time.monotonic() < deadline, "the lookalike process did not start"
        time.sleep(0.01)
    return proc


def test_stop_registries_terminates_its_own_processes_quickly(tmp_path: Path) -> None:
    procs = [lookalike(18081), lookalike(18082)]
    records = [
        LocalSchemaRegistry(port=18081 + i, management_port=1, pid=p.pid, log_path=tmp_path / "x.log")
        for i, p in enumerate(procs)
    ]
    try:
        assert all(is_our_registry(r) for r in records)
        started = time.monotonic()
        stop_registries(records)
        assert time.monotonic() - started < 5.0
        assert [p.wait(timeout=5) for p in procs] == [-15, -15]  # SIGTERM
    finally:
        for p in procs:
            p.kill()
            p.wait()


def test_a_pid_running_something_else_is_not_signalled(tmp_path: Path) -> None:
    proc = lookalike(18081)
    other_port = LocalSchemaRegistry(port=28081, management_port=1, pid=proc.pid, log_path=tmp_path / "x.log")
    try:
        assert not is_our_registry(other_port)
        stop_registries([other_port, LocalSchemaRegistry(port=1, management_port=2, pid=0, log_path=tmp_path)])
        assert proc.poll() is None
    finally:
        proc.kill()
        proc.wait()


def test_a_registry_that_exits_during_start_up_fails_with_its_log(tmp_path: Path) -> None:
    log = tmp_path / "schema-registry-primary-0.log"
    log.write_text("ERROR something went wrong\nUnsupportedClassVersionError: class file version 65.0\n")
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    dead = LocalSchemaRegistry(port=1, management_port=2, pid=gone.pid, log_path=log)
    with pytest.raises(LocalClusterError, match=r"'primary' .*exited during start-up(.|\n)*UnsupportedClassVersion"):
        wait_registries({"primary": dead}, timeout_s=5.0)


def test_a_registry_that_lost_its_port_is_launched_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = tmp_path / "schema-registry-primary-0.log"
    log.write_text("ERROR Port(s) already bound: 18081: Address already in use\n")
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    clashed = LocalSchemaRegistry(port=18081, management_port=2, pid=gone.pid, log_path=log)
    again = LocalSchemaRegistry(port=18099, management_port=3, pid=gone.pid, log_path=log)
    monkeypatch.setattr(registry, "_relaunch", lambda r, name: again)
    monkeypatch.setattr(registry, "_answers", lambda r: r.port == 18099)
    assert wait_registries({"primary": clashed}, timeout_s=5.0) == {"primary": again}


def test_the_written_mm2_properties_turn_schema_replication_on(tmp_path: Path) -> None:
    config = parse_config(parse_properties(two_clusters(tmp_path, with_registry=True).mm2_properties()), env={})
    registry_of = config.clusters["backup"].schema_registry
    assert registry_of is not None and registry_of.urls == ("http://127.0.0.1:18082/apis/ccompat/v7",)
    flow = next(f for f in config.flows if (f.source, f.target) == ("primary", "backup"))
    assert flow.sync_schemas_enabled
