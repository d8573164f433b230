"""Sets of topic names as small automata, decided exactly: what renaming rules read and produce.

A Kafka topic name uses 65 characters (``[a-zA-Z0-9._-]``), so every set here is a regular language over that
finite alphabet and emptiness, intersection, union, complement and concatenation are decided exactly by walking
subset states breadth first (:func:`witness` returns a shortest name in a set, or ``None``). The sets renaming
needs are *linear*: a sequence of :class:`Piece` (one character of a class, optionally repeated), as the
restricted patterns of :mod:`mirrorspark.core.rename_rules` are.
"""

from __future__ import annotations

import string
from collections import deque
from collections.abc import Hashable, Iterable
from dataclasses import dataclass
from typing import Final

TOPIC_CHARS: Final = frozenset(string.ascii_letters + string.digits + "._-")
"""The characters a Kafka topic name may hold (``Topic.LEGAL_CHARS``)."""

_MAX_STATES: Final = 200_000


@dataclass(frozen=True)
class Piece:
    """One character from ``chars`` (``optional``: or none); ``many``: any number of them (``X*``)."""

    chars: frozenset[str]
    optional: bool = False
    many: bool = False


Linear = tuple[Piece, ...]
"""A sequence of pieces: ``orders\\.(.*)`` is seven one-character pieces then ``.`` repeated."""


def literal(text: str) -> Linear:
    """Return the set holding ``text`` alone (characters outside :data:`TOPIC_CHARS` make it empty)."""
    return tuple(Piece(frozenset({c}) & TOPIC_CHARS) for c in text)


def anything() -> Linear:
    """Every topic name, the empty one included."""
    return (Piece(TOPIC_CHARS, optional=True, many=True),)


class Lang:
    """A set of names as a deterministic automaton over subset states (subclasses give the four methods)."""

    def next(self, state: Hashable, char: str) -> Hashable:
        """:meth:`step`, remembered (a set's states recur across the products it is part of)."""
        memo: dict[tuple[Hashable, str], Hashable] = self.__dict__.setdefault("_memo", {})
        key = (state, char)
        found = memo.get(key)
        if found is None:
            found = memo[key] = self.step(state, char)
        return found

    def start(self) -> Hashable:
        """Return the state before any character."""
        raise NotImplementedError

    def step(self, state: Hashable, char: str) -> Hashable:
        """Return the state after reading ``char``."""
        raise NotImplementedError

    def accepts(self, state: Hashable) -> bool:
        """Whether a name ending in ``state`` is in the set."""
        raise NotImplementedError

    def classes(self) -> Iterable[frozenset[str]]:
        """Character classes the automaton tells apart (characters in the same ones behave alike)."""
        raise NotImplementedError


class Seq(Lang):
    """The names a :data:`Linear` matches."""

    def __init__(self, pieces: Linear) -> None:
        self.pieces = pieces

    def _close(self, positions: Iterable[int]) -> frozenset[int]:
        out: set[int] = set()
        for pos in positions:
            while pos not in out:
                out.add(pos)
                if pos == len(self.pieces) or not self.pieces[pos].optional:
                    break
                pos += 1
        return frozenset(out)

    def start(self) -> frozenset[int]:
        """Position 0 and the optional pieces after it."""
        return self._close([0])

    def step(self, state: Hashable, char: str) -> frozenset[int]:
        """Positions after reading ``char``."""
        assert isinstance(state, frozenset)
        nxt = [
            pos if self.pieces[pos].many else pos + 1
            for pos in state
            if pos < len(self.pieces) and char in self.pieces[pos].chars
        ]
        return self._close(nxt)

    def accepts(self, state: Hashable) -> bool:
        """Whether the whole sequence was read."""
        assert isinstance(state, frozenset)
        return len(self.pieces) in state

    def classes(self) -> Iterable[frozenset[str]]:
        """Return the pieces' character classes."""
        return (p.chars for p in self.pieces)


