"""The live control commands: ``control topics|groups`` (SRM's ``srm-control``) and ``control throttle``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, Literal

import typer

from mirrorspark.cli.common import (
    ConfigArgument,
    JsonOption,
    err_console,
    list_option,
    text_table,
    timeout_option,
)
from mirrorspark.cli.conventions import ConventionGroup

control_app = typer.Typer(
    help="Change a flow's topic and group allow/deny lists or its throttle while it runs (SRM's srm-control).",
    no_args_is_help=True,
    cls=ConventionGroup,
)


ControlSourceOption = Annotated[str, typer.Option("--source", help="Alias of the flow's source cluster.")]
ControlTargetOption = Annotated[
    str, typer.Option("--target", help="Alias of the flow's target cluster (where the changes are stored).")
]
AddOption = Annotated[list[str] | None, list_option("--add", help="Add regexes to the allow list.", split_commas=False)]
RemoveOption = Annotated[
    list[str] | None, list_option("--remove", help="Take regexes out of the allow list.", split_commas=False)
]
AddDenyOption = Annotated[
    list[str] | None, list_option("--add-deny", help="Add regexes to the deny list.", split_commas=False)
]
RemoveDenyOption = Annotated[
    list[str] | None, list_option("--remove-deny", help="Take regexes out of the deny list.", split_commas=False)
]
ListOption = Annotated[bool, typer.Option("--list", help="Also show what the lists match on the source cluster now.")]


def _control(
    kind: Literal["topics", "groups"],
    config: Path,
    source: str,
    target: str,
    add: list[str] | None,
    remove: list[str] | None,
    add_deny: list[str] | None,
    remove_deny: list[str] | None,
    list_: bool,
    json_out: bool,
    timeout_s: float | None,
) -> None:
    """Apply control changes to one kind of list of a flow and print the lists in effect."""
    from mirrorspark.client.control_store import ControlStore
    from mirrorspark.config.parse import load_config
    from mirrorspark.core.control_state import validate_regex

    changed = bool(add or remove or add_deny or remove_deny)
    options = (("--add", add), ("--remove", remove), ("--add-deny", add_deny), ("--remove-deny", remove_deny))
    for option, regexes in options:
        for regex in regexes or ():
            validate_regex(regex, option=option)  # before anything connects
    cfg = load_config(config)
    with ControlStore(cfg, source, target, timeout_s=30.0 if timeout_s is None else timeout_s) as store:
        if not store.flow_config.enabled:
            err_console.print(
                f"note: flow {store.flow_config.name} is not enabled in {config}: the lists take effect once it runs",
                highlight=False,
                markup=False,
            )
        if changed:
            store.apply(
                kind, add=add or (), remove=remove or (), add_deny=add_deny or (), remove_deny=remove_deny or ()
            )
        lists = store.lists(kind)
        matching: list[str] | None = None
        if list_:
            matching = store.matching_topics() if kind == "topics" else store.matching_groups()
        remotes = {t: store.remote_topic(t) for t in matching or ()} if kind == "topics" else {}
        topic, flow_name = store.topic, store.flow_config.name
    if json_out:
        doc: dict[str, Any] = {
            "flow": flow_name,
            "kind": kind,
            "control_topic": topic,
            "cluster": target,
            "allow": [{"regex": e.regex, "from": e.origin} for e in lists.allow],
            "deny": [{"regex": e.regex, "from": e.origin} for e in lists.deny],
            "removed": {"allow": list(lists.removed_allow), "deny": list(lists.removed_deny)},
        }
        if matching is not None:
            doc["matching"] = (
                [{"topic": t, "remote_topic": remotes[t]} for t in matching] if kind == "topics" else matching
            )
        print(json.dumps(doc, indent=2))
        return
    if changed:
        print(f"changed: {kind} lists of flow {flow_name}, stored in '{topic}' on cluster '{target}'")
    print(f"{kind} lists in effect for flow {flow_name} (config file + control changes in '{topic}' on '{target}'):")
    rows: list[list[object]] = [["allow", e.regex, e.origin] for e in lists.allow]
    rows += [["deny", e.regex, e.origin] for e in lists.deny]
    print(text_table(["list", "regex", "from"], rows), end="")
    if not lists.allow:
        print(f"(the allow list is empty: no {kind[:-1]} matches)")
    for name, removed in (("allow", lists.removed_allow), ("deny", lists.removed_deny)):
        for regex in removed:
            print(f"removed from the config file's {name} list by control: {regex}")
    if matching is not None:
        what = "topics replicated" if kind == "topics" else "groups checkpointed"
        print(f"\n{what} from '{source}' now: {len(matching)}")
        if kind == "topics":
            print(text_table(["topic", "remote topic"], [[t, remotes[t]] for t in matching]), end="")
        else:
            print(text_table(["group"], [[g] for g in matching]), end="")


@control_app.command("topics")
def control_topics(
    config: ConfigArgument,
    source: ControlSourceOption,
    target: ControlTargetOption,
    add: AddOption = None,
    remove: RemoveOption = None,
    add_deny: AddDenyOption = None,
    remove_deny: RemoveDenyOption = None,
    list_: ListOption = False,
    json_out: JsonOption = False,
    timeout: Annotated[float | None, timeout_option("30s")] = None,
) -> None:
    """Change which topics the flow SOURCE->TARGET replicates, while it runs; print the lists in effect.

    Allow list = the config file's `topics` + --add - --remove; deny list = `topics.exclude` + --add-deny -
    --remove-deny. Running flows pick changes up within refresh.topics.interval.seconds. The changes are kept in
    mm2-control.<SOURCE>.internal on TARGET.
    """
    _control("topics", config, source, target, add, remove, add_deny, remove_deny, list_, json_out, timeout)


@control_app.command("groups")
def control_groups(
    config: ConfigArgument,
    source: ControlSourceOption,
    target: ControlTargetOption,
    add: AddOption = None,
    remove: RemoveOption = None,
    add_deny: AddDenyOption = None,
    remove_deny: RemoveDenyOption = None,
    list_: ListOption = False,
    json_out: JsonOption = False,
    timeout: Annotated[float | None, timeout_option("30s")] = None,
) -> None:
    """Change which consumer groups the flow SOURCE->TARGET checkpoints, while it runs; print the lists in effect.

    Allow list = the config file's `groups` + --add - --remove; deny list = `groups.exclude` + --add-deny -
    --remove-deny. Running flows pick changes up within refresh.groups.interval.seconds. The changes are kept in
    mm2-control.<SOURCE>.internal on TARGET.
    """
    _control("groups", config, source, target, add, remove, add_deny, remove_deny, list_, json_out, timeout)


def _rate_text(rate: int) -> str:
    return f"{rate} bytes/s" if rate else "none (no limit)"


@control_app.command("throttle")
def control_throttle(
    config: ConfigArgument,
    source: ControlSourceOption,
    target: ControlTargetOption,
    rate: Annotated[
        int | None,
        typer.Option("--rate", min=0, metavar="BYTES", help="Bytes of record data per second for the flow; 0: none."),
    ] = None,
    reset: Annotated[
        bool, typer.Option("--reset", help="Go back to the config file's replication.throttled.rate.")
    ] = False,
    json_out: JsonOption = False,
    timeout: Annotated[float | None, timeout_option("30s")] = None,
) -> None:
    """Change the bandwidth limit of the flow SOURCE->TARGET while it runs; print the limit in effect.

    --rate BYTES sets the flow's replication.throttled.rate (bytes of keys, values and headers per second, over all
    its copy tasks; 0 = no limit); --reset goes back to the config file's; neither prints it. Running flows pick a
    change up within about 2 s. The change is kept in mm2-control.<SOURCE>.internal on TARGET.
    """
    from mirrorspark.client.control_store import ControlStore
    from mirrorspark.config.parse import load_config
    from mirrorspark.errors import ConfigError

    if rate is not None and reset:
        raise ConfigError("give --rate BYTES or --reset, not both")
    cfg = load_config(config)
    with ControlStore(cfg, source, target, timeout_s=30.0 if timeout is None else timeout) as store:
        if rate is not None or reset:
            limit, origin = store.set_throttle(None if reset else rate)
        else:
            limit, origin = store.throttle()
        topic, flow_name = store.topic, store.flow_config.name
        configured = store.flow_config.throttled_rate
    if json_out:
        doc = {"flow": flow_name, "rate": limit, "from": origin, "config_rate": configured, "control_topic": topic}
        print(json.dumps(doc, indent=2))
        return
    if rate is not None or reset:
        print(f"changed: throttle of flow {flow_name}, stored in '{topic}' on cluster '{target}'")
    print(f"throttle in effect for flow {flow_name}: {_rate_text(limit)} (from {origin})")
