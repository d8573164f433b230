"""The scale case: many topics, partitions and flows with light traffic — start, copy and idle cost at scale.

A workload (:class:`bench.scale_report.ScaleWorkload`; ``--scale-workloads``) is ``flows`` flows of
``topics`` source topics x ``partitions`` partitions each: one flow of 100 or 1 000 topics x 4, one flow
of 100 topics x 100 partitions (10 000 partitions), 50 flows of 20 topics x 4. Each flow's topics are
named ``<prefix><index>`` (:meth:`~bench.scale_report.ScaleWorkload.prefix`: each workload and flow has
its own prefix, matched by the flow's regex and by no other's), created and filled once with
``records_per_partition`` records (default 1: light traffic) per partition; every run of every contender
replicates them into fresh flows (:meth:`bench.env.BenchEnv.fresh_alias`), and the source topics are
deleted after the workload's last run (the brokers then never hold more than one workload's partitions).

Many flows in one process: each flow is a source alias of its own (``s<n>``, all naming the one source
cluster) into ``target``, with its own ``s<n>->target.topics`` — what 50 source clusters replicated into
one hub look like to a replicator: MM2's dedicated mode runs a herder (a Connect worker, its connectors
and internal topics) per flow, mirrorspark a flow (lease, copy tasks, control jobs) per flow, in one
process each. Every flow of a many-flow workload runs ``tasks.max=1``; mirrorspark's copy tasks keep a
Spark task slot each, so its SparkSession is rebuilt with a slot per copy task for the workload
(:meth:`bench.env.BenchEnv.spark_with_slots`; not measured, as ``mirrorspark run`` sizes its local master
by its copy tasks) and restored afterwards.

One run (:func:`run_scale`)
--------------------------
1. The replicator starts with each flow's ``topics`` = its regex and its default topic
   refresh (the topics exist before it starts, so its start-up discovery finds them):
   mirrorspark as an in-process :class:`mirrorspark.replication.driver.Replicator` running in a background
   thread (a ``mirrorspark run``: ``min(tasks.max, partitions)`` long-running copy tasks per flow on the warm
   SparkSession), MirrorMaker 2 as a child JVM (dedicated mode).
2. **Start and copy**: the end offsets of every remote topic's partitions on the target are listed
   every ``poll_s`` seconds (topic metadata, then one ``ListOffsets`` request for the remote
   partitions not yet complete). ``first_s`` (the start time) is the time from launch (mirrorspark:
   ``Replicator.start()``; MM2: JVM launch) until the first remote partition holds its records,
   ``discovery_s`` until every one does.
3. **Idle overhead**: after ``settle_s`` seconds (15: past the copy tasks' pausing of idle partitions),
   the CPU of the replicator's process tree (brokers excluded; :class:`bench.sampler.Sampler`) over
   ``idle_s`` seconds with no traffic
   (60 s in a full run: MM2's idle cost comes in bursts a 20 s window catches or misses):
   ``idle_cores`` = CPU seconds per wall second. The brokers' CPU over the same window is
   reported apart (``idle_broker_cores``): polling thousands of idle partitions costs them too.
   Peak RSS of the tree and of its root (mirrorspark's driver, MM2's JVM) from launch to the end.
4. The replicator stops; the flows' topics on the target are deleted
   (:meth:`bench.env.BenchEnv.delete_flow_topics`).

The figures (:mod:`bench.scale_report`) are medians over the runs, the idle cores also run by run;
two or more one-flow ``topics`` workloads give the marginal idle cost per added topic.

Units: seconds, cores (CPU seconds per wall second), millicores (10^-3 cores), bytes.
"""

from __future__ import annotations

import argparse
import gc
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench.env import SOURCE, TARGET
from bench.latency import CONTENDERS, contender_properties, start_replicator_text
from bench.scale_report import (
    FULL_IDLE_S,
    QUICK_IDLE_S,
    ScaleResult,
    ScaleWorkload,
    marginal_idle_lines,
    parse_workloads,
    scale_lines,
    scale_markdown,
    workloads_from_args,
)
from mirrorspark.kafka.admin_topics import TopicSpec, create_chunks

if TYPE_CHECKING:
    from bench.env import BenchEnv

__all__ = [
    "CONTENDERS",
    "ScaleResult",
    "ScaleTopics",
    "ScaleWorkload",
    "flow_properties",
    "marginal_idle_lines",
    "parse_workloads",
    "prepare_scale_topics",
    "refusal_in",
    "run_from_args",
    "run_scale",
    "run_scale_case",
    "scale_lines",
    "scale_markdown",
]

