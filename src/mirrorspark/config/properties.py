"""Java ``.properties`` syntax."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Final

from mirrorspark.errors import ConfigError

# --------------------------------------------------------------------------------------
# Java .properties syntax
# --------------------------------------------------------------------------------------

_NATURAL_LINE = re.compile(r"\r\n|\r|\n")
_PROPS_WS: Final = " \t\f"
_ESCAPES: Final = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}
_HEX4 = re.compile(r"[0-9a-fA-F]{4}")


def parse_properties(text: str) -> dict[str, str]:
    r"""Parse Java ``.properties`` text, as ``java.util.Properties.load`` does.

    Raises ConfigError on a malformed ``\uXXXX`` escape; the message gives the line number, never the line.
    """
    return parse_properties_with_lines(text)[0]


def parse_properties_with_lines(text: str) -> tuple[dict[str, str], dict[str, int]]:
    r"""Parse Java ``.properties`` text as :func:`parse_properties`, keeping the line of each key.

    Raises ConfigError (as :func:`parse_properties`).
    """
    lines = _NATURAL_LINE.split(text)
    if lines and lines[0].startswith("\ufeff"):
        lines[0] = lines[0][1:]
    out: dict[str, str] = {}
    where: dict[str, int] = {}
    i = 0
    while i < len(lines):
        lineno = i + 1
        logical = lines[i].lstrip(_PROPS_WS)
        i += 1
        if not logical or logical[0] in "#!":
            continue
        while _continues(logical):
            logical = logical[:-1]
            if i >= len(lines):
                break
            logical += lines[i].lstrip(_PROPS_WS)
            i += 1
        key, value = _split_key_value(logical)
        name = _unescape(key, lineno)
        out[name] = _unescape(value, lineno)
        where[name] = lineno
    return out, where


def _continues(line: str) -> bool:
    """Whether ``line`` ends with an odd number of backslashes (a line continuation)."""
    n = len(line) - len(line.rstrip("\\"))
    return n % 2 == 1


def _split_key_value(line: str) -> tuple[str, str]:
    """Split a logical line into its still-escaped key and value (``Properties.load`` rules)."""
    key_end = len(line)
    value_start = len(line)
    has_sep = False
    backslash = False
    for pos, c in enumerate(line):
        if c in "=:" and not backslash:
            key_end, value_start, has_sep = pos, pos + 1, True
            break
        if c in _PROPS_WS and not backslash:
            key_end, value_start = pos, pos + 1
            break
        backslash = (not backslash) if c == "\\" else False
    while value_start < len(line):
        c = line[value_start]
        if c not in _PROPS_WS:
            if not has_sep and c in "=:":
                has_sep = True
            else:
                break
        value_start += 1
    return line[:key_end], line[value_start:]


def _unescape(s: str, lineno: int) -> str:
    """Decode the escapes of a key or value (``Properties.loadConvert``)."""
    if "\\" not in s:
        return s
    out: list[str] = []
    j = 0
    while j < len(s):
        c = s[j]
        j += 1
        if c != "\\":
            out.append(c)
            continue
        if j >= len(s):
            break
        c = s[j]
        j += 1
        if c == "u":
            digits = s[j : j + 4]
            if not _HEX4.fullmatch(digits):
                raise ConfigError(
                    f"line {lineno}: malformed \\uXXXX escape (a \\u must be followed by 4 hex digits); "
                    "fix the escape or write the character itself"
                )
            out.append(chr(int(digits, 16)))
            j += 4
        else:
            out.append(_ESCAPES.get(c, c))
    result = "".join(out)
    if any("\ud800" <= ch <= "\udfff" for ch in result):  # join UTF-16 surrogate pairs as Java strings do
        result = result.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")
    return result


def escape_properties(text: str, *, key: bool) -> str:
    """``text`` escaped for Java's ``Properties.load``."""
    out = []
    for i, ch in enumerate(text):
        if ch in PROPERTIES_ESCAPES:
            out.append(PROPERTIES_ESCAPES[ch])
        elif (key and ch in "=: ") or (i == 0 and ch in " #!"):
            out.append("\\" + ch)
        else:
            out.append(ch)
    return "".join(out)


PROPERTIES_ESCAPES: Final = {"\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def format_properties(props: Mapping[str, str], *, header: str = "", separator: str = "=") -> str:
    """Properties as Java ``.properties`` text, in the given order (the inverse of :func:`parse_properties`)."""
    lines = [header] if header else []
    lines.extend(
        f"{escape_properties(k, key=True)}{separator}{escape_properties(v, key=False)}" for k, v in props.items()
    )
    return "\n".join(lines) + "\n"


__all__ = ["escape_properties", "format_properties", "parse_properties", "parse_properties_with_lines"]
