"""``kill -9`` of ``mirrorspark run`` in the middle of a parallel catch-up of one partition (#43 item 3).

One source partition holds a backlog of :data:`BACKLOG` records; the flow catches it up with four readers
(``replication.catch.up.readers``, from a backlog of 10,000 records); the whole run is killed once the target holds
:data:`KILL_AFTER` of them, well before the end, and launched again. After it: nothing lost; at least once, copied
twice at most what the commit rule lets one task restart copy again (``flush_records`` + ``IN_FLIGHT_RECORDS``, as the
crash loop's bound); exactly once, nothing twice as a ``read_committed`` consumer sees it. The records the readers
fetched and the runner had not yet taken were never produced: a kill loses them from memory only.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import assert_eventually, create_topic, unique_name
from scenario import EXACTLY_ONCE, MODES, Feed, RunProcess, Tail, count_copies, high_watermarks, mode_properties

from mirrorspark.kafka.local.model import LocalClusters
from mirrorspark.replication.task.runner import IN_FLIGHT_RECORDS
from mirrorspark.replication.task.spec import FLUSH_RECORDS

BACKLOG = 400_000
"""Records in the source partition before the run starts (about 90 MB of 220-byte values)."""

KILL_AFTER = 40_000
"""Records on the target when the run is killed (the first chunks are copied, most of the backlog is not)."""


@pytest.mark.timeout(900)
@pytest.mark.parametrize("mode", MODES)
def test_a_kill_in_the_middle_of_a_parallel_catch_up_loses_nothing(
    fault_clusters: LocalClusters, tmp_path: Path, mode: str
) -> None:
    source, target = fault_clusters.bootstrap("primary"), fault_clusters.bootstrap("backup")
    topic = unique_name("catch-up-kill")
    create_topic(source, topic, partitions=1)
    feed = Feed(source, topic, 1, rate=200_000, pad=200, limit=BACKLOG).start()
    assert_eventually(lambda: len(feed.acked) == BACKLOG, timeout_s=300, message="the backlog was not produced")
    props = tmp_path / "mm2.properties"
    extra = {
        "topics": topic,
        "replication.catch.up.readers": "4",
        "replication.catch.up.backlog.records": "10000",
        **mode_properties(mode, "primary", "backup"),
    }
    props.write_text(fault_clusters.mm2_properties([("primary", "backup")], extra=extra))
    run = RunProcess(props, tmp_path)
    tail = Tail(target, f"primary.{topic}", 1, mode).start()
    try:
        run.launch()
        held = assert_eventually(
            lambda: _holds(target, f"primary.{topic}", KILL_AFTER, run),
            timeout_s=300,
            interval_s=0.05,
            message=f"the target never held {KILL_AFTER} records",
        )
        run.kill()
        assert held < BACKLOG // 2, f"killed too late to be in the middle of the catch-up: {held} on the target"
        run.launch()
        produced = feed.finish()
        tail.wait_all(produced, alive=run.check, timeout_s=600)
        code = run.stop()
        assert code == 0, f"mirrorspark run did not stop cleanly ({code}):\n{run.tail()}"
    finally:
        run.stop(timeout_s=30)
        tail.stop()
    counted = count_copies(target, f"primary.{topic}", produced, mode, tag=topic.encode())
    assert counted.lost == 0, f"{counted.lost} of {counted.produced} records lost"
    assert counted.foreign == 0
    bound = 0 if mode == EXACTLY_ONCE else FLUSH_RECORDS + IN_FLIGHT_RECORDS
    assert counted.duplicated <= bound, f"{counted.duplicated} copied twice, bound {bound} (one task restart)"


def _holds(target: str, remote: str, records: int, run: RunProcess) -> int:
    """The target's high watermark once at least ``records`` (``AssertionError`` before; fails if the run died)."""
    run.check()
    try:
        held = high_watermarks(target, remote).get(0, 0)
    except Exception as e:  # the remote topic may not exist yet
        raise AssertionError(f"no remote topic yet: {e}") from e
    assert held >= records, f"{held} records on the target"
    return held