log = logging.getLogger(__name__)

_SAMPLE_INTERVAL_S = 1.0
"""Seconds between two samples of the replicator's process tree (the sampler's own CPU is in-process)."""


@dataclass(frozen=True)
class ScaleTopics:
    """The source topics of one scale workload.

    Attributes
    ----------
    workload:
        Flows, topics per flow and partitions per topic (names and regexes per flow).
    records_per_partition:
        Records in every partition.
    create_s, load_s:
        Seconds spent creating the topics and writing their records (0 when they already
        existed); informational, not part of any figure.
    """

    workload: ScaleWorkload
    records_per_partition: int
    create_s: float = 0.0
    load_s: float = 0.0

    @property
    def names(self) -> list[str]:
        """Every flow's topic names, flow by flow."""
        return [n for f in range(self.workload.flows) for n in self.workload.topic_names(f)]

    @property
    def records(self) -> int:
        """Records over all topics."""
        return self.workload.total_partitions * self.records_per_partition


def prepare_scale_topics(
    env: BenchEnv,
    workload: ScaleWorkload,
    *,
    records_per_partition: int = 1,
    timeout_s: float = 600.0,
) -> ScaleTopics:
    """Create a scale workload's source topics (if missing) and fill every partition.

    Topics are created in the requests mirrorspark makes (:func:`~mirrorspark.kafka.admin_topics.create_chunks`:
    a KRaft controller refuses a request of more than 10,000 records). Idempotent:
    topics that already exist are reused, and only partitions holding fewer than
    ``records_per_partition`` records get more.

    Parameters
    ----------
    env:
        Started clusters.
    workload:
        Its flows, topics per flow and partitions per topic.
    records_per_partition:
        Records every partition must hold (12-byte keys, 100-byte values).
    timeout_s:
        Deadline of each admin request and of the produce, seconds.

    Raises
    ------
    RuntimeError
        A topic exists with another partition count, or the records were not all acknowledged.
    """
    from confluent_kafka import KafkaError, KafkaException, Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    spec = ScaleTopics(workload, records_per_partition)
    names, partitions = spec.names, workload.partitions
    admin = AdminClient({"bootstrap.servers": env.bootstrap(SOURCE), "log_level": 3})
    existing = {n: len(t.partitions) for n, t in admin.list_topics(timeout=timeout_s).topics.items()}
    wrong = [n for n in names if n in existing and existing[n] != partitions]
    if wrong:
        raise RuntimeError(f"{len(wrong)} scale topics exist with another partition count, e.g. {wrong[0]}")
    missing = [n for n in names if n not in existing]
    t = time.perf_counter()
    for chunk in create_chunks([TopicSpec(n, partitions, 1) for n in missing]):
        new = [NewTopic(t.name, num_partitions=partitions, replication_factor=1) for t in chunk]
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
    return ScaleTopics(workload, records_per_partition, create_s=create_s, load_s=load_s)


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


class _CannotRunError(RuntimeError):
    """The contender refused the workload for good (its log says why): no figures, no failure of the benchmark."""


class _LogRefusals:
    """Reads a replicator's log as it grows for a refusal it never recovers from before its next topic refresh.

    MM2 asks for every new remote topic in one ``CreateTopics`` request; a KRaft controller refuses one of more
    than 10,000 records (``PolicyViolationException``), and MM2 logs ``Could not create topic ...`` and copies
    nothing until its next refresh (``refresh.topics.interval.seconds``, 600), which asks the same. ``None``:
    no log to read (mirrorspark raises such errors itself).
    """

    def __init__(self, path: Path | None) -> None:
        self._path = path
        self._offset = 0

    def __call__(self) -> str:
        """The refusal (its log line and the cause) if one was logged since the last call, else ``""``."""
        if self._path is None or not self._path.exists():
            return ""
        with self._path.open("rb") as f:
            f.seek(self._offset)
            data = f.read()
        end = data.rfind(b"\n") + 1  # a line still being written is read next time
        self._offset += end
        return refusal_in(data[:end].decode("utf-8", "replace"))


