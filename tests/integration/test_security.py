"""Replication over TLS and SASL/SCRAM-SHA-512 over TLS, end to end.

The record-parity, checkpoint (failover) and live-control scenarios of the plaintext tests run again
against a pair of ``ssl`` and a pair of ``sasl_ssl`` local clusters (the ``secure_clusters`` session
fixture, started only when these tests run, one pair at a time). Every client reaches the brokers
through the mm2.properties that ``LocalClusters.mm2_properties`` writes, i.e. the Java form an MM2 user
has (``ssl.truststore.type=PEM``, a ``ScramLoginModule`` ``sasl.jaas.config``), translated for
librdkafka by mirrorspark.
"""

from __future__ import annotations

import datetime
import subprocess
import sys
from pathlib import Path

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import pkcs12
from cryptography.x509.oid import NameOID
from helpers import consume_all, create_topic, produce, unique_name
from pyspark.sql import SparkSession
from test_checkpoints import failover_scenario
from test_control import Setup, deny_list_scenario
from test_replication import record_parity_scenario

from mirrorspark.config.model import ClientSettings
from mirrorspark.config.parse import parse_config
from mirrorspark.config.properties import parse_properties
from mirrorspark.kafka.local.clusters import load_clusters, stop_clusters
from mirrorspark.kafka.local.model import LocalClusters
from mirrorspark.replication.driver import Replicator

pytestmark = [pytest.mark.integration, pytest.mark.spark]

SECURE = pytest.mark.parametrize("secure_clusters", ["ssl", "sasl_ssl"], indirect=True)


@SECURE
def test_record_parity(secure_clusters: LocalClusters, spark: SparkSession) -> None:
    record_parity_scenario(secure_clusters, spark)


@SECURE
def test_failover_checkpoints(secure_clusters: LocalClusters, spark: SparkSession) -> None:
    failover_scenario(secure_clusters, spark)


@SECURE
def test_control_deny_list(secure_clusters: LocalClusters, spark: SparkSession, tmp_path: Path) -> None:
    made: list[Setup] = []
    try:
        deny_list_scenario(secure_clusters, spark, tmp_path, made)
    finally:
        for s in made:
            s.undo()


def _self_signed_ca(name: str) -> x509.Certificate:
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.UTC)
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )


@pytest.mark.parametrize("secure_clusters", ["ssl"], indirect=True)
def test_pkcs12_truststore_as_mm2_users_have_it(secure_clusters: LocalClusters, tmp_path: Path) -> None:
    """A PKCS#12 trust store (an unrelated CA first, then the real one) connects through the translation."""
    cluster = secure_clusters.cluster("primary")
    assert cluster.ca_location is not None
    real_ca = x509.load_pem_x509_certificate(cluster.ca_location.read_bytes())
    store = tmp_path / "truststore.p12"
    store.write_bytes(
        pkcs12.serialize_key_and_certificates(
            None, None, None, [_self_signed_ca("other"), real_ca], serialization.BestAvailableEncryption(b"store-pw")
        )
    )
    java = {
        "bootstrap.servers": cluster.bootstrap_servers,
        "security.protocol": "SSL",
        "ssl.truststore.location": str(store),
        "ssl.truststore.type": "PKCS12",
        "ssl.truststore.password": "store-pw",
    }
    config = ClientSettings(properties=java).to_librdkafka()
    assert set(config) == {"bootstrap.servers", "security.protocol", "ssl.ca.pem"}
    metadata = AdminClient({**config, "log_level": 0}).list_topics(timeout=20)
    assert len(metadata.brokers) == 1


@pytest.mark.parametrize("secure_clusters", ["sasl_ssl"], indirect=True)
def test_sasl_ssl_keeps_secrets_off_command_lines_and_out_of_readable_files(secure_clusters: LocalClusters) -> None:
    """SCRAM users exist (alice authenticates); keys and passwords are in 0600 files, never in a process's argv."""
    primary = secure_clusters.cluster("primary")
    topic = unique_name("scram")
    create_topic(primary.client_config(), topic)  # as admin
    # alice authenticates with SCRAM, and is then refused by the authorizer (no ACL): not an authentication error
    with pytest.raises(KafkaException) as info:
        produce(primary.client_config("alice"), topic, [{"value": b"x"}], timeout_s=20)
    assert info.value.args[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    for broker in primary.brokers:
        cmdline = Path(f"/proc/{broker.pid}/cmdline").read_bytes()
        assert b"admin-secret" not in cmdline and b"alice-secret" not in cmdline and b"PRIVATE KEY" not in cmdline
        assert broker.properties_path.stat().st_mode & 0o077 == 0
        assert not (broker.node_dir / "format.args").exists()
    assert "admin-secret" not in repr(secure_clusters)


def test_local_up_sasl_ssl_prints_properties_a_replicator_uses(tmp_path: Path, spark: SparkSession) -> None:
    """``mirrorspark local up --security sasl_ssl`` prints an mm2.properties the Replicator runs with as it is."""
    d = tmp_path / "local"
    up = subprocess.run(
        [sys.executable, "-m", "mirrorspark", "local", "up", "--security", "sasl_ssl", "--dir", str(d)],
        capture_output=True,
        text=True,
        timeout=180,
    )
    try:
        assert up.returncode == 0, up.stderr
        printed = up.stdout[up.stdout.index("\n# ") :]
        text = printed[printed.index("\n", 1) + 1 :]  # the properties, after the "# <file> (stop with ...)" line
        assert text == (d / "mm2.properties").read_text()
        assert (d / "mm2.properties").stat().st_mode & 0o077 == 0
        for line in (
            "primary.security.protocol = SASL_SSL",
            "primary.sasl.mechanism = SCRAM-SHA-512",
            "primary.ssl.truststore.type = PEM",
            "backup.sasl.jaas.config = org.apache.kafka.common.security.scram.ScramLoginModule required",
        ):
            assert any(ln.startswith(line) for ln in text.splitlines()), line
        assert "admin-secret" not in text  # a random password, not the well-known default
        source = load_clusters(d).cluster("primary").client_config()
        topic = unique_name("cli-scram")
        create_topic(source, topic, partitions=2)
        produce(source, topic, [{"value": f"v{i}".encode(), "partition": i % 2} for i in range(50)])
        cfg = parse_config(parse_properties(text + f"topics = {topic}\n"))
        Replicator(cfg, spark).run(until_caught_up=True)
        target = load_clusters(d).cluster("backup").client_config()
        assert sorted(r["value"] for r in consume_all(target, f"primary.{topic}")) == sorted(
            f"v{i}".encode() for i in range(50)
        )
    finally:
        stop_clusters(d)
