"""Replica placement of a cluster's existing topics: plan, apply with a throttle, status, finish.

Confluent's ``confluent-rebalancer execute --replica-placement-only --throttle N``, ``status`` and
``finish``, on Apache Kafka's reassignment: **plan** computes moves for the partitions out of their
placement only (:func:`~mirrorspark.core.placement_rules.plan_moves`); **apply** runs Kafka's
``ReassignPartitionsCommand --execute --throttle N`` from the ``kafka`` jars (confluent-kafka has no
``AlterPartitionReassignments``); **status** lists the moves and throttles in force; **finish** deletes
the throttle configs (the broker rates only when no reassignment at all is in progress, as ``--verify``)
and elects preferred leaders. Credentials reach the JVM through a 0600 ``--command-config`` file in a
private temporary directory, never on a command line.
"""

from __future__ import annotations

import json
import logging
import os
import re
import subprocess
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal

from mirrorspark.client.context import ReplicationContext
from mirrorspark.config.model import ClusterConfig, MirrorConfig
from mirrorspark.config.properties import format_properties
from mirrorspark.core.placement_rules import (
    Move,
    Ongoing,
    Placement,
    PlacementRules,
    parse_placement_rules,
    parse_reassignment_list,
    plan_moves,
    reassignment_json,
    repair,
    violations,
)
from mirrorspark.errors import ClusterError, ConfigError, PlacementError
from mirrorspark.kafka.admin import ClusterAdmin, ConfigTarget
from mirrorspark.kafka.jars import classpath, java_executable

log = logging.getLogger(__name__)

REASSIGN_TOOL: Final = "org.apache.kafka.tools.reassign.ReassignPartitionsCommand"
"""Kafka's reassignment tool (``kafka-reassign-partitions.sh``), run from the ``kafka`` jars."""

BROKER_THROTTLES: Final = (
    "leader.replication.throttled.rate",
    "follower.replication.throttled.rate",
    "replica.alter.log.dirs.io.max.bytes.per.second",
)
"""Broker configs the reassignment tool sets for ``--throttle`` (bytes/s), deleted by :meth:`PlacementTool.finish`."""

TOPIC_THROTTLES: Final = ("leader.replication.throttled.replicas", "follower.replication.throttled.replicas")
"""Topic configs the reassignment tool sets for ``--throttle`` (``partition:broker,...``)."""

MIN_THROTTLE: Final = 1024
"""Smallest replication throttle accepted, in bytes/s."""

PartitionState = Literal["done", "in progress", "pending"]
"""``done``: satisfies its placement, not moving; ``in progress``: being reassigned;
``pending``: does not satisfy it and is not moving (``placement apply`` would move it)."""


def load_placement_file(path: str | os.PathLike[str]) -> PlacementRules:
    """Read a placement file (one placement, or a list of ``{"topics": REGEX, "placement": {...}}``).

    Raises ConfigError when the file cannot be read, PlacementError (naming the file) when its content is refused.
    """
    name = os.fspath(path)
    try:
        text = Path(name).read_text(encoding="utf-8")
    except OSError as e:
        raise ConfigError(
            f"cannot read the placement file '{name}' ({e.strerror or type(e).__name__}); check the path"
        ) from e
    try:
        return parse_placement_rules(text)
    except PlacementError as e:
        raise PlacementError(f"{name}: {e.message}") from e


@dataclass(frozen=True)
class PlacementPlan:
    """What ``placement plan`` found: ``brokers`` ``{id: rack or None}``, the ``moves`` needed.

    ``in_progress``: partitions already being reassigned (left out of ``moves``).
    """

    cluster: str
    brokers: Mapping[int, str | None]
    topics: tuple[str, ...]
    partitions: int
    moves: tuple[Move, ...]
    in_progress: tuple[tuple[str, int], ...] = ()

    def to_json(self) -> dict[str, Any]:
        """Return the plan as a JSON document (``--json``), with Kafka's reassignment JSON under ``reassignment``."""
        return {
            "cluster": self.cluster,
            "brokers": {str(b): r for b, r in sorted(self.brokers.items())},
            "topics": list(self.topics),
            "partitions": self.partitions,
            "moves": [
                {
                    "topic": m.topic,
                    "partition": m.partition,
                    "replicas": list(m.current),
                    "target": list(m.target),
                    "adding": list(m.adding),
                    "removing": list(m.removing),
                    "reasons": list(m.reasons),
                }
                for m in self.moves
            ],
            "in_progress": [{"topic": t, "partition": p} for t, p in self.in_progress],
            "reassignment": reassignment_json(self.moves),
        }


