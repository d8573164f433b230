"""The ``wan`` case (#43): mirrorspark and MirrorMaker 2 catching up a backlog across a long link; a throttled flow.

The source cluster's broker gets a WAN listener (``start_clusters(wan=True)``) and a latency proxy in a process of
its own (:func:`~mirrorspark.kafka.local.latency_proxy.wan_link_processes`, one per broker). Both contenders read the
source through it, one after the other on the same backlog, each into a fresh flow of its own (a new source alias per
run, :meth:`bench.env.BenchEnv.fresh_alias`, so their remote topics never collide). The backlog is loaded next to
the source, not through the link.

1. The link: a one-way delay of RTT/2 in each direction, no bandwidth cap, and :data:`WINDOW_BYTES` in flight per
   connection and direction, as a TCP window: one connection carries at most ``window / RTT``
   (:func:`connection_rate`), whichever client it is. The proxies' CPU is counted with the brokers'.
2. Scenarios: RTT 0 (through the same proxies) and ``--rtt-ms``; one and 12 partitions holding the same backlog of
   1 KiB records. Contenders: ``mm2-tuned`` (the compare case's, plus the fetch sizes a user sets for the link:
   :func:`bdp_fetch_keys`) and ``mirrorspark`` (``replication.link.rtt.ms`` and ``replication.catch.up.readers``).
3. Time to catch up is the copy window of :mod:`bench.sampler`, as the compare case's throughput: from the last
   moment the target topic was seen empty to the first it held the whole backlog.
4. Throttle: a mirrorspark flow with ``replication.throttled.rate`` over a 12-partition backlog across the largest
   RTT, the target's end offsets sampled every :data:`SAMPLE_S`; its accuracy is the highest 10 s average rate over
   the limit (:func:`throttle_accuracy`). Then ``mirrorspark control throttle`` lowers the limit live and
   :func:`took_effect_s` says when the 1 s rate followed it, counted from the command's return.
"""

from __future__ import annotations

import argparse
import bisect
import json
import logging
import math
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench import report
from bench.contenders import MM2_TUNED_PRODUCER, Contender, MirrorMakerContender, MirrorsparkContender
from bench.env import SOURCE, TARGET, BenchEnv
from bench.suite import Case, CaseResult, Summary, environment, run_case
from bench.workload import Workload, load_topic
from mirrorspark.kafka.local.clusters import start_clusters, stop_clusters
from mirrorspark.kafka.local.latency_proxy import LinkProcesses, LinkShape, wan_link_processes

__all__ = [
    "WINDOW_BYTES",
    "ThrottleResult",
    "WanEnv",
    "WanResult",
    "bdp_fetch_keys",
    "connection_rate",
    "highest_average",
    "throttle_accuracy",
    "took_effect_s",
    "wan_lines",
]

log = logging.getLogger(__name__)

WINDOW_BYTES = 4 * 1024 * 1024
"""Bytes in flight per connection and direction (bench/README.md, 'Across a WAN'): Linux autotunes a TCP receive
buffer up to ``net.ipv4.tcp_rmem``'s maximum, 6 MiB by default, and advertises part of it as the window."""
LINK_RATE = 125_000_000
"""Bytes/s the fetch sizes are sized for: 1 Gb/s, ``replication.link.rate``'s default."""
DEFAULT_RTT_MS = 100
PARTITIONS = (1, 12)
RECORD_SIZE = 1024
QUICK_RECORDS, FULL_RECORDS = 200_000, 1_000_000
CATCH_UP_READERS = 4
"""``replication.catch.up.readers`` of the mirrorspark contender: one per core of a 4-core executor."""

CATCH_UP_BACKLOG_RECORDS = 10_000
"""``replication.catch.up.backlog.records`` of the mirrorspark contender: 10 MB of 1 KiB records, a fraction of a
second at the link's rate, so the 12 partitions' backlogs (1/12 of the records each) are caught up in parallel too."""
SAMPLE_S = 0.5
"""Seconds between samples of the throttled flow's target."""
AVERAGE_S = 10.0
"""The window of the throttle's accuracy (the issue's target: the 10 s average stays <= 1.05x the limit)."""
FOLLOW_S, FOLLOW_TOLERANCE = 1.0, 1.1
"""A changed limit is followed once every 1 s rate from then on is within 10 % of it (:func:`took_effect_s`)."""
THROTTLE_RATE, THROTTLE_CHANGED_RATE = 8_000_000, 4_000_000
"""bytes/s of the throttled flow before and after the live change."""


