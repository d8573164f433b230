"""mm2.properties parsing: MM2's defaults, precedence, validation, indirection and client translation."""

from __future__ import annotations

import copy
import dataclasses
import logging
import pickle
from collections.abc import Mapping
from pathlib import Path

import pytest

from mirrorspark.config.keys import CONFIG_KEYS
from mirrorspark.config.model import (
    ClientSettings,
    ClusterConfig,
    DataPathConfig,
    FlowConfig,
    MirrorConfig,
    PolicyConfig,
)
from mirrorspark.config.parse import load_config, parse_config
from mirrorspark.config.properties import parse_properties
from mirrorspark.errors import BadRegexError, ConfigError, UnknownAliasError

pytestmark = pytest.mark.unit

# In the style of the examples of MM2's README / KIP-382.
MM2_PROPERTIES = r"""
# MirrorMaker 2 between two data centres
clusters = primary, backup

primary.bootstrap.servers = primary-1:9092, primary-2:9092
backup.bootstrap.servers  = backup-1:9092

# security for every cluster
security.protocol = SASL_SSL
sasl.mechanism = SCRAM-SHA-512
sasl.jaas.config = org.apache.kafka.common.security.scram.ScramLoginModule required \
    username="mm2" \
    password="${env:MM2_PASSWORD}";

primary->backup.enabled = true
primary->backup.topics = orders\\..*, payments
primary->backup.groups = .*
backup->primary.enabled = false

replication.factor = 3
checkpoints.topic.replication.factor = 1
heartbeats.topic.replication.factor = 1
offset-syncs.topic.replication.factor = 1
sync.group.offsets.enabled = true
emit.checkpoints.interval.seconds = 10

primary.consumer.isolation.level = read_committed
backup.producer.linger.ms = 10
backup.offset.storage.replication.factor = 1
primary->backup.tasks.max = 4
"""

ENV = {"MM2_PASSWORD": "s3cret-pw"}
PLAIN = "org.apache.kafka.common.security.plain.PlainLoginModule"
OAUTH = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"


def cfg(text: str, *, env: Mapping[str, str] | None = None, **kw: object) -> MirrorConfig:
    """Parse properties text with an isolated environment."""
    return parse_config(parse_properties(text), env=env or {}, **kw)  # type: ignore[arg-type]


def two(extra: str = "", **kw: object) -> MirrorConfig:
    """Clusters A and B with bootstrap servers, plus ``extra`` lines."""
    return cfg("clusters = A, B\nA.bootstrap.servers = a:9092\nB.bootstrap.servers = b:9092\n" + extra, **kw)


def three(extra: str = "") -> MirrorConfig:
    return cfg(
        "clusters = A, B, C\n"
        "A.bootstrap.servers = a:9092\nB.bootstrap.servers = b:9092\nC.bootstrap.servers = c:9092\n" + extra
    )


# --------------------------------------------------------------------------------------
# .properties syntax
# --------------------------------------------------------------------------------------


def test_properties_separators_comments_and_whitespace() -> None:
    text = "# comment\n! also a comment\n   \na=1\nb : 2\nc 3\n  d   =   4  \ne\nf=\ng = = x\nh:=y\n"
    assert parse_properties(text) == {
        "a": "1",
        "b": "2",
        "c": "3",
        "d": "4  ",  # trailing whitespace of a value is kept, as in Java
        "e": "",
        "f": "",
        "g": "= x",
        "h": "=y",
    }


def test_properties_continuation_lines() -> None:
    text = "list = a, \\\n     b, \\\n\tc\nnext = 1\n"
    assert parse_properties(text) == {"list": "a, b, c", "next": "1"}


def test_properties_continuation_rules() -> None:
    # an even number of backslashes does not continue; a comment never continues;
    # a continued line starting with '#' is not a comment; a continuation at EOF ends the value
    text = "a = x\\\\\nb = y\n# comment \\\nc = z\\\n  # not a comment\nd = w\\"
    assert parse_properties(text) == {"a": "x\\", "b": "y", "c": "z# not a comment", "d": "w"}


def test_properties_continuation_followed_by_blank_line_ends_value() -> None:
    assert parse_properties("a = x\\\n\nb = y") == {"a": "x", "b": "y"}


def test_properties_escapes() -> None:
    text = (
        "tab = a\\tb\n"
        "nl = a\\nb\n"
        "uni = caf\\u00e9\n"
        "emoji = \\uD83D\\uDE00\n"
        "key\\ with\\ spaces = 1\n"
        "key\\=eq\\:colon = 2\n"
        "other = \\q\\\\\n"
    )
    assert parse_properties(text) == {
        "tab": "a\tb",
        "nl": "a\nb",
        "uni": "café",
        "emoji": "\U0001f600",
        "key with spaces": "1",
        "key=eq:colon": "2",
        "other": "q\\",
    }


def test_properties_line_endings_and_duplicates() -> None:
    assert parse_properties("a=1\r\nb=2\rc=3\na=4") == {"a": "4", "b": "2", "c": "3"}


def test_properties_utf8_bom_is_ignored() -> None:
    assert parse_properties("\ufeffclusters = A") == {"clusters": "A"}


def test_properties_malformed_unicode_escape() -> None:
    with pytest.raises(ConfigError, match=r"line 2: malformed \\uXXXX escape"):
        parse_properties("a = 1\nb = \\u12G4\n")


# --------------------------------------------------------------------------------------
# Defaults
# --------------------------------------------------------------------------------------


def test_flow_defaults_equal_mm2() -> None:
    f = two().flow("A", "B")
    assert f.name == "A->B"
    assert f.enabled is False
    assert f.topics == (".*",)
    assert f.topics_exclude == (r".*[\-\.]internal", r".*\.replica", "__.*")
    assert f.groups == (".*",)
    assert f.groups_exclude == ("console-consumer-.*", "connect-.*", "__.*")
    assert f.config_properties_exclude == (
        r"follower\.replication\.throttled\.replicas",
        r"leader\.replication\.throttled\.replicas",
        r"message\.timestamp\.difference\.max\.ms",
        r"message\.timestamp\.type",
        r"unclean\.leader\.election\.enable",
        r"min\.insync\.replicas",
    )
    assert f.use_defaults_from == "target"
    assert f.tasks_max == 1
    assert (f.refresh_topics_enabled, f.refresh_topics_interval_s) == (True, 600.0)
    assert (f.refresh_groups_enabled, f.refresh_groups_interval_s) == (True, 600.0)
    assert (f.sync_topic_configs_enabled, f.sync_topic_configs_interval_s) == (True, 600.0)
    assert (f.sync_topic_acls_enabled, f.sync_topic_acls_interval_s) == (True, 600.0)
    assert (f.emit_heartbeats_enabled, f.emit_heartbeats_interval_s) == (True, 1.0)
    assert (f.emit_checkpoints_enabled, f.emit_checkpoints_interval_s) == (True, 60.0)
    assert (f.sync_group_offsets_enabled, f.sync_group_offsets_interval_s) == (False, 60.0)
    assert f.emit_offset_syncs_enabled is True
    assert f.heartbeats_replication_enabled is True
    assert f.offset_lag_max == 100
    assert f.replication_factor == 2
    assert f.offset_syncs_topic_replication_factor == 3
    assert f.heartbeats_topic_replication_factor == 3
    assert f.checkpoints_topic_replication_factor == 3
    assert f.offset_storage_replication_factor == 3
    assert f.offset_storage_topic == "mm2-offsets.A.internal"
    assert f.offset_storage_partitions == 25
    assert f.offset_syncs_topic_location == "source"
    assert f.consumer_poll_timeout_ms == 1000
    assert f.admin_timeout_ms == 60000
    assert f.exactly_once_source_support == "disabled"
    assert f.policy == PolicyConfig()
    assert f.policy.class_name == "org.apache.kafka.connect.mirror.DefaultReplicationPolicy"
    assert (f.policy.separator, f.policy.internal_topic_separator_enabled) == (".", True)
    assert f.extra == {}


