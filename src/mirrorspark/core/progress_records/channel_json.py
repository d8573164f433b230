"""The progress channel's JSON: a record's kind from its key, compact writing, checked reading of fields."""

from __future__ import annotations

import json
from typing import Any

from mirrorspark.errors import CorruptRecordError


def record_kind(key: bytes | None) -> str:
    """Tell a progress-channel record's kind from its key: ``"report"``, ``"flow"``, ``"lag"``, ``"group"``, other.

    The driver's kinds are ``"flow"``, ``"lag"``, ``"group"``, ``"group-sync"``, ``"failover"`` and ``"schemas"``.

    A key without ``"kind"`` (every version-1 record) is a partition report; a key that is not a
    JSON object is ``"unknown"``. Readers skip kinds they do not know.
    """
    try:
        k = json.loads(key or b"")
    except (ValueError, UnicodeDecodeError, RecursionError):
        return "unknown"
    if not isinstance(k, dict):
        return "unknown"
    kind = k.get("kind", "report")
    return kind if isinstance(kind, str) else "unknown"


def dumps(obj: object) -> bytes:
    """Write ``obj`` as compact UTF-8 JSON."""
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()


def nonneg_int(v: Any) -> bool:
    """Tell whether ``v`` is an integer >= 0 (a JSON ``true`` is not)."""
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def int_field(v: Any, what: str, *, optional: bool = False) -> Any:
    """Return ``v`` if it is an integer >= 0 (or ``None`` and ``optional``), else raise :class:`CorruptRecordError`."""
    if v is None and optional:
        return None
    if not nonneg_int(v):
        raise CorruptRecordError(f"progress channel record: {what} must be an integer >= 0")
    return v


def str_field(v: Any, what: str, *, optional: bool = False) -> Any:
    """Return ``v`` if it is a string (or ``None`` and ``optional``), else raise :class:`CorruptRecordError`."""
    if v is None and optional:
        return None
    if not isinstance(v, str):
        raise CorruptRecordError(f"progress channel record: {what} must be a string")
    return v


def objects(v: dict[str, Any], field: str) -> list[dict[str, Any]]:
    """``v[field]`` as a list of JSON objects; :class:`CorruptRecordError` if it is anything else."""
    raw = v.get(field)
    if not isinstance(raw, list) or not all(isinstance(x, dict) for x in raw):
        raise CorruptRecordError(f"progress channel record: {field} must be a list of objects")
    return raw


def load(key: bytes | None, value: bytes | None) -> tuple[dict[str, Any], dict[str, Any]]:
    """Read a record's key and value, both JSON objects; else raise :class:`CorruptRecordError`."""
    try:
        k = json.loads(key or b"")
        v = json.loads(value or b"")
    except (ValueError, UnicodeDecodeError, RecursionError) as e:
        raise CorruptRecordError(f"progress channel record is not JSON: {type(e).__name__}") from e
    if not isinstance(k, dict) or not isinstance(v, dict):
        raise CorruptRecordError("progress channel record: key and value must be JSON objects")
    return k, v


__all__ = ["dumps", "int_field", "load", "nonneg_int", "objects", "record_kind", "str_field"]
