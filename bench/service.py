"""The metrics service case: what ``mirrorspark service`` costs, beside the flow it reports on.

Issue #13, item 8: CPU and memory of the service and its Spark aggregation job on this machine at
idle and under the latency case's 5 000 records/s load, and the REST API's latency under 20
concurrent clients, all in one run next to the replicator's own cost.

One run (:func:`run_service`)
----------------------------
1. A fresh source alias and source topic ``bench-service-<alias>`` (12 partitions, one marker
   record each). The flow ``<alias>->target`` runs as ``python -m mirrorspark run mm2.properties
   --clusters target`` (a subprocess: its Python driver, Spark JVM and Python workers running the
   copy tasks; defaults otherwise), as in the recovery case; the run waits until the markers are on
   the target (``start_s``).
2. ``python -m mirrorspark service mm2.properties --cluster target --port 0 --checkpoint <dir>``
   (a subprocess: the service's Python process with the feed and uvicorn, its Spark JVM running
   the aggregation job on ``local[2]``, Spark's Python workers if any) on 127.0.0.1, defaults
   otherwise (no token; its aggregates topic is ``mirrorspark-metrics.<alias>.internal`` so that
   it is deleted with the flow). The run waits until the service prints its URL
   (``service_start_s``) and reports the flow ``running`` (``flow_seen_s``), then ``settle_s``.
3. **idle**: ``idle_s`` seconds, the flow running and no record produced (heartbeats, commits and
   the driver's metrics records only).
4. **load**: the latency case's load generator (:func:`bench.latency._generate`, its own process)
   produces ``rate`` records/s of ``record_size`` bytes for ``warmup_s + seconds`` seconds and
   tails the remote topic; the phase runs from its first measured record to the later of its last
   one and the moment every measured record was on the target (on a starved machine the flow
   copies much of the load after the produce window). The flow's end-to-end latency is reported
   too (the latency case's figure, with the service running).
5. **api**: a load-test client (``python -m bench.service --api-load``, its own process, asyncio +
   httpx) runs ``clients`` concurrent clients against 127.0.0.1 for ``api_s`` seconds, each with
   one keep-alive connection, each sending its next request once the previous one is answered
   (closed loop), round-robin over :data:`ENDPOINTS`; every request is timed from send to the end
   of the response body; an error is any answer but 200 or any transport failure. The flow keeps
   running without records.
6. The service and the flow stop (``SIGTERM``; ``kill -9`` of what is left after 60 / 90 s); the
   run's topics, and the service's checkpoint, are deleted.

A sampler thread records every ``interval_s`` (0.5 s): the CPU seconds and resident memory of the
service's process tree and of the replicator's, the brokers' CPU, this whole benchmark's tree
(every process it started: brokers, both trees, generator, client, itself) and the machine's busy
time (``/proc/stat``). A phase's figures are read between the samples just outside it: **cores**
= CPU seconds / wall seconds, **RSS** = mean and largest over the phase's samples, and **other
procs cores** = machine busy - this benchmark's tree (someone else's work; near 0 on a quiet
machine).

Units: CPU in cores (CPU seconds per wall second), memory in MiB (2^20 bytes), latencies in ms,
rates in records or requests per second.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import math
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from bench import cpu
from bench.env import SOURCE, TARGET, BenchEnv
from bench.latency import (
    _launch_generator,
    _percentile,
    _produce_markers,
    contender_properties,
    generator_spec,
    launch_bench_child,
)
from bench.recovery import _Replicator, launch_mirrorspark, stop_mirrorspark
from bench.sampler import _tree_rss

__all__ = [
    "ENDPOINTS",
    "EndpointLatency",
    "PhaseCost",
    "ServiceResult",
    "api_figures",
    "run_service",
    "run_service_case",
    "service_lines",
    "service_markdown",
]

log = logging.getLogger(__name__)

ENDPOINTS = (
    ("/api/v1/replications", "api/v1/replications"),
    ("/api/v1/replications/{source}/{target}/topics", "api/v1/replications/{source}/{target}/topics"),
    (
        "/api/v1/replications/{source}/{target}/metrics/replication-latency-ms?window=1m",
        "api/v1/replications/{source}/{target}/metrics/replication-latency-ms?window=1m",
    ),
    ("/metrics", "metrics"),
)
"""``(label, path relative to the service URL)`` of the API load test's mix, in round-robin order."""

PHASES = ("idle", "load", "api")
"""The measured phases of a run, in order."""

SERVICE_ROLES = {"driver-py": "service Python", "spark-jvm": "Spark JVM", "py-workers": "py workers"}
"""How the tables name the roles of the service's tree: its Python process (feed, HTTP server, API),
the Spark JVM (the aggregation job) and Spark's Python workers."""

MIB = 1 << 20
_SAMPLE_INTERVAL_S = 0.5
_BUSY_CORES = 0.3
"""Other processes using more cores than this during a phase make its figures suspect (as in the other cases)."""


