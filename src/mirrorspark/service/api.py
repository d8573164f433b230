"""The metrics service's read-only REST API (FastAPI): OpenAPI 3 at ``/openapi.json``, Swagger UI at ``/docs``.

Resources, modelled on SRM Service's (which puts the target cluster in its V2 paths: here the
served cluster is the target of every local replication):

========================================================  =============================================
``GET /api/v1/health``                                    the service and its Spark job (no token needed)
``GET /api/v1/clusters``                                  clusters of the replication graph
``GET /api/v1/replications``                              flows (heartbeats, so MM2's too), state, figures
``GET /api/v1/replications/{source}/{target}``            one flow
``GET /api/v1/replications/{source}/{target}/topics``     its topics with figures
``GET …/topics/{topic}``                                  one topic with its partitions
``GET …/groups``                                          consumer groups: checkpoints, lag, failover re-reads
``GET …/gaps``                                            the flow's gap events
``GET …/drills?limit=&partitions=``                       the flow's disaster-recovery drills, newest first
``GET …/verifications?limit=&partitions=``                the flow's verify runs, newest first
``GET …/metrics/{metric}?window=&aggregate=``             a metric's time series
``GET …/throttle``, ``PUT …/throttle`` ``{"rate": n}``      the flow's throttle (bytes/s), read or changed live
``GET /api/v1/gaps``                                      every gap event
``GET /api/v1/drills?limit=&partitions=``                 every flow's drills (``mirrorspark drill``), newest first
``GET /api/v1/verifications?limit=&partitions=``          every flow's verify runs (``mirrorspark verify``)
``GET /api/v1/metrics``                                   the series, windows and aggregates served
``GET /metrics``                                          Prometheus exposition (MM2's names)
``GET /``, ``/static/…``                                  the replications dashboard (static files)
========================================================  =============================================

Every route reads but ``PUT …/throttle``, which writes the same control record as ``mirrorspark control
throttle`` to the flow's control topic on the served cluster (running flows follow it within seconds).
Errors are RFC 9457 problem details (``application/problem+json``). With
``mirrorspark.service.auth.token`` set, every route but ``/``, the health check and the API
documents requires ``Authorization: Bearer <token>`` (compared in constant time). No response
holds a client setting or a secret. The dashboard's files hold no data and need no token: the page
asks for the token (the health check says whether one is required), keeps it in the browser tab's
``sessionStorage`` and sends it with each API call.
"""

from __future__ import annotations

import hmac
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib.resources import files
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, FastAPI, HTTPException, Path, Query, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.utils import get_openapi
from fastapi.responses import JSONResponse, Response
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from fastapi.staticfiles import StaticFiles
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.registry import Collector
from starlette.exceptions import HTTPException as StarletteHTTPException

from mirrorspark import __version__
from mirrorspark.config.model import MirrorConfig
from mirrorspark.service import views
from mirrorspark.service.aggregates import SERIES_BY_NAME
from mirrorspark.service.feed import DRILLS_KEPT, VERIFY_KEPT, FlowView, Store
from mirrorspark.service.prometheus import ServiceCollector
from mirrorspark.service.schemas import (
    Cluster,
    Drill,
    Failover,
    Gap,
    Group,
    Health,
    MetricCatalog,
    Problem,
    Replication,
    Series,
    Throttle,
    ThrottleChange,
    Topic,
    Verification,
)

log = logging.getLogger(__name__)

PROBLEM_JSON = "application/problem+json"
API = "/api/v1"
STATIC = "/static"
"""Where the dashboard's files are served (``mirrorspark/service/static/`` in the package)."""
DASHBOARD = files("mirrorspark.service") / "static" / "index.html"
"""The replications dashboard's page, served at ``/``."""
_NO_CACHE = {"Cache-Control": "no-cache"}

WindowName = Literal["1m", "5m", "1h"]
AggregateName = Literal["count", "sum", "min", "max", "avg", "rate", "p50", "p99", "last"]

