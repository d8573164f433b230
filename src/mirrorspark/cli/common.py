"""What the ``mirrorspark`` commands share: consoles, the one error line, plain tables, common options.

The command-line conventions every command follows (issue #24, ux-review section 2) live here:

- CONFIG is positional or ``--config FILE`` in every command (:data:`ConfigArgument`; the
  ``--config`` form is folded into the positional by :class:`~mirrorspark.cli.conventions.ConventionGroup`).
- A list option is repeatable and also takes ``B C`` and ``B,C`` (:func:`list_option`).
- ``--timeout`` takes a duration with a unit, ``500ms``, ``5s``, ``2m``, ``1h``; a bare number is
  seconds, as before, but one of 1000 or more is refused as ambiguous (Kafka's tools take ms)
  (:func:`parse_duration`, :data:`TimeoutOption`).
- ``--source``/``--target`` name a flow's clusters in every command; ``--cluster`` names the one
  cluster of a single-cluster command.
- Commands that write offsets only preview unless ``--execute`` is given (:data:`ExecuteOption`).
"""

from __future__ import annotations

import datetime
import errno
import re
import socket
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Final, TypeVar

import typer
from rich.console import Console

from mirrorspark.errors import ConfigError, MirrorsparkError, ServiceError

if TYPE_CHECKING:
    from mirrorspark.client.context import ReplicationContext
    from mirrorspark.config.model import MirrorConfig

T = TypeVar("T")

err_console = Console(stderr=True)
out_console = Console()

CONFIG_HELP: Final = "An MM2 properties file (mm2.properties); also accepted as --config FILE."

ConfigArgument = Annotated[Path, typer.Argument(help=CONFIG_HELP, metavar="CONFIG", show_default=False)]
"""CONFIG of every command: positional, or ``--config FILE`` (folded into the positional before parsing)."""

LIST_OPTIONS: dict[str, bool] = {}
"""Every list option's names -> whether a value is also split at commas (filled by :func:`list_option`)."""

LIST_HELP: Final = "(repeatable; also B C or B,C)"
REGEX_LIST_HELP: Final = "(repeatable; also R1 R2; a comma belongs to the regex)"


def list_option(*names: str, help: str, split_commas: bool = True, hidden: bool = False) -> Any:
    """Declare a list option: ``--x A --x B``, ``--x A B`` and (with ``split_commas``) ``--x A,B`` all mean A and B.

    Parameters
    ----------
    names:
        The option's names, e.g. ``"--clusters"``.
    help:
        Its help text; the list syntax is appended (:data:`LIST_HELP` or :data:`REGEX_LIST_HELP`).
    split_commas:
        Whether a value holding commas is several values (false for regexes, where a comma is
        part of ``{1,3}``).
    hidden:
        Leave it out of ``--help``.

    Returns
    -------
    typer.models.OptionInfo
        For ``Annotated[list[str] | None, list_option(...)]``.
    """
    for name in names:
        LIST_OPTIONS[name] = split_commas
    suffix = LIST_HELP if split_commas else REGEX_LIST_HELP
    return typer.Option(*names, help=f"{help} {suffix}", show_default=False, hidden=hidden)


AMBIGUOUS_BARE_S: Final = 1000.0
"""A bare ``--timeout`` number from here on is refused: Kafka's tools read ``--timeout 5000`` as 5 s, we as 83 min."""

_DURATION = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*(ms|s|m|h)?\s*$", re.IGNORECASE)
_UNIT_S: Final = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, None: 1.0}


def parse_duration(value: str | float) -> float:
    """Read a ``--timeout``-style duration: a number with a unit (``500ms``, ``5s``, ``2m``, ``1h``); bare = seconds.

    A bare number of :data:`AMBIGUOUS_BARE_S` or more is refused: it is most likely milliseconds
    copied from a Kafka tool's command line (``--timeout 5000``), and read as seconds it would wait
    for hours.

    Parameters
    ----------
    value:
        What the user typed (or a number, the default).

    Returns
    -------
    float
        Seconds, > 0.

    Raises
    ------
    typer.BadParameter
        Not a positive duration, or an ambiguous bare number (a usage error, exit 2).
    """
    if isinstance(value, int | float):
        seconds = float(value)
    else:
        m = _DURATION.match(value)
        if m is None:
            raise typer.BadParameter(
                f"{value!r} is not a duration: give e.g. 5s, 5000ms or 2m (a bare number is seconds)"
            )
        unit = m.group(2).lower() if m.group(2) else None
        seconds = float(m.group(1)) * _UNIT_S[unit]
        if unit is None and seconds >= AMBIGUOUS_BARE_S:
            raise typer.BadParameter(
                f"{value!r} without a unit is {seconds:g} seconds, but Kafka's tools read it as milliseconds: "
                f"write {value.strip()}ms or {value.strip()}s"
            )
    if seconds <= 0:
        raise typer.BadParameter(f"{value!r}: a duration must be more than 0")
    return seconds


