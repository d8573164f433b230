r"""Renaming rules as written (``topic.rename.*``) and each one compiled: a pattern of literals and groups.

A rule renames the topics its ``regex`` matches whole (as Connect's ``RegexRouter``) to its ``replacement``,
whose ``$1``, ``$2``... are the pattern's groups. So that every produced name maps back to exactly one topic,
a pattern is literal characters and capture groups only (``^`` and ``$`` optional), a group holds literals,
``.``, ``\\w``, ``\\d`` and ``[...]`` classes, each optionally followed by ``*``, ``+`` or ``?``, and the
replacement uses every group exactly once, with a literal after each group the group cannot contain (so
``$1-$2`` needs a first group without ``-``). :func:`compile_rule` refuses anything else with a ConfigError
naming the rule and the fix.
"""

from __future__ import annotations

import re
import string
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Final

from mirrorspark.core.name_languages import TOPIC_CHARS, Linear, Piece, literal
from mirrorspark.errors import ConfigError

FORMAT_KEY: Final = "topic.rename.format"
RULES_KEY: Final = "topic.rename.rules"
RULES_PREFIX: Final = "topic.rename.rules."
TOPIC_PLACEHOLDER: Final = "${topic}"
_RULE_FIELDS: Final = ("regex", "replacement")
_WORD: Final = frozenset(string.ascii_letters + string.digits + "_")
_DIGITS: Final = frozenset(string.digits)
_ESCAPE_CLASSES: Final = {"w": _WORD, "d": _DIGITS}
_GRAMMAR: Final = (
    "a rule's regex is literal characters and capture groups, each group literals, '.', '\\w', '\\d' or "
    "'[...]' optionally followed by '*', '+' or '?'"
)


@dataclass(frozen=True)
class RenameRule:
    """One rule as written: ``topic.rename.rules.<name>.regex`` and ``.replacement``."""

    name: str
    regex: str
    replacement: str


@dataclass(frozen=True)
class RenamingConfig:
    """A flow's renaming: ``format`` (``topic.rename.format``, ``None`` unset) and the ``rules`` in order."""

    format: str | None = None
    rules: tuple[RenameRule, ...] = ()

    def __bool__(self) -> bool:
        return self.format is not None or bool(self.rules)


NO_RENAMING: Final = RenamingConfig()


def parse_renaming(keys: Mapping[str, str], written: Callable[[str], str] = lambda k: k) -> RenamingConfig:
    """Read ``topic.rename.format``, ``topic.rename.rules`` and ``topic.rename.rules.<name>.{regex,replacement}``.

    ``written(key)`` names a key as the file wrote it. Raises ConfigError for a listed rule without its regex or
    replacement, a rule key of an unlisted rule or an unknown rule key.
    """
    fmt = keys.get(FORMAT_KEY)
    names = [n.strip() for n in keys.get(RULES_KEY, "").split(",") if n.strip()]
    for key in keys:
        if not key.startswith(RULES_PREFIX):
            continue
        name, _, field = key[len(RULES_PREFIX) :].rpartition(".")
        if field not in _RULE_FIELDS or name not in names:
            raise ConfigError(
                f"'{written(key)}' is no renaming rule key: list the rule in '{written(RULES_KEY)}' and give it "
                f"'{RULES_PREFIX}<name>.regex' and '{RULES_PREFIX}<name>.replacement'"
            )
    rules = []
    for name in names:
        values = [keys.get(f"{RULES_PREFIX}{name}.{field}") for field in _RULE_FIELDS]
        if values[0] is None or values[1] is None:
            raise ConfigError(
                f"renaming rule '{name}' (listed in '{written(RULES_KEY)}') needs both "
                f"'{RULES_PREFIX}{name}.regex' and '{RULES_PREFIX}{name}.replacement'"
            )
        rules.append(RenameRule(name, values[0].strip(), values[1].strip()))
    if len(set(names)) != len(names):
        raise ConfigError(f"'{written(RULES_KEY)}' names a rule twice: give each rule one name")
    return RenamingConfig(None if fmt is None else fmt.strip(), tuple(rules))


Part = str | int
"""A piece of a name as rules see it: literal text, or the number of a group."""