Source = Annotated[str, Path(description="The source cluster alias.")]
Target = Annotated[str, Path(description="The target cluster alias (the served cluster).")]
Win = Annotated[WindowName, Query(description="The window of the headline figures.")]
TopicName = Annotated[str, Path(description="The source topic.")]
MetricName = Annotated[str, Path(description="A series of GET /api/v1/metrics, e.g. replication-latency-ms.")]
SeriesWindow = Annotated[WindowName, Query(description="The sliding window: one point per window.")]
SeriesAggregate = Annotated[AggregateName, Query(description="The figure of each window.")]
TopicFilter = Annotated[str | None, Query(description="Only this source topic.")]
PartitionFilter = Annotated[int | None, Query(ge=0, le=2**31 - 1, description="Only this partition.")]
GroupFilter = Annotated[str | None, Query(description="Only this consumer group.")]
Since = Annotated[int | None, Query(ge=0, le=2**63 - 1, description="Only windows ending after this (epoch ms).")]
Remote = Annotated[bool, Query(description="Include flows into other clusters.")]
DrillLimit = Annotated[int, Query(ge=1, le=DRILLS_KEPT * 1000, description="Most drills returned (the newest first).")]
DrillPartitions = Annotated[
    bool, Query(description="Include each drill's recovery point per source partition (false: null, a smaller answer).")
]
VerifyLimit = Annotated[
    int, Query(ge=1, le=VERIFY_KEPT * 1000, description="Most verify runs returned (the newest first).")
]
VerifyPartitions = Annotated[
    bool, Query(description="Include each run's partitions and their findings (false: null, a smaller answer).")
]

_BEARER = HTTPBearer(auto_error=False, description="mirrorspark.service.auth.token")
Credentials = Annotated[HTTPAuthorizationCredentials | None, Depends(_BEARER)]

AggregationStatus = Callable[[], tuple[str, str | None, int | None]]
"""Returns the Spark job's ``(state, error, last batch epoch ms)``."""

_TITLES = {
    400: "Bad request",
    401: "Unauthorized",
    404: "Not found",
    405: "Method not allowed",
    422: "Invalid request",
    500: "Internal error",
    503: "Service unavailable",
}


def problem(
    status: int, detail: str | None, instance: str | None, headers: dict[str, str] | None = None
) -> JSONResponse:
    """Return a problem-details response."""
    body = Problem(title=_TITLES.get(status, "Error"), status=status, detail=detail, instance=instance)
    return JSONResponse(body.model_dump(), status_code=status, media_type=PROBLEM_JSON, headers=headers)


def _errors(*codes: int) -> dict[int | str, dict[str, Any]]:
    texts = {
        401: "The bearer token is missing or wrong.",
        404: "No such replication, topic or metric.",
        422: "A parameter is not valid.",
        503: "The served cluster did not answer.",
    }
    return {c: {"model": Problem, "description": texts[c]} for c in codes}


@dataclass(frozen=True)
class _Served:
    """What the routes of one application read (kept in ``app.state.served``)."""

    store: Store
    config: MirrorConfig
    token: str
    aggregation: AggregationStatus
    registry: CollectorRegistry


def _served(request: Request) -> _Served:
    served: _Served = request.app.state.served
    return served


Served = Annotated[_Served, Depends(_served)]


def _local_flow(store: Store, source: str, target: str) -> FlowView:
    view = store.flows.get(f"{source}->{target}")
    if view is None or target != store.cluster:
        raise HTTPException(404, f"no replication {source}->{target} into cluster '{store.cluster}' is known")
    return view


_AUTH = _errors(401)
"""The answer every secured route may give (added to their documents when a token is set)."""

# The routes carry no docstring: FastAPI would publish it as the operation's description, and the
# OpenAPI document is part of the interface (``summary`` says what each one answers).

# --------------------------------------------------------------------------- the service itself (no token)

service_routes = APIRouter(prefix=API, tags=["service"])
"""The health check: open to all (the dashboard reads ``token_required`` from it)."""


