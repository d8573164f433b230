"""Strict configuration (issue #24 findings 1 and 7): unknown keys refused with file:line and a suggestion."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from mirrorspark.config.parse import load_config, parse_config
from mirrorspark.config.properties import parse_properties
from mirrorspark.errors import ConfigError

BASE = "clusters = a, b\na.bootstrap.servers = a:9092\nb.bootstrap.servers = b:9092\na->b.enabled = true\n"


def write(tmp_path: Path, extra: str) -> Path:
    path = tmp_path / "mm2.properties"
    path.write_text(BASE + extra)
    return path


@pytest.mark.parametrize(
    ("line", "key", "suggestion"),
    [
        ("a->b.topcs = payments", "a->b.topcs", "a->b.topics"),
        ("a.security.protocl = SSL", "a.security.protocl", "a.security.protocol"),
        ("a.bootstrap.server = a:9093", "a.bootstrap.server", "a.bootstrap.servers"),
        ("b.consumer.max.poll.recordz = 5", "b.consumer.max.poll.recordz", "b.consumer.max.poll.records"),
    ],
)
def test_a_typo_is_an_error_naming_file_line_and_suggestion(
    tmp_path: Path, line: str, key: str, suggestion: str
) -> None:
    path = write(tmp_path, "# a comment\n" + line + "\n")
    with pytest.raises(ConfigError) as e:
        load_config(path)
    assert f"{path}:6: unknown key '{key}'; did you mean '{suggestion}'?" in str(e.value)


def test_every_unknown_key_is_in_one_error(tmp_path: Path) -> None:
    path = write(tmp_path, "a->b.topcs = x\na.security.protocl = SSL\nmirrorspark.read.mod = consumer\n")
    with pytest.raises(ConfigError) as e:
        load_config(path)
    message = str(e.value)
    assert "3 unknown keys" in message
    assert [ln.split(": unknown key ")[0] for ln in message.splitlines()[1:]] == [f"{path}:{n}" for n in (5, 6, 7)]
    assert "did you mean 'mirrorspark.read.mode'?" in message


@pytest.mark.parametrize("how", ["key", "argument"])
def test_lenient_mode_warns_once_per_key(tmp_path: Path, how: str, caplog: pytest.LogCaptureFixture) -> None:
    extra = "a->b.topcs = x\nb.consumer.max.poll.recordz = 5\n"
    if how == "key":
        extra += "mirrorspark.config.lenient = true\n"
    with caplog.at_level(logging.WARNING, logger="mirrorspark.config.parse"):
        c = load_config(write(tmp_path, extra), lenient=how == "argument")
    assert c.warnings == (
        "line 5: unknown key 'a->b.topcs'; did you mean 'a->b.topics'? (accepted in lenient mode)",
        "line 6: unknown key 'b.consumer.max.poll.recordz'; did you mean 'b.consumer.max.poll.records'? "
        "(accepted in lenient mode)",
    )
    assert len(caplog.records) == 2
    assert c.flow("a", "b").topics == (".*",)


def test_a_bad_security_protocol_names_the_key_that_holds_it(tmp_path: Path) -> None:
    path = write(tmp_path, "a.security.protocol = SSLL\n")
    with pytest.raises(ConfigError) as e:
        load_config(path)
    assert str(e.value) == (
        f"{path}:5: invalid value 'SSLL' for 'a.security.protocol': expected one of PLAINTEXT, SSL, "
        "SASL_PLAINTEXT, SASL_SSL; fix 'a.security.protocol'"
    )
    for key in ("security.protocol", "b.admin.security.protocol", "a->b.source.consumer.security.protocol"):
        with pytest.raises(ConfigError, match=f"for '{key}'"):
            parse_config(parse_properties(BASE + f"{key} = tls\n"))
    load_config(write(tmp_path, "a.security.protocol = sasl_ssl\n"))  # any case, as Kafka and librdkafka


REAL_MM2 = """
clusters = primary, backup
primary.bootstrap.servers = p1:9092,p2:9092
backup.bootstrap.servers = b1:9092
primary->backup.enabled = true
primary->backup.topics = orders.*, payments
primary->backup.groups = .*
primary->backup.emit.checkpoints.interval.seconds = 5
primary->backup.sync.group.offsets.enabled = true
primary->backup.source.consumer.fetch.min.bytes = 1
primary->backup.producer.override.linger.ms = 5
primary->backup.transforms = drop
primary->backup.transforms.drop.type = org.apache.kafka.connect.transforms.DropHeaders
primary->backup.transforms.drop.headers = secret
replication.factor = 3
refresh.groups.interval.seconds = 10
replication.policy.class = org.apache.kafka.connect.mirror.DefaultReplicationPolicy
replication.policy.separator = .
checkpoints.topic.replication.factor = 3
offset-syncs.topic.replication.factor = 3
offset.storage.replication.factor = 3
config.storage.replication.factor = 3
status.storage.replication.factor = 3
key.converter = org.apache.kafka.connect.converters.ByteArrayConverter
key.converter.schemas.enable = false
value.converter = org.apache.kafka.connect.converters.ByteArrayConverter
header.converter = org.apache.kafka.connect.converters.ByteArrayConverter
config.providers = env
config.providers.env.class = org.apache.kafka.common.config.provider.EnvVarConfigProvider
primary.security.protocol = SASL_SSL
primary.sasl.mechanism = SCRAM-SHA-512
primary.sasl.jaas.config = org.apache.kafka.common.security.scram.ScramLoginModule required username="u" \\
    password="${env:PW}";
primary.ssl.truststore.location = /etc/ca.pem
primary.ssl.endpoint.identification.algorithm = https
primary.consumer.isolation.level = read_committed
primary.consumer.max.poll.records = 500
primary.admin.request.timeout.ms = 30000
backup.producer.compression.type = zstd
backup.producer.queue.buffering.max.ms = 5
backup.exactly.once.source.support = enabled
backup.offset.flush.interval.ms = 10000
backup.group.id = mm2-backup
backup.scheduled.rebalance.max.delay.ms = 0
tasks.max = 4
task.shutdown.graceful.timeout.ms = 10000
dedicated.mode.enable.internal.rest = false
listeners = http://0.0.0.0:8083
listeners.https.ssl.keystore.location = /etc/ks.p12
rest.advertised.host.name = mm2-1
plugin.path = /opt/plugins
topic.creation.default.replication.factor = 3
errors.tolerance = none
metrics.context.env = prod
consumer.auto.offset.reset = earliest
target.producer.acks = all
mirrorspark.metrics.interval.ms = 5000
"""


def test_a_real_world_mm2_config_loads_without_error() -> None:
    c = parse_config(parse_properties(REAL_MM2), env={"PW": "x"})
    assert not [w for w in c.warnings if "unknown key" in w]