@dataclass(frozen=True)
class CompiledRule:
    """A rule checked and compiled: the topics it reads (``domain``), the names it writes (``image``), both ways."""

    rule: RenameRule
    pattern: re.Pattern[str]
    source_parts: tuple[Part, ...]
    target_parts: tuple[Part, ...]
    inverse: re.Pattern[str]
    domain: Linear
    image: Linear

    def apply(self, topic: str) -> str | None:
        """Return the renamed ``topic``, or ``None`` if the rule does not match it."""
        m = self.pattern.fullmatch(topic)
        return None if m is None else _join(self.target_parts, m)

    def reverse(self, name: str) -> str | None:
        """Return the topic this rule alone would rename to ``name``, or ``None`` (the caller checks the order)."""
        m = self.inverse.fullmatch(name)
        return None if m is None else _join(self.source_parts, m)


def _join(parts: tuple[Part, ...], m: re.Match[str]) -> str:
    return "".join(p if isinstance(p, str) else m.group(f"g{p}") for p in parts)


def _refuse(rule: RenameRule, what: str, fix: str) -> ConfigError:
    return ConfigError(
        f"renaming rule '{rule.name}' (regex {rule.regex!r}, replacement {rule.replacement!r}): {what}; {fix}"
    )


def _class_items(rule: RenameRule, body: str, i: int) -> tuple[frozenset[str], int]:
    """Read a ``[...]`` class starting after its ``[``; return its characters and the index after ``]``."""
    negate = body.startswith("^", i)
    i += negate
    chars: set[str] = set()
    first = True
    while i < len(body) and (body[i] != "]" or first):
        first = False
        c = body[i]
        if c == "\\" and i + 1 < len(body):
            e = body[i + 1]
            chars |= _ESCAPE_CLASSES.get(e, {e})
            i += 2
            continue
        if i + 2 < len(body) and body[i + 1] == "-" and body[i + 2] != "]":
            chars |= {chr(x) for x in range(ord(c), ord(body[i + 2]) + 1)}
            i += 3
            continue
        chars.add(c)
        i += 1
    if i >= len(body):
        raise _refuse(rule, "a '[' class is not closed", "close it with ']'")
    found = frozenset(chars) & TOPIC_CHARS
    return (TOPIC_CHARS - found if negate else found), i + 1


def _group_body(rule: RenameRule, body: str) -> Linear:
    """Parse a group's body into pieces; ConfigError outside the grammar."""
    pieces: list[Piece] = []
    i = 0
    while i < len(body):
        c = body[i]
        if c == "\\" and i + 1 < len(body):
            e = body[i + 1]
            if e.isalnum() and e not in _ESCAPE_CLASSES:
                raise _refuse(rule, f"'\\{e}' is not supported", _GRAMMAR)
            chars, i = _ESCAPE_CLASSES.get(e, frozenset({e}) & TOPIC_CHARS), i + 2
        elif c == "[":
            chars, i = _class_items(rule, body, i + 1)
        elif c == ".":
            chars, i = TOPIC_CHARS, i + 1
        elif c in TOPIC_CHARS:
            chars, i = frozenset({c}), i + 1
        else:
            raise _refuse(rule, f"{c!r} in a group is not supported", _GRAMMAR + " (one rule per alternative)")
        quantifier = body[i] if i < len(body) and body[i] in "*+?" else ""
        i += bool(quantifier)
        if quantifier == "+":
            pieces.append(Piece(chars))
        pieces.append(Piece(chars, optional=bool(quantifier), many=quantifier in "*+" and bool(quantifier)))
    return tuple(pieces)


def _pattern_parts(rule: RenameRule) -> tuple[list[Part], list[Linear], list[str]]:
    """Split the regex into literals and groups: its parts, each group's pieces and each group's regex."""
    text = rule.regex.removeprefix("^")
    if text.endswith("$") and not text.endswith("\\$"):
        text = text[:-1]
    parts: list[Part] = []
    groups: list[Linear] = []
    bodies: list[str] = []
    i = 0
    while i < len(text):
        c = text[i]
        if c == "(":
            end = text.find(")", i)
            body = text[i + 1 : end]
            if end < 0 or "(" in body or body.startswith("?"):
                raise _refuse(rule, "groups must be plain, unnested capture groups", _GRAMMAR)
            groups.append(_group_body(rule, body))
            bodies.append(body)
            parts.append(len(groups))
            i = end + 1
            continue
        if c == "\\" and i + 1 < len(text) and not text[i + 1].isalnum():
            c, i = text[i + 1], i + 1
        elif c == "." or c not in TOPIC_CHARS:
            fix = "escape it as '\\.'" if c == "." else _GRAMMAR
            raise _refuse(rule, f"{c!r} outside a group is not a literal character", fix)
        if c not in TOPIC_CHARS:
            raise _refuse(rule, f"{c!r} can never be in a topic name", "remove it")
        parts.append(c)
        i += 1
    return parts, groups, bodies