def test_data_path_defaults() -> None:
    assert two().data_path == DataPathConfig(read_mode="consumer", on_gap="continue", metrics_interval_ms=5000)


def test_the_batch_engines_keys_load_with_a_warning_and_change_nothing() -> None:
    """Files written for the batch engine still load: its keys are validated, warned about and ignored."""
    c = two(
        "mirrorspark.batch.max.records.per.partition = 5000\n"
        "mirrorspark.batch.idle.interval.ms = 0\n"
        "mirrorspark.batch.follow.ms = 0\n"
        "mirrorspark.engine = continuous\n"
        "mirrorspark.read.mode = consumer\n"
    )
    assert c.data_path == two().data_path
    retired = [w for w in c.warnings if "the batch engine, which was removed" in w]
    assert len(retired) == 3 and all("has no effect" in w and "delete it" in w for w in retired)
    assert any("'mirrorspark.engine' has no effect: mirrorspark has one engine" in w for w in c.warnings)


def test_the_batch_engine_is_a_clear_error() -> None:
    with pytest.raises(ConfigError) as e:
        two("mirrorspark.engine = batch\n")
    text = str(e.value)
    assert "'batch' for 'mirrorspark.engine' was removed" in text
    assert "'run --until-caught-up' runs on the copy tasks" in text
    assert "delete 'mirrorspark.engine' or set it to auto or continuous" in text


def test_spark_kafka_read_mode_was_removed() -> None:
    """``spark-kafka`` is a clear error: what was wrong with it and what to write instead."""
    with pytest.raises(ConfigError) as e:
        two("mirrorspark.read.mode = spark-kafka\n")
    text = str(e.value)
    assert text.startswith("<properties>: 'spark-kafka' for 'mirrorspark.read.mode' was removed")
    assert "another flow's remote topic" in text
    assert "skipped records" in text
    assert "delete 'mirrorspark.read.mode' or set it to consumer" in text


def test_a_retired_key_is_still_validated() -> None:
    with pytest.raises(ConfigError, match=r"mirrorspark\.batch\.follow\.ms.*>= 0"):
        _ = two("mirrorspark.batch.follow.ms = -5\n").data_path


def test_registry_defaults_parse_and_cover_every_flow_field() -> None:
    names = [k.name for k in CONFIG_KEYS]
    assert len(names) == len(set(names))
    # every registry default is a valid value of its own key: parsing with all defaults spelled out
    # at top level changes nothing
    base = {"clusters": "A, B", "A.bootstrap.servers": "a:9092", "B.bootstrap.servers": "b:9092"}
    explicit = {
        k.name: k.default
        for k in CONFIG_KEYS
        if k.default is not None
        and k.scope in ("connector", "mirrorspark")
        and k.removed_in is None
        and k.retired is None
    }
    default = parse_config(base, env={}).flow("A", "B")
    spelled = parse_config({**base, **explicit}, env={}).flow("A", "B")
    assert dataclasses.replace(spelled, extra={}) == default
    assert set(spelled.extra) == {
        "forwarding.admin.class",
        "topic.filter.class",
        "group.filter.class",
        "config.property.filter.class",
        "tasks.max.enforce",
        "metric.reporters",
    }
    for k in CONFIG_KEYS:
        assert k.doc.strip(), k.name
        if k.name.endswith(".ms"):
            assert k.unit == "ms", k.name
        if k.name.endswith(".seconds"):
            assert k.unit == "s", k.name


def test_realistic_file() -> None:
    c = cfg(MM2_PROPERTIES, env=ENV)
    assert list(c.clusters) == ["primary", "backup"]
    assert c.cluster("primary").bootstrap_servers == "primary-1:9092,primary-2:9092"
    assert [f.name for f in c.flows] == ["primary->backup", "backup->primary"]
    assert [f.name for f in c.enabled_flows()] == ["primary->backup"]
    f = c.flow("primary", "backup")
    assert f.topics == (r"orders\..*", "payments")
    assert (f.tasks_max, f.replication_factor, f.checkpoints_topic_replication_factor) == (4, 3, 1)
    assert (f.sync_group_offsets_enabled, f.emit_checkpoints_interval_s) == (True, 10.0)
    assert f.offset_storage_replication_factor == 1
    assert f.source_consumer.get("isolation.level") == "read_committed"
    assert f.target_producer.get("linger.ms") == "10"
    assert f.source_consumer.bootstrap_servers == "primary-1:9092,primary-2:9092"
    assert f.target_producer.bootstrap_servers == "backup-1:9092"
    assert f.source_consumer.to_librdkafka()["sasl.password"] == "s3cret-pw"
    assert c.warnings == ()


def test_load_config_reads_file(tmp_path: Path) -> None:
    path = tmp_path / "mm2.properties"
    path.write_text(MM2_PROPERTIES, encoding="utf-8")
    c = load_config(path, env=ENV)
    assert c.source_name == str(path)
    assert c.flow("primary", "backup").enabled


def test_load_config_latin1_file(tmp_path: Path) -> None:
    path = tmp_path / "mm2.properties"
    path.write_bytes(
        b"clusters = A, B\nA.bootstrap.servers = a:9092\nB.bootstrap.servers = b:9092\nA.client.id = caf\xe9\n"
    )
    c = load_config(path, env={})
    assert c.flows[0].source_consumer.bootstrap_servers == "a:9092"


def test_load_config_missing_file_names_path(tmp_path: Path) -> None:
    missing = tmp_path / "nope.properties"
    with pytest.raises(ConfigError, match=r"cannot read MirrorMaker 2 config file .*nope\.properties"):
        load_config(missing)
    # a directory is read as a folder of connector configs (issue #25): one without any names the path and the shapes
    with pytest.raises(ConfigError, match=r"folder '.*' holds no \.yaml, \.yml or \.json file"):
        load_config(tmp_path)


def test_load_config_syntax_error_names_path(tmp_path: Path) -> None:
    path = tmp_path / "bad.properties"
    path.write_text("clusters = A\nx = \\uZZZZ\n")
    with pytest.raises(ConfigError, match=r"bad.properties: line 2: malformed"):
        load_config(path, env={})


# --------------------------------------------------------------------------------------
# Precedence of flow keys
# --------------------------------------------------------------------------------------


def test_flow_key_overrides_top_level_overrides_default() -> None:
    c = three(
        "tasks.max = 3\nA->B.tasks.max = 7\nreplication.policy.separator = _\nC->A.replication.policy.separator = -\n"
    )
    assert c.flow("A", "B").tasks_max == 7
    assert c.flow("B", "A").tasks_max == 3
    assert c.flow("A", "B").policy.separator == "_"
    assert c.flow("C", "A").policy.separator == "-"


def test_topics_lists_and_empty_list() -> None:
    c = two("topics = a.*, b ,c\nA->B.groups =\n")
    f = c.flow("A", "B")
    assert f.topics == ("a.*", "b", "c")
    assert f.groups == ()  # empty list: matches nothing, as in MM2
    assert c.flow("B", "A").groups == (".*",)


def test_booleans_are_case_insensitive_and_ints_signed() -> None:
    f = two("refresh.topics.enabled = FALSE\nA->B.sync.topic.acls.enabled = True\noffset.lag.max = +5\n").flow("A", "B")
    assert (f.refresh_topics_enabled, f.sync_topic_acls_enabled, f.offset_lag_max) == (False, True, 5)


