"""``mirrorspark local``: start and stop local Kafka clusters (KRaft) and registries for trying mirrorspark out."""

from __future__ import annotations

import json
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from mirrorspark.cli.common import list_option, out_console, parse_duration
from mirrorspark.cli.conventions import ConventionGroup

if TYPE_CHECKING:
    from mirrorspark.kafka.local.model import LocalClusters

DEFAULT_LOCAL_DIR = Path(".mirrorspark/local")

local_app = typer.Typer(
    help="Start and stop local Apache Kafka clusters (KRaft) for trying mirrorspark out.",
    no_args_is_help=True,
    cls=ConventionGroup,
)


class LocalSecurity(StrEnum):
    """``--security`` of ``local up`` (see :data:`mirrorspark.kafka.local.settings.SecurityProtocol`)."""

    PLAINTEXT = "plaintext"
    SSL = "ssl"
    SASL_SSL = "sasl_ssl"
    SASL_PLAIN = "sasl_plain"


@local_app.command("up")
def local_up(
    clusters: Annotated[
        list[str] | None, list_option("--clusters", help="The clusters' aliases [default: primary,backup].")
    ] = None,
    brokers: Annotated[int, typer.Option("--brokers", min=1, max=3, help="Brokers per cluster.")] = 1,
    racks: Annotated[
        str | None,
        typer.Option(
            "--racks",
            help="Comma-separated broker.rack per broker (as many as --brokers); also turns on follower fetching "
            "(replica.selector.class=RackAwareReplicaSelector, KIP-392).",
        ),
    ] = None,
    dir: Annotated[
        Path, typer.Option("--dir", help="Where the clusters keep their data and state.")
    ] = DEFAULT_LOCAL_DIR,
    security: Annotated[
        LocalSecurity,
        typer.Option(
            "--security",
            help=(
                "plaintext; ssl (TLS, CA generated at start); sasl_ssl (SASL/SCRAM-SHA-512 over TLS);"
                " sasl_plain (SASL/PLAIN without TLS). SASL modes get an admin user with a random password."
            ),
        ),
    ] = LocalSecurity.PLAINTEXT,
    schema_registry: Annotated[
        bool,
        typer.Option(
            "--schema-registry",
            help="Also start one Schema Registry per cluster (Apicurio Registry, Confluent's API; needs Java 21+).",
        ),
    ] = False,
    json_out: Annotated[
        bool,
        typer.Option(
            "--json",
            help="Print {alias: {bootstrap.servers: ...}} (librdkafka configs, plus schema.registry.url) as JSON.",
        ),
    ] = False,
    timeout: Annotated[
        float,
        typer.Option(
            "--timeout",
            parser=parse_duration,
            metavar="DURATION",
            help="How long to wait until every cluster is ready: 90s, 2m (a bare number is seconds; at least 10s).",
        ),
    ] = 90.0,
) -> None:
    """Start local Kafka clusters in the background; print their bootstrap servers and an mm2.properties.

    The mm2.properties (also written to DIR/mm2.properties, mode 0600) has the client settings the chosen
    --security needs: security.protocol, the CA as a PEM trust store, and a SCRAM or PLAIN sasl.jaas.config.
    With --schema-registry, each cluster gets its own registry and <alias>.schema.registry.url.
    """
    import secrets

    from mirrorspark.kafka.local.clusters import start_clusters
    from mirrorspark.kafka.local.settings import ADMIN_USER, RACK_AWARE_SELECTOR

    aliases = clusters or ["primary", "backup"]
    rack_list = [r.strip() for r in racks.split(",")] if racks else None
    # A random admin password (never a well-known default) for clusters a user starts by hand.
    users = (
        {ADMIN_USER: secrets.token_urlsafe(18)}
        if security in (LocalSecurity.SASL_PLAIN, LocalSecurity.SASL_SSL)
        else None
    )
    if timeout < 10:
        from mirrorspark.errors import ConfigError

        raise ConfigError(f"--timeout {timeout:g}s is too short: local clusters need at least 10s to start")
    started = start_clusters(
        aliases,
        base_dir=dir,
        brokers=brokers,
        racks=rack_list,
        # racks without the rack-aware selector would leave every read on the leader
        extra_broker_props={"replica.selector.class": RACK_AWARE_SELECTOR} if rack_list else None,
        security=security.value,
        sasl_users=users,
        timeout_s=timeout,
        schema_registry=schema_registry,
    )
    _print_started(started, dir, json_out=json_out)


def _print_started(started: LocalClusters, dir: Path, *, json_out: bool) -> None:
    """Print the started clusters (and registries) and their mm2.properties, also written to DIR (mode 0600)."""
    from mirrorspark.kafka.local.state import write_text

    if json_out:
        print(json.dumps(started.to_json()))
        return
    for alias, c in started.clusters.items():
        registry = "" if c.schema_registry is None else f" schema.registry.url={c.schema_registry.url}"
        print(f"{alias}: bootstrap.servers={c.bootstrap_servers}{registry}")
    props = dir / "mm2.properties"
    text = started.mm2_properties()
    write_text(props.resolve(), text, mode=0o600)  # it may hold the admin password
    # Plain prints: the text must stay valid properties when copied (no wrapping at the terminal width).
    print(f"\n# {props} (stop with: mirrorspark local down --dir {dir})")
    print(text, end="")


@local_app.command("down")
def local_down(
    dir: Annotated[Path, typer.Option("--dir", help="The directory given to `local up`.")] = DEFAULT_LOCAL_DIR,
) -> None:
    """Stop the local clusters started with `mirrorspark local up`."""
    from mirrorspark.kafka.local.clusters import stop_clusters

    stopped = stop_clusters(dir)
    out_console.print(f"stopped: {', '.join(stopped) if stopped else 'nothing was running'}", highlight=False)


__all__ = ["DEFAULT_LOCAL_DIR", "LocalSecurity", "local_app"]