@dataclass(frozen=True)
class PartitionPlacement:
    """One partition in ``placement status``: its ``replicas`` now (old and new in a move), ``target`` once placed."""

    topic: str
    partition: int
    replicas: tuple[int, ...]
    target: tuple[int, ...]
    adding: tuple[int, ...]
    removing: tuple[int, ...]
    state: PartitionState


@dataclass(frozen=True)
class PlacementStatus:
    """What ``placement status`` reports; ``throttles`` is ``{"broker 0": {name: value}, "topic t": {...}}``."""

    cluster: str
    partitions: tuple[PartitionPlacement, ...]
    throttles: Mapping[str, Mapping[str, str]] = field(default_factory=dict)

    def count(self, state: PartitionState) -> int:
        """How many partitions are in ``state``."""
        return sum(1 for p in self.partitions if p.state == state)


@dataclass(frozen=True)
class FinishResult:
    """What ``placement finish`` did; ``done`` is False (nothing changed) while a placed topic's partition still moves.

    ``removed`` is ``{"broker 0": [names], "topic t": [names]}``; ``kept_broker_throttles`` says the broker
    rates were kept for other reassignments in progress.
    """

    done: bool
    in_progress: tuple[tuple[str, int], ...]
    removed: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    kept_broker_throttles: bool = False
    elected: tuple[tuple[str, int], ...] = ()


def _label(target: ConfigTarget) -> str:
    return f"{target[0]} {target[1]}"