# --------------------------------------------------------------------------- results


@dataclass(frozen=True)
class PhaseCost:
    """CPU and memory of the service and of the replicator over one phase of a run.

    Attributes
    ----------
    phase:
        ``"idle"``, ``"load"`` or ``"api"`` (:data:`PHASES`).
    seconds:
        Wall seconds between the samples around the phase.
    service_cores:
        CPU cores of the service's tree (its Python process, Spark JVM, Python workers).
    service_cpu_s:
        CPU seconds of the service's tree per role (``driver-py``, ``spark-jvm``, ``py-workers``).
    service_rss_mib, service_peak_rss_mib:
        Mean and largest resident memory of the service's tree over the phase's samples, MiB.
    replicator_cores, replicator_rss_mib, replicator_peak_rss_mib:
        The same for the replicator (``mirrorspark run``: driver, Spark JVM, Python workers).
    broker_cores:
        Both brokers together, cores.
    machine_cores:
        Busy cores of the whole machine (every process).
    other_cores:
        Busy cores of processes outside this benchmark's tree (someone else's work).
    """

    phase: str
    seconds: float
    service_cores: float
    service_cpu_s: Mapping[str, float]
    service_rss_mib: float
    service_peak_rss_mib: float
    replicator_cores: float
    replicator_rss_mib: float
    replicator_peak_rss_mib: float
    broker_cores: float
    machine_cores: float
    other_cores: float

    def role_cores(self, role: str) -> float:
        """Cores of one role of the service's tree over the phase."""
        return self.service_cpu_s.get(role, 0.0) / self.seconds if self.seconds > 0 else 0.0

    def to_json(self) -> dict[str, Any]:
        """Plain-JSON form."""
        return {
            "phase": self.phase,
            "seconds": round(self.seconds, 3),
            "service_cores": round(self.service_cores, 4),
            "service_cpu_s": {k: round(v, 3) for k, v in self.service_cpu_s.items()},
            "service_rss_mib": round(self.service_rss_mib, 1),
            "service_peak_rss_mib": round(self.service_peak_rss_mib, 1),
            "replicator_cores": round(self.replicator_cores, 4),
            "replicator_rss_mib": round(self.replicator_rss_mib, 1),
            "replicator_peak_rss_mib": round(self.replicator_peak_rss_mib, 1),
            "broker_cores": round(self.broker_cores, 4),
            "machine_cores": round(self.machine_cores, 3),
            "other_cores": round(self.other_cores, 3),
        }


@dataclass(frozen=True)
class EndpointLatency:
    """Latency of the API load test's requests to one endpoint (or ``"all"``).

    Attributes
    ----------
    endpoint:
        The label of :data:`ENDPOINTS`, or ``"all"``.
    requests:
        Requests answered or failed.
    errors:
        Requests not answered with 200 (or failed in transport).
    p50_ms, p99_ms, max_ms:
        Nearest-rank percentiles and largest of every request's time, ms (errors included).
    """

    endpoint: str
    requests: int
    errors: int
    p50_ms: float
    p99_ms: float
    max_ms: float

    def to_json(self) -> dict[str, Any]:
        """Plain-JSON form."""
        return {
            "endpoint": self.endpoint,
            "requests": self.requests,
            "errors": self.errors,
            "p50_ms": round(self.p50_ms, 2),
            "p99_ms": round(self.p99_ms, 2),
            "max_ms": round(self.max_ms, 2),
        }


def api_figures(samples: Sequence[tuple[int, float, bool]], labels: Sequence[str]) -> list[EndpointLatency]:
    """Summarise the API load test: one row for every request, then one per endpoint.

    Parameters
    ----------
    samples:
        ``(endpoint index into labels, milliseconds, answered with 200)`` per request.
    labels:
        Endpoint labels.

    Returns
    -------
    list[EndpointLatency]
        ``"all"`` first, then the endpoints in ``labels`` order (those with requests).
    """

    def row(name: str, group: Sequence[tuple[int, float, bool]]) -> EndpointLatency:
        ordered = sorted(ms for _, ms, _ in group)
        return EndpointLatency(
            endpoint=name,
            requests=len(group),
            errors=sum(1 for *_, ok in group if not ok),
            p50_ms=_percentile(ordered, 50),
            p99_ms=_percentile(ordered, 99),
            max_ms=ordered[-1] if ordered else 0.0,
        )

    out = [row("all", samples)]
    for i, label in enumerate(labels):
        mine = [s for s in samples if s[0] == i]
        if mine:
            out.append(row(label, mine))
    return out


