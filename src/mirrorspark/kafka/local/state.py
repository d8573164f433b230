"""The local clusters' state file, its lock, and validation of what they are started with."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import Any

from mirrorspark.errors import LocalClusterError
from mirrorspark.kafka.local.model import LocalBroker, LocalCluster, LocalClusters, LocalSchemaRegistry
from mirrorspark.kafka.local.settings import (
    ADMIN_USER,
    ALIAS_RE,
    DEFAULT_ADMIN_PASSWORD,
    LOCK_FILE,
    SASL_NAME_RE,
    SASL_SECURITY,
    SECURITY_PROTOCOLS,
    STATE_FILE,
    STATE_VERSION,
)

# --------------------------------------------------------------------------------------------
# State file, locking, validation, properties
# --------------------------------------------------------------------------------------------


@contextlib.contextmanager
def locked(base_dir: Path) -> Iterator[None]:
    """Hold an exclusive lock on the state of ``base_dir`` (``fcntl.flock``) while the block runs."""
    base_dir.mkdir(parents=True, exist_ok=True)
    with open(base_dir / LOCK_FILE, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def write_state(state: LocalClusters) -> None:
    """Write the clusters' state file atomically (mode 0600: it holds SASL passwords)."""
    doc = {
        "version": STATE_VERSION,
        "base_dir": str(state.base_dir),
        "clusters": {
            alias: {
                "bootstrap.servers": c.bootstrap_servers,
                "data_dir": str(c.data_dir),
                "cluster_id": c.cluster_id,
                "security": c.security,
                "sasl_users": dict(c.sasl_users),
                "ca_location": None if c.ca_location is None else str(c.ca_location),
                **_registry_doc(c.schema_registry),
                "brokers": [
                    {
                        "node_id": b.node_id,
                        "port": b.port,
                        "controller_port": b.controller_port,
                        "rack": b.rack,
                        "pid": b.pid,
                        "log_path": str(b.log_path),
                        "controller": b.controller,
                        "wan_listen_port": b.wan_listen_port,
                        "wan_port": b.wan_port,
                    }
                    for b in c.brokers
                ],
            }
            for alias, c in state.clusters.items()
        },
    }
    write_text(state.base_dir / STATE_FILE, json.dumps(doc, indent=2) + "\n", mode=0o600)


