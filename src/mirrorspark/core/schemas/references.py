"""The order in which schemas are registered on the target: every reference before the schema naming it.

A schema version (subject, version) may reference others (Avro named types, Protobuf imports, JSON ``$ref``);
the target registry refuses a reference to a schema it does not hold, so referenced versions go first. The
versions of one subject also go in ascending order, so that the target numbers them as the source did. The
result is deterministic: among the versions ready at each step, the smallest (subject, version) goes first.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Collection, Mapping
from typing import NamedTuple

from mirrorspark.errors import SchemaReferenceCycleError


class SubjectVersion(NamedTuple):
    """One version of one subject of a registry (versions count from 1)."""

    subject: str
    version: int


def _edges(
    references: Mapping[SubjectVersion, Collection[SubjectVersion]],
) -> dict[SubjectVersion, set[SubjectVersion]]:
    """Return each version's prerequisites: what it references and its subject's previous version."""
    needs: dict[SubjectVersion, set[SubjectVersion]] = {}
    for version, referenced in references.items():
        needs.setdefault(version, set()).update(r for r in referenced if r != version)
        for r in referenced:
            needs.setdefault(r, set())
    by_subject: dict[str, list[SubjectVersion]] = {}
    for version in needs:
        by_subject.setdefault(version.subject, []).append(version)
    for versions in by_subject.values():
        versions.sort()
        for earlier, later in itertools.pairwise(versions):
            needs[later].add(earlier)
    return needs


def registration_order(references: Mapping[SubjectVersion, Collection[SubjectVersion]]) -> list[SubjectVersion]:
    """Return every version named in ``references`` (keys and referenced ones) in an order to register them.

    ``references`` maps a version to the versions it references (a version with none may map to ``()``). A
    version referencing itself is not a cycle.

    Raises
    ------
    SchemaReferenceCycleError
        Some versions reference each other in a cycle; the message names them.
    """
    needs = _edges(references)
    waiting = {v: len(n) for v, n in needs.items()}
    users: dict[SubjectVersion, list[SubjectVersion]] = {v: [] for v in needs}
    for version, prerequisites in needs.items():
        for p in prerequisites:
            users[p].append(version)
    ready = [v for v, n in waiting.items() if n == 0]
    heapq.heapify(ready)
    order: list[SubjectVersion] = []
    while ready:
        version = heapq.heappop(ready)
        order.append(version)
        for user in users[version]:
            waiting[user] -= 1
            if waiting[user] == 0:
                heapq.heappush(ready, user)
    if len(order) < len(needs):
        stuck = {v for v, n in waiting.items() if n > 0}
        raise cycle_error(_a_cycle(stuck, needs), len(stuck))
    return order


def _a_cycle(stuck: set[SubjectVersion], needs: Mapping[SubjectVersion, set[SubjectVersion]]) -> list[SubjectVersion]:
    """Return one cycle among the ``stuck`` versions, each needing the next (every stuck version needs a stuck one)."""
    path: list[SubjectVersion] = []
    seen: dict[SubjectVersion, int] = {}
    version = min(stuck)
    while version not in seen:
        seen[version] = len(path)
        path.append(version)
        version = min(needs[version] & stuck)
    return path[seen[version] :]


def cycle_error(cycle: list[SubjectVersion], stuck: int) -> SchemaReferenceCycleError:
    """Build the error of ``stuck`` versions that cannot be registered, ``cycle`` among them (each needing the next)."""
    names = " -> ".join(f"{v.subject} version {v.version}" for v in [*cycle, cycle[0]])
    return SchemaReferenceCycleError(
        f"schemas of the source registry need each other in a cycle ({names}; a version needs what it references "
        f"and its subject's previous version), so {stuck} versions cannot be registered on the target; a "
        "registry accepts references only to schemas it holds, so check these versions' references on the "
        "source registry (GET /subjects/<subject>/versions/<version>)"
    )


__all__ = ["SubjectVersion", "cycle_error", "registration_order"]