@dataclass(frozen=True)
class ServiceResult:
    """One run of the service case.

    Attributes
    ----------
    run:
        1-based run index.
    rate, seconds, idle_s, api_s, clients:
        The load (records/s, measured seconds), idle seconds, API load-test seconds and clients.
    partitions, record_size, tasks_max:
        Source partitions, value bytes, ``tasks.max`` of the flow.
    start_s:
        Seconds from launching ``mirrorspark run`` until the markers were on the target.
    service_start_s:
        Seconds from launching ``mirrorspark service`` until it printed its URL.
    flow_seen_s:
        Seconds from launching the service until it reported the flow ``running``.
    phases:
        :class:`PhaseCost` per phase that completed, in :data:`PHASES` order.
    produced, received:
        Measured records of the load phase produced, and received on the target.
    flow_p50_ms, flow_p99_ms, flow_max_ms:
        The flow's end-to-end latency over the load phase (the latency case's figure), ms.
    api:
        The API load test: ``"all"`` then per endpoint (:func:`api_figures`).
    api_requests_per_s:
        Requests completed per second of the load test.
    api_client_cores:
        CPU cores of the load-test client process.
    api_error_samples:
        Up to five error descriptions of the load test.
    idle_before_cores:
        Busy cores of the machine just before the run (after waiting for it to be idle).
    error:
        Why the run failed, else ``""``.
    """

    run: int
    rate: int
    seconds: float
    idle_s: float
    api_s: float
    clients: int
    partitions: int
    record_size: int
    tasks_max: int
    start_s: float = 0.0
    service_start_s: float = 0.0
    flow_seen_s: float = 0.0
    phases: tuple[PhaseCost, ...] = ()
    produced: int = 0
    received: int = 0
    flow_p50_ms: float = 0.0
    flow_p99_ms: float = 0.0
    flow_max_ms: float = 0.0
    api: tuple[EndpointLatency, ...] = ()
    api_requests_per_s: float = 0.0
    api_client_cores: float = 0.0
    api_error_samples: tuple[str, ...] = ()
    idle_before_cores: float = 0.0
    error: str = ""

    @property
    def api_errors(self) -> int:
        """Failed requests of the API load test."""
        return self.api[0].errors if self.api else 0

    @property
    def ok(self) -> bool:
        """Every phase measured, every record of the load copied, every API request answered with 200."""
        return (
            not self.error
            and len(self.phases) == len(PHASES)
            and self.produced > 0
            and self.received == self.produced
            and bool(self.api)
            and self.api[0].requests > 0
            and self.api_errors == 0
        )

    def phase(self, name: str) -> PhaseCost | None:
        """The figures of one phase, ``None`` if it was not measured."""
        return next((p for p in self.phases if p.phase == name), None)

    @property
    def cpu_ms_per_request(self) -> float:
        """CPU per API request, ms: the service's Python process (which alone answers) over the load test
        beyond its idle rate, per request.

        Less sensitive to a busy machine than the latencies (a starved service answers slowly but
        spends about the same CPU on each answer); ``nan`` without both phases.
        """
        idle, api = self.phase("idle"), self.phase("api")
        if idle is None or api is None or not self.api or self.api[0].requests == 0:
            return float("nan")
        extra_s = (api.role_cores("driver-py") - idle.role_cores("driver-py")) * api.seconds
        return max(0.0, extra_s) * 1000.0 / self.api[0].requests

    def to_json(self) -> dict[str, Any]:
        """Plain-JSON form."""
        return {
            "run": self.run,
            "rate": self.rate,
            "seconds": self.seconds,
            "idle_s": self.idle_s,
            "api_s": self.api_s,
            "clients": self.clients,
            "partitions": self.partitions,
            "record_size": self.record_size,
            "tasks_max": self.tasks_max,
            "start_s": round(self.start_s, 3),
            "service_start_s": round(self.service_start_s, 3),
            "flow_seen_s": round(self.flow_seen_s, 3),
            "phases": [p.to_json() for p in self.phases],
            "produced": self.produced,
            "received": self.received,
            "flow_p50_ms": round(self.flow_p50_ms, 1),
            "flow_p99_ms": round(self.flow_p99_ms, 1),
            "flow_max_ms": round(self.flow_max_ms, 1),
            "api": [a.to_json() for a in self.api],
            "api_requests_per_s": round(self.api_requests_per_s, 1),
            "api_errors": self.api_errors,
            "api_client_cores": round(self.api_client_cores, 3),
            "cpu_ms_per_request": round(self.cpu_ms_per_request, 3),
            "api_error_samples": list(self.api_error_samples),
            "idle_before_cores": round(self.idle_before_cores, 3),
            "ok": self.ok,
            "error": self.error,
        }


# --------------------------------------------------------------------------- sampling


@dataclass(frozen=True)
class _Mark:
    t: float
    wall: float
    machine: cpu.MachineCpu
    service: cpu.CpuSnapshot
    replicator: cpu.CpuSnapshot
    brokers: cpu.CpuSnapshot
    ours: cpu.CpuSnapshot
    service_rss: int
    replicator_rss: int