TIMEOUT_HELP: Final = "How long each cluster call waits: 500ms, 5s, 2m (a bare number is seconds, below 1000)"


def timeout_option(default: str) -> Any:
    """Declare a command's ``--timeout`` (a duration, :func:`parse_duration`) whose default is ``default``.

    Parameters
    ----------
    default:
        What ``None`` means, for the help text, e.g. ``"admin.timeout.ms"``.

    Returns
    -------
    typer.models.OptionInfo
        For ``Annotated[float | None, timeout_option(...)]``.
    """
    return typer.Option(
        "--timeout",
        parser=parse_duration,
        metavar="DURATION",
        help=f"{TIMEOUT_HELP}; default: {default}.",
        show_default=False,
    )


TimeoutOption = Annotated[float | None, timeout_option("admin.timeout.ms")]
"""``--timeout`` of the commands that talk to a cluster (``None`` = the configuration's ``admin.timeout.ms``)."""

StartTimeoutOption = Annotated[
    float | None,
    typer.Option(
        "--timeout",
        parser=parse_duration,
        metavar="DURATION",
        help="How long each cluster may take to answer at start: 500ms, 5s, 2m (a bare number is seconds); "
        "default: admin.timeout.ms, at most 10s.",
        show_default=False,
    ),
]
"""``--timeout`` of ``run``/``status``/``service``: the bound of the reachability check before any work."""

