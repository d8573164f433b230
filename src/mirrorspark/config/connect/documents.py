"""YAML and JSON documents read with the line of every mapping key (for messages naming ``file:line``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from mirrorspark.errors import ConfigError


class LineDict(dict[str, Any]):
    """A mapping read from YAML, with the 1-based line of each key in :attr:`lines` (empty for JSON read as JSON)."""

    lines: dict[str, int]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lines = {}


class _LineLoader(yaml.SafeLoader):
    """PyYAML's safe loader building :class:`LineDict` mappings."""


def _construct_mapping(loader: _LineLoader, node: yaml.MappingNode) -> LineDict:
    loader.flatten_mapping(node)
    out = LineDict()
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        out[str(key)] = loader.construct_object(value_node, deep=True)
        out.lines[str(key)] = key_node.start_mark.line + 1
    return out


_LineLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def read_text(path: Path) -> str:
    """Read the file's text (UTF-8).

    Raises ConfigError (the file cannot be read or is not UTF-8; the message names the path).
    """
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        reason = e.strerror if isinstance(e, OSError) and e.strerror else type(e).__name__
        raise ConfigError(f"cannot read config file '{path}' ({reason}); check the path and its permissions") from e


def load_documents(text: str, name: str) -> list[Any] | None:
    """Read the documents of a YAML file (``---`` separated) or a JSON file, mappings as :class:`LineDict`."""
    try:
        docs = [d for d in yaml.load_all(text, Loader=_LineLoader) if d is not None]
    except yaml.YAMLError:
        try:
            doc = json.loads(text)  # JSON that PyYAML (YAML 1.1) refuses, e.g. with tab indentation
        except ValueError:
            return None
        return [_line_dicts(doc)]
    return docs


def _line_dicts(value: Any) -> Any:
    """JSON values with every dict a :class:`LineDict` (without lines)."""
    if isinstance(value, dict):
        return LineDict({str(k): _line_dicts(v) for k, v in value.items()})
    if isinstance(value, list):
        return [_line_dicts(v) for v in value]
    return value


def line_of(mapping: Any, key: str) -> int | None:
    """Return the line of ``key`` in ``mapping`` when it was read from YAML, else ``None``."""
    return mapping.lines.get(key) if isinstance(mapping, LineDict) else None


__all__ = ["LineDict", "line_of", "load_documents", "read_text"]