@service_routes.get("/health", response_model=Health, summary="Health of the service")
def health(served: Served) -> Health:
    state, error, last_batch = served.aggregation()
    store = served.store
    with store.lock:
        ok = state == "active" and store.error is None
        return Health(
            status="ok" if ok else "degraded",
            cluster=store.cluster,
            aggregation=state,
            aggregation_error=error,
            last_batch_ms=last_batch,
            last_aggregate_ms=store.last_aggregate_ms,
            feed_error=store.error,
            records_read=store.records_read,
            topics_read=len(store.topics_read),
            uptime_s=(store.clock_ms() - store.started_ms) / 1000,
            token_required=bool(served.token),
        )


# --------------------------------------------------------------------------- the replication graph, flow by flow

replication_routes = APIRouter(prefix=API)
"""The clusters and the flows into the served cluster: each flow's topics, groups, gaps and time series."""

_FLOW = "/replications/{source}/{target}"
_FLOW_ERRORS = _errors(404, 422)


@replication_routes.get(
    "/clusters", response_model=list[Cluster], tags=["replications"], summary="Clusters of the replication graph"
)
def clusters(served: Served) -> list[Cluster]:
    with served.store.lock:
        return views.clusters(served.store, served.config)


@replication_routes.get(
    "/replications",
    response_model=list[Replication],
    responses=_errors(422),
    tags=["replications"],
    summary="Replication flows: into the served cluster, and (remote) those seen upstream of it",
)
def replications(served: Served, window: Win = "1m", remote: Remote = True) -> list[Replication]:
    store = served.store
    with store.lock:
        local = [
            views.replication(v, store, served.config, window)
            for v in sorted(store.flows.values(), key=lambda v: v.name)
            if v.target == store.cluster
        ]
        return local + (views.remote_replications(store) if remote else [])


@replication_routes.get(
    _FLOW, response_model=Replication, responses=_FLOW_ERRORS, tags=["replications"], summary="One replication flow"
)
def replication(source: Source, target: Target, served: Served, window: Win = "1m") -> Replication:
    with served.store.lock:
        return views.replication(_local_flow(served.store, source, target), served.store, served.config, window)


@replication_routes.get(
    f"{_FLOW}/topics",
    response_model=list[Topic],
    responses=_FLOW_ERRORS,
    tags=["replications"],
    summary="Topics of a replication with their figures",
)
def topics(source: Source, target: Target, served: Served, window: Win = "1m") -> list[Topic]:
    with served.store.lock:
        return views.topics(_local_flow(served.store, source, target), served.store, window_name=window)


@replication_routes.get(
    f"{_FLOW}/topics/{{topic}}",
    response_model=Topic,
    responses=_FLOW_ERRORS,
    tags=["replications"],
    summary="One topic of a replication, with its partitions",
)
def topic(source: Source, target: Target, topic: TopicName, served: Served, window: Win = "1m") -> Topic:
    store = served.store
    with store.lock:
        found = views.topics(_local_flow(store, source, target), store, detail=topic, window_name=window)
    if not found:
        raise HTTPException(404, f"replication {source}->{target} copies no topic '{topic}'")
    return found[0]


@replication_routes.get(
    f"{_FLOW}/groups",
    response_model=list[Group],
    responses=_FLOW_ERRORS,
    tags=["replications"],
    summary="Consumer groups of a replication: checkpoints, checkpoint lag, failover re-reads",
)
def groups(source: Source, target: Target, served: Served) -> list[Group]:
    with served.store.lock:
        return views.groups(_local_flow(served.store, source, target))


@replication_routes.get(
    f"{_FLOW}/gaps",
    response_model=list[Gap],
    responses=_FLOW_ERRORS,
    tags=["replications"],
    summary="Gap events of a replication",
)
def flow_gaps(source: Source, target: Target, served: Served) -> list[Gap]:
    with served.store.lock:
        return views.gaps([_local_flow(served.store, source, target)])


_DRILLS_DOC = (
    "Each item is one run of `mirrorspark drill` read from the flow's drill history topic on the served cluster "
    "(`mm2-drills.<source>.internal`): the recovery point then (records not yet on the target and the age of the "
    "oldest, per source partition), per consumer group the records a failover would read again and skip "
    "(predicted; measured too when the drill was executed) and the failover policy's verdict. The series of a "
    "flow's drills is its recovery point over time. The service keeps the newest "
    f"{DRILLS_KEPT} drills of each flow."
)


