"""The metrics service (``mirrorspark service``): SRM Service's role for mirrorspark and MM2 flows.

Raw measurements (:mod:`mirrorspark.core.progress_records`) are aggregated over sliding windows by a
Spark Structured Streaming job (:mod:`~mirrorspark.service.aggregation`) into a compacted topic;
the service reads them back with heartbeats, gap ledgers, lifetime totals, flow states and drill histories
(:mod:`~mirrorspark.service.feed`) and serves them as a read-only REST API
(:mod:`~mirrorspark.service.api`, OpenAPI at ``/openapi.json``) and Prometheus metrics under MM2's
names (:mod:`~mirrorspark.service.prometheus`).

Beside :mod:`mirrorspark.migration` and :mod:`mirrorspark.regions`, under :mod:`mirrorspark.cli`; it
reads what flows publish through :mod:`mirrorspark.client`, never through the replication runtime
(import-linter contract ``service-off-runtime``). The pure modules
(:mod:`~mirrorspark.service.aggregates`) import neither Kafka clients nor Spark.
"""
