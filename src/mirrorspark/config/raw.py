"""A config file's properties resolved and sorted by where they apply: top level, cluster ``<alias>.``, flow ``S->T.``.

The first step of :func:`~mirrorspark.config.parse.parse_config`: placeholders resolved, the aliases of
``clusters`` checked, each key filed under the top level, its cluster or its flow. Nothing is typed
yet; the warnings of the whole parse are collected here.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from mirrorspark.config.resolve import Resolver
from mirrorspark.config.values import split_list
from mirrorspark.errors import ConfigError, UnknownAliasError

_log = logging.getLogger("mirrorspark.config.parse")  # the warnings are the parse's

_ALIAS_BAD = re.compile(r"[\s.,]|->")


_QUOTED = re.compile(r"'([^'\n]*)'")


@dataclass(frozen=True)
class KeyOrigins:
    """How the keys of a file converted from connector configs are named in messages."""

    names: Mapping[str, str] = field(default_factory=dict)
    flows: frozenset[str] = frozenset()

    def describe(self, message: str) -> str:
        """``message`` with every quoted converted key named by its origin (unchanged without origins)."""
        if not self.names and not self.flows:
            return message
        return _QUOTED.sub(self._one, message)

    def _one(self, m: re.Match[str]) -> str:
        key = m.group(1)
        if key in self.names:
            return self.names[key]
        prefix = next((f for f in self.flows if key.startswith(f)), None)
        return m.group(0) if prefix is None else f"'{key[len(prefix) :]}'"


class RawConfig:
    """The properties of one config file, placeholders resolved, sorted by where they apply.

    Raises ConfigError (``clusters`` is missing, empty or holds a bad or repeated alias; a flow key names ``S->S``; a
    placeholder cannot be resolved); UnknownAliasError (a flow key names an alias not in ``clusters``).
    """

    def __init__(
        self,
        props: Mapping[str, str],
        env: Mapping[str, str],
        src: str,
        lines: Mapping[str, int] | None = None,
        *,
        origins: KeyOrigins | None = None,
        notes: Sequence[str] = (),
    ) -> None:
        self.src = src
        self.lines = {k.strip(): n for k, n in (lines or {}).items()}
        self.origins = origins or KeyOrigins()
        self._warnings: dict[str, None] = {}
        for note in notes:
            self.warn(note)
        resolver = Resolver(props, env, src, self.warn)
        self.props = {k.strip(): resolver.resolve(k, v) for k, v in props.items()}
        self.aliases = self._aliases()
        self.top_all: dict[str, str] = {}  # every non-flow key (MM2 filters top-level keys by name)
        self.top: dict[str, str] = {}  # non-flow keys not starting with '<alias>.'
        self.cluster_raw: dict[str, dict[str, str]] = {a: {} for a in self.aliases}
        self.flow_raw: dict[tuple[str, str], dict[str, str]] = {}
        self._classify()

    def warn(self, message: str) -> None:
        """Record a warning (once per distinct message) and log it at WARNING, naming the file."""
        message = self.origins.describe(message)
        if message not in self._warnings:
            self._warnings[message] = None
            _log.warning("%s: %s", self.src, message)

    def where(self, key: str) -> str:
        """``"<src>:<line>"`` of ``key`` as written, or ``src`` when its line is unknown."""
        line = self.lines.get(key)
        return self.src if line is None else f"{self.src}:{line}"

    @property
    def warnings(self) -> tuple[str, ...]:
        """The warnings recorded so far, in order, each once."""
        return tuple(self._warnings)

    def _aliases(self) -> tuple[str, ...]:
        if "clusters" not in self.props:
            raise ConfigError(
                f"{self.src}: no 'clusters' key: list the cluster aliases, "
                "e.g. 'clusters = primary, backup', and give each a '<alias>.bootstrap.servers'"
            )
        aliases = split_list(self.props["clusters"])
        if not aliases:
            raise ConfigError(
                f"{self.src}: 'clusters' is empty: list the cluster aliases, e.g. 'clusters = primary, backup'"
            )
        seen: set[str] = set()
        for alias in aliases:
            if not alias or _ALIAS_BAD.search(alias):
                raise ConfigError(
                    f"{self.src}: 'clusters' holds the alias {alias!r}: aliases must be non-empty and "
                    "contain no '.', ',', '->' or whitespace (e.g. 'us-west', 'dc_1'); rename it"
                )
            if alias in seen:
                raise ConfigError(f"{self.src}: 'clusters' lists the alias {alias!r} twice; list each cluster once")
            seen.add(alias)
        return aliases

    def _flow_of(self, key: str) -> tuple[str, str] | None:
        """``(S, T)`` if ``key`` is a flow key ``S->T.<k>``; ``None`` if it is not flow-shaped."""
        head, dot, _ = key.partition(".")
        if "->" not in head or not dot:
            return None
        for m in re.finditer("->", head):
            s, t = head[: m.start()], head[m.end() :]
            if s in self.cluster_raw and t in self.cluster_raw:
                if s == t:
                    raise ConfigError(
                        f"{self.src}: '{key}' names the flow {head}, but a flow's source and target "
                        "must differ; remove the key"
                    )
                return s, t
        s, _, t = head.partition("->")
        unknown = [a for a in (s, t) if a not in self.cluster_raw] or [head]
        raise UnknownAliasError(
            f"{self.src}: '{key}' names cluster alias {unknown[0]!r}, which is not in 'clusters' "
            f"(known: {', '.join(self.aliases)}); add it to 'clusters' or fix the key"
        )

    def _classify(self) -> None:
        for key, value in self.props.items():
            pair = self._flow_of(key)
            if pair is not None:
                self.flow_raw.setdefault(pair, {})[key.partition(".")[2]] = value
                continue
            self.top_all[key] = value
            head, dot, rest = key.partition(".")
            if dot and head in self.cluster_raw:
                self.cluster_raw[head][rest] = value
            else:
                self.top[key] = value


def strip_prefix(props: Mapping[str, str], prefix: str) -> dict[str, str]:
    """Keys starting with ``prefix``, prefix removed (Kafka's ``originalsWithPrefix``)."""
    n = len(prefix)
    return {k[n:]: v for k, v in props.items() if k.startswith(prefix) and len(k) > n}


__all__ = ["KeyOrigins", "RawConfig", "strip_prefix"]
