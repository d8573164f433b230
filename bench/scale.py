"""The scale case: many topics with light traffic — discovery time and idle overhead per topic.

A case creates ``topics`` source topics of ``partitions`` partitions each, named
``bench-scale-<topics>-<index>`` (so each topic count has its own set, matched by the regex
``bench-scale-<topics>-.*`` and by no other case's), and writes ``records_per_partition``
records (default 1: light traffic) into every partition — once; every run of every contender
replicates the same topics into a fresh flow (:meth:`bench.env.BenchEnv.fresh_alias`).

One run (:func:`run_scale`)
--------------------------
1. The replicator starts with the flow's ``topics`` = that regex and its default topic
   refresh (the topics exist before it starts, so its start-up discovery finds them):
   mirrorspark as an in-process :class:`mirrorspark.replication.driver.Replicator` running in a background
   thread (a ``mirrorspark run``: ``min(tasks.max, partitions)`` long-running copy tasks on the warm
   SparkSession), MirrorMaker 2 as a child JVM (dedicated mode).
2. **Discovery**: the end offsets of every remote topic's partitions on the target are listed
   every ``poll_s`` seconds (topic metadata, then one ``ListOffsets`` request for all existing
   remote partitions). ``discovery_s`` is the time from launch (mirrorspark:
   ``Replicator.start()``; MM2: JVM launch) until every remote partition holds its records;
   ``first_s`` until the first one does.
3. **Idle overhead**: after ``settle_s`` seconds, the CPU of the replicator's process tree
   (brokers excluded; :class:`bench.sampler.Sampler`) over ``idle_s`` seconds with no traffic:
   ``idle_cores`` = CPU seconds per wall second. The brokers' CPU over the same window is
   reported apart (``idle_broker_cores``): polling thousands of idle partitions costs them too.
4. The replicator stops; the flow's topics on the target are deleted
   (:meth:`bench.env.BenchEnv.delete_flow_topics`).

Running two topic counts (default 100 and 1 000) shows how the cost grows:
:func:`scale_markdown` prints the growth factors and the marginal idle cost per added topic.

Units: seconds, cores (CPU seconds per wall second), millicores (10^-3 cores), bytes.
"""

from __future__ import annotations

import gc
import logging
import statistics
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from bench.env import SOURCE, TARGET
from bench.latency import CONTENDERS, contender_properties, start_replicator

if TYPE_CHECKING:
    from bench.env import BenchEnv

__all__ = [
    "CONTENDERS",
    "ScaleResult",
    "ScaleTopics",
    "marginal_idle_lines",
    "prepare_scale_topics",
    "run_scale",
    "run_scale_case",
    "scale_markdown",
]

log = logging.getLogger(__name__)

_SAMPLE_INTERVAL_S = 1.0
"""Seconds between two samples of the replicator's process tree (the sampler's own CPU is in-process)."""


@dataclass(frozen=True)
class ScaleTopics:
    """The source topics of one scale case.

    Attributes
    ----------
    prefix:
        Common name prefix, ``bench-scale-<topics>-``.
    topics, partitions:
        Topic count and partitions per topic.
    records_per_partition:
        Records in every partition.
    create_s, load_s:
        Seconds spent creating the topics and writing their records (0 when they already
        existed); informational, not part of any figure.
    """

    prefix: str
    topics: int
    partitions: int
    records_per_partition: int
    create_s: float = 0.0
    load_s: float = 0.0

    @property
    def names(self) -> list[str]:
        """The topic names, in index order."""
        width = len(str(self.topics - 1))
        return [f"{self.prefix}{i:0{width}d}" for i in range(self.topics)]

    @property
    def regex(self) -> str:
        """The flow's ``topics`` regex: exactly this case's topics (the prefix is ``[a-z0-9-]``)."""
        return f"{self.prefix}.*"

    @property
    def records(self) -> int:
        """Records over all topics."""
        return self.topics * self.partitions * self.records_per_partition


