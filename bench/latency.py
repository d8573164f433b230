"""The latency case: end-to-end replication latency at a steady produce rate.

A producer writes ``rate`` records per second for ``seconds`` seconds into a fresh source
topic while a replicator (mirrorspark or Apache Kafka's MirrorMaker 2) copies it into the
target. A consumer tails the remote topic on the target and records, for every record,

    latency (ms) = the moment the consumer receives the record - the record's source timestamp

(the producer sets ``CreateTime`` to the wall clock, in ms, when it hands the record over;
both replicators keep the source timestamp). The figures are p50 / p90 / p99 / p99.9 / max /
mean of those latencies, plus the CPU cores the replicator's processes used over the steady
(measured) produce window and their peak resident memory.

One run (:func:`run_latency`)
----------------------------
1. A fresh source alias (:meth:`bench.env.BenchEnv.fresh_alias`) and a fresh source topic
   ``bench-latency-<alias>`` with ``partitions`` partitions, holding one *marker* record per
   partition.
2. The replicator starts with the flow's ``topics`` = that topic — mirrorspark as an in-process
   :class:`mirrorspark.replication.driver.Replicator` whose :meth:`~mirrorspark.replication.driver.Replicator.run`
   runs in a background thread until :meth:`~mirrorspark.replication.driver.Replicator.request_stop`
   (a ``mirrorspark run``: ``min(tasks.max, partitions)`` long-running copy tasks, each a Spark task
   of its own on the environment's warm SparkSession, committing every ``offset.flush.interval.ms``), MirrorMaker 2
   as a child JVM (dedicated mode, like :class:`bench.contenders.MirrorMakerContender`). The run waits
   until the remote topic ``<alias>.bench-latency-<alias>`` holds every marker: the
   replicator is then running (``start_s``).
3. A *load generator* child process (``python -m bench.latency --generate``; a separate
   process so that its CPU is not the replicator's and its GIL does not slow mirrorspark's
   driver) assigns a consumer to every partition of the remote topic from the beginning,
   waits until it has seen every marker, then produces, paced in 10 ms bursts,
   ``warmup_s * rate`` warm-up records (keys ``w…``, not counted) followed by
   ``seconds * rate`` measured records (keys ``m<sequence>``), round-robin over the
   partitions, ``record_size``-byte values, ``acks=all``, ``linger.ms=1``. It stops once every
   measured record was received (or ``drain_timeout_s`` after the last was produced).
4. A :class:`bench.sampler.Sampler` polls the replicator's process tree (the generator and
   the brokers excluded) every 0.5 s; CPU is read over the measured produce window.
5. The replicator stops; the flow's topics on the target and the source topic are deleted.

The harness's own floor: the same generator producing into and consuming from one topic of
the source cluster (no replicator) measured p50 4.7 ms, p99 20 ms, max 45 ms at 5 000
records/s on a warm broker (2-core machine); on brokers started seconds before, p99 was
446 ms (JIT warm-up), hence the untimed warm-up runs of :func:`run_latency_case`.

Units: latencies in milliseconds, rates in records per second, CPU in cores (CPU seconds per
wall second), memory in bytes.
"""

from __future__ import annotations

import argparse
import array
import json
import logging
import math
import os
import resource
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench.env import SOURCE, TARGET

if TYPE_CHECKING:
    from bench.env import BenchEnv

__all__ = [
    "CONTENDERS",
    "LatencyResult",
    "RunningReplicator",
    "contender_properties",
    "generator_spec",
    "latency_markdown",
    "launch_bench_child",
    "run_latency",
    "run_latency_case",
    "start_replicator",
    "start_replicator_text",
]

log = logging.getLogger(__name__)

CONTENDERS = ("mirrorspark", "mm2")
"""Contender names :func:`run_latency` accepts."""

