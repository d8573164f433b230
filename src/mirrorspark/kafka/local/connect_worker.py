"""Apache Kafka's Connect in distributed mode (one worker), for the hand-over tests with Connect-run MM2 connectors.

A worker runs MM2's connectors as a Kafka Connect cluster does: posted over its REST API, their source
offsets in the worker's ``offset.storage.topic`` on the target, keyed by connector name.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Final

from mirrorspark.config.properties import format_properties, parse_properties
from mirrorspark.errors import LocalClusterError
from mirrorspark.kafka.local.brokers import free_ports
from mirrorspark.kafka.local.jvm_process import JvmProcess, launch_jvm
from mirrorspark.kafka.local.settings import HOST
from mirrorspark.kafka.local.state import locked, write_text

_CONNECT_MAIN: Final = "org.apache.kafka.connect.cli.ConnectDistributed"
_CONNECT_LOG4J_FILE: Final = "connect-worker-log4j2.properties"
# Connect answers these while the worker joins its group, reads its config topic or rebalances:
# "try again" (409 stale configuration / rebalance in progress, 503 still starting).
_RETRY_STATUSES: Final = frozenset({409, 503})
_REST_POLL_S: Final = 0.25

_CONNECT_LOG4J2_PROPERTIES: Final = """\
# Written by mirrorspark.kafka.local: Kafka Connect logs at WARN, the worker's start-up and MM2's
# connectors at INFO (herder leadership, connector and task lifecycle, offset commits at shutdown).
status = warn
name = mirrorspark-local-connect
appender.console.type = Console
appender.console.name = STDOUT
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = WARN
rootLogger.appenderRef.stdout.ref = STDOUT
logger.connect.name = org.apache.kafka.connect.cli
logger.connect.level = INFO
logger.herder.name = org.apache.kafka.connect.runtime.distributed.DistributedHerder
logger.herder.level = INFO
logger.mirror.name = org.apache.kafka.connect.mirror
logger.mirror.level = INFO
logger.mirrorscheduler.name = org.apache.kafka.connect.mirror.Scheduler
logger.mirrorscheduler.level = WARN
"""


@dataclass(kw_only=True)
class ConnectWorkerProcess(JvmProcess):
    """A running (or stopped) Kafka Connect distributed worker started by :func:`start_connect_worker`."""

    MAIN: ClassVar[str] = _CONNECT_MAIN
    WHAT: ClassVar[str] = "Connect worker"

    worker_properties: Path
    rest_url: str

    def wait_started(self, timeout_s: float = 120.0) -> float:
        """Wait until the worker's REST API answers ``GET /``; return the seconds since launch.

        Raises LocalClusterError if the process exits first or the REST API does not answer in time (with the log tail).
        """
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                status, _ = self._request("GET", "/")
            except OSError:
                status = 0
            if status == 200:
                return time.monotonic() - self.started_at
            self._check_starting(deadline=deadline, timeout_s=timeout_s, waiting_for=f"answer GET {self.rest_url}/")
            time.sleep(_REST_POLL_S)

    def post_connector(self, body: Mapping[str, Any], *, timeout_s: float = 60.0) -> dict[str, Any]:
        """Create a connector: ``POST /connectors`` with ``{"name": …, "config": {…}}``.

        Raises LocalClusterError if the worker refuses the connector (e.g. it exists: use :meth:`put_config`) or does
        not accept it in time, with Connect's message and the log tail.
        """
        return self._call("POST", "/connectors", dict(body), ok=(201,), timeout_s=timeout_s)

    def put_config(self, name: str, config: Mapping[str, str], *, timeout_s: float = 60.0) -> dict[str, Any]:
        """Create or update a connector: ``PUT /connectors/<name>/config``.

        Raises LocalClusterError if the worker refuses the config or does not accept it in time (with the log tail).
        """
        path = f"/connectors/{urllib.parse.quote(name, safe='')}/config"
        return self._call("PUT", path, dict(config), ok=(200, 201), timeout_s=timeout_s)

    def connector_status(self, name: str) -> dict[str, Any]:
        """Return ``GET /connectors/<name>/status``: the connector's and its tasks' states.

        Raises LocalClusterError if the connector is unknown (404) or the worker does not answer (with the log tail).
        """
        return self._call("GET", f"/connectors/{urllib.parse.quote(name, safe='')}/status", ok=(200,), timeout_s=0)

    def wait_running(self, name: str, *, min_tasks: int = 1, timeout_s: float = 120.0) -> dict[str, Any]:
        """Wait until a connector and at least ``min_tasks`` tasks, all of its tasks, are ``RUNNING``.

        Raises LocalClusterError if the connector or a task is ``FAILED`` (with its trace), the worker exits, or the
        deadline passes (with the last status), each with the log tail.
        """
        deadline = time.monotonic() + timeout_s
        status: dict[str, Any] = {}
        while True:
            try:
                status = self.connector_status(name)
            except LocalClusterError:
                if not self.running or time.monotonic() >= deadline:
                    raise
                status = {}
            states = [status.get("connector", {}).get("state"), *(t.get("state") for t in status.get("tasks", []))]
            if "FAILED" in states:
                traces = [s.get("trace", "") for s in (status["connector"], *status["tasks"]) if s.get("trace")]
                raise LocalClusterError(
                    f"connector {name!r} failed on the Connect worker (pid {self.pid}):"
                    f" {traces[0] if traces else status}; last lines of {self.log_path}:\n{self.log_tail()}"
                )
            if states[0] == "RUNNING" and len(states) > min_tasks and all(s == "RUNNING" for s in states):
                return status
            if not self.running or time.monotonic() >= deadline:
                raise LocalClusterError(
                    f"connector {name!r} is not running on the Connect worker (pid {self.pid}) after"
                    f" {timeout_s:.0f} s (status {status or 'unknown'});"
                    f" last lines of {self.log_path}:\n{self.log_tail()}"
                )
            time.sleep(_REST_POLL_S)

    def _call(
        self, method: str, path: str, body: Any = None, *, ok: tuple[int, ...], timeout_s: float
    ) -> dict[str, Any]:
        """One REST request, retried on 409/503 and refused connections until ``timeout_s`` has passed."""
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                status, answer = self._request(method, path, body)
            except OSError as e:
                status, answer = 0, {"message": str(e)}
            if status in ok:
                return answer if isinstance(answer, dict) else {"answer": answer}
            message = answer.get("message", answer) if isinstance(answer, dict) else answer
            retriable = status in _RETRY_STATUSES or status == 0
            if status == 409 and "already exists" in str(message):
                retriable = False
            if not retriable or not self.running or time.monotonic() >= deadline:
                raise LocalClusterError(
                    f"Connect worker (pid {self.pid}) answered {method} {path} with"
                    f" {status or 'no connection'}: {message}; last lines of {self.log_path}:\n{self.log_tail()}"
                )
            time.sleep(_REST_POLL_S)

    def _request(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        """Send one request; return the HTTP status and the decoded JSON answer (``None`` if empty).

        Raises OSError if the worker cannot be reached (``urllib.error.URLError``, a timeout).
        """
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            self.rest_url + path,
            data=data,
            method=method,
            headers={"Content-Type": "application/json", "Accept": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=30.0) as response:
                status, raw = response.status, response.read()
        except urllib.error.HTTPError as e:
            status, raw = e.code, e.read()
        try:
            return status, json.loads(raw) if raw else None
        except ValueError:
            return status, raw.decode(errors="replace")


def start_connect_worker(
    worker_properties: Path,
    *,
    base_dir: Path,
    heap: str = "-Xmx512m",
) -> ConnectWorkerProcess:
    """Start a Kafka Connect distributed worker, detached, and return at once.

    Raises LocalClusterError if ``worker_properties`` is missing or unreadable, sets ``listeners`` without an
    ``http://`` listener, ``java`` or the ``mm2`` jars are missing, or the JVM cannot be launched.
    """
    worker_properties = Path(worker_properties).expanduser().resolve()
    try:
        props = parse_properties(worker_properties.read_text())
    except OSError as e:
        raise LocalClusterError(f"Connect worker properties file {worker_properties}: {e.strerror}") from e
    base_dir = Path(base_dir).expanduser().resolve()
    base_dir.mkdir(parents=True, exist_ok=True)
    added: dict[str, str] = {}
    if "listeners" in props:
        http = [u for u in (s.strip() for s in props["listeners"].split(",")) if u.startswith("http://")]
        if not http:
            raise LocalClusterError(
                f"listeners = {props['listeners']!r} of {worker_properties} has no http:// listener to reach"
            )
        parsed = urllib.parse.urlsplit(http[0])
        host = parsed.hostname if parsed.hostname not in (None, "", "0.0.0.0") else HOST
        rest_url = f"http://{host}:{parsed.port}"
    else:
        (port,) = free_ports(1)
        rest_url = f"http://{HOST}:{port}"
        added.update({"listeners": rest_url, "rest.advertised.host.name": HOST})
    if "plugin.discovery" not in props:
        added["plugin.discovery"] = "service_load"
    run_properties = worker_properties
    if added:
        with locked(base_dir):
            n = 0
            while (base_dir / f"connect-worker-{n}.properties").exists():
                n += 1
            run_properties = base_dir / f"connect-worker-{n}.properties"
            header = f"# {worker_properties}, plus {', '.join(added)} (mirrorspark.kafka.local)"
            write_text(run_properties, format_properties({**props, **added}, header=header), mode=0o600)
    launched = launch_jvm(
        what="Connect worker",
        main=_CONNECT_MAIN,
        args=(str(run_properties),),
        heap=heap,
        base_dir=base_dir,
        log_name="connect-worker",
        log4j_file=_CONNECT_LOG4J_FILE,
        log4j_properties=_CONNECT_LOG4J2_PROPERTIES,
    )
    return ConnectWorkerProcess(
        pid=launched.pid,
        properties=run_properties,
        worker_properties=worker_properties,
        rest_url=rest_url,
        log_path=launched.log_path,
        command=launched.command,
        started_at=launched.started_at,
        _proc=launched.proc,
    )


__all__ = ["ConnectWorkerProcess", "start_connect_worker"]