def prepare_scale_topics(
    env: BenchEnv,
    *,
    topics: int = 1000,
    partitions: int = 4,
    records_per_partition: int = 1,
    chunk: int = 200,
    timeout_s: float = 600.0,
) -> ScaleTopics:
    """Create a scale case's source topics (if missing) and fill every partition.

    Topics are created ``chunk`` at a time with one ``CreateTopics`` request each. Idempotent:
    topics that already exist are reused, and only partitions holding fewer than
    ``records_per_partition`` records get more.

    Parameters
    ----------
    env:
        Started clusters.
    topics, partitions:
        How many topics, with how many partitions each.
    records_per_partition:
        Records every partition must hold (12-byte keys, 100-byte values).
    chunk:
        Topics per ``CreateTopics`` request.
    timeout_s:
        Deadline of each admin request and of the produce, seconds.

    Raises
    ------
    RuntimeError
        A topic exists with another partition count, or the records were not all acknowledged.
    """
    from confluent_kafka import KafkaError, KafkaException, Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    spec = ScaleTopics(f"bench-scale-{topics}-", topics, partitions, records_per_partition)
    names = spec.names
    admin = AdminClient({"bootstrap.servers": env.bootstrap(SOURCE), "log_level": 3})
    existing = {n: len(t.partitions) for n, t in admin.list_topics(timeout=timeout_s).topics.items()}
    wrong = [n for n in names if n in existing and existing[n] != partitions]
    if wrong:
        raise RuntimeError(f"{len(wrong)} scale topics exist with another partition count, e.g. {wrong[0]}")
    missing = [n for n in names if n not in existing]
    t = time.perf_counter()
    for i in range(0, len(missing), chunk):
        new = [NewTopic(n, num_partitions=partitions, replication_factor=1) for n in missing[i : i + chunk]]
        for name, f in admin.create_topics(new, operation_timeout=timeout_s, request_timeout=timeout_s).items():
            try:
                f.result(timeout=timeout_s)
            except KafkaException as e:
                if e.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                    raise RuntimeError(f"creating {name} failed: {e}") from e
    if missing:  # wait until the broker knows every new topic (metadata) before producing into them
        deadline = time.monotonic() + timeout_s
        while True:
            md = admin.list_topics(timeout=timeout_s).topics
            if all(n in md and len(md[n].partitions) == partitions for n in missing):
                break
            if time.monotonic() > deadline:
                raise RuntimeError("the new scale topics did not all appear in the metadata")
            time.sleep(0.2)
    create_s = time.perf_counter() - t if missing else 0.0
    t = time.perf_counter()
    ends = _end_offsets(admin, [(n, p) for n in names for p in range(partitions)], timeout_s)
    short = {tp: records_per_partition - ends.get(tp, 0) for tp in ends if ends.get(tp, 0) < records_per_partition}
    short.update({(n, p): records_per_partition for n in names for p in range(partitions) if (n, p) not in ends})
    if short:
        producer = Producer({"bootstrap.servers": env.bootstrap(SOURCE), "linger.ms": 20, "log_level": 3})
        value = b"v" * 100
        for (name, p), n in sorted(short.items()):
            for j in range(n):
                while True:
                    try:
                        producer.produce(name, value, b"k%011d" % j, partition=p)
                        break
                    except BufferError:
                        producer.poll(0.05)
            producer.poll(0)
        left = producer.flush(timeout_s)
        if left:
            raise RuntimeError(f"{left} records to the scale topics were not acknowledged")
    load_s = time.perf_counter() - t if short else 0.0
    return ScaleTopics(spec.prefix, topics, partitions, records_per_partition, create_s=create_s, load_s=load_s)


def _end_offsets(admin: Any, partitions: Sequence[tuple[str, int]], timeout_s: float) -> dict[tuple[str, int], int]:
    """End offsets of existing partitions, one ``ListOffsets`` call; unknown partitions are left out."""
    from confluent_kafka import KafkaException, TopicPartition
    from confluent_kafka.admin import OffsetSpec

    if not partitions:
        return {}
    futures = admin.list_offsets(
        {TopicPartition(t, p): OffsetSpec.latest() for t, p in partitions}, request_timeout=timeout_s
    )
    out: dict[tuple[str, int], int] = {}
    for tp, f in futures.items():
        try:
            out[(tp.topic, tp.partition)] = f.result(timeout=timeout_s).offset
        except KafkaException:
            continue
    return out


