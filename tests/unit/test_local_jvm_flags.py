"""The local Kafka JVMs' flags read Kafka's start-script variables as kafka-run-class.sh does."""

from __future__ import annotations

import pytest

from mirrorspark.kafka.local.settings import ALWAYS_JVM_FLAGS, BROKER_HEAP_FLAGS, JVM_PERFORMANCE_FLAGS, jvm_flags

pytestmark = pytest.mark.unit


def test_without_the_variables_the_defaults() -> None:
    assert jvm_flags({}) == (*BROKER_HEAP_FLAGS, *JVM_PERFORMANCE_FLAGS, *ALWAYS_JVM_FLAGS)
    assert "-XX:+UseG1GC" in JVM_PERFORMANCE_FLAGS


def test_each_variable_replaces_its_part_split_on_whitespace() -> None:
    env = {"KAFKA_HEAP_OPTS": " -Xmx1g ", "KAFKA_JVM_PERFORMANCE_OPTS": "-XX:TieredStopAtLevel=1\t-XX:+UseSerialGC"}
    assert jvm_flags(env) == ("-Xmx1g", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", *ALWAYS_JVM_FLAGS)


def test_a_blank_variable_keeps_the_default() -> None:
    assert jvm_flags({"KAFKA_HEAP_OPTS": "  ", "KAFKA_JVM_PERFORMANCE_OPTS": ""}) == jvm_flags({})


def test_a_jvm_with_its_own_heap_ignores_the_heap_variable() -> None:
    """MirrorMaker and Connect workers take their heap as an argument."""
    assert jvm_flags({"KAFKA_HEAP_OPTS": "-Xmx1g"}, heap=None) == (*JVM_PERFORMANCE_FLAGS, *ALWAYS_JVM_FLAGS)