class PlacementTool:
    """Replica placement of one cluster's existing topics (``mirrorspark placement``).

    ``topics`` narrows to whole-name regex matches (Kafka's ``__*`` topics are never moved); ``timeout_s``
    bounds each admin call and each run of Kafka's tool, in seconds (``None`` = ``admin.timeout.ms``).
    Raises UnknownAliasError for an unknown ``cluster``, BadRegexError for a bad ``topics``. A context
    manager; not thread-safe.
    """

    def __init__(
        self,
        config: MirrorConfig,
        cluster: str,
        rules: PlacementRules,
        *,
        topics: str | None = None,
        timeout_s: float | None = None,
    ) -> None:
        from mirrorspark.errors import BadRegexError

        self.cluster: ClusterConfig = config.cluster(cluster)
        self.alias = cluster
        self.rules = rules
        try:
            self._topics = re.compile(topics) if topics else None
        except re.error as e:
            raise BadRegexError(f"--topics {topics!r} is not a valid regular expression ({e}); fix it") from e
        admin = ReplicationContext(config).cluster_admin(
            cluster, "placement-admin", client_id=f"mirrorspark-placement|{cluster}|admin"
        )
        self._admin: ClusterAdmin = admin if timeout_s is None else admin.with_timeout(timeout_s, setting="--timeout")
        self.timeout_s = self._admin.timeout_s
        self._admin.check_reachable(timeout_s=min(self.timeout_s, 30.0))

    def __enter__(self) -> PlacementTool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Release the admin client (librdkafka closes it when the last reference goes)."""
        self.__dict__.pop("_admin", None)

    # ------------------------------------------------------------------ reading

    def placements(self) -> dict[str, Placement]:
        """Return ``{topic: placement}`` of the cluster's topics that a rule (and ``--topics``) selects."""
        out: dict[str, Placement] = {}
        for topic in sorted(self._admin.list_topics()):
            if topic.startswith("__") or (self._topics is not None and not self._topics.fullmatch(topic)):
                continue
            placement = self.rules.for_topic(topic)
            if placement is not None:
                out[topic] = placement
        return out

    def brokers(self) -> dict[int, str | None]:
        """Return ``{broker id: broker.rack or None}`` of the cluster."""
        return self._admin.broker_racks()

    def ongoing(self) -> dict[tuple[str, int], Ongoing]:
        """Return every reassignment in progress on the cluster (the tool's ``--list``)."""
        return parse_reassignment_list(self._tool(["--list"]))

    def plan(self) -> PlacementPlan:
        """Compute the moves of the partitions out of placement; raises PlacementError when a rack lacks brokers."""
        placements = self.placements()
        brokers = self.brokers()
        # reassignments first: one that ends before the describe is then seen done, never half-way
        ongoing = self.ongoing() if placements else {}
        described = self._admin.describe_topics(placements)
        moving = tuple(sorted(k for k in ongoing if k[0] in described))
        skip = set(moving)
        current = {t: d.replicas for t, d in described.items()}
        moves = [
            m
            for m in plan_moves(current, {t: placements[t] for t in described}, brokers, cluster=self.alias)
            if (m.topic, m.partition) not in skip
        ]
        return PlacementPlan(
            cluster=self.alias,
            brokers=brokers,
            topics=tuple(sorted(described)),
            partitions=sum(len(d.replicas) for d in described.values()),
            moves=tuple(moves),
            in_progress=moving,
        )

    # ------------------------------------------------------------------ acting

    def apply(self, plan: PlacementPlan, *, throttle: int | None) -> str:
        """Start the plan's reassignments with Kafka's tool; return the rollback JSON (``""`` when nothing moved).

        ``throttle`` in bytes/s (>= :data:`MIN_THROTTLE`, else ConfigError) on the moving replicas only; ``None``
        = unthrottled. Raises ClusterError when the tool fails.
        """
        if throttle is not None and throttle < MIN_THROTTLE:
            raise ConfigError(f"--throttle {throttle}: the replication throttle must be at least {MIN_THROTTLE} B/s")
        if not plan.moves:
            return ""
        with self._private_dir() as tmp:
            path = tmp / "reassignment.json"
            path.write_text(json.dumps(reassignment_json(plan.moves)), encoding="utf-8")
            args = ["--reassignment-json-file", str(path), "--execute"]
            if throttle is not None:
                args += ["--throttle", str(throttle)]
            out = self._tool(args, tmp=tmp)
        log.info("placement of %s: started %d reassignment(s)", self.alias, len(plan.moves))
        rollback = next((line for line in out.splitlines() if line.startswith('{"version"')), "")
        return rollback

    def status(self) -> PlacementStatus:
        """Report every partition of the placed topics and the throttles in force."""
        placements = self.placements()
        brokers = self.brokers()
        # reassignments first (as in plan): a move that ends before the describe shows as ended
        ongoing = self.ongoing() if placements else {}
        described = self._admin.describe_topics(placements)
        load: dict[int, int] = {}
        for d in described.values():
            for replicas in d.replicas:
                for b in replicas:
                    load[b] = load.get(b, 0) + 1
        rows: list[PartitionPlacement] = []
        for topic in sorted(described):
            placement = placements[topic]
            for p, replicas in enumerate(described[topic].replicas):
                move = ongoing.get((topic, p))
                if move is not None and tuple(replicas) != move.target:
                    rows.append(
                        PartitionPlacement(
                            topic, p, move.replicas, move.target, move.adding, move.removing, "in progress"
                        )
                    )
                elif violations(placement, replicas, brokers):
                    target = repair(placement, replicas, brokers, load)
                    rows.append(PartitionPlacement(topic, p, tuple(replicas), target, (), (), "pending"))
                else:
                    rows.append(PartitionPlacement(topic, p, tuple(replicas), tuple(replicas), (), (), "done"))
        return PlacementStatus(self.alias, tuple(rows), self.throttles(described))

    def throttles(self, topics: Sequence[str] | Mapping[str, Any]) -> dict[str, dict[str, str]]:
        """Return the throttle configs set, ``{"broker <id>" or "topic <name>": {config: value}}``, only where set."""
        resources: list[ConfigTarget] = [("broker", str(b)) for b in sorted(self.brokers())]
        resources += [("topic", t) for t in sorted(topics)]
        found = self._admin.dynamic_configs(resources, BROKER_THROTTLES + TOPIC_THROTTLES)
        return {_label(k): v for k, v in found.items() if v}

    def finish(self, *, wait_s: float = 0.0, poll_s: float = 2.0) -> FinishResult:
        """Remove the throttles and elect preferred leaders once the placed topics' moves are done.

        Waits up to ``wait_s`` seconds, polling every ``poll_s``; ``done=False`` (nothing changed) while a
        partition still moves.
        """
        placements = self.placements()
        deadline = time.monotonic() + wait_s
        while True:
            ongoing = self.ongoing()
            ours = tuple(sorted(k for k in ongoing if k[0] in placements))
            if not ours or time.monotonic() + poll_s > deadline:
                break
            time.sleep(poll_s)
        if ours:
            return FinishResult(done=False, in_progress=ours)
        set_now = self.throttles(placements)
        others_moving = bool(ongoing)
        removed: dict[ConfigTarget, tuple[str, ...]] = {}
        for label, entries in set_now.items():
            kind, _, name = label.partition(" ")
            if kind == "broker" and others_moving:
                continue
            removed[(kind, name)] = tuple(sorted(entries))
        self._admin.delete_dynamic_configs(removed)
        elected = self._elect_preferred(placements)
        return FinishResult(
            done=True,
            in_progress=(),
            removed={_label(k): v for k, v in removed.items()},
            kept_broker_throttles=others_moving and any(k.startswith("broker ") for k in set_now),
            elected=elected,
        )

    # ------------------------------------------------------------------ helpers

    def _elect_preferred(self, placements: Mapping[str, Placement]) -> tuple[tuple[str, int], ...]:
        """Run a preferred leader election on the placed topics' partitions; return those whose leader moved."""
        described = self._admin.describe_topics(placements)
        parts = [(t, p) for t, d in sorted(described.items()) for p in range(len(d.replicas))]
        if not parts:
            return ()
        elected: list[tuple[str, int]] = []
        for (topic, partition), error in sorted(self._admin.elect_leaders("preferred", parts).items()):
            if error is None:
                elected.append((topic, partition))
            elif error != "ELECTION_NOT_NEEDED":
                log.warning("preferred leader election of %s-%d failed: %s", topic, partition, error)
        return tuple(elected)

    @contextmanager
    def _private_dir(self) -> Iterator[Path]:
        """Yield a temporary directory only this user can read (mode 0700), removed afterwards."""
        with tempfile.TemporaryDirectory(prefix="mirrorspark-placement-") as tmp:
            os.chmod(tmp, 0o700)
            yield Path(tmp)

    def _tool(self, args: list[str], *, tmp: Path | None = None) -> str:
        """Run Kafka's reassignment tool (settings in a 0600 ``--command-config``); return its stdout.

        Raises ClusterError (its ``Error:`` line quoted) on failure or timeout, LocalClusterError when ``java``
        or the jars are missing.
        """
        if tmp is None:
            with self._private_dir() as own:
                return self._tool(args, tmp=own)
        props = {k: v for k, v in self.cluster.admin.properties.items() if k != "bootstrap.servers"}
        conf = tmp / "admin.properties"
        fd = os.open(conf, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(format_properties(props))
        cmd = [
            java_executable(),
            "-Xmx256m",
            "-XX:+UseSerialGC",
            "-XX:TieredStopAtLevel=1",
            "-cp",
            classpath("kafka"),
            REASSIGN_TOOL,
            "--bootstrap-server",
            self.cluster.bootstrap_servers,
            "--command-config",
            str(conf),
            *args,
        ]
        what = f"Kafka's reassignment tool ({' '.join(a for a in args if a.startswith('--'))})"
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=self.timeout_s, check=False)
        except subprocess.TimeoutExpired as e:
            raise ClusterError(
                f"{what} on cluster '{self.alias}' did not finish within {self.timeout_s:.0f} s: check that the "
                "cluster is up, or raise --timeout",
                retriable=True,
            ) from e
        if done.returncode != 0:
            lines = [ln for ln in (done.stdout + "\n" + done.stderr).splitlines() if ln.strip()]
            why = next((ln for ln in lines if ln.startswith("Error")), lines[-1] if lines else "no output")
            raise ClusterError(f"{what} on cluster '{self.alias}' failed (exit {done.returncode}): {why}")
        return done.stdout


__all__ = [
    "BROKER_THROTTLES",
    "MIN_THROTTLE",
    "REASSIGN_TOOL",
    "TOPIC_THROTTLES",
    "FinishResult",
    "PartitionPlacement",
    "PartitionState",
    "PlacementPlan",
    "PlacementStatus",
    "PlacementTool",
    "load_placement_file",
]