class _RemoteProgress:
    """Counts the remote partitions on the target that hold all their records.

    One metadata request (which remote topics exist yet), then one ``ListOffsets`` request
    for every partition of those.
    """

    def __init__(self, bootstrap: str, remotes: Sequence[str], partitions: int, records_per_partition: int) -> None:
        from confluent_kafka.admin import AdminClient

        self._admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
        self._remotes = set(remotes)
        self._partitions = partitions
        self._want = records_per_partition
        self._done: set[tuple[str, int]] = set()

    @property
    def total(self) -> int:
        """Remote partitions to wait for."""
        return len(self._remotes) * self._partitions

    def __call__(self) -> int:
        """Remote partitions complete so far (never decreases)."""
        try:
            md = self._admin.list_topics(timeout=10).topics
        except Exception:
            return len(self._done)
        todo = [
            (t, p)
            for t in self._remotes
            if t in md and md[t].error is None
            for p in range(self._partitions)
            if p in md[t].partitions and (t, p) not in self._done
        ]
        try:
            ends = _end_offsets(self._admin, todo, 10.0)
        except Exception:
            return len(self._done)
        self._done.update(tp for tp, e in ends.items() if e >= self._want)
        return len(self._done)


@dataclass(frozen=True)
class ScaleResult:
    """One scale run of one contender.

    Attributes
    ----------
    contender:
        ``"mirrorspark"`` or ``"mm2"``.
    run:
        1-based run index.
    topics, partitions:
        Replicated topics and partitions per topic (``heartbeats`` not counted).
    records:
        Records over all topics.
    tasks_max:
        ``tasks.max`` of the flow.
    create_s, load_s:
        Seconds the case spent creating and filling the source topics (0 if reused); not measured.
    start_call_s:
        mirrorspark only: seconds inside ``Replicator.start()`` (connect, internal topics,
        committed offsets, discovery, creation of every remote topic); 0 for MM2.
    first_s:
        Seconds from launch until the first remote partition held its records.
    discovery_s:
        Seconds from launch until every remote partition held its records (0 if never).
    idle_s:
        Length of the idle window, seconds.
    idle_cores:
        CPU cores used by the replicator's process tree over the idle window.
    idle_cpu_s:
        CPU seconds of that window per role (see :data:`bench.cpu.ROLES`).
    idle_broker_cores:
        CPU cores used by both brokers together over the idle window.
    peak_rss_bytes:
        Largest resident memory of the replicator's tree, bytes, sampled every second from launch
        (mirrorspark: from the end of ``Replicator.start()``) to the end of the idle window.
    machine_cores:
        Busy cores of the whole machine (every process, anyone else's included) over the idle window.
    error:
        Why the run failed, else ``""``.
    """

    contender: str
    run: int
    topics: int
    partitions: int
    records: int
    tasks_max: int
    create_s: float = 0.0
    load_s: float = 0.0
    start_call_s: float = 0.0
    first_s: float = 0.0
    discovery_s: float = 0.0
    idle_s: float = 0.0
    idle_cores: float = 0.0
    idle_cpu_s: Mapping[str, float] = field(default_factory=dict)
    idle_broker_cores: float = 0.0
    peak_rss_bytes: int = 0
    machine_cores: float = 0.0
    error: str = ""

    @property
    def ok(self) -> bool:
        """Whether every remote topic got its records and the idle window was measured."""
        return not self.error and self.discovery_s > 0 and self.idle_s > 0

    @property
    def total_partitions(self) -> int:
        """Replicated partitions (``topics * partitions``)."""
        return self.topics * self.partitions

    @property
    def millicores_per_topic(self) -> float:
        """Idle CPU per replicated topic, millicores (``idle_cores * 1000 / topics``; fixed costs included)."""
        return self.idle_cores * 1000.0 / self.topics if self.topics else 0.0

    @property
    def cores_per_1000_partitions(self) -> float:
        """Idle CPU per 1 000 replicated partitions, cores (fixed costs included)."""
        return self.idle_cores * 1000.0 / self.total_partitions if self.total_partitions else 0.0

    def to_json(self) -> dict[str, Any]:
        """Plain-JSON form."""
        return {
            "contender": self.contender,
            "run": self.run,
            "topics": self.topics,
            "partitions": self.partitions,
            "records": self.records,
            "tasks_max": self.tasks_max,
            "create_s": round(self.create_s, 3),
            "load_s": round(self.load_s, 3),
            "start_call_s": round(self.start_call_s, 3),
            "first_s": round(self.first_s, 3),
            "discovery_s": round(self.discovery_s, 3),
            "idle_s": round(self.idle_s, 3),
            "idle_cores": round(self.idle_cores, 4),
            "idle_cpu_s": {k: round(v, 3) for k, v in self.idle_cpu_s.items()},
            "idle_broker_cores": round(self.idle_broker_cores, 4),
            "millicores_per_topic": round(self.millicores_per_topic, 4),
            "cores_per_1000_partitions": round(self.cores_per_1000_partitions, 4),
            "peak_rss_bytes": self.peak_rss_bytes,
            "machine_cores": round(self.machine_cores, 3),
            "ok": self.ok,
            "error": self.error,
        }


