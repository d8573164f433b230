"""Topic config sync as pure data: what to change on a remote topic (MM2 ``MirrorSourceConnector.syncTopicConfigs``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol


class ConfigEntry(Protocol):
    """What the sync rule needs of one topic config entry (a describe-configs result)."""

    @property
    def value(self) -> str | None:
        """The entry's value (``None`` when the broker hides it, e.g. a sensitive one)."""
        ...

    @property
    def is_default(self) -> bool:
        """Whether the entry is at its default (not set on the topic)."""
        ...


class ConfigPropertyRule(Protocol):
    """What the sync rule needs of a ``ConfigPropertyFilter`` (``DefaultConfigPropertyFilter``)."""

    def should_replicate_config_property(self, name: str) -> bool:
        """Return whether config ``name`` is copied at all (``config.properties.exclude``)."""
        ...

    def should_replicate_source_default(self, name: str) -> bool:
        """Return whether a source entry at its default is copied as a value (``use.defaults.from=source``)."""
        ...


def topic_config_changes(
    source: Mapping[str, ConfigEntry], target: Mapping[str, ConfigEntry], rule: ConfigPropertyRule
) -> dict[str, str | None]:
    """Return ``{name: new value, or None to delete the override}`` aligning a remote topic's configs (KIP-894).

    As MM2's ``MirrorSourceConnector.targetConfig``: a set source entry that differs is SET; one at its default
    DELETEs the target's override (``use.defaults.from=target``) or SETs the source's default (``source``).
    """
    delta: dict[str, str | None] = {}
    for name, entry in source.items():
        if not rule.should_replicate_config_property(name):
            continue
        current = target.get(name)
        if entry.is_default and not rule.should_replicate_source_default(name):
            if current is not None and not current.is_default:
                delta[name] = None
        elif current is None or current.value != entry.value:
            delta[name] = entry.value
    return delta


__all__ = ["ConfigEntry", "ConfigPropertyRule", "topic_config_changes"]
