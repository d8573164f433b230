"""The argument folding behind the command-line conventions (:mod:`mirrorspark.cli.common`).

Click gives an option a fixed number of values, and a command one way to pass CONFIG. Before
a command parses its arguments, :func:`normalize_args` rewrites them into that one way:

- ``--config FILE`` (or ``--config=FILE``) becomes the positional CONFIG of a command that has one;
- a list option declared with :func:`~mirrorspark.cli.common.list_option` takes every value up to
  the next option: ``--clusters B C`` and ``--clusters B,C`` become ``--clusters B --clusters C``
  (commas are split only for options declared with ``split_commas``). A value naming an existing
  file or folder ends the list, so ``run --clusters B C mm2.properties`` still finds its CONFIG.

Every Typer app of the command line uses :class:`ConventionGroup`, which applies it to the
arguments of the command it resolves. The root app's :class:`CommandLineGroup` is also the one place
where an error out of a command becomes its line on stderr and its exit code.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from typer.core import TyperArgument, TyperGroup, TyperOption

if TYPE_CHECKING:  # Typer 0.29 parses with its own copy of Click; older Typers with Click itself
    from typer import _click as click

from mirrorspark.cli.common import LIST_OPTIONS, fail
from mirrorspark.errors import ClusterError, ClusterUnreachableError, MirrorsparkError


def _config_argument(cmd: click.Command) -> bool:
    return any(isinstance(p, TyperArgument) and p.name == "config" for p in cmd.params)


def _list_options(cmd: click.Command) -> dict[str, bool]:
    """Return the command's list options' names -> whether commas split a value."""
    out: dict[str, bool] = {}
    for p in cmd.params:
        if isinstance(p, TyperOption) and p.multiple:
            for name in p.opts:
                if name in LIST_OPTIONS:
                    out[name] = LIST_OPTIONS[name]
    return out


def _values(value: str, split_commas: bool) -> list[str]:
    return [v.strip() for v in value.split(",") if v.strip()] if split_commas else [value]


def normalize_args(cmd: click.Command, args: list[str]) -> list[str]:
    """Rewrite a command's arguments into the one form Click parses (see the module docstring).

    Parameters
    ----------
    cmd:
        The command about to parse ``args``.
    args:
        Its arguments, as typed (after the command's name).

    Returns
    -------
    list[str]
        The same arguments with ``--config FILE`` moved to the positional CONFIG and every list
        option's values one per option. Everything after ``--`` is left alone.
    """
    lists = _list_options(cmd)
    has_config = _config_argument(cmd)
    out: list[str] = []
    configs: list[str] = []
    i = 0
    while i < len(args):
        tok = args[i]
        if tok == "--":
            out += args[i:]
            break
        name, eq, inline = tok.partition("=")
        if (
            has_config
            and name == "--config"
            and "config" not in {p.name for p in cmd.params if isinstance(p, TyperOption)}
        ):
            if eq:
                configs.append(inline)
                i += 1
            elif i + 1 < len(args):
                configs.append(args[i + 1])
                i += 2
            else:
                out.append(tok)  # Click says the value is missing
                i += 1
            continue
        if name in lists:
            split = lists[name]
            values: list[str] = []
            if eq:
                values = _values(inline, split)
                i += 1
            else:
                i += 1
                while i < len(args) and not args[i].startswith("-"):
                    if values and has_config and (Path(args[i]).is_file() or Path(args[i]).is_dir()):
                        break  # the CONFIG after the list
                    values += _values(args[i], split)
                    i += 1
            if not values:
                out.append(tok)  # Click says the value is missing
            for v in values:
                out += [name, v]
            continue
        out.append(tok)
        i += 1
    return [*configs, *out]


class ConventionGroup(TyperGroup):
    """The command group of every ``mirrorspark`` Typer app: folds a resolved command's arguments first."""

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        """Resolve the command as Click does, then rewrite its arguments with :func:`normalize_args`."""
        name, cmd, rest = super().resolve_command(ctx, args)
        if cmd is not None and not isinstance(cmd, TyperGroup):
            rest = normalize_args(cmd, rest)
        return name, cmd, rest


class CommandLineGroup(ConventionGroup):
    """The ``mirrorspark`` group: runs a command and turns its error into one line and an exit code, once for all.

    A :class:`~mirrorspark.errors.MirrorsparkError` prints ``error [CODE]: message`` on stderr and exits
    with its code (:func:`~mirrorspark.cli.common.fail`). A Kafka error or timeout that no command translated
    (a bug: every call site should raise a :class:`~mirrorspark.errors.ClusterError` naming its flow, topic
    or group) still ends in one line and exit status 3, never a traceback.
    """

    def invoke(self, ctx: click.Context) -> Any:
        """Invoke the command as Click does, translating its error (see the class docstring)."""
        from confluent_kafka import KafkaException

        try:
            return super().invoke(ctx)
        except MirrorsparkError as e:
            raise fail(e) from None
        except KafkaException as e:
            err = e.args[0] if e.args else e
            raise fail(ClusterError(f"a Kafka call failed: {err}")) from None
        except TimeoutError:
            e2 = ClusterUnreachableError(
                "a Kafka call timed out: check that the clusters are up (run with -v for more)"
            )
            raise fail(e2) from None


__all__ = ["CommandLineGroup", "ConventionGroup", "normalize_args"]