def run_scale(
    env: BenchEnv,
    *,
    contender: str,
    tasks_max: int,
    topics: int = 1000,
    partitions: int = 4,
    records_per_partition: int = 1,
    prepared: ScaleTopics | None = None,
    idle_s: float = 20.0,
    settle_s: float = 5.0,
    poll_s: float = 0.5,
    extra: Mapping[str, str] | None = None,
    run: int = 1,
    timeout_s: float = 900.0,
) -> ScaleResult:
    """Measure one contender's discovery time and idle overhead over many topics (one run, fresh flow).

    Parameters
    ----------
    env:
        Started clusters (and, for mirrorspark, the SparkSession, built here if needed; not measured).
    contender:
        ``"mirrorspark"`` or ``"mm2"``.
    tasks_max:
        ``tasks.max`` of the flow.
    topics, partitions, records_per_partition:
        The case's source topics (created and filled by :func:`prepare_scale_topics` unless
        ``prepared`` is given).
    prepared:
        Topics from an earlier :func:`prepare_scale_topics` call (then ``topics``,
        ``partitions`` and ``records_per_partition`` are taken from it).
    idle_s:
        Length of the idle window, seconds (default 20).
    settle_s:
        Seconds between catching up and the idle window (default 5).
    poll_s:
        Seconds between two progress polls during discovery (default 0.5).
    extra:
        Further ``mm2.properties`` keys (e.g. ``refresh.topics.interval.seconds``).
    run:
        Run index to record.
    timeout_s:
        Give up on discovery after this many seconds.

    Returns
    -------
    ScaleResult
        With ``error`` set if the run failed.
    """
    from bench import cpu
    from bench.sampler import Sampler

    if contender not in CONTENDERS:
        raise ValueError(f"unknown contender {contender!r}: use one of {', '.join(CONTENDERS)}")
    spec = prepared or prepare_scale_topics(
        env, topics=topics, partitions=partitions, records_per_partition=records_per_partition
    )
    if contender == "mirrorspark":
        env.spark()
    alias = env.fresh_alias()
    props = contender_properties(contender, spec.regex, tasks_max, dict(extra or {}))
    progress = _RemoteProgress(
        env.bootstrap(TARGET), [f"{alias}.{n}" for n in spec.names], spec.partitions, spec.records_per_partition
    )
    brokers = env.broker_pids()
    error = ""
    first_s = discovery_s = start_call_s = 0.0
    idle_window = 0.0
    idle_cpu: cpu.CpuDelta = cpu.CpuDelta()
    broker_cores = machine_cores = 0.0
    sampler: Sampler | None = None
    gc.collect()
    t0 = time.perf_counter()
    replicator = None
    try:
        replicator = start_replicator(env, contender, alias, props)
        if contender == "mirrorspark":
            start_call_s = time.perf_counter() - t0
        sampler = Sampler(replicator.pid, exclude=brokers, progress=None, interval_s=_SAMPLE_INTERVAL_S)
        sampler.start()
        deadline = time.monotonic() + timeout_s
        while True:
            done = progress()
            now = time.perf_counter() - t0
            if done > 0 and not first_s:
                first_s = now
            if done >= progress.total:
                discovery_s = now
                break
            if not replicator.alive():
                raise RuntimeError(replicator.describe_failure())
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"{contender}: only {done} of {progress.total} remote partitions held their records "
                    f"after {timeout_s:.0f} s"
                )
            time.sleep(poll_s)
        del progress  # its librdkafka threads are in this process: gone before the idle window
        gc.collect()
        time.sleep(settle_s)
        a = sampler.sample()
        b0 = cpu.snapshot_pids(brokers, "broker")
        m0 = cpu.machine_cpu()
        w0 = time.time()
        time.sleep(idle_s)
        b = sampler.sample()
        b1 = cpu.snapshot_pids(brokers, "broker")
        m1 = cpu.machine_cpu()
        w1 = time.time()
        if not replicator.alive():
            raise RuntimeError(replicator.describe_failure())
        idle_window = b.t - a.t
        idle_cpu = cpu.delta(a.cpu, b.cpu)
        broker_cores = cpu.delta(b0, b1).total_s / idle_window if idle_window > 0 else 0.0
        machine_cores = (m1 - m0).busy_s / (w1 - w0) if w1 > w0 else 0.0
    except Exception as e:
        log.exception("%s scale run %d failed", contender, run)
        error = f"{type(e).__name__}: {e}"
    finally:
        if sampler is not None:
            sampler.stop()
        if replicator is not None:
            replicator.stop()
    try:
        env.delete_flow_topics(alias, timeout_s=300.0)
    except Exception:
        log.warning("deleting the topics of scale run %s failed", alias, exc_info=True)
    return ScaleResult(
        contender=contender,
        run=run,
        topics=spec.topics,
        partitions=spec.partitions,
        records=spec.records,
        tasks_max=tasks_max,
        create_s=spec.create_s,
        load_s=spec.load_s,
        start_call_s=start_call_s,
        first_s=first_s,
        discovery_s=discovery_s,
        idle_s=idle_window,
        idle_cores=idle_cpu.total_s / idle_window if idle_window > 0 else 0.0,
        idle_cpu_s=dict(idle_cpu.by_role),
        idle_broker_cores=broker_cores,
        peak_rss_bytes=sampler.peak_rss_bytes if sampler is not None else 0,
        machine_cores=machine_cores,
        error=error,
    )