_TICK_S = 0.01
"""The generator's pacing interval, seconds: it produces what is due every 10 ms."""
_SAMPLE_INTERVAL_S = 0.5
"""Seconds between two samples of the replicator's process tree."""
_REPO = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class LatencyResult:
    """One latency run of one contender.

    Attributes
    ----------
    contender:
        ``"mirrorspark"`` or ``"mm2"``.
    run:
        1-based run index.
    rate:
        Target produce rate, records per second.
    seconds:
        Target length of the measured produce window, seconds.
    partitions, record_size, tasks_max:
        Source topic partitions, value bytes per record (keys ``m<sequence>`` add a few bytes),
        ``tasks.max``.
    produced:
        Measured records produced (warm-up records excluded).
    records:
        Measured records received on the target (each counted once).
    duplicates:
        Measured records received more than once (not in the percentiles).
    produce_s:
        Actual length of the measured produce window, seconds (first to last measured record).
    p50_ms, p90_ms, p99_ms, p999_ms, max_ms, mean_ms:
        End-to-end latency of the received measured records, milliseconds (nearest-rank
        percentiles).
    p99_ms_per_10s:
        p99 latency of the records produced in each successive 10-second slice of the window, ms.
    cores:
        CPU cores used by the replicator's process tree over the measured produce window
        (CPU seconds / wall seconds, between the samples just outside the window, i.e. up to
        0.5 s more on each side); brokers and the load generator excluded.
    cpu_s:
        CPU seconds of that window per role (see :data:`bench.cpu.ROLES`).
    peak_rss_bytes:
        Largest resident memory of the replicator's tree during the measurement, bytes.
    start_s:
        Seconds from replicator launch (mirrorspark: ``Replicator.start``, Spark already up;
        MM2: JVM launch) until the target held every marker record.
    restarts:
        mirrorspark: copy tasks the driver restarted during the run (0 for MM2).
    machine_cores:
        Busy cores of the whole machine (every process: replicator, brokers, load generator,
        anyone else) while the load generator ran; near the core count = the machine was saturated.
    broker_cores, generator_cores:
        Cores used by both brokers together, and by the load generator, over the same time.
    error:
        Why the run failed (figures then meaningless), else ``""``.
    """

    contender: str
    run: int
    rate: int
    seconds: float
    partitions: int
    record_size: int
    tasks_max: int
    produced: int = 0
    records: int = 0
    duplicates: int = 0
    produce_s: float = 0.0
    p50_ms: float = 0.0
    p90_ms: float = 0.0
    p99_ms: float = 0.0
    p999_ms: float = 0.0
    max_ms: float = 0.0
    mean_ms: float = 0.0
    p99_ms_per_10s: tuple[float, ...] = ()
    cores: float = 0.0
    cpu_s: Mapping[str, float] = field(default_factory=dict)
    peak_rss_bytes: int = 0
    start_s: float = 0.0
    restarts: int = 0
    machine_cores: float = 0.0
    broker_cores: float = 0.0
    generator_cores: float = 0.0
    error: str = ""

    @property
    def ok(self) -> bool:
        """Whether the run succeeded and every measured record arrived."""
        return not self.error and self.produced > 0 and self.records == self.produced

    @property
    def achieved_rate(self) -> float:
        """Measured records produced per second of the produce window."""
        return self.produced / self.produce_s if self.produce_s > 0 else 0.0

    def to_json(self) -> dict[str, Any]:
        """Plain-JSON form."""
        return {
            "contender": self.contender,
            "run": self.run,
            "rate": self.rate,
            "seconds": self.seconds,
            "partitions": self.partitions,
            "record_size": self.record_size,
            "tasks_max": self.tasks_max,
            "produced": self.produced,
            "records": self.records,
            "duplicates": self.duplicates,
            "produce_s": round(self.produce_s, 3),
            "achieved_rate": round(self.achieved_rate, 1),
            "p50_ms": round(self.p50_ms, 1),
            "p90_ms": round(self.p90_ms, 1),
            "p99_ms": round(self.p99_ms, 1),
            "p999_ms": round(self.p999_ms, 1),
            "max_ms": round(self.max_ms, 1),
            "mean_ms": round(self.mean_ms, 1),
            "p99_ms_per_10s": [round(x, 1) for x in self.p99_ms_per_10s],
            "cores": round(self.cores, 3),
            "cpu_s": {k: round(v, 3) for k, v in self.cpu_s.items()},
            "peak_rss_bytes": self.peak_rss_bytes,
            "start_s": round(self.start_s, 3),
            "restarts": self.restarts,
            "machine_cores": round(self.machine_cores, 3),
            "broker_cores": round(self.broker_cores, 3),
            "generator_cores": round(self.generator_cores, 3),
            "ok": self.ok,
            "error": self.error,
        }


# --------------------------------------------------------------------------- statistics