def refusal_in(log: str) -> str:
    """The first ``Could not create topic`` refusal in an MM2 log text, with its exception's message, else ``""``."""
    lines = log.splitlines()
    for i, line in enumerate(lines):
        if "Could not create topic" in line:
            cause = next((x.strip() for x in lines[i + 1 : i + 4] if "Exception" in x), "")
            return f"{line.strip()} {cause}".strip()
    return ""


def flow_properties(
    contender: str, workload: ScaleWorkload, aliases: Sequence[str], tasks_max: int, extra: dict[str, str]
) -> dict[str, str]:
    """The ``mm2.properties`` keys of a run over ``aliases`` (one per flow): each flow's ``topics`` its own regex.

    One flow: the flow's ``topics`` and ``tasks.max`` at top level (:func:`bench.latency.contender_properties`).
    Several: ``<alias>->target.topics`` per flow too (the top-level ``topics`` is the first flow's, so a
    contender that read only that would leave the other flows' topics uncopied and the run would fail).
    """
    if len(aliases) != workload.flows:
        raise ValueError(f"{workload.spec} needs {workload.flows} source aliases, got {len(aliases)}")
    props = contender_properties(contender, workload.regex(0), tasks_max, extra)
    if workload.flows > 1:
        props.update({f"{a}->{TARGET}.topics": workload.regex(f) for f, a in enumerate(aliases)})
    return props


SETTLE_S = 15.0
"""Seconds between catching up and the idle window: mirrorspark's copy tasks pause partitions idle for 10 s
(``replication.task.idle.IDLE_AFTER_S``), so the window measures the steady idle state of both contenders."""


def run_scale(
    env: BenchEnv,
    *,
    contender: str,
    tasks_max: int,
    prepared: ScaleTopics,
    idle_s: float = FULL_IDLE_S,
    settle_s: float = SETTLE_S,
    poll_s: float = 0.5,
    extra: dict[str, str] | None = None,
    run: int = 1,
    timeout_s: float = 900.0,
) -> ScaleResult:
    """Measure one contender's start, copy time, memory and idle overhead over a workload (one run, fresh flows).

    Parameters
    ----------
    env:
        Started clusters (and, for mirrorspark, the SparkSession, built here if needed with a slot
        per copy task; not measured).
    contender:
        ``"mirrorspark"`` or ``"mm2"``.
    tasks_max:
        ``tasks.max`` of every flow.
    prepared:
        The workload's topics (:func:`prepare_scale_topics`).
    idle_s:
        Length of the idle window, seconds (default 60).
    settle_s:
        Seconds between catching up and the idle window (default :data:`SETTLE_S`).
    poll_s:
        Seconds between two progress polls until every partition is copied (default 0.5).
    extra:
        Further ``mm2.properties`` keys (e.g. ``refresh.topics.interval.seconds``).
    run:
        Run index to record.
    timeout_s:
        Give up on the copy after this many seconds.

    Returns
    -------
    ScaleResult
        With ``error`` set if the run failed.
    """
    from bench import cpu
    from bench.sampler import Sampler

    if contender not in CONTENDERS:
        raise ValueError(f"unknown contender {contender!r}: use one of {', '.join(CONTENDERS)}")
    w = prepared.workload
    aliases = [env.fresh_alias() for _ in range(w.flows)]
    if contender == "mirrorspark":  # a slot per copy task: min(tasks.max, partitions) per flow
        env.spark_with_slots(w.flows * min(tasks_max, w.topics * w.partitions))
    props = flow_properties(contender, w, aliases, tasks_max, dict(extra or {}))
    remotes = [f"{a}.{n}" for f, a in enumerate(aliases) for n in w.topic_names(f)]
    progress = _RemoteProgress(env.bootstrap(TARGET), remotes, w.partitions, prepared.records_per_partition)
    brokers = env.broker_pids()
    error = cannot_run = ""
    first_s = discovery_s = start_call_s = 0.0
    idle_window = 0.0
    idle_cpu: cpu.CpuDelta = cpu.CpuDelta()
    broker_cores = machine_cores = 0.0
    sampler: Sampler | None = None
    gc.collect()
    t0 = time.perf_counter()
    replicator = None
    try:
        replicator = start_replicator_text(env, contender, aliases[0], env.mm2_properties(aliases, props))
        if contender == "mirrorspark":
            start_call_s = time.perf_counter() - t0
        sampler = Sampler(replicator.pid, exclude=brokers, progress=None, interval_s=_SAMPLE_INTERVAL_S)
        sampler.start()
        deadline = time.monotonic() + timeout_s
        refusals = _LogRefusals(replicator.log_path)
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
            if refused := refusals():
                raise _CannotRunError(refused)
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
    except _CannotRunError as e:
        log.warning("%s cannot run %s: %s", contender, w.spec, e)
        cannot_run = str(e)
    except Exception as e:
        log.exception("%s scale run %d failed", contender, run)
        error = f"{type(e).__name__}: {e}"
    finally:
        if sampler is not None:
            sampler.stop()
        if replicator is not None:
            replicator.stop()
    for alias in aliases:
        try:
            env.delete_flow_topics(alias, timeout_s=300.0)
        except Exception:
            log.warning("deleting the topics of scale run %s failed", alias, exc_info=True)
    return ScaleResult(
        contender=contender,
        run=run,
        topics=w.total_topics,
        partitions=w.partitions,
        records=prepared.records,
        tasks_max=tasks_max,
        workload=w.spec,
        flows=w.flows,
        create_s=prepared.create_s,
        load_s=prepared.load_s,
        start_call_s=start_call_s,
        first_s=first_s,
        discovery_s=discovery_s,
        idle_s=idle_window,
        idle_cores=idle_cpu.total_s / idle_window if idle_window > 0 else 0.0,
        idle_cpu_s=dict(idle_cpu.by_role),
        idle_broker_cores=broker_cores,
        peak_rss_bytes=sampler.peak_rss_bytes if sampler is not None else 0,
        driver_peak_rss_bytes=sampler.peak_root_rss_bytes if sampler is not None else 0,
        machine_cores=machine_cores,
        error=error,
        cannot_run=cannot_run,
    )


