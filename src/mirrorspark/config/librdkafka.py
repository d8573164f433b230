"""Java client properties translated to librdkafka (confluent-kafka) properties."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Final

from mirrorspark.config.values import split_list
from mirrorspark.errors import ConfigError

# --------------------------------------------------------------------------------------
# Java client properties -> librdkafka / Spark
# --------------------------------------------------------------------------------------

SPARK_REJECTED: Final = frozenset(
    {
        "auto.offset.reset",
        "key.deserializer",
        "value.deserializer",
        "enable.auto.commit",
        "interceptor.classes",
    }
)

_LIBRDKAFKA_RENAMES: Final = {
    "receive.buffer.bytes": "socket.receive.buffer.bytes",
    "send.buffer.bytes": "socket.send.buffer.bytes",
    "delivery.timeout.ms": "message.timeout.ms",
    "fetch.max.wait.ms": "fetch.wait.max.ms",
    "max.request.size": "message.max.bytes",
    "ssl.keystore.key": "ssl.key.pem",
    "ssl.keystore.certificate.chain": "ssl.certificate.pem",
    "ssl.truststore.certificates": "ssl.ca.pem",
}
# Java client keys librdkafka has no (compatible) counterpart for: dropped silently.
_JAVA_ONLY_KEYS: Final = frozenset(
    {
        "key.serializer",
        "value.serializer",
        "key.deserializer",
        "value.deserializer",
        "interceptor.classes",
        "partitioner.class",
        "partitioner.adaptive.partitioning.enable",
        "partitioner.availability.timeout.ms",
        "partitioner.ignore.keys",
        "max.poll.records",
        "max.block.ms",
        "metric.reporters",
        "auto.include.jmx.reporter",
        "default.api.timeout.ms",
        "security.providers",
        "socket.connection.setup.timeout.max.ms",
        "metadata.max.idle.ms",
        "exclude.internal.topics",
        "internal.leave.group.on.close",
        "bootstrap.controllers",
        "ssl.protocol",
        "ssl.enabled.protocols",
        "ssl.provider",
        "ssl.cipher.suites",
        "ssl.keymanager.algorithm",
        "ssl.trustmanager.algorithm",
        "ssl.secure.random.implementation",
        "ssl.engine.factory.class",
        "ssl.truststore.password",
        "sasl.client.callback.handler.class",
        "sasl.kerberos.kinit.cmd",
        "sasl.kerberos.ticket.renew.jitter",
        "sasl.kerberos.ticket.renew.window.factor",
        "sasl.oauthbearer.jwks.endpoint.url",
        "sasl.oauthbearer.jwks.endpoint.refresh.ms",
        "sasl.oauthbearer.jwks.endpoint.retry.backoff.ms",
        "sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms",
        "sasl.oauthbearer.expected.audience",
        "sasl.oauthbearer.expected.issuer",
        "sasl.oauthbearer.clock.skew.seconds",
        "sasl.oauthbearer.scope.claim.name",
        "sasl.oauthbearer.header.urlencode",
        "sasl.oauthbearer.jwt.retriever.class",
        "sasl.oauthbearer.jwt.validator.class",
    }
)
_JAVA_ONLY_PREFIXES: Final = ("metrics.", "sasl.login.")
# Handled by dedicated code below, never copied as they are.
_SPECIAL_KEYS: Final = frozenset(
    {
        "sasl.jaas.config",
        "ssl.truststore.location",
        "ssl.truststore.type",
        "ssl.keystore.location",
        "ssl.keystore.type",
        "ssl.keystore.password",
        "ssl.endpoint.identification.algorithm",
        "buffer.memory",
        "partition.assignment.strategy",
        "client.dns.lookup",
        "auto.offset.reset",
        "compression.gzip.level",
        "compression.lz4.level",
        "compression.zstd.level",
    }
)
_ASSIGNORS: Final = {
    "RangeAssignor": "range",
    "RoundRobinAssignor": "roundrobin",
    "CooperativeStickyAssignor": "cooperative-sticky",
}
_LIBRDKAFKA_RECEIVE_MAX_DEFAULT: Final = 100_000_000


def to_librdkafka(props: Mapping[str, str]) -> dict[str, str]:
    """Translate Java client properties to librdkafka ones (implements :meth:`ClientSettings.to_librdkafka`)."""
    out: dict[str, str] = {}
    renamed: dict[str, str] = {}
    for key, value in props.items():
        if key in _SPECIAL_KEYS or key in _JAVA_ONLY_KEYS or key.startswith(_JAVA_ONLY_PREFIXES):
            continue
        if key in _LIBRDKAFKA_RENAMES:
            renamed[_LIBRDKAFKA_RENAMES[key]] = value
        else:
            out[key] = value
    for key, value in renamed.items():  # an explicit librdkafka key wins over a translated Java one
        out.setdefault(key, value)
    for key in ("socket.receive.buffer.bytes", "socket.send.buffer.bytes"):
        if out.get(key, "").strip() == "-1":  # Java: -1 = OS default; librdkafka: 0 = OS default
            out[key] = "0"

    if "buffer.memory" in props and "queue.buffering.max.kbytes" not in out:
        try:
            out["queue.buffering.max.kbytes"] = str(max(1, int(props["buffer.memory"].strip()) // 1024))
        except ValueError:
            raise ConfigError(
                f"invalid value {props['buffer.memory']!r} for 'buffer.memory': expected a number of bytes"
            ) from None
    ctype = props.get("compression.type", "").strip()
    if f"compression.{ctype}.level" in props and "compression.level" not in out:
        out["compression.level"] = props[f"compression.{ctype}.level"]
    if "auto.offset.reset" in props:
        reset = props["auto.offset.reset"].strip()
        out["auto.offset.reset"] = "error" if reset == "none" else reset
    if props.get("client.dns.lookup", "").strip() in (
        "use_all_dns_ips",
        "resolve_canonical_bootstrap_servers_only",
    ):
        out["client.dns.lookup"] = props["client.dns.lookup"].strip()
    if "partition.assignment.strategy" in props:
        names = [n.rsplit(".", 1)[-1] for n in split_list(props["partition.assignment.strategy"])]
        if "." not in props["partition.assignment.strategy"]:  # already librdkafka names
            out["partition.assignment.strategy"] = props["partition.assignment.strategy"]
        elif len(names) == 1 and names[0] in _ASSIGNORS:
            out["partition.assignment.strategy"] = _ASSIGNORS[names[0]]
        # a list of Java classes (e.g. Java's default "RangeAssignor, CooperativeStickyAssignor") has no
        # librdkafka equivalent (it cannot mix eager and cooperative assignors): left to librdkafka's default.
    if "ssl.endpoint.identification.algorithm" in props:
        algo = props["ssl.endpoint.identification.algorithm"].strip()
        out["ssl.endpoint.identification.algorithm"] = algo.lower() if algo else "none"
    _translate_fetch_limits(out)
    _translate_truststore(props, out)
    _translate_keystore(props, out)
    if "sasl.jaas.config" in props:
        _translate_jaas(props["sasl.jaas.config"], props, out)
    return out


def _translate_fetch_limits(out: dict[str, str]) -> None:
    """Raise ``receive.message.max.bytes`` when a Java-sized ``fetch.max.bytes`` needs it (librdkafka)."""
    fetch_max = out.get("fetch.max.bytes", "").strip()
    if fetch_max.isdigit() and "receive.message.max.bytes" not in out:
        needed = int(fetch_max) + 512
        if needed > _LIBRDKAFKA_RECEIVE_MAX_DEFAULT:
            out["receive.message.max.bytes"] = str(needed)


def _sniff(path: str, key: str, size: int) -> bytes:
    """Read the first ``size`` bytes of the store file at ``path``, named by the key ``key`` in errors."""
    try:
        with open(path, "rb") as fh:
            return fh.read(size)
    except OSError as e:
        raise ConfigError(
            f"{key} '{path}' cannot be read ({e.strerror or type(e).__name__}); check the path and its permissions"
        ) from e


_JKS_MAGIC: Final = b"\xfe\xed\xfe\xed"
_JCEKS_MAGIC: Final = b"\xce\xce\xce\xce"


def _store_format(head: bytes) -> str:
    """Name the format of a key or trust store from its first bytes: PEM, JKS, JCEKS, PKCS12 or unknown."""
    if b"-----BEGIN" in head:
        return "PEM"
    if head[:4] == _JKS_MAGIC:
        return "JKS"
    if head[:4] == _JCEKS_MAGIC:
        return "JCEKS"
    if head[:1] == b"\x30":  # a DER SEQUENCE: PKCS#12
        return "PKCS12"
    return "unknown"


def _pkcs12_ca_pem(location: str, password: str | None) -> str | None:
    """Return the certificates of a PKCS#12 trust store as PEM text, or ``None`` if it cannot be opened."""
    try:
        from cryptography.hazmat.primitives.serialization import Encoding, pkcs12
    except ImportError:  # pragma: no cover - cryptography is a dependency of mirrorspark
        return None
    try:
        with open(location, "rb") as fh:
            store = pkcs12.load_pkcs12(fh.read(), password.encode() if password else None)
    except (OSError, ValueError, TypeError):
        return None
    certs = [c.certificate for c in store.additional_certs]
    if store.cert is not None:
        certs.insert(0, store.cert.certificate)
    if not certs:
        return None
    return "".join(c.public_bytes(Encoding.PEM).decode("ascii") for c in certs)