def connection_rate(window_bytes: int, rtt_ms: float) -> float:
    """Most bytes/s one connection carries across the link: a window per round trip (``inf`` at RTT 0)."""
    return math.inf if rtt_ms <= 0 else window_bytes / (rtt_ms / 1000)


def bdp_bytes(rtt_ms: float, rate: int = LINK_RATE) -> int:
    """The link's bandwidth-delay product, bytes, rounded up to a power of two (0 at RTT 0)."""
    product = rate * rtt_ms / 1000
    return 0 if product <= 0 else 1 << math.ceil(math.log2(product))


def bdp_fetch_keys(rtt_ms: float, rate: int = LINK_RATE) -> dict[str, str]:
    """Source consumer keys (flow keys, ``source.consumer.*``) sized for the link; none at RTT 0.

    ``max.partition.fetch.bytes`` = the BDP, so that one partition's fetch fills a round trip; ``fetch.max.bytes`` at
    least that (Kafka's default, 50 MiB, otherwise); ``receive.buffer.bytes`` -1, the OS's autotuning (an explicit
    size is clamped to ``net.core.rmem_max``, 208 KiB by default, and switches autotuning off).
    """
    bdp = bdp_bytes(rtt_ms, rate)
    if not bdp:
        return {}
    return {
        "source.consumer.max.partition.fetch.bytes": str(bdp),
        "source.consumer.fetch.max.bytes": str(max(bdp, 52_428_800)),
        "source.consumer.receive.buffer.bytes": "-1",
    }


def highest_average(samples: Sequence[tuple[float, int]], seconds: float) -> float | None:
    """The highest average rate over any ``seconds`` (or slightly more) between two samples.

    ``samples`` are ``(time s, cumulative amount)`` in time order; each is the end of a window whose start is the
    latest sample at least ``seconds`` before it. ``None`` when the samples span less than ``seconds``.
    """
    times = [t for t, _ in samples]
    best: float | None = None
    for t, amount in samples:
        j = bisect.bisect_right(times, t - seconds) - 1
        if j < 0 or times[j] >= t:
            continue
        rate = (amount - samples[j][1]) / (t - times[j])
        best = rate if best is None else max(best, rate)
    return best


def throttle_accuracy(samples: Sequence[tuple[float, int]], limit: float, seconds: float = AVERAGE_S) -> float | None:
    """The highest ``seconds`` average rate over ``limit`` (bytes/s): <= 1 holds the limit; ``None`` without data."""
    best = highest_average(samples, seconds)
    return None if best is None or limit <= 0 else best / limit


def took_effect_s(
    samples: Sequence[tuple[float, int]],
    changed_at: float,
    old_limit: float,
    new_limit: float,
    *,
    window_s: float = FOLLOW_S,
    tolerance: float = FOLLOW_TOLERANCE,
) -> float | None:
    """Seconds from ``changed_at`` to the end of the first ``window_s`` rate from which every later one follows.

    A rate follows a lowered limit when it is at most ``tolerance`` times it, a raised one when it is at least the
    limit over ``tolerance``; windows start at ``changed_at`` or later. ``None`` when the last window does not follow
    (or there is none).
    """
    times = [t for t, _ in samples]
    follows: list[tuple[float, bool]] = []
    for t, amount in samples:
        j = bisect.bisect_right(times, t - window_s) - 1
        if j < 0 or times[j] < changed_at or times[j] >= t:
            continue
        rate = (amount - samples[j][1]) / (t - times[j])
        ok = rate <= new_limit * tolerance if new_limit <= old_limit else rate >= new_limit / tolerance
        follows.append((t, ok))
    if not follows or not follows[-1][1]:
        return None
    k = len(follows) - 1
    while k > 0 and follows[k - 1][1]:
        k -= 1
    return follows[k][0] - changed_at


