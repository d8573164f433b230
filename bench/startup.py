"""Where a replicator's start-up seconds go: marks read from its log, in seconds after its launch (issue #26).

Both replicators stamp their log lines with the wall clock to the millisecond; the benchmark
notes the wall clock at launch (:func:`time.time`) and its own first copied record, so a mark is
``line time - launch time`` in seconds (the same machine, the same clock).

mirrorspark (``python -m mirrorspark run``; the ``mirrorspark.start-up``, lease and supervisor
loggers log at INFO without ``-v``):

* ``Spark began``: Spark's start began, on a thread of its own, once the configuration was read
  and the clusters answered (the ``Spark session`` line's time less the seconds it names; since
  issue #44 before the replication runtime is imported, so before ``config loaded``);
* ``config loaded``: Python and mirrorspark imported, the configuration read (the flows' start
  began then: the ``flows started`` line's time less the seconds it names);
* ``flows started``: the flows' clients built, topics listed, positions read, the lease groups
  joined (Spark starts meanwhile, on a thread of its own);
* ``lease held``: the flow's lease assigned (after a ``kill -9``: once the dead holder's
  session expired);
* ``Spark session``: the Spark JVM and context up;
* ``Python daemon``: Spark's Python daemon up with its first worker, started at once after the
  session (issue #44: with a local master it loads the copy task before it forks a worker, so the
  copy tasks' workers fork from it ready);
* ``tasks launched``: the copy tasks' Spark jobs submitted (the take-over read the previous
  holder's reports);
* ``Python workers``: the copy tasks' Python workers forked and warm.

MirrorMaker 2 (its JVM; ``org.apache.kafka.connect.mirror`` at INFO):

* ``JVM up``: its first log line;
* ``herders started``: ``Kafka MirrorMaker started``;
* ``task started``: the first ``MirrorSourceTask`` replicating its partitions.

Both end at ``first record``: the first record the benchmark's consumer saw on the target.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path

__all__ = ["MARKS", "median_marks", "read_marks", "startup_line"]

MARKS: Mapping[str, tuple[tuple[str, re.Pattern[str]], ...]] = {
    "mirrorspark": (
        ("flows started", re.compile(r"mirrorspark\.start-up: \d+ flow\(s\) started in (?P<took>[\d.]+) s")),
        ("lease held", re.compile(r"mirrorspark\.replication\.worker\.lease: .*: holds the lease")),
        ("Spark session", re.compile(r"mirrorspark\.start-up: Spark session started in (?P<took>[\d.]+) s")),
        (
            "tasks launched",
            re.compile(r"mirrorspark\.replication\.worker\.supervisor: .*holds the flow's lease .*copying"),
        ),
        ("Python daemon", re.compile(r"mirrorspark\.start-up: the Python workers' daemon started")),
        ("Python workers", re.compile(r"mirrorspark\.start-up: \d+ Python worker\(s\) started")),
    ),
    "mm2": (
        ("JVM up", re.compile(r"^\[\d{4}-")),
        ("herders started", re.compile(r"Kafka MirrorMaker started")),
        ("task started", re.compile(r"replicating \d+ topic-partitions")),
    ),
}
"""Per contender, ``(mark, the pattern of the log line that sets it)``; each mark takes its first matching line."""

BEGAN = {"flows started": "config loaded", "Spark session": "Spark began"}
"""The mark set by a pattern's ``took`` group: when the step that the line ends began (its line time less those s)."""

_STAMP = re.compile(r"^\[?(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3})")


def _stamp(line: str) -> float | None:
    """Return a log line's wall-clock time (s since the epoch, local time), or ``None`` without one."""
    m = _STAMP.match(line)
    if m is None:
        return None
    return datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S,%f").timestamp()


def read_marks(contender: str, log_path: Path | None, launched_at: float) -> dict[str, float]:
    """Return the start-up marks of one launch, in seconds after ``launched_at``, in the order they happened.

    Parameters
    ----------
    contender:
        ``"mirrorspark"`` or ``"mm2"`` (a key of :data:`MARKS`).
    log_path:
        The launch's own log (stdout and stderr); missing or ``None``: no marks.
    launched_at:
        Wall-clock time of the launch (:func:`time.time`, s).

    Returns
    -------
    dict[str, float]
        ``{mark: seconds after the launch}`` for each mark found (a mark before the launch, a
        line of an earlier launch in the same file, is skipped).
    """
    if log_path is None or not log_path.exists():
        return {}
    todo = list(MARKS[contender])
    out: dict[str, float] = {}
    for line in log_path.read_text(errors="replace").splitlines():
        t = _stamp(line)
        if t is None or t < launched_at - 1.0:  # the log's stamps are to the ms, truncated
            continue
        for name, pattern in todo:
            m = pattern.search(line)
            if m:
                out[name] = max(0.0, t - launched_at)
                if "took" in m.groupdict():  # the step began that many seconds before its line
                    out[BEGAN[name]] = max(0.0, t - float(m.group("took")) - launched_at)
                todo.remove((name, pattern))
                break
        if not todo:
            break
    return dict(sorted(out.items(), key=lambda kv: kv[1]))


def median_marks(runs: Sequence[Mapping[str, float]]) -> dict[str, float]:
    """Return the median of each mark over ``runs`` (marks missing from a run are left out of its median)."""
    names = list(dict.fromkeys(n for r in runs for n in r))
    out = {n: statistics.median(r[n] for r in runs if n in r) for n in names}
    return dict(sorted(out.items(), key=lambda kv: kv[1]))


def startup_line(contender: str, what: str, marks: Mapping[str, float]) -> str:
    """Return one line: ``start-up <contender> (<what>): first record 7.3 s; lease held 6.2 s, ...``.

    Parameters
    ----------
    contender, what:
        Who, and which launch (e.g. ``"launch"``, ``"relaunch after kill -9"``).
    marks:
        ``{mark: seconds after the launch}``, ``first record`` among them.
    """
    first = marks.get("first record")
    head = (
        f"start-up {contender} ({what}): first record {first:.1f} s"
        if first is not None
        else (f"start-up {contender} ({what}): no first record")
    )
    rest = ", ".join(f"{name} {s:.1f} s" for name, s in marks.items() if name != "first record")
    return f"{head}; {rest}" if rest else head