def run_scale_case(
    env: BenchEnv,
    *,
    tasks_max: int,
    contenders: Sequence[str] = CONTENDERS,
    topic_counts: Sequence[int] = (100, 1000),
    partitions: int = 4,
    records_per_partition: int = 1,
    runs: int = 1,
    pause_s: float = 5.0,
    **kwargs: Any,
) -> list[ScaleResult]:
    """For every topic count: prepare the topics once, then ``runs`` rounds over ``contenders``.

    Parameters
    ----------
    env:
        Started clusters.
    tasks_max:
        ``tasks.max`` of every flow.
    contenders:
        Names from :data:`CONTENDERS`, in run order within a round.
    topic_counts:
        Topic counts to measure (default 100 and 1 000: the growth is in the report).
    partitions, records_per_partition:
        Per topic / per partition.
    runs:
        Rounds per topic count.
    pause_s:
        Seconds of quiet between two runs.
    kwargs:
        Passed to :func:`run_scale` (``idle_s``, ``settle_s``, ``extra``, ...).
    """
    results = []
    for n in topic_counts:
        spec = prepare_scale_topics(env, topics=n, partitions=partitions, records_per_partition=records_per_partition)
        for r in range(1, runs + 1):
            for c in contenders:
                results.append(run_scale(env, contender=c, tasks_max=tasks_max, prepared=spec, run=r, **kwargs))
                time.sleep(pause_s)
    return results


def marginal_idle_lines(results: Sequence[ScaleResult]) -> list[str]:
    """One line per contender: its marginal idle cost per added topic, between the smallest and largest topic count.

    E.g. ``scale marginal idle cost per added topic mirrorspark: 0.020 millicores (100 -> 1,000 topics)``;
    medians over successful runs; a contender with fewer than two topic counts measured is left out.
    """
    out = []
    for name in dict.fromkeys(r.contender for r in results):
        cores: dict[int, float] = {}
        for topics in sorted({r.topics for r in results if r.contender == name}):
            ok = [r.idle_cores for r in results if r.contender == name and r.topics == topics and r.ok]
            if ok:
                cores[topics] = statistics.median(ok)
        if len(cores) < 2:
            continue
        (t1, c1), (t2, c2) = min(cores.items()), max(cores.items())
        marginal = (c2 - c1) * 1000.0 / (t2 - t1)
        out.append(
            f"scale marginal idle cost per added topic {name}: {marginal:.3f} millicores ({t1:,} -> {t2:,} topics)"
        )
    return out