class WanEnv(BenchEnv):
    """:class:`BenchEnv` with a WAN listener on the source and its link in processes (module notes 1).

    Flows read the source at its WAN address (:meth:`mm2_properties`); :meth:`set_rtt` restarts the link.
    """

    def __init__(self, work_dir: Path, *, master: str = "local[*]", window_bytes: int = WINDOW_BYTES) -> None:
        super().__init__(work_dir, master=master)
        self.window_bytes = window_bytes
        self.rtt_ms = 0.0
        self._link: LinkProcesses | None = None

    def start(self) -> None:
        t = time.perf_counter()
        stop_clusters(self.work_dir)
        self.clusters = start_clusters([SOURCE, TARGET], base_dir=self.work_dir, brokers=1, timeout_s=240.0, wan=True)
        self.cluster_start_s = time.perf_counter() - t
        self.set_rtt(0)

    def set_rtt(self, rtt_ms: float) -> None:
        """(Re)start the link with this RTT (ms); connections open on the old one are dropped."""
        if self._link is not None:
            self._link.stop()
            self._link = None
        shape = LinkShape(delay_ms=rtt_ms / 2, window_bytes=self.window_bytes)
        source = self._clusters().cluster(SOURCE)
        self._link = wan_link_processes(source, shape, log_path=self.work_dir / "latency-proxy.log")
        self.rtt_ms = rtt_ms

    def close(self) -> None:
        if self._link is not None:
            self._link.stop()
            self._link = None
        super().close()

    def broker_pids(self) -> list[int]:
        """The brokers' and the link's processes: neither is a replicator's."""
        return [*super().broker_pids(), *(self._link.pids if self._link else [])]

    def mm2_properties(self, source_alias: str, extra: Mapping[str, str]) -> str:
        """As :meth:`BenchEnv.mm2_properties`, the source at its WAN address (through the link)."""
        wan = {f"{source_alias}.bootstrap.servers": self._clusters().cluster(SOURCE).wan_bootstrap_servers}
        return super().mm2_properties(source_alias, {**wan, **extra})


def contenders(rtt_ms: float, tasks_max: int, readers: int = CATCH_UP_READERS) -> list[Contender]:
    """``mm2-tuned`` and ``mirrorspark`` for a link of ``rtt_ms`` (module notes 2)."""
    mm2 = MirrorMakerContender(
        tasks_max=tasks_max, extra=MM2_TUNED_PRODUCER, flow_extra=bdp_fetch_keys(rtt_ms), name="mm2-tuned"
    )
    keys = {
        "replication.link.rtt.ms": str(int(rtt_ms)),
        "replication.catch.up.readers": str(readers),
        "replication.catch.up.backlog.records": str(CATCH_UP_BACKLOG_RECORDS),
    }
    return [mm2, MirrorsparkContender(tasks_max=tasks_max, flow_extra=keys)]


@dataclass(frozen=True)
class ThrottleResult:
    """The throttled flow: its samples ``(s since start, bytes on the target)``, the limits, the live change."""

    limit: int
    new_limit: int
    samples: list[tuple[float, int]] = field(default_factory=list)
    changed_at: float | None = None
    change_error: str = ""
    backlog_bytes: int = 0
    error: str = ""

    @property
    def accuracy(self) -> float | None:
        """The highest 10 s average over the first limit, before the change."""
        end = self.changed_at if self.changed_at is not None else math.inf
        return throttle_accuracy([s for s in self.samples if s[0] <= end], self.limit)

    @property
    def effect_s(self) -> float | None:
        """Seconds until the 1 s rate followed the changed limit (``None``: not measured or never)."""
        if self.changed_at is None or self.copied_before_change:
            return None
        return took_effect_s(self.samples, self.changed_at, self.limit, self.new_limit)

    @property
    def copied_before_change(self) -> bool:
        """Whether the whole backlog was on the target before the change (the limit was not enforced)."""
        before = [b for t, b in self.samples if self.changed_at is not None and t <= self.changed_at]
        return bool(before) and before[-1] >= self.backlog_bytes

    def lines(self) -> list[str]:
        """``throttle accuracy: Y`` and ``throttle change took effect in S s`` (or why not)."""
        acc = self.accuracy
        out = [f"throttle accuracy: {acc:.2f}" if acc is not None else f"throttle accuracy: n/a ({self.error})"]
        if self.error:
            out.append("throttle change took effect in: n/a (the throttled flow failed)")
        elif self.change_error:
            out.append(f"throttle change took effect in: not available ({self.change_error})")
        elif self.copied_before_change:
            out.append("throttle change took effect in: not measured (the backlog was copied before the change)")
        elif self.effect_s is None:
            out.append("throttle change took effect in: never (the 1 s rate did not follow the new limit)")
        else:
            out.append(f"throttle change took effect in {self.effect_s:.1f} s")
        return out


