"""What every test tier shares: the one SparkSession of a test session, and how xdist splits the suite.

Under ``make test`` (pytest-xdist) each worker is a test session of its own. The suite is handed out
a test module at a time, so a module's fixtures start once, except groups that each run whole
on one worker: the fault scenarios (they stop brokers, cut networks and kill processes, and would
disturb each other's timings), the tests of the secured cluster pairs (those clusters are slow to
start and shared by both modules) and those of the session's Schema Registries.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest
from hypothesis import HealthCheck, settings

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

#: Test modules that run together on one xdist worker, by group name.
XDIST_GROUPS = {
    "secure": ("tests/integration/test_security.py", "tests/integration/test_acls.py"),
    # the session's two Schema Registries (two JVMs) start once, not on two workers
    "registry": ("tests/integration/test_local_registry.py", "tests/integration/test_schema_replication.py"),
}
#: Folders whose modules all run together on one xdist worker.
XDIST_GROUP_FOLDERS = {"faults": "tests/faults/"}
#: Fault modules that may run beside the integration tier: they kill only a process of their own and bound
#: nothing by time, so sharing the cores cannot fail them (the fault worker is the suite's critical path).
XDIST_LOOSE_FAULTS = frozenset({"tests/faults/test_follow_kill.py"})

#: The local Kafka JVMs of the tests (brokers, MirrorMaker, Connect workers) compile with C1 alone and collect with the
#: serial collector, as ``mirrorspark run``'s Spark driver does: their C2 compiler threads took about 30 % of the
#: brokers' CPU in a CI run, and the brokers 42 % of the machine's. Set the variable (blank: Kafka's flags) to
#: override; the bench never sets it.
os.environ.setdefault("KAFKA_JVM_PERFORMANCE_OPTS", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")

# Property tests judge correctness, not speed: on a loaded 2-core machine generating inputs can
# be slow, which is no failure of the code under test (no per-example deadline either).
settings.register_profile("mirrorspark", suppress_health_check=[HealthCheck.too_slow], deadline=None)
settings.load_profile("mirrorspark")


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SparkSession]:
    """One local SparkSession for the whole session, without the UI: 12 slots, one per copy task.

    Spark's own output (never on the terminal) goes to ``spark.log`` in the session's temporary directory.
    """
    from mirrorspark.spark_session import build_spark_session
    from mirrorspark.spark_session.jvm_output import SPARK_LOG_ENV

    with pytest.MonkeyPatch.context() as env:
        env.setenv(SPARK_LOG_ENV, str(tmp_path_factory.mktemp("spark") / "spark.log"))
        session = build_spark_session(master="local[12]", app_name="mirrorspark-tests", ui=False)
    yield session
    session.stop()


def xdist_scope(nodeid: str) -> str:
    """The work unit a test belongs to under pytest-xdist: its group's name, else its module's path."""
    module = nodeid.split("::", 1)[0]
    if module in XDIST_LOOSE_FAULTS:
        return module
    for group, folder in XDIST_GROUP_FOLDERS.items():
        if module.startswith(folder):
            return group
    for group, modules in XDIST_GROUPS.items():
        if module in modules:
            return group
    return module


#: Under xdist, in the controller: ``[first start, last stop, seconds in tests]`` per worker and per group.
_SPANS: dict[str, list[float]] = {}


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Note when each xdist worker, and each group of :data:`XDIST_GROUPS` and folder, ran tests."""
    node = getattr(report, "node", None)  # the worker that ran it (a report seen by the controller)
    if node is None:
        return
    scope = xdist_scope(report.nodeid)
    for key in (str(node.gateway.id), *([scope] if scope in XDIST_GROUPS or scope in XDIST_GROUP_FOLDERS else [])):
        span = _SPANS.setdefault(key, [report.start, report.stop, 0.0])
        span[0], span[1], span[2] = min(span[0], report.start), max(span[1], report.stop), span[2] + report.duration


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Say when each xdist worker and group ran tests (the critical path of ``make test``'s budget)."""
    if not _SPANS:
        return
    t0 = min(span[0] for span in _SPANS.values())
    terminalreporter.write_sep("=", "xdist workers and groups (seconds from the first test)")
    for key, (start, stop, busy) in sorted(_SPANS.items(), key=lambda kv: kv[1][0]):
        terminalreporter.write_line(f"{key}: {start - t0:.0f} to {stop - t0:.0f}, {busy:.0f} s in tests")


@pytest.hookimpl(tryfirst=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object:
    """Hand the suite out by :func:`xdist_scope`, in collection order (the fault scenarios first).

    pytest-xdist's own ``--dist loadgroup`` cannot be used: it reads the group from a node id that
    pytest 9.2 no longer lets it rewrite, so every test ends up a group of its own.
    """
    from xdist.scheduler import LoadScopeScheduling

    class SuiteScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return xdist_scope(nodeid)

    return SuiteScheduling(config, log)  # type: ignore[arg-type]
