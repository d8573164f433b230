"""mirrorspark's own pure rules and record formats, beside MM2's (:mod:`mirrorspark.mm2`): no I/O.

The lease topic's claims (``lease_claims``). Layer rule: may import :mod:`mirrorspark.mm2` and
:mod:`mirrorspark.errors` only; no Kafka client, no Spark.
"""