@dataclass
class WanResult:
    """Every scenario's case result, by ``(rtt ms, partitions)``, and the throttled flow."""

    rtt_ms: float
    cases: dict[tuple[float, int], CaseResult] = field(default_factory=dict)
    throttle: ThrottleResult | None = None

    def summary(self, rtt_ms: float, partitions: int, contender: str) -> Summary | None:
        """A contender's summary in one scenario, ``None`` if it did not run or failed."""
        r = self.cases.get((rtt_ms, partitions))
        s = r.summary(contender) if r else None
        return s if s is not None and s.runs and not s.error else None

    @property
    def ok(self) -> bool:
        """Whether every run of every scenario and the throttled flow succeeded."""
        bad = any(s.error for r in self.cases.values() for s in r.summaries)
        return not bad and (self.throttle is None or not self.throttle.error)


def catch_up_ratio(result: WanResult, partitions: int = 1) -> float | None:
    """MM2-tuned's catch-up time over mirrorspark's at the largest RTT (> 1: mirrorspark is faster)."""
    ms, mm = (result.summary(result.rtt_ms, partitions, c) for c in ("mirrorspark", "mm2-tuned"))
    return mm.copy_s / ms.copy_s if ms and mm and ms.copy_s > 0 else None


def rtt_ratio(result: WanResult, contender: str, partitions: int = 12) -> float | None:
    """A contender's throughput at the largest RTT over its throughput at RTT 0."""
    far, near = result.summary(result.rtt_ms, partitions, contender), result.summary(0, partitions, contender)
    return far.records_per_s / near.records_per_s if far and near and near.records_per_s > 0 else None


def wan_lines(result: WanResult) -> list[str]:
    """The case's closing lines: the 12-partition RTT ratios, the throttle's, then the catch-up ratio."""

    def fmt(x: float | None) -> str:
        return f"{x:.2f}" if x is not None else "n/a (a contender failed or did not run)"

    rtt = f"{result.rtt_ms:g}"
    out = [f"wan 12 partitions throughput at {rtt} ms / 0 ms {c}: {fmt(rtt_ratio(result, c))}" for c in _NAMES]
    out.append(f"wan catch-up ratio mirrorspark/mm2-tuned: {fmt(catch_up_ratio(result))}")
    if result.throttle is not None:
        out += result.throttle.lines()
    return out


_NAMES = ("mirrorspark", "mm2-tuned")


def wan_case(
    *, rtt_ms: float, partitions: int, records: int, runs: int, tasks_max: int, warmup_records: int, **kw: Any
) -> Case:
    """One scenario (module notes 2); ``kw``: :class:`~bench.suite.Case`'s ``pause_s``, ``wait_idle_s``, ``size``."""
    name = f"wan-{rtt_ms:g}ms"
    warm = Workload(f"{name}-warmup", min(warmup_records, records), RECORD_SIZE, partitions) if warmup_records else None
    return Case(
        name=f"{name}-p{partitions}",
        title=f"WAN, RTT {rtt_ms:g} ms, {partitions} partition(s)",
        workload=Workload(name, records, RECORD_SIZE, partitions),
        contenders=contenders(rtt_ms, tasks_max),
        runs=runs,
        warmup=warm,
        **kw,
    )


