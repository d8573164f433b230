"""The fault suite's figures: what each scenario survived, written where ``docs/faults.md`` is made from.

Every scenario of ``tests/faults/`` ends by calling :func:`record` once per mode with exact counts
(records carry unique ids, so loss and duplicates are counted, never estimated). The figures go
to one JSON line each in ``build/faults/figures-<size>.jsonl`` (``size`` is ``small`` under
``make test`` and ``full`` under ``make faults``; ``MIRRORSPARK_FAULTS_FIGURES`` names another
file). ``python tests/faults/report.py`` renders a file of figures as the Markdown table of
``docs/faults.md``.
"""

from __future__ import annotations

import json
import os
import platform
import time
from dataclasses import asdict, dataclass
from pathlib import Path

__all__ = ["FaultFigures", "figures_path", "full_size", "record"]

ROOT = Path(__file__).resolve().parents[2]


def full_size() -> bool:
    """Whether the suite runs at full size (``MIRRORSPARK_FAULTS_SIZE=full``, set by ``make faults``)."""
    return os.environ.get("MIRRORSPARK_FAULTS_SIZE", "small") == "full"


def figures_path() -> Path:
    """The JSON-lines file this run's figures are appended to."""
    override = os.environ.get("MIRRORSPARK_FAULTS_FIGURES")
    if override:
        return Path(override)
    return ROOT / "build" / "faults" / f"figures-{'full' if full_size() else 'small'}.jsonl"


@dataclass(frozen=True)
class FaultFigures:
    """What one scenario in one mode survived.

    Attributes
    ----------
    scenario:
        Short name of the fault, e.g. ``"kill -9 of the whole run, 4 times"``.
    mode:
        ``"at-least-once"`` or ``"exactly-once"``.
    produced:
        Records produced to the source (each with a unique id), records.
    lost:
        Produced records never seen on the target, records (must be 0).
    duplicated:
        Extra copies seen on the target, records: by a ``read_committed`` consumer in exactly-once
        mode (must be 0), by a ``read_uncommitted`` one in at-least-once mode.
    resume_s:
        Seconds from the end of the fault (kill, resume, reconnection) until the target grows
        again; ``None`` where the scenario has no such moment.
    bound:
        The duplicate bound the scenario asserts, in words (e.g. ``"<= 1 flush interval"``).
    notes:
        Anything a reader needs to read the row.
    mm2:
        Apache Kafka's MirrorMaker 2 under the same faults in the same test, in a few words (lost,
        copied twice, resume); empty where the scenario does not run it.
    """

    scenario: str
    mode: str
    produced: int
    lost: int
    duplicated: int
    resume_s: float | None
    bound: str = ""
    notes: str = ""
    mm2: str = ""


def machine() -> str:
    """The machine the figures were made on, in a few words: CPUs, memory, system, Python."""
    import psutil

    memory_gib = psutil.virtual_memory().total / 2**30
    return (
        f"{os.cpu_count()} CPUs, {memory_gib:.0f} GiB, {platform.system()} {platform.release()}, "
        f"Python {platform.python_version()}"
    )


def record(figures: FaultFigures) -> None:
    """Append ``figures`` as one JSON line (with the size, the time and the machine) to :func:`figures_path`."""
    path = figures_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    line = {
        **asdict(figures),
        "size": "full" if full_size() else "small",
        "at": time.strftime("%Y-%m-%dT%H:%M:%S"),
        "machine": machine(),
    }
    with path.open("a", encoding="utf-8") as f:
        f.write(json.dumps(line) + "\n")
