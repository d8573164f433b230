"""A real Spark standalone cluster for tests: one master and N workers from the pyspark package.

The JVMs are started with ``$SPARK_HOME/bin/spark-class`` (``SPARK_HOME`` being the installed
pyspark package), exactly as ``start-master.sh``/``start-worker.sh`` would run them, but in the
foreground of their own process groups so a test can kill one worker with its executors::

    with StandaloneCluster(tmp_path / "spark", workers=2) as cluster:
        subprocess.run([..., "--master", cluster.url], ...)
        cluster.kill_worker(0)          # SIGKILL: worker JVM, its executors and their Python workers

Everything binds to 127.0.0.1 on free ports. Under ``base_dir``: ``master.log``,
``worker-<i>.log`` (stdout and stderr of each JVM) and ``worker-<i>/`` (the worker's ``--work-dir``:
``app-<id>/<executor id>/`` holds each executor's ``stdout``, ``stderr`` and the files the driver
shipped to it, e.g. ``mirrorspark.zip``). Waits poll against a deadline, never sleep blindly.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import Any

from mirrorspark.spark_session import QUICK_START_JVM_OPTIONS
from polling import assert_eventually

__all__ = ["StandaloneCluster", "free_port", "spark_home"]

LOOPBACK = "127.0.0.1"


def spark_home() -> Path:
    """Return the directory of the installed pyspark package (a complete ``SPARK_HOME``)."""
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def free_port() -> int:
    """Return a TCP port on 127.0.0.1 that was free a moment ago (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((LOOPBACK, 0))
        return int(s.getsockname()[1])


class StandaloneCluster:
    """A Spark standalone master and ``workers`` workers on 127.0.0.1, as a context manager.

    Entering starts every JVM and returns once the master lists ``workers`` workers as ALIVE;
    leaving stops them all (SIGTERM to each process group, then SIGKILL to whatever is left
    after ``stop_timeout_s``). Each worker offers ``cores`` cores and ``memory`` to executors.
    Executors run ``sys.executable`` as their Python (``PYSPARK_PYTHON``), so they see the
    packages of this interpreter's environment.

    Parameters
    ----------
    base_dir:
        Directory for logs and the workers' work directories; created if missing.
    workers:
        Number of workers (default 2).
    cores:
        Cores per worker (``--cores``, default 1): one task slot each.
    memory:
        Memory per worker (``--memory``, default ``"1g"``, the default ``spark.executor.memory``).
    start_timeout_s:
        Deadline in seconds for every worker to register (default 60).
    stop_timeout_s:
        Seconds to wait after SIGTERM before SIGKILL (default 15).

    Attributes
    ----------
    url:
        The master URL, ``spark://127.0.0.1:<port>`` (set on entering).
    web_url:
        The master web UI, ``http://127.0.0.1:<port>`` (set on entering).
    """

    def __init__(
        self,
        base_dir: Path,
        *,
        workers: int = 2,
        cores: int = 1,
        memory: str = "1g",
        start_timeout_s: float = 60.0,
        stop_timeout_s: float = 15.0,
    ) -> None:
        if workers < 1:
            raise ValueError(f"workers must be >= 1, got {workers}")
        self.base_dir = Path(base_dir)
        self.workers = workers
        self.cores = cores
        self.memory = memory
        self.start_timeout_s = start_timeout_s
        self.stop_timeout_s = stop_timeout_s
        self.url = ""
        self.web_url = ""
        self._master: subprocess.Popen[bytes] | None = None
        self._workers: list[subprocess.Popen[bytes]] = []

    # -- life cycle ---------------------------------------------------------------------------

    def __enter__(self) -> StandaloneCluster:
        self.base_dir.mkdir(parents=True, exist_ok=True)
        try:
            self._start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def _start(self) -> None:
        port, web_port = free_port(), free_port()
        self.url = f"spark://{LOOPBACK}:{port}"
        self.web_url = f"http://{LOOPBACK}:{web_port}"
        self._master = self._spawn(
            "master",
            "org.apache.spark.deploy.master.Master",
            ["--host", LOOPBACK, "--port", str(port), "--webui-port", str(web_port)],
        )
        # Workers started before the master listens retry only after 5-15 s: wait for it first.
        assert_eventually(
            lambda: self._check_alive() and self.master_state().get("status") == "ALIVE",
            timeout_s=self.start_timeout_s,
            interval_s=0.2,
            message=f"the Spark master {self.url} did not start (log in {self.base_dir / 'master.log'})",
        )
        for i in range(self.workers):
            work_dir = self.worker_dir(i)
            work_dir.mkdir(parents=True, exist_ok=True)
            self._workers.append(
                self._spawn(
                    f"worker-{i}",
                    "org.apache.spark.deploy.worker.Worker",
                    [
                        "--host",
                        LOOPBACK,
                        "--webui-port",
                        str(free_port()),
                        "--cores",
                        str(self.cores),
                        "--memory",
                        self.memory,
                        "--work-dir",
                        str(work_dir),
                        self.url,
                    ],
                )
            )
        assert_eventually(
            lambda: self._check_alive() and len(self.alive_workers()) == self.workers,
            timeout_s=self.start_timeout_s,
            interval_s=0.5,
            message=f"{self.workers} Spark workers did not register with {self.url} (logs in {self.base_dir})",
        )

    def _spawn(self, name: str, main_class: str, args: list[str]) -> subprocess.Popen[bytes]:
        home = spark_home()
        env = self.environment()
        log = (self.base_dir / f"{name}.log").open("ab")
        try:
            return subprocess.Popen(
                [str(home / "bin" / "spark-class"), main_class, *args],
                env=env,
                cwd=self.base_dir,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # own process group: kill_worker reaches its executors too
            )
        finally:
            log.close()  # the child holds its own descriptor

    def environment(self) -> dict[str, str]:
        """Return the environment of the master and worker JVMs (and so of the executors).

        ``SPARK_HOME`` is the pyspark package, ``SPARK_LOCAL_IP`` 127.0.0.1, ``PYSPARK_PYTHON``
        this interpreter; ``PYTHONPATH`` is removed, so executors import mirrorspark from the
        zip the driver ships (or the environment's installed package), not from the test's path.
        The master and worker daemons (and spark-class's launcher) start with C1 only and the serial
        collector, as ``mirrorspark run``'s driver does: 8.6-9.2 CPU s to a registered cluster instead
        of 15.6-15.7. The executors keep the flags the driver gives them.
        """
        env = dict(os.environ)
        env.pop("PYTHONPATH", None)
        env.update(
            {
                "SPARK_HOME": str(spark_home()),
                "SPARK_LOCAL_IP": LOOPBACK,
                "SPARK_LOCAL_HOSTNAME": LOOPBACK,
                "SPARK_DAEMON_MEMORY": "512m",
                "SPARK_DAEMON_JAVA_OPTS": QUICK_START_JVM_OPTIONS,
                "SPARK_LAUNCHER_OPTS": QUICK_START_JVM_OPTIONS,
                "SPARK_NO_DAEMONIZE": "1",
                "PYSPARK_PYTHON": sys.executable,
            }
        )
        return env

    def stop(self) -> None:
        """Stop every worker and the master: SIGTERM to each process group, SIGKILL after the deadline.

        Returns once no process of theirs is left, the PySpark daemons of their executors included
        (which run in process groups of their own). Idempotent; workers already killed are skipped.
        """
        procs = [p for p in [*self._workers, self._master] if p is not None]
        groups = {g for p in procs for g in _tree_groups(p.pid)}  # before the leaders exit and orphan them
        for p in procs:
            _signal_group(p.pid, signal.SIGTERM)
        deadline = time.monotonic() + self.stop_timeout_s
        for p in procs:
            with contextlib.suppress(subprocess.TimeoutExpired):
                p.wait(timeout=max(0.0, deadline - time.monotonic()))
        _kill_groups(groups)
        for p in procs:
            p.wait(timeout=10)

    # -- inspection and faults ----------------------------------------------------------------

    def worker_dir(self, i: int) -> Path:
        """Return the ``--work-dir`` of worker ``i`` (``app-<id>/<executor id>/`` per executor)."""
        return self.base_dir / f"worker-{i}"

    @property
    def worker_pids(self) -> list[int]:
        """The process ids of the worker JVMs (also their process group ids), by worker index."""
        return [p.pid for p in self._workers]

    def kill_worker(self, i: int) -> None:
        """SIGKILL worker ``i``: its process group (the worker JVM and its executors) and the process groups
        of the executors' PySpark daemons with their Python workers, as a crashed machine would lose them.

        Returns once none of them is left. The master then drops the worker once it notices the lost
        connection.
        """
        p = self._workers[i]
        _kill_groups(_tree_groups(p.pid))
        p.wait(timeout=10)

    def master_state(self) -> dict[str, Any]:
        """Return the master's state from its web UI (``GET /json/``): ``workers``, ``activeapps``, ...

        Raises
        ------
        AssertionError
            If the master does not answer (so that a poll retries).
        """
        try:
            with urllib.request.urlopen(f"{self.web_url}/json/", timeout=5) as r:
                state: dict[str, Any] = json.load(r)
                return state
        except (urllib.error.URLError, ConnectionError, TimeoutError) as e:
            raise AssertionError(f"the Spark master UI {self.web_url} does not answer: {e}") from e

    def alive_workers(self) -> list[Mapping[str, Any]]:
        """Return the workers the master lists as ALIVE (each a dict with ``id``, ``cores``, ``state`` ...)."""
        return [w for w in self.master_state().get("workers", []) if w.get("state") == "ALIVE"]

    def _check_alive(self) -> bool:
        """Fail at once (not at the deadline) if a JVM exited during start-up."""
        for name, p in [("master", self._master), *((f"worker-{i}", w) for i, w in enumerate(self._workers))]:
            if p is not None and p.poll() is not None:
                log = self.base_dir / f"{name}.log"
                tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
                raise RuntimeError(f"Spark {name} exited with code {p.returncode} during start-up:\n{tail}")
        return True


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    """Send ``sig`` to process group ``pgid``, if any member is left."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def _processes() -> dict[int, tuple[int, int]]:
    """Return ``{pid: (parent pid, process group id)}`` of every live (not zombie) process, from ``/proc`` (Linux)."""
    table: dict[int, tuple[int, int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:  # the process just exited
            continue
        # "pid (comm) state ppid pgrp ...": comm may hold spaces and parentheses, so split after the last ')'
        state, ppid, pgrp = text[text.rindex(")") + 2 :].split()[:3]
        if state != "Z":
            table[int(stat.parent.name)] = (int(ppid), int(pgrp))
    return table


def _tree_groups(root: int) -> set[int]:
    """Return the process group ``root`` leads and the groups of all its live descendants.

    PySpark's daemon puts itself and its Python workers in a group of their own (``setpgid``), so
    killing a worker's group alone would leave them behind for a moment.
    """
    table = _processes()
    children: dict[int, list[int]] = {}
    for pid, (ppid, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    groups, todo = {root}, [root]
    while todo:
        for child in children.get(todo.pop(), []):
            groups.add(table[child][1])
            todo.append(child)
    return groups


def _kill_groups(groups: set[int], timeout_s: float = 10.0) -> None:
    """SIGKILL every process group in ``groups`` and wait until none of their processes is left."""
    for g in groups:
        _signal_group(g, signal.SIGKILL)
    assert_eventually(
        lambda: not [pid for pid, (_, g) in _processes().items() if g in groups],
        timeout_s=timeout_s,
        interval_s=0.1,
        message=f"processes of groups {sorted(groups)} survived SIGKILL",
    )