@replication_routes.get(
    f"{_FLOW}/drills",
    response_model=list[Drill],
    responses=_FLOW_ERRORS,
    tags=["replications", "drills"],
    summary="Disaster-recovery drills of a replication, newest first",
    description=_DRILLS_DOC,
)
def flow_drills(
    source: Source, target: Target, served: Served, limit: DrillLimit = 100, partitions: DrillPartitions = True
) -> list[Drill]:
    with served.store.lock:
        return views.drills([_local_flow(served.store, source, target)], limit, partitions=partitions)


_VERIFY_DOC = (
    "Each item is one verify run of the flow, by `mirrorspark verify` (trigger command) or by `run`'s continuous "
    "sampling of recently copied ranges (trigger sampling), read from the flow's verify history topic on the served "
    "cluster (`mm2-verify.<source>.internal`): records verified equal on both clusters, and the divergent ones "
    "(missing, unexpected, different, duplicated, out of order), each finding with its offsets on the source and "
    "the target (the first ones per partition; the rest counted by kind). Gaps (source records lost before they were "
    "copied) and offsets not yet mappable (records in flight) are counted, never divergent. The service keeps the "
    f"newest {VERIFY_KEPT} runs of each flow."
)


@replication_routes.get(
    f"{_FLOW}/verifications",
    response_model=list[Verification],
    responses=_FLOW_ERRORS,
    tags=["replications", "verifications"],
    summary="Verify runs of a replication (the target checked against the source), newest first",
    description=_VERIFY_DOC,
)
def flow_verifications(
    source: Source, target: Target, served: Served, limit: VerifyLimit = 100, partitions: VerifyPartitions = True
) -> list[Verification]:
    with served.store.lock:
        return views.verifications([_local_flow(served.store, source, target)], limit, partitions=partitions)


@replication_routes.get(
    f"{_FLOW}/metrics/{{metric}}",
    response_model=Series,
    responses=_FLOW_ERRORS,
    tags=["metrics"],
    summary="One metric's time series",
)
def metric_series(
    source: Source,
    target: Target,
    metric: MetricName,
    served: Served,
    window: SeriesWindow = "1m",
    aggregate: SeriesAggregate = "avg",
    topic: TopicFilter = None,
    partition: PartitionFilter = None,
    group: GroupFilter = None,
    since_ms: Since = None,
) -> Series:
    if metric not in SERIES_BY_NAME:
        raise HTTPException(404, f"no metric '{metric}': GET {API}/metrics lists them")
    store = served.store
    with store.lock:
        _local_flow(store, source, target)
        return views.series(
            store,
            f"{source}->{target}",
            metric,
            window_name=window,
            aggregate=aggregate,
            topic=topic,
            partition=partition,
            group=group,
            since_ms=since_ms,
        )


THROTTLE_TIMEOUT_S = 10.0
"""Seconds a throttle request may spend on the served cluster (reading, or writing then reading, the control topic)."""

_THROTTLE_DOC = (
    "The flow's throttle, replication.throttled.rate: bytes of record data (keys, values, headers) per second over "
    "its copy tasks, each task an equal share. The limit in effect is read from the flow's control topic on the "
    "served cluster (mm2-control.<source>.internal; a change there, by mirrorspark control throttle or PUT, "
    "overrides the config file's); the rate and the time held back come from the flow's driver."
)


