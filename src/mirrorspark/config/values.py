"""Conversion and validation of property values by key type (Kafka ``ConfigDef``)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Final

from mirrorspark.config.keys import ConfigKey, show
from mirrorspark.errors import BadRegexError, ConfigError

# --------------------------------------------------------------------------------------
# Value conversion
# --------------------------------------------------------------------------------------

_INT_RE = re.compile(r"[+-]?[0-9]+")
_INT_BITS: Final = {"short": 16, "int": 32, "long": 64}
_TYPE_NAMES: Final = {
    "boolean": "a boolean (true or false)",
    "short": "a 16-bit integer",
    "int": "a 32-bit integer",
    "long": "a 64-bit integer",
    "string": "a string",
    "class": "a Java class name",
    "list": "a comma-separated list",
}


def split_list(raw: str) -> tuple[str, ...]:
    """Kafka's LIST parsing: trim, empty = no items, else split on commas and trim every item."""
    trimmed = raw.strip()
    if not trimmed:
        return ()
    return tuple(item.strip() for item in trimmed.split(","))


def _invalid(src: str, written: str, raw: str, expected: str) -> ConfigError:
    return ConfigError(
        f"{src}: invalid value {show(written, raw.strip())} for '{written}': expected {expected}; "
        f"fix '{written}' or remove it to use the default"
    )


def _to_bool(ck: ConfigKey, raw: str, written: str, src: str) -> bool:
    value = raw.strip().lower()
    if value not in ("true", "false"):
        raise _invalid(src, written, raw, _TYPE_NAMES["boolean"])
    return value == "true"


def _to_int(ck: ConfigKey, raw: str, written: str, src: str) -> int:
    value = raw.strip()
    bits = _INT_BITS[ck.type]
    low, high = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
    expected = _TYPE_NAMES[ck.type]
    if ck.minimum is not None:
        expected += f" >= {ck.minimum}" + (" other than 0" if ck.nonzero else "")
    elif ck.nonzero:
        expected += " other than 0"
    if ck.unit:
        expected += f" ({ck.unit})"
    if ck.nonzero and ck.minimum == -1:
        expected += ", -1 = broker default"
    if not _INT_RE.fullmatch(value):
        raise _invalid(src, written, raw, expected)
    number = int(value)
    if not low <= number <= high or (ck.minimum is not None and number < ck.minimum) or (ck.nonzero and number == 0):
        raise _invalid(src, written, raw, expected)
    return number


def _to_str(ck: ConfigKey, raw: str, written: str, src: str) -> str:
    value = raw.strip()
    reason = dict(ck.removed_choices).get(value)
    if reason is not None:
        raise ConfigError(
            f"{src}: {show(written, value)} for '{written}' was removed from mirrorspark: {reason}; "
            f"delete '{written}' or set it to " + " or ".join(ck.choices)
        )
    if ck.choices and value not in ck.choices:
        raise _invalid(src, written, raw, "one of " + ", ".join(ck.choices))
    if ck.type == "class" and not value:
        raise _invalid(src, written, raw, _TYPE_NAMES["class"])
    return value


def _to_list(ck: ConfigKey, raw: str, written: str, src: str) -> tuple[str, ...]:
    items = split_list(raw)
    if ck.regex:
        _check_regexes(items, written, src)
    return items


def _check_regexes(items: Sequence[str], written: str, src: str) -> None:
    """Compile each item, then the ``|``-joined whole (as the filters will), with ``re.ASCII``."""
    for item in items:
        try:
            re.compile(item, re.ASCII)
        except re.error as e:
            raise BadRegexError(
                f"{src}: '{written}' holds the pattern {item!r}, which is not a valid regular "
                f"expression ({e}); fix or escape it (items are comma-separated regexes, each matched "
                "against the whole name)"
            ) from e
    if items:
        try:
            re.compile("|".join(items), re.ASCII)
        except re.error as e:
            raise BadRegexError(
                f"{src}: '{written}' holds patterns {list(items)!r} that do not compile once joined "
                f"with '|' ({e}); inline flags such as (?i) must start the first item, or use a scoped "
                "group such as (?i:abc)"
            ) from e


def validate(ck: ConfigKey, raw: str, written: str, src: str) -> None:
    """Raise :class:`ConfigError` if ``raw`` is not a valid value of ``ck``."""
    if ck.type == "boolean":
        _to_bool(ck, raw, written, src)
    elif ck.type in _INT_BITS:
        _to_int(ck, raw, written, src)
    elif ck.type == "list":
        _to_list(ck, raw, written, src)
    else:
        _to_str(ck, raw, written, src)


def to_value(ck: ConfigKey, raw: str, written: str, src: str) -> bool | int | float | str | tuple[str, ...]:
    """``raw`` converted to the Python type of ``ck`` (what fills :attr:`ConfigKey.field`; seconds as ``float``).

    Raises ConfigError (BadRegexError for a regex list) on an invalid value.
    """
    if ck.type == "boolean":
        return _to_bool(ck, raw, written, src)
    if ck.type in _INT_BITS:
        number = _to_int(ck, raw, written, src)
        return float(number) if ck.unit == "s" else number
    if ck.type == "list":
        return _to_list(ck, raw, written, src)
    return _to_str(ck, raw, written, src)