def _percentile(ordered: Sequence[float], q: float) -> float:
    """Nearest-rank percentile ``q`` (0..100) of an ascending sequence (0 if empty)."""
    if not ordered:
        return 0.0
    rank = max(1, math.ceil(q / 100.0 * len(ordered)))
    return float(ordered[min(rank, len(ordered)) - 1])


# --------------------------------------------------------------------------- the replicators


class RunningReplicator:
    """A replicator started by :func:`start_replicator`.

    Attributes
    ----------
    pid:
        Root of its process tree: this process for mirrorspark, the JVM for MM2.
    log_path:
        MM2: the JVM's log; ``None`` for mirrorspark (its log is this process's).
    """

    pid: int
    log_path: Path | None = None

    def restarts(self) -> int:
        """Copy tasks restarted so far (mirrorspark; 0 for MM2)."""
        return 0

    def alive(self) -> bool:
        """Whether it is still replicating."""
        raise NotImplementedError

    def describe_failure(self) -> str:
        """Why it stopped (after :meth:`alive` turned ``False``)."""
        raise NotImplementedError

    def stop(self) -> None:
        """Stop it (mirrorspark: every copy task commits what the target acknowledged; MM2: ``SIGTERM``).

        Idempotent.
        """
        raise NotImplementedError


class _MirrorsparkReplicator(RunningReplicator):
    def __init__(self, env: BenchEnv, properties: str, name: str) -> None:
        from mirrorspark.config.parse import parse_config
        from mirrorspark.config.properties import parse_properties
        from mirrorspark.replication.driver import Replicator

        cfg = parse_config(parse_properties(properties), source_name=name)
        self.pid = os.getpid()
        self.replicator = Replicator(cfg, env.spark())
        self.error: BaseException | None = None
        self.replicator.start()
        self._thread = threading.Thread(target=self._run, name="bench-replicator", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self.replicator.run(until_caught_up=False)
        except BaseException as e:  # reported by the measuring thread
            log.exception("replicator failed")
            self.error = e

    def restarts(self) -> int:
        return sum(s.restarts for s in self.replicator.supervisors)

    def alive(self) -> bool:
        return self._thread.is_alive()

    def describe_failure(self) -> str:
        return f"replicator stopped: {type(self.error).__name__}: {self.error}" if self.error else "replicator stopped"

    def stop(self) -> None:
        self.replicator.request_stop()
        self._thread.join(timeout=120)
        if self._thread.is_alive():
            log.warning("the replicator did not stop within 120 s")


class _MirrorMakerReplicator(RunningReplicator):
    def __init__(self, env: BenchEnv, properties: str, alias: str) -> None:
        from bench.contenders import MM2_HEAP
        from mirrorspark.kafka.local.mirror_maker import start_mirror_maker

        path = env.work_dir / f"mm2-{alias}.properties"
        path.write_text(properties)
        self.mm = start_mirror_maker(path, base_dir=env.work_dir, clusters=[TARGET], heap=MM2_HEAP)
        self.pid = self.mm.pid
        self.log_path = self.mm.log_path

    def alive(self) -> bool:
        return self.mm.running

    def describe_failure(self) -> str:
        return f"MirrorMaker exited; log tail:\n{self.mm.log_tail(10)}"

    def stop(self) -> None:
        self.mm.stop()


def contender_properties(contender: str, topics: str, tasks_max: int, extra: Mapping[str, str]) -> dict[str, str]:
    """The ``mm2.properties`` keys a latency or scale run sets on top of the clusters' own.

    Parameters
    ----------
    contender:
        ``"mirrorspark"`` or ``"mm2"``.
    topics:
        The flow's ``topics`` (comma-separated regexes).
    tasks_max:
        ``tasks.max``.
    extra:
        Further keys, written last.

    Both keep their defaults otherwise (mirrorspark: ``offset.flush.interval.ms=1000``; MM2:
    Connect's 60000); heartbeats and checkpoints are on for both; MM2 skips Connect's plugin scan
    (``plugin.discovery=service_load``: start-up only), as in :class:`bench.contenders.MirrorMakerContender`.
    """
    if contender not in CONTENDERS:
        raise ValueError(f"unknown contender {contender!r}: use one of {', '.join(CONTENDERS)}")
    props = {"topics": topics, "tasks.max": str(tasks_max)}
    if contender == "mm2":
        props.update(
            {
                "emit.heartbeats.enabled": "true",
                "emit.checkpoints.enabled": "true",
                "plugin.discovery": "service_load",
                f"{TARGET}.plugin.discovery": "service_load",
            }
        )
    props.update(extra)
    return props


def start_replicator(env: BenchEnv, contender: str, alias: str, properties: Mapping[str, str]) -> RunningReplicator:
    """Start a contender replicating the flow ``<alias>->target`` until stopped.

    mirrorspark: ``Replicator.start()`` here (connect, internal topics, discovery, remote
    topics), then ``run()`` in a background thread on the environment's SparkSession. MM2: a
    child JVM (``--clusters target``, heap :data:`bench.contenders.MM2_HEAP`), returned at
    once. ``properties`` are the keys on top of the clusters' own (:func:`contender_properties`).
    """
    return start_replicator_text(env, contender, alias, env.mm2_properties(alias, properties))


def start_replicator_text(env: BenchEnv, contender: str, name: str, text: str) -> RunningReplicator:
    """Start a contender on a whole ``mm2.properties`` text (one flow or more) until stopped: :func:`start_replicator`.

    ``name`` names the run (MM2: its properties file, ``mm2-<name>.properties``).
    """
    if contender == "mirrorspark":
        return _MirrorsparkReplicator(env, text, f"bench run {name} (mirrorspark)")
    return _MirrorMakerReplicator(env, text, name)


# --------------------------------------------------------------------------- one run


def _produce_markers(bootstrap: str, topic: str, partitions: int) -> None:
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": bootstrap, "log_level": 3})
    for i in range(partitions):
        p.produce(topic, b"marker", b"x%d" % i, partition=i)
    if p.flush(30):
        raise RuntimeError(f"marker records to {topic} were not acknowledged")


def run_latency(
    env: BenchEnv,
    *,
    contender: str,
    tasks_max: int,
    rate: int = 5000,
    seconds: float = 60.0,
    partitions: int = 12,
    record_size: int = 1024,
    warmup_s: float = 5.0,
    extra: Mapping[str, str] | None = None,
    run: int = 1,
    start_timeout_s: float = 300.0,
    drain_timeout_s: float = 60.0,
) -> LatencyResult:
    """Measure one contender's end-to-end latency at a steady produce rate (one run, fresh flow).

    Parameters
    ----------
    env:
        Started clusters (and, for mirrorspark, the SparkSession, built here if needed: its
        start-up is not measured).
    contender:
        ``"mirrorspark"`` or ``"mm2"``.
    tasks_max:
        ``tasks.max`` of the flow.
    rate:
        Records per second to produce (default 5 000).
    seconds:
        Length of the measured produce window, seconds (default 60).
    partitions:
        Partitions of the source topic (default 12).
    record_size:
        Value bytes per record (default 1 024).
    warmup_s:
        Seconds of traffic at ``rate`` before the measured window (not counted; default 5).
    extra:
        Further ``mm2.properties`` keys for the contender (e.g. ``offset.flush.interval.ms``).
    run:
        Run index to record in the result.
    start_timeout_s:
        Give up if the replicator has not copied the markers after this many seconds.
    drain_timeout_s:
        Stop waiting for the measured records this many seconds after the last was produced.

    Returns
    -------
    LatencyResult
        With ``error`` set (and partial figures) if the run failed.
    """
    from bench import cpu
    from bench.sampler import EndOffsets, Sampler

    if contender not in CONTENDERS:
        raise ValueError(f"unknown contender {contender!r}: use one of {', '.join(CONTENDERS)}")
    base = LatencyResult(
        contender=contender,
        run=run,
        rate=rate,
        seconds=seconds,
        partitions=partitions,
        record_size=record_size,
        tasks_max=tasks_max,
    )
    if contender == "mirrorspark":
        env.spark()
    alias = env.fresh_alias()
    topic = f"bench-latency-{alias}"
    remote = f"{alias}.{topic}"
    env.create_topic(SOURCE, topic, partitions)
    _produce_markers(env.bootstrap(SOURCE), topic, partitions)
    props = contender_properties(contender, topic, tasks_max, dict(extra or {}))
    out_dir = env.work_dir / f"latency-{alias}"
    out_dir.mkdir(parents=True, exist_ok=True)
    error = ""
    summary: dict[str, Any] = {}
    latencies: array.array[float] = array.array("d")
    sampler: Sampler | None = None
    gen: subprocess.Popen[bytes] | None = None
    t0 = time.perf_counter()
    start_s = machine_cores = broker_cores = gen_wall = 0.0
    replicator: RunningReplicator | None = None
    try:
        replicator = start_replicator(env, contender, alias, props)
        deadline = time.monotonic() + start_timeout_s
        stored = EndOffsets(env.bootstrap(TARGET), remote, partitions)
        while stored() < partitions:
            if not replicator.alive():
                raise RuntimeError(replicator.describe_failure())
            if time.monotonic() > deadline:
                raise RuntimeError(f"{contender} did not copy the marker records within {start_timeout_s:.0f} s")
            time.sleep(0.1)
        start_s = time.perf_counter() - t0
        spec = generator_spec(
            env,
            topic=topic,
            remote=remote,
            partitions=partitions,
            rate=rate,
            seconds=seconds,
            warmup_s=warmup_s,
            record_size=record_size,
            drain_timeout_s=drain_timeout_s,
            out=out_dir / "result",
        )
        m0, w0 = cpu.machine_cpu(), time.perf_counter()
        b0 = cpu.snapshot_pids(env.broker_pids(), "broker")
        gen = _launch_generator(spec, out_dir / "generator.log")
        sampler = Sampler(
            replicator.pid, exclude=[*env.broker_pids(), gen.pid], progress=None, interval_s=_SAMPLE_INTERVAL_S
        )
        sampler.start()
        limit = time.monotonic() + 60.0 + warmup_s + seconds + drain_timeout_s + 60.0
        while gen.poll() is None:
            if not replicator.alive():
                raise RuntimeError(replicator.describe_failure())
            if time.monotonic() > limit:
                raise RuntimeError("the load generator did not finish in time")
            time.sleep(0.2)
        gen_wall = time.perf_counter() - w0
        machine_cores = (cpu.machine_cpu() - m0).busy_s / gen_wall
        broker_cores = cpu.delta(b0, cpu.snapshot_pids(env.broker_pids(), "broker")).total_s / gen_wall
        if gen.returncode != 0:
            tail = (out_dir / "generator.log").read_text(errors="replace")[-2000:]
            raise RuntimeError(f"the load generator failed (status {gen.returncode}):\n{tail}")
        summary = json.loads((out_dir / "result.json").read_text())
        with open(out_dir / "result.bin", "rb") as f:
            latencies.frombytes(f.read())
        if summary.get("error"):
            error = str(summary["error"])
    except Exception as e:
        log.exception("%s latency run %d failed", contender, run)
        error = f"{type(e).__name__}: {e}"
    finally:
        if gen is not None and gen.poll() is None:
            gen.kill()
            gen.wait()
        if sampler is not None:
            sampler.stop()
        if replicator is not None:
            replicator.stop()
    cores = 0.0
    cpu_s: dict[str, float] = {}
    peak = 0
    start_wall = float(summary.get("measured_start_wall", 0.0))
    end_wall = float(summary.get("measured_end_wall", 0.0))
    if sampler is not None and end_wall > start_wall:
        # The samples around the window (nearest outside it): CPU over exactly their span.
        samples = list(sampler.samples)
        a = ([x for x in samples if x.wall <= start_wall] or samples[:1])[-1]
        b = ([x for x in samples if x.wall >= end_wall] or samples[-1:])[0]
        delta = cpu.delta(a.cpu, b.cpu)
        cpu_s = dict(delta.by_role)
        cores = delta.total_s / (b.t - a.t) if b.t > a.t else 0.0
        peak = sampler.peak_rss_bytes
    restarts = replicator.restarts() if replicator is not None else 0
    got = [x for x in latencies if not math.isnan(x)]
    ordered = sorted(got)
    per_10s: list[float] = []
    step = max(1, int(rate * 10))
    for i in range(0, len(latencies), step):
        chunk = sorted(x for x in latencies[i : i + step] if not math.isnan(x))
        per_10s.append(_percentile(chunk, 99))
    produced = int(summary.get("produced", 0))
    if not error and len(got) != produced:
        error = f"received {len(got)} of {produced} measured records within {drain_timeout_s:.0f} s"
    try:
        env.delete_flow_topics(alias)
        env.delete_topics(SOURCE, [topic])
    except Exception:
        log.warning("cleaning up after latency run %s failed", alias, exc_info=True)
    return replace(
        base,
        produced=produced,
        records=len(got),
        duplicates=int(summary.get("duplicates", 0)),
        produce_s=max(0.0, end_wall - start_wall),
        p50_ms=_percentile(ordered, 50),
        p90_ms=_percentile(ordered, 90),
        p99_ms=_percentile(ordered, 99),
        p999_ms=_percentile(ordered, 99.9),
        max_ms=ordered[-1] if ordered else 0.0,
        mean_ms=statistics.fmean(ordered) if ordered else 0.0,
        p99_ms_per_10s=tuple(per_10s),
        cores=cores,
        cpu_s=cpu_s,
        peak_rss_bytes=peak,
        start_s=start_s,
        restarts=restarts,
        machine_cores=machine_cores,
        broker_cores=broker_cores,
        generator_cores=float(summary.get("cpu_s", 0.0)) / gen_wall if gen_wall > 0 else 0.0,
        error=error,
    )


def run_latency_case(
    env: BenchEnv,
    *,
    tasks_max: int,
    contenders: Sequence[str] = CONTENDERS,
    runs: int = 1,
    warmup_run_s: float = 10.0,
    pause_s: float = 2.0,
    **kwargs: Any,
) -> list[LatencyResult]:
    """Run :func:`run_latency` ``runs`` rounds over ``contenders`` (A B A B ...); return the measured results.

    First, one untimed run per contender of ``warmup_run_s`` seconds (``0``: none): brokers
    started seconds before are still compiling their hot paths, and the first run after
    their start saw a backlog of over a second even without any replicator in between
    (a producer and a consumer on one topic: p99 446 ms on fresh brokers, 20 ms on the
    next run).

    Parameters
    ----------
    env:
        Started clusters.
    tasks_max:
        ``tasks.max`` of every flow.
    contenders:
        Names from :data:`CONTENDERS`, in run order within a round.
    runs:
        Rounds.
    warmup_run_s:
        Length of the produce window of the untimed warm-up runs, seconds.
    pause_s:
        Seconds of quiet between two runs.
    kwargs:
        Passed to :func:`run_latency` (``rate``, ``seconds``, ``partitions``, ``record_size``,
        ``warmup_s``, ``extra``, ...).
    """
    if warmup_run_s > 0:
        for c in contenders:
            w = run_latency(env, contender=c, tasks_max=tasks_max, run=0, **{**kwargs, "seconds": warmup_run_s})
            log.info("latency warm-up run of %s: p99 %.0f ms%s", c, w.p99_ms, f" ({w.error})" if w.error else "")
            time.sleep(pause_s)
    results = []
    for r in range(1, runs + 1):
        for c in contenders:
            results.append(run_latency(env, contender=c, tasks_max=tasks_max, run=r, **kwargs))
            time.sleep(pause_s)
    return results


# --------------------------------------------------------------------------- report


def latency_markdown(results: Sequence[LatencyResult]) -> str:
    """A markdown table of a latency case: medians over the successful runs per contender.

    Latencies in ms, CPU in cores over the measured produce window, RSS in MB (10^6 bytes).
    Failed runs are listed below the table.
    """
    if not results:
        return "_no latency runs_\n"
    first = results[0]
    header = (
        "| contender | runs | records | achieved rec/s | p50 ms | p90 ms | p99 ms | p99.9 ms | max ms "
        "| mean ms | cores | peak RSS MB | machine busy cores |"
    )
    columns = header.count("|") - 1
    lines = [
        f"Steady produce of {first.rate:,} records/s x {first.seconds:g} s ({first.record_size} B values, "
        f"{first.partitions} partitions, tasks.max={first.tasks_max}); latency = receive time on the target "
        "minus the record's source timestamp.",
        "",
        header,
        "|" + "---|" * columns,
    ]
    for name in dict.fromkeys(r.contender for r in results):
        ok = [r for r in results if r.contender == name and r.ok]
        lines.append(_latency_row(name, ok) if ok else f"| {name} | 0 |" + " - |" * (columns - 2))
    failed = [r for r in results if not r.ok]
    if failed:
        lines.append("")
        lines.extend(
            f"- {r.contender} run {r.run} failed: {r.error.splitlines()[0] if r.error else '?'}" for r in failed
        )
    return "\n".join(lines) + "\n"


def _latency_row(name: str, ok: Sequence[LatencyResult]) -> str:
    """One contender's row of :func:`latency_markdown`: medians over its successful runs ``ok``."""

    def med(values: Sequence[float]) -> float:
        return statistics.median(values)

    return (
        f"| {name} | {len(ok)} | {med([r.records for r in ok]):,.0f} "
        f"| {med([r.achieved_rate for r in ok]):,.0f} "
        f"| {med([r.p50_ms for r in ok]):.0f} | {med([r.p90_ms for r in ok]):.0f} "
        f"| {med([r.p99_ms for r in ok]):.0f} | {med([r.p999_ms for r in ok]):.0f} "
        f"| {med([r.max_ms for r in ok]):.0f} | {med([r.mean_ms for r in ok]):.0f} "
        f"| {med([r.cores for r in ok]):.2f} | {med([r.peak_rss_bytes / 1e6 for r in ok]):,.0f} "
        f"| {med([r.machine_cores for r in ok]):.2f} |"
    )


# --------------------------------------------------------------------------- the load generator (child process)


def launch_bench_child(args: Sequence[str], log_path: Path) -> subprocess.Popen[bytes]:
    """Start ``python <args>`` (e.g. ``-m bench.latency --generate SPEC``) from the repository root.

    Parameters
    ----------
    args:
        Arguments of the interpreter.
    log_path:
        Where its stdout and stderr go.
    """
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(_REPO), env.get("PYTHONPATH", "")) if p)
    with open(log_path, "wb") as out:
        return subprocess.Popen(
            [sys.executable, *args], cwd=_REPO, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT
        )


