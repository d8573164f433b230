"""Constants of the local clusters: ports, JVM flags, reserved broker properties."""

from __future__ import annotations

import re
import subprocess
import threading
from collections.abc import Mapping
from typing import Final, Literal

SecurityProtocol = Literal["plaintext", "sasl_plain", "ssl", "sasl_ssl"]
"""How clients reach the brokers: Kafka's ``security.protocol`` in lower case (``"sasl_plain"``: SASL_PLAINTEXT)."""

SECURITY_PROTOCOLS: Final[tuple[str, ...]] = ("plaintext", "sasl_plain", "ssl", "sasl_ssl")
"""Every :data:`SecurityProtocol`, in the order the CLI lists them."""

SASL_SECURITY: Final = frozenset({"sasl_plain", "sasl_ssl"})
"""The protocols with SASL users (and an authorizer)."""

TLS_SECURITY: Final = frozenset({"ssl", "sasl_ssl"})
"""The protocols whose client listener speaks TLS."""

KAFKA_PROTOCOL: Final = {
    "plaintext": "PLAINTEXT",
    "sasl_plain": "SASL_PLAINTEXT",
    "ssl": "SSL",
    "sasl_ssl": "SASL_SSL",
}
"""Kafka's ``security.protocol`` (and listener name) of each :data:`SecurityProtocol`."""

SASL_MECHANISM: Final = {"sasl_plain": "PLAIN", "sasl_ssl": "SCRAM-SHA-512"}
"""The SASL mechanism of each SASL :data:`SecurityProtocol`."""

TLS_DIR: Final = "tls"
"""Directory under the base directory holding the generated CA certificate (``ca.pem``)."""

CA_FILE: Final = "ca.pem"

STATE_FILE: Final = "clusters.json"
"""Name of the state file written into the base directory of one ``up``."""

STATE_VERSION: Final = 1
REGISTRY_DIR: Final = "schema-registry"
"""Directory under the base directory holding the Schema Registries' logs."""
LOCK_FILE: Final = ".lock"
LOG4J_FILE: Final = "log4j2.properties"
HOST: Final = "127.0.0.1"
CCOMPAT_PATH: Final = "/apis/ccompat/v7"
"""Where Apicurio Registry serves Confluent's Schema Registry API (the local registries' ``schema.registry.url``)."""
ALIAS_RE: Final = re.compile(r"[A-Za-z0-9_-]+")
SASL_NAME_RE: Final = re.compile(r"[A-Za-z0-9_.-]+")
MAX_BROKERS: Final = 3
LOG_TAIL_LINES: Final = 30
PORT_ATTEMPTS: Final = 3
POLL_INTERVAL_S: Final = 0.05
ADMIN_USER: Final = "admin"
DEFAULT_ADMIN_PASSWORD: Final = "admin-secret"

# Properties the launcher owns: overriding them through extra_broker_props would break
# the bookkeeping of ports, roles and directories.
RESERVED_PROPS: Final = frozenset(
    {
        "advertised.listeners",
        "broker.rack",
        "controller.listener.names",
        "controller.quorum.bootstrap.servers",
        "controller.quorum.voters",
        "listeners",
        "log.dir",
        "log.dirs",
        "node.id",
        "process.roles",
    }
)

WAN_LISTENER: Final = "WAN"
"""The name of the brokers' second listener, advertised at a latency proxy's port (``start_clusters(wan=True)``)."""

RACK_AWARE_SELECTOR: Final = "org.apache.kafka.common.replica.RackAwareReplicaSelector"
"""``replica.selector.class`` of follower fetching (KIP-392): a consumer reads from a replica in its ``client.rack``."""

# Topic-creation defaults that KRaft reads on the controller only.
CONTROLLER_ONLY_PROPS: Final = ("default.replication.factor", "num.partitions")

BROKER_HEAP_FLAGS: Final = ("-Xms128m", "-Xmx512m")
"""The brokers' heap (Kafka's start script gives 1 GiB); ``KAFKA_HEAP_OPTS`` replaces it, as in kafka-run-class.sh."""
JVM_PERFORMANCE_FLAGS: Final = (
    "-XX:+UseG1GC",
    "-XX:MaxGCPauseMillis=20",
    "-XX:InitiatingHeapOccupancyPercent=35",
    "-XX:+ExplicitGCInvokesConcurrent",
    "-XX:MaxInlineLevel=15",
)
"""Kafka's start script's ``KAFKA_JVM_PERFORMANCE_OPTS``; the variable replaces them, as in kafka-run-class.sh."""
HEAP_OPTS_ENV: Final = "KAFKA_HEAP_OPTS"
PERFORMANCE_OPTS_ENV: Final = "KAFKA_JVM_PERFORMANCE_OPTS"
ALWAYS_JVM_FLAGS: Final = ("-XX:+ExitOnOutOfMemoryError", "-Djava.awt.headless=true")


def jvm_flags(environ: Mapping[str, str], *, heap: tuple[str, ...] | None = BROKER_HEAP_FLAGS) -> tuple[str, ...]:
    """Return a local Kafka JVM's flags: heap (``None``: the caller's own), performance flags, then the fixed ones.

    ``KAFKA_HEAP_OPTS`` and ``KAFKA_JVM_PERFORMANCE_OPTS`` replace the defaults when set and not blank, split on
    whitespace, as Kafka's own start scripts read them (the tests set C1 and the serial collector there).
    """
    performance = tuple(environ.get(PERFORMANCE_OPTS_ENV, "").split()) or JVM_PERFORMANCE_FLAGS
    if heap is not None:
        heap = tuple(environ.get(HEAP_OPTS_ENV, "").split()) or heap
    return (*(heap or ()), *performance, *ALWAYS_JVM_FLAGS)


# StorageTool lives for under a second: C1 only and a small heap start it fastest.
TOOL_JVM_FLAGS: Final = ("-Xmx256m", "-XX:TieredStopAtLevel=1", "-Djava.awt.headless=true")
# Silence CDS warnings (e.g. "shared class paths mismatch" after the jars changed).
CDS_QUIET: Final = ("-Xlog:cds=off", "-Xlog:cds+dynamic=off")
CDS_DUMP_FILE: Final = "cds-dump.jsa"
CDS_TARGET_FILE: Final = "cds-dump.target"

LOG4J2_PROPERTIES: Final = """\
# Written by mirrorspark.kafka.local: broker logs at WARN, plus the start-up line.
status = warn
name = mirrorspark-local
appender.console.type = Console
appender.console.name = STDOUT
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = WARN
rootLogger.appenderRef.stdout.ref = STDOUT
logger.raftserver.name = kafka.server.KafkaRaftServer
logger.raftserver.level = INFO
"""

# Popen handles of the brokers this process started, so that it can reap them.
CHILDREN: dict[int, subprocess.Popen[bytes]] = {}
CHILDREN_LOCK = threading.Lock()


__all__ = ["RACK_AWARE_SELECTOR", "SECURITY_PROTOCOLS", "STATE_FILE", "SecurityProtocol"]