def test_replication_factor_minus_one_means_broker_default() -> None:
    f = two("replication.factor = -1\nheartbeats.topic.replication.factor = -1\n").flow("A", "B")
    assert (f.replication_factor, f.heartbeats_topic_replication_factor) == (-1, -1)


def test_use_defaults_from_is_read_per_flow_only() -> None:
    c = two("use.defaults.from = source\nB->A.use.defaults.from = source\n")
    assert c.flow("A", "B").use_defaults_from == "target"
    assert c.flow("B", "A").use_defaults_from == "source"
    assert any("'use.defaults.from' is ignored at top level" in w for w in c.warnings)


def test_worker_keys_come_from_target_cluster() -> None:
    c = two(
        "B.offset.storage.topic = my-offsets\n"
        "B.offset.storage.partitions = 5\n"
        "B.exactly.once.source.support = enabled\n"
        "offset.storage.replication.factor = 1\n"
    )
    ab, ba = c.flow("A", "B"), c.flow("B", "A")
    assert (ab.offset_storage_topic, ab.offset_storage_partitions, ab.exactly_once_source_support) == (
        "my-offsets",
        5,
        "enabled",
    )
    assert (ba.offset_storage_topic, ba.offset_storage_partitions, ba.exactly_once_source_support) == (
        "mm2-offsets.B.internal",
        25,
        "disabled",
    )
    assert ab.offset_storage_replication_factor == ba.offset_storage_replication_factor == 1


def test_top_level_offset_storage_beats_cluster_level_as_in_mm2_worker_config() -> None:
    f = two("B.offset.storage.partitions = 5\noffset.storage.partitions = 7\n").flow("A", "B")
    assert f.offset_storage_partitions == 7


def test_offset_storage_topic_ignores_custom_separator() -> None:
    f = two("replication.policy.separator = _\n").flow("A", "B")
    assert f.offset_storage_topic == "mm2-offsets.A.internal"


def test_exactly_once_source_support_top_level_is_ignored() -> None:
    c = two("exactly.once.source.support = enabled\n")
    assert c.flow("A", "B").exactly_once_source_support == "disabled"
    assert any("set it per target cluster as '<alias>.exactly.once.source.support'" in w for w in c.warnings)


def test_deprecated_blacklist_aliases() -> None:
    c = two("topics.blacklist = secret.*\nA->B.groups.blacklist = g1\nB->A.topics.exclude = x\n")
    ab, ba = c.flow("A", "B"), c.flow("B", "A")
    assert ab.topics_exclude == ("secret.*",)
    assert ab.groups_exclude == ("g1",)
    assert ba.topics_exclude == ("x",)  # the new key wins over the alias, as in MM2
    assert any("'topics.blacklist' is deprecated" in w and "topics.exclude" in w for w in c.warnings)
    assert any("'A->B.groups.blacklist' is deprecated" in w for w in c.warnings)


def test_negative_interval_disables_job() -> None:
    c = two("A->B.sync.topic.acls.interval.seconds = -1\n")
    f = c.flow("A", "B")
    assert (f.sync_topic_acls_enabled, f.sync_topic_acls_interval_s) == (False, -1.0)
    assert c.flow("B", "A").sync_topic_acls_enabled is True
    assert any("negative" in w for w in c.warnings)


def test_extra_holds_other_flow_properties() -> None:
    c = two(
        "forwarding.admin.class = com.example.Admin\n"
        "A->B.exactly.once.support = requested\n"
        "A->B.transaction.boundary = interval\n"
        "A->B.consumer.override.fetch.min.bytes = 1\n"
        "A->B.source.consumer.fetch.min.bytes = 2\n"
    )
    assert dict(c.flow("A", "B").extra) == {
        "forwarding.admin.class": "com.example.Admin",
        "consumer.override.fetch.min.bytes": "1",
    }
    assert dict(c.flow("B", "A").extra) == {"forwarding.admin.class": "com.example.Admin"}
    with pytest.raises(TypeError):
        c.flow("A", "B").extra["x"] = "y"  # type: ignore[index]


# --------------------------------------------------------------------------------------
# Client settings
# --------------------------------------------------------------------------------------

# (level line, winner marker) from lowest to highest precedence, for the source consumer of A->B.
CLIENT_CHAIN = [
    "ssl.truststore.type = L0",  # top-level client key
    "A.ssl.truststore.type = L1",  # cluster client key
    "A->B.source.cluster.ssl.truststore.type = L2",  # flow <side>.cluster.<client key>
    "consumer.ssl.truststore.type = L3",  # top-level <role>.*
    "A->B.consumer.ssl.truststore.type = L4",  # flow <role>.*
    "A.consumer.ssl.truststore.type = L5",  # cluster <role>.*
    "source.consumer.ssl.truststore.type = L6",  # top-level <side>.<role>.*
    "A->B.source.consumer.ssl.truststore.type = L7",  # flow <side>.<role>.*
]


@pytest.mark.parametrize("upto", range(len(CLIENT_CHAIN)))
def test_client_role_chain(upto: int) -> None:
    lines = CLIENT_CHAIN[: upto + 1]
    # also shuffle the file order: precedence must not depend on it
    c = two("\n".join(reversed(lines)) + "\n")
    assert c.flow("A", "B").source_consumer.get("ssl.truststore.type") == f"L{upto}"


def test_client_sides_use_their_own_cluster() -> None:
    c = two(
        "security.protocol = SSL\n"
        "A.security.protocol = SASL_SSL\n"
        "A.admin.request.timeout.ms = 1\n"
        "B.producer.acks = all\n"
        "B.consumer.client.rack = r1\n"
        "target.admin.retries = 3\n"
        "A->B.source.producer.linger.ms = 2\n"
    )
    f = c.flow("A", "B")
    assert f.source_admin.bootstrap_servers == "a:9092"
    assert f.source_admin.get("security.protocol") == "SASL_SSL"
    assert f.source_admin.get("request.timeout.ms") == "1"
    assert f.source_producer.get("linger.ms") == "2"
    assert f.target_producer.bootstrap_servers == "b:9092"
    assert f.target_producer.get("security.protocol") == "SSL"
    assert f.target_producer.get("acks") == "all"
    assert f.target_consumer.get("client.rack") == "r1"
    assert f.target_admin.get("retries") == "3"
    assert f.source_admin.get("retries") is None
    # the reverse flow swaps the clusters
    r = c.flow("B", "A")
    assert r.source_consumer.get("client.rack") == "r1"
    assert r.target_admin.get("request.timeout.ms") == "1"


def test_cluster_config_role_settings() -> None:
    c = two("security.protocol = SSL\nB.security.protocol = PLAINTEXT\nA.consumer.isolation.level = read_committed\n")
    a = c.cluster("A")
    assert isinstance(a, ClusterConfig)
    assert a.consumer.properties == {
        "security.protocol": "SSL",
        "bootstrap.servers": "a:9092",
        "isolation.level": "read_committed",
    }
    assert a.producer.properties == {"security.protocol": "SSL", "bootstrap.servers": "a:9092"}
    assert c.cluster("B").admin.get("security.protocol") == "PLAINTEXT"


def test_top_level_bootstrap_servers_is_default_for_every_cluster() -> None:
    c = cfg("clusters = A, B\nbootstrap.servers = shared:9092\nB.bootstrap.servers = b:9092\n")
    assert c.cluster("A").bootstrap_servers == "shared:9092"
    assert c.cluster("B").bootstrap_servers == "b:9092"


