"""``mirrorspark config convert``: connector configs to mm2.properties text, and mm2.properties to connectors.

Both directions validate what they convert as :func:`~mirrorspark.config.parse.load_config` does (strict key
checks included), so the text written is what mirrorspark would run.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Final, Literal

from mirrorspark.config.connect.read import read_connect
from mirrorspark.config.connect.render import render_kafka_connectors, render_properties, render_rest
from mirrorspark.config.connect.to_connectors import properties_to_connectors
from mirrorspark.config.connect.to_properties import input_to_properties
from mirrorspark.config.parse import connect_defaults, load_config, read_properties
from mirrorspark.errors import ConfigError

ConvertTarget = Literal["properties", "kafka-connector", "rest"]
"""What ``convert`` writes: mm2.properties text, Strimzi ``KafkaConnector`` YAML, or Kafka Connect REST JSON."""
CONVERT_TARGETS: Final[tuple[ConvertTarget, ...]] = ("properties", "kafka-connector", "rest")


def convert_config(
    path: str | os.PathLike[str],
    *,
    to: ConvertTarget | None = None,
    defaults: str | None = None,
    connect_cluster: str | None = None,
    env: Mapping[str, str] | None = None,
) -> str:
    """Convert connector configs into mm2.properties text, or an mm2.properties file into connectors.

    Raises ConfigError (anything :func:`~mirrorspark.config.parse.load_config` refuses, or an unknown ``to``).
    """
    if to is not None and to not in CONVERT_TARGETS:
        raise ConfigError(f"cannot convert to {to!r}: use one of {', '.join(CONVERT_TARGETS)}")
    env = os.environ if env is None else env
    name = os.fspath(path)
    config = load_config(name, env=env, defaults=defaults)  # validates, warns once
    found = read_connect(Path(name))
    if found is not None:
        converted = input_to_properties(found, defaults=connect_defaults(defaults, env))
        if to in (None, "properties"):
            return render_properties(converted, source=name)
        props = converted.props
    else:
        if to == "properties":
            return Path(name).read_text(encoding="utf-8")
        props = read_properties(name)[0]
    connectors = properties_to_connectors(props, config, file=name)
    if to == "rest":
        return render_rest(connectors.connectors)
    return render_kafka_connectors(connectors.connectors, connect_cluster=connect_cluster, dropped=connectors.dropped)


__all__ = ["CONVERT_TARGETS", "ConvertTarget", "convert_config"]
