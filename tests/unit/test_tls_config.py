"""TLS and SCRAM client settings: Java key/trust stores as MM2 users have them, and the local clusters' configs.

Every store here is generated with ``cryptography`` (JKS only as its magic bytes, which suffice for the
refusal); nothing connects to a broker.
"""

from __future__ import annotations

import datetime
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import pkcs12
from cryptography.x509.oid import NameOID

from mirrorspark.config.model import ClientSettings
from mirrorspark.errors import ConfigError
from mirrorspark.kafka.local.model import LocalBroker, LocalCluster, LocalClusters
from mirrorspark.kafka.local.settings import SECURITY_PROTOCOLS

pytestmark = pytest.mark.unit


def _self_signed(name: str) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
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
    return key, cert


def _pem(cert: x509.Certificate) -> str:
    return cert.public_bytes(serialization.Encoding.PEM).decode("ascii")


def _translate(**props: str) -> dict[str, str]:
    return ClientSettings(properties={k.replace("_", "."): v for k, v in props.items()}).to_librdkafka()


def test_pkcs12_truststore_is_passed_inline_as_pem(tmp_path: Path) -> None:
    _, ca1 = _self_signed("ca-one")
    _, ca2 = _self_signed("ca-two")
    store = tmp_path / "truststore.p12"
    store.write_bytes(
        pkcs12.serialize_key_and_certificates(
            None, None, None, [ca1, ca2], serialization.BestAvailableEncryption(b"store-pw")
        )
    )
    out = _translate(
        ssl_truststore_location=str(store), ssl_truststore_type="PKCS12", ssl_truststore_password="store-pw"
    )
    assert set(out) == {"ssl.ca.pem"}
    assert _pem(ca1) in out["ssl.ca.pem"] and _pem(ca2) in out["ssl.ca.pem"]
    # Java reads a PKCS#12 file named as the default type JKS too: so does the translation
    assert _translate(ssl_truststore_location=str(store), ssl_truststore_password="store-pw") == out


def test_pkcs12_truststore_with_a_wrong_password_names_the_openssl_command(tmp_path: Path) -> None:
    _, ca = _self_signed("ca")
    store = tmp_path / "truststore.p12"
    store.write_bytes(
        pkcs12.serialize_key_and_certificates(None, None, None, [ca], serialization.BestAvailableEncryption(b"pw"))
    )
    with pytest.raises(ConfigError) as info:
        _translate(
            ssl_truststore_location=str(store), ssl_truststore_type="PKCS12", ssl_truststore_password="wrong-pw-7"
        )
    message = str(info.value)
    assert "is a PKCS12 trust store that cannot be opened" in message
    assert f"openssl pkcs12 -in {store} -nokeys -out ca.pem" in message
    assert "wrong-pw-7" not in message  # the password is never echoed


@pytest.mark.parametrize(("magic", "kind"), [(b"\xfe\xed\xfe\xed", "JKS"), (b"\xce\xce\xce\xce", "JCEKS")])
def test_jks_truststore_is_refused_with_the_conversion_commands(tmp_path: Path, magic: bytes, kind: str) -> None:
    store = tmp_path / "truststore.jks"
    store.write_bytes(magic + b"\x00\x00\x00\x02")
    with pytest.raises(ConfigError) as info:
        _translate(ssl_truststore_location=str(store), ssl_truststore_password="secret-pw")
    message = str(info.value)
    assert f"is a {kind} trust store, but librdkafka needs PEM" in message
    assert f"keytool -importkeystore -srckeystore {store} -destkeystore truststore.p12 -deststoretype PKCS12" in message
    assert "openssl pkcs12 -in truststore.p12 -nokeys -out ca.pem" in message
    assert "secret-pw" not in message


def test_pkcs12_keystore_is_native_and_jks_keystore_is_refused(tmp_path: Path) -> None:
    key, cert = _self_signed("client")
    p12 = tmp_path / "keystore.p12"
    p12.write_bytes(
        pkcs12.serialize_key_and_certificates(b"client", key, cert, None, serialization.BestAvailableEncryption(b"k"))
    )
    out = _translate(ssl_keystore_location=str(p12), ssl_keystore_type="PKCS12", ssl_keystore_password="k")
    assert out == {"ssl.keystore.location": str(p12), "ssl.keystore.password": "k"}
    jks = tmp_path / "keystore.jks"
    jks.write_bytes(b"\xfe\xed\xfe\xed\x00\x00\x00\x02")
    with pytest.raises(ConfigError) as info:
        _translate(ssl_keystore_location=str(jks), ssl_keystore_password="secret-pw")
    message = str(info.value)
    assert "(JKS format)" in message and "librdkafka cannot read" in message
    assert f"keytool -importkeystore -srckeystore {jks} -destkeystore keystore.p12 -deststoretype PKCS12" in message
    assert "secret-pw" not in message


def test_pem_keystore_file_needs_no_type(tmp_path: Path) -> None:
    key, cert = _self_signed("client")
    pem = tmp_path / "client.pem"
    key_pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode("ascii")
    pem.write_text(key_pem + _pem(cert))
    assert _translate(ssl_keystore_location=str(pem)) == {
        "ssl.certificate.location": str(pem),
        "ssl.key.location": str(pem),
    }


def _cluster(security: str, tmp_path: Path) -> LocalCluster:
    broker = LocalBroker(node_id=0, port=9093, controller_port=9094, rack=None, pid=0, log_path=tmp_path / "k.log")
    sasl = security in ("sasl_plain", "sasl_ssl")
    return LocalCluster(
        alias="a",
        bootstrap_servers=broker.address,
        data_dir=tmp_path,
        brokers=(broker,),
        security=security,  # type: ignore[arg-type]
        sasl_users={"admin": "admin-pw", "alice": "alice-pw"} if sasl else {},
        ca_location=tmp_path / "ca.pem" if security in ("ssl", "sasl_ssl") else None,
    )


@pytest.mark.parametrize("security", SECURITY_PROTOCOLS)
def test_local_java_properties_translate_to_the_local_librdkafka_config(security: str, tmp_path: Path) -> None:
    (tmp_path / "ca.pem").write_text(_pem(_self_signed("ca")[1]))
    cluster = _cluster(security, tmp_path)
    for user in (None, "alice") if cluster.sasl_users else (None,):
        java = cluster.java_client_properties(user)
        assert ClientSettings(properties=java).to_librdkafka() == cluster.client_config(user)


def test_local_sasl_ssl_properties_are_the_java_form_mm2_users_have(tmp_path: Path) -> None:
    cluster = _cluster("sasl_ssl", tmp_path)
    clusters = LocalClusters(base_dir=tmp_path, clusters={"a": cluster, "b": _cluster("sasl_ssl", tmp_path)})
    text = clusters.mm2_properties()
    ca = tmp_path / "ca.pem"
    for line in (
        "a.security.protocol = SASL_SSL",
        "a.sasl.mechanism = SCRAM-SHA-512",
        "a.ssl.truststore.type = PEM",
        f"a.ssl.truststore.location = {ca}",
        'a.sasl.jaas.config = org.apache.kafka.common.security.scram.ScramLoginModule required username="admin"'
        ' password="admin-pw";',
        "a->b.enabled = true",
    ):
        assert line in text.splitlines()
    assert "admin-pw" not in repr(cluster) and "admin-pw" not in repr(clusters)