class Union(Lang):
    """Names in any of ``parts``."""

    def __init__(self, *parts: Lang) -> None:
        self.parts = parts

    def start(self) -> tuple[Hashable, ...]:
        """Every part's start."""
        return tuple(p.start() for p in self.parts)

    def step(self, state: Hashable, char: str) -> tuple[Hashable, ...]:
        """Every part steps."""
        assert isinstance(state, tuple)
        return tuple(p.next(s, char) for p, s in zip(self.parts, state, strict=True))

    def accepts(self, state: Hashable) -> bool:
        """Whether any part accepts."""
        assert isinstance(state, tuple)
        return any(p.accepts(s) for p, s in zip(self.parts, state, strict=True))

    def classes(self) -> Iterable[frozenset[str]]:
        """Every part's classes."""
        return [c for p in self.parts for c in p.classes()]


class Inter(Union):
    """Names in every one of ``parts``."""

    def accepts(self, state: Hashable) -> bool:
        """Whether every part accepts."""
        assert isinstance(state, tuple)
        return all(p.accepts(s) for p, s in zip(self.parts, state, strict=True))


class Not(Lang):
    """Topic names not in ``inner``."""

    def __init__(self, inner: Lang) -> None:
        self.inner = inner

    def start(self) -> Hashable:
        """Return the inner start."""
        return self.inner.start()

    def step(self, state: Hashable, char: str) -> Hashable:
        """Return the inner step."""
        return self.inner.next(state, char)

    def accepts(self, state: Hashable) -> bool:
        """Whether the inner set does not accept."""
        return not self.inner.accepts(state)

    def classes(self) -> Iterable[frozenset[str]]:
        """Return the inner classes."""
        return self.inner.classes()


class Concat(Lang):
    """Names ``a + b`` with ``a`` in ``first`` and ``b`` in ``second``."""

    def __init__(self, first: Lang, second: Lang) -> None:
        self.first = first
        self.second = second

    def _with_second(self, first: Hashable, seconds: Iterable[Hashable]) -> tuple[Hashable, frozenset[Hashable]]:
        started = set(seconds)
        if self.first.accepts(first):
            started.add(self.second.start())
        return (first, frozenset(started))

    def start(self) -> Hashable:
        """Return the first set's start, the second's too if the first holds the empty name."""
        return self._with_second(self.first.start(), ())

    def step(self, state: Hashable, char: str) -> Hashable:
        """Both step; the second starts again wherever the first accepts."""
        assert isinstance(state, tuple)
        first, seconds = state
        return self._with_second(self.first.next(first, char), (self.second.next(s, char) for s in seconds))

    def accepts(self, state: Hashable) -> bool:
        """Whether a started second set accepts."""
        assert isinstance(state, tuple)
        return any(self.second.accepts(s) for s in state[1])

    def classes(self) -> Iterable[frozenset[str]]:
        """Both sets' classes."""
        return [*self.first.classes(), *self.second.classes()]


def _representatives(lang: Lang) -> list[str]:
    """One character per group of :data:`TOPIC_CHARS` that ``lang``'s classes cannot tell apart."""
    classes = list({c for c in lang.classes()})
    seen: dict[tuple[bool, ...], str] = {}
    for char in sorted(TOPIC_CHARS):
        seen.setdefault(tuple(char in c for c in classes), char)
    return list(seen.values())


def witness(lang: Lang) -> str | None:
    """Return a shortest name in ``lang``, or ``None`` if it is empty (exact; breadth first over its states).

    Raises RuntimeError past 200 000 states (no set renaming builds comes near).
    """
    chars = _representatives(lang)
    start = lang.start()
    back: dict[Hashable, tuple[Hashable, str] | None] = {start: None}
    queue = deque([start])
    while queue:
        state = queue.popleft()
        if lang.accepts(state):
            out: list[str] = []
            link = back[state]
            while link is not None:
                state, char = link
                out.append(char)
                link = back[state]
            return "".join(reversed(out))
        for char in chars:
            nxt = lang.next(state, char)
            if nxt not in back:
                if len(back) > _MAX_STATES:
                    raise RuntimeError("name set too large to decide")
                back[nxt] = (state, char)
                queue.append(nxt)
    return None


__all__ = [
    "TOPIC_CHARS",
    "Concat",
    "Inter",
    "Lang",
    "Linear",
    "Not",
    "Piece",
    "Seq",
    "Union",
    "anything",
    "literal",
    "witness",
]
