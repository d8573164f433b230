"""The worker (Connect's worker and herder): the copy tasks as Spark jobs, their grants, and the flow's lease.

Layer rule: imports ``replication.connector`` and ``replication.task``, never ``replication.driver``.
"""