def test_source_consumer_forced_settings() -> None:
    c = two("A.consumer.enable.auto.commit = true\nB.consumer.auto.offset.reset = latest\n")
    f = c.flow("A", "B")
    assert f.source_consumer.get("enable.auto.commit") == "false"
    assert f.source_consumer.get("auto.offset.reset") == "earliest"
    assert f.target_consumer.get("enable.auto.commit") == "false"
    assert f.target_consumer.get("auto.offset.reset") == "latest"
    assert c.flow("B", "A").source_consumer.get("auto.offset.reset") == "latest"  # KAFKA-13988
    assert any("enable.auto.commit" in w and "forced to false" in w for w in c.warnings)


def test_data_producer_worker_and_override_settings() -> None:
    f = two(
        "B.producer.linger.ms = 5\nB.producer.acks = 1\n"
        "A->B.producer.override.acks = all\nA->B.target.producer.batch.size = 9\n"
    ).flow("A", "B")
    assert f.target_producer.get("linger.ms") == "5"
    assert f.target_producer.get("acks") == "all"
    assert f.target_producer.get("batch.size") == "9"
    assert f.target_producer.get("override.acks") is None


def test_mm2_keys_starting_like_a_role_are_not_client_settings() -> None:
    f = two("admin.timeout.ms = 5\nconsumer.poll.timeout.ms = 7\n").flow("A", "B")
    assert (f.admin_timeout_ms, f.consumer_poll_timeout_ms) == (5, 7)
    assert f.source_admin.get("timeout.ms") is None
    assert f.source_consumer.get("poll.timeout.ms") is None


def test_client_values_are_trimmed() -> None:
    f = two("A.consumer.isolation.level = read_committed   \n").flow("A", "B")
    assert f.source_consumer.get("isolation.level") == "read_committed"


def test_alias_named_like_a_side_is_a_cluster_prefix() -> None:
    c = cfg(
        "clusters = source, target\nsource.bootstrap.servers = s:9092\ntarget.bootstrap.servers = t:9092\n"
        "source.consumer.isolation.level = read_committed\n"
    )
    assert c.flow("source", "target").source_consumer.get("isolation.level") == "read_committed"
    assert c.flow("target", "source").source_consumer.get("isolation.level") is None
    assert c.flow("target", "source").target_consumer.get("isolation.level") == "read_committed"


# --------------------------------------------------------------------------------------
# Flow selection: enabled, --clusters, heartbeats
# --------------------------------------------------------------------------------------


def test_enabled_flows_and_clusters_filter() -> None:
    c = three("A->B.enabled = true\nA->C.enabled = true\nC->B.enabled = true\n")
    assert [f.name for f in c.enabled_flows()] == ["A->B", "A->C", "C->B"]
    assert [f.name for f in c.enabled_flows(["B"])] == ["A->B", "C->B"]
    assert [f.name for f in c.enabled_flows(["C", "A"])] == ["A->C"]
    assert c.enabled_flows([]) == ()
    with pytest.raises(UnknownAliasError, match=r"'X'.*known: A, B, C"):
        c.enabled_flows(["X"])


def test_load_config_clusters_is_the_default_target_filter() -> None:
    props = parse_properties(
        "clusters = A, B, C\n"
        "A.bootstrap.servers = a:1\nB.bootstrap.servers = b:1\nC.bootstrap.servers = c:1\n"
        "A->B.enabled = true\nA->C.enabled = true\n"
    )
    c = parse_config(props, env={}, clusters=["C"])
    assert c.target_clusters == ("C",)
    assert [f.name for f in c.enabled_flows()] == ["A->C"]
    assert [f.name for f in c.enabled_flows(["B"])] == ["A->B"]
    assert [f.name for f in c.heartbeat_flows()] == ["A->C", "B->C"]
    with pytest.raises(UnknownAliasError, match="--clusters names cluster alias 'D'"):
        parse_config(props, env={}, clusters=["D"])


def test_no_enabled_flow_is_not_an_error() -> None:
    assert two().enabled_flows() == ()


def test_heartbeat_flows_three_clusters_nothing_set() -> None:
    c = three()
    assert [f.name for f in c.heartbeat_flows()] == ["A->B", "A->C", "B->A", "B->C", "C->A", "C->B"]
    assert [f.name for f in c.heartbeat_flows(["A"])] == ["B->A", "C->A"]


def test_heartbeat_flows_disabled_globally() -> None:
    assert three("emit.heartbeats.enabled = false\n").heartbeat_flows() == ()
    # an enabled flow gets a herder, but its heartbeat connector still follows emit.heartbeats.enabled
    c = three("emit.heartbeats.enabled = false\nA->B.enabled = true\n")
    assert c.heartbeat_flows() == ()
    assert [f.name for f in c.enabled_flows()] == ["A->B"]
    # a flow-level override wins over the global switch
    c = three("emit.heartbeats.enabled = false\nC->A.emit.heartbeats.enabled = true\n")
    assert [f.name for f in c.heartbeat_flows()] == ["C->A"]


def test_top_level_enabled_applies_only_to_flows_with_a_herder() -> None:
    # MM2: a herder exists iff S->T.enabled or heartbeats are enabled;
    # its connectors then default to the top-level 'enabled'
    assert [f.name for f in two("enabled = true\n").enabled_flows()] == ["A->B", "B->A"]
    c = two("enabled = true\nemit.heartbeats.enabled = false\nB->A.enabled = true\n")
    assert [f.name for f in c.enabled_flows()] == ["B->A"]
    assert [f.name for f in two("enabled = true\nA->B.enabled = false\n").enabled_flows()] == ["B->A"]


def test_cluster_and_flow_lookup_errors() -> None:
    c = two()
    with pytest.raises(UnknownAliasError, match="'Z', which is not in 'clusters' \\(known: A, B\\)"):
        c.cluster("Z")
    with pytest.raises(UnknownAliasError, match="'Z'"):
        c.flow("A", "Z")
    with pytest.raises(ConfigError, match="no flow A->A"):
        c.flow("A", "A")


def test_aliases_with_dashes_and_underscores() -> None:
    c = cfg(
        "clusters = us-west, eu_1\nus-west.bootstrap.servers = w:9092\neu_1.bootstrap.servers = e:9092\n"
        "us-west->eu_1.enabled = true\n"
    )
    assert [f.name for f in c.enabled_flows()] == ["us-west->eu_1"]


# --------------------------------------------------------------------------------------
# Indirection
# --------------------------------------------------------------------------------------


def test_env_placeholders(tmp_path: Path) -> None:
    c = cfg(
        "clusters = A, B\nA.bootstrap.servers = ${env:A_HOST}:9092\nB.bootstrap.servers = ${env::B_SERVERS}\n",
        env={"A_HOST": "a.example", "B_SERVERS": "b1:9092,b2:9092"},
    )
    assert c.cluster("A").bootstrap_servers == "a.example:9092"
    assert c.cluster("B").bootstrap_servers == "b1:9092,b2:9092"


def test_file_and_directory_placeholders(tmp_path: Path) -> None:
    secrets = tmp_path / "secrets.properties"
    secrets.write_text("a.pw = file-secret\nhost = a.example\n")
    (tmp_path / "pw").write_text("dir-secret")
    c = two(
        "config.providers = file\n"
        "config.providers.file.class = org.apache.kafka.common.config.provider.FileConfigProvider\n"
        f"A.ssl.key.password = ${{file:{secrets}:a.pw}}\n"
        f"B.ssl.key.password = ${{directory:{tmp_path}:pw}}\n"
    )
    assert c.cluster("A").consumer.get("ssl.key.password") == "file-secret"
    assert c.cluster("B").consumer.get("ssl.key.password") == "dir-secret"
    assert c.warnings == ()


