"""Kafka adapters: confluent-kafka clients with errors translated at the boundary.

Admin/producer/consumer factories (``factory``), the Protocols of what mirrorspark calls on
those clients (``protocols``), the admin wrapper of a cluster (``admin.ClusterAdmin``: one
timeout, one error rule), the read-to-end topic reader (``reader``), the Apache Kafka jars
(``jars``) and local KRaft clusters for tests, the demo and the benchmarks (``local``).

Layer rule: may import only :mod:`mirrorspark.config`, :mod:`mirrorspark.mm2` and
:mod:`mirrorspark.errors`.
"""
