"""The pure topic-config sync rule (MM2 ``syncTopicConfigs`` with KIP-894's ``use.defaults.from``)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from mirrorspark.mm2.config_sync import topic_config_changes
from mirrorspark.mm2.filters import DefaultConfigPropertyFilter

pytestmark = pytest.mark.unit


@dataclass(frozen=True)
class Entry:
    value: str | None
    is_default: bool = False


def test_set_values_that_differ_are_set_and_equal_ones_left_alone() -> None:
    rule = DefaultConfigPropertyFilter()
    source = {"retention.ms": Entry("1000"), "cleanup.policy": Entry("compact")}
    target = {"retention.ms": Entry("5000"), "cleanup.policy": Entry("compact")}
    assert topic_config_changes(source, target, rule) == {"retention.ms": "1000"}


def test_source_default_deletes_a_target_override_with_defaults_from_target() -> None:
    rule = DefaultConfigPropertyFilter()
    source = {"retention.ms": Entry("604800000", is_default=True)}
    assert topic_config_changes(source, {"retention.ms": Entry("5000")}, rule) == {"retention.ms": None}
    assert topic_config_changes(source, {"retention.ms": Entry("604800000", is_default=True)}, rule) == {}


def test_source_default_is_copied_with_defaults_from_source() -> None:
    rule = DefaultConfigPropertyFilter(use_defaults_from="source")
    source = {"retention.ms": Entry("604800000", is_default=True)}
    assert topic_config_changes(source, {"retention.ms": Entry("5000")}, rule) == {"retention.ms": "604800000"}


def test_excluded_properties_are_never_touched() -> None:
    rule = DefaultConfigPropertyFilter()
    source = {"min.insync.replicas": Entry("2"), "unclean.leader.election.enable": Entry("true")}
    target = {"min.insync.replicas": Entry("1")}
    assert topic_config_changes(source, target, rule) == {}