def test_custom_provider_names_are_mapped_by_class(tmp_path: Path) -> None:
    secrets = tmp_path / "s.properties"
    secrets.write_text("pw = x")
    c = two(
        "config.providers = vault, secrets\n"
        "config.providers.secrets.class = org.apache.kafka.common.config.provider.FileConfigProvider\n"
        "config.providers.vault.class = com.example.VaultConfigProvider\n"
        f"A.ssl.key.password = ${{secrets:{secrets}:pw}}\n"
        "B.ssl.key.password = ${vault:kv/mm2:pw}\n"
    )
    assert c.cluster("A").consumer.get("ssl.key.password") == "x"
    assert c.cluster("B").consumer.get("ssl.key.password") == "${vault:kv/mm2:pw}"
    assert any("${vault:kv/mm2:pw}" in w and "cannot resolve" in w for w in c.warnings)


def test_placeholder_errors_name_the_placeholder_not_the_secret(tmp_path: Path) -> None:
    secrets = tmp_path / "s.properties"
    secrets.write_text("other = top-secret-value")
    with pytest.raises(ConfigError, match=r"\$\{env:NOPE\} in 'A.sasl.jaas.config'.*'NOPE' is not set"):
        two('A.sasl.jaas.config = x required password="${env:NOPE}";\n')
    with pytest.raises(ConfigError, match=r"\$\{file:.*:pw\}.*has no key 'pw'") as e:
        two(f"A.ssl.key.password = ${{file:{secrets}:pw}}\n")
    assert "top-secret-value" not in str(e.value)
    with pytest.raises(ConfigError, match=r"file '.*missing.properties' cannot be read"):
        two(f"A.ssl.key.password = ${{file:{tmp_path}/missing.properties:pw}}\n")
    with pytest.raises(ConfigError, match="take no path"):
        two("A.ssl.key.password = ${env:x:NAME}\n")


def test_placeholders_use_os_environ_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MIRRORSPARK_TEST_HOST", "from-env")
    props = parse_properties("clusters = A\nA.bootstrap.servers = ${env:MIRRORSPARK_TEST_HOST}:9092\n")
    assert parse_config(props).cluster("A").bootstrap_servers == "from-env:9092"


# --------------------------------------------------------------------------------------
# Validation errors
# --------------------------------------------------------------------------------------


def test_missing_clusters() -> None:
    with pytest.raises(ConfigError, match="no 'clusters' key: list the cluster aliases"):
        cfg("A.bootstrap.servers = a:9092\n")
    with pytest.raises(ConfigError, match="'clusters' is empty"):
        cfg("clusters = \n")


def test_duplicate_and_malformed_aliases() -> None:
    with pytest.raises(ConfigError, match="lists the alias 'A' twice"):
        cfg("clusters = A, B, A\n")
    for bad in ("a.b", "a->b", "a b", "A,"):
        with pytest.raises(ConfigError, match="aliases must be non-empty"):
            cfg(f"clusters = {bad}\n")


def test_cluster_without_bootstrap_servers() -> None:
    with pytest.raises(ConfigError, match=r"cluster 'B' has no bootstrap servers: add 'B.bootstrap.servers = "):
        cfg("clusters = A, B\nA.bootstrap.servers = a:9092\nB.consumer.bootstrap.servers = b:9092\n")


def test_flow_key_with_unknown_alias() -> None:
    with pytest.raises(UnknownAliasError, match=r"'A->C.enabled' names cluster alias 'C'.*\(known: A, B\)"):
        two("A->C.enabled = true\n")
    with pytest.raises(UnknownAliasError, match="'X'"):
        two("X->B.topics = .*\n")
    with pytest.raises(ConfigError, match="source and target must differ"):
        two("A->A.enabled = true\n")


@pytest.mark.parametrize(
    ("line", "written", "pattern"),
    [
        ("topics = ok, bad[", "topics", "bad["),
        ("A->B.topics.exclude = (unclosed", "A->B.topics.exclude", "(unclosed"),
        ("groups = *start", "groups", "*start"),
        ("B->A.groups.exclude = a)", "B->A.groups.exclude", "a)"),
        ("config.properties.exclude = ok, a**", "config.properties.exclude", "a**"),
        ("topics.blacklist = [z", "topics.blacklist", "[z"),
    ],
)
def test_bad_regex(line: str, written: str, pattern: str) -> None:
    with pytest.raises(BadRegexError) as e:
        two(line + "\n")
    assert f"'{written}'" in str(e.value)
    assert repr(pattern) in str(e.value)


