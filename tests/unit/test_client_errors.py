"""Bad input gets a clear error: librdkafka's rejections and admin timeouts become the error tree's errors."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from mirrorspark.cli.app import app
from mirrorspark.client.context import FlowContext
from mirrorspark.config.model import ClientSettings
from mirrorspark.config.parse import parse_config
from mirrorspark.config.properties import parse_properties
from mirrorspark.errors import ConfigError
from mirrorspark.kafka.factory import KafkaClients

pytestmark = pytest.mark.unit

BASE = "clusters = A, B\nA.bootstrap.servers = 127.0.0.1:1\nB.bootstrap.servers = 127.0.0.1:2\nA->B.enabled = true\n"


def test_an_invalid_value_names_the_property_as_written_and_the_client() -> None:
    settings = ClientSettings(properties={"bootstrap.servers": "127.0.0.1:1", "linger.ms": "soon"})
    with pytest.raises(ConfigError) as e:
        KafkaClients().producer(settings, client_id="A->B|mirrorspark|offsets-target-producer")
    message = str(e.value)
    assert "'linger.ms' = 'soon'" in message and "A->B|mirrorspark|offsets-target-producer" in message
    assert "queue.buffering.max.ms" in message  # librdkafka's own words are kept


def test_a_flow_names_the_cluster_alias_and_the_keys_to_fix() -> None:
    # an unknown client property reaches librdkafka only in lenient mode (strict parsing refuses it)
    cfg = parse_config(parse_properties(BASE + "A.admin.bogus.setting = 1\n"), lenient=True)
    ctx = FlowContext.build(cfg, cfg.flow("A", "B"), clients=KafkaClients())
    with pytest.raises(ConfigError) as e:
        ctx.admin("source", "replication-source-admin")
    message = str(e.value)
    assert message.startswith("flow A->B, cluster 'A' (source): invalid admin client property 'bogus.setting'")
    assert "'A.admin.bogus.setting'" in message and "'A->B.source.admin.bogus.setting'" in message
    assert "<alias>" not in message


def test_a_rejected_value_names_its_property_not_the_value() -> None:
    settings = ClientSettings(properties={"bootstrap.servers": "127.0.0.1:1", "security.protocol": "SSLL"})
    with pytest.raises(ConfigError) as e:
        KafkaClients().admin(settings, client_id="c")
    message = str(e.value)
    assert "invalid admin client property 'security.protocol' = 'SSLL'" in message
    assert ".security.protocol'" in message and ".SSLL'" not in message


def test_a_rejected_secret_property_keeps_its_value_hidden() -> None:
    settings = ClientSettings(properties={"bootstrap.servers": "127.0.0.1:1", "bogus.password": "hunter2-x"})
    with pytest.raises(ConfigError) as e:
        KafkaClients().consumer(settings, client_id="c")
    assert "bogus.password" in str(e.value) and "hunter2-x" not in str(e.value)


@pytest.mark.parametrize("command", ["run", "status"])
def test_the_cli_reports_a_bad_property_in_one_line(tmp_path: Path, command: str) -> None:
    props = tmp_path / "mm2.properties"
    props.write_text(BASE + "A.admin.linger.ms = soon\n")
    r = CliRunner().invoke(app, [command, str(props)])
    assert r.exit_code == 2, r.output
    assert r.exception is None or isinstance(r.exception, SystemExit)
    assert "Traceback" not in r.output
    [line] = [x for x in r.output.splitlines() if x.strip()]
    assert line.startswith("error [CONFIG_INVALID]: flow A->B, cluster 'A' (source): invalid admin client property")