def _translate_truststore(props: Mapping[str, str], out: dict[str, str]) -> None:
    """Java ``ssl.truststore.location`` -> librdkafka ``ssl.ca.location`` (PEM) or ``ssl.ca.pem`` (PKCS#12)."""
    location = props.get("ssl.truststore.location", "").strip()
    if not location or "ssl.ca.location" in out or "ssl.ca.pem" in out:
        return
    head = _sniff(location, "ssl.truststore.location", 1 << 16)
    found = _store_format(head)
    if found == "PEM":
        out["ssl.ca.location"] = location
        return
    password = props.get("ssl.truststore.password")
    if found == "PKCS12":
        pem = _pkcs12_ca_pem(location, password)
        if pem is not None:
            out["ssl.ca.pem"] = pem
            return
    store_type = found if found != "unknown" else (props.get("ssl.truststore.type", "JKS").strip().upper() or "JKS")
    if found == "PKCS12":
        why = " that cannot be opened (wrong or missing ssl.truststore.password?)"
        convert = f"openssl pkcs12 -in {location} -nokeys -out ca.pem"
    else:
        why = ""
        convert = (
            f"keytool -importkeystore -srckeystore {location} -destkeystore truststore.p12 -deststoretype PKCS12"
            " && openssl pkcs12 -in truststore.p12 -nokeys -out ca.pem"
        )
    raise ConfigError(
        f"ssl.truststore.location '{location}' is a {store_type} trust store{why}, but librdkafka needs PEM "
        f"certificates: convert it ({convert}; or keytool -exportcert -rfc -keystore {location} -alias <ca> > "
        "ca.pem) and set ssl.truststore.location=ca.pem with ssl.truststore.type=PEM, or ssl.ca.location=ca.pem "
        "(it takes precedence over the Java trust store)"
    )


