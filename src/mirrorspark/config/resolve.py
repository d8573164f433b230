"""``${env:...}``, ``${file:...}`` and ``${directory:...}`` placeholders (Kafka's config providers)."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Final

from mirrorspark.config.properties import parse_properties
from mirrorspark.config.values import split_list
from mirrorspark.errors import ConfigError

# --------------------------------------------------------------------------------------
# ${provider:path:key} placeholders (Kafka's ConfigTransformer)
# --------------------------------------------------------------------------------------

_PLACEHOLDER = re.compile(r"\$\{([^}]*?):(?:([^}]*?):)?([^}]*?)\}")
_PROVIDER_KINDS: Final = {
    "FileConfigProvider": "file",
    "EnvVarConfigProvider": "env",
    "DirectoryConfigProvider": "directory",
}


class Resolver:
    """Resolves ``${env:NAME}``, ``${file:PATH:KEY}`` and ``${directory:DIR:FILE}`` in values."""

    def __init__(self, props: Mapping[str, str], env: Mapping[str, str], src: str, warn: Callable[[str], None]) -> None:
        self._env = env
        self._src = src
        self._warn = warn
        self._files: dict[str, dict[str, str]] = {}
        self._kinds = {"env": "env", "file": "file", "directory": "directory"}
        for name in split_list(props.get("config.providers", "")):
            cls = props.get(f"config.providers.{name}.class", "").strip()
            kind = _PROVIDER_KINDS.get(cls.rsplit(".", 1)[-1])
            if kind is not None:
                self._kinds[name] = kind
            else:
                self._kinds.pop(name, None)

    def resolve(self, key: str, value: str) -> str:
        """``value`` with every placeholder of a known provider replaced."""
        if "${" not in value:
            return value
        return _PLACEHOLDER.sub(lambda m: self._one(key, m), value)

    def _fail(self, key: str, placeholder: str, problem: str) -> ConfigError:
        return ConfigError(f"{self._src}: cannot resolve {placeholder} in '{key}': {problem}")

    def _one(self, key: str, m: re.Match[str]) -> str:
        placeholder = m.group(0)
        provider, path, name = m.group(1), m.group(2), m.group(3)
        kind = self._kinds.get(provider)
        if kind == "env":
            if path:
                raise self._fail(key, placeholder, "environment placeholders take no path; write ${env:NAME}")
            if name not in self._env:
                raise self._fail(
                    key,
                    placeholder,
                    f"environment variable '{name}' is not set; export it or set the value directly",
                )
            return self._env[name]
        if kind == "file":
            if not path:
                raise self._fail(key, placeholder, "write ${file:/path/to/file.properties:key}")
            props = self._read_properties(key, placeholder, path)
            if name not in props:
                raise self._fail(key, placeholder, f"file '{path}' has no key '{name}'; add it or fix the placeholder")
            return props[name]
        if kind == "directory":
            if not path:
                raise self._fail(key, placeholder, "write ${directory:/path/to/dir:file}")
            return self._read_text(key, placeholder, os.path.join(path, name))
        self._warn(
            f"'{key}' uses {placeholder} of config provider '{provider}', which mirrorspark cannot resolve "
            "(only env, file and directory providers); the value is used as written"
        )
        return placeholder

    def _read_text(self, key: str, placeholder: str, path: str) -> str:
        try:
            return Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as e:
            reason = e.strerror if isinstance(e, OSError) and e.strerror else type(e).__name__
            raise self._fail(
                key,
                placeholder,
                f"file '{path}' cannot be read ({reason}); check the path and its permissions",
            ) from e

    def _read_properties(self, key: str, placeholder: str, path: str) -> dict[str, str]:
        if path not in self._files:
            text = self._read_text(key, placeholder, path)
            try:
                self._files[path] = parse_properties(text)
            except ConfigError as e:
                raise self._fail(key, placeholder, f"file '{path}': {e.message}") from e
        return self._files[path]
