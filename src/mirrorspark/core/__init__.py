"""mirrorspark's own pure rules and record formats, beside MM2's (:mod:`mirrorspark.mm2`): no I/O.

The progress channel's records (``progress_records``: the copy tasks' progress reports and the
driver's raw metrics), lifetime totals (``lifetime_totals``), gap events and the gap ledger's
records (``gaps``), the lease topic's claims (``lease_claims``), the live lists of
``mirrorspark control`` (``control_state``, SRM's ``srm-control``), the failover policy's rules
(``failover_policy``), Confluent's replica placement (``placement_rules``) and
``kafka-replica-status`` rows (``replica_rows``), Connect's Single Message Transforms on
MM2's byte-array records (``transforms``), and Schema Registry replication's rules (``schemas``: the
wire format, subject names, id translations, registration order).

No Kafka client, no Spark; may import :mod:`mirrorspark.mm2` and :mod:`mirrorspark.errors` only
(``pyproject.toml``'s import-linter contracts).
"""
