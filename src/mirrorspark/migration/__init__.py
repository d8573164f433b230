"""Operator tools for moving consumers between clusters (SRM's ``srm-control offsets``, MM2's ``RemoteClusterUtils``).

Layer rule: built on :mod:`mirrorspark.client` and below, never on :mod:`mirrorspark.replication`; never PySpark.
"""
