"""The worker (Connect's worker and herder): the copy tasks as Spark jobs, their grants, and the flow's lease.

Layer rule: imports :mod:`mirrorspark.replication.connector` and :mod:`mirrorspark.replication.task`,
never :mod:`mirrorspark.replication.driver`.
"""
