"""The verify history topic's records: one :class:`VerifyRun` per run of one flow (no I/O).

Every ``mirrorspark verify`` run (``trigger`` ``"command"``) and every continuous sample of ``run``
(``"sampling"``) appends one record per flow to the compacted topic ``mm2-verify.<source>.internal`` on the
flow's target, as ``mirrorspark drill`` does to ``mm2-drills.<source>.internal``. Invariants (named by
``tests/unit/test_verify_history.py``):

- H1 the key is ``{"flow", "at"}`` (one key per run: compaction keeps every run; a tombstone deletes one).
- H2 the value is version :data:`RECORD_VERSION`: the run's metadata and its report's
  :meth:`~mirrorspark.core.verify.report.VerifyReport.to_json`, each partition's findings capped at
  :data:`FINDINGS_KEPT` (the rest counted by kind, report V5), so a record stays far below a broker's limit.
- H3 :func:`decode_verify_run` inverts :func:`encode_verify_run` and raises
  :class:`~mirrorspark.errors.CorruptRecordError` naming what is wrong, never another error.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Final, Literal

from mirrorspark.core.verify.report import VerifyReport, capped, report_from_json
from mirrorspark.errors import CorruptRecordError

VERIFY_PREFIX: Final = "mm2-verify"
"""Prefix of a flow's verify history topic, ``mm2-verify.<source>.internal`` on the target."""

RECORD_VERSION: Final = 1
"""Version of the records this module writes (``"v"``)."""

FINDINGS_KEPT: Final = 100
"""Most findings a history record lists per partition (H2); the rest are counted by kind."""

Trigger = Literal["command", "sampling"]
"""Who ran the verification: ``mirrorspark verify``, or ``run``'s continuous sampling."""

_TRIGGERS: Final = ("command", "sampling")


@dataclass(frozen=True, slots=True)
class VerifyRun:
    """One verification of one flow: when (``at`` epoch ms), how long (ms), over what, and its report.

    ``since_ms`` (epoch ms) or ``last`` (records per partition) is the window asked for, both ``None`` for
    everything the flow's copied segments know; ``topics`` the ``--topics`` regex, ``None`` for every
    replicated topic. ``report`` holds only this flow's partitions.
    """

    flow: str
    source: str
    target: str
    at: int
    trigger: Trigger
    duration_ms: int
    report: VerifyReport
    since_ms: int | None = None
    last: int | None = None
    topics: str | None = None

    @property
    def verified(self) -> int:
        """Records verified equal, all partitions."""
        return sum(p.counts.verified for p in self.report.partitions)

    @property
    def divergent(self) -> int:
        """Findings, all partitions and kinds."""
        return sum(p.divergent for p in self.report.partitions)


def encode_verify_run(run: VerifyRun) -> tuple[bytes, bytes]:
    """Return the key (H1) and value (H2) of a verify history record."""
    report = VerifyReport(run.report.at_ms, tuple(capped(p, FINDINGS_KEPT) for p in run.report.partitions))
    value = {
        "v": RECORD_VERSION,
        "flow": run.flow,
        "source": run.source,
        "target": run.target,
        "at": run.at,
        "trigger": run.trigger,
        "duration_ms": run.duration_ms,
        "since_ms": run.since_ms,
        "last": run.last,
        "topics": run.topics,
        "report": report.to_json(),
    }
    return _dumps({"flow": run.flow, "at": run.at}), _dumps(value)


def _dumps(obj: object) -> bytes:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()


def _loads(data: bytes | None, what: str) -> dict[str, Any]:
    try:
        obj = json.loads(data or b"")
    except (ValueError, UnicodeDecodeError, RecursionError) as e:
        raise CorruptRecordError(f"verify history record: the {what} is not JSON: {type(e).__name__}") from e
    if not isinstance(obj, dict):
        raise CorruptRecordError(f"verify history record: the {what} must be a JSON object")
    return obj


def _req(obj: dict[str, Any], name: str, kinds: tuple[type, ...], *, optional: bool = False) -> Any:
    v = obj.get(name)
    if v is None and optional:
        return None
    if (isinstance(v, bool) and bool not in kinds) or not isinstance(v, kinds):
        raise CorruptRecordError(f"verify history record: {name} must be {' or '.join(k.__name__ for k in kinds)}")
    return v


def decode_verify_key(key: bytes | None) -> tuple[str, int]:
    """Decode a record's key: ``(flow, at)``; a tombstone names by it the run it deletes (H1, H3)."""
    k = _loads(key, "key")
    return _req(k, "flow", (str,)), _req(k, "at", (int,))


def decode_verify_run(key: bytes | None, value: bytes | None) -> VerifyRun:
    """Decode a verify history record (H3); raises CorruptRecordError naming the bad field."""
    _loads(key, "key")
    v = _loads(value, "value")
    if v.get("v") != RECORD_VERSION:
        raise CorruptRecordError(
            f"verify history record: unknown version {v.get('v')!r} (this reader knows {RECORD_VERSION})"
        )
    trigger = _req(v, "trigger", (str,))
    if trigger not in _TRIGGERS:
        raise CorruptRecordError(f"verify history record: trigger must be one of {_TRIGGERS}, got {trigger!r}")
    try:
        report = report_from_json(_req(v, "report", (dict,)))
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise CorruptRecordError(f"verify history record: the report is malformed ({type(e).__name__}: {e})") from e
    return VerifyRun(
        flow=_req(v, "flow", (str,)),
        source=_req(v, "source", (str,)),
        target=_req(v, "target", (str,)),
        at=_req(v, "at", (int,)),
        trigger=trigger,
        duration_ms=_req(v, "duration_ms", (int,)),
        report=report,
        since_ms=_req(v, "since_ms", (int,), optional=True),
        last=_req(v, "last", (int,), optional=True),
        topics=_req(v, "topics", (str,), optional=True),
    )


__all__ = [
    "FINDINGS_KEPT",
    "RECORD_VERSION",
    "VERIFY_PREFIX",
    "Trigger",
    "VerifyRun",
    "decode_verify_key",
    "decode_verify_run",
    "encode_verify_run",
]