def run_scale_case(
    env: BenchEnv,
    *,
    tasks_max: int,
    workloads: Sequence[ScaleWorkload],
    contenders: Sequence[str] = CONTENDERS,
    records_per_partition: int = 1,
    runs: int = 1,
    pause_s: float = 5.0,
    **kwargs: Any,
) -> list[ScaleResult]:
    """For every workload: prepare its topics, ``runs`` rounds over ``contenders``, then delete its source topics.

    Parameters
    ----------
    env:
        Started clusters.
    tasks_max:
        ``tasks.max`` of a one-flow workload (``--tasks``; :meth:`ScaleWorkload.tasks_max`).
    workloads:
        In run order.
    contenders:
        Names from :data:`CONTENDERS`, in run order within a round.
    records_per_partition:
        Records per source partition.
    runs:
        Rounds per workload.
    pause_s:
        Seconds of quiet between two runs.
    kwargs:
        Passed to :func:`run_scale` (``idle_s``, ``settle_s``, ``extra``, ...).
    """
    results = []
    master = env.master
    for w in workloads:
        spec = prepare_scale_topics(env, w, records_per_partition=records_per_partition)
        try:
            for r in range(1, runs + 1):
                for c in contenders:
                    tasks = w.tasks_max(tasks_max)
                    results.append(run_scale(env, contender=c, tasks_max=tasks, prepared=spec, run=r, **kwargs))
                    time.sleep(pause_s)
        finally:
            env.use_master(master)  # a many-flow workload's session of more slots ends with it
            try:
                env.delete_topics(SOURCE, spec.names, timeout_s=300.0)
            except Exception:
                log.warning("deleting the source topics of %s failed", w.spec, exc_info=True)
    return results


def run_from_args(
    env: BenchEnv, args: argparse.Namespace, contenders: Sequence[str]
) -> tuple[str, list[str], list[dict[str, Any]], bool]:
    """Run the case as ``python -m bench --cases scale`` asks: its section, result lines, JSON and whether all ran."""
    workloads = workloads_from_args(args)
    runs = args.scale_runs or (1 if args.quick else 3)
    idle_s = args.scale_idle_seconds or (QUICK_IDLE_S if args.quick else FULL_IDLE_S)
    print(
        f"== scale: {', '.join(w.spec for w in workloads)}; {runs} run(s) each, {idle_s:g} s idle windows", flush=True
    )
    results = run_scale_case(
        env,
        tasks_max=args.tasks,
        workloads=workloads,
        runs=runs,
        idle_s=idle_s,
        contenders=[c for c in CONTENDERS if c in contenders],
    )
    body = scale_markdown(results)
    print(body, flush=True)
    lines = [*marginal_idle_lines(results), *scale_lines(results)]
    return body, lines, [r.to_json() for r in results], not any(r.failed for r in results)