def run_wan_case(
    env: WanEnv,
    *,
    rtt_ms: float,
    records: int,
    runs: int,
    tasks_max: int,
    warmup_records: int,
    throttle_s: tuple[float, float],
    echo: Callable[[str], None] = print,
    **kw: Any,
) -> WanResult:
    """Every scenario, then the throttled flow (``throttle_s``: seconds before and after the change); ``kw`` as
    :func:`wan_case`'s."""
    result = WanResult(rtt_ms)
    for partitions in PARTITIONS:
        for rtt in sorted({0.0, float(rtt_ms)}):
            env.set_rtt(rtt)
            case = wan_case(
                rtt_ms=rtt,
                partitions=partitions,
                records=records,
                runs=runs,
                tasks_max=tasks_max,
                warmup_records=warmup_records,
                **kw,
            )
            r = run_case(env, case, echo=echo)
            echo(report.table(r))
            topics = [case.workload.topic, *([case.warmup.topic] if case.warmup else [])]
            env.delete_topics(SOURCE, topics)
            result.cases[(rtt, partitions)] = r
    env.set_rtt(rtt_ms)
    result.throttle = run_throttle(env, tasks_max=tasks_max, seconds=throttle_s, echo=echo)
    return result


def _throttle_workload(seconds: tuple[float, float]) -> Workload:
    """A backlog that lasts both phases at their limits, with half the second phase to spare."""
    payload = THROTTLE_RATE * seconds[0] + THROTTLE_CHANGED_RATE * seconds[1] * 1.5
    return Workload("wan-throttle", math.ceil(payload / (RECORD_SIZE + 12)), RECORD_SIZE, 12)


def run_throttle(
    env: WanEnv, *, tasks_max: int, seconds: tuple[float, float], echo: Callable[[str], None] = print
) -> ThrottleResult:
    """The throttled flow (module notes 4): ``seconds[0]`` at :data:`THROTTLE_RATE`, then ``seconds[1]`` after the
    change to :data:`THROTTLE_CHANGED_RATE`."""
    from bench.sampler import EndOffsets

    workload = _throttle_workload(seconds)
    echo(
        f"== throttle: {workload.describe()} across RTT {env.rtt_ms:g} ms, limit {THROTTLE_RATE:,} B/s, then "
        f"{THROTTLE_CHANGED_RATE:,} B/s after {seconds[0]:g} s"
    )
    load_topic(env.bootstrap(SOURCE), workload)
    alias = env.fresh_alias()
    flow = {f"{alias}->{TARGET}.replication.throttled.rate": str(THROTTLE_RATE), "topics": workload.topic}
    path = env.work_dir / f"throttle-{alias}.properties"
    path.write_text(env.mm2_properties(alias, {**flow, "tasks.max": str(tasks_max)}))
    per_record = RECORD_SIZE + workload.key_size
    progress = EndOffsets(env.bootstrap(TARGET), f"{alias}.{workload.topic}", workload.partitions)
    samples: list[tuple[float, int]] = []
    changed_at, change_error, error = None, "", ""
    try:
        runner = _Running(env, path.read_text(), alias)
    except Exception as e:  # the flow did not start: the case goes on, its lines say why
        log.exception("the throttled flow did not start")
        env.delete_topics(SOURCE, [workload.topic])
        return ThrottleResult(THROTTLE_RATE, THROTTLE_CHANGED_RATE, error=f"{type(e).__name__}: {e}"[:300])
    t0 = time.perf_counter()
    try:
        while (now := time.perf_counter() - t0) < sum(seconds) and runner.alive():
            if changed_at is None and now >= seconds[0]:
                change_error = _change_limit(path, alias, THROTTLE_CHANGED_RATE)
                changed_at = time.perf_counter() - t0
                if change_error:
                    break
            samples.append((time.perf_counter() - t0, max(0, progress()) * per_record))
            time.sleep(SAMPLE_S)
        error = runner.error_text()
    finally:
        runner.stop()
        env.delete_flow_topics(alias)
        env.delete_topics(SOURCE, [workload.topic])
    result = ThrottleResult(
        THROTTLE_RATE, THROTTLE_CHANGED_RATE, samples, changed_at, change_error, workload.payload_bytes, error
    )
    echo("\n".join(result.lines()))
    return result