def read_state(base_dir: Path) -> LocalClusters | None:
    """Read the clusters' state file of ``base_dir``.

    Raises LocalClusterError if the file is corrupt or of another version.
    """
    path = base_dir / STATE_FILE
    try:
        doc = json.loads(path.read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as e:
        raise LocalClusterError(
            f"cannot read {path} ({e}): stop any brokers left from it by hand and delete the file"
        ) from e
    try:
        if doc.get("version") != STATE_VERSION:
            raise ValueError(f"unsupported version {doc.get('version')!r}")
        clusters: dict[str, LocalCluster] = {}
        for alias, c in doc["clusters"].items():
            clusters[alias] = LocalCluster(
                alias=alias,
                bootstrap_servers=c["bootstrap.servers"],
                data_dir=Path(c["data_dir"]),
                brokers=tuple(
                    LocalBroker(
                        node_id=int(b["node_id"]),
                        port=int(b["port"]),
                        controller_port=int(b["controller_port"]),
                        rack=b["rack"],
                        pid=int(b["pid"]),
                        log_path=Path(b["log_path"]),
                        controller=bool(b["controller"]),
                        wan_listen_port=int(b.get("wan_listen_port", 0)),
                        wan_port=int(b.get("wan_port", 0)),
                    )
                    for b in c["brokers"]
                ),
                cluster_id=c["cluster_id"],
                security=c["security"],
                sasl_users=MappingProxyType(dict(c["sasl_users"])),
                ca_location=None if c.get("ca_location") is None else Path(c["ca_location"]),
                schema_registry=_registry_of(c.get("schema_registry")),
            )
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise LocalClusterError(
            f"{path} is not a mirrorspark local state file ({e}): stop any brokers left from it by hand"
            " and delete the file"
        ) from e
    return LocalClusters(base_dir=Path(doc.get("base_dir", base_dir)), clusters=MappingProxyType(clusters))


def _registry_doc(registry: LocalSchemaRegistry | None) -> dict[str, dict[str, object]]:
    """Return a cluster's ``schema_registry`` entry of the state file (none without a registry, as older files)."""
    if registry is None:
        return {}
    doc = {
        "url": registry.url,
        "port": registry.port,
        "management_port": registry.management_port,
        "pid": registry.pid,
        "log_path": str(registry.log_path),
    }
    return {"schema_registry": doc}


def _registry_of(doc: Mapping[str, Any] | None) -> LocalSchemaRegistry | None:
    """Read a ``schema_registry`` entry written by :func:`_registry_doc`. Raises KeyError, TypeError or ValueError."""
    if doc is None:
        return None
    return LocalSchemaRegistry(
        port=int(doc["port"]),
        management_port=int(doc["management_port"]),
        pid=int(doc["pid"]),
        log_path=Path(doc["log_path"]),
    )


def with_cluster(state: LocalClusters, cluster: LocalCluster) -> LocalClusters:
    """Return ``state`` with ``cluster`` added or replaced (by alias)."""
    clusters = dict(state.clusters)
    clusters[cluster.alias] = cluster
    return LocalClusters(base_dir=state.base_dir, clusters=MappingProxyType(clusters))


def write_text(path: Path, text: str, *, mode: int = 0o600) -> None:
    """Write atomically (temporary file + rename)."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def validate_aliases(aliases: Sequence[str]) -> list[str]:
    """Check cluster aliases for local clusters.

    Raises LocalClusterError on a string instead of a sequence, an empty list, a bad or duplicate alias.
    """
    if isinstance(aliases, str):
        raise LocalClusterError(f"aliases must be a sequence of names, not the string {aliases!r}")
    result = list(aliases)
    if not result:
        raise LocalClusterError("no cluster aliases given: name at least one, e.g. primary")
    for alias in result:
        if not isinstance(alias, str) or not ALIAS_RE.fullmatch(alias):
            raise LocalClusterError(f"invalid cluster alias {alias!r}: use letters, digits, '_' and '-'")
    duplicates = sorted({a for a in result if result.count(a) > 1})
    if duplicates:
        raise LocalClusterError(f"duplicate cluster aliases: {', '.join(duplicates)}")
    return result


def validate_security(security: str, users: Mapping[str, str] | None) -> dict[str, str]:
    """Check the security protocol and SASL users of local clusters.

    Raises LocalClusterError on an unknown protocol, users without SASL, or a bad user name or password.
    """
    if security not in SECURITY_PROTOCOLS:
        raise LocalClusterError(f"unknown security {security!r}: use one of {', '.join(map(repr, SECURITY_PROTOCOLS))}")
    if security not in SASL_SECURITY:
        if users:
            raise LocalClusterError("sasl_users need security='sasl_plain' or 'sasl_ssl'")
        return {}
    result = {ADMIN_USER: DEFAULT_ADMIN_PASSWORD}
    result.update(users or {})
    # SCRAM credentials go through StorageTool's `name=...,password="..."` syntax: no commas there.
    forbidden = '"\\;\n\r' + (",'" if security == "sasl_ssl" else "")
    for name, password in result.items():
        if not SASL_NAME_RE.fullmatch(name):
            raise LocalClusterError(f"invalid SASL user name {name!r}: use letters, digits, '_', '.' and '-'")
        if not password or any(ch in password for ch in forbidden):
            raise LocalClusterError(
                f"invalid password for SASL user {name!r}: must be non-empty without quotes,"
                " backslashes, semicolons or newlines" + (" (nor commas for SCRAM)" if security == "sasl_ssl" else "")
            )
    return result