class _Marks:
    """Samples both trees, the brokers, this benchmark's tree and the machine every ``interval_s`` in a thread."""

    def __init__(self, service: int, replicator: int, brokers: Sequence[int], interval_s: float) -> None:
        self.service, self.replicator, self.brokers = service, replicator, list(brokers)
        self.interval_s = interval_s
        self.marks: list[_Mark] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="bench-service-sampler", daemon=True)

    def take(self) -> _Mark:
        skip = set(self.brokers)
        m = _Mark(
            t=time.perf_counter(),
            wall=time.time(),
            machine=cpu.machine_cpu(),
            service=cpu.snapshot(self.service, exclude=skip, root_role="driver-py"),
            replicator=cpu.snapshot(self.replicator, exclude=skip, root_role="driver-py"),
            brokers=cpu.snapshot_pids(self.brokers, "broker"),
            ours=cpu.snapshot(os.getpid()),
            service_rss=_tree_rss(self.service, skip),
            replicator_rss=_tree_rss(self.replicator, skip),
        )
        self.marks.append(m)
        return m

    def start(self) -> _Marks:
        self.take()
        self._thread.start()
        return self

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            try:
                self.take()
            except Exception:  # a tree may be exiting
                log.debug("sample failed", exc_info=True)

    def stop(self) -> None:
        if not self._stop.is_set():
            self._stop.set()
            self._thread.join(10)

    def phase(self, name: str, wall_start: float, wall_end: float) -> PhaseCost:
        """The figures between the samples just outside ``[wall_start, wall_end]`` (``time.time()`` seconds)."""
        marks = list(self.marks)
        a = ([m for m in marks if m.wall <= wall_start] or marks[:1])[-1]
        b = ([m for m in marks if m.wall >= wall_end] or marks[-1:])[0]
        span = b.t - a.t
        inside = [m for m in marks if a.wall <= m.wall <= b.wall] or [a]

        def cores(before: cpu.CpuSnapshot, after: cpu.CpuSnapshot) -> float:
            return cpu.delta(before, after).total_s / span if span > 0 else 0.0

        machine = (b.machine - a.machine).busy_s / span if span > 0 else 0.0
        return PhaseCost(
            phase=name,
            seconds=span,
            service_cores=cores(a.service, b.service),
            service_cpu_s=dict(cpu.delta(a.service, b.service).by_role),
            service_rss_mib=statistics.fmean(m.service_rss for m in inside) / MIB,
            service_peak_rss_mib=max(m.service_rss for m in inside) / MIB,
            replicator_cores=cores(a.replicator, b.replicator),
            replicator_rss_mib=statistics.fmean(m.replicator_rss for m in inside) / MIB,
            replicator_peak_rss_mib=max(m.replicator_rss for m in inside) / MIB,
            broker_cores=cores(a.brokers, b.brokers),
            machine_cores=machine,
            other_cores=max(0.0, machine - cores(a.ours, b.ours)),
        )


# --------------------------------------------------------------------------- the service process


class _Service:
    """``python -m mirrorspark service`` as a subprocess of its own session."""

    def __init__(self, env: BenchEnv, properties: Path, checkpoint: Path) -> None:
        self.log_path = properties.with_name("service.log")
        self.proc: subprocess.Popen[bytes] | None = launch_mirrorspark(
            ["service", str(properties), "--cluster", TARGET, "--host", "127.0.0.1", "--port", "0",
             "--checkpoint", str(checkpoint)],
            cwd=env.work_dir,
            log_path=self.log_path,
        )  # fmt: skip
        self.pid = self.proc.pid

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def describe_failure(self) -> str:
        tail = self.log_path.read_text(errors="replace")[-1500:]
        code = self.proc.returncode if self.proc is not None else "?"
        return f"mirrorspark service exited ({code}); log tail:\n{tail}"

    def url(self) -> str | None:
        """The URL it printed once serving, else ``None``."""
        m = re.search(r"at (http://127\.0\.0\.1:\d+/)", self.log_path.read_text(errors="replace"))
        return m.group(1) if m else None

    def stop(self) -> None:
        if self.proc is not None:
            stop_mirrorspark(self.proc, "mirrorspark service", 60.0)
            self.proc = None