def _translate_keystore(props: Mapping[str, str], out: dict[str, str]) -> None:
    """Java ``ssl.keystore.*`` -> librdkafka PKCS#12 keystore or PEM certificate/key locations."""
    location = props.get("ssl.keystore.location", "").strip()
    native = ("ssl.certificate.location", "ssl.key.location", "ssl.certificate.pem", "ssl.key.pem")
    if not location or any(k in out for k in native):
        return
    store_type = props.get("ssl.keystore.type", "JKS").strip().upper() or "JKS"
    if store_type == "PEM":
        out["ssl.certificate.location"] = location
        out["ssl.key.location"] = location
        return
    head = _sniff(location, "ssl.keystore.location", 1 << 16)
    found = _store_format(head)
    if store_type in ("JKS", "PKCS12") and found == "PKCS12":  # Java reads PKCS#12 as JKS too
        out["ssl.keystore.location"] = location
        if "ssl.keystore.password" in props:
            out["ssl.keystore.password"] = props["ssl.keystore.password"]
        return
    if found == "PEM":  # a PEM file (key and certificate chain) whatever ssl.keystore.type says
        out["ssl.certificate.location"] = location
        out["ssl.key.location"] = location
        return
    raise ConfigError(
        f"ssl.keystore.location '{location}' is a {store_type} key store"
        + (f" ({found} format)" if found in ("JKS", "JCEKS") else "")
        + ", which librdkafka cannot read: convert it to PKCS#12 (keytool -importkeystore -srckeystore "
        f"{location} -destkeystore keystore.p12 -deststoretype PKCS12) "
        "and set ssl.keystore.location=keystore.p12 with ssl.keystore.type=PKCS12, or set "
        "ssl.certificate.location and ssl.key.location to PEM files "
        "(openssl pkcs12 -in keystore.p12 -nokeys -out cert.pem; openssl pkcs12 -in keystore.p12 -nocerts "
        "-nodes -out key.pem)"
    )