def _throttle(served: _Served, source: str, target: str, rate: int | None, *, change: bool) -> Throttle:
    """Read (or set, then read back) the flow's throttle on its control topic; 404 for an unknown flow, 503 offline."""
    from mirrorspark.client.control_store import ControlStore
    from mirrorspark.errors import ClusterError, ConfigError

    store = served.store
    if target != store.cluster:
        raise HTTPException(404, f"no replication {source}->{target} into cluster '{store.cluster}' is known")
    try:
        with ControlStore(served.config, source, target, timeout_s=THROTTLE_TIMEOUT_S) as control:
            limit, origin = control.set_throttle(rate) if change else control.throttle()
            configured = control.flow_config.throttled_rate
    except ConfigError as e:
        raise HTTPException(404, f"no replication {source}->{target} is configured: {e}") from e
    except ClusterError as e:
        raise HTTPException(503, f"the control topic could not be read or written: {e}") from e
    with store.lock:
        view = store.flows.get(f"{source}->{target}")
        m = view.metrics if view is not None else None
    return Throttle(
        name=f"{source}->{target}",
        limit_bytes_per_s=limit,
        origin=origin,  # type: ignore[arg-type]
        config_bytes_per_s=configured,
        rate_bytes_per_s=m.throttle_rate if m is not None and limit else None,
        throttled_s=m.throttled_ms / 1000 if m is not None else None,
    )


@replication_routes.get(
    f"{_FLOW}/throttle",
    response_model=Throttle,
    responses=_errors(404, 422, 503),
    tags=["replications"],
    summary="The throttle of a replication: the limit in effect and the rate under it",
    description=_THROTTLE_DOC,
)
def get_throttle(source: Source, target: Target, served: Served) -> Throttle:
    return _throttle(served, source, target, None, change=False)


@replication_routes.put(
    f"{_FLOW}/throttle",
    response_model=Throttle,
    responses=_errors(404, 422, 503),
    tags=["replications"],
    summary="Change the throttle of a replication while it runs (as mirrorspark control throttle)",
    description=_THROTTLE_DOC,
)
def put_throttle(source: Source, target: Target, change: ThrottleChange, served: Served) -> Throttle:
    return _throttle(served, source, target, change.rate, change=True)


# --------------------------------------------------------------------------- events of every flow into the cluster

event_routes = APIRouter(prefix=API, tags=["replications"])
"""The gap and failover events, the drills and the verify runs of every replication into the served cluster."""


@event_routes.get("/gaps", response_model=list[Gap], summary="Gap events of every replication into the served cluster")
def all_gaps(served: Served) -> list[Gap]:
    store = served.store
    with store.lock:
        return views.gaps(v for v in store.flows.values() if v.target == store.cluster)


@event_routes.get(
    "/failovers",
    response_model=list[Failover],
    summary="The newest failover event of every replication into the served cluster (mirrorspark.failover.policy)",
)
def all_failovers(served: Served) -> list[Failover]:
    store = served.store
    with store.lock:
        return views.failovers(v for v in store.flows.values() if v.target == store.cluster)


@event_routes.get(
    "/drills",
    response_model=list[Drill],
    responses=_errors(422),
    tags=["drills"],
    summary="Disaster-recovery drills of every replication into the served cluster, newest first",
    description=_DRILLS_DOC,
)
def all_drills(served: Served, limit: DrillLimit = 100, partitions: DrillPartitions = True) -> list[Drill]:
    store = served.store
    with store.lock:
        return views.drills(
            (v for v in store.flows.values() if v.target == store.cluster), limit, partitions=partitions
        )


@event_routes.get(
    "/verifications",
    response_model=list[Verification],
    responses=_errors(422),
    tags=["verifications"],
    summary="Verify runs of every replication into the served cluster, newest first",
    description=_VERIFY_DOC,
)
def all_verifications(
    served: Served, limit: VerifyLimit = 100, partitions: VerifyPartitions = True
) -> list[Verification]:
    store = served.store
    with store.lock:
        return views.verifications(
            (v for v in store.flows.values() if v.target == store.cluster), limit, partitions=partitions
        )


# --------------------------------------------------------------------------- what is measured, and Prometheus

metric_routes = APIRouter(tags=["metrics"])
"""The catalog of the time series and the Prometheus exposition."""


@metric_routes.get(
    f"{API}/metrics",
    response_model=MetricCatalog,
    summary="The series, windows and aggregates the time-series endpoint serves",
)
def catalog() -> MetricCatalog:
    return views.catalog()