def _change_limit(config: Path, alias: str, rate: int) -> str:
    """Run ``mirrorspark control throttle``; return why it failed (``""``: done)."""
    command = [sys.executable, "-m", "mirrorspark", "control", "throttle", str(config)]
    command += ["--source", alias, "--target", TARGET, "--rate", str(rate)]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
    except subprocess.TimeoutExpired:
        return "mirrorspark control throttle did not return within 60 s"
    if done.returncode == 0:
        return ""
    return f"mirrorspark control throttle: {_last_words(done.stderr + done.stdout) or f'exit {done.returncode}'}"


def _last_words(output: str) -> str:
    """The last line of a command's output that says something, without the frame a rich error box draws."""
    lines = [line.strip(" │╭╮╰╯─") for line in output.splitlines()]
    return next((line[:200] for line in reversed(lines) if any(ch.isalnum() for ch in line)), "")


class _Running:
    """A ``mirrorspark run`` (not bounded) in a thread of this process, on the warm SparkSession."""

    def __init__(self, env: BenchEnv, properties: str, alias: str) -> None:
        from mirrorspark.config.parse import parse_config
        from mirrorspark.config.properties import parse_properties
        from mirrorspark.replication.driver import Replicator

        cfg = parse_config(parse_properties(properties), source_name=f"bench run {alias} (throttled)")
        self.replicator = Replicator(cfg, env.spark())
        self.error: BaseException | None = None
        self.replicator.start()
        self._thread = threading.Thread(target=self._run, name="bench-throttled", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self.replicator.run(until_caught_up=False)
        except BaseException as e:
            log.exception("the throttled flow failed")
            self.error = e

    def alive(self) -> bool:
        return self._thread.is_alive()

    def error_text(self) -> str:
        return f"{type(self.error).__name__}: {self.error}" if self.error else ""

    def stop(self) -> None:
        self.replicator.request_stop()
        self._thread.join(timeout=120)
        self.replicator.close()


def wan_markdown(result: WanResult) -> str:
    """The WAN table (both RTTs, both contenders, 1 and 12 partitions), the throttle's figures and the lines."""
    rows = []
    for (rtt, partitions), r in sorted(result.cases.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        for s in r.summaries:
            if s.error or not s.runs:
                rows.append(f"| {rtt:g} | {partitions} | {s.contender} | failed: {s.error[:120]} | | | | |")
                continue
            rows.append(
                f"| {rtt:g} | {partitions} | {s.contender} | {s.runs} | {s.copy_s:.1f} | {s.records_per_s:,.0f} "
                f"({s.mb_per_s:.1f} MB/s) | {s.start_s:.1f} | {s.cpu_s_per_gb:.1f} |"
            )
    head = [
        "| RTT ms | partitions | contender | runs | catch-up s | records/s | start s | CPU s/GB |",
        "|---|---|---|---|---|---|---|---|",
    ]
    parts = ["\n".join(head + rows)]
    t = result.throttle
    if t is not None:
        top = highest_average([s for s in t.samples if t.changed_at is None or s[0] <= t.changed_at], AVERAGE_S)
        parts.append(
            f"Throttle ({_throttle_describe(t)}): highest {AVERAGE_S:g} s average "
            + (f"{top / 1e6:.2f} MB/s" if top is not None else "n/a")
            + f" against a limit of {t.limit / 1e6:g} MB/s."
        )
    parts.append("\n".join(f"`{line}`" + "  " for line in wan_lines(result)).rstrip())
    return "\n\n".join(parts)


def _throttle_describe(t: ThrottleResult) -> str:
    return (
        f"a mirrorspark flow with replication.throttled.rate={t.limit:,} over a {t.backlog_bytes / 1e6:,.0f} MB "
        f"backlog of 12 partitions, lowered to {t.new_limit:,} by mirrorspark control throttle, which returned after "
        f"{t.changed_at or 0:.0f} s"
    )


def wan_json(result: WanResult) -> dict[str, Any]:
    """Plain-JSON form of the case (``bench/results/*-wan.json``)."""
    t = result.throttle
    return {
        "rtt_ms": result.rtt_ms,
        "window_bytes": WINDOW_BYTES,
        "scenarios": [
            {
                "rtt_ms": rtt,
                "partitions": partitions,
                "records": r.case.workload.records,
                "contenders": {c.name: c.description for c in r.case.contenders},
                "summaries": [report._summary_json(x) for x in r.summaries],
                "runs": [m.to_json() for m in [*r.warmups, *r.runs]],
            }
            for (rtt, partitions), r in result.cases.items()
        ],
        "throttle": None
        if t is None
        else {
            "limit": t.limit,
            "new_limit": t.new_limit,
            "changed_at_s": t.changed_at,
            "accuracy": t.accuracy,
            "took_effect_s": t.effect_s,
            "change_error": t.change_error,
            "error": t.error,
            "samples": [[round(a, 3), b] for a, b in t.samples],
        },
        "lines": wan_lines(result),
    }


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The case's options of ``python -m bench``."""
    p.add_argument(
        "--rtt-ms", type=float, default=DEFAULT_RTT_MS, metavar="N", help="the wan case's long RTT (default 100)"
    )
    p.add_argument(
        "--wan-runs", type=int, metavar="R", help="runs per contender and scenario of the wan case (3; quick 1)"
    )


def run_from_args(args: argparse.Namespace, command: str, label: str, bench_dir: Path) -> int:
    """Run the case as ``python -m bench --cases wan`` asks; write its results and README section; 0 when all ran."""
    from datetime import UTC, datetime

    started = datetime.now(UTC).isoformat(timespec="seconds")
    records = args.records or (QUICK_RECORDS if args.quick else FULL_RECORDS)
    runs = args.wan_runs or (1 if args.quick else 3)
    master = args.master or f"local[{max(os.cpu_count() or 1, args.tasks)}]"
    print(
        f"== wan: {records:,} x {RECORD_SIZE} B over {PARTITIONS} partitions, RTT 0 and {args.rtt_ms:g} ms, "
        f"window {WINDOW_BYTES:,} B per connection, {runs} run(s)",
        flush=True,
    )
    with WanEnv(args.work_dir / "wan", master=master) as env:
        result = run_wan_case(
            env,
            rtt_ms=args.rtt_ms,
            records=records,
            runs=runs,
            tasks_max=args.tasks,
            warmup_records=args.warmup_records,
            throttle_s=(20.0, 10.0) if args.quick else (30.0, 15.0),
            pause_s=args.pause,
            wait_idle_s=args.wait_idle,
            size="quick" if args.quick else "full",
        )
        env_info = environment(env)
    body = wan_markdown(result)
    safe = "".join(ch if ch.isalnum() or ch in "._-" else "-" for ch in label).strip("-") or "polyglot"
    out = bench_dir / "results" / f"{started[:10]}-{safe}-wan.md"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(_results_markdown(result, body, command, env_info, started))
    data = {"command": command, "started_at": started, "environment": env_info, "wan": wan_json(result)}
    out.with_suffix(".json").write_text(json.dumps(data, indent=2, default=str) + "\n")
    if not args.no_readme:
        latest = (
            f"Latest run: {started[:10]}, `{command}`, host `{env_info.get('host')}` ({env_info.get('cpus')} cores); "
            f"details in [results/{out.name}](results/{out.name})."
        )
        report.update_readme_section(bench_dir / "README.md", "wan", f"{latest}\n\n{body}")
    print(body, flush=True)
    print(f"\nresults: {out}")
    for line in wan_lines(result):
        print(line)
    return 0 if result.ok else 1


def _results_markdown(result: WanResult, body: str, command: str, env_info: dict[str, Any], started: str) -> str:
    """The results file: the WAN table, then each scenario's contenders and summary, then the machine."""
    lines = [f"# mirrorspark benchmark, wan case: {started[:10]} on {env_info.get('host', '?')}", ""]
    lines += [
        f"Command: `{command}` (from the repository root). Started {started}.",
        "",
        "## Across a WAN",
        "",
        body,
        "",
    ]
    for r in result.cases.values():
        lines += [
            f"## {r.case.title}",
            "",
            f"Workload: {r.case.workload.describe()}; loaded in {r.load.seconds:.1f} s.",
        ]
        lines += ["", *(f"* **{c.name}**: {c.description}" for c in r.case.contenders), ""]
        lines += [report.summary_markdown(r), ""]
    lines += ["## Environment", "", *(f"* {k}: {json.dumps(v, default=str)}" for k, v in env_info.items()), ""]
    return "\n".join(lines)