def _replacement_parts(rule: RenameRule, count: int) -> list[Part]:
    """Split the replacement into literals and group numbers (Java's ``$n``: as many digits as name a group)."""
    text, i = rule.replacement, 0
    parts: list[Part] = []
    while i < len(text):
        c = text[i]
        if c == "$":
            j = i + 1
            while j < len(text) and text[j].isdigit() and int(text[i + 1 : j + 1]) <= count:
                j += 1
            if j == i + 1 or int(text[i + 1 : j]) < 1:
                raise _refuse(rule, "'$' must be followed by a group number", f"use $1 to ${max(count, 1)}")
            parts.append(int(text[i + 1 : j]))
            i = j
            continue
        if c == "\\" and i + 1 < len(text):
            c, i = text[i + 1], i + 1
        if c not in TOPIC_CHARS:
            raise _refuse(rule, f"{c!r} in the replacement can never be in a topic name", "remove it")
        parts.append(c)
        i += 1
    return parts


def _fixed(piece_list: Linear) -> str | None:
    """Return the one text a group can hold, or ``None`` if it can hold several."""
    if all(len(p.chars) == 1 and not p.optional and not p.many for p in piece_list):
        return "".join(next(iter(p.chars)) for p in piece_list)
    return None


def _check_unambiguous(rule: RenameRule, parts: list[Part], groups: list[Linear]) -> None:
    """Refuse a replacement whose names do not tell its groups apart (each variable group needs a stop)."""
    used = [p for p in parts if isinstance(p, int)]
    for n in range(1, len(groups) + 1):
        if used.count(n) != 1:
            what = "is not used" if n not in used else "is used more than once"
            raise _refuse(rule, f"group ${n} {what} in the replacement", "use every group exactly once")
    flat: list[Part] = []
    for p in parts:
        fixed = p if isinstance(p, str) else _fixed(groups[p - 1])
        if fixed is None:
            flat.append(p)
        elif fixed and flat and isinstance(flat[-1], str):
            flat[-1] += fixed
        elif fixed:
            flat.append(fixed)
    for k, p in enumerate(flat):
        if isinstance(p, str) or all(isinstance(q, str) for q in flat[k + 1 :]):
            continue
        follow = flat[k + 1]
        chars = frozenset().union(*(piece.chars for piece in groups[p - 1]))
        if not isinstance(follow, str) or follow[0] in chars:
            shown = f"'{follow[0]}'" if isinstance(follow, str) else f"${follow}"
            raise _refuse(
                rule,
                f"in the replacement ${p} is followed by {shown}, which ${p} can itself contain, so a renamed topic "
                "could come from two topics",
                f"put a literal after ${p} that its group cannot match (e.g. make the group '([^-]*)' before '-')",
            )


def _named(bodies: list[str], parts: list[Part]) -> str:
    """Return a regex of ``parts`` whose groups are named ``g<n>`` (each group's own body)."""
    return "".join(re.escape(p) if isinstance(p, str) else f"(?P<g{p}>{bodies[p - 1]})" for p in parts)


def _pieces(parts: list[Part], groups: list[Linear]) -> Linear:
    return tuple(piece for p in parts for piece in (literal(p) if isinstance(p, str) else groups[p - 1]))


def compile_rule(rule: RenameRule) -> CompiledRule:
    """Check one rule and compile it both ways; raises ConfigError naming the rule and the fix."""
    source_parts, groups, bodies = _pattern_parts(rule)
    target_parts = _replacement_parts(rule, len(groups))
    _check_unambiguous(rule, target_parts, groups)
    try:
        pattern = re.compile(_named(bodies, source_parts), re.ASCII)
        inverse = re.compile(_named(bodies, target_parts), re.ASCII)
    except re.error as e:  # pragma: no cover - the grammar above only admits valid regexes
        raise _refuse(rule, f"does not compile ({e})", _GRAMMAR) from e
    return CompiledRule(
        rule=rule,
        pattern=pattern,
        source_parts=tuple(source_parts),
        target_parts=tuple(target_parts),
        inverse=inverse,
        domain=_pieces(source_parts, groups),
        image=_pieces(target_parts, groups),
    )


__all__ = [
    "FORMAT_KEY",
    "NO_RENAMING",
    "RULES_KEY",
    "RULES_PREFIX",
    "TOPIC_PLACEHOLDER",
    "CompiledRule",
    "RenameRule",
    "RenamingConfig",
    "compile_rule",
    "parse_renaming",
]
