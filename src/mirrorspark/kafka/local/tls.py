"""TLS material of the local clusters: a CA and a broker certificate generated at start (``trustme``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from mirrorspark.errors import LocalClusterError
from mirrorspark.kafka.local.settings import CA_FILE, HOST, TLS_DIR
from mirrorspark.kafka.local.state import write_text


@dataclass(frozen=True)
class BrokerTls:
    """The TLS material of one ``up``: shared by every broker of every cluster started together."""

    ca_location: Path
    certificate_chain: str
    private_key: str = field(repr=False)

    def broker_properties(self) -> dict[str, str]:
        """Return the broker's ``ssl.*`` properties: an in-line PEM key store and the CA file as trust store."""
        return {
            "ssl.keystore.type": "PEM",
            "ssl.keystore.certificate.chain": self.certificate_chain,
            "ssl.keystore.key": self.private_key,
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": str(self.ca_location),
            "ssl.client.auth": "none",
        }


def generate_tls(base_dir: Path) -> BrokerTls:
    """Generate a fresh CA and a broker certificate for ``127.0.0.1``/``localhost``; write the CA's certificate.

    Raises LocalClusterError if ``trustme`` (a dependency of mirrorspark) is not installed.
    """
    try:
        import trustme
        from cryptography.hazmat.primitives import serialization
    except ImportError as e:  # pragma: no cover - both are dependencies of the package
        raise LocalClusterError(f"TLS local clusters need the trustme package ({e}): pip install trustme") from None
    ca = trustme.CA(organization_name="mirrorspark local")
    leaf = ca.issue_cert(HOST, "localhost", common_name="mirrorspark-local-broker")
    # trustme writes SEC1 ("EC PRIVATE KEY"); Kafka's PEM key store reads PKCS#8 only.
    key = serialization.load_pem_private_key(leaf.private_key_pem.bytes(), password=None)
    pkcs8 = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode("ascii")
    tls_dir = base_dir / TLS_DIR
    tls_dir.mkdir(parents=True, exist_ok=True)
    ca_location = tls_dir / CA_FILE
    write_text(ca_location, ca.cert_pem.bytes().decode("ascii"), mode=0o644)
    chain = "".join(blob.bytes().decode("ascii") for blob in leaf.cert_chain_pems)
    return BrokerTls(ca_location=ca_location, certificate_chain=chain, private_key=pkcs8)


__all__ = ["BrokerTls", "generate_tls"]
