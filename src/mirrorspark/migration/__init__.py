"""Operator tools for moving consumers between clusters (SRM's ``srm-control offsets``, MM2's ``RemoteClusterUtils``).

Consumer migration (``consumer_migration``: translated offsets, failover and failback,
committing them to the target) and what those tools report (``plans``: offset
translations, failover plans, ``kafka-consumer-groups`` reset plans).

Layer rule: built on :mod:`mirrorspark.client` and the layers below it, never on the
replication runtime (:mod:`mirrorspark.replication`); never PySpark.
"""