@metric_routes.get(
    "/metrics",
    responses={
        200: {"content": {"text/plain": {"schema": {"type": "string"}}}, "description": "Prometheus text format"}
    },
    response_class=Response,
    summary="Prometheus exposition, under MM2's (Strimzi's) names",
)
def prometheus(served: Served) -> Response:
    return Response(generate_latest(served.registry), media_type=CONTENT_TYPE_LATEST)


# --------------------------------------------------------------------------- the application


async def _http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
    return problem(exc.status_code, str(exc.detail), request.url.path, getattr(exc, "headers", None))


async def _crashed(request: Request, exc: Exception) -> JSONResponse:
    log.exception("%s failed", request.url.path)
    return problem(500, f"the service failed to answer: {type(exc).__name__}", request.url.path)


async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
    parts = [f"{'.'.join(str(x) for x in e.get('loc', ()))}: {e.get('msg', 'invalid')}" for e in exc.errors()]
    return problem(422, "; ".join(parts) or "invalid request", request.url.path)


def index() -> Response:
    return Response(DASHBOARD.read_bytes(), media_type="text/html; charset=utf-8", headers=_NO_CACHE)


def _problem_openapi(app: FastAPI) -> Callable[[], dict[str, Any]]:
    """Return the app's OpenAPI document builder: every 4xx/5xx answer documented as a :class:`Problem`."""

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            doc = get_openapi(title=app.title, version=app.version, description=app.description, routes=app.routes)
            for ops in doc.get("paths", {}).values():
                for op in ops.values():
                    for code, resp in op.get("responses", {}).items():
                        if str(code).startswith(("4", "5")):
                            resp["content"] = {PROBLEM_JSON: {"schema": {"$ref": "#/components/schemas/Problem"}}}
            app.openapi_schema = jsonable_encoder(doc)
        return app.openapi_schema

    return openapi


def _require_token(served: Served, creds: Credentials) -> None:
    given = creds.credentials if creds is not None and creds.scheme.lower() == "bearer" else ""
    if not hmac.compare_digest(given.encode(), served.token.encode()):
        raise HTTPException(401, "a valid bearer token is required", headers={"WWW-Authenticate": "Bearer"})


def create_app(
    store: Store,
    config: MirrorConfig,
    *,
    token: str = "",
    aggregation: AggregationStatus = lambda: ("stopped", None, None),
    collectors: Sequence[Collector] = (),
) -> FastAPI:
    """Build the API application (serve it with uvicorn); ``token`` ``""`` = no bearer token required.

    ``collectors``: more ``/metrics`` collectors (e.g. :class:`~mirrorspark.service.replica_metrics.ReplicaCollector`).
    """
    app = FastAPI(
        title="mirrorspark metrics service",
        version=__version__,
        description=(
            "API over the replication flows into one Kafka cluster (read-only but a flow's throttle): states, lag, "
            "throughput, "
            "latency, consumer-group checkpoints and gap events, aggregated by a Spark Structured Streaming "
            "job over 1 min, 5 min and 1 h sliding windows, the history of disaster-recovery drills "
            "(mirrorspark drill) and of verify runs (mirrorspark verify). Times are epoch milliseconds."
        ),
    )
    registry = CollectorRegistry(auto_describe=False)
    for collector in (ServiceCollector(store, config), *collectors):
        registry.register(collector)
    app.state.served = _Served(store, config, token, aggregation, registry)
    app.exception_handler(StarletteHTTPException)(_http_error)
    app.exception_handler(Exception)(_crashed)
    app.exception_handler(RequestValidationError)(_invalid)
    app.get("/", include_in_schema=False)(index)
    app.mount(STATIC, StaticFiles(packages=[("mirrorspark.service", "static")]), name="static")
    app.include_router(service_routes)
    secured = [Depends(_require_token)] if token else None
    for routes in (replication_routes, event_routes, metric_routes):
        app.include_router(routes, dependencies=secured, responses=_AUTH if token else None)
    app.openapi = _problem_openapi(app)  # type: ignore[method-assign]
    return app


__all__ = [
    "API",
    "DASHBOARD",
    "PROBLEM_JSON",
    "STATIC",
    "THROTTLE_TIMEOUT_S",
    "AggregationStatus",
    "create_app",
    "problem",
]