def _until(what: str, cond: Callable[[], Any], timeout_s: float, alive: Sequence[Any]) -> Any:
    """Poll ``cond()`` every 0.2 s until it returns a true value; raise when a process of ``alive`` dies or on
    timeout."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = cond()
        if value:
            return value
        for proc in alive:
            if not proc.alive():
                raise RuntimeError(f"while waiting for {what}: {proc.describe_failure()}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what} did not happen within {timeout_s:.0f} s")
        time.sleep(0.2)


def _flow_running(url: str, flow: str) -> bool:
    import httpx

    try:
        r = httpx.get(url + "api/v1/replications", params={"remote": "false"}, timeout=10)
        return r.status_code == 200 and any(x["name"] == flow and x["state"] == "running" for x in r.json())
    except (httpx.HTTPError, ValueError, KeyError, TypeError):
        return False


def _finish(proc: subprocess.Popen[bytes], what: str, limit_s: float, alive: Sequence[Any]) -> None:
    """Wait for a child of the run (generator, API client) to end, checking the service and the flow."""
    _until(f"the {what} to finish", lambda: proc.poll() is not None, limit_s, alive)
    if proc.returncode != 0:
        raise RuntimeError(f"the {what} failed (status {proc.returncode})")


# --------------------------------------------------------------------------- one run


def run_service(
    env: BenchEnv,
    *,
    tasks_max: int,
    rate: int = 5000,
    seconds: float = 60.0,
    idle_s: float = 60.0,
    api_s: float = 30.0,
    clients: int = 20,
    partitions: int = 12,
    record_size: int = 1024,
    warmup_s: float = 5.0,
    settle_s: float = 10.0,
    run: int = 1,
    wait_idle_s: float = 0.0,
    start_timeout_s: float = 600.0,
    drain_timeout_s: float = 60.0,
) -> ServiceResult:
    """Measure the metrics service's cost at idle, under load and under API load (one run, fresh flow).

    Parameters
    ----------
    env:
        Started clusters.
    tasks_max:
        ``tasks.max`` of the flow.
    rate, seconds, warmup_s:
        The load phase: records per second, measured seconds, seconds of unmeasured load before.
    idle_s:
        Seconds of the idle phase.
    api_s, clients:
        Seconds and concurrent clients of the API load test.
    partitions, record_size:
        Source partitions and value bytes.
    settle_s:
        Seconds between the service reporting the flow and the idle phase (its first micro-batches).
    run:
        Run index to record.
    wait_idle_s:
        Before the run, wait up to this many seconds for the machine to be idle.
    start_timeout_s:
        Deadline of each start: the flow's first copy, the service's URL, the flow in the API.
    drain_timeout_s:
        Stop waiting for the load's records this many seconds after the last was produced.

    Returns
    -------
    ServiceResult
        With ``error`` set (and the phases measured so far) if the run failed.
    """
    base = ServiceResult(
        run=run,
        rate=rate,
        seconds=seconds,
        idle_s=idle_s,
        api_s=api_s,
        clients=clients,
        partitions=partitions,
        record_size=record_size,
        tasks_max=tasks_max,
    )
    idle_before = cpu.wait_idle(wait_idle_s)
    alias = env.fresh_alias()
    topic = f"bench-service-{alias}"
    remote = f"{alias}.{topic}"
    work = env.work_dir / f"service-{alias}"
    shutil.rmtree(work, ignore_errors=True)  # an earlier benchmark's run of the same alias: none of its files
    work.mkdir(parents=True)
    env.create_topic(SOURCE, topic, partitions)
    _produce_markers(env.bootstrap(SOURCE), topic, partitions)
    props = contender_properties(
        "mirrorspark", topic, tasks_max, {"mirrorspark.service.metrics.topic": f"mirrorspark-metrics.{alias}.internal"}
    )
    path = work / "mm2.properties"
    path.write_text(env.mm2_properties(alias, props))
    rep = _Replicator(env, "mirrorspark", path)
    svc: _Service | None = None
    marks: _Marks | None = None
    children: list[subprocess.Popen[bytes]] = []
    phases: list[PhaseCost] = []
    figures: dict[str, Any] = {}
    error = ""
    start_s = service_start_s = flow_seen_s = 0.0
    try:
        from bench.sampler import EndOffsets

        t0 = time.monotonic()
        rep.launch()
        stored = EndOffsets(env.bootstrap(TARGET), remote, partitions)
        _until("the markers on the target", lambda: stored() >= partitions, start_timeout_s, [rep])
        start_s = time.monotonic() - t0
        t1 = time.monotonic()
        svc = _Service(env, path, work / "checkpoint")
        watched: list[Any] = [rep, svc]
        url = str(_until("the service's URL", svc.url, start_timeout_s, watched))
        service_start_s = time.monotonic() - t1
        flow = f"{alias}->{TARGET}"
        _until(f"the service reporting {flow} running", lambda: _flow_running(url, flow), start_timeout_s, watched)
        flow_seen_s = time.monotonic() - t1
        marks = _Marks(svc.pid, rep.pid, env.broker_pids(), _SAMPLE_INTERVAL_S).start()
        _hold(settle_s, watched)
        w0 = time.time()
        _hold(idle_s, watched)
        w1 = time.time()
        marks.take()
        phases.append(marks.phase("idle", w0, w1))
        (w0, w1), load = _load_phase(env, work, topic, remote, rate, seconds, warmup_s, record_size, partitions,
                                     drain_timeout_s, children, watched)  # fmt: skip
        figures.update(load)
        marks.take()
        phases.append(marks.phase("load", w0, w1))
        (w0, w1), api = _api_phase(work, url, alias, clients, api_s, children, watched)
        figures.update(api)
        marks.take()
        phases.append(marks.phase("api", w0, w1))
    except Exception as e:
        log.exception("service run %d failed", run)
        error = f"{type(e).__name__}: {e}"
    finally:
        for child in children:
            if child.poll() is None:
                child.kill()
                child.wait()
        if marks is not None:
            marks.stop()
        try:
            if svc is not None:
                svc.stop()
        finally:
            rep.stop()
    try:
        env.delete_flow_topics(alias)
        env.delete_topics(SOURCE, [topic])
        shutil.rmtree(work / "checkpoint", ignore_errors=True)
    except Exception:
        log.warning("cleaning up after service run %s failed", alias, exc_info=True)
    if not error and figures.get("produced", 0) != figures.get("received", 0):
        error = f"received {figures.get('received')} of {figures.get('produced')} measured records"
    return replace(
        base,
        start_s=start_s,
        service_start_s=service_start_s,
        flow_seen_s=flow_seen_s,
        phases=tuple(phases),
        idle_before_cores=idle_before,
        error=error,
        **figures,
    )


def _hold(seconds: float, alive: Sequence[Any]) -> None:
    """Wait ``seconds``, checking every 0.2 s that the service and the flow still run."""
    end = time.monotonic() + seconds
    _until(f"{seconds:g} s", lambda: time.monotonic() >= end, seconds + 60.0, alive)


def _load_phase(
    env: BenchEnv,
    work: Path,
    topic: str,
    remote: str,
    rate: int,
    seconds: float,
    warmup_s: float,
    record_size: int,
    partitions: int,
    drain_timeout_s: float,
    children: list[subprocess.Popen[bytes]],
    alive: Sequence[Any],
) -> tuple[tuple[float, float], dict[str, Any]]:
    """Run the latency case's load generator; return its measured window (wall clock) and the flow's figures."""
    import array

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
        out=work / "load",
    )
    gen = _launch_generator(spec, work / "generator.log")
    children.append(gen)
    _finish(gen, "load generator", 60.0 + warmup_s + seconds + drain_timeout_s + 60.0, alive)
    summary = json.loads((work / "load.json").read_text())
    if summary.get("error"):
        raise RuntimeError(f"the load generator: {summary['error']}")
    latencies: array.array[float] = array.array("d")
    latencies.frombytes((work / "load.bin").read_bytes())
    ordered = sorted(x for x in latencies if not math.isnan(x))
    # until the last record arrived: on a starved machine the flow (and the service) copy much of it after the produce
    window = (
        float(summary["measured_start_wall"]),
        max(float(summary["measured_end_wall"]), float(summary.get("received_all_wall", 0.0))),
    )
    return window, {
        "produced": int(summary.get("produced", 0)),
        "received": len(ordered),
        "flow_p50_ms": _percentile(ordered, 50),
        "flow_p99_ms": _percentile(ordered, 99),
        "flow_max_ms": ordered[-1] if ordered else 0.0,
    }


def _api_phase(
    work: Path,
    url: str,
    alias: str,
    clients: int,
    api_s: float,
    children: list[subprocess.Popen[bytes]],
    alive: Sequence[Any],
) -> tuple[tuple[float, float], dict[str, Any]]:
    """Run the API load-test client; return its window (wall clock, first request to last answer) and figures."""
    spec = {
        "url": url,
        "paths": [p.format(source=alias, target=TARGET) for _, p in ENDPOINTS],
        "clients": clients,
        "seconds": api_s,
        "timeout_s": 10.0,
        "out": str(work / "api.json"),
    }
    client = launch_bench_child(["-m", "bench.service", "--api-load", json.dumps(spec)], work / "api-client.log")
    children.append(client)
    _finish(client, "API load-test client", api_s + 90.0, alive)
    result = json.loads((work / "api.json").read_text())
    samples = [(int(i), float(ms), bool(ok)) for i, ms, ok in result["samples"]]
    wall = float(result["wall_end"]) - float(result["wall_start"])
    return (float(result["wall_start"]), float(result["wall_end"])), {
        "api": tuple(api_figures(samples, [label for label, _ in ENDPOINTS])),
        "api_requests_per_s": len(samples) / wall if wall > 0 else 0.0,
        "api_client_cores": float(result["cpu_s"]) / wall if wall > 0 else 0.0,
        "api_error_samples": tuple(result.get("errors", [])[:5]),
    }


def run_service_case(
    env: BenchEnv, *, tasks_max: int, runs: int = 1, pause_s: float = 3.0, **kwargs: Any
) -> list[ServiceResult]:
    """Run :func:`run_service` ``runs`` times; return every result.

    Parameters
    ----------
    env:
        Started clusters.
    tasks_max:
        ``tasks.max`` of the flow.
    runs:
        Runs.
    pause_s:
        Seconds of quiet between two runs.
    kwargs:
        Passed to :func:`run_service` (``rate``, ``seconds``, ``idle_s``, ``api_s``, ``clients``, ...).
    """
    results = []
    for r in range(1, runs + 1):
        res = run_service(env, tasks_max=tasks_max, run=r, **kwargs)
        log.info("service %s", res.to_json())
        results.append(res)
        time.sleep(pause_s)
    return results


# --------------------------------------------------------------------------- report


def _med(values: Sequence[float]) -> float:
    return statistics.median(values) if values else float("nan")


def _ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}" if b > 0 else "-"


def service_markdown(results: Sequence[ServiceResult]) -> str:
    """Markdown tables of the service case: medians over the successful runs.

    The cost table has one row per phase (service and replicator side by side, and their ratio);
    the API table one row per endpoint and one for every request. Failed runs are listed below.
    """
    if not results:
        return "_no service runs_\n"
    first = results[0]
    ok = [r for r in results if r.ok]
    labels = {
        "idle": "idle (flow running, no records)",
        "load": f"{first.rate:,} records/s",
        "api": f"API load test, {first.clients} clients",
    }
    lines = [
        f"`mirrorspark service` (REST API + Spark aggregation job, `local[2]`) beside the flow it reports on "
        f"(`mirrorspark run`, tasks.max={first.tasks_max}, {first.partitions} partitions): "
        f"{first.idle_s:g} s idle, {first.rate:,} records/s of {first.record_size} B for {first.seconds:g} s, then "
        f"{first.clients} concurrent API clients for {first.api_s:g} s. Cores = CPU seconds per second; RSS in MiB "
        "(mean / peak over the phase); medians over "
        f"{len(ok)} successful run(s).",
        "",
        "| phase | s | service cores | service Python / Spark JVM / py workers | service RSS MiB "
        "| replicator cores | replicator RSS MiB | service/replicator cores | service/replicator RSS "
        "| brokers cores | other procs cores | machine busy cores |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name in PHASES:
        ph = [p for r in ok if (p := r.phase(name)) is not None]
        if not ph:
            lines.append(f"| {labels[name]} |" + " - |" * 11)
            continue
        svc, rep = _med([p.service_cores for p in ph]), _med([p.replicator_cores for p in ph])
        svc_rss, rep_rss = _med([p.service_rss_mib for p in ph]), _med([p.replicator_rss_mib for p in ph])
        roles = " / ".join(f"{_med([p.role_cores(role) for p in ph]):.3f}" for role in SERVICE_ROLES)
        lines.append(
            f"| {labels[name]} | {_med([p.seconds for p in ph]):.0f} | {svc:.3f} | {roles} "
            f"| {svc_rss:,.0f} / {_med([p.service_peak_rss_mib for p in ph]):,.0f} | {rep:.3f} "
            f"| {rep_rss:,.0f} / {_med([p.replicator_peak_rss_mib for p in ph]):,.0f} | {_ratio(svc, rep)} "
            f"| {_ratio(svc_rss, rep_rss)} | {_med([p.broker_cores for p in ph]):.3f} "
            f"| {_med([p.other_cores for p in ph]):.2f} | {_med([p.machine_cores for p in ph]):.2f} |"
        )
    if ok:
        lines += [
            "",
            f"REST API under {first.clients} concurrent clients (closed loop, one keep-alive connection each, "
            f"127.0.0.1, {first.api_s:g} s, round-robin over the endpoints; time = request sent to response read, "
            "as the client saw it):",
            "",
            "| endpoint | requests | errors | requests/s | p50 ms | p99 ms | max ms |",
            "|---|---|---|---|---|---|---|",
        ]
        names = list(dict.fromkeys(a.endpoint for r in ok for a in r.api))
        for name in names:
            rows = [a for r in ok for a in r.api if a.endpoint == name]
            rps = f"{_med([r.api_requests_per_s for r in ok]):,.1f}" if name == "all" else "-"
            shown = "**every request**" if name == "all" else f"`{name}`"
            lines.append(
                f"| {shown} | {_med([a.requests for a in rows]):,.0f} | {_med([a.errors for a in rows]):,.0f} "
                f"| {rps} | {_med([a.p50_ms for a in rows]):.1f} | {_med([a.p99_ms for a in rows]):.1f} "
                f"| {_med([a.max_ms for a in rows]):.1f} |"
            )
        lines += [
            "",
            f"The service's Python process spent {_med([r.cpu_ms_per_request for r in ok]):.1f} CPU ms per request "
            "(its CPU over the load test beyond its idle rate, per request); the load-test client used "
            f"{_med([r.api_client_cores for r in ok]):.2f} cores. The flow under the load, "
            f"with the service running: p50 {_med([r.flow_p50_ms for r in ok]):.0f} ms, "
            f"p99 {_med([r.flow_p99_ms for r in ok]):.0f} ms, max {_med([r.flow_max_ms for r in ok]):.0f} ms "
            f"end to end ({_med([r.received for r in ok]):,.0f} records). Start-up: the flow copied its first "
            f"records {_med([r.start_s for r in ok]):.1f} s after launch; the service served "
            f"{_med([r.service_start_s for r in ok]):.1f} s after launch and reported the flow after "
            f"{_med([r.flow_seen_s for r in ok]):.1f} s.",
        ]
        busy = max((p.other_cores for r in ok for p in r.phases), default=0.0)
        if busy >= _BUSY_CORES:
            lines += [
                "",
                f"**Busy machine**: other processes used up to {busy:.1f} cores during a phase; the figures are "
                "skewed (CPU contention inflates latencies and may lower the service's own share).",
            ]
    failed = [r for r in results if not r.ok]
    if failed:
        lines.append("")
        for r in failed:
            why = r.error.splitlines()[0] if r.error else ""
            if not why and r.api_errors:
                why = f"{r.api_errors} API request(s) failed: {list(r.api_error_samples)}"
            lines.append(f"- service run {r.run} failed: {why or 'incomplete'}")
    return "\n".join(lines) + "\n"


def service_lines(results: Sequence[ServiceResult]) -> list[str]:
    """Headline lines: the service's cores and RSS at idle and under load, and the API's p99."""
    ok = [r for r in results if r.ok]
    if not ok:
        return ["service cost: FAILED"] if results else []
    out = []
    for name in ("idle", "load"):
        ph = [p for r in ok if (p := r.phase(name)) is not None]
        svc, rep = _med([p.service_cores for p in ph]), _med([p.replicator_cores for p in ph])
        out.append(
            f"service cost {name}: {svc:.3f} cores (replicator {rep:.3f}, ratio {_ratio(svc, rep)}), "
            f"RSS {_med([p.service_rss_mib for p in ph]):,.0f} MiB"
        )
    rows = [r.api[0] for r in ok]
    out.append(
        f"service API, {ok[0].clients} clients: p50 {_med([a.p50_ms for a in rows]):.1f} ms, "
        f"p99 {_med([a.p99_ms for a in rows]):.1f} ms, {_med([r.api_requests_per_s for r in ok]):,.0f} requests/s, "
        f"{_med([r.cpu_ms_per_request for r in ok]):.1f} service CPU ms per request, "
        f"{sum(r.api_errors for r in results)} errors"
    )
    return out


# --------------------------------------------------------------------------- the API load-test client (child)


async def _api_load(spec: Mapping[str, Any]) -> dict[str, Any]:
    import httpx

    paths: list[str] = list(spec["paths"])
    samples: list[tuple[int, float, bool]] = []
    errors: list[str] = []
    limits = httpx.Limits(max_connections=1, max_keepalive_connections=1)
    # every client (its TLS context included: seconds on a busy machine) is built before the clock starts
    clients = [
        httpx.AsyncClient(base_url=spec["url"], timeout=float(spec["timeout_s"]), limits=limits)
        for _ in range(int(spec["clients"]))
    ]
    deadline = time.perf_counter() + float(spec["seconds"])

    async def client(i: int, c: httpx.AsyncClient) -> None:
        k = i  # client i starts at endpoint i: every endpoint is in flight at once
        while time.perf_counter() < deadline:
            j = k % len(paths)
            k += 1
            t = time.perf_counter()
            try:
                r = await c.get(paths[j])
                ok = r.status_code == 200
                if not ok and len(errors) < 5:
                    errors.append(f"{paths[j]}: HTTP {r.status_code}")
            except httpx.HTTPError as e:
                ok = False
                if len(errors) < 5:
                    errors.append(f"{paths[j]}: {type(e).__name__}: {e}")
            samples.append((j, (time.perf_counter() - t) * 1000.0, ok))

    wall_start = time.time()
    try:
        await asyncio.gather(*(client(i, c) for i, c in enumerate(clients)))
    finally:
        wall_end = time.time()
        for c in clients:
            await c.aclose()
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return {
        "wall_start": wall_start,
        "wall_end": wall_end,
        "samples": samples,
        "errors": errors,
        "cpu_s": usage.ru_utime + usage.ru_stime,
    }


def _main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.service", description="The service case's API load test.")
    parser.add_argument("--api-load", metavar="SPEC", required=True, help="JSON spec (written by run_service)")
    args = parser.parse_args(argv)
    spec = json.loads(args.api_load)
    result = asyncio.run(_api_load(spec))
    Path(spec["out"]).write_text(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
