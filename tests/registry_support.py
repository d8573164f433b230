"""Real Schema Registries for tests: Apicurio Registry (Confluent's API, in-memory) on Java 21+.

Fixtures, imported by ``tests/integration/conftest.py`` (a conftest elsewhere imports them the same way); every
registry starts only when a test asks for one, on free loopback ports, so each xdist worker has its own:

``schema_registries`` (session)
    Two running registries for the session, one per cluster of ``local_clusters``: a :class:`RegistryPair`,
    ``source_url, target_url = schema_registries`` (``primary``'s and ``backup``'s ``schema.registry.url``), and
    ``schema_registries.mm2_properties()`` the two ``<alias>.schema.registry.url`` keys. Shared by the worker's
    tests: each test uses its own subjects (named after its topics, :func:`helpers.unique_name`); ids grow.
``start_registry`` (function)
    A factory for fresh, empty registries (ids from 1) that stop when the test ends:
    ``start_registry("source", "target")`` returns ``{name: LocalSchemaRegistry}`` (``.url``, ``.pid``,
    ``.log_path``), started together (5 to 25 s on 2 cores).
``registry_factory`` (session)
    What both are built on (:class:`RegistryFactory`): registries started by it stop at the end of the session.
"""

from __future__ import annotations

import atexit
import itertools
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import NamedTuple

import pytest

from mirrorspark.kafka.local.model import LocalSchemaRegistry
from mirrorspark.kafka.local.registry import start_registries, stop_registries


class RegistryPair(NamedTuple):
    """The session's two registries: ``source_url`` for ``primary``, ``target_url`` for ``backup``."""

    source_url: str
    target_url: str

    def mm2_properties(self, source: str = "primary", target: str = "backup") -> dict[str, str]:
        """Return the two ``<alias>.schema.registry.url`` keys (for ``LocalClusters.mm2_properties(extra=)``)."""
        return {f"{source}.schema.registry.url": self.source_url, f"{target}.schema.registry.url": self.target_url}


class RegistryFactory:
    """Starts registries under one directory (logs there) and stops them all in :meth:`close`."""

    def __init__(self, base_dir: Path) -> None:
        self.base_dir = base_dir
        self.running: list[LocalSchemaRegistry] = []
        self._numbers = itertools.count()

    def start(self, *names: str) -> dict[str, LocalSchemaRegistry]:
        """Start one registry per name (default one, ``"registry"``), all at once; return them once they answer."""
        started = start_registries(names or ("registry",), base_dir=self.base_dir / f"set-{next(self._numbers)}")
        self.running.extend(started.values())
        return started

    def stop(self, registries: Iterable[LocalSchemaRegistry]) -> None:
        """Stop some of the registries started here (``SIGTERM``, well under a second)."""
        chosen = list(registries)
        stop_registries(chosen)
        self.running = [r for r in self.running if r not in chosen]

    def close(self) -> None:
        """Stop every registry still running (idempotent)."""
        self.stop(list(self.running))


@pytest.fixture(scope="session")
def registry_factory(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RegistryFactory]:
    """Start Schema Registries on demand; all stop at the end of the session."""
    factory = RegistryFactory(tmp_path_factory.mktemp("schema-registries"))
    # Safety net if the session dies before the teardown runs (close is idempotent).
    atexit.register(factory.close)
    try:
        yield factory
    finally:
        factory.close()
        atexit.unregister(factory.close)


@pytest.fixture(scope="session")
def schema_registries(registry_factory: RegistryFactory) -> RegistryPair:
    """Two running Schema Registries for the session: ``(source_url, target_url)``, for ``primary`` and ``backup``."""
    started = registry_factory.start("primary", "backup")
    return RegistryPair(started["primary"].url, started["backup"].url)


@pytest.fixture
def start_registry(registry_factory: RegistryFactory) -> Iterator[Callable[..., dict[str, LocalSchemaRegistry]]]:
    """A factory of fresh registries for one test: ``start_registry(*names) -> {name: registry}``, stopped after it."""
    mine: list[LocalSchemaRegistry] = []

    def start(*names: str) -> dict[str, LocalSchemaRegistry]:
        started = registry_factory.start(*names)
        mine.extend(started.values())
        return started

    yield start
    registry_factory.stop(mine)
