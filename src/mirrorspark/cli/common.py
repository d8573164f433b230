"""What the ``mirrorspark`` commands share: the consoles, the one error line, plain tables, common options."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from mirrorspark.errors import MirrorsparkError

err_console = Console(stderr=True)
out_console = Console()

ConfigOption = Annotated[Path, typer.Option("--config", help="An MM2 properties file (mm2.properties).")]


def fail(e: MirrorsparkError) -> typer.Exit:
    """Print ``e`` as one line on stderr (``error [CODE]: message``) and return the exit carrying its code.

    Parameters
    ----------
    e:
        The error; its message never holds a secret (the error tree guarantees it).

    Returns
    -------
    typer.Exit
        To be raised by the command (``raise fail(e) from None``).
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