ExecuteOption = Annotated[
    bool, typer.Option("--execute", help="Write. Without it the command only previews (as kafka-consumer-groups).")
]
DryRunOption = Annotated[
    bool, typer.Option("--dry-run", help="Preview only, write nothing (the default; kept for compatibility).")
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON on stdout (and nothing else there).")]

PREVIEW_NOTE: Final = "preview only: nothing written; add --execute to write"


def preview(execute: bool, dry_run: bool) -> bool:
    """Return whether a writing command only previews (``--dry-run``, or no ``--execute``).

    Parameters
    ----------
    execute:
        ``--execute`` was given.
    dry_run:
        ``--dry-run`` was given (the default behaviour, kept as a spelling for compatibility).

    Returns
    -------
    bool
        ``True``: preview only, write nothing.

    Raises
    ------
    ConfigError
        Both ``--execute`` and ``--dry-run`` were given.
    """
    if execute and dry_run:
        raise ConfigError("give --execute (write) or --dry-run (preview, the default), not both")
    return not execute


def print_preview_note() -> None:
    """Say on stderr that nothing was written (stdout stays the plan, or JSON)."""
    err_console.print(f"note: {PREVIEW_NOTE}", highlight=False, markup=False)


def one_of(value: T | None, alias_value: T | None, name: str, alias: str) -> T:
    """Return the value of an option given under its name or under its old (hidden) name.

    Parameters
    ----------
    value, alias_value:
        What the option and its old name were given (``None``: not given).
    name, alias:
        The option's name and its old name, for the message.

    Returns
    -------
    T
        The value given.

    Raises
    ------
    ConfigError
        Neither was given, or both with different values.
    """
    if value is not None and alias_value is not None and value != alias_value:
        raise ConfigError(f"{alias} is the old name of {name}: give {name} once")
    chosen = value if value is not None else alias_value
    if chosen is None:
        raise ConfigError(f"missing option {name}")
    return chosen


_ISO_DURATION = re.compile(
    r"^P(?:(?P<d>\d+(?:\.\d+)?)D)?(?:T(?:(?P<h>\d+(?:\.\d+)?)H)?(?:(?P<m>\d+(?:\.\d+)?)M)?(?:(?P<s>\d+(?:\.\d+)?)S)?)?$",
    re.IGNORECASE,
)


def parse_iso_duration(value: str) -> datetime.timedelta:
    """Read an ISO 8601 duration as ``kafka-consumer-groups --by-duration`` takes it (``PnDTnHnMnS``).

    Parameters
    ----------
    value:
        E.g. ``PT30M``, ``P1DT2H``, ``PT0.5S``.

    Returns
    -------
    datetime.timedelta

    Raises
    ------
    ConfigError
        Not such a duration (years, months and weeks are not accepted, as in Kafka).
    """
    m = _ISO_DURATION.match(value.strip())
    if m is None or value.strip().upper() in ("P", "PT") or value.strip().upper().endswith("T"):
        raise ConfigError(f"--by-duration {value!r} is not an ISO 8601 duration PnDTnHnMnS, e.g. PT30M or P1DT2H")
    parts = {k: float(v) if v else 0.0 for k, v in m.groupdict().items()}
    return datetime.timedelta(days=parts["d"], hours=parts["h"], minutes=parts["m"], seconds=parts["s"])


def check_reachable(
    config: MirrorConfig,
    aliases: Iterable[str],
    timeout_s: float | None,
    *,
    flows: Iterable[Any] = (),
    context: ReplicationContext | None = None,
) -> None:
    """Ask each cluster for its metadata once, before a command does anything else.

    The same one-line error as ``run`` gives (alias, bootstrap servers, the fix), within the timeout.
    The clusters of ``flows`` are asked first, with each flow's client settings, so that a bad
    client setting is named with its flow and side as the flow itself would name it.

    Parameters
    ----------
    config:
        The loaded configuration.
    aliases:
        Clusters the command talks to besides those of ``flows`` (each checked once, in order).
    timeout_s:
        Seconds each cluster may take (the command's ``--timeout``); ``None`` = ``admin.timeout.ms``,
        at most :data:`~mirrorspark.kafka.admin.REACHABLE_TIMEOUT_S`.
    flows:
        Flows (:class:`~mirrorspark.config.model.FlowConfig`) whose source and target the command uses.
    context:
        The command's context of ``config`` (``run`` hands the same one to the ``Replicator``); ``None``: built here.

    Raises
    ------
    UnknownAliasError
        An alias is not in ``clusters``.
    ConfigError
        A client setting cannot be translated for librdkafka.
    ClusterUnreachableError
        A cluster does not answer in time.
    ClusterError
        A cluster refused the request.
    """
    from mirrorspark.client.context import ReplicationContext, Side

    if context is None:
        context = ReplicationContext(config)
    checked: set[str] = set()
    for flow in flows:
        ctx = context.flow(flow.source, flow.target)
        sides: tuple[tuple[Side, str], ...] = (("source", flow.source), ("target", flow.target))
        for side, alias in sides:
            if alias not in checked:
                checked.add(alias)
                _check(ctx.cluster_admin(side, "reachability-check"), timeout_s)
    for alias in aliases:
        if alias not in checked:
            checked.add(alias)
            _check(context.cluster_admin(alias, "reachability-check"), timeout_s)


def _check(admin: Any, timeout_s: float | None) -> None:
    if timeout_s is not None:
        admin = admin.with_timeout(timeout_s, setting="--timeout")
    with admin:
        admin.check_reachable(timeout_s=timeout_s)


def check_port_free(host: str, port: int) -> None:
    """Fail unless ``host:port`` can be listened on (a bind test, as the HTTP server will bind it).

    Parameters
    ----------
    host:
        The address to listen on.
    port:
        The TCP port; 0 (a free one) is not tested.

    Raises
    ------
    ServiceError
        The port is in use (or the address cannot be bound), with the fix.
    """
    if port == 0:
        return
    try:
        with socket.create_server((host, port)):  # SO_REUSEADDR, as uvicorn: a TIME_WAIT port is free
            pass
    except OSError as e:
        if e.errno == errno.EADDRINUSE:
            raise ServiceError(
                f"port {port} on {host} is in use: choose another with --port N, or --port 0 for a free one"
            ) from None
        raise ServiceError(f"cannot listen on {host}:{port} ({e.strerror or e}): check --host and --port") from None


def fail(e: MirrorsparkError) -> typer.Exit:
    """Print ``e`` as one line on stderr (``error [CODE]: message``) and return the exit carrying its code.

    Parameters
    ----------
    e:
        The error; its message never holds a secret (the error tree guarantees it).

    Returns
    -------
    typer.Exit
        To be raised (``raise fail(e) from None``); a command lets its error out to ``CommandLineGroup``.
    """
    err_console.print(f"[bold red]error[/] [{e.code}]: {e.message}", markup=True, highlight=False, soft_wrap=True)
    return typer.Exit(e.exit_code)


def as_dict(obj: Any) -> Any:
    """Return a dataclass instance as a dict, for ``--json`` output."""
    from dataclasses import asdict

    return asdict(obj)


def cell(value: object) -> str:
    """Return a table cell's text: ``-`` for ``None``."""
    return "-" if value is None else str(value)


def text_table(headers: list[str], rows: list[list[object]]) -> str:
    """Rows as plain left-aligned columns (``None`` as ``-``), like kafka-consumer-groups prints them.

    Plain text rather than a Rich table: nothing is wrapped or cut when stdout is
    not a terminal, and group or topic names are never read as markup.
    """
    cells = [[str(h) for h in headers], *[[cell(v) for v in r] for r in rows]]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in cells) + "\n"
