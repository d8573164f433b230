"""Text of converted configs: mm2.properties, Strimzi ``KafkaConnector`` YAML documents, Connect REST JSON."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

import yaml

from mirrorspark.config.connect.model import CONNECTOR_CLASSES, Connector
from mirrorspark.config.connect.to_properties import ConvertedProperties
from mirrorspark.config.properties import escape_properties

_K8S_NAME_BAD = re.compile(r"[^a-z0-9.-]+")


def render_properties(converted: ConvertedProperties, *, source: str) -> str:
    """Write converted connector configs as mm2.properties text, each flow under a comment naming its connectors."""
    lines = [f"# mm2.properties converted by 'mirrorspark config convert' from {source}"]
    seen: set[str] = set()
    for key, value in converted.props.items():
        flow = key.partition(".")[0]
        if "->" in flow and flow not in seen:
            seen.add(flow)
            s, _, t = flow.partition("->")
            names = ", ".join(f"{c.name} ({kind})" for kind, c in converted.flows.get((s, t), {}).items())
            lines += ["", f"# replication flow {flow}: {names or 'no connector'}"]
        lines.append(f"{escape_properties(key, key=True)} = {escape_properties(value, key=False)}")
    return "\n".join(lines) + "\n"


def kubernetes_name(name: str) -> str:
    """``name`` made a valid Kubernetes resource name (lowercase letters, digits, ``-`` and ``.``)."""
    return _K8S_NAME_BAD.sub("-", name.lower()).strip("-.") or "connector"


def render_kafka_connectors(
    connectors: Sequence[Connector], *, connect_cluster: str | None, dropped: Sequence[str]
) -> str:
    """Write connectors as Strimzi ``KafkaConnector`` documents (``kafka.strimzi.io/v1beta2``), ``---`` separated."""
    docs = []
    for c in connectors:
        config = dict(c.config)
        tasks = config.pop("tasks.max", None)
        spec: dict[str, Any] = {"class": CONNECTOR_CLASSES[c.kind]}
        if tasks is not None:
            spec["tasksMax"] = int(tasks) if tasks.strip().isdigit() else tasks
        spec["config"] = config
        label = kubernetes_name(connect_cluster or c.target)
        docs.append(
            {
                "apiVersion": "kafka.strimzi.io/v1beta2",
                "kind": "KafkaConnector",
                "metadata": {"name": kubernetes_name(c.name), "labels": {"strimzi.io/cluster": label}},
                "spec": spec,
            }
        )
    text = yaml.safe_dump_all(docs, sort_keys=False, default_flow_style=False)
    return _dropped_comment(dropped) + text


def render_rest(connectors: Sequence[Connector]) -> str:
    """Write connectors as Kafka Connect REST JSON: a list of ``{"name": ..., "config": {...}}`` bodies."""
    bodies = [
        {"name": c.name, "config": {"connector.class": CONNECTOR_CLASSES[c.kind], "name": c.name, **c.config}}
        for c in connectors
    ]
    return json.dumps(bodies, indent=2) + "\n"


def _dropped_comment(dropped: Sequence[str]) -> str:
    if not dropped:
        return ""
    return (
        "# Not carried by any connector (Connect worker settings: set them on the Connect worker; "
        "mirrorspark's own top-level keys):\n" + "".join(f"#   {k}\n" for k in dropped)
    )


__all__ = ["kubernetes_name", "render_kafka_connectors", "render_properties", "render_rest"]