def generator_spec(
    env: BenchEnv,
    *,
    topic: str,
    remote: str,
    partitions: int,
    rate: int,
    seconds: float,
    warmup_s: float,
    record_size: int,
    drain_timeout_s: float,
    out: Path,
) -> dict[str, Any]:
    """The load generator's spec: produce into ``topic`` on the source, tail ``remote`` on the target.

    Parameters
    ----------
    env:
        Started clusters.
    topic, remote:
        The source topic and its remote topic on the target (``<alias>.<topic>``).
    partitions, rate, seconds, warmup_s, record_size:
        As in :func:`run_latency`.
    drain_timeout_s:
        Seconds to wait for the measured records after the last was produced.
    out:
        Results path without suffix: ``.bin`` (latencies) and ``.json`` (summary) are written.
    """
    return {
        "source": env.bootstrap(SOURCE),
        "target": env.bootstrap(TARGET),
        "topic": topic,
        "remote": remote,
        "partitions": partitions,
        "rate": rate,
        "seconds": seconds,
        "warmup_s": warmup_s,
        "record_size": record_size,
        "drain_timeout_s": drain_timeout_s,
        "out": str(out),
    }


def _launch_generator(spec: Mapping[str, Any], log_path: Path) -> subprocess.Popen[bytes]:
    return launch_bench_child(["-m", "bench.latency", "--generate", json.dumps(spec)], log_path)


