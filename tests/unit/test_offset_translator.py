"""The shared offset translator's pure parts: failback translation, group offsets, and its layer."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from mirrorspark.mm2.checkpoint_rules import GroupOffset, is_failback, translate_group_offset
from mirrorspark.mm2.offset_syncs import CopiedSegment
from mirrorspark.mm2.policy import DefaultReplicationPolicy
from mirrorspark.mm2.records import Checkpoint, OffsetSync
from mirrorspark.mm2.sync_store import OffsetSyncStore
from mirrorspark.mm2.translation import CopiedRanges, Translation, translate_back

pytestmark = pytest.mark.unit

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "mirrorspark"
POLICY = DefaultReplicationPolicy()


def _store(*syncs: tuple[str, int, int], initialized: bool = True) -> OffsetSyncStore:
    store = OffsetSyncStore(read_to_end_required=False)
    for topic, upstream, downstream in syncs:
        store.update(OffsetSync(topic, 0, upstream, downstream))
    if initialized:
        store.mark_initialized()
    return store


# --------------------------------------------------------------------------- translate_back (failback)


def test_translate_back_through_syncs_counts_the_rereads_after_the_newest_sync_at_or_before() -> None:
    store = _store(("t1", 100, 200), ("t1", 150, 260))
    assert translate_back(store, None, "t1", 0, 200) == Translation(200, 100, 0, False)
    assert translate_back(store, None, "t1", 0, 250) == Translation(250, 101, 49, False)
    assert translate_back(store, None, "t1", 0, 260) == Translation(260, 150, 0, False)
    assert translate_back(store, None, "t1", 0, 261) == Translation(261, 151, 0, False)
    assert translate_back(store, None, "t1", 0, 300) == Translation(300, 151, 39, False)


def test_translate_back_without_a_usable_sync_is_none() -> None:
    assert translate_back(_store(("t1", 100, 200)), None, "t1", 0, 199) is None  # every sync is later
    assert translate_back(_store(("t1", 100, 200), initialized=False), None, "t1", 0, 250) is None
    assert translate_back(_store(("t1", 100, 200)), None, "other", 0, 250) is None
    assert translate_back(None, None, "t1", 0, 250) is None


def test_translate_back_prefers_exact_copied_ranges_and_falls_back_to_syncs() -> None:
    copied = CopiedRanges()
    copied.add("t1", 0, [CopiedSegment(100, 500, 50)])
    store = _store(("t1", 10, 400))
    assert translate_back(store, copied, "t1", 0, 520) == Translation(520, 120, 0, True)
    assert translate_back(store, copied, "t1", 0, 450) == Translation(450, 11, 49, False)  # before the ranges
    assert translate_back(None, copied, "t1", 0, 450) is None


@pytest.mark.parametrize("every", [1, 7, 10])
def test_translate_back_never_skips_and_its_rereads_are_exact_without_gaps(every: int) -> None:
    shift = 500  # upstream offset u on T landed at u + shift on S
    store = _store(*(("t1", u, u + shift) for u in range(0, 200, every)))
    for position in range(shift, shift + 220):
        t = translate_back(store, None, "t1", 0, position)
        assert t is not None
        true_position = position - shift
        assert t.downstream_offset <= true_position, "a consumer on T would skip records"
        assert t.rereads == true_position - t.downstream_offset


# --------------------------------------------------------------------------- translate_group_offset


def test_forward_translation_follows_mm2s_rule_and_renames_the_topic() -> None:
    syncs = _store(("t1", 100, 200))
    go = translate_group_offset(POLICY, "primary", "backup", "g", "t1", 0, 150, "m", syncs=syncs)
    assert go == GroupOffset("g", "t1", 0, 150, Checkpoint("g", "primary.t1", 0, 150, 201, "m"), 49)
    exact = CopiedRanges()
    exact.add("t1", 0, [CopiedSegment(100, 200, 100)])
    go = translate_group_offset(POLICY, "primary", "backup", "g", "t1", 0, 150, syncs=syncs, copied=exact)
    assert go == GroupOffset("g", "t1", 0, 150, Checkpoint("g", "primary.t1", 0, 150, 250, ""), 0)


def test_forward_translation_that_is_impossible_has_no_checkpoint() -> None:
    syncs = _store(("t1", 100, 200))
    too_old = translate_group_offset(POLICY, "primary", "backup", "g", "t1", 0, 50, syncs=syncs)
    assert too_old == GroupOffset("g", "t1", 0, 50, None, -1)
    unread = translate_group_offset(POLICY, "primary", "backup", "g", "t1", 0, 150, syncs=None)
    assert unread == GroupOffset("g", "t1", 0, 150, None, -1)


def test_failback_translates_in_reverse_under_the_original_name() -> None:
    # flow backup->primary copied t1 to primary as backup.t1; a group on primary consumes backup.t1
    reverse = _store(("t1", 100, 200))
    forward = _store(("backup.t1", 0, 0))  # must not be used for a failback topic
    go = translate_group_offset(
        POLICY, "primary", "backup", "g", "backup.t1", 0, 250, "m", syncs=forward, reverse_syncs=reverse
    )
    assert go == GroupOffset("g", "backup.t1", 0, 250, Checkpoint("g", "t1", 0, 250, 101, "m"), 49)
    copied = CopiedRanges()
    copied.add("t1", 0, [CopiedSegment(100, 200, 100)])
    go = translate_group_offset(
        POLICY, "primary", "backup", "g", "backup.t1", 0, 250, syncs=None, reverse_syncs=reverse, reverse_copied=copied
    )
    assert go.checkpoint is not None and (go.checkpoint.downstream_offset, go.rereads) == (150, 0)
    nothing = translate_group_offset(POLICY, "primary", "backup", "g", "backup.t1", 0, 250, syncs=forward)
    assert nothing == GroupOffset("g", "backup.t1", 0, 250, None, -1)


def test_is_failback_means_the_topic_came_from_the_target() -> None:
    assert is_failback(POLICY, "backup", "backup.t1")
    assert not is_failback(POLICY, "backup", "t1")
    assert not is_failback(POLICY, "backup", "other.t1")
    assert is_failback(POLICY, "backup", "backup.other.t1")  # MM2's rule looks at the first hop only


# --------------------------------------------------------------------------- layers


def _imported_mirrorspark_modules(folder: str) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for path in sorted((PACKAGE / folder).rglob("*.py")):
        names: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names.add(node.module)
            elif isinstance(node, ast.Import):
                names.update(alias.name for alias in node.names)
        out[str(path.relative_to(PACKAGE))] = {n for n in names if n.startswith("mirrorspark")}
    return out


@pytest.mark.parametrize(
    ("folder", "allowed"),
    [
        ("client", ("errors", "mm2", "core", "config", "kafka", "registry", "client")),
        ("migration", ("errors", "mm2", "core", "config", "kafka", "registry", "client", "migration")),
    ],
)
def test_translator_users_import_no_runtime(folder: str, allowed: tuple[str, ...]) -> None:
    """MirrorClient depends on mm2, core, config and the adapters only; the migration tools never on the runtime."""
    bad = {
        path: sorted(m for m in modules if m.partition(".")[2].partition(".")[0] not in allowed)
        for path, modules in _imported_mirrorspark_modules(folder).items()
    }
    assert {path: mods for path, mods in bad.items() if mods} == {}
