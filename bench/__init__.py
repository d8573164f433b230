"""mirrorspark's benchmark suite: measure the replicator against its alternatives.

Run from the repository root::

    .venv/bin/python -m bench --quick

Layout
------
:mod:`bench.cli`
    Command line (``python -m bench``): options, which cases run, where results go.
:mod:`bench.env`
    :class:`~bench.env.BenchEnv`: the local ``source`` and ``target`` clusters (one broker
    each, under ``bench/.work/``), the one warm SparkSession, fresh-flow naming and clean-up.
:mod:`bench.workload`
    :class:`~bench.workload.Workload` and the fast loader that fills a source topic once.
:mod:`bench.cpu`
    CPU accounting of process trees (the Python driver, the Spark JVM it starts and the
    Python workers the JVM starts), brokers excluded and measured separately.
:mod:`bench.contenders`
    :class:`~bench.contenders.Contender`, the interface every measured replicator implements:
    mirrorspark (``mirrorspark run --until-caught-up`` on its copy tasks), MirrorMaker 2 (defaults
    and tuned), and the ceiling's consume and produce passes (parallel librdkafka clients,
    :mod:`bench.share`).
:mod:`bench.suite`
    Runs one case: loads the workload, warms every contender up, then runs the contenders
    alternately (A B A B ...) and summarises medians.
:mod:`bench.latency`, :mod:`bench.scale` (figures in :mod:`bench.scale_report`), :mod:`bench.recovery`
    The latency case (steady produce, end-to-end latency), the scale case (many topics, partitions
    and flows: start, copy time, memory, idle CPU) and the recovery case (``kill -9`` mid-copy:
    records copied twice, seconds until copying resumes).
:mod:`bench.report`
    The text table, the results file ``bench/results/<date>-<host>-<case>.md`` (+ ``.json``)
    and the "latest figures" section of ``bench/README.md``.

Extending
---------
A new contender (MirrorMaker 2, a hardware ceiling) subclasses
:class:`~bench.contenders.Contender`; a new case (latency, scale) is a function in
:mod:`bench.suite` that builds its workload and contenders and calls
:func:`~bench.suite.run_case`, plus a flag in :mod:`bench.cli`.
"""

from __future__ import annotations

__all__: list[str] = []