def test_bad_regex_only_when_joined() -> None:
    with pytest.raises(BadRegexError, match="once joined with '\\|'"):
        two("topics = a, (?i)b\n")


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (
            "offset-syncs.topic.location = elsewhere",
            r"'elsewhere' for 'offset-syncs.topic.location'.*one of source, target",
        ),
        ("A->B.use.defaults.from = both", r"'both' for 'A->B.use.defaults.from'.*one of target, source"),
        ("replication.policy.separator =   ", r"'replication.policy.separator' is empty"),
        ("A->B.replication.policy.separator =", r"'A->B.replication.policy.separator' is empty"),
        ("A->B.enabled = yes", r"'yes' for 'A->B.enabled': expected a boolean \(true or false\)"),
        ("tasks.max = 0", r"'0' for 'tasks.max': expected a 32-bit integer >= 1 \(tasks\)"),
        ("tasks.max = 1_000", r"'1_000' for 'tasks.max'"),
        ("A->B.tasks.max = 2147483648", r"'2147483648' for 'A->B.tasks.max'"),
        ("replication.factor = 0", r"'0' for 'replication.factor'.*-1 = broker default"),
        ("heartbeats.topic.replication.factor = 40000", r"'40000'.*16-bit integer"),
        ("offset.lag.max = ten", r"'ten' for 'offset.lag.max': expected a 64-bit integer"),
        (
            "emit.checkpoints.interval.seconds = 0",
            r"'0' for 'emit.checkpoints.interval.seconds'.*other than 0",
        ),
        (
            "B.exactly.once.source.support = on",
            r"'on' for 'B.exactly.once.source.support'.*disabled, preparing",
        ),
        ("B.offset.storage.partitions = 0", r"'0' for 'B.offset.storage.partitions'"),
        ("mirrorspark.read.mode = jvm", r"'jvm' for 'mirrorspark.read.mode'.*one of consumer;"),
        ("mirrorspark.read.mode = spark-kafka", r"'spark-kafka' for 'mirrorspark.read.mode' was removed"),
        ("mirrorspark.batch.max.records.per.partition = 0", r"'mirrorspark.batch.max.records.per.partition'"),
        ("A->B.exactly.once.support = maybe", r"'maybe' for 'A->B.exactly.once.support'"),
    ],
)
def test_invalid_values(line: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as e:
        two(line + "\n")
    assert "<properties>: " in str(e.value)


def test_emit_offset_syncs_disabled_with_offset_syncs_keys() -> None:
    with pytest.raises(ConfigError, match=r"'A->B.emit.offset-syncs.enabled' = false.*'offset-syncs.topic.location'"):
        two("offset-syncs.topic.location = target\nA->B.emit.offset-syncs.enabled = false\n")
    with pytest.raises(ConfigError, match=r"'A->B.offset-syncs.topic.replication.factor'"):
        two("emit.offset-syncs.enabled = false\nA->B.offset-syncs.topic.replication.factor = 1\n")
    f = two("emit.offset-syncs.enabled = false\n").flow("A", "B")
    assert f.emit_offset_syncs_enabled is False


def test_exactly_once_required_needs_an_exactly_once_target_and_read_committed() -> None:
    eos = "B.exactly.once.source.support = enabled\n"
    with pytest.raises(ConfigError, match=r"set 'B\.exactly\.once\.source\.support = enabled'"):
        two("A->B.exactly.once.support = required\n")
    with pytest.raises(ConfigError, match=r"set 'A\.consumer\.isolation\.level = read_committed'"):
        two(eos + "A->B.exactly.once.support = required\n")
    f = two(eos + "A->B.exactly.once.support = required\nA.consumer.isolation.level = read_committed\n").flow("A", "B")
    assert f.exactly_once_support == "required"
    assert f.exactly_once_source_support == "enabled"


def test_exactly_once_boundaries_and_timeouts_are_checked() -> None:
    eos = "B.exactly.once.source.support = enabled\n"
    with pytest.raises(ConfigError, match=r"'A->B\.transaction\.boundary' = connector: MirrorSourceConnector"):
        two("A->B.transaction.boundary = connector\n")
    f = two(eos + "A->B.transaction.boundary = interval\nA->B.transaction.boundary.interval.ms = 5000\n").flow("A", "B")
    assert (f.transaction_boundary, f.transaction_boundary_interval_ms) == ("interval", 5000)
    with pytest.raises(ConfigError, match=r"transaction\.timeout\.ms is 60000 ms"):
        two(eos + "A->B.transaction.boundary.interval.ms = 60000\n")
    with pytest.raises(ConfigError, match=r"transaction\.timeout\.ms is 200 ms"):
        two(eos + "B.producer.transaction.timeout.ms = 200\n")
    two("B.producer.transaction.timeout.ms = 200\n")  # at least once: no transactions, nothing to check


def test_errors_use_the_source_name() -> None:
    with pytest.raises(ConfigError, match=r"^/etc/mm2\.properties: "):
        parse_config(
            {"clusters": "A", "A.bootstrap.servers": "a:1", "tasks.max": "x"},
            source_name="/etc/mm2.properties",
        )


# --------------------------------------------------------------------------------------
# Warnings
# --------------------------------------------------------------------------------------


def test_unknown_keys_warn_in_lenient_mode(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="mirrorspark.config.parse"):
        c = two(
            "toppics = .*\n"
            "A->B.tasks.maxx = 2\n"
            "C.bootstrap.servers = c:9092\n"
            "mirrorspark.batch.size = 3\n"
            "A->B.mirrorspark.read.mode = consumer\n"
            "A->B.bootstrap.servers = x:1\n"
            "A->B.offset.storage.topic = t\n"
            "A->B.clusters = A\n",
            lenient=True,
        )
    w = "\n".join(c.warnings)
    assert "unknown key 'toppics'; did you mean 'topics'? (accepted in lenient mode)" in w
    assert "unknown key 'A->B.tasks.maxx'; did you mean 'A->B.tasks.max'? (accepted in lenient mode)" in w
    assert "unknown key 'C.bootstrap.servers' (is 'C' missing from 'clusters'?) (accepted in lenient mode)" in w
    assert "unknown key 'mirrorspark.batch.size' (accepted in lenient mode)" in w
    assert "'A->B.mirrorspark.read.mode' has no effect" in w
    assert "'A->B.bootstrap.servers' has no effect on clients" in w
    assert "'A->B.offset.storage.topic' has no effect at flow level" in w
    assert "'A->B.clusters' has no effect at flow level" in w
    assert len(c.warnings) == 8  # transforms are run now: tests/unit/test_transforms.py
    assert [r.getMessage() for r in caplog.records] == [f"<properties>: {m}" for m in c.warnings]


def test_known_shapes_do_not_warn() -> None:
    c = two(
        "A.linger.ms = 1\n"  # <alias>.<client property>
        "A.group.id = mm2-a\n"  # <alias>.<Connect worker key>
        "consumer.fetch.min.bytes = 1\n"
        "target.producer.acks = all\n"
        "ssl.truststore.type = PEM\n"
        "sasl.mechanism = PLAIN\n"
        "config.providers = file\n"
        "config.providers.file.class = org.apache.kafka.common.config.provider.FileConfigProvider\n"
        "offset.storage.topic = t\n"
        "status.storage.topic = s\n"
        "errors.tolerance = none\n"
        "metrics.num.samples = 2\n"
        "replication.policy.custom.option = x\n"
        "dedicated.mode.enable.internal.rest = false\n"
        "listeners = http://:8083\n"
        "A->B.source.cluster.security.protocol = SSL\n"
        "A->B.target.admin.retries = 2\n"
        "A->B.producer.override.acks = all\n"
    )
    assert c.warnings == ()


def test_removed_keys_warn_but_validate() -> None:
    c = two("use.incremental.alter.configs = never\n")
    assert any("removed in Kafka 4.0" in w for w in c.warnings)
    with pytest.raises(ConfigError, match="one of requested, required, never"):
        two("use.incremental.alter.configs = sometimes\n")


# --------------------------------------------------------------------------------------
# Secrets, immutability, pickling
# --------------------------------------------------------------------------------------

SECRETS = {
    "sasl.jaas.config": f'{PLAIN} required username="u" password="pw-1";',
    "ssl.key.password": "pw-2",
    "ssl.keystore.password": "pw-3",
    "ssl.truststore.password": "pw-4",
    "sasl.oauthbearer.client.credentials.client.secret": "pw-5",
}


def test_client_settings_repr_masks_secrets() -> None:
    s = ClientSettings(properties={"bootstrap.servers": "b:9092", **SECRETS})
    for text in (repr(s), str(s)):
        assert "b:9092" in text
        assert "******" in text
        for value in SECRETS.values():
            assert value not in text


def test_config_reprs_and_warnings_mask_secrets() -> None:
    lines = "".join(f"A.consumer.{k} = {v}\nA->B.source.admin.{k} = {v}\n" for k, v in SECRETS.items())
    c = two(lines + "A->B.ssl.key.password = pw-6\nA->B.unknown.password = pw-7\n", lenient=True)
    text = repr(c) + str(c) + repr(c.flow("A", "B")) + "\n".join(c.warnings)
    for value in [*SECRETS.values(), "pw-6", "pw-7"]:
        assert value not in text
    assert c.flow("A", "B").extra["unknown.password"] == "pw-7"


def test_invalid_secret_values_are_not_echoed() -> None:
    with pytest.raises(ConfigError) as e:
        ClientSettings(properties={"sasl.jaas.config": "garbage pw-8"}).to_librdkafka()
    assert "pw-8" not in str(e.value)
    assert "sasl.jaas.config cannot be parsed" in str(e.value)


def test_objects_are_immutable_hashable_and_picklable() -> None:
    c = cfg(MM2_PROPERTIES, env=ENV)
    f = c.flow("primary", "backup")
    with pytest.raises(AttributeError):
        f.tasks_max = 2  # type: ignore[misc]
    with pytest.raises(TypeError):
        f.source_consumer.properties["x"] = "y"  # type: ignore[index]
    with pytest.raises(TypeError):
        c.clusters["x"] = c.cluster("primary")  # type: ignore[index]
    for obj in (c, f, f.source_consumer, c.cluster("backup")):
        assert pickle.loads(pickle.dumps(obj)) == obj
        assert copy.deepcopy(obj) == obj
        assert hash(obj) == hash(copy.deepcopy(obj))
    assert isinstance(f, FlowConfig)
    assert {f.source_consumer, f.source_consumer.with_overrides({})} == {f.source_consumer}


def test_client_settings_accessors() -> None:
    s = ClientSettings(properties={"bootstrap.servers": "b:9092"})
    assert s.bootstrap_servers == "b:9092"
    assert s.get("acks") is None and s.get("acks", "all") == "all"
    t = s.with_overrides({"acks": "1", "bootstrap.servers": "c:9092"})
    assert (t.get("acks"), t.bootstrap_servers, s.get("acks")) == ("1", "c:9092", None)
    with pytest.raises(ConfigError, match=r"no bootstrap\.servers"):
        _ = ClientSettings(properties={}).bootstrap_servers


# --------------------------------------------------------------------------------------
# to_librdkafka / to_spark_options
# --------------------------------------------------------------------------------------


def librdkafka(**props: str) -> dict[str, str]:
    return ClientSettings(properties={k.replace("_", "."): v for k, v in props.items()}).to_librdkafka()


def test_librdkafka_keeps_shared_keys() -> None:
    shared = {
        "bootstrap.servers": "b:9092",
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "PLAIN",
        "client.id": "me",
        "client.rack": "r1",
        "isolation.level": "read_committed",
        "linger.ms": "5",
        "batch.size": "16384",
        "compression.type": "zstd",
        "acks": "all",
        "enable.idempotence": "true",
        "max.in.flight.requests.per.connection": "5",
        "fetch.min.bytes": "1",
        "fetch.max.bytes": "52428800",
        "max.partition.fetch.bytes": "1048576",
        "request.timeout.ms": "30000",
        "retries": "3",
        "retry.backoff.ms": "100",
        "message.max.bytes": "1000000",
        "connections.max.idle.ms": "540000",
        "reconnect.backoff.ms": "50",
        "reconnect.backoff.max.ms": "1000",
        "auto.offset.reset": "earliest",
        "enable.auto.commit": "false",
        "ssl.ca.location": "/etc/ca.pem",
        "some.future.key": "kept",
    }
    assert ClientSettings(properties=shared).to_librdkafka() == shared


def test_librdkafka_translations() -> None:
    out = ClientSettings(
        properties={
            "receive.buffer.bytes": "65536",
            "send.buffer.bytes": "-1",
            "buffer.memory": "33554432",
            "delivery.timeout.ms": "120000",
            "fetch.max.wait.ms": "500",
            "max.request.size": "2097152",
            "compression.type": "gzip",
            "compression.gzip.level": "6",
            "compression.zstd.level": "3",
            "ssl.endpoint.identification.algorithm": "",
            "auto.offset.reset": "none",
            "client.dns.lookup": "use_all_dns_ips",
            "partition.assignment.strategy": "org.apache.kafka.clients.consumer.RoundRobinAssignor",
        }
    ).to_librdkafka()
    assert out == {
        "socket.receive.buffer.bytes": "65536",
        "socket.send.buffer.bytes": "0",
        "queue.buffering.max.kbytes": "32768",
        "message.timeout.ms": "120000",
        "fetch.wait.max.ms": "500",
        "message.max.bytes": "2097152",
        "compression.type": "gzip",
        "compression.level": "6",
        "ssl.endpoint.identification.algorithm": "none",
        "auto.offset.reset": "error",
        "client.dns.lookup": "use_all_dns_ips",
        "partition.assignment.strategy": "roundrobin",
    }
    assert librdkafka(ssl_endpoint_identification_algorithm="HTTPS") == {
        "ssl.endpoint.identification.algorithm": "https"
    }
    # an explicit librdkafka key wins over the translated Java one
    assert ClientSettings(properties={"max.request.size": "1", "message.max.bytes": "2"}).to_librdkafka() == {
        "message.max.bytes": "2"
    }
    # Java's default assignor list has no librdkafka equivalent: left to librdkafka's default
    java_default = ", ".join(
        f"org.apache.kafka.clients.consumer.{name}" for name in ("RangeAssignor", "CooperativeStickyAssignor")
    )
    assert ClientSettings(properties={"partition.assignment.strategy": java_default}).to_librdkafka() == {}


def test_librdkafka_large_fetch_max_bytes_raises_receive_limit() -> None:
    out = ClientSettings(properties={"fetch.max.bytes": "209715200"}).to_librdkafka()
    assert out["receive.message.max.bytes"] == str(209715200 + 512)


def test_librdkafka_drops_java_only_keys() -> None:
    java_only = {
        "key.serializer": "org.apache.kafka.common.serialization.ByteArraySerializer",
        "value.deserializer": "org.apache.kafka.common.serialization.ByteArrayDeserializer",
        "interceptor.classes": "x.Y",
        "partitioner.class": "x.Y",
        "max.poll.records": "500",
        "max.block.ms": "60000",
        "metric.reporters": "x.Y",
        "metrics.num.samples": "2",
        "metrics.recording.level": "INFO",
        "default.api.timeout.ms": "60000",
        "sasl.login.refresh.window.factor": "0.8",
        "sasl.login.callback.handler.class": "x.Y",
        "ssl.protocol": "TLSv1.3",
        "ssl.enabled.protocols": "TLSv1.2,TLSv1.3",
        "ssl.keystore.type": "PKCS12",
        "ssl.truststore.type": "JKS",
        "ssl.truststore.password": "pw",
        "security.providers": "x.Y",
        "client.dns.lookup": "default",
    }
    assert ClientSettings(properties=java_only).to_librdkafka() == {}


@pytest.mark.parametrize("module", ["plain.PlainLoginModule", "scram.ScramLoginModule"])
def test_librdkafka_jaas_username_password(module: str) -> None:
    jaas = f'org.apache.kafka.common.security.{module} required username="alice" password="p\\"w;d";'
    out = librdkafka(sasl_jaas_config=jaas, sasl_mechanism="SCRAM-SHA-256")
    assert out == {"sasl.mechanism": "SCRAM-SHA-256", "sasl.username": "alice", "sasl.password": 'p"w;d'}


def test_librdkafka_jaas_unquoted_and_explicit_keys_win() -> None:
    jaas = "org.apache.kafka.common.security.plain.PlainLoginModule required username=bob password=x ;"
    assert librdkafka(sasl_jaas_config=jaas) == {"sasl.username": "bob", "sasl.password": "x"}
    props = {"sasl.jaas.config": jaas, "sasl.username": "native"}
    assert ClientSettings(properties=props).to_librdkafka()["sasl.username"] == "native"


def test_librdkafka_jaas_oauth_and_kerberos() -> None:
    oauth = f'{OAUTH} required clientId="c" clientSecret="s" scope="sc";'
    out = ClientSettings(
        properties={"sasl.jaas.config": oauth, "sasl.oauthbearer.token.endpoint.url": "https://idp/token"}
    ).to_librdkafka()
    assert out == {
        "sasl.oauthbearer.token.endpoint.url": "https://idp/token",
        "sasl.oauthbearer.method": "oidc",
        "sasl.oauthbearer.client.id": "c",
        "sasl.oauthbearer.client.secret": "s",
        "sasl.oauthbearer.scope": "sc",
    }
    unsecured = f'{OAUTH} required unsecuredLoginStringClaim_sub="me";'
    assert librdkafka(sasl_jaas_config=unsecured) == {
        "enable.sasl.oauthbearer.unsecure.jwt": "true",
        "sasl.oauthbearer.config": "principal=me",
    }
    krb = 'com.sun.security.auth.module.Krb5LoginModule required keyTab="/k.kt" principal="p@EX";'
    assert librdkafka(sasl_jaas_config=krb) == {
        "sasl.kerberos.keytab": "/k.kt",
        "sasl.kerberos.principal": "p@EX",
    }


def test_librdkafka_jaas_errors() -> None:
    with pytest.raises(ConfigError, match="login module CustomModule has no librdkafka equivalent"):
        librdkafka(sasl_jaas_config="com.example.CustomModule required;")
    with pytest.raises(ConfigError, match="needs username"):
        librdkafka(sasl_jaas_config=f'{PLAIN} required password="pw-9";')
    with pytest.raises(ConfigError, match="cannot be parsed"):  # missing ';'
        librdkafka(sasl_jaas_config=f'{PLAIN} required username="u"')


PEM = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"


def test_librdkafka_truststore(tmp_path: Path) -> None:
    pem = tmp_path / "ca.pem"
    pem.write_text(PEM)
    out = ClientSettings(properties={"ssl.truststore.location": str(pem), "ssl.truststore.type": "PEM"}).to_librdkafka()
    assert out == {"ssl.ca.location": str(pem)}
    jks = tmp_path / "truststore.jks"
    jks.write_bytes(b"\xfe\xed\xfe\xed\x00\x00\x00\x02")
    with pytest.raises(
        ConfigError,
        match=r"'.*truststore.jks' is a JKS trust store, but librdkafka needs PEM.*ssl.ca.location",
    ):
        ClientSettings(
            properties={"ssl.truststore.location": str(jks), "ssl.truststore.password": "pw"}
        ).to_librdkafka()
    # a librdkafka-native CA location wins over the Java trust store (which then is not even read)
    props = {"ssl.truststore.location": str(jks), "ssl.ca.location": str(pem)}
    assert ClientSettings(properties=props).to_librdkafka() == {"ssl.ca.location": str(pem)}
    with pytest.raises(ConfigError, match="cannot be read"):
        ClientSettings(properties={"ssl.truststore.location": str(tmp_path / "none.pem")}).to_librdkafka()


def test_librdkafka_keystore(tmp_path: Path) -> None:
    p12 = tmp_path / "client.p12"
    p12.write_bytes(b"\x30\x82\x0a\x00")
    out = ClientSettings(
        properties={
            "ssl.keystore.location": str(p12),
            "ssl.keystore.password": "pw",
            "ssl.key.password": "kpw",
        }
    ).to_librdkafka()
    assert out == {
        "ssl.keystore.location": str(p12),
        "ssl.keystore.password": "pw",
        "ssl.key.password": "kpw",
    }
    pem = tmp_path / "client.pem"
    pem.write_text(PEM)
    out = ClientSettings(properties={"ssl.keystore.location": str(pem), "ssl.keystore.type": "PEM"}).to_librdkafka()
    assert out == {"ssl.certificate.location": str(pem), "ssl.key.location": str(pem)}
    jks = tmp_path / "client.jks"
    jks.write_bytes(b"\xfe\xed\xfe\xed\x00\x00\x00\x02")
    with pytest.raises(ConfigError, match=r"JKS format.*librdkafka cannot read.*PKCS#12"):
        ClientSettings(properties={"ssl.keystore.location": str(jks), "ssl.keystore.password": "pw"}).to_librdkafka()
    inline = ClientSettings(
        properties={
            "ssl.keystore.key": "KEY",
            "ssl.keystore.certificate.chain": "CERT",
            "ssl.truststore.certificates": "CA",
        }
    ).to_librdkafka()
    assert inline == {"ssl.key.pem": "KEY", "ssl.certificate.pem": "CERT", "ssl.ca.pem": "CA"}


def test_librdkafka_accepts_every_translated_key() -> None:
    """confluent-kafka builds clients from the translated config (no bootstrap servers: no network)."""
    ck = pytest.importorskip("confluent_kafka")
    admin = pytest.importorskip("confluent_kafka.admin")
    jaas = 'org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="p";'
    java = {
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "PLAIN",
        "sasl.jaas.config": jaas,
        "client.id": "test",
        "client.rack": "r1",
        "isolation.level": "read_committed",
        "linger.ms": "5",
        "batch.size": "16384",
        "compression.type": "zstd",
        "compression.zstd.level": "3",
        "acks": "all",
        "enable.idempotence": "true",
        "max.in.flight.requests.per.connection": "5",
        "fetch.min.bytes": "1",
        "fetch.max.bytes": "209715200",
        "fetch.max.wait.ms": "500",
        "max.partition.fetch.bytes": "1048576",
        "request.timeout.ms": "30000",
        "retries": "3",
        "retry.backoff.ms": "100",
        "max.request.size": "1048576",
        "connections.max.idle.ms": "540000",
        "reconnect.backoff.ms": "50",
        "reconnect.backoff.max.ms": "1000",
        "receive.buffer.bytes": "-1",
        "send.buffer.bytes": "131072",
        "buffer.memory": "33554432",
        "delivery.timeout.ms": "120000",
        "ssl.endpoint.identification.algorithm": "",
        "auto.offset.reset": "earliest",
        "enable.auto.commit": "false",
        "client.dns.lookup": "use_all_dns_ips",
        "metadata.max.age.ms": "300000",
        "session.timeout.ms": "45000",
        "max.poll.interval.ms": "300000",
        **{k: "x.Y" for k in ("key.serializer", "value.deserializer", "interceptor.classes", "partitioner.class")},
        "max.poll.records": "500",
        "max.block.ms": "60000",
        "default.api.timeout.ms": "60000",
        "metrics.num.samples": "2",
        "sasl.login.refresh.buffer.seconds": "300",
        "ssl.protocol": "TLSv1.3",
    }
    conf = ClientSettings(properties=java).to_librdkafka()
    ck.Producer(conf).flush(0)
    consumer = ck.Consumer({**conf, "group.id": "g"})
    consumer.close()
    admin.AdminClient(conf)


def test_spark_options() -> None:
    f = two("A.consumer.isolation.level = read_committed\nA.consumer.interceptor.classes = x.Y\n").flow("A", "B")
    assert f.source_consumer.to_spark_options() == {
        "kafka.bootstrap.servers": "a:9092",
        "kafka.isolation.level": "read_committed",
    }
    s = ClientSettings(
        properties={
            "bootstrap.servers": "b:9092",
            "sasl.jaas.config": "j",
            "key.deserializer": "x",
            "value.deserializer": "x",
            "auto.offset.reset": "latest",
            "enable.auto.commit": "true",
            "max.partition.fetch.bytes": "1",
        }
    )
    assert s.to_spark_options() == {
        "kafka.bootstrap.servers": "b:9092",
        "kafka.sasl.jaas.config": "j",
        "kafka.max.partition.fetch.bytes": "1",
    }


def test_offset_flush_records_is_read_per_flow_with_a_top_level_default() -> None:
    """``mirrorspark.offset.flush.records``: 1,000 by default, top level for every flow, ``S->T.`` over it."""
    base = {"clusters": "A, B", "A.bootstrap.servers": "a:9092", "B.bootstrap.servers": "b:9092"}
    flows = {"A->B.enabled": "true", "B->A.enabled": "true"}
    assert parse_config({**base, **flows}).flow("A", "B").offset_flush_records == 1000
    c = parse_config(
        {**base, **flows, "mirrorspark.offset.flush.records": "0", "A->B.mirrorspark.offset.flush.records": "2000"}
    )
    assert (c.flow("A", "B").offset_flush_records, c.flow("B", "A").offset_flush_records) == (2000, 0)
    with pytest.raises(ConfigError, match=r"mirrorspark\.offset\.flush\.records"):
        parse_config({**base, **flows, "mirrorspark.offset.flush.records": "-1"})


def test_commits_followed_without_checkpoints_is_an_error_naming_both_keys() -> None:
    with pytest.raises(ConfigError, match=r"'A->B.emit.checkpoints.on.commit' = true.*'emit.checkpoints.enabled'"):
        two("A->B.emit.checkpoints.on.commit = true\nemit.checkpoints.enabled = false\n")
    assert two("emit.checkpoints.on.commit = true\n").flow("A", "B").emit_checkpoints_on_commit
    assert not two("").flow("A", "B").emit_checkpoints_on_commit  # MM2's timing by default