def scale_markdown(results: Sequence[ScaleResult]) -> str:
    """A markdown table of a scale case (medians over successful runs) and how the cost grows.

    Columns: seconds until every remote topic held its records, idle CPU in cores and per
    topic (millicores) / per 1 000 partitions, brokers' idle CPU, peak RSS in MB (10^6 bytes).
    Below the table, per contender, the growth from the smallest to the largest topic count
    and the marginal idle cost per added topic. Failed runs are listed last.
    """
    if not results:
        return "_no scale runs_\n"
    lines = [
        "| contender | topics x partitions | runs | first copied s | all copied s | idle cores "
        "| millicores/topic | cores/1000 partitions | brokers idle cores | peak RSS MB | machine busy cores |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    names = list(dict.fromkeys(r.contender for r in results))
    counts = sorted({(r.topics, r.partitions) for r in results})
    medians: dict[tuple[str, int, int], dict[str, float]] = {}
    for name in names:
        for topics, parts in counts:
            group = [r for r in results if r.contender == name and (r.topics, r.partitions) == (topics, parts)]
            if not group:
                continue
            ok = [r for r in group if r.ok]
            if not ok:
                lines.append(f"| {name} | {topics:,} x {parts} | 0 | - | - | - | - | - | - | - | - |")
                continue
            m = {
                "first": statistics.median(r.first_s for r in ok),
                "all": statistics.median(r.discovery_s for r in ok),
                "cores": statistics.median(r.idle_cores for r in ok),
                "mc": statistics.median(r.millicores_per_topic for r in ok),
                "c1k": statistics.median(r.cores_per_1000_partitions for r in ok),
                "brokers": statistics.median(r.idle_broker_cores for r in ok),
                "rss": statistics.median(r.peak_rss_bytes / 1e6 for r in ok),
                "machine": statistics.median(r.machine_cores for r in ok),
            }
            medians[(name, topics, parts)] = m
            lines.append(
                f"| {name} | {topics:,} x {parts} | {len(ok)} | {m['first']:.1f} "
                f"| {m['all']:.1f} | {m['cores']:.3f} "
                f"| {m['mc']:.2f} | {m['c1k']:.3f} | {m['brokers']:.3f} | {m['rss']:,.0f} | {m['machine']:.2f} |"
            )
    growth = []
    for name in names:
        have = sorted((t, p) for (n, t, p) in medians if n == name)
        if len(have) < 2:
            continue
        (t1, p1), (t2, p2) = have[0], have[-1]
        a, b = medians[(name, t1, p1)], medians[(name, t2, p2)]
        added = t2 - t1
        marginal = (b["cores"] - a["cores"]) * 1000.0 / added if added else 0.0

        def ratio(x: float, y: float) -> str:
            return f"x{y / x:.1f}" if x > 0 else "n/a"

        growth.append(
            f"- {name}: {t1:,} -> {t2:,} topics (x{t2 / t1:g}): all copied {a['all']:.1f} s -> {b['all']:.1f} s "
            f"({ratio(a['all'], b['all'])}), idle {a['cores']:.3f} -> {b['cores']:.3f} cores "
            f"({ratio(a['cores'], b['cores'])}); marginal idle cost {marginal:.3f} millicores per added topic, "
            f"peak RSS {a['rss']:,.0f} -> {b['rss']:,.0f} MB"
        )
    if growth:
        lines += ["", "How the cost grows with the topic count:", "", *growth]
    failed = [r for r in results if not r.ok]
    if failed:
        lines.append("")
        for r in failed:
            lines.append(
                f"- {r.contender} run {r.run} ({r.topics:,} topics) failed: "
                f"{r.error.splitlines()[0] if r.error else 'no idle window'}"
            )
    return "\n".join(lines) + "\n"