_JAAS_HEAD = re.compile(r"\s*([A-Za-z_$][\w.$]*)\s+(required|requisite|sufficient|optional)\b", re.IGNORECASE)
_JAAS_OPTION = re.compile(r'\s*([^\s=;"]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s;"]+))', re.DOTALL)


def _parse_jaas(text: str) -> tuple[str, dict[str, str]]:
    """Parse ``<LoginModule> <flag> key="value" ...;`` into the module's simple name and its options."""
    bad = ConfigError(
        "sasl.jaas.config cannot be parsed: expected one login module such as "
        '\'org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="p";\''
    )
    head = _JAAS_HEAD.match(text)
    if head is None:
        raise bad
    options: dict[str, str] = {}
    pos = head.end()
    while (m := _JAAS_OPTION.match(text, pos)) is not None:
        quoted, bare = m.group(2), m.group(3)
        options[m.group(1)] = re.sub(r"\\(.)", r"\1", quoted, flags=re.DOTALL) if quoted is not None else bare
        pos = m.end()
    if text[pos:].strip() != ";":
        raise bad
    return head.group(1).rsplit(".", 1)[-1], options


def _translate_jaas(jaas: str, props: Mapping[str, str], out: dict[str, str]) -> None:
    """``sasl.jaas.config`` -> librdkafka's ``sasl.*`` keys (explicit librdkafka keys win)."""
    module, options = _parse_jaas(jaas)
    if module in ("PlainLoginModule", "ScramLoginModule"):
        if "username" not in options or "password" not in options:
            raise ConfigError(f'sasl.jaas.config: {module} needs username="..." and password="..." options')
        out.setdefault("sasl.username", options["username"])
        out.setdefault("sasl.password", options["password"])
    elif module == "OAuthBearerLoginModule":
        if "sasl.oauthbearer.token.endpoint.url" in props:
            out.setdefault("sasl.oauthbearer.method", "oidc")
            for option, target in (
                ("clientId", "sasl.oauthbearer.client.id"),
                ("clientSecret", "sasl.oauthbearer.client.secret"),
                ("scope", "sasl.oauthbearer.scope"),
            ):
                if option in options:
                    out.setdefault(target, options[option])
        elif "unsecuredLoginStringClaim_sub" in options:
            out.setdefault("enable.sasl.oauthbearer.unsecure.jwt", "true")
            out.setdefault("sasl.oauthbearer.config", f"principal={options['unsecuredLoginStringClaim_sub']}")
        else:
            raise ConfigError(
                "sasl.jaas.config: OAuthBearerLoginModule without sasl.oauthbearer.token.endpoint.url or "
                "unsecuredLoginStringClaim_sub cannot be translated for librdkafka; "
                "set the token endpoint URL"
            )
    elif module == "Krb5LoginModule":
        if "keyTab" in options:
            out.setdefault("sasl.kerberos.keytab", options["keyTab"])
        if "principal" in options:
            out.setdefault("sasl.kerberos.principal", options["principal"])
        if "serviceName" in options:
            out.setdefault("sasl.kerberos.service.name", options["serviceName"])
    else:
        raise ConfigError(
            f"sasl.jaas.config: login module {module} has no librdkafka equivalent; use PlainLoginModule, "
            "ScramLoginModule, OAuthBearerLoginModule or Krb5LoginModule, "
            "or set librdkafka's sasl.* keys directly"
        )