def _generate(spec: Mapping[str, Any]) -> None:
    """The load generator: tail the remote topic, produce at the rate, write latencies and a summary.

    Writes ``<out>.bin`` (float64 latency in ms per measured sequence number, NaN = never
    received) and ``<out>.json`` (counts, wall-clock bounds of the measured window, when the last
    measured record was received, errors).
    """
    from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition

    partitions = int(spec["partitions"])
    rate = int(spec["rate"])
    warm = int(rate * float(spec["warmup_s"]))
    total = int(rate * float(spec["seconds"]))
    size = int(spec["record_size"])
    latencies = array.array("d", [math.nan]) * total
    state: dict[str, Any] = {"received": 0, "duplicates": 0, "markers": set(), "errors": []}
    markers_seen = threading.Event()
    produced_all = threading.Event()
    stop = threading.Event()
    drain_deadline = [math.inf]

    consumer = Consumer(
        {
            "bootstrap.servers": spec["target"],
            "group.id": f"bench-latency-{spec['remote']}",
            "enable.auto.commit": False,
            "enable.partition.eof": False,
            "fetch.wait.max.ms": 100,
            "log_level": 3,
        }
    )
    consumer.assign([TopicPartition(spec["remote"], p, OFFSET_BEGINNING) for p in range(partitions)])

    def consume() -> None:
        markers: set[bytes] = state["markers"]
        while not stop.is_set():
            # consume(timeout=0) returns what is queued now; poll() blocks for the next one only:
            # a blocking consume(n, timeout) would hold records back until n arrive or it times out.
            msgs = consumer.consume(num_messages=10_000, timeout=0)
            if not msgs:
                m = consumer.poll(0.05)
                msgs = [m] if m is not None else []
            now_ms = time.time() * 1000.0
            for m in msgs:
                if m.error() is not None:
                    if len(state["errors"]) < 5:
                        state["errors"].append(str(m.error()))
                    continue
                key = m.key() or b""
                if key[:1] == b"m":
                    i = int(key[1:])
                    if math.isnan(latencies[i]):
                        latencies[i] = now_ms - m.timestamp()[1]
                        state["received"] += 1
                        if state["received"] == total:
                            state["received_all_wall"] = now_ms / 1000.0
                    else:
                        state["duplicates"] += 1
                elif key[:1] == b"x" and not markers_seen.is_set():
                    markers.add(key)
                    if len(markers) >= partitions:
                        markers_seen.set()
            if produced_all.is_set() and (state["received"] >= total or time.monotonic() > drain_deadline[0]):
                return

    thread = threading.Thread(target=consume, name="latency-consumer", daemon=True)
    thread.start()
    summary: dict[str, Any] = {"produced": 0, "warmup": warm}
    try:
        if not markers_seen.wait(60):
            raise RuntimeError("the consumer did not see the marker records within 60 s")
        producer = Producer(
            {
                "bootstrap.servers": spec["source"],
                "acks": "all",
                "linger.ms": 1,
                "compression.type": "none",
                "log_level": 3,
            }
        )
        delivery_errors: list[str] = []

        def on_delivery(err: Any, _msg: Any) -> None:
            if err is not None and len(delivery_errors) < 5:
                delivery_errors.append(str(err))

        pool = os.urandom(size + 8192)
        topic = spec["topic"]
        produce = producer.produce
        n = warm + total
        sent = 0
        start_wall = end_wall = 0.0
        t0 = time.perf_counter()
        tick = 0
        while sent < n:
            due = min(n, int((time.perf_counter() - t0) * rate) + 1)
            ts = int(time.time() * 1000)
            if sent <= warm < due:  # the first measured record goes out in this burst
                start_wall = ts / 1000.0
            while sent < due:
                key = b"w%d" % sent if sent < warm else b"m%d" % (sent - warm)
                o = (sent * 7919) % 8192
                while True:
                    try:
                        produce(topic, pool[o : o + size], key, partition=sent % partitions, timestamp=ts)
                        break
                    except BufferError:
                        producer.poll(0.01)
                sent += 1
            end_wall = ts / 1000.0
            producer.poll(0)
            tick += 1
            pause = t0 + tick * _TICK_S - time.perf_counter()
            if pause > 0:
                time.sleep(pause)
            elif pause < -1.0:  # far behind (machine busy): do not try to catch up in one burst forever
                tick = int((time.perf_counter() - t0) / _TICK_S)
        summary["measured_start_wall"] = start_wall
        summary["measured_end_wall"] = end_wall
        summary["produced"] = total
        left = producer.flush(60)
        if left or delivery_errors:
            summary["error"] = f"{left} records unacknowledged; delivery errors: {delivery_errors}"
        drain_deadline[0] = time.monotonic() + float(spec["drain_timeout_s"])
        produced_all.set()
        thread.join(float(spec["drain_timeout_s"]) + 10.0)
    except Exception as e:
        summary["error"] = f"{type(e).__name__}: {e}"
    finally:
        stop.set()
        thread.join(10)
        consumer.close()
    usage = resource.getrusage(resource.RUSAGE_SELF)
    summary["cpu_s"] = usage.ru_utime + usage.ru_stime
    summary["received"] = state["received"]
    summary["received_all_wall"] = state.get("received_all_wall", 0.0)
    summary["duplicates"] = state["duplicates"]
    summary["consumer_errors"] = state["errors"]
    out = Path(spec["out"])
    with open(out.with_suffix(".bin"), "wb") as f:
        latencies.tofile(f)
    out.with_suffix(".json").write_text(json.dumps(summary))


def _main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.latency", description="The latency case's load generator.")
    parser.add_argument("--generate", metavar="SPEC", required=True, help="JSON spec (written by run_latency)")
    args = parser.parse_args(argv)
    _generate(json.loads(args.generate))
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
